"""What the AWS target decides: instance types, EFA attachment, placement, zones, storage services,
and the names and ARNs of a site that several parts of the program must agree on.

The names are pure functions of the resolved platform (the cluster name and ARN, bucket names, log
groups, the FSx zone, the service-linked roles that use the platform key): the key policy, the IAM
policies, the node groups and the Kubernetes layer all read them from here, so a name can never
drift between a resource and the policy that grants access to it.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from alicerce.catalog import Catalog
from alicerce.catalog.alerts import CRITICAL_XIDS
from alicerce.catalog.fsx import GIB, FsxConfig, choose_fsx
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedTier
from alicerce.spec.models import Fabric, Networks, NodePool, ObjectTier, ParallelFsTier, PlatformSpec, SharedNfsTier, Site, StorageTier
from alicerce.spec.record import replace
from alicerce.targets.aws.spec import AwsSite, ExistingPlacementGroup
from alicerce.targets.aws.target import TARGET
from alicerce.targets.base import Capabilities, CsiSubdirectory, FileSystemMetrics, PlatformEndpoint, StorageMetricsExporter
from alicerce.targets.resolver import MountFacts, NodeSoftwareOwners, PoolPlacement, TargetResolver

RESERVED = ("capacity-reservation", "capacity-block")


# Which XIDs EKS node auto repair acts on, per line of the node monitoring agent (review obsreview32 D-2).
#
# EKS repairs a GPU node only when the eks-node-monitoring-agent add-on sets AcceleratedHardwareReady=False, which it
# does for the XIDs it rates fatal (its WellKnownXidCodes, aws/eks-node-monitoring-agent monitors/nvidia/dcgm/
# dcgm_policies.go); any other code is an NvidiaXID<code>Warning event: no cordon, no repair, the condition stays True.
# alicerce installs the add-on unpinned, so a cluster runs either side of v1.6.4 (pull 136, which took XIDs 13, 31, 94 and
# 121 out of the list). The lists below are the agent's, read at the versions vendored under
# tests/data/upstream/eks-node-monitoring-agent (a test holds them equal); GPUCriticalXid's runbook at aws names from
# them which critical XIDs EKS repairs and which the on-call must take out of service by hand.
NODE_MONITORING_ADDON = "eks-node-monitoring-agent"


class AgentXids(NamedTuple):
    """The XIDs one line of the agent rates fatal."""

    versions: str  # the agent versions the list holds for, in the runbook's words
    vendored: str  # the version the list was read at (tests/data/upstream/eks-node-monitoring-agent/<vendored>/xid.json)
    fatal: tuple[int, ...]


AGENT_XIDS = (
    AgentXids("before v1.6.4", "v1.6.0", (13, 31, 48, 63, 64, 74, 79, 94, 95, 119, 120, 121, 140)),
    AgentXids(
        "v1.6.4 and later",
        "v1.7.0",
        (46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158),
    ),
)


def repaired_critical_xids() -> tuple[int, ...]:
    """The critical XIDs every agent line rates fatal: EKS cordons and repairs the node whatever the add-on's version."""
    return tuple(c for c in CRITICAL_XIDS if all(c in a.fatal for a in AGENT_XIDS))


def unrepaired_critical_xids() -> dict[int, tuple[str, ...]]:
    """Critical XID -> the agent lines on which EKS does nothing for it (none of them rates it fatal)."""
    return {c: lines for c in CRITICAL_XIDS if (lines := tuple(a.versions for a in AGENT_XIDS if c not in a.fatal))}


def _codes(codes: list[str]) -> str:
    return codes[0] if len(codes) == 1 else f"{', '.join(codes[:-1])} and {codes[-1]}"


def manual_xids_text() -> str:
    """The critical XIDs EKS does not act on, in words: 'XID 154, nor on XID 94 with an agent v1.6.4 and later'."""
    everywhere = [str(c) for c, lines in unrepaired_critical_xids().items() if len(lines) == len(AGENT_XIDS)]
    partly = [
        f"XID {c} with an agent {' or '.join(lines)}" for c, lines in unrepaired_critical_xids().items() if len(lines) < len(AGENT_XIDS)
    ]
    parts = ([f"XID {_codes(everywhere)}"] if everywhere else []) + partly
    return ", nor on ".join(parts)


def critical_xid_action() -> str:
    """GPUCriticalXid's runbook at an EKS site: EKS's repair for the XIDs it acts on, the on-call's for the others."""
    repaired = _codes([str(c) for c in repaired_critical_xids()])
    manual = manual_xids_text()
    # the cordon, the 10 minutes and the pause: EKS User Guide node-health.html "Node auto repair" and node-repair.html
    # (review obsreview29 N-5, obsreview31 N-2); a cordon and uncordon counts only once the subquery step (1m) and a
    # scrape have seen it (review obsreview31 N-3)
    text = (
        f"for XID {repaired}, EKS node auto repair cordons the node and reboots or replaces it about 10 minutes after "
        "detection, unless repairs are paused (an ARC zonal shift, or more than 20% of a group of over five nodes "
        "unhealthy): check that the node's AcceleratedHardwareReady condition went back to True or the node was "
        "replaced (kubectl get node; aws eks describe-nodegroup shows the group's health issues); if neither, drain the "
        "node and terminate its instance, and the node group launches another. "
    )
    if manual:
        text += (
            f"EKS does not act on {manual} (aws eks describe-addon --addon-name {NODE_MONITORING_ADDON} gives the agent's version): "
            "no cordon, no repair, and AcceleratedHardwareReady stays True, so drain the node and terminate its "
            "instance now. "
        )
    return text + (
        "A rebooted node keeps its name: once its GPUs are healthy, cordon it, wait until the page resolves (about 2 "
        "minutes: one subquery step plus one scrape), then uncordon it"
    )


# The tag the storage component puts on every file system of a tier (components/storage.py), valued with the tier's name:
# the exporter finds the site's file systems by it and labels their series with it.
STORAGE_TIER_TAG = "alicerce.dev/storage-tier"
SITE_TAG = "alicerce.dev/site"  # on the file systems too: two sites of an environment may share a region and a tier name
STORAGE_METRICS_SA = ("monitoring", "cloudwatch-exporter")
STORAGE_METRICS_ROLE = "cloudwatch-exporter"
# Why YACE (prometheus-community/yet-another-cloudwatch-exporter) and not prometheus-community's cloudwatch_exporter (Java):
# YACE discovers the file systems by their tags (the Resource Groups Tagging API), so the in-cluster layer needs no file
# system id, which exists only after `pulumi up`; it puts the tier tag on every series; and it asks for many series in one
# GetMetricData call (billed per metric, not per call). Its series names, at v0.67.0 (pkg/promutil/migrate.go
# BuildMetricName, createPrometheusLabels; prometheus.go PromString, sanitize): aws_<namespace>_<metric>_<statistic> in
# snake case, where a run of capitals stays one word (DataReadIOBytes -> data_read_iobytes); each dimension as
# dimension_<Name>, each exported tag as tag_<key> with . / - turned into _ (labelsSnakeCase off, its default). Facts
# vendored in tests/data/upstream/yet-another-cloudwatch-exporter/v0.67.0/.
# FSx for Lustre (FSx Lustre user guide, "Amazon FSx for Lustre metrics") and EFS (EFS user guide, "CloudWatch metrics
# for Amazon EFS") publish these every minute, with the one dimension FileSystemId; a Sum is what the minute moved. EFS has
# no operation counts of their own: each *IOBytes metric's SampleCount is the number of its operations.
# Idle minutes (review obsreview5 G1): FSx for Lustre publishes a datapoint per disk every minute (FSx Lustre user guide,
# "Monitoring with Amazon CloudWatch"), so FSx reads 5 minutes back and a minute published late is bridged. Neither EFS page ("CloudWatch
# metrics for Amazon EFS", "Using metric math with Amazon EFS") says whether an idle minute gets a 0 or no datapoint, and
# CloudWatch reports some AWS metrics only when they are not zero (prometheus/cloudwatch_exporter README, PR 153): so EFS
# reads one minute, the one that ended `delay_seconds` ago. A minute with no datapoint then reads 0 (nilToZero, YACE
# v0.67.0 pkg/promutil/migrate.go BuildMetrics), a burst counts for its own minute only, not for each of the 5 minutes a
# wider window keeps serving it (pkg/job/getmetricdata/windowcalculator.go Calculate: [end - length, end), the newest
# datapoint served). The cost: an EFS minute CloudWatch publishes later than `delay_seconds` reads 0.
# A file system with no datapoint in two weeks (never used, long idle) has no metric at all (ListMetrics lists only
# those; nilToZero fills only what it lists), but it still has the aws_<service>_info series of every resource the tag
# search finds (migrate.go BuildNamespaceInfoMetrics, tag_ labels included): the tier KPIs read it as idle (review
# obsreview5 G2).
FSX_METRICS = FileSystemMetrics(
    namespace="AWS/FSx",
    dimension="FileSystemId",
    requested=dict.fromkeys(
        ("DataReadBytes", "DataWriteBytes", "DataReadOperations", "DataWriteOperations", "MetadataOperations"), ("Sum",)
    ),
    read_bytes="aws_fsx_data_read_bytes_sum",
    written_bytes="aws_fsx_data_write_bytes_sum",
    operations=("aws_fsx_data_read_operations_sum", "aws_fsx_data_write_operations_sum"),
    metadata_operations="aws_fsx_metadata_operations_sum",
    discovered="aws_fsx_info",
    window_periods=5,
)
EFS_METRICS = FileSystemMetrics(
    namespace="AWS/EFS",
    dimension="FileSystemId",
    requested={
        "DataReadIOBytes": ("Sum", "SampleCount"),
        "DataWriteIOBytes": ("Sum", "SampleCount"),
        "MetadataIOBytes": ("SampleCount",),
        "PercentIOLimit": ("Average",),  # General Purpose performance mode only (alicerce creates those)
    },
    read_bytes="aws_efs_data_read_iobytes_sum",
    written_bytes="aws_efs_data_write_iobytes_sum",
    operations=("aws_efs_data_read_iobytes_sample_count", "aws_efs_data_write_iobytes_sample_count"),
    metadata_operations="aws_efs_metadata_iobytes_sample_count",
    discovered="aws_efs_info",
    window_periods=1,
    io_limit_percent="aws_efs_percent_iolimit_average",
)
STORAGE_METRICS = StorageMetricsExporter(
    chart="prometheus-yet-another-cloudwatch-exporter",
    service_account=STORAGE_METRICS_SA,
    tier_tag=STORAGE_TIER_TAG,
    site_tag=SITE_TAG,
    tier_label="tag_alicerce_dev_storage_tier",
    # one minute: the finest period FSx and EFS publish at (a shorter one returns nothing, a longer one blurs a burst)
    period_seconds=60,
    # CloudWatch shows a minute's datapoint a minute or two after it ends: read the newest minute that ended 2 minutes ago
    delay_seconds=120,
    # yace_cloudwatch_request_errors{api_name} (v0.67.0 pkg/promutil/prometheus.go NewScrapeMetrics; counted on a failed
    # ListMetrics or GetMetricData, pkg/clients/cloudwatch/client.go): a counter registered without _total, which an
    # OpenMetrics scrape serves with the suffix
    request_errors='{__name__=~"yace_cloudwatch_request_errors(_total)?"}',
    sources={"fsx-lustre": FSX_METRICS, "efs": EFS_METRICS},
)

CAPABILITIES = Capabilities(
    provider=TARGET.name,
    label=TARGET.label,
    owned=TARGET.capacity == "owned",
    pool_section=TARGET.name,
    pool_section_hint="add aws: {instanceType: ...}",
    nodes_by_ansible=TARGET.applies,
    # the EKS AL2023 NVIDIA AMIs ship the driver, the container toolkit and the EFA module (EKS user guide, "NVIDIA AMIs")
    gpu_stack_on_image=True,
    storage={"parallel-fs": "fsx-lustre", "shared-nfs": "efs", "object": "s3", "block": "ebs", "local-nvme": "instance-store"},
    default_storage_class={
        "name": "gp3-encrypted",
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", "encrypted": "true"},
    },
    # EKS runs the controller manager, scheduler and etcd out of reach; kube-proxy is an add-on whose metrics
    # address alicerce does not set (unverified that Prometheus can reach it: left out, as before)
    unscraped_control_plane=("controller-manager", "scheduler", "etcd", "kube-proxy"),
    cloud_controllers=("cluster-autoscaler", "aws-load-balancer-controller"),
    # FSx for Lustre is mounted by its CSI driver's chart; EFS's driver is an EKS add-on the cloud layer installs
    csi_charts={"fsx-lustre": "aws-fsx-csi-driver"},
    rdma_device_plugin="aws-efa-k8s-device-plugin",  # EFA interfaces as vpc.amazonaws.com/efa
    csi_subdirectories={
        # FSx for Lustre: a subdirectory mount is the Lustre mount name followed by the path
        "fsx.csi.aws.com": CsiSubdirectory(attribute="mountname", default="fsx"),
        # EFS: the driver's `fs-id:/path` volume handle form
        "efs.csi.aws.com": CsiSubdirectory(handle_separator=":/"),
    },
    storage_metrics=STORAGE_METRICS,
    # every GPU node group has node auto repair on (components/gpu_node_pool.py): EKS replaces a node NotReady for
    # 30 minutes and reboots or replaces one whose GPUs fail the node monitoring agent's checks after 10, but pauses
    # while more than 20% of a group of over five nodes is unhealthy (EKS User Guide, "Automatically repair nodes in
    # EKS clusters", https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html; review obsreview29 N-5)
    dead_node_action="EKS node auto repair replaces a node NotReady for 30 minutes (it pauses while over 20% of a group "
    "of more than five nodes is unhealthy): watch the replacement join (kubectl get nodes; aws eks describe-nodegroup "
    "shows the group's health issues), and cordon the node only if it is not replaced",
    # the same page: EKS's repair for the XIDs its node monitoring agent rates fatal on every agent line, the on-call's
    # for the critical XIDs it only reports as an event (review obsreview32 D-2), from the agent's lists in one place
    gpu_fault_action=critical_xid_action(),
    critical_xid_cordon="At an EKS site the page ends when EKS cordons the node, before its repair, for the XIDs it "
    "repairs: the repair is confirmed by the node's condition, not by the page; for the others, at the drain",
    # an EC2 instance has no BMC, PDU or RMA for its user: a GPU or host at fault is left behind by terminating the
    # instance (the node group launches another). EKS node auto repair does not act on the XIDs that
    # GPUApplicationXidRecurring counts (components/gpu_node_pool.py application_xid_overrides; review obsreview31 G-2, N-4)
    gpu_suspect_action="drain the node and terminate its instance, and the node group launches another (EKS node auto "
    "repair does not act on these XIDs)",
    gpu_replace_action="drain the node and terminate its instance (the node group launches another)",
    power_fault_action="An instance's power supplies are EC2's: drain the node and terminate its instance (the node "
    "group launches another) if it persists",
    # AL2023 AMIs, the EKS ones included, are configured for the Amazon Time Sync Service's IPv4 endpoint 169.254.169.123
    # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configure-ec2-ntp.html); alicerce configures no time daemon
    clock_sync_action="EKS nodes' chronyd follows the Amazon Time Sync Service at 169.254.169.123 (the AMI's own "
    "configuration): on the node (an SSM session), chronyc tracking says how far off the clock is and chronyc sources -v "
    "whether it reaches that source; a node that does not is broken: drain it and terminate its instance (the node group "
    "launches another)",
)
# the EKS Pod Identity agent listens on these link-local addresses on every node (EKS user guide, "Understand
# how EKS Pod Identity works"; IPv6 clusters use the IPv6 one): a default-deny egress must let pods reach it
POD_IDENTITY_AGENT = PlatformEndpoint(
    "eks-pod-identity-agent",
    ("169.254.170.23/32", "fd00:ec2::23/128"),
    (("TCP", 80),),
    "AWS credentials for workload identity (EKS Pod Identity agent)",
)


def _site_capabilities(site: Site, spec: PlatformSpec, environment: str) -> Capabilities:
    """The capabilities of one AWS site: its default StorageClass encrypts with the platform key.

    The EBS CSI driver passes ``kmsKeyId`` to EC2 CreateVolume, which takes a key or alias ARN; the
    platform key's alias ARN is known before the key exists, so the Kubernetes layer needs no output.
    """
    caps = _reserved_host_words(site, spec)
    encryption = spec.security.encryption
    if not isinstance(site, AwsSite) or not encryption.at_rest or caps.default_storage_class is None:
        return caps
    key = encryption.kms_key or f"alias/{physical_name(spec.metadata.name, environment, site)}"
    if not key.startswith("arn:"):
        key = f"arn:{partition(site.region)}:kms:{site.region}:{site.account}:{key if key.startswith('alias/') else 'key/' + key}"
    storage_class = caps.default_storage_class
    parameters = {**storage_class["parameters"], "kmsKeyId": key}
    return replace(caps, default_storage_class={**storage_class, "parameters": parameters})


def _reserved_host_words(site: Site, spec: PlatformSpec) -> Capabilities:
    """The GPU fault runbooks of a site with GPU pools on reserved capacity (review obsreview32 N-5): terminating the
    instance frees its slot in the reservation or Capacity Block, and the node group's next launch may take the same
    host, since a terminate tells AWS nothing about the host. Named per pool, as only those pools' nodes are concerned."""
    kinds = {"capacity-reservation": "a capacity reservation", "capacity-block": "a Capacity Block"}
    reserved = [
        f"{p.name} ({kinds[p.aws.capacity_type]})"
        for p in spec.node_pools
        if p.site == site.name and p.accelerator is not None and p.aws is not None and p.aws.capacity_type in RESERVED
    ]
    if not reserved:
        return CAPABILITIES
    note = (
        f"In pool{'s' if len(reserved) > 1 else ''} {', '.join(reserved)} the instance launched in its place may land on "
        "the same host, as a terminate "
        "tells AWS nothing about the host: if the fault comes back there, open an AWS Support case with the instance ID"
    )
    return replace(
        CAPABILITIES,
        gpu_fault_action=f"{CAPABILITIES.gpu_fault_action}. {note}",
        gpu_suspect_action=f"{CAPABILITIES.gpu_suspect_action}. {note}",
        gpu_replace_action=f"{CAPABILITIES.gpu_replace_action}. {note}",
    )


def _site(site: Site, networks: Networks) -> Site:
    return site.model_copy(update={"service_cidr": site.service_cidr or networks.service_cidr})


def _pool(pool: NodePool, site: Site, fabric: Fabric | None, catalog: Catalog) -> PoolPlacement:
    if not isinstance(site, AwsSite) or pool.aws is None:
        return PoolPlacement()
    instance = catalog.instance(pool.aws.instance_type)
    efa = instance.efa.maxInterfaces if instance is not None and instance.efa is not None and fabric is not None else 0
    reserved = pool.aws.capacity_type in RESERVED
    chosen = pool.aws.placement_group
    # an existing group (the one a reservation was created in) counts as a placement group too
    placement = chosen is True or isinstance(chosen, ExistingPlacementGroup) if chosen is not None else bool(efa) and not reserved
    return PoolPlacement(
        instance=instance,
        rdma_technology="efa" if efa else None,
        rdma_interfaces=efa,
        placement_group=placement,
        # EFA traffic does not cross zones: an EFA pool lives in one (rule AL212 asks for it at multi-zone sites)
        zone=pool.aws.zone or (site.zones[0] if efa else None),
        capacity_type=pool.aws.capacity_type,
    )


def _implementation(tier: StorageTier) -> str | None:
    # a tier kind AWS has no implementation for is not built here (rule AL230 reports it), not a KeyError
    return CAPABILITIES.storage.get(tier.class_)


def _mount(tier: StorageTier, implementation: str) -> MountFacts | None:
    # FSx and EFS are mounted by their CSI drivers; the options are the ones those drivers document
    if implementation == "fsx-lustre" and isinstance(tier, ParallelFsTier):
        return MountFacts("fsx-lustre", "", ("flock",))
    if implementation == "efs" and isinstance(tier, SharedNfsTier):
        # iam: efs-utils signs the mount with the node's IAM role (EFS user guide, "Mounting with IAM authorization";
        # it needs tls), so the file system policy, which grants nothing to anonymous clients, lets it in
        return MountFacts("efs", "", ("tls", "iam"))
    return None


def _file_system(tier: StorageTier, implementation: str, catalog: Catalog, throughput_bps: float | None, pinned: bool) -> FsxConfig | None:
    # FSx for Lustre: the cheapest capacity and per-unit throughput that hold the data and meet the throughput,
    # from the tier's aws: section where it pins them (the AWS rules report pins AWS would refuse)
    if implementation != "fsx-lustre" or not isinstance(tier, ParallelFsTier):
        return None
    aws = tier.aws
    return choose_fsx(
        catalog.fsx,
        aws.deployment_type if aws else "PERSISTENT_2",
        aws.storage_type if aws else "SSD",
        tier.capacity,
        throughput_bps,
        per_unit=aws.per_unit_storage_throughput if aws else None,
        capacity_gib=int(aws.storage_capacity / GIB) if pinned and aws and aws.storage_capacity else None,
    )


def _software(site: Site) -> NodeSoftwareOwners:
    # the EKS NVIDIA AMI carries driver and toolkit; kube-prometheus-stack's DaemonSet is the node exporter
    return NodeSoftwareOwners(gpu_driver="node-image", node_exporter="cluster")


def _endpoints(site: Site) -> tuple[PlatformEndpoint, ...]:
    # the EKS API is reached on 443, which every team namespace may already use (HTTPS egress)
    return (POD_IDENTITY_AGENT,)


RESOLVER = TargetResolver(
    capabilities=CAPABILITIES,
    site=_site,
    pool=_pool,
    implementation=_implementation,
    mount=_mount,
    software=_software,
    site_capabilities=_site_capabilities,
    endpoints=_endpoints,
    file_system=_file_system,
)


# ---------------------------------------------------------------- names and ARNs of a site

# Service accounts of the controllers alicerce installs with a pod-identity role.
CLUSTER_AUTOSCALER_SA = ("kube-system", "cluster-autoscaler")
LOAD_BALANCER_CONTROLLER_SA = ("kube-system", "aws-load-balancer-controller")
VPC_CNI_SA = ("kube-system", "aws-node")
EBS_CSI_SA = ("kube-system", "ebs-csi-controller-sa")
EFS_CSI_SA = ("kube-system", "efs-csi-controller-sa")
TRAINING_PURPOSES = ("training", "fine-tuning")


def partition(region: str) -> str:
    """The AWS partition of a region (ARNs start with arn:<partition>:)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def physical_name(platform: str, environment: str, site: AwsSite) -> str:
    """The physical name prefix of a site's resources, and its EKS cluster's name."""
    return f"{platform}-{environment}-{site.name}"


def site_name(rp: ResolvedPlatform, site: AwsSite) -> str:
    return physical_name(rp.name, rp.environment, site)


# ---------------------------------------------------------------- AWS name length limits (rule AL299)

# "can't be longer than 100 characters" (EKS API reference, CreateCluster, name)
CLUSTER_NAME_MAX = 100
# "The node group name can't be longer than 63 characters" (EKS API reference, CreateNodegroup, nodegroupName)
NODE_GROUP_NAME_MAX = 63
# "Bucket names must be between 3 (min) and 63 (max) characters long" (S3 user guide, "General purpose bucket naming rules")
BUCKET_NAME_MAX = 63
# role names: 64 characters (IAM user guide, "IAM and AWS STS quotas")
ROLE_NAME_MAX = 64
# The program names no role: Pulumi names each after its resource name plus "-" and 7 random hex characters, and
# fails when that exceeds the provider's limit ("name '...' plus 7 random chars is longer than maximum length 64",
# pulumi sdk/go/common/resource NewUniqueHex)
AUTONAME_SUFFIX = 8


# Node-template tags cluster-autoscaler reads from the Auto Scaling group to build a node for a group at
# zero (cloudprovider/aws/README.md "Auto-Discovery Setup" and aws_manager.go buildNodeFromTemplate).
TEMPLATE_TAG = "k8s.io/cluster-autoscaler/node-template"
# Auto Scaling group tags: key 1-128 characters, value 0-256 (EC2 Auto Scaling API reference, Tag)
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256


def template_tag(kind: str, name: str) -> str:
    """The Auto Scaling tag key that tells cluster-autoscaler a node's label, taint or resource ``name``."""
    return f"{TEMPLATE_TAG}/{kind}/{name}"


def node_group_name(cluster: str, pool: str) -> str:
    """The EKS managed node group of a pool (also its Auto Scaling group's eks-<name>-<uuid>)."""
    return f"{cluster}-{pool}"


# ---------------------------------------------------------------- node-group labels and taints (rules AL310, AL311)

# EKS API reference, CreateNodegroup labels (UpdateLabelsPayload): key and value 1-63 characters each, the
# whole key counted, prefix included; Taint: key 1-63, value 0-63.
EKS_LABEL_MAX = 63
# "Label cannot contain reserved prefixes [kubernetes.io/, k8s.io/, eks.amazonaws.com/]" (CreateNodegroup's
# InvalidParameterException, quoted in eksctl-io/eksctl#4006; the same for taints, aws/containers-roadmap#1451);
# their subdomains (node-role.kubernetes.io/) are in the same reserved namespaces.
EKS_RESERVED_DOMAINS = ("kubernetes.io", "k8s.io", "eks.amazonaws.com")


def eks_reserved(key: str) -> str | None:
    """The reserved domain a label or taint key's prefix falls in, or None."""
    prefix, slash, _ = key.rpartition("/")
    if not slash:
        return None
    return next((d for d in EKS_RESERVED_DOMAINS if prefix == d or prefix.endswith(f".{d}")), None)


def eks_label_problem(key: str, value: str, *, taint: bool = False) -> str | None:
    """Why EKS refuses a node-group label (or taint, with ``taint``), or None when it takes it."""
    kind = "taint" if taint else "label"
    if len(key) > EKS_LABEL_MAX:
        return f"EKS takes {kind} keys of at most {EKS_LABEL_MAX} characters, prefix included; {key} has {len(key)}"
    if (domain := eks_reserved(key)) is not None:
        return f"EKS refuses {kind} keys in the reserved {domain}/ namespace: {key}"
    if not taint and value == "":
        return f"EKS refuses empty label values ({key})"
    return None


# ---------------------------------------------------------------- VPC and subnets (rule AL313)

# VPC and subnet IPv4 blocks are /16 to /28 (VPC user guide, "VPC CIDR blocks" and "Subnet CIDR blocks").
VPC_PREFIX_MIN, VPC_PREFIX_MAX = 16, 28


def subnet_bits(zones: int) -> int:
    """Bits the VPC is split by: the fewest that leave one block spare for the public subnets."""
    return max(1, (zones).bit_length())


def subnet_prefixes(vpc_prefix: int, zones: int) -> tuple[int, int]:
    """(private, public) prefix lengths of the subnets the network component lays out (network.subnet_layout)."""
    bits = subnet_bits(zones)
    return vpc_prefix + bits, vpc_prefix + 2 * bits


CLUSTER_AUTOSCALER_ROLE = "cluster-autoscaler"
LOAD_BALANCER_CONTROLLER_ROLE = "load-balancer-controller"


def identity_component(site: AwsSite) -> str:
    """The resource name of a site's workload-identity component: its roles are named after it."""
    return f"{site.name}-identity"


def workload_role(component: str, label: str) -> str:
    """The resource name of a pod-identity role of the identity component (a controller's, or team-<name>)."""
    return f"{component}-{label}"


def other_api_servers(rp: ResolvedPlatform, site: AwsSite) -> tuple[tuple[str, int], ...]:
    """(site, port) of the Kubernetes API servers of the environment's other sites that name their endpoint (on-prem
    controlPlaneEndpoint): the runner of the Kubernetes layer, in this site's VPC, applies their objects too. The
    port is the URL's, else the scheme's (https: 443)."""
    out = []
    for other in rp.sites:
        endpoint = getattr(other.spec, "control_plane_endpoint", None)
        if other.name == site.name or not endpoint:
            continue
        url = urlsplit(endpoint)
        out.append((other.name, url.port or (80 if url.scheme == "http" else 443)))
    return tuple(out)


def cluster_arn(rp: ResolvedPlatform, site: AwsSite) -> str:
    return f"arn:{partition(site.region)}:eks:{site.region}:{site.account}:cluster/{site_name(rp, site)}"


def key_alias(rp: ResolvedPlatform, site: AwsSite) -> str:
    return f"alias/{site_name(rp, site)}"


def key_alias_arn(rp: ResolvedPlatform, site: AwsSite) -> str:
    return f"arn:{partition(site.region)}:kms:{site.region}:{site.account}:{key_alias(rp, site)}"


def bucket_name(rp: ResolvedPlatform, site: AwsSite, tier: str) -> str:
    return f"{rp.name}-{rp.environment}-{tier}-{site.account}"


def access_log_bucket(rp: ResolvedPlatform, site: AwsSite) -> str:
    """The bucket that receives the S3 server access logs of the site's buckets (rule AL299 checks its length)."""
    return bucket_name(rp, site, "access-logs")


def audit_bucket(rp: ResolvedPlatform, site: AwsSite) -> str:
    """The bucket CloudTrail delivers the site's audit trail to (no longer than the access-log bucket's name)."""
    return bucket_name(rp, site, "audit")


def trail_name(rp: ResolvedPlatform, site: AwsSite) -> str:
    return f"{site_name(rp, site)}-audit"


def trail_arn(rp: ResolvedPlatform, site: AwsSite) -> str:
    """Known before deploy: the key and bucket policies name it (aws:SourceArn)."""
    return f"arn:{partition(site.region)}:cloudtrail:{site.region}:{site.account}:trail/{trail_name(rp, site)}"


def bucket_arn(site: AwsSite, bucket: str) -> str:
    return f"arn:{partition(site.region)}:s3:::{bucket}"


def tier_bucket(rp: ResolvedPlatform, site: AwsSite, tier: ResolvedTier) -> tuple[str, bool]:
    """(bucket name, whether alicerce creates it) of an object tier at an AWS site."""
    existing = tier.spec.aws.bucket if isinstance(tier.spec, ObjectTier) and tier.spec.aws is not None else None
    return (existing, False) if existing else (bucket_name(rp, site, tier.name), True)


def control_plane_log_group(rp: ResolvedPlatform, site: AwsSite) -> str:
    return f"/aws/eks/{site_name(rp, site)}/cluster"


def flow_log_group(rp: ResolvedPlatform, site: AwsSite) -> str:
    return f"/alicerce/{site_name(rp, site)}/vpc-flow-logs"


def fsx_log_group(rp: ResolvedPlatform, site: AwsSite) -> str:
    # FSx writes only to log groups whose name begins with /aws/fsx (FSx for Lustre user guide, "Logging with Amazon CloudWatch Logs")
    return f"/aws/fsx/{site_name(rp, site)}"


def log_group_arn(site: AwsSite, name: str) -> str:
    return f"arn:{partition(site.region)}:logs:{site.region}:{site.account}:log-group:{name}"


def autoscaling_slr_arn(site: AwsSite) -> str:
    """The EC2 Auto Scaling service-linked role, which launches every managed node group's instances."""
    return f"arn:{partition(site.region)}:iam::{site.account}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"


def fsx_s3_access_slr_pattern(site: AwsSite) -> str:
    """FSx's per-file-system S3 access role (its name ends in the file system id, unknown before it exists)."""
    return (
        f"arn:{partition(site.region)}:iam::{site.account}:role/aws-service-role/"
        "s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_*"
    )


def site_pools(rp: ResolvedPlatform, site: AwsSite) -> list[ResolvedPool]:
    return [p for p in rp.pools if p.site.name == site.name]


def fsx_zone(rp: ResolvedPlatform, site: AwsSite, tier: ResolvedTier) -> str:
    """The zone of a tier's FSx for Lustre file system (one zone per file system).

    The tier's own aws.zone; else the zone of the site's zone-pinned training pools (EFA pools
    first: they are pinned anyway and read the most); else the site's first zone. Rule AL293 asks
    training pools to sit in this zone: cross-zone Lustre traffic is billed and slower.
    """
    spec = tier.spec
    if isinstance(spec, ParallelFsTier) and spec.aws is not None and spec.aws.zone:
        return spec.aws.zone
    pools = [p for p in site_pools(rp, site) if p.zone and p.gpu is not None and p.spec.purpose in TRAINING_PURPOSES]
    pinned = [p.zone for p in pools if p.efa_interfaces] or [p.zone for p in pools]
    pinned = pinned or [p.zone for p in site_pools(rp, site) if p.zone]
    return next((z for z in pinned if z is not None), site.zones[0])
