"""Resolve one environment of a schema-valid spec into a :class:`ResolvedPlatform`.

Generic facts are decided here (GPU model, schedulable units, kernel modules, labels, teams and
their quotas per resource, versions, charts, tags); target-specific ones by the site's target
(:data:`alicerce.resolve.targets.RESOLVERS`). Total: nothing here raises on a spec with cross-field
mistakes; the rules, which run over this result, report them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from alicerce.catalog import Catalog, load_catalog
from alicerce.catalog.fsx import FsxConfig
from alicerce.resolve.gpu import gpu_config_labels, gpu_units, gpudirect_path, kernel_modules
from alicerce.resolve.model import (
    Mount,
    MountKind,
    RdmaAttachment,
    ResolvedPlatform,
    ResolvedPool,
    ResolvedQuota,
    ResolvedSite,
    ResolvedTeam,
    ResolvedTier,
)
from alicerce.resolve.operators import OPERATOR_CHART_VERSION_KEYS
from alicerce.resolve.targets import RESOLVERS
from alicerce.resolve.versions import effective_eks_addons, effective_versions
from alicerce.spec.models import LocalNvmeTier, NodePool, ParallelFsTier, PlatformSpec, SharedNfsTier, Site, StorageTier, Team

# catalog chart name -> the bill-of-materials field that pins it: every operator's (its record), and the targets' charts
CHART_VERSION_KEYS = {
    **OPERATOR_CHART_VERSION_KEYS,
    "aws-efa-k8s-device-plugin": "efaDevicePlugin",
    "aws-fsx-csi-driver": "fsxCsiDriver",
    "cluster-autoscaler": "clusterAutoscaler",
    "aws-load-balancer-controller": "awsLoadBalancerController",
    "prometheus-yet-another-cloudwatch-exporter": "cloudwatchExporter",
}
# the extended resource pods request for each RDMA technology
EFA_RESOURCE = "vpc.amazonaws.com/efa"
RDMA_RESOURCES = {"efa": EFA_RESOURCE, "infiniband": "rdma/ib", "roce": "rdma/roce"}


def _pool(spec: PlatformSpec, index: int, pool: NodePool, site: Site, *, catalog: Catalog, tags: dict[str, str]) -> ResolvedPool:
    fabric = next((f for f in spec.networks.fabrics if f.name == pool.fabric), None) if pool.fabric else None
    placement = RESOLVERS[site.provider].pool(pool, site, fabric, catalog)
    gpu = catalog.gpu(pool.accelerator.model) if pool.accelerator else None
    modules = kernel_modules(gpu, spec.operators.gpu_operator.kernel_module_type)
    rdma = None
    if fabric is not None and placement.rdma_technology is not None:
        tech = placement.rdma_technology
        rdma = RdmaAttachment(
            fabric=fabric,
            technology=tech,
            interfaces=placement.rdma_interfaces,
            resource=RDMA_RESOURCES[tech],
            gpudirect=gpudirect_path(gpu, modules, fabric, placement.rdma_host_stack),
            rate_gbps=placement.rdma_rate_gbps,
            host_stack=placement.rdma_host_stack,
            rail_devices=placement.rdma_rail_devices,
        )
    labels = {**tags, **pool.labels, **gpu_config_labels(pool), "alicerce.dev/pool": pool.name, "alicerce.dev/purpose": pool.purpose}
    if gpu is not None:
        labels["alicerce.dev/accelerator"] = gpu.id
    return ResolvedPool(
        index=index,
        spec=pool,
        site=site,
        gpu=gpu,
        instance=placement.instance,
        owned=RESOLVERS[site.provider].capabilities.owned,
        gpus_per_node=pool.accelerator.count if pool.accelerator else 0,
        gpu_units=gpu_units(pool, spec.operators.gpu_operator.mig_strategy),
        kernel_modules=modules,
        rdma=rdma,
        placement_group=placement.placement_group,
        zone=placement.zone,
        racks=placement.racks,
        labels=dict(sorted(labels.items())),
        capacity_type=placement.capacity_type,
    )


def file_system(
    tier: StorageTier,
    implementations: Mapping[str, str],
    providers: Mapping[str, str],
    catalog: Catalog,
    throughput_bps: float | None,
    *,
    pinned: bool,
) -> FsxConfig | None:
    """The managed file system of a tier, sized by the target of the first of its sites that builds one.

    Resolve sizes it once for the declared throughput (capacity as pinned); plan asks the same target again for
    the workloads' need: one decision, its target's (``TargetResolver.file_system``).
    """
    for site, implementation in implementations.items():
        sized = RESOLVERS[providers[site]].file_system(tier, implementation, catalog, throughput_bps, pinned)
        if sized is not None:
            return sized
    return None


def _tier(index: int, tier: StorageTier, sites: dict[str, Site], catalog: Catalog) -> ResolvedTier:
    at = [name for name in tier_site_names(tier, list(sites)) if name in sites]
    implementations: dict[str, str] = {}
    mounts: dict[str, Mount] = {}
    for name in at:
        target = RESOLVERS[sites[name].provider]
        implementation = target.implementation(tier)
        if implementation is None:
            continue
        implementations[name] = implementation
        mount = target.mount(tier, implementation)
        if mount is not None and isinstance(tier, ParallelFsTier | SharedNfsTier):
            mounts[name] = Mount(kind=cast(MountKind, mount.kind), source=mount.source, path=tier.mount_path, options=mount.options)
    providers = {name: sites[name].provider for name in implementations}
    fsx = file_system(tier, implementations, providers, catalog, getattr(tier, "throughput", None), pinned=True)
    return ResolvedTier(index=index, spec=tier, sites=tuple(at), implementations=implementations, mounts=mounts, fsx=fsx)


def tier_site_names(tier: StorageTier, env_sites: list[str]) -> list[str]:
    """The sites a tier is meant to be at: its site or sites, else every site of the environment (rule AL237
    asks for an explicit choice where there are several). Local NVMe lives wherever its pools are."""
    if isinstance(tier, LocalNvmeTier):
        return env_sites
    if tier.site is not None:
        return [tier.site]
    return list(tier.sites) if tier.sites is not None else env_sites


def _team(index: int, team: Team, spec: PlatformSpec, pools: dict[str, ResolvedPool]) -> ResolvedTeam:
    quotas = []
    for j, quota in enumerate(team.quotas):
        pool = pools.get(quota.pool)
        units = pool.gpu_units if pool is not None else None
        borrowing = quota.borrowing_limit
        quotas.append(
            ResolvedQuota(
                index=j,
                pool=quota.pool,
                units=quota.gpus,
                borrowing_limit=borrowing,
                resources=units.split(quota.gpus) if units else {},
                borrowing=units.split(borrowing) if units and borrowing is not None else None,
            )
        )
    return ResolvedTeam(
        index=index,
        spec=team,
        namespaces=tuple(team.namespaces or [team.name]),
        cost_center=team.cost_center or spec.metadata.cost_center,
        quotas=tuple(quotas),
    )


def resolve_spec(spec: PlatformSpec, env: str, catalog: Catalog | None = None) -> ResolvedPlatform:
    """Every fact of environment ``env`` of a schema-valid, merged spec (the spec's own catalog entries included)."""
    catalog = (catalog or load_catalog()).with_user(spec.catalog.gpus, spec.catalog.instance_types)
    environment = spec.environments[env]
    sites = {site.name: RESOLVERS[site.provider].site(site, spec.networks) for site in environment.sites}
    tags = {
        **spec.metadata.labels,
        "alicerce.dev/platform": spec.metadata.name,
        "alicerce.dev/environment": env,
        "alicerce.dev/cost-center": spec.metadata.cost_center,
    }
    versions = effective_versions(spec.versions, catalog.versions.bom)
    charts = {
        name: chart.model_copy(update={"version": getattr(versions, CHART_VERSION_KEYS[name], chart.version)})
        if name in CHART_VERSION_KEYS
        else chart
        for name, chart in catalog.versions.charts.items()
    }
    pools = tuple(_pool(spec, i, p, sites[p.site], catalog=catalog, tags=tags) for i, p in enumerate(spec.node_pools) if p.site in sites)
    storage = tuple(_tier(i, t, sites, catalog) for i, t in enumerate(spec.storage))
    by_name = {p.name: p for p in pools}
    teams = tuple(_team(i, t, spec, by_name) for i, t in enumerate(spec.tenancy.teams))
    resolved_sites = []
    for index, site in enumerate(sites.values()):
        here = tuple(p for p in pools if p.site.name == site.name)
        names = {p.name for p in here}
        resolved_sites.append(
            ResolvedSite(
                index=index,
                spec=site,
                capabilities=RESOLVERS[site.provider].capabilities_of(site, spec, env),
                software=RESOLVERS[site.provider].software(site),
                endpoints=RESOLVERS[site.provider].endpoints(site),
                pools=here,
                storage=tuple(t for t in storage if site.name in t.sites),
                # CPU-only teams (no quota anywhere) live at every site
                teams=tuple(t for t in teams if any(q.pool in names for q in t.quotas) or not t.quotas),
            )
        )
    return ResolvedPlatform(
        name=spec.metadata.name,
        environment=env,
        tier=environment.tier,
        spec=spec,
        versions=versions,
        eks_addons=effective_eks_addons(spec.versions, catalog.versions.eksAddons, versions.kubernetes),
        network_components=next((r.components for r in catalog.versions.networkOperator if r.version == versions.networkOperator), None),
        trainer_runtimes=next((r for r in catalog.versions.trainerRuntimes if r.trainer == versions.trainingOperator), None),
        images=dict(catalog.versions.images),
        charts=charts,
        tags=dict(sorted(tags.items())),
        sites=tuple(resolved_sites),
        pools=pools,
        storage=storage,
        teams=teams,
        catalog=catalog,
    )
