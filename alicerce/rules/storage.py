"""Storage tiers: each exists on its target, FSx settings are ones AWS accepts, mounts are sane."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.catalog.fsx import GIB, is_valid_capacity, next_capacity, options, plan_fsx
from alicerce.catalog.models import FsxOption
from alicerce.rules.base import Finding, RuleContext, RuleSet
from alicerce.spec.models import (
    AwsSite,
    BlockTier,
    LocalNvmeTier,
    ObjectTier,
    OnpremSite,
    ParallelFsTier,
    SharedNfsTier,
)

rules = RuleSet()


@rules.rule("AL230", "storage-target", "Every tier has an implementation at each site it exists on.")
def storage_target(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if isinstance(tier, LocalNvmeTier):
            continue
        for site in ctx.tier_sites(tier):
            if isinstance(site, OnpremSite) and tier.onprem is None:
                kinds = {
                    ParallelFsTier: "lustre, beegfs or weka",
                    SharedNfsTier: "nfs",
                    ObjectTier: "minio or ceph-rgw",
                    BlockTier: "ceph-rbd or local-path",
                }[type(tier)]
                yield Finding(
                    ("storage", i),
                    f'tier "{tier.name}" ({tier.class_}) has no on-prem implementation for site {site.name}',
                    f"add onprem: {{implementation: ...}} ({kinds}), or set site: to an AWS site",
                    resource=tier.name,
                )
            fsx = tier.aws if isinstance(site, AwsSite) and isinstance(tier, ParallelFsTier) else None
            if fsx is not None and not options(ctx.catalog.fsx, fsx.deployment_type, fsx.storage_type):
                yield Finding(
                    ("storage", i, "aws", "storageType"),
                    f"FSx {fsx.deployment_type} has no {fsx.storage_type} storage",
                    "HDD exists only with PERSISTENT_1",
                    fsx.storage_type,
                )


@rules.rule("AL231", "fsx-per-unit-throughput", "An FSx per-unit throughput is one its deployment type accepts.")
def fsx_per_unit(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, ParallelFsTier) or tier.aws is None or tier.aws.per_unit_storage_throughput is None:
            continue
        aws = tier.aws
        allowed = [o.perUnit for o in options(ctx.catalog.fsx, aws.deployment_type, aws.storage_type) if o.perUnit]
        path = ("storage", i, "aws", "perUnitStorageThroughput")
        if not allowed:
            yield Finding(
                path,
                f"{aws.deployment_type} takes no perUnitStorageThroughput",
                "scratch file systems have a fixed throughput; remove the setting",
                aws.per_unit_storage_throughput,
                key=True,
            )
        elif aws.per_unit_storage_throughput not in allowed:
            yield Finding(
                path,
                f"{aws.deployment_type} {aws.storage_type} accepts {', '.join(map(str, allowed))} MB/s/TiB, "
                f"not {aws.per_unit_storage_throughput}",
                None,
                aws.per_unit_storage_throughput,
            )


def _steps_text(option: FsxOption) -> str:
    fixed = ", ".join(f"{g:,}" for g in option.fixedGiB)
    return f"{fixed + ' GiB or ' if fixed else ''}multiples of {option.multipleOfGiB:,} GiB"


@rules.rule("AL232", "fsx-capacity-steps", "A pinned FSx capacity is a size AWS accepts for the deployment type.")
def fsx_capacity(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, ParallelFsTier) or tier.aws is None or tier.aws.storage_capacity is None:
            continue
        aws = tier.aws
        path = ("storage", i, "aws", "storageCapacity")
        capacity = aws.storage_capacity
        assert capacity is not None
        gib = capacity / GIB
        fitting = options(ctx.catalog.fsx, aws.deployment_type, aws.storage_type, aws.per_unit_storage_throughput)
        if not fitting:
            continue  # AL230/AL231 report the combination itself
        if gib != int(gib) or not any(is_valid_capacity(o, int(gib)) for o in fitting):
            floor = max(gib, tier.capacity / GIB)
            near = sorted({next_capacity(o, floor) for o in fitting})
            steps = "; ".join(sorted({_steps_text(o) for o in fitting}))
            yield Finding(
                path,
                f"FSx {aws.deployment_type} {aws.storage_type} takes {steps}, not {gib:g} GiB",
                "try " + " or ".join(f"{g}GiB" for g in near),
                f"{gib:g}GiB",
            )
        elif gib < tier.capacity / GIB:
            yield Finding(
                path,
                f"storageCapacity {gib:g} GiB is smaller than the tier's capacity {tier.capacity / GIB:g} GiB",
                "raise storageCapacity or lower capacity",
                f"{gib:g}GiB",
            )


@rules.rule("AL233", "parallel-fs-throughput", "A parallel-fs tier's pinned FSx settings deliver its declared throughput.")
def parallel_fs_throughput(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, ParallelFsTier) or tier.aws is None or tier.throughput is None:
            continue
        if not any(isinstance(s, AwsSite) for s in ctx.tier_sites(tier)):
            continue
        aws = tier.aws
        if aws.per_unit_storage_throughput is None and aws.storage_capacity is None:
            continue  # derived: resolve picks capacity and per-unit throughput that meet it
        capacity_gib = int(aws.storage_capacity / GIB) if aws.storage_capacity else None
        plan = plan_fsx(
            ctx.catalog.fsx,
            aws.deployment_type,
            aws.storage_type,
            tier.capacity,
            tier.throughput,
            per_unit=aws.per_unit_storage_throughput,
            capacity_gib=capacity_gib,
        )
        if plan is not None and plan.throughput_mbps * 1e6 < tier.throughput:
            need = tier.throughput / 1e9
            yield Finding(
                ("storage", i, "throughput"),
                f"{plan.capacity_gib:,} GiB at {plan.per_unit_throughput or 'baseline'} MB/s/TiB gives "
                f"{plan.throughput_mbps / 1000:.2f} GB/s, below the {need:g} GB/s declared",
                "remove the pinned storageCapacity/perUnitStorageThroughput to let alicerce size it, or raise them",
                tier.throughput,
            )


@rules.rule("AL234", "local-nvme-pools", "Pools in a local-nvme tier have instance-store NVMe.")
def local_nvme(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, LocalNvmeTier):
            continue
        for j, name in enumerate(tier.pools):
            pool = ctx.pools.get(name)
            if pool is None or pool.aws is None or not isinstance(ctx.pool_site(pool), AwsSite):
                continue
            instance = ctx.catalog.instance(pool.aws.instance_type)
            if instance is not None and instance.localNvme is None:
                yield Finding(
                    ("storage", i, "pools", j),
                    f"{instance.type} (pool {name}) has no instance-store NVMe",
                    "choose an instance type with local NVMe or drop the pool from this tier",
                    name,
                )


@rules.rule("AL235", "mount-paths", "Mount paths are absolute and unique across tiers.")
def mount_paths(ctx: RuleContext) -> Iterable[Finding]:
    seen: dict[str, str] = {}
    for i, tier in enumerate(ctx.spec.storage):
        path = getattr(tier, "mount_path", None)
        if path is None:
            continue
        where = ("storage", i, "mountPath")
        if not path.startswith("/") or "//" in path or path.rstrip("/") in ("", "/"):
            yield Finding(where, f'"{path}" is not an absolute mount path', "write it like /mnt/datasets", path)
        elif path.rstrip("/") in seen:
            yield Finding(where, f'{path} is already the mount path of tier "{seen[path.rstrip("/")]}"', None, path)
        else:
            seen[path.rstrip("/")] = tier.name
