"""The platform spec language: ``apiVersion: alicerce.dev/v1``, ``kind: Platform``.

Strict, frozen pydantic models with a description on every field (they become the editor hover
text through ``schema/platform.schema.json``). YAML keys are camelCase; Python attributes are
snake_case. Checks that need more than one field, the catalog or an environment live in
:mod:`alicerce.rules`, where each has a rule id and fixtures.
"""

from __future__ import annotations

import datetime
import ipaddress
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, WithJsonSchema
from pydantic.alias_generators import to_camel

from alicerce.spec.units import ByteSize, Cidr, Count, Duration, Rate


class SpecModel(BaseModel):
    """Base of every spec model: unknown keys are errors, values never change after load."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        use_enum_values=True,
        defer_build=True,
    )


DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

Name = Annotated[
    str,
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL, "maxLength": 63}),
]
"""A DNS-1123 label; checked by rule AL201 so that every bad name is reported with its fix."""

Labels = Annotated[
    dict[str, str],
    Field(description="Kubernetes-style labels (key: value)."),
]

Purpose = Literal["training", "fine-tuning", "inference", "batch-inference", "data-prep", "system"]
WorkloadKind = Literal["training", "fine-tuning", "inference", "batch-inference", "data-prep"]
EksAddon = Literal["vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent", "aws-ebs-csi-driver", "aws-efs-csi-driver"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"]


# --------------------------------------------------------------------------------------------
# metadata and versions


class Metadata(SpecModel):
    """Who owns the platform and how its cost is attributed."""

    name: Name = Field(description="Platform name; prefixes every resource it creates.", examples=["acme-ml"])
    owner: str = Field(description="Owning team or contact address.", examples=["ml-platform@acme.example"])
    cost_center: str = Field(description="Default cost center for showback.", examples=["CC-4410"])
    labels: Labels = Field(default_factory=dict, description="Labels applied to every resource for showback.")


class Versions(SpecModel):
    """Pinned component versions. Each one left out comes from the catalog's tested bill of materials."""

    kubernetes: str | None = Field(default=None, description="Kubernetes minor version.", examples=["1.33"])
    driver_branch: str | None = Field(default=None, description="NVIDIA datacenter driver branch.", examples=["580"])
    driver_version: str | None = Field(
        default=None, description="Exact driver version within the branch (on-prem installs).", examples=["580.95.05"]
    )
    gpu_operator: str | None = Field(default=None, description="NVIDIA GPU Operator version.", examples=["v25.10.0"])
    network_operator: str | None = Field(default=None, description="NVIDIA Network Operator version.")
    kueue: str | None = Field(default=None, description="Kueue version.", examples=["0.15.1"])
    kuberay: str | None = Field(default=None, description="KubeRay operator version.")
    training_operator: str | None = Field(default=None, description="Kubeflow training operator version.")
    kube_prometheus_stack: str | None = Field(default=None, description="kube-prometheus-stack chart version.")
    efa_device_plugin: str | None = Field(default=None, description="AWS EFA device plugin chart version.")
    fsx_csi_driver: str | None = Field(default=None, description="AWS FSx for Lustre CSI driver chart version.")
    eks_addons: dict[EksAddon, str] = Field(
        default_factory=dict,
        description="EKS managed add-on versions by add-on name; each one left out comes from the catalog for the cluster's"
        " Kubernetes minor (`alicerce catalog versions`), else AWS's default version when `pulumi up` runs.",
        examples=[{"aws-ebs-csi-driver": "v1.66.0-eksbuild.1"}],
    )


# --------------------------------------------------------------------------------------------
# environments and sites


class AwsSite(SpecModel):
    """An AWS region in one account, holding one EKS cluster."""

    name: Name = Field(description="Site name that node pools and storage tiers refer to.", examples=["aws"])
    provider: Literal["aws"] = Field(description="Target kind.")
    account: str = Field(description="AWS account id (12 digits, quoted).", examples=["123456789012"])
    region: str = Field(description="AWS region.", examples=["us-east-1"])
    zones: list[str] = Field(min_length=1, description="Availability zones used, in order.", examples=[["us-east-1a"]])
    vpc_cidr: Cidr = Field(description="VPC address range.")
    service_cidr: Cidr | None = Field(default=None, description="Kubernetes service range (defaults to networks.serviceCidr).")


class OnpremHostGroup(SpecModel):
    """Control-plane or infrastructure hosts of an on-prem site."""

    hosts: list[str] = Field(min_length=1, description="Host names or ranges such as cp-[1:3].dc1.example.com.")


class OnpremSite(SpecModel):
    """An on-prem data center with its own Kubernetes cluster."""

    name: Name = Field(description="Site name that node pools and storage tiers refer to.", examples=["dc1"])
    provider: Literal["onprem"] = Field(description="Target kind.")
    control_plane_endpoint: str = Field(
        description="Kubernetes API endpoint of the site's cluster.", examples=["https://k8s.dc1.example.com:6443"]
    )
    control_plane: OnpremHostGroup | None = Field(default=None, description="Control-plane hosts, when alicerce manages them.")
    host_cidrs: list[Cidr] = Field(min_length=1, description="Node networks of the site.")
    pod_cidr: Cidr | None = Field(default=None, description="Pod range (defaults to networks.podCidr).")
    service_cidr: Cidr | None = Field(default=None, description="Service range (defaults to networks.serviceCidr).")
    kubeconfig_secret: str | None = Field(
        default=None,
        description="Name of the Pulumi secret config key holding this cluster's kubeconfig (never the kubeconfig itself).",
        examples=["dc1Kubeconfig"],
    )


Site = Annotated[AwsSite | OnpremSite, Field(discriminator="provider")]


class Environment(SpecModel):
    """One deployment of the platform (dev, staging, prod, ...)."""

    tier: Literal["development", "staging", "production"] = Field(
        description="How strictly production rules apply (encryption, private endpoints)."
    )
    sites: list[Site] = Field(min_length=1, description="Where this environment runs; an AWS region, an on-prem site, or both.")
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Changes to the base spec for this environment. Maps merge deeply, lists of named items merge by "
            "name (an item with `$patch: delete` removes it), an explicit null removes a key."
        ),
    )


# --------------------------------------------------------------------------------------------
# node pools


class Accelerator(SpecModel):
    """The accelerator model of a node pool and how many each node has."""

    model: str = Field(description="Catalog GPU id or alias.", examples=["H100-SXM5-80GB"])
    count: StrictInt = Field(ge=1, le=16, description="Accelerators per node.")


def _accelerator_shorthand(value: Any) -> Any:
    if isinstance(value, str):
        model, sep, count = value.rpartition(":")
        if not sep:
            return {"model": value, "count": 1}
        try:
            return {"model": model, "count": int(count)}
        except ValueError:
            raise ValueError(f'expected "MODEL:COUNT" such as "H100-SXM5-80GB:8", got "{value}"') from None
    return value


AcceleratorSpec = Annotated[
    Accelerator,
    BeforeValidator(_accelerator_shorthand),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]+)?$", "examples": ["H100-SXM5-80GB:8"]},
                {
                    "type": "object",
                    "properties": {
                        "model": {"type": "string", "description": "Catalog GPU id or alias."},
                        "count": {"type": "integer", "minimum": 1, "maximum": 16, "description": "Accelerators per node."},
                    },
                    "required": ["model", "count"],
                    "additionalProperties": False,
                },
            ]
        }
    ),
]


class NoSharing(SpecModel):
    """Whole GPUs per pod."""

    mode: Literal["none"] = Field(description="No GPU sharing.")


class MigSharing(SpecModel):
    """Multi-Instance GPU: each GPU split into hardware-isolated instances."""

    mode: Literal["mig"] = Field(description="MIG partitioning.")
    profiles: dict[str, StrictInt] = Field(
        min_length=1,
        description="MIG profile -> instances per GPU (one mig-parted configuration applied to every GPU).",
        examples=[{"1g.10gb": 7}, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}],
    )


class TimeSlicing(SpecModel):
    """Time-sliced sharing: each GPU advertised as several, with no memory isolation."""

    mode: Literal["time-slicing"] = Field(description="Time-slicing.")
    replicas: StrictInt = Field(ge=2, le=64, description="Pods that may share one GPU.")


Sharing = Annotated[NoSharing | MigSharing | TimeSlicing, Field(discriminator="mode")]


class Taint(SpecModel):
    key: str = Field(description="Taint key.", examples=["nvidia.com/gpu"])
    value: str = Field(default="", description="Taint value.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Taint effect.")


class Scaling(SpecModel):
    min: StrictInt = Field(ge=0, description="Fewest nodes (0 lets an idle pool cost nothing).")
    max: StrictInt = Field(ge=0, description="Most nodes; also the explicit GPU limit for autoscalers.")
    desired: StrictInt | None = Field(default=None, ge=0, description="Initial size; defaults to min.")


class AwsPool(SpecModel):
    """How a pool is built on AWS."""

    instance_type: str = Field(description="EC2 instance type.", examples=["p5.48xlarge"])
    capacity_type: Literal["on-demand", "spot", "capacity-reservation", "capacity-block"] = Field(
        default="on-demand", description="How the capacity is bought."
    )
    capacity_reservation_id: str | None = Field(
        default=None, description="ODCR or Capacity Block id (cr-...), for reserved capacity types."
    )
    placement_group: StrictBool | None = Field(
        default=None,
        description="Cluster placement group. Default: on for EFA pools, unless capacity is reserved or a block.",
    )
    zone: str | None = Field(
        default=None,
        description="Pin the pool to one zone; required for EFA pools at multi-zone sites (EFA traffic does not cross zones).",
    )
    root_volume: ByteSize = Field(default=200 * 2**30, description="Root volume size.")


class HostRange(SpecModel):
    """A set of on-prem hosts, optionally in one rack."""

    hosts: str = Field(description="Host name or range such as gpu-[001:032].dc1.example.com.")
    rack: str | None = Field(default=None, description="Rack id, used for inventory groups and rolling batches.")


def _host_range_shorthand(value: Any) -> Any:
    return {"hosts": value} if isinstance(value, str) else value


HostRangeSpec = Annotated[
    HostRange,
    BeforeValidator(_host_range_shorthand),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "description": "Host name or range such as gpu-[001:032].dc1.example.com."},
                {
                    "type": "object",
                    "properties": {
                        "hosts": {"type": "string", "description": "Host name or range."},
                        "rack": {"type": ["string", "null"], "description": "Rack id."},
                    },
                    "required": ["hosts"],
                    "additionalProperties": False,
                },
            ]
        }
    ),
]


class OnpremPool(SpecModel):
    """Which on-prem servers form the pool."""

    hosts: list[HostRangeSpec] = Field(
        min_length=1,
        description="Host names or ranges, as strings or {hosts, rack}.",
        examples=[["gpu-[001:032].dc1.example.com"]],
    )
    hcas: StrictInt | None = Field(default=None, ge=0, description="Expected RDMA adapters per host (defaults to the fabric's rails).")


class NodePool(SpecModel):
    """A group of identical nodes with one purpose."""

    name: Name = Field(description="Pool name.", examples=["train-h100"])
    site: Name = Field(description="Site (of each environment) the pool lives in.")
    purpose: Purpose = Field(description="What runs here; drives kubelet tuning, priority and placement.")
    accelerator: AcceleratorSpec | None = Field(
        default=None, description='GPU model and count per node, e.g. "H100-SXM5-80GB:8"; omit for CPU pools.'
    )
    sharing: Sharing = Field(default_factory=lambda: NoSharing(mode="none"), description="GPU sharing mode.")
    aws: AwsPool | None = Field(default=None, description="AWS details; required when the site is on AWS.")
    onprem: OnpremPool | None = Field(default=None, description="On-prem details; required when the site is on-prem.")
    scaling: Scaling = Field(description="Node count bounds.")
    labels: Labels = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list, description="Taints; GPU pools need one so only GPU pods land there.")
    fabric: Name | None = Field(default=None, description="RDMA fabric the pool joins.")


# --------------------------------------------------------------------------------------------
# storage


class _AwsFsx(SpecModel):
    implementation: Literal["fsx-lustre"] = Field(default="fsx-lustre", description="FSx for Lustre.")
    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = Field(
        default="PERSISTENT_2", description="FSx for Lustre deployment type."
    )
    per_unit_storage_throughput: StrictInt | None = Field(
        default=None, description="MB/s per TiB; derived from capacity and throughput when omitted."
    )
    storage_type: Literal["SSD", "HDD"] = Field(default="SSD", description="Storage media (HDD only with PERSISTENT_1).")
    storage_capacity: ByteSize | None = Field(
        default=None, description="Exact FSx capacity; derived from capacity and throughput when omitted.", examples=["50400GiB"]
    )


class _OnpremParallelFs(SpecModel):
    implementation: Literal["lustre", "beegfs", "weka"] = Field(description="Parallel file system.")
    server: str = Field(description="MGS NID (Lustre), management host (BeeGFS) or backend (Weka).", examples=["10.0.0.10@o2ib"])
    filesystem: str = Field(description="File system name on the server.", examples=["scratch"])
    mount_options: list[str] = Field(default_factory=list, description="Extra mount options.")


class ParallelFsTier(SpecModel):
    """A parallel file system for datasets and checkpoints."""

    class_: Literal["parallel-fs"] = Field(alias="class", description="Storage class.")
    name: Name = Field(description="Tier name.")
    purpose: Literal["datasets", "checkpoints", "models", "scratch", "logs"] = Field(description="What the tier holds.")
    site: Name | None = Field(default=None, description="Site holding the tier; omitted means every site of the environment.")
    capacity: ByteSize = Field(description="Usable capacity.", examples=["48TiB"])
    throughput: Rate | None = Field(default=None, description="Aggregate throughput needed.", examples=["12GBps"])
    retention: Duration | None = Field(default=None, description="How long data is kept.")
    source: Name | None = Field(default=None, description="Object tier linked as data repository (import/export).")
    mount_path: str = Field(description="Mount path on nodes.", examples=["/mnt/datasets"])
    aws: _AwsFsx | None = Field(default=None, description="AWS implementation (FSx for Lustre).")
    onprem: _OnpremParallelFs | None = Field(default=None, description="On-prem implementation.")


class _AwsEfs(SpecModel):
    implementation: Literal["efs"] = Field(default="efs", description="Amazon EFS.")
    throughput_mode: Literal["elastic", "bursting", "provisioned"] = Field(default="elastic", description="EFS throughput mode.")


class _OnpremNfs(SpecModel):
    implementation: Literal["nfs"] = Field(default="nfs", description="NFS server export.")
    server: str = Field(description="NFS server.")
    export: str = Field(description="Exported path.")
    version: Literal["3", "4.1", "4.2"] = Field(default="4.1", description="NFS protocol version.")


class SharedNfsTier(SpecModel):
    """A shared POSIX file system for home directories, code and small models."""

    class_: Literal["shared-nfs"] = Field(alias="class", description="Storage class.")
    name: Name = Field(description="Tier name.")
    purpose: Literal["datasets", "checkpoints", "models", "scratch", "logs"] = Field(description="What the tier holds.")
    site: Name | None = Field(default=None, description="Site holding the tier; omitted means every site.")
    capacity: ByteSize | None = Field(default=None, description="Expected capacity.")
    throughput: Rate | None = Field(default=None, description="Aggregate throughput needed.")
    retention: Duration | None = Field(default=None, description="How long data is kept.")
    mount_path: str = Field(description="Mount path on nodes.")
    aws: _AwsEfs | None = Field(default=None, description="AWS implementation (EFS).")
    onprem: _OnpremNfs | None = Field(default=None, description="On-prem implementation (NFS).")


class _AwsS3(SpecModel):
    implementation: Literal["s3"] = Field(default="s3", description="Amazon S3.")
    bucket: str | None = Field(default=None, description="Existing bucket to use; a new one is created when omitted.")
    versioning: StrictBool = Field(default=True, description="Object versioning.")


class _OnpremObject(SpecModel):
    implementation: Literal["minio", "ceph-rgw"] = Field(description="S3-compatible object store.")
    endpoint: str = Field(description="S3 endpoint URL.")
    bucket: str = Field(description="Bucket name.")


class ObjectTier(SpecModel):
    """An object store: data lake, model registry, log archive."""

    class_: Literal["object"] = Field(alias="class", description="Storage class.")
    name: Name = Field(description="Tier name.")
    purpose: Literal["datasets", "checkpoints", "models", "scratch", "logs"] = Field(description="What the tier holds.")
    site: Name | None = Field(default=None, description="Site holding the tier; omitted means every site.")
    capacity: ByteSize | None = Field(default=None, description="Expected size.")
    throughput: Rate | None = Field(default=None, description="Aggregate throughput needed.")
    retention: Duration | None = Field(default=None, description="Lifecycle expiry of objects.")
    aws: _AwsS3 | None = Field(default=None, description="AWS implementation (S3).")
    onprem: _OnpremObject | None = Field(default=None, description="On-prem implementation.")


class _AwsEbs(SpecModel):
    implementation: Literal["ebs"] = Field(default="ebs", description="Amazon EBS through the EBS CSI driver.")
    volume_type: Literal["gp3", "io2"] = Field(default="gp3", description="EBS volume type.")


class _OnpremBlock(SpecModel):
    implementation: Literal["ceph-rbd", "local-path"] = Field(description="Block storage provider.")


class BlockTier(SpecModel):
    """Network block storage for databases and stateful services."""

    class_: Literal["block"] = Field(alias="class", description="Storage class.")
    name: Name = Field(description="Tier name.")
    purpose: Literal["datasets", "checkpoints", "models", "scratch", "logs"] = Field(description="What the tier holds.")
    site: Name | None = Field(default=None, description="Site holding the tier; omitted means every site.")
    capacity: ByteSize | None = Field(default=None, description="Expected capacity.")
    retention: Duration | None = Field(default=None, description="How long data is kept.")
    aws: _AwsEbs | None = Field(default=None, description="AWS implementation (EBS).")
    onprem: _OnpremBlock | None = Field(default=None, description="On-prem implementation.")


class LocalNvmeTier(SpecModel):
    """Node-local NVMe assembled as one RAID0 scratch volume on each node of the named pools."""

    class_: Literal["local-nvme"] = Field(alias="class", description="Storage class.")
    name: Name = Field(description="Tier name.")
    purpose: Literal["datasets", "checkpoints", "models", "scratch", "logs"] = Field(description="What the tier holds.")
    pools: list[Name] = Field(min_length=1, description="Node pools whose local NVMe forms the tier.")
    mount_path: str = Field(description="Mount path on nodes.", examples=["/scratch"])
    filesystem: Literal["xfs", "ext4"] = Field(default="xfs", description="File system on the RAID0 array.")


StorageTier = Annotated[
    ParallelFsTier | SharedNfsTier | ObjectTier | BlockTier | LocalNvmeTier,
    Field(discriminator="class_"),
]


# --------------------------------------------------------------------------------------------
# networks


class OnpremFabric(SpecModel):
    technology: Literal["infiniband", "roce"] = Field(description="RDMA transport on-prem.")
    rate_gbps: StrictInt = Field(default=400, description="Link rate per rail in Gbit/s.", examples=[400])
    subnet_manager: Literal["external", "opensm"] = Field(
        default="external", description="InfiniBand subnet manager: run by the fabric (UFM, switch) or opensm on the nodes."
    )
    mtu: StrictInt = Field(default=4096, description="RDMA MTU (RoCE: 4096 with jumbo frames on the switches).")
    ipoib_cidr: Cidr | None = Field(default=None, description="IPoIB address range, split across rails.")


class Fabric(SpecModel):
    """A high-speed RDMA fabric joining GPU nodes: EFA on AWS, InfiniBand or RoCE on-prem."""

    name: Name = Field(description="Fabric name node pools refer to.")
    kind: Literal["rdma"] = Field(default="rdma", description="Fabric kind.")
    rails: StrictInt = Field(
        default=8,
        ge=1,
        le=32,
        description="On-prem: RDMA adapters (rails) per node, usually one per GPU. On AWS the instance type's EFA count applies.",
    )
    gpu_direct_rdma: StrictBool = Field(default=True, description="GPUDirect RDMA between GPUs and adapters.")
    onprem: OnpremFabric | None = Field(default=None, description="On-prem transport details.")


class Networks(SpecModel):
    """Cluster address defaults and RDMA fabrics."""

    pod_cidr: Cidr = Field(default=ipaddress.ip_network("100.64.0.0/16"), description="Default pod range of on-prem clusters.")
    service_cidr: Cidr = Field(default=ipaddress.ip_network("172.20.0.0/16"), description="Default Kubernetes service range.")
    fabrics: list[Fabric] = Field(default_factory=list, description="RDMA fabrics.")


# --------------------------------------------------------------------------------------------
# operators


class Operator(SpecModel):
    """An in-cluster operator installed from its pinned Helm chart."""

    enabled: StrictBool = Field(default=True, description="Install it.")
    values: dict[str, Any] = Field(default_factory=dict, description="Helm values merged over alicerce's own.")


class GpuOperator(Operator):
    kernel_module_type: Literal["auto", "open", "proprietary"] = Field(
        default="auto", description="NVIDIA kernel modules to use (driver.kernelModuleType)."
    )
    mig_strategy: Literal["single", "mixed"] = Field(default="mixed", description="How MIG devices are advertised.")
    dcgm_service_monitor: StrictBool = Field(default=True, description="Scrape DCGM exporter through a ServiceMonitor.")


class Operators(SpecModel):
    """Which operators run in every cluster, each switchable and tunable."""

    gpu_operator: GpuOperator = Field(default_factory=GpuOperator, description="NVIDIA GPU Operator.")
    network_operator: Operator = Field(default_factory=Operator, description="NVIDIA Network Operator (on-prem RDMA).")
    kueue: Operator = Field(default_factory=Operator, description="Kueue job queueing and quotas.")
    kuberay: Operator = Field(default_factory=Operator, description="KubeRay operator.")
    training_operator: Operator = Field(default_factory=Operator, description="Kubeflow training operator.")
    monitoring: Operator = Field(default_factory=Operator, description="kube-prometheus-stack.")


# --------------------------------------------------------------------------------------------
# monitoring


class Slo(SpecModel):
    """A service level objective that becomes recording and alerting rules."""

    name: Name = Field(description="SLO name.")
    kind: Literal["inference-latency", "queue-wait", "gpu-utilization", "availability"] = Field(description="What is measured.")
    workload: Name | None = Field(default=None, description="Workload the SLO applies to (inference-latency).")
    team: Name | None = Field(default=None, description="Team the SLO applies to (queue-wait).")
    percentile: float | None = Field(default=None, gt=0, lt=100, description="Percentile for latency SLOs.", examples=[99])
    threshold: Duration | float = Field(description="Latency or wait threshold (duration) or utilisation fraction.")
    objective: float = Field(gt=0, lt=100, description="Percent of time or requests that must meet the threshold.", examples=[99.5])


class AlertOverride(SpecModel):
    alert: str = Field(description="Alert name from alicerce's rule set.", examples=["GPUXidError"])
    enabled: StrictBool = Field(default=True, description="Keep or drop the alert.")
    severity: Literal["critical", "warning", "info"] | None = Field(default=None, description="Override severity.")
    for_: Duration | None = Field(default=None, alias="for", description="Override the pending duration.")


class Monitoring(SpecModel):
    retention: Duration = Field(default=30 * 86400, description="Prometheus retention.", examples=["30d"])
    slos: list[Slo] = Field(default_factory=list, description="Service level objectives.")
    alerts: list[AlertOverride] = Field(default_factory=list, description="Changes to alicerce's alert rules.")


# --------------------------------------------------------------------------------------------
# tenancy


class Quota(SpecModel):
    pool: Name = Field(description="Node pool the GPUs come from.")
    gpus: StrictInt = Field(ge=0, description="Guaranteed GPUs (Kueue nominal quota).")
    borrowing_limit: StrictInt | None = Field(default=None, ge=0, description="GPUs the team may borrow from its cohort above its quota.")


class Budget(SpecModel):
    monthly_usd: float = Field(gt=0, description="Monthly budget in USD.")
    alert_at_percent: list[StrictInt] = Field(default_factory=lambda: [80, 100], description="Budget alert thresholds.")


class Team(SpecModel):
    """A tenant: namespaces, identity groups, GPU quotas, priority and cost attribution."""

    name: Name = Field(description="Team name.")
    namespaces: list[Name] = Field(default_factory=list, description="Namespaces; defaults to one named after the team.")
    groups: list[str] = Field(min_length=1, description="Identity-provider groups bound to the team's namespaces.")
    quotas: list[Quota] = Field(default_factory=list, description="GPU quotas per pool.")
    priority: Literal["critical", "high", "normal", "low"] = Field(default="normal", description="Scheduling priority class.")
    cost_center: str | None = Field(default=None, description="Cost center (defaults to metadata.costCenter).")
    budget: Budget | None = Field(default=None, description="Monthly budget.")


class Tenancy(SpecModel):
    cohort: Name = Field(default="platform", description="Kueue cohort the teams lend and borrow in.")
    teams: list[Team] = Field(default_factory=list, description="Teams.")


# --------------------------------------------------------------------------------------------
# security and waivers


class Encryption(SpecModel):
    at_rest: StrictBool = Field(default=True, description="Encrypt volumes, file systems, buckets and Kubernetes secrets.")
    kms_key: str | None = Field(default=None, description="KMS key ARN or alias; a platform key is created when omitted.")


class EndpointAccess(SpecModel):
    private: StrictBool = Field(default=True, description="Private Kubernetes API endpoint.")
    public: StrictBool = Field(default=False, description="Also expose a public endpoint.")
    public_cidrs: list[Cidr] = Field(default_factory=list, description="Allow-list for the public endpoint.")


class Audit(SpecModel):
    enabled: StrictBool = Field(default=True, description="Kubernetes audit logging.")
    retention: Duration = Field(default=365 * 86400, description="How long audit logs are kept.")


class Security(SpecModel):
    encryption: Encryption = Field(default_factory=Encryption, description="Encryption at rest.")
    endpoint_access: EndpointAccess = Field(default_factory=EndpointAccess, description="Kubernetes API endpoint exposure.")
    pod_security: Literal["privileged", "baseline", "restricted"] = Field(
        default="restricted", description="Pod Security Standard enforced in team namespaces."
    )
    audit: Audit = Field(default_factory=Audit, description="Audit logging.")


class Waiver(SpecModel):
    """An accepted, time-boxed exception to one rule."""

    rule: str = Field(description="Rule id.", examples=["AL250"])
    environments: list[Name] = Field(default_factory=list, description="Environments it covers; all when empty.")
    resources: list[str] = Field(default_factory=list, description="Names (pools, tiers, ...) it covers; all when empty.")
    justification: str = Field(min_length=10, description="Why the exception is acceptable.")
    expires: datetime.date = Field(description="Date after which the waiver stops applying.")


# --------------------------------------------------------------------------------------------
# workloads


class Model(SpecModel):
    parameters: Count = Field(description="Total parameters, e.g. 70B.")
    architecture: Literal["dense", "moe"] = Field(default="dense", description="Dense or mixture-of-experts.")
    active_parameters: Count | None = Field(default=None, description="Parameters active per token (MoE).")
    layers: StrictInt | None = Field(default=None, ge=1, description="Transformer layers (for KV-cache and activation sizing).")
    hidden_size: StrictInt | None = Field(default=None, ge=1, description="Hidden dimension.")


class Dataset(SpecModel):
    size: ByteSize = Field(description="Dataset size.")
    bytes_per_token: float | None = Field(default=None, gt=0, description="Stored bytes per training token.")
    bytes_per_sample: ByteSize | None = Field(default=None, description="Stored bytes per sample (non-text).")
    tier: Name | None = Field(default=None, description="Storage tier it is read from.")


class Traffic(SpecModel):
    peak_rps: float | None = Field(default=None, gt=0, description="Peak requests per second.")
    concurrency: StrictInt | None = Field(default=None, ge=1, description="Peak concurrent requests.")
    input_tokens: StrictInt = Field(ge=1, description="Mean prompt tokens.")
    output_tokens: StrictInt = Field(ge=1, description="Mean generated tokens.")


class LatencyTarget(SpecModel):
    p95: Duration | None = Field(default=None, description="95th percentile.")
    p99: Duration | None = Field(default=None, description="99th percentile.")


class Latency(SpecModel):
    time_to_first_token: LatencyTarget | None = Field(default=None, description="Time to first token.")
    time_per_output_token: LatencyTarget | None = Field(default=None, description="Time per output token.")


class Workload(SpecModel):
    """A job or service the platform exists for; sizing reads these."""

    name: Name = Field(description="Workload name.")
    kind: WorkloadKind = Field(description="What it does.")
    team: Name = Field(description="Owning team.")
    pool: Name | None = Field(default=None, description="Node pool it runs on; chosen by sizing when omitted.")
    model: Model | None = Field(default=None, description="The model trained or served.")
    precision: Precision = Field(default="bf16", description="Numeric precision of weights and compute.")
    optimizer: Literal["adamw", "sgd", "adafactor"] = Field(default="adamw", description="Optimizer (training).")
    method: Literal["full", "lora", "qlora"] | None = Field(default=None, description="Fine-tuning method.")
    tokens: Count | None = Field(default=None, description="Training tokens, e.g. 2T.")
    sequence_length: StrictInt | None = Field(default=None, ge=1, description="Tokens per sequence.")
    global_batch_tokens: Count | None = Field(default=None, description="Tokens per optimizer step.")
    deadline: Duration | None = Field(default=None, description="Target wall-clock time, e.g. 30d.")
    accelerator: str | None = Field(default=None, description="Pinned accelerator (catalog id or alias).")
    gpus: StrictInt | None = Field(default=None, ge=1, description="Pinned GPU count.")
    mfu: float | None = Field(default=None, gt=0, le=1, description="Model FLOPs utilisation to assume.")
    checkpoint_interval: Duration | None = Field(default=None, description="Time between checkpoints.")
    dataset: Dataset | None = Field(default=None, description="Input data.")
    traffic: Traffic | None = Field(default=None, description="Inference traffic.")
    latency: Latency | None = Field(default=None, description="Inference latency SLOs.")
    hours_per_day: float = Field(default=24, gt=0, le=24, description="Hours a day the workload runs.")


# --------------------------------------------------------------------------------------------
# the platform


class PlatformSpec(SpecModel):
    """An ML platform: every environment, site, pool, tier, team and workload, in one file."""

    api_version: Literal["alicerce.dev/v1"] = Field(description="Spec language version.")
    kind: Literal["Platform"] = Field(description="Document kind.")
    metadata: Metadata = Field(description="Ownership and labels.")
    versions: Versions = Field(default_factory=Versions, description="Pinned versions (defaults: the tested bill of materials).")
    environments: dict[Name, Environment] = Field(min_length=1, description="Environments by name.")
    node_pools: list[NodePool] = Field(default_factory=list, description="Node pools.")
    storage: list[StorageTier] = Field(default_factory=list, description="Storage tiers.")
    networks: Networks = Field(default_factory=Networks, description="Address defaults and RDMA fabrics.")
    operators: Operators = Field(default_factory=Operators, description="In-cluster operators.")
    monitoring: Monitoring = Field(default_factory=Monitoring, description="Monitoring, SLOs and alerts.")
    tenancy: Tenancy = Field(default_factory=Tenancy, description="Teams and quotas.")
    security: Security = Field(default_factory=Security, description="Security posture.")
    waivers: list[Waiver] = Field(default_factory=list, description="Time-boxed exceptions to rules.")
    workloads: list[Workload] = Field(default_factory=list, description="The workloads the platform exists for.")
