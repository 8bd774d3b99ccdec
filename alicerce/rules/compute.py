"""Node pools: accelerators, instance types, EFA placement, GPU sharing, scaling and hosts."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.resolve.gpu import DEVICE_PLUGIN_DEFAULT_CONFIG
from alicerce.resolve.targets import RESOLVERS
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean
from alicerce.spec.models import MigSharing, TimeSlicing
from alicerce.spec.paths import SpecPath

rules = RuleSet()


def _unknown_gpu(ctx: RuleContext, path: SpecPath, name: str) -> Finding:
    hint = did_you_mean(name, ctx.catalog.gpu_names()) or "see `alicerce catalog gpus`, or declare it under catalog.gpus"
    return Finding(path, f'unknown accelerator "{name}"', hint, name)


@rules.rule("AL207", "accelerator-known", "Accelerators of pools and workloads are catalog GPU ids or aliases.")
def accelerator_known(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.accelerator is not None and ctx.catalog.gpu(pool.accelerator.model) is None:
            yield _unknown_gpu(ctx, S.node_pools[i].accelerator, pool.accelerator.model)
    for i, workload in enumerate(ctx.spec.workloads):
        if workload.accelerator is not None and ctx.catalog.gpu(workload.accelerator) is None:
            yield _unknown_gpu(ctx, S.workloads[i].accelerator, workload.accelerator)


@rules.rule("AL210", "target-details", "A pool has the details of its site's target (`aws` on AWS, `onprem` on-prem), not another's.")
def target_details(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        site = ctx.pool_site(pool)
        if site is None:
            continue
        own = RESOLVERS[site.provider].capabilities
        where = f'pool "{pool.name}" is on {own.label} site "{site.name}"'
        if getattr(pool, own.pool_section) is None:
            yield Finding(S.node_pools[i], f"{where} but has no {own.pool_section} section", own.pool_section_hint, resource=pool.name)
        for other in (r.capabilities for r in RESOLVERS.values() if r.capabilities is not own):
            if getattr(pool, other.pool_section) is not None:
                yield Finding(
                    getattr(S.node_pools[i], other.pool_section),
                    f"{where}; the {other.pool_section} section does not apply",
                    f"remove it, or move the pool to an {other.label} site",
                    key=True,
                )


@rules.rule("AL215", "mig-capable", "MIG sharing only on MIG-capable GPUs.")
def mig_capable(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        gpu = ctx.pool_gpu(i)
        if isinstance(pool.sharing, MigSharing) and gpu is not None and gpu.mig is None:
            capable = sorted(g.id for g in ctx.catalog.gpus if g.mig is not None)
            yield Finding(
                S.node_pools[i].sharing.mode,
                f"{gpu.id} does not support MIG",
                f"use time-slicing, or a MIG-capable GPU: {', '.join(capable)}",
                "mig",
            )


@rules.rule("AL216", "mig-profiles", "MIG profiles exist for the GPU and fit on it together.")
def mig_profiles(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        gpu = ctx.pool_gpu(i)
        if not isinstance(pool.sharing, MigSharing) or gpu is None or gpu.mig is None:
            continue
        known = {p.name: p for p in gpu.mig.profiles}
        slices = 0
        memory = 0.0
        base = S.node_pools[i].sharing.profiles
        for name, count in pool.sharing.profiles.items():
            profile = known.get(name)
            if profile is None:
                yield Finding(
                    base[name],
                    f'{gpu.id} has no MIG profile "{name}"',
                    did_you_mean(name, known) or f"profiles: {', '.join(known)}",
                    name,
                    key=True,
                )
                continue
            if count < 1:
                yield Finding(base[name], f"instances of {name} must be at least 1, not {count}", "remove the profile instead", count)
                continue
            if count > profile.maxCount:
                yield Finding(base[name], f"{name} fits at most {profile.maxCount} times on one {gpu.id}, not {count}", None, count)
            slices += profile.slices * count
            memory += profile.memoryGiB * count
        capacity = gpu.mig.computeSlices
        if slices > capacity:
            yield Finding(
                base,
                f"the profiles take {slices} compute slices; one {gpu.id} has {capacity}",
                f"drop instances until the slices add up to {capacity} or fewer",
                resource=pool.name,
            )
        elif memory > gpu.memoryGB:
            yield Finding(
                base,
                f"the profiles need {memory:g} GiB of memory; one {gpu.id} has {gpu.memoryGB:g} GB",
                "drop instances or choose smaller profiles",
                resource=pool.name,
            )


@rules.rule("AL331", "gpu-pool-name-reserved", "A GPU pool is not named after the device plugin's default config.")
def gpu_pool_name_reserved(ctx: RuleContext) -> Iterable[Finding]:
    """Each GPU pool's device-plugin config is keyed by its name beside the config a node without the selecting label
    takes (alicerce.resolve.gpu.DEVICE_PLUGIN_DEFAULT_CONFIG): a GPU pool of that name replaced the default with its own,
    and every other GPU node took its time-slicing, H100 training jobs sharing GPUs 4 ways, and no alert looks for
    more GPUs than declared (review obsreview33 G-1)."""
    for i, pool in ctx.indexed_pools():
        if pool.accelerator is not None and pool.name == DEVICE_PLUGIN_DEFAULT_CONFIG:
            yield Finding(S.node_pools[i].name, f'"{pool.name}" is the GPU Operator device plugin\'s default config name, '
                          "which the nodes of other pools take", "give the pool another name", pool.name)  # fmt: skip


@rules.rule("AL217", "sharing-needs-gpu", "GPU sharing, fabrics and GPU taints only make sense on pools with accelerators.")
def sharing_needs_gpu(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.accelerator is None and pool.sharing.mode != "none":
            yield Finding(
                S.node_pools[i].sharing,
                f'pool "{pool.name}" has no accelerator to share',
                "remove sharing or add an accelerator",
                pool.sharing.mode,
                key=True,
            )
        if pool.accelerator is None and pool.fabric is not None:
            yield Finding(
                S.node_pools[i].fabric,
                f'pool "{pool.name}" has no GPUs to feed over an RDMA fabric',
                "remove fabric, or add an accelerator",
                pool.fabric,
                key=True,
            )
        if pool.accelerator is None:
            for j, taint in enumerate(pool.taints):
                if taint.key == "nvidia.com/gpu":
                    yield Finding(
                        S.node_pools[i].taints[j],
                        f'pool "{pool.name}" has no GPUs but a {taint.key} taint',
                        "GPU pods tolerate that taint and would land on nodes without GPUs; remove it",
                        taint.key,
                    )
        if isinstance(pool.sharing, TimeSlicing) and pool.purpose == "training":
            yield Finding(
                S.node_pools[i].sharing.mode,
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
                S.node_pools[i],
                f'GPU pool "{pool.name}" has no NoSchedule taint; CPU pods would take its nodes',
                'add taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]',
                resource=pool.name,
            )


@rules.rule("AL219", "scaling-bounds", "Scaling bounds are ordered: min <= desired <= max, and max >= 1.")
def scaling_bounds(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        s = pool.scaling
        path = S.node_pools[i].scaling
        if s.max < 1:
            yield Finding(path.max, "max must be at least 1", "a pool that can never have a node is not a pool", s.max)
        if s.min > s.max:
            yield Finding(path.min, f"min {s.min} is above max {s.max}", None, s.min)
        if s.desired is not None and not s.min <= s.desired <= s.max:
            yield Finding(path.desired, f"desired {s.desired} is outside [{s.min}, {s.max}]", None, s.desired)


@rules.rule(
    "AL320",
    "system-pool",
    "Every site has a system pool (purpose: system, scaling.min > 0) where the platform's controllers run.",
)
def system_pool(ctx: RuleContext) -> Iterable[Finding]:
    # Every other node is tainted (GPU pools by AL218, kubespray's control plane) or a team's (Spot data-prep):
    # without a schedulable system node, kube-prometheus-stack, Kueue, KubeRay, the Trainer and alicerce's own
    # Jobs stay Pending; on EKS CoreDNS and the EBS CSI add-on stay DEGRADED and `pulumi up` times out
    # (pulumi-eks#1819). The system pool's own taints are fine: every platform component tolerates them
    # (alicerce.emit.kube.common.system_placement).
    for s, site in enumerate(ctx.env.sites):
        at_site = [(i, p) for i, p in ctx.indexed_pools() if p.site == site.name]
        system = [(i, p) for i, p in at_site if p.purpose == "system"]
        if not system:
            yield Finding(
                S.environments[ctx.env_name].sites[s],
                f'site "{site.name}" has no system pool: the platform\'s controllers (monitoring, Kueue, KubeRay, '
                "the Trainer, CoreDNS) would have no node to run on",
                f"add a node pool with `site: {site.name}`, `purpose: system` and `scaling.min` of at least 1 "
                "(2 for redundancy); it may carry a taint of its own, which every platform component tolerates",
                resource=site.name,
            )
        elif all(p.scaling.min < 1 for _, p in system):
            i, pool = system[0]
            yield Finding(
                S.node_pools[i].scaling.min,
                f'system pool "{pool.name}" can scale to zero: the controllers that scale pools up run on it',
                "set scaling.min to at least 1 (2 for redundancy)",
                pool.scaling.min,
                resource=pool.name,
            )
