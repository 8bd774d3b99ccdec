"""The platform-level plan: workloads placed on pools, pools and tiers sized, findings with numbers.

Pure: reads a ResolvedPlatform and the catalog, returns a SizingPlan. Findings compare what the
workloads need with what the spec declares, in the words a capacity review would use.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, ClassVar

from alicerce.catalog import Catalog
from alicerce.catalog.fsx import GIB as FSX_GIB
from alicerce.catalog.fsx import choose_fsx
from alicerce.catalog.models import Gpu
from alicerce.plan.sizing import NODE_GPUS, Placement, WorkloadPlan, plan_workload
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool
from alicerce.spec.models import ParallelFsTier, Workload

# which pool purposes may run which workload kind, in order of preference
PURPOSES = {
    "training": ("training",),
    "fine-tuning": ("fine-tuning", "training"),
    "inference": ("inference",),
    "batch-inference": ("batch-inference", "inference"),
    "data-prep": ("data-prep",),
}


@dataclass(frozen=True)
class Finding:
    severity: str  # error | warning | info
    subject: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "subject": self.subject, "message": self.message}


@dataclass(frozen=True)
class PoolPlan:
    name: str
    site: str
    accelerator: str | None
    gpus_per_node: int
    gpu_units: int  # schedulable GPU units at max size (whole GPUs, time-sliced replicas or MIG instances)
    declared_min: int
    declared_max: int
    recommended_min: int
    recommended_max: int
    peak_gpus: int
    gpu_hours_per_month: float
    utilization: float | None  # forecast busy share of the pool at max size, capped at 1
    demand_ratio: float | None  # GPU-hours wanted / GPU-hours the pool can give (over 1: undersized)
    monthly_cost_usd: float | None
    workloads: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "site": self.site, "accelerator": self.accelerator, "gpusPerNode": self.gpus_per_node,
            "gpuUnits": self.gpu_units,
            "declared": {"min": self.declared_min, "max": self.declared_max},
            "recommended": {"min": self.recommended_min, "max": self.recommended_max},
            "peakGpus": self.peak_gpus, "gpuHoursPerMonth": round(self.gpu_hours_per_month, 1),
            "utilization": None if self.utilization is None else round(self.utilization, 3),
            "demandRatio": None if self.demand_ratio is None else round(self.demand_ratio, 3),
            "monthlyCostUsd": None if self.monthly_cost_usd is None else round(self.monthly_cost_usd, 2),
            "workloads": list(self.workloads),
        }  # fmt: skip


@dataclass(frozen=True)
class TierPlan:
    name: str
    declared_gbps: float | None
    read_gbps: float
    write_gbps: float
    fsx: dict[str, Any] | None  # the FSx configuration that meets the need, on AWS

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "declaredGbps": self.declared_gbps,
            "readGbps": round(self.read_gbps, 3),
            "writeGbps": round(self.write_gbps, 3),
            "fsx": self.fsx,
        }


@dataclass(frozen=True)
class SizingPlan:
    environment: str
    workloads: tuple[WorkloadPlan, ...]
    pools: tuple[PoolPlan, ...]
    storage: tuple[TierPlan, ...]
    findings: tuple[Finding, ...]
    monthly_cost_usd: float = 0.0
    assumptions: dict[str, Any] = field(default_factory=dict)

    UNITS: ClassVar[dict[str, str]] = {
        "modelStateGib": "GiB", "memoryPerGpuGib": "GiB", "gpuHours": "GPU-hours (training: whole run; serving: per month)",
        "wallClockDays": "days", "costUsd": "USD (training: whole run; serving: per month), on-demand",
        "checkpointGib": "GiB", "checkpointWriteGbps": "GB/s", "datasetReadGbps": "GB/s",
        "networkGbpsPerGpu": "Gbit/s", "tokensPerSecondPerReplica": "output tokens/s",
    }  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "units": self.UNITS,
            "workloads": [w.to_json() for w in self.workloads],
            "pools": [p.to_json() for p in self.pools],
            "storage": [t.to_json() for t in self.storage],
            "findings": [f.to_json() for f in self.findings],
            "monthlyCostUsd": round(self.monthly_cost_usd, 2),
        }


def place(w: Workload, platform: ResolvedPlatform, catalog: Catalog) -> Placement:
    """The pool a workload runs on: its own `pool`, else the first pool whose purpose fits."""
    pools = {p.name: p for p in platform.pools}
    pinned = catalog.gpu(w.accelerator) if w.accelerator else None
    chosen: ResolvedPool | None = pools.get(w.pool) if w.pool else None
    if chosen is None and not w.pool:
        for purpose in PURPOSES[w.kind]:
            matches = [p for p in platform.pools if p.spec.purpose == purpose]
            if pinned is not None:
                matches = [p for p in matches if p.gpu is not None and p.gpu.id == pinned.id] or matches
            if matches:
                chosen = matches[0]
                break
    if chosen is None:
        return Placement(None, pinned, NODE_GPUS, None)
    gpu = pinned or chosen.gpu
    instance = chosen.instance if chosen.gpu is not None and gpu is not None and chosen.gpu.id == gpu.id else None
    return Placement(chosen.name, gpu, chosen.gpus_per_node or NODE_GPUS, instance)


def _candidates(platform: ResolvedPlatform, catalog: Catalog, chosen: Gpu | None) -> list[Gpu]:
    seen = {p.gpu.id: p.gpu for p in platform.pools if p.gpu is not None}
    if chosen is not None:
        seen.setdefault(chosen.id, chosen)
    return [seen[k] for k in sorted(seen)]


def plan_platform(platform: ResolvedPlatform, catalog: Catalog | None = None) -> SizingPlan:
    """Size every workload of an environment, then its pools and storage tiers."""
    catalog = catalog or platform.catalog
    sizing = catalog.sizing
    findings: list[Finding] = []
    plans: list[WorkloadPlan] = []
    for w in platform.spec.workloads:
        placement = place(w, platform, catalog)
        if placement.pool is None and w.kind != "data-prep":
            findings.append(
                Finding(
                    "warning",
                    w.name,
                    f"no pool in {platform.environment} runs {w.kind} workloads; "
                    f"sized on {placement.gpu.id if placement.gpu else 'nothing'}",
                )
            )
        pool_gpu = next((p.gpu for p in platform.pools if p.name == placement.pool), None)
        if placement.gpu is not None and pool_gpu is not None and pool_gpu.id != placement.gpu.id:
            findings.append(
                Finding(
                    "warning",
                    w.name,
                    f"pins {placement.gpu.id} but runs on pool {placement.pool} of {pool_gpu.id}; sized for {placement.gpu.id}",
                )
            )
        plan = plan_workload(w, placement, catalog, _candidates(platform, catalog, placement.gpu))
        plans.append(plan)
        findings.extend(
            Finding("error", w.name, note) for note in plan.notes if "cannot" in note or "no replica" in note or "do not fit" in note
        )
    pools = tuple(
        _pool_plan(p, [w for w in plans if w.pool == p.name], platform, sizing.hoursPerMonth.value, findings) for p in platform.pools
    )
    storage = _storage(platform, plans, catalog, findings)
    cost = sum(p.monthly_cost_usd or 0 for p in pools) + sum((t.fsx or {}).get("usdPerMonth", 0) for t in storage)
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: (order[f.severity], f.subject, f.message))
    return SizingPlan(platform.environment, tuple(plans), pools, storage, tuple(findings), cost)


def _pool_plan(
    pool: ResolvedPool, plans: list[WorkloadPlan], platform: ResolvedPlatform, hours_month: float, findings: list[Finding]
) -> PoolPlan:
    spec = pool.spec
    per_node = pool.gpus_per_node
    units_per_gpu = pool.gpu_units.per_gpu if pool.gpu_units else 1
    capacity = spec.scaling.max * per_node
    peak = 0
    always_on = 0
    hours = 0.0
    for w in plans:
        if w.gpus is None:
            continue
        gpus = w.gpus
        if w.sharing and units_per_gpu > 1:
            gpus = math.ceil(gpus / units_per_gpu)
        peak += gpus
        if w.kind in ("training", "fine-tuning"):
            days = min(w.wall_clock_days or 0.0, hours_month / 24)
            hours += gpus * days * 24
            _deadline_finding(pool, w, findings)
        else:
            always_on += gpus if (w.gpu_hours or 0) >= gpus * hours_month * 0.99 else 0
            hours += w.gpu_hours or 0.0
            if gpus > capacity:
                findings.append(
                    Finding(
                        "error",
                        w.name,
                        f"needs {w.replicas} replicas ({gpus} GPUs) at peak; pool {pool.name} has {capacity} at max "
                        f"{_nodes(spec.scaling.max)}; {_nodes(math.ceil(gpus / per_node))} are needed",
                    )
                )
        if w.rdma_required and spec.fabric is None:
            findings.append(
                Finding(
                    "warning",
                    w.name,
                    f"spans {_nodes(math.ceil(gpus / per_node))} at {w.network_gbps_per_gpu:.0f} Gbit/s per GPU for gradient traffic; "
                    f"pool {pool.name} joins no RDMA fabric",
                )
            )
    rec_max = math.ceil(peak / per_node) if per_node else spec.scaling.max
    if per_node and len(plans) > 1 and peak > capacity:
        findings.append(
            Finding(
                "warning",
                pool.name,
                f"its {len(plans)} workloads need {peak} GPUs when they run at once ({_nodes(rec_max)}); "
                f"max is {_nodes(spec.scaling.max)}: stagger them or grow the pool",
            )
        )
    rec_min = math.ceil(always_on / per_node) if per_node else spec.scaling.min
    demand = hours / (capacity * hours_month) if capacity and per_node else None
    utilization = None if demand is None else min(1.0, demand)
    if per_node and plans and utilization is not None and utilization < 0.3 and spec.scaling.max > rec_max:
        findings.append(
            Finding(
                "info",
                pool.name,
                f"forecast GPU utilisation is {utilization:.0%}: its workloads peak at {peak} GPUs ({_nodes(rec_max)}), "
                f"max is {_nodes(spec.scaling.max)}",
            )
        )
    if per_node and not plans and spec.scaling.max:
        findings.append(Finding("info", pool.name, "no declared workload runs here; its size is not backed by the workload inventory"))
    price = pool.instance.price.usdPerHour if pool.instance else None
    cost = None
    if price is not None:
        if per_node:
            busy = max(0.0, hours - spec.scaling.min * per_node * hours_month) / per_node
        else:  # CPU pool: nodes that hold the workloads' cores, for as long as they run
            vcpus = pool.instance.vcpus if pool.instance else 1
            busy = sum(math.ceil((w.cpu_cores or 0) / vcpus) * min(w.wall_clock_days or 0.0, hours_month / 24) * 24 for w in plans)
        cost = (spec.scaling.min * hours_month + busy) * price
    return PoolPlan(
        name=pool.name, site=pool.site.name, accelerator=pool.gpu.id if pool.gpu else None, gpus_per_node=per_node,
        gpu_units=pool.max_gpu_units,
        declared_min=spec.scaling.min, declared_max=spec.scaling.max, recommended_min=rec_min,
        recommended_max=max(rec_max, rec_min), peak_gpus=peak, gpu_hours_per_month=hours, utilization=utilization,
        demand_ratio=demand,
        monthly_cost_usd=cost, workloads=tuple(w.name for w in plans),
    )  # fmt: skip


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def _deadline_finding(pool: ResolvedPool, w: WorkloadPlan, findings: list[Finding]) -> None:
    spec = pool.spec
    capacity = spec.scaling.max * pool.gpus_per_node
    if w.gpus is None or w.gpu_hours is None or capacity == 0:
        return
    if w.min_gpus is not None and w.min_gpus > capacity:
        findings.append(
            Finding(
                "error",
                w.name,
                f"does not fit on pool {pool.name}: needs at least {w.min_gpus} {w.accelerator} GPUs, the pool has {capacity} at max size",
            )
        )
        return
    if w.gpus > capacity and w.deadline_days is not None:
        days = (w.wall_clock_days or 0.0) * w.gpus / capacity  # the same GPU-hours on fewer GPUs
        nodes = math.ceil(w.gpus / pool.gpus_per_node)
        findings.append(
            Finding(
                "error",
                w.name,
                f"pool {pool.name} with max {_nodes(spec.scaling.max)} finishes {w.name} in {days:.0f} days, "
                f"past its {w.deadline_days:.0f}-day deadline; {_nodes(nodes)} are needed",
            )
        )


def _storage(platform: ResolvedPlatform, plans: list[WorkloadPlan], catalog: Catalog, findings: list[Finding]) -> tuple[TierPlan, ...]:
    by_name = {w.name: w for w in platform.spec.workloads}
    pool_site = {p.name: p.site.name for p in platform.pools}
    reads: dict[str, float] = defaultdict(float)
    writes: dict[str, float] = defaultdict(float)

    def parallel_fs(site: str | None, purpose: str) -> str | None:
        """The parallel-fs tier at ``site`` for ``purpose``, else any parallel-fs tier there."""
        at_site = [t for t in platform.storage if t.spec.class_ == "parallel-fs" and (site is None or site in t.sites)]
        chosen = next((t for t in at_site if t.spec.purpose == purpose), at_site[0] if at_site else None)
        return chosen.name if chosen else None

    for plan in plans:
        spec = by_name[plan.name]
        site = pool_site.get(plan.pool or "")
        source = spec.dataset.tier if spec.dataset and spec.dataset.tier else parallel_fs(site, "datasets")
        if source and plan.dataset_read_gbps:
            reads[source] += plan.dataset_read_gbps
        checkpoints = parallel_fs(site, "checkpoints")
        if checkpoints and plan.checkpoint_write_gbps:
            writes[checkpoints] += plan.checkpoint_write_gbps
    out: list[TierPlan] = []
    for tier in platform.storage:
        if tier.name not in reads and tier.name not in writes:
            continue
        need = max(reads[tier.name], writes[tier.name])
        declared = getattr(tier.spec, "throughput", None)
        declared_gbps = declared / 1e9 if declared else None
        fsx = None
        if isinstance(tier.spec, ParallelFsTier) and tier.fsx is not None:
            aws = tier.spec.aws
            sized = choose_fsx(catalog.fsx, tier.fsx.deployment_type, tier.fsx.storage_type, tier.spec.capacity,
                             max(need * 1e9, declared or 0.0),
                             per_unit=aws.per_unit_storage_throughput if aws else None)  # fmt: skip
            if sized is not None:
                fsx = {"storageCapacityGiB": sized.capacity_gib, "perUnitStorageThroughput": sized.per_unit_throughput,
                       "throughputMBps": round(sized.throughput_mbps, 1), "usdPerMonth": sized.usd_per_month,
                       "capacityTiB": round(sized.capacity_gib * FSX_GIB / 2**40, 2)}  # fmt: skip
        if declared_gbps is not None and need > declared_gbps:
            what = "checkpoint writes" if writes[tier.name] >= reads[tier.name] else "dataset reads"
            findings.append(Finding("warning", tier.name, f"{what} need {need:.1f} GB/s; the tier declares {declared_gbps:.1f} GB/s"))
        out.append(TierPlan(tier.name, declared_gbps, reads[tier.name], writes[tier.name], fsx))
    return tuple(out)
