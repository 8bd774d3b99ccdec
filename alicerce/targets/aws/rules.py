"""The AWS target's rules: instance types and their GPUs, EFA and zones, reserved capacity, FSx settings."""

from __future__ import annotations

import re
from collections.abc import Iterable

from alicerce.catalog.fsx import GIB, is_valid_capacity, next_capacity, options
from alicerce.catalog.models import FsxOption, InstanceType
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean
from alicerce.spec.models import AwsSite, LocalNvmeTier, ParallelFsTier
from alicerce.targets.aws.resolve import RESERVED

rules = RuleSet()


def pool_instance(ctx: RuleContext, index: int) -> InstanceType | None:
    """The resolved instance type of the pool at ``index`` (None off AWS or when unknown)."""
    pool = ctx.resolved_pools.get(index)
    return pool.instance if pool is not None else None


@rules.rule("AL208", "instance-type-known", "AWS pools use an instance type the catalog knows.")
def instance_known(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.aws is not None and ctx.catalog.instance(pool.aws.instance_type) is None:
            name = pool.aws.instance_type
            hint = (
                did_you_mean(name, ctx.catalog.instance_names())
                or "see `alicerce catalog instances`, or declare it under catalog.instanceTypes"
            )
            yield Finding(S.node_pools[i].aws.instance_type, f'unknown instance type "{name}"', hint, name)


@rules.rule("AL209", "accelerator-matches-instance", "A pool's accelerator model and count match its instance type.")
def accelerator_matches(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        instance = pool_instance(ctx, i)
        if instance is None:
            continue
        gpu = ctx.pool_gpu(i)
        path = S.node_pools[i].accelerator
        if instance.gpu is None:
            if pool.accelerator is not None:
                yield Finding(
                    path,
                    f"{instance.type} has no GPUs, but the pool declares {pool.accelerator.model}",
                    "remove the accelerator or choose a GPU instance type",
                    pool.accelerator.model,
                )
            continue
        expected = f"{instance.gpu}:{instance.gpus}"
        if pool.accelerator is None:
            yield Finding(
                S.node_pools[i],
                f"{instance.type} has {instance.gpus} x {instance.gpu}, but the pool declares no accelerator",
                f'add accelerator: "{expected}"',
                resource=pool.name,
            )
        elif gpu is not None and (gpu.id != instance.gpu or pool.accelerator.count != instance.gpus):
            declared = f"{gpu.id}:{pool.accelerator.count}"
            yield Finding(path, f"{instance.type} has {expected}, not {declared}", f'write "{expected}"', declared)


@rules.rule("AL211", "efa-capable", "A pool on an RDMA fabric at an AWS site uses an EFA-capable instance type.")
def efa_capable(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        instance = pool_instance(ctx, i)
        if pool.fabric is not None and instance is not None and instance.efa is None:
            capable = sorted(t.type for t in ctx.catalog.instances if t.efa is not None and t.gpu == instance.gpu)
            hint = (
                f"EFA-capable types with the same GPU: {', '.join(capable)}"
                if capable
                else "choose an EFA-capable instance type or drop the fabric"
            )
            yield Finding(S.node_pools[i].fabric, f"{instance.type} has no EFA, so it cannot join fabric {pool.fabric}", hint, pool.fabric)


@rules.rule("AL212", "efa-single-zone", "An EFA pool sits in one availability zone of its site (EFA traffic does not cross zones).")
def efa_single_zone(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        site = ctx.pool_site(pool)
        if not isinstance(site, AwsSite) or pool.aws is None:
            continue
        zone = pool.aws.zone
        if zone is not None and zone not in site.zones:
            yield Finding(
                S.node_pools[i].aws.zone,
                f'zone "{zone}" is not one of site {site.name}\'s zones',
                did_you_mean(zone, site.zones) or f"use one of: {', '.join(site.zones)}",
                zone,
            )
        elif zone is None and pool.fabric is not None and len(site.zones) > 1:
            yield Finding(
                S.node_pools[i].aws,
                f'EFA pool "{pool.name}" must be pinned to one zone; site {site.name} has {len(site.zones)}',
                f'add zone: "{site.zones[0]}" (where your capacity is)',
                resource=pool.name,
            )


@rules.rule("AL213", "placement-group-capacity", "No forced cluster placement group with capacity reservations or capacity blocks.")
def placement_group(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.aws is not None and pool.aws.placement_group and pool.aws.capacity_type in RESERVED:
            yield Finding(
                S.node_pools[i].aws.placement_group,
                f"a forced placement group with {pool.aws.capacity_type} capacity fails with InsufficientInstanceCapacity",
                "remove placementGroup: reserved capacity is already placed together",
                True,
            )


@rules.rule("AL214", "capacity-reservation-id", "Reserved capacity types name their reservation; others do not.")
def reservation_id(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        aws = pool.aws
        if aws is None:
            continue
        if aws.capacity_type in RESERVED and not aws.capacity_reservation_id:
            yield Finding(
                S.node_pools[i].aws.capacity_type,
                f"{aws.capacity_type} needs capacityReservationId",
                "add capacityReservationId: cr-...",
                aws.capacity_type,
            )
        elif aws.capacity_type not in RESERVED and aws.capacity_reservation_id:
            yield Finding(
                S.node_pools[i].aws.capacity_reservation_id,
                f"capacityReservationId is set but capacityType is {aws.capacity_type}",
                "set capacityType: capacity-reservation or capacity-block",
                aws.capacity_reservation_id,
                key=True,
            )
        elif aws.capacity_reservation_id and not aws.capacity_reservation_id.startswith("cr-"):
            yield Finding(
                S.node_pools[i].aws.capacity_reservation_id,
                f'"{aws.capacity_reservation_id}" is not a capacity reservation id',
                "ids look like cr-0123456789abcdef0",
                aws.capacity_reservation_id,
            )


@rules.rule("AL231", "fsx-per-unit-throughput", "An FSx per-unit throughput is one its deployment type accepts.")
def fsx_per_unit(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, ParallelFsTier) or tier.aws is None or tier.aws.per_unit_storage_throughput is None:
            continue
        aws = tier.aws
        allowed = [o.perUnit for o in options(ctx.catalog.fsx, aws.deployment_type, aws.storage_type) if o.perUnit]
        path = S.storage[i].aws.per_unit_storage_throughput
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
        path = S.storage[i].aws.storage_capacity
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
    for tier in ctx.resolved.storage:
        spec = tier.spec
        fsx = tier.fsx  # the configuration resolve chose, pinned values kept as written
        if not isinstance(spec, ParallelFsTier) or spec.aws is None or spec.throughput is None or fsx is None:
            continue
        if spec.aws.per_unit_storage_throughput is None and spec.aws.storage_capacity is None:
            continue  # derived: resolve picked capacity and per-unit throughput that meet it
        if fsx.throughput_mbps * 1e6 < spec.throughput:
            yield Finding(
                S.storage[tier.index].throughput,
                f"{fsx.capacity_gib:,} GiB at {fsx.per_unit_throughput or 'baseline'} MB/s/TiB gives "
                f"{fsx.throughput_mbps / 1000:.2f} GB/s, below the {spec.throughput / 1e9:g} GB/s declared",
                "remove the pinned storageCapacity/perUnitStorageThroughput to let alicerce size it, or raise them",
                spec.throughput,
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
                    S.storage[i].pools[j],
                    f"{instance.type} (pool {name}) has no instance-store NVMe",
                    "choose an instance type with local NVMe or drop the pool from this tier",
                    name,
                )


@rules.rule("AL241", "zones-in-region", "An AWS site's zones belong to its region and are listed once.")
def zones_in_region(ctx: RuleContext) -> Iterable[Finding]:
    for s, site in enumerate(ctx.env.sites):
        if not isinstance(site, AwsSite):
            continue
        seen: set[str] = set()
        for z, zone in enumerate(site.zones):
            path = S.environments[ctx.env_name].sites[s].zones[z]
            if not re.fullmatch(rf"{re.escape(site.region)}(?:[a-z]|-[a-z]+-\d+[a-z])", zone):
                yield Finding(path, f'zone "{zone}" is not in region {site.region}', f'zones look like "{site.region}a"', zone)
            elif zone in seen:
                yield Finding(path, f'zone "{zone}" is listed twice', None, zone)
            seen.add(zone)


@rules.rule("AL236", "fsx-storage-type", "An FSx deployment type is offered on the storage media the tier names.")
def fsx_storage_type(ctx: RuleContext) -> Iterable[Finding]:
    for tier in ctx.resolved.storage:
        fsx = tier.spec.aws if isinstance(tier.spec, ParallelFsTier) else None
        if fsx is None or "fsx-lustre" not in tier.implementations.values():
            continue
        if not options(ctx.catalog.fsx, fsx.deployment_type, fsx.storage_type):
            yield Finding(
                S.storage[tier.index].aws.storage_type,
                f"FSx {fsx.deployment_type} has no {fsx.storage_type} storage",
                "HDD exists only with PERSISTENT_1",
                fsx.storage_type,
            )
