"""The resolved platform: one environment of the spec with every derived fact decided once.

Rules, the planner and every emitter read these objects and decide nothing again: the GPU behind
an alias, the schedulable GPU units of a pool (whole GPUs, time-sliced replicas or MIG instances),
the RDMA attachment, hosts by rack, storage implementations and mounts, team quotas per extended
resource, typed versions, tags. Resolving is total: a fact that cannot be decided (an unknown GPU,
a malformed host range) is left empty and the rules report why, so a spec with mistakes still
resolves and every mistake is reported at once.
"""

from __future__ import annotations

from typing import Any, Literal, dataclass_transform

from alicerce.catalog import Catalog
from alicerce.catalog.fsx import FsxConfig
from alicerce.catalog.models import BillOfMaterials, Chart, ContainerImage, Gpu, InstanceType, NetworkOperatorComponents, TrainerRuntimes
from alicerce.spec.models import Fabric, NodePool, PlatformSpec, Site, StorageTier, Team
from alicerce.spec.record import record
from alicerce.spec.units import HUMAN
from alicerce.targets.base import Capabilities, PlatformEndpoint, RdmaTechnology
from alicerce.targets.resolver import NodeSoftwareOwners

KernelModules = Literal["open", "proprietary"]
# How GPUs and RDMA adapters share memory: DMA-BUF (open modules, kernel >= 5.12), the legacy nvidia-peermem
# module (only against MLNX/DOCA-OFED), or no GPUDirect RDMA at all
GpuDirect = Literal["none", "dmabuf", "peermem"]
MountKind = Literal["lustre", "beegfs", "weka", "nfs", "fsx-lustre", "efs"]  # MOUNT_KINDS' kinds, for the type checker


@record
class MountKindRecord:
    """One kind of shared file system mount as every stage sees it: a new kind is one record plus its own code."""

    kind: str  # what a target's mount facts name it
    fs_types: tuple[str, ...]  # the types /proc/mounts shows for it (a team-directory Job checks before it writes)
    host_mounted: bool = False  # the hosts' client role mounts it and pods reach it through hostPath


MOUNT_KINDS: tuple[MountKindRecord, ...] = (
    MountKindRecord("lustre", ("lustre",), host_mounted=True),
    MountKindRecord("beegfs", ("beegfs",), host_mounted=True),
    MountKindRecord("weka", ()),  # no client role mounts it yet
    MountKindRecord("nfs", ("nfs", "nfs4")),
    MountKindRecord("fsx-lustre", ("lustre",)),  # its CSI driver mounts it
    MountKindRecord("efs", ("nfs4",)),  # its CSI driver mounts it (NFS 4.1)
)


@dataclass_transform(frozen_default=True, kw_only_default=True)
class Resolved:
    """Base of the resolved objects: frozen dataclasses built by keyword.

    Resolving builds them from values that are already checked (the validated spec, the catalog),
    so they are records (dataclasses with shared methods, :mod:`alicerce.spec.record`) rather than
    pydantic models: nothing to validate again, and `alicerce validate` does not pay for building
    their validators, nor their generated methods, on every cold start.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        record(kw_only=True)(cls)


class GpuUnits(Resolved):
    """What one node of a GPU pool offers to pods: extended resources and how many of each.

    Whole GPUs are ``nvidia.com/gpu``; time-slicing advertises each GPU ``replicas`` times under the
    same name; MIG instances are ``nvidia.com/mig-<profile>`` with the mixed strategy, or
    ``nvidia.com/gpu`` with the single strategy. Quotas, ResourceQuotas, Kueue and sizing all count
    these units.
    """

    resources: dict[str, int]  # extended resource -> devices per node
    per_gpu: int  # units one physical GPU offers
    # extended resource -> the share of one physical GPU a unit of it is (what showback bills a pod holding one)
    gpu_share: dict[str, float]

    @property
    def per_node(self) -> int:
        return sum(self.resources.values())

    def split(self, units: int) -> dict[str, int]:
        """``units`` spread over the node's resources in the node's own proportions (largest remainder)."""
        total = self.per_node
        if len(self.resources) == 1 or total == 0:
            return dict.fromkeys(self.resources, units)
        exact = {name: units * count / total for name, count in self.resources.items()}
        out = {name: int(share) for name, share in exact.items()}
        left = units - sum(out.values())
        for name in sorted(exact, key=lambda n: (out[n] - exact[n], n))[:left]:
            out[name] += 1
        return out


class RdmaAttachment(Resolved):
    """How a pool's nodes reach their RDMA fabric and what pods request to use it."""

    fabric: Fabric
    technology: RdmaTechnology
    interfaces: int  # EFA interfaces (AWS) or RDMA adapters, one per rail (on-prem)
    resource: str  # the extended resource a pod requests: vpc.amazonaws.com/efa, rdma/ib, rdma/roce
    gpudirect: GpuDirect = "none"  # on-prem GPU pools: the GPUDirect RDMA path (resolve.gpu.gpudirect_path)
    rate_gbps: float | None = None  # link rate per interface where the target decides it (None: the instance's bandwidth)
    host_stack: str | None = None  # the RDMA software the hosts run (rdma-core, doca-ofed), where alicerce installs it
    rail_devices: tuple[str, ...] = ()  # the rails' RDMA device names where the spec names them (empty: every device)

    @property
    def port_counters(self) -> bool:
        """Whether the node exporter reports the fabric's traffic (node_infiniband_port_data_*_bytes_total). It reads
        the port's ``counters/`` directory (procfs v0.21.1 sysfs/class_infiniband.go, which node_exporter v1.12.1
        collector/infiniband_linux.go uses), which the kernel creates only for adapters that answer performance
        management MADs: InfiniBand and RoCE HCAs do; EFA has only ``hw_counters/`` (tx_bytes, rdma_read_bytes ...),
        whose names the collector does not map, so an EFA port reports its rate and state, never its traffic."""
        return self.technology in ("infiniband", "roce")

    @property
    def traffic_counters(self) -> bool:
        """Whether the fabric's traffic and errors per port reach Prometheus: the node exporter's port counters, or on
        EFA the efa driver's hw_counters, which the pool's launch template installs a writer for (alicerce.targets.aws
        files/alicerce_efa_stats.py, served by the node exporter's textfile collector)."""
        return self.port_counters or self.technology == "efa"


class ResolvedPool(Resolved):
    index: int  # position in the environment's merged nodePools, for error paths
    spec: NodePool
    site: Site
    gpu: Gpu | None
    instance: InstanceType | None  # the cloud machine type; None on-prem
    owned: bool  # its target's capacity is owned (TCO from costs.owned), not rented by the hour (priced from the catalog)
    gpus_per_node: int
    gpu_units: GpuUnits | None  # None for CPU pools
    kernel_modules: KernelModules | None  # NVIDIA kernel modules the pool's GPUs need
    rdma: RdmaAttachment | None
    placement_group: bool  # nodes packed close together (a cluster placement group on AWS)
    zone: str | None  # one zone, where the pool is pinned to one
    racks: dict[str, tuple[str, ...]]  # rack id -> hosts; "" holds hosts without a rack; empty off-prem
    labels: dict[str, str]
    capacity_type: str = "on-demand"  # how its target buys the capacity (on-demand, spot, a reservation): plan prices it

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(host for hosts in self.racks.values() for host in hosts)

    @property
    def max_gpus(self) -> int:
        """Physical GPUs at max size."""
        return self.gpus_per_node * self.spec.scaling.max

    @property
    def max_gpu_units(self) -> int:
        """Schedulable GPU units at max size: what quotas on the pool add up to at most."""
        return self.gpu_units.per_node * self.spec.scaling.max if self.gpu_units else 0

    @property
    def efa_interfaces(self) -> int:
        return self.rdma.interfaces if self.rdma is not None and self.rdma.technology == "efa" else 0


class Mount(Resolved):
    """A file system as nodes and pods mount it at one site (options decided once for both)."""

    kind: MountKind
    source: str  # what mount(8) takes: 10.0.0.10@o2ib:/ai, nfs.example:/export; "" where a CSI driver mounts it
    path: str
    options: tuple[str, ...]  # mount options common to the host's fstab and a PersistentVolume

    def __post_init__(self) -> None:
        if self.kind not in {k.kind for k in MOUNT_KINDS}:  # the targets' mount facts carry a plain str
            raise ValueError(f"unknown mount kind {self.kind!r}")


class ResolvedTier(Resolved):
    index: int
    spec: StorageTier
    sites: tuple[str, ...]
    implementations: dict[str, str]  # site name -> implementation
    mounts: dict[str, Mount]  # site name -> how nodes and pods mount it (shared file systems only)
    fsx: FsxConfig | None

    @property
    def name(self) -> str:
        return self.spec.name


class ResolvedQuota(Resolved):
    """A team's GPU quota on one pool, in the pool's schedulable units and per extended resource."""

    index: int  # position in the team's quotas
    pool: str
    units: int
    borrowing_limit: int | None
    resources: dict[str, int]  # nominal quota per extended resource
    borrowing: dict[str, int] | None  # borrowing limit per extended resource (None: unlimited within the cohort)


class ResolvedTeam(Resolved):
    index: int
    spec: Team
    namespaces: tuple[str, ...]
    cost_center: str
    quotas: tuple[ResolvedQuota, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def service_account(self) -> str:
        """The service account of the team's workloads in each of its namespaces: the one its workload
        identity (an IAM role through EKS Pod Identity on AWS) is bound to. The Kubernetes layer creates it."""
        return f"team-{self.name}"


class ResolvedSite(Resolved):
    index: int  # position in the environment's sites
    spec: Site  # with address ranges filled from networks' defaults
    capabilities: Capabilities
    software: NodeSoftwareOwners  # who owns the driver and the node exporter here (one owner each)
    endpoints: tuple[PlatformEndpoint, ...]  # what team pods must reach outside the pod network (NetworkPolicy egress)
    pools: tuple[ResolvedPool, ...]
    storage: tuple[ResolvedTier, ...]  # tiers that exist here
    teams: tuple[ResolvedTeam, ...]  # teams with a quota here, or with no quota anywhere

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def provider(self) -> str:
        return self.spec.provider

    def quotas(self, team: ResolvedTeam) -> tuple[tuple[ResolvedQuota, ResolvedPool], ...]:
        """A team's quotas on this site's pools, each with its pool."""
        pools = {p.name: p for p in self.pools}
        return tuple((q, pools[q.pool]) for q in team.quotas if q.pool in pools)


class ResolvedPlatform(Resolved):
    """Everything about one environment of the platform, decided."""

    name: str
    environment: str
    tier: str
    spec: PlatformSpec
    versions: BillOfMaterials  # every component version: the spec's pins over the catalog's bill of materials
    eks_addons: dict[str, str]  # EKS managed add-on -> pinned version; absent: AWS's default at deploy time
    network_components: NetworkOperatorComponents | None  # images of the pinned Network Operator's NicClusterPolicy
    trainer_runtimes: TrainerRuntimes | None  # images of the training runtimes for the pinned Kubeflow Trainer
    images: dict[str, ContainerImage]  # other images alicerce's own objects run, by role
    charts: dict[str, Chart]
    tags: dict[str, str]  # on every resource: platform, environment, cost center, metadata labels
    sites: tuple[ResolvedSite, ...]
    pools: tuple[ResolvedPool, ...]  # every pool of every site, in spec order
    storage: tuple[ResolvedTier, ...]
    teams: tuple[ResolvedTeam, ...]
    catalog: Catalog  # the built-in catalog plus the spec's own `catalog:` entries

    def site(self, name: str) -> ResolvedSite:
        return next(s for s in self.sites if s.name == name)

    def pool(self, name: str) -> ResolvedPool:
        return next(p for p in self.pools if p.name == name)

    def to_data(self, human: bool = False) -> dict[str, Any]:
        """A plain, deterministic view for `alicerce show` and `.alicerce/resolved.json`.

        Sizes, rates, counts and durations are base units (bytes, bytes/s, seconds); ``human``
        writes them as the shorthands of the spec (``200GiB``, ``12GBps``, ``30d``) instead.
        """
        context = HUMAN if human else None
        spec = self.spec.model_dump(mode="json", by_alias=True, exclude={"environments"}, context=context)
        sites = [site.spec.model_dump(mode="json", by_alias=True, context=context) for site in self.sites]
        for pool in self.pools:
            spec["nodePools"][pool.index]["resolved"] = {
                "gpu": pool.gpu.id if pool.gpu else None,
                "gpusPerNode": pool.gpus_per_node,
                "maxGpus": pool.max_gpus,
                "gpuUnits": pool.gpu_units.resources if pool.gpu_units else {},
                "maxGpuUnits": pool.max_gpu_units,
                "efaInterfaces": pool.efa_interfaces,
                "placementGroup": pool.placement_group,
                "zone": pool.zone,
                "hosts": list(pool.hosts),
                "labels": pool.labels,
                "userCatalog": [
                    n
                    for n in (pool.gpu.id if pool.gpu else None, pool.instance.type if pool.instance else None)
                    if n is not None and self.catalog.user_provided(n)
                ],
            }
        for tier in self.storage:
            spec["storage"][tier.index]["resolved"] = {
                "sites": list(tier.sites),
                "implementations": tier.implementations,
                "fsx": None
                if tier.fsx is None
                else {
                    "deploymentType": tier.fsx.deployment_type,
                    "storageType": tier.fsx.storage_type,
                    "storageCapacityGiB": tier.fsx.capacity_gib,
                    "perUnitStorageThroughput": tier.fsx.per_unit_throughput,
                    "throughputMBps": round(tier.fsx.throughput_mbps, 1),
                    "usdPerMonth": tier.fsx.usd_per_month,
                },
            }
        for team in self.teams:
            data = spec["tenancy"]["teams"][team.index]
            data["namespaces"] = list(team.namespaces)
            data["costCenter"] = team.cost_center
        spec["versions"] = {**self.versions.model_dump(mode="json"), "eksAddons": self.eks_addons}
        return {
            "platform": self.name,
            "environment": self.environment,
            "tier": self.tier,
            "tags": self.tags,
            "sites": sites,
            **{k: v for k, v in spec.items() if k not in ("apiVersion", "kind")},
            "charts": {k: c.model_dump(mode="json", exclude={"source"}) for k, c in sorted(self.charts.items())},
        }
