"""Resolve one environment: the merged spec plus every fact the emitters need, decided once.

Emitters read :class:`ResolvedPlatform` only. They never read raw YAML and never re-derive a
fact decided here (the GPU model behind an alias, the EFA interface count of an instance type,
the FSx capacity step, the hosts behind a range, the tags on every resource).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from alicerce.catalog import Catalog, load_catalog
from alicerce.catalog.fsx import GIB, FsxPlan, plan_fsx
from alicerce.catalog.models import Chart, Gpu, InstanceType, NetworkOperatorComponents
from alicerce.resolve.versions import effective_eks_addons, effective_versions
from alicerce.rules.validate import check
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import Document
from alicerce.spec.models import (
    AwsSite,
    LocalNvmeTier,
    NodePool,
    OnpremSite,
    ParallelFsTier,
    PlatformSpec,
    StorageTier,
    Team,
)
from alicerce.spec.units import expand_hosts

RESERVED = ("capacity-reservation", "capacity-block")

# catalog chart name -> versions key that pins it
CHART_VERSION_KEYS = {
    "gpu-operator": "gpuOperator",
    "network-operator": "networkOperator",
    "kueue": "kueue",
    "kuberay-operator": "kuberay",
    "training-operator": "trainingOperator",
    "kube-prometheus-stack": "kubePrometheusStack",
    "aws-efa-k8s-device-plugin": "efaDevicePlugin",
    "aws-fsx-csi-driver": "fsxCsiDriver",
}


class Resolved(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)


class ResolvedPool(Resolved):
    spec: NodePool
    site: AwsSite | OnpremSite
    gpu: Gpu | None
    instance: InstanceType | None
    gpus_per_node: int
    efa_interfaces: int  # 0 when the pool joins no fabric or is not on AWS
    placement_group: bool
    zone: str | None
    hosts: tuple[str, ...]
    labels: dict[str, str]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def max_gpus(self) -> int:
        return self.gpus_per_node * self.spec.scaling.max


class ResolvedTier(Resolved):
    spec: StorageTier
    sites: tuple[str, ...]
    implementations: dict[str, str]  # site name -> implementation
    fsx: FsxPlan | None

    @property
    def name(self) -> str:
        return self.spec.name


class ResolvedTeam(Resolved):
    spec: Team
    namespaces: tuple[str, ...]
    cost_center: str

    @property
    def name(self) -> str:
        return self.spec.name


class ResolvedPlatform(Resolved):
    """Everything about one environment of the platform, decided."""

    name: str
    environment: str
    tier: str
    spec: PlatformSpec
    versions: dict[str, str]
    eks_addons: dict[str, str]  # EKS managed add-on -> pinned version; absent: AWS's default at deploy time
    network_components: NetworkOperatorComponents | None  # images of the pinned Network Operator's NicClusterPolicy
    charts: dict[str, Chart]
    tags: dict[str, str]  # on every resource: platform, environment, cost center, metadata labels
    sites: tuple[AwsSite | OnpremSite, ...]
    pools: tuple[ResolvedPool, ...]
    storage: tuple[ResolvedTier, ...]
    teams: tuple[ResolvedTeam, ...]

    def pool(self, name: str) -> ResolvedPool:
        return next(p for p in self.pools if p.name == name)

    def to_data(self) -> dict[str, Any]:
        """A plain, deterministic view for `alicerce show` and `.alicerce/resolved.json`."""
        spec = self.spec.model_dump(mode="json", by_alias=True, exclude={"environments"})
        sites = [site.model_dump(mode="json", by_alias=True) for site in self.sites]
        for pool, data in zip(self.pools, spec["nodePools"], strict=True):
            data["resolved"] = {
                "gpu": pool.gpu.id if pool.gpu else None,
                "gpusPerNode": pool.gpus_per_node,
                "maxGpus": pool.max_gpus,
                "efaInterfaces": pool.efa_interfaces,
                "placementGroup": pool.placement_group,
                "zone": pool.zone,
                "hosts": list(pool.hosts),
                "labels": pool.labels,
            }
        for tier, data in zip(self.storage, spec["storage"], strict=True):
            data["resolved"] = {
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
        for team, data in zip(self.teams, spec["tenancy"]["teams"], strict=True):
            data["namespaces"] = list(team.namespaces)
            data["costCenter"] = team.cost_center
        spec["versions"] = {**self.versions, "eksAddons": self.eks_addons}
        return {
            "platform": self.name,
            "environment": self.environment,
            "tier": self.tier,
            "tags": self.tags,
            "sites": sites,
            **{k: v for k, v in spec.items() if k not in ("apiVersion", "kind")},
            "charts": {k: c.model_dump(mode="json", exclude={"source"}) for k, c in sorted(self.charts.items())},
        }


def _pool(spec: PlatformSpec, pool: NodePool, site: AwsSite | OnpremSite, catalog: Catalog, tags: dict[str, str]) -> ResolvedPool:
    gpu = catalog.gpu(pool.accelerator.model) if pool.accelerator else None
    instance = catalog.instance(pool.aws.instance_type) if pool.aws and isinstance(site, AwsSite) else None
    efa = instance.efa.maxInterfaces if instance and instance.efa and pool.fabric else 0
    placement = False
    zone = None
    if isinstance(site, AwsSite) and pool.aws is not None:
        reserved = pool.aws.capacity_type in RESERVED
        placement = pool.aws.placement_group if pool.aws.placement_group is not None else bool(efa) and not reserved
        zone = pool.aws.zone or (site.zones[0] if efa else None)
    hosts: list[str] = []
    if pool.onprem is not None and isinstance(site, OnpremSite):
        for entry in pool.onprem.hosts:
            hosts.extend(expand_hosts(entry.hosts))
    labels = {
        **tags,
        **pool.labels,
        "alicerce.dev/pool": pool.name,
        "alicerce.dev/purpose": pool.purpose,
    }
    if gpu is not None:
        labels["alicerce.dev/accelerator"] = gpu.id
    return ResolvedPool(
        spec=pool,
        site=site,
        gpu=gpu,
        instance=instance,
        gpus_per_node=pool.accelerator.count if pool.accelerator else 0,
        efa_interfaces=efa,
        placement_group=placement,
        zone=zone,
        hosts=tuple(hosts),
        labels=dict(sorted(labels.items())),
    )


_AWS_IMPL = {"parallel-fs": "fsx-lustre", "shared-nfs": "efs", "object": "s3", "block": "ebs", "local-nvme": "instance-store"}


def _tier(tier: StorageTier, sites: dict[str, AwsSite | OnpremSite], catalog: Catalog) -> ResolvedTier:
    site_name = getattr(tier, "site", None)
    at = [site_name] if site_name and not isinstance(tier, LocalNvmeTier) else list(sites)
    implementations: dict[str, str] = {}
    for name in at:
        site = sites[name]
        if isinstance(site, AwsSite):
            implementations[name] = _AWS_IMPL[tier.class_]
        elif isinstance(tier, LocalNvmeTier):
            implementations[name] = "mdadm-raid0"
        elif tier.onprem is not None:
            implementations[name] = tier.onprem.implementation
    fsx = None
    if isinstance(tier, ParallelFsTier) and any(isinstance(sites[n], AwsSite) for n in at):
        aws = tier.aws
        fsx = plan_fsx(
            catalog.fsx,
            aws.deployment_type if aws else "PERSISTENT_2",
            aws.storage_type if aws else "SSD",
            tier.capacity,
            tier.throughput,
            per_unit=aws.per_unit_storage_throughput if aws else None,
            capacity_gib=int(aws.storage_capacity / GIB) if aws and aws.storage_capacity else None,
        )
    return ResolvedTier(spec=tier, sites=tuple(at), implementations=implementations, fsx=fsx)


def _site_defaults(site: AwsSite | OnpremSite, spec: PlatformSpec) -> AwsSite | OnpremSite:
    """The site with its address ranges filled from networks' defaults."""
    update: dict[str, Any] = {"service_cidr": site.service_cidr or spec.networks.service_cidr}
    if isinstance(site, OnpremSite):
        update["pod_cidr"] = site.pod_cidr or spec.networks.pod_cidr
    return site.model_copy(update=update)


def resolve_spec(spec: PlatformSpec, env: str, catalog: Catalog | None = None) -> ResolvedPlatform:
    """Resolve an already checked environment spec (see :func:`resolve`)."""
    catalog = catalog or load_catalog()
    environment = spec.environments[env]
    sites = {site.name: _site_defaults(site, spec) for site in environment.sites}
    tags = {
        **spec.metadata.labels,
        "alicerce.dev/platform": spec.metadata.name,
        "alicerce.dev/environment": env,
        "alicerce.dev/cost-center": spec.metadata.cost_center,
    }
    versions = effective_versions(spec.versions, catalog.versions.bom)
    charts = {
        name: chart.model_copy(update={"version": versions.get(CHART_VERSION_KEYS.get(name, ""), chart.version)})
        for name, chart in catalog.versions.charts.items()
    }
    pools = tuple(_pool(spec, p, sites[p.site], catalog, tags) for p in spec.node_pools)
    storage = tuple(_tier(t, sites, catalog) for t in spec.storage)
    teams = tuple(
        ResolvedTeam(spec=t, namespaces=tuple(t.namespaces or [t.name]), cost_center=t.cost_center or spec.metadata.cost_center)
        for t in spec.tenancy.teams
    )
    return ResolvedPlatform(
        name=spec.metadata.name,
        environment=env,
        tier=environment.tier,
        spec=spec,
        versions=versions,
        eks_addons=effective_eks_addons(spec.versions, catalog.versions.eksAddons, versions["kubernetes"]),
        network_components=next(
            (r.components for r in catalog.versions.networkOperator if r.version == versions.get("networkOperator")), None
        ),
        charts=charts,
        tags=dict(sorted(tags.items())),
        sites=tuple(sites.values()),
        pools=pools,
        storage=storage,
        teams=teams,
    )


def resolve(document: Document, env: str, catalog: Catalog | None = None) -> ResolvedPlatform:
    """Check ``env`` of a loaded document and resolve it; raises :class:`SpecInvalid` on errors."""
    catalog = catalog or load_catalog()
    checked = check(document, [env], catalog=catalog)
    if checked.errors:
        raise SpecInvalid(checked.errors)
    return resolve_spec(checked.environments[env].spec, env, catalog)
