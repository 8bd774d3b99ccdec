"""A managed node group of an AWS site (GPU or CPU), with the launch template details that matter:
IMDSv2, encrypted root volume, the EKS NVIDIA AL2023 AMI, EFA interfaces in AWS's recommended
layout, instance-store NVMe as RAID0 through nodeadm, placement group, one zone for EFA, Capacity
Blocks and reservations targeted from the launch template, a roll-out that fits reserved capacity,
and the Auto Scaling group tags cluster-autoscaler needs to scale a pool up from zero."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

import pulumi
import pulumi_aws as aws

from alicerce.catalog.alerts import APPLICATION_XIDS
from alicerce.catalog.models import InstanceType
from alicerce.emit.pulumi.component import Component, named
from alicerce.emit.storage_counters import TEXTFILE_DIRECTORY
from alicerce.resolve.model import ResolvedPool
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.autoscaler import autoscaler_template_tags, node_labels, root_volume_gib
from alicerce.targets.aws.components.script_code import code_only
from alicerce.targets.aws.spec import ExistingPlacementGroup

CAPACITY_TYPES = {"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-reservation": "ON_DEMAND", "capacity-block": "CAPACITY_BLOCK"}
TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
RESERVED = ("capacity-reservation", "capacity-block")
# AL2023 nodeadm: assemble every instance-store NVMe device into one RAID0 array that backs
# kubelet and containerd state (images, emptyDir). A MIME part EKS merges with its own NodeConfig.
RAID0_NODE_CONFIG = """  instance:
    localStorage:
      strategy: RAID0
"""
# EFA registers (pins) the buffers libfabric and NCCL hand it, which RLIMIT_MEMLOCK caps unless the process has
# CAP_IPC_LOCK (our RDMA pods have not: README, "RDMA pods need no IPC_LOCK"). A container's limits are the ones
# of containerd's base runtime spec, and nodeadm's default (amazon-eks-ami v20260724,
# nodeadm/internal/containerd/base-runtime-spec.json) sets RLIMIT_NOFILE only, leaving memlock at what the
# containerd unit inherits (systemd's 8 MiB default: the AL2023 unit sets no LimitMEMLOCK). nodeadm merges this
# part into its default with mergo (nodeadm/internal/util/merge.go), which replaces the rlimits list whole, so the
# default RLIMIT_NOFILE is repeated. nodeadm round-trips the spec through float64 (encoding/json into
# map[string]interface{}), so "unlimited" (2^64-1) would come out as 2^64 and fail to parse: 2^63, exact in
# float64, is unlimited in practice.
MEMLOCK_UNLIMITED = 2**63
EFA_NODE_CONFIG = f"""  containerd:
    baseRuntimeSpec:
      process:
        rlimits:
          - type: RLIMIT_NOFILE
            soft: 65536
            hard: 1048576
          - type: RLIMIT_MEMLOCK
            soft: {MEMLOCK_UNLIMITED}
            hard: {MEMLOCK_UNLIMITED}
"""


# The EFA port counters writer (its text: files/alicerce_efa_stats.py, the one copy; the node gets its code without
# comments and docstrings, efa_stats_code) and its systemd units, installed
# by a shell part cloud-init runs on the node: AL2023's EKS user data is a MIME multi-part document whose
# application/node.eks.aws parts nodeadm reads and whose other parts cloud-init runs as usual (amazon-eks-ami docs,
# nodeadm "Configuration"; eksctl v0.177.0 pkg/nodebootstrap/al2023.go adds its EFA setup to AL2023 nodes as
# text/x-shellscript parts alike). Every word of it is fixed here: no spec text reaches the shell.
EFA_STATS_SCRIPT = "alicerce_efa_stats.py"
EFA_STATS_PATH = f"/usr/local/libexec/alicerce/{EFA_STATS_SCRIPT}"
EFA_STATS_UNIT = "alicerce-efa-stats"
EFA_STATS_INTERVAL = "15s"  # the node exporter's scrape interval order: a rate over 5m sees ~20 samples
HEREDOC_END = "ALICERCE_EFA_STATS_END"


def efa_stats_script() -> str:
    """The EFA counters writer's source, read from the package at generate time."""
    return (resources.files("alicerce.targets.aws") / "files" / EFA_STATS_SCRIPT).read_text(encoding="utf-8")


def efa_stats_code() -> str:
    """What the node gets of the writer: its code without comments and docstrings. The user data is the launch
    template's, and a new template version rolls every node of the pool (reserved pools terminate first): a comment
    or docstring edit must not replace a training fleet (review obsreview20 F2)."""
    return code_only(efa_stats_script())


def efa_stats_part() -> str:
    """The text/x-shellscript part that installs the EFA counters writer and starts its timer."""
    script = efa_stats_code()
    # a quoted heredoc expands nothing; its end marker (and the MIME boundary) must not occur in the script
    assert HEREDOC_END not in script and "\n--//" not in script, "the EFA counters script would end its heredoc or MIME part"
    return f"""Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
set -euo pipefail
install -d -m 0755 {os.path.dirname(EFA_STATS_PATH)} {TEXTFILE_DIRECTORY}
cat > {EFA_STATS_PATH} <<'{HEREDOC_END}'
{script.rstrip()}
{HEREDOC_END}
chmod 0755 {EFA_STATS_PATH}
cat > /etc/systemd/system/{EFA_STATS_UNIT}.service <<'{HEREDOC_END}'
[Unit]
Description=alicerce: EFA port counters for the node exporter

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 {EFA_STATS_PATH} --output {TEXTFILE_DIRECTORY}
Nice=10
{HEREDOC_END}
cat > /etc/systemd/system/{EFA_STATS_UNIT}.timer <<'{HEREDOC_END}'
[Unit]
Description=alicerce: refresh the EFA port counters every {EFA_STATS_INTERVAL}

[Timer]
OnBootSec={EFA_STATS_INTERVAL}
OnUnitActiveSec={EFA_STATS_INTERVAL}
AccuracySec=1s

[Install]
WantedBy=timers.target
{HEREDOC_END}
systemctl daemon-reload
systemctl enable --now {EFA_STATS_UNIT}.timer
"""


def node_user_data(*, raid0: bool, efa: bool) -> str | None:
    """The launch template's user data: one nodeadm NodeConfig part EKS merges with its own, and on EFA nodes the
    counters writer's shell part before it; or None."""
    spec = (RAID0_NODE_CONFIG if raid0 else "") + (EFA_NODE_CONFIG if efa else "")
    if not spec:
        return None
    shell = f"--//\n{efa_stats_part()}\n" if efa else ""
    return f"""MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

{shell}--//
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
{spec}
--//--
"""


# EKS node auto repair acts on the node conditions the eks-node-monitoring-agent add-on sets (EKS User Guide, "Detect
# node health issues and enable automatic node repair", node-health.html / node-repair.html). For a GPU XID the agent
# sets AcceleratedHardwareReady=False with the reason NvidiaXID<code>Error when it rates the code fatal, and EKS reboots
# or replaces the node 10 minutes later; any other code is an NvidiaXID<code>Warning event, no repair
# (aws/eks-node-monitoring-agent pkg/conditions/conditions.go, pkg/reasons/reasons.go, monitors/nvidia/dcgm/
# dcgm_policies.go; vendored in tests/data/upstream/eks-node-monitoring-agent). Agents before v1.6.4 rated XIDs 13 and
# 31 fatal: a single one rebooted the node, with every job and replica on it (review obsreview31 G-2). alicerce rates
# the codes a killed or faulting CUDA process raises (alicerce.catalog.alerts.APPLICATION_XIDS) the workload's fault,
# ticketed only when they recur on one GPU (GPUApplicationXidRecurring): their repair is NoAction whatever agent version
# the unpinned add-on brings (an override for a reason the agent does not set is never matched).
XID_CONDITION = "AcceleratedHardwareReady"
NO_REPAIR = "NoAction"  # EKS API NodeRepairConfigOverrides.repairAction: Replace | Reboot | NoAction
# the API takes an override only with all four values; the wait is moot for NoAction and set to EKS's own 10 minutes
XID_REPAIR_WAIT_MINUTES = 10


def xid_reason(code: int) -> str:
    """The reason the node monitoring agent gives AcceleratedHardwareReady=False for a fatal XID (NvidiaXID%dError)."""
    return f"NvidiaXID{code}Error"


@dataclass(frozen=True)
class RepairOverride:
    condition: str
    reason: str
    action: str
    wait_minutes: int


def application_xid_overrides() -> tuple[RepairOverride, ...]:
    """No repair for an XID alicerce rates an application fault (alicerce.catalog.alerts.APPLICATION_XIDS)."""
    return tuple(RepairOverride(XID_CONDITION, xid_reason(c), NO_REPAIR, XID_REPAIR_WAIT_MINUTES) for c in APPLICATION_XIDS)


def node_repair_config() -> aws.eks.NodeGroupNodeRepairConfigArgs:
    """Node auto repair on, but not for application XIDs."""
    overrides = [
        aws.eks.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs(
            node_monitoring_condition=o.condition,
            node_unhealthy_reason=o.reason,
            repair_action=o.action,
            min_repair_wait_time_mins=o.wait_minutes,
        )
        for o in application_xid_overrides()
    ]
    return aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True, node_repair_config_overrides=overrides)


@dataclass(frozen=True)
class Interface:
    card: int
    device: int
    type: str  # "interface" (ENA) or "efa-only"


def efa_interface_layout(instance: InstanceType, efa_count: int) -> tuple[Interface, ...]:
    """Network interfaces in the layout AWS recommends today (EC2 guide, "Maximize network bandwidth").

    The primary interface (card 0, device 0) is ENA: an EFA-only interface cannot be primary.
    Then one EFA-only interface per EFA-capable network card: device 1 on card 0, device 0 on the
    others; cards that carry no EFA (card 0 of p6-b300) are skipped. None when the pool has no EFA.
    """
    if efa_count == 0 or instance.efa is None:
        return ()
    cards = [c for c in range(instance.efa.networkCards) if c not in instance.efa.enaOnlyCards][:efa_count]
    return (Interface(0, 0, "interface"), *(Interface(c, 1 if c == 0 else 0, "efa-only") for c in cards))


@dataclass(frozen=True)
class NodeGroupSettings:
    node_group_name: str
    instance_type: str
    instance_types: tuple[str, ...]  # every type the group may launch, the template's first (Spot diversification)
    ami_type: str
    capacity_type: str
    capacity_reservation_id: str | None
    capacity_block: bool
    interfaces: tuple[Interface, ...]
    placement_group: bool
    existing_placement_group: str | None  # a group that exists already (the one a reservation lives in)
    zone: str | None  # one zone (EFA pools, pinned pools); None: every zone of the site
    raid0: bool
    root_volume_gib: int
    min_size: int
    max_size: int
    desired_size: int
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]  # key, value, EKS effect
    update_strategy: str  # DEFAULT (surge first) or MINIMAL (terminate first)
    max_unavailable: int | None
    max_unavailable_percentage: int | None
    autoscaler_tags: dict[str, str]  # Auto Scaling group tags for scaling up from zero

    @property
    def instance_type_in_template(self) -> bool:
        """Capacity Blocks need the instance type in the launch template and none in the node group
        (EKS user guide, "Create a managed node group with Capacity Blocks for ML")."""
        return self.capacity_block


def node_group_settings(cluster_name: str, pool: ResolvedPool) -> NodeGroupSettings:
    """Everything about a pool's node group, decided from the resolved pool (pure)."""
    aws_pool = pool.spec.aws
    instance = pool.instance
    assert aws_pool is not None and instance is not None, f"pool {pool.name} is not an AWS pool"
    scaling = pool.spec.scaling
    labels = node_labels(pool)
    taints = tuple((t.key, t.value, TAINT_EFFECTS[t.effect]) for t in pool.spec.taints)
    reserved = aws_pool.capacity_type in RESERVED
    update = aws_pool.update
    # reserved capacity has no spare instances to surge into: terminate first (and Capacity Blocks also need
    # desired 0 before a version update; see README, "Upgrading Capacity Block pools")
    strategy = update.strategy or ("minimal" if reserved else "default")
    existing = aws_pool.placement_group.name if isinstance(aws_pool.placement_group, ExistingPlacementGroup) else None
    return NodeGroupSettings(
        node_group_name=names.node_group_name(cluster_name, pool.name),
        instance_type=instance.type,
        instance_types=(instance.type, *(t for t in aws_pool.additional_instance_types if t != instance.type)),
        ami_type="AL2023_x86_64_NVIDIA" if instance.gpus else "AL2023_x86_64_STANDARD",
        capacity_type=CAPACITY_TYPES[aws_pool.capacity_type],
        capacity_reservation_id=aws_pool.capacity_reservation_id,
        capacity_block=aws_pool.capacity_type == "capacity-block",
        interfaces=efa_interface_layout(instance, pool.efa_interfaces),
        placement_group=pool.placement_group,
        existing_placement_group=existing,
        zone=pool.zone,
        raid0=instance.localNvme is not None,
        root_volume_gib=root_volume_gib(pool),
        min_size=scaling.min,
        max_size=max(scaling.max, 1),
        desired_size=scaling.desired if scaling.desired is not None else scaling.min,
        labels=labels,
        taints=taints,
        update_strategy=strategy.upper(),
        max_unavailable=None if update.max_unavailable_percentage is not None else (update.max_unavailable or 1),
        max_unavailable_percentage=update.max_unavailable_percentage,
        autoscaler_tags=autoscaler_template_tags(pool),
    )


@dataclass(frozen=True)
class NodePoolArgs:
    settings: NodeGroupSettings
    tags: Mapping[str, str]
    kubernetes_version: str
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: Mapping[str, pulumi.Input[str]]  # zone -> private subnet
    security_group_ids: Sequence[pulumi.Input[str]]  # cluster and node groups, on the primary interface
    efa_security_group_id: pulumi.Input[str] | None
    kms_key_arn: pulumi.Input[str] | None


class GpuNodePool(Component):
    node_group_name: pulumi.Output[str]

    def __init__(self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:gpu_node_pool:GpuNodePool", name, opts)
        plan = args.settings
        tags = named(args.tags, plan.node_group_name, **{"alicerce.dev/pool": plan.labels.get("alicerce.dev/pool", "")})
        placement = None
        if plan.existing_placement_group is not None:
            # the reservation was created in this group (EC2 user guide, "Capacity Reservations in cluster placement groups")
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=plan.existing_placement_group)
        elif plan.placement_group:
            pg = aws.ec2.PlacementGroup(f"{name}-placement", strategy="cluster", tags=tags, opts=self.child())
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=pg.name)

        network_interfaces = None
        security_group_ids: list[pulumi.Input[str]] | None = list(args.security_group_ids)
        if plan.interfaces:
            efa_sg = [args.efa_security_group_id] if args.efa_security_group_id is not None else []
            network_interfaces = [
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                    network_card_index=i.card,
                    device_index=i.device,
                    interface_type=i.type,
                    delete_on_termination="true",
                    security_groups=[*args.security_group_ids, *efa_sg] if i.type == "interface" else efa_sg,
                )
                for i in plan.interfaces
            ]
            security_group_ids = None  # with explicit interfaces, groups go on each interface

        capacity = None
        market = None
        if plan.capacity_reservation_id:
            capacity = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=plan.capacity_reservation_id
                )
            )
        if plan.capacity_block:
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")

        user_data = node_user_data(raid0=plan.raid0, efa=bool(plan.interfaces))
        lt = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            description=f"alicerce node pool {plan.node_group_name}",
            update_default_version=True,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",  # IMDSv2 only
                http_put_response_hop_limit=1,  # pods cannot reach the node's credentials
                instance_metadata_tags="disabled",
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/xvda",
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=plan.root_volume_gib,
                        volume_type="gp3",
                        encrypted="true",
                        kms_key_id=args.kms_key_arn,
                        delete_on_termination="true",
                    ),
                )
            ],
            network_interfaces=network_interfaces,
            vpc_security_group_ids=security_group_ids,
            placement=placement,
            capacity_reservation_specification=capacity,
            instance_market_options=market,
            # Capacity Blocks: the template carries the instance type (and the node group lists none)
            instance_type=plan.instance_type if plan.instance_type_in_template else None,
            user_data=base64.b64encode(user_data.encode()).decode() if user_data else None,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                for kind in ("instance", "volume", "network-interface")
            ],
            tags=tags,
            opts=self.child(),
        )
        zones = [plan.zone] if plan.zone else sorted(args.subnet_ids)
        ng = aws.eks.NodeGroup(
            f"{name}-ng",
            cluster_name=args.cluster_name,
            node_group_name=plan.node_group_name,
            node_role_arn=args.node_role_arn,
            version=args.kubernetes_version,
            subnet_ids=[args.subnet_ids[z] for z in zones],
            ami_type=plan.ami_type,
            capacity_type=plan.capacity_type,
            instance_types=None if plan.instance_type_in_template else list(plan.instance_types),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=plan.min_size, max_size=plan.max_size, desired_size=plan.desired_size
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(
                max_unavailable=plan.max_unavailable,
                max_unavailable_percentage=plan.max_unavailable_percentage,
                update_strategy=plan.update_strategy,
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=lt.id, version=lt.latest_version.apply(str)),
            labels=plan.labels,
            taints=[aws.eks.NodeGroupTaintArgs(key=k, value=v, effect=e) for k, v, e in plan.taints],
            node_repair_config=node_repair_config(),
            tags=tags,
            # the cluster autoscaler owns the current size once the group exists. A change that replaces the group
            # (instance type, capacity type, zone: replacements.yaml) under its fixed name must delete the old group
            # first: Pulumi's default creates the replacement first, and EKS refuses a second group of one name
            # ("ResourceInUseException: NodeGroup already exists", pulumi/pulumi-eks#294, terraform-aws-eks#1415), so
            # the next `pulumi up` failed half-way. `alicerce diff` says the pool is empty in between
            opts=self.child(ignore_changes=["scalingConfig.desiredSize"], delete_before_replace=True),
        )
        self.node_group_name = ng.node_group_name
        # EKS creates the group's Auto Scaling group; cluster-autoscaler reads these tags from it
        asg = ng.resources.apply(lambda resources: resources[0].autoscaling_groups[0].name)  # type: ignore[index]
        for key, value in plan.autoscaler_tags.items():
            aws.autoscaling.Tag(
                f"{name}-asg-{hashlib.sha256(key.encode()).hexdigest()[:10]}",  # stable when other tags come and go
                autoscaling_group_name=asg,
                tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                opts=self.child(),
            )
        self.register_outputs({"nodeGroupName": ng.node_group_name, "launchTemplateId": lt.id})
