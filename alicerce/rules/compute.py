"""Node pools: accelerators, instance types, EFA placement, GPU sharing, scaling and hosts."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.catalog.models import Gpu, InstanceType
from alicerce.rules.base import Finding, RuleContext, RuleSet
from alicerce.spec.errors import did_you_mean
from alicerce.spec.models import AwsSite, MigSharing, NodePool, OnpremSite, TimeSlicing
from alicerce.spec.units import MAX_HOSTS_PER_POOL, MAX_HOSTS_PER_SITE, count_hosts, expand_hosts

rules = RuleSet()

RESERVED = ("capacity-reservation", "capacity-block")


def pool_gpu(ctx: RuleContext, pool: NodePool) -> Gpu | None:
    return ctx.catalog.gpu(pool.accelerator.model) if pool.accelerator else None


def pool_instance(ctx: RuleContext, pool: NodePool) -> InstanceType | None:
    site = ctx.pool_site(pool)
    if isinstance(site, AwsSite) and pool.aws is not None:
        return ctx.catalog.instance(pool.aws.instance_type)
    return None


def _unknown_gpu(ctx: RuleContext, path: tuple[str | int, ...], name: str) -> Finding:
    hint = did_you_mean(name, ctx.catalog.gpu_names()) or "see `alicerce catalog gpus`"
    return Finding(path, f'unknown accelerator "{name}"', hint, name)


@rules.rule("AL207", "accelerator-known", "Accelerators of pools and workloads are catalog GPU ids or aliases.")
def accelerator_known(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.accelerator is not None and ctx.catalog.gpu(pool.accelerator.model) is None:
            yield _unknown_gpu(ctx, ("nodePools", i, "accelerator"), pool.accelerator.model)
    for i, workload in enumerate(ctx.spec.workloads):
        if workload.accelerator is not None and ctx.catalog.gpu(workload.accelerator) is None:
            yield _unknown_gpu(ctx, ("workloads", i, "accelerator"), workload.accelerator)


@rules.rule("AL208", "instance-type-known", "AWS pools use an instance type the catalog knows.")
def instance_known(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.aws is not None and ctx.catalog.instance(pool.aws.instance_type) is None:
            name = pool.aws.instance_type
            hint = did_you_mean(name, ctx.catalog.instance_names()) or "see `alicerce catalog instances`"
            yield Finding(("nodePools", i, "aws", "instanceType"), f'unknown instance type "{name}"', hint, name)


@rules.rule("AL209", "accelerator-matches-instance", "A pool's accelerator model and count match its instance type.")
def accelerator_matches(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        instance = pool_instance(ctx, pool)
        if instance is None:
            continue
        gpu = pool_gpu(ctx, pool)
        path = ("nodePools", i, "accelerator")
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
                ("nodePools", i),
                f"{instance.type} has {instance.gpus} x {instance.gpu}, but the pool declares no accelerator",
                f'add accelerator: "{expected}"',
                resource=pool.name,
            )
        elif gpu is not None and (gpu.id != instance.gpu or pool.accelerator.count != instance.gpus):
            declared = f"{gpu.id}:{pool.accelerator.count}"
            yield Finding(path, f"{instance.type} has {expected}, not {declared}", f'write "{expected}"', declared)


_TARGET_LABEL = {"aws": "AWS", "onprem": "on-prem"}
_TARGET_SECTION = {"aws": "add aws: {instanceType: ...}", "onprem": "add onprem: {hosts: [...]}"}


@rules.rule("AL210", "target-details", "A pool has the details of its site's target: `aws` on AWS, `onprem` on-prem, not the other.")
def target_details(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        site = ctx.pool_site(pool)
        if site is None:
            continue
        own, other = ("aws", "onprem") if isinstance(site, AwsSite) else ("onprem", "aws")
        where = f'pool "{pool.name}" is on {_TARGET_LABEL[own]} site "{site.name}"'
        if getattr(pool, own) is None:
            yield Finding(("nodePools", i), f"{where} but has no {own} section", _TARGET_SECTION[own], resource=pool.name)
        if getattr(pool, other) is not None:
            yield Finding(
                ("nodePools", i, other),
                f"{where}; the {other} section does not apply",
                f"remove it, or move the pool to an {_TARGET_LABEL[other]} site",
                key=True,
            )


@rules.rule("AL211", "efa-capable", "A pool on an RDMA fabric at an AWS site uses an EFA-capable instance type.")
def efa_capable(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        instance = pool_instance(ctx, pool)
        if pool.fabric is not None and instance is not None and instance.efa is None:
            capable = sorted(t.type for t in ctx.catalog.instances if t.efa is not None and t.gpu == instance.gpu)
            hint = (
                f"EFA-capable types with the same GPU: {', '.join(capable)}"
                if capable
                else "choose an EFA-capable instance type or drop the fabric"
            )
            yield Finding(
                ("nodePools", i, "fabric"), f"{instance.type} has no EFA, so it cannot join fabric {pool.fabric}", hint, pool.fabric
            )


@rules.rule("AL212", "efa-single-zone", "An EFA pool sits in one availability zone of its site (EFA traffic does not cross zones).")
def efa_single_zone(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        site = ctx.pool_site(pool)
        if not isinstance(site, AwsSite) or pool.aws is None:
            continue
        zone = pool.aws.zone
        if zone is not None and zone not in site.zones:
            yield Finding(
                ("nodePools", i, "aws", "zone"),
                f'zone "{zone}" is not one of site {site.name}\'s zones',
                did_you_mean(zone, site.zones) or f"use one of: {', '.join(site.zones)}",
                zone,
            )
        elif zone is None and pool.fabric is not None and len(site.zones) > 1:
            yield Finding(
                ("nodePools", i, "aws"),
                f'EFA pool "{pool.name}" must be pinned to one zone; site {site.name} has {len(site.zones)}',
                f'add zone: "{site.zones[0]}" (where your capacity is)',
                resource=pool.name,
            )


@rules.rule("AL213", "placement-group-capacity", "No forced cluster placement group with capacity reservations or capacity blocks.")
def placement_group(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.aws is not None and pool.aws.placement_group and pool.aws.capacity_type in RESERVED:
            yield Finding(
                ("nodePools", i, "aws", "placementGroup"),
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
                ("nodePools", i, "aws", "capacityType"),
                f"{aws.capacity_type} needs capacityReservationId",
                "add capacityReservationId: cr-...",
                aws.capacity_type,
            )
        elif aws.capacity_type not in RESERVED and aws.capacity_reservation_id:
            yield Finding(
                ("nodePools", i, "aws", "capacityReservationId"),
                f"capacityReservationId is set but capacityType is {aws.capacity_type}",
                "set capacityType: capacity-reservation or capacity-block",
                aws.capacity_reservation_id,
                key=True,
            )
        elif aws.capacity_reservation_id and not aws.capacity_reservation_id.startswith("cr-"):
            yield Finding(
                ("nodePools", i, "aws", "capacityReservationId"),
                f'"{aws.capacity_reservation_id}" is not a capacity reservation id',
                "ids look like cr-0123456789abcdef0",
                aws.capacity_reservation_id,
            )


@rules.rule("AL215", "mig-capable", "MIG sharing only on MIG-capable GPUs.")
def mig_capable(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        gpu = pool_gpu(ctx, pool)
        if isinstance(pool.sharing, MigSharing) and gpu is not None and gpu.mig is None:
            capable = sorted(g.id for g in ctx.catalog.gpus if g.mig is not None)
            yield Finding(
                ("nodePools", i, "sharing", "mode"),
                f"{gpu.id} does not support MIG",
                f"use time-slicing, or a MIG-capable GPU: {', '.join(capable)}",
                "mig",
            )


@rules.rule("AL216", "mig-profiles", "MIG profiles exist for the GPU and fit on it together.")
def mig_profiles(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        gpu = pool_gpu(ctx, pool)
        if not isinstance(pool.sharing, MigSharing) or gpu is None or gpu.mig is None:
            continue
        known = {p.name: p for p in gpu.mig.profiles}
        slices = 0
        memory = 0.0
        base = ("nodePools", i, "sharing", "profiles")
        for name, count in pool.sharing.profiles.items():
            profile = known.get(name)
            if profile is None:
                yield Finding(
                    (*base, name),
                    f'{gpu.id} has no MIG profile "{name}"',
                    did_you_mean(name, known) or f"profiles: {', '.join(known)}",
                    name,
                    key=True,
                )
                continue
            if count < 1:
                yield Finding((*base, name), f"instances of {name} must be at least 1, not {count}", "remove the profile instead", count)
                continue
            if count > profile.maxCount:
                yield Finding((*base, name), f"{name} fits at most {profile.maxCount} times on one {gpu.id}, not {count}", None, count)
            slices += profile.slices * count
            memory += profile.memoryGiB * count
        if slices > 7:
            yield Finding(
                base,
                f"the profiles take {slices} compute slices; one {gpu.id} has 7",
                "drop instances until the slices add up to 7 or fewer",
                resource=pool.name,
            )
        elif memory > gpu.memoryGB:
            yield Finding(
                base,
                f"the profiles need {memory:g} GiB of memory; one {gpu.id} has {gpu.memoryGB:g} GB",
                "drop instances or choose smaller profiles",
                resource=pool.name,
            )


@rules.rule("AL217", "sharing-needs-gpu", "GPU sharing, fabrics and GPU taints only make sense on pools with accelerators.")
def sharing_needs_gpu(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.accelerator is None and pool.sharing.mode != "none":
            yield Finding(
                ("nodePools", i, "sharing"),
                f'pool "{pool.name}" has no accelerator to share',
                "remove sharing or add an accelerator",
                pool.sharing.mode,
                key=True,
            )
        if pool.accelerator is None and pool.fabric is not None:
            yield Finding(
                ("nodePools", i, "fabric"),
                f'pool "{pool.name}" has no GPUs to feed over an RDMA fabric',
                "remove fabric, or add an accelerator",
                pool.fabric,
                key=True,
            )
        if pool.accelerator is None:
            for j, taint in enumerate(pool.taints):
                if taint.key == "nvidia.com/gpu":
                    yield Finding(
                        ("nodePools", i, "taints", j),
                        f'pool "{pool.name}" has no GPUs but a {taint.key} taint',
                        "GPU pods tolerate that taint and would land on nodes without GPUs; remove it",
                        taint.key,
                    )
        if isinstance(pool.sharing, TimeSlicing) and pool.purpose == "training":
            yield Finding(
                ("nodePools", i, "sharing", "mode"),
                "time-slicing a training pool gives no memory isolation and slows every job",
                "use whole GPUs for training; time-slice inference or notebook pools",
                "time-slicing",
            )


@rules.rule("AL218", "gpu-pools-tainted", "GPU pools carry a NoSchedule or NoExecute taint so only GPU workloads land there.")
def gpu_tainted(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.accelerator is None:
            continue
        if not any(t.effect in ("NoSchedule", "NoExecute") for t in pool.taints):
            yield Finding(
                ("nodePools", i),
                f'GPU pool "{pool.name}" has no NoSchedule taint; CPU pods would take its nodes',
                'add taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]',
                resource=pool.name,
            )


@rules.rule("AL219", "scaling-bounds", "Scaling bounds are ordered: min <= desired <= max, and max >= 1.")
def scaling_bounds(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        s = pool.scaling
        path = ("nodePools", i, "scaling")
        if s.max < 1:
            yield Finding((*path, "max"), "max must be at least 1", "a pool that can never have a node is not a pool", s.max)
        if s.min > s.max:
            yield Finding((*path, "min"), f"min {s.min} is above max {s.max}", None, s.min)
        if s.desired is not None and not s.min <= s.desired <= s.max:
            yield Finding((*path, "desired"), f"desired {s.desired} is outside [{s.min}, {s.max}]", None, s.desired)


def _host_count(pattern: str) -> int:
    try:
        return count_hosts(pattern)
    except ValueError:
        return 0  # malformed: reported where it is expanded


@rules.rule(
    "AL220",
    "host-ranges",
    "On-prem host ranges expand, no host sits in two pools, max fits the hosts listed, and pools and sites stay under their host caps.",
)
def host_ranges(ctx: RuleContext) -> Iterable[Finding]:
    owner: dict[str, str] = {}
    site_hosts: dict[str, int] = {}
    for i, pool in ctx.indexed_pools():
        if pool.onprem is None or not isinstance(ctx.pool_site(pool), OnpremSite):
            continue
        # counted from the brackets before anything is expanded: a hostile product costs nothing
        sizes = [_host_count(entry.hosts) for entry in pool.onprem.hosts]
        if sum(sizes) > MAX_HOSTS_PER_POOL and max(sizes) <= MAX_HOSTS_PER_POOL:  # one range over: reported at the range
            message = f"the pool's host ranges add up to {sum(sizes):,} hosts, over the {MAX_HOSTS_PER_POOL:,} a pool may have"
            yield Finding(("nodePools", i, "onprem", "hosts"), message, "split the hosts over several pools", sum(sizes))
            continue
        before = site_hosts.get(pool.site, 0)
        site_hosts[pool.site] = before + (sum(sizes) if sum(sizes) <= MAX_HOSTS_PER_POOL else 0)
        if site_hosts[pool.site] > MAX_HOSTS_PER_SITE:
            if before <= MAX_HOSTS_PER_SITE:  # reported once, at the pool that crosses the cap
                total = site_hosts[pool.site]
                message = f"with this pool, site {pool.site} lists {total:,} hosts, over the {MAX_HOSTS_PER_SITE:,} a site may have"
                yield Finding(("nodePools", i, "onprem", "hosts"), message, "split the site, or list fewer hosts", total)
            continue
        count = 0
        for j, entry in enumerate(pool.onprem.hosts):
            path = ("nodePools", i, "onprem", "hosts", j)
            try:
                hosts = expand_hosts(entry.hosts)
            except ValueError as exc:
                yield Finding(path, str(exc), None, entry.hosts)
                continue
            count += len(hosts)
            for host in hosts:
                if host in owner:
                    yield Finding(path, f'host {host} is already in pool "{owner[host]}"', "a server belongs to one pool", host)
                    break
                owner[host] = pool.name
        if count and pool.scaling.max > count:
            yield Finding(
                ("nodePools", i, "scaling", "max"),
                f"max {pool.scaling.max} exceeds the {count} hosts listed",
                f"set max: {count} or list more hosts",
                pool.scaling.max,
            )
