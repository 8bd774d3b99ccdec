"""Where each workload runs: every eligible pool is sized and compared, and the choice says why.

A pool is eligible when its purpose runs the workload's kind (training pools also take fine-tuning, inference
pools batch inference), it has the pinned accelerator if there is one, and it is at a site of the environment.
The planner sizes the workload on each, then prefers, in order: one where it can run at all; one at a site
that holds the storage tier its dataset is read from (a pod elsewhere cannot mount that file system, or reads
every epoch across sites: PL327 where none is); one that meets its deadline with the GPUs still free there
(pools fill in spec order); one whose free capacity holds it; the lowest marginal cost (owned capacity: only
the power the job adds, since the pool is paid for either way; rented capacity: its price; to the cent); the purpose
listed first; for a service or batch job the least GPU compute held (the dense bf16 TFLOP/s of the GPUs it fills, so
a service is not cut into time slices that fill more GPUs than whole ones beside them would), for a training run the
fewest days on the GPUs free there; the pool declared first. A workload that names its pool keeps it, but a better
eligible pool is reported (PL314).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from alicerce.catalog import Catalog
from alicerce.catalog.models import Gpu
from alicerce.plan.figures import deadline_text
from alicerce.plan.pools import pool_units
from alicerce.plan.sizing import NODE_GPUS, Placement, WorkloadPlan, plan_workload, precision_refusal
from alicerce.resolve.eligibility import eligible
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool
from alicerce.spec.models import MigSharing, TimeSlicing, Workload


def network_gbps_per_gpu(pool: ResolvedPool, tcp_gbps: float) -> float:
    """What the pool's fabric gives each GPU: EFA's instance bandwidth, on-prem rails x rate, else TCP."""
    if pool.rdma is None or not pool.gpus_per_node:
        return tcp_gbps
    if pool.rdma.technology == "efa" and pool.instance is not None:
        return pool.instance.networkGbps / pool.gpus_per_node
    rate = pool.rdma.rate_gbps if pool.rdma.rate_gbps is not None else tcp_gbps  # the rate its target resolved
    return pool.rdma.interfaces * rate / pool.gpus_per_node


def placement_for(pool: ResolvedPool, gpu: Gpu | None, tcp_gbps: float) -> Placement:
    sharing = pool.spec.sharing
    shared = sharing if isinstance(sharing, (MigSharing, TimeSlicing)) else None
    return Placement(pool.name, gpu, pool.gpus_per_node or NODE_GPUS, network_gbps_per_gpu(pool, tcp_gbps), pool.max_gpus, pool.gpu,
                     shared)  # fmt: skip


def sized_on(w: Workload, pool: ResolvedPool, catalog: Catalog) -> Placement:
    """Where ``w`` is sized on ``pool``: its pinned accelerator where it names one, else the pool's GPU."""
    gpu = catalog.gpu(w.accelerator) if w.accelerator else pool.gpu
    return placement_for(pool, gpu, catalog.sizing.tcpGbpsPerGpu.value)


def dataset_sites(w: Workload, platform: ResolvedPlatform) -> tuple[str, ...] | None:
    """The sites of this environment that hold the tier ``w`` reads its dataset from; None where it names no tier
    (it reads from wherever it runs) or an unknown one (AL206 reports that)."""
    if w.dataset is None or w.dataset.tier is None:
        return None
    tier = next((t for t in platform.storage if t.name == w.dataset.tier), None)
    return None if tier is None else tier.sites


@dataclass(frozen=True)
class Option:
    """The workload sized on one candidate pool, and how it fares there."""

    pool: ResolvedPool
    rank: int
    plan: WorkloadPlan
    free_gpus: int
    runs: bool
    data_local: bool  # its site holds the dataset's tier (or the workload names none)
    fits_free: bool
    meets_deadline: bool
    days_on_free: float | None  # training: wall-clock with the GPUs still free
    marginal_usd: float | None  # what running it here adds to the bill (None: unpriced)

    @property
    def cost_usd(self) -> float:
        """What the option adds to the bill, to the cent (math.inf where unpriced): two options that both add "$0"
        differed by 1e-12 of float noise, which decided between them and printed "$-0" (reviews sizreview47 3,
        sizreview48 1)."""
        return round(self.marginal_usd, 2) + 0.0 if self.marginal_usd is not None else math.inf

    def key(self, order: int) -> tuple[bool, bool, bool, bool, float, int, float, int]:
        return (not self.runs, not self.data_local, not self.meets_deadline, not self.fits_free, self.cost_usd, self.rank,
                self.tie_break, order)  # fmt: skip

    @property
    def tie_break(self) -> float:
        """What decides between options of the same purpose that add the same to the bill, least first. A service or
        batch job: the dense bf16 TFLOP/s of the GPUs it holds, so it leaves more of the platform free (review
        sizreview45 G4: a service took 4 time-sliced H100s on the pool declared first where one whole H100 beside it
        served it, both paid for already). A training run: its days on the GPUs free there, as GPUs held would send it
        to slower ones for longer (sizreview47 1, sizreview48 G2: 17 hours on p4d for 5.9 on p5, both paid for)."""
        gpu = self.pool.gpu
        if not self.runs or gpu is None:
            return 0.0
        if self.plan.kind in ("training", "fine-tuning"):
            return self.days_on_free if self.days_on_free is not None else 0.0
        return pool_units(self.plan, self.pool) * gpu.tflops.bf16

    def describe(self) -> str:
        if not self.runs:
            # why, as the plan sized on the pool says it (review sizreview33 N-4: fp8 on an A100 pool said nothing more)
            why = next((f": {i.message}" for i in self.plan.issues), "")
            return f"{self.pool.name}: cannot run it{why}"
        parts = [] if self.data_local else [f"its dataset's tier is not at {self.pool.site.name}"]
        if self.days_on_free is not None and self.plan.deadline_days is not None:
            verdict = "meets" if self.meets_deadline else "misses"
            # under a day in hours: "0 days" read as no time at all (review sizreview8 F14)
            days = self.days_on_free
            took = f"{days:.0f} days" if days >= 1.5 else (f"{days:.1f} days" if days >= 1 else f"{days * 24:.1f} hours")
            # on the GPUs it runs on: its planned count where the pool has them free (review sizreview61 nit: "118 days on
            # 512 free GPUs" for a run planned on 312), else all that are free
            gpus = self.plan.gpus or 0
            on = (f"{took} on {gpus} of its {self.free_gpus} free GPUs" if 0 < gpus < self.free_gpus else
                  f"{took} on {self.free_gpus} free GPUs" if self.free_gpus else "no GPU free")  # fmt: skip
            parts.append(f"{verdict} the {deadline_text(self.plan.deadline_days)} deadline ({on})")
        elif not self.fits_free:
            parts.append(f"needs {pool_units(self.plan, self.pool)} GPUs, {self.free_gpus} free")
        cost = "unpriced" if self.marginal_usd is None else f"adds ${self.cost_usd:,.0f}"
        if self.pool.instance is None:
            cost += " (owned: power only)"
        elif self.cost_usd == 0:
            cost += " (paid already: always-on, reserved or other workloads' nodes)"
        parts.append(cost)
        return f"{self.pool.name}: " + ", ".join(parts)


@dataclass(frozen=True)
class Choice:
    placement: Placement
    plan: WorkloadPlan
    reason: str
    better: Option | None  # an eligible pool that would do better than the pinned one


def choose(  # noqa: PLR0917 - the workload, where it may go, and how to judge it
    w: Workload,
    platform: ResolvedPlatform,
    catalog: Catalog,
    committed: Callable[[ResolvedPool, WorkloadPlan], int],
    candidates: Callable[[Gpu | None], list[Gpu]],
    marginal: Callable[[ResolvedPool, WorkloadPlan], float | None],
) -> Choice:
    """Size ``w`` on every eligible pool and pick one (see the module docstring for the order)."""
    sizing = catalog.sizing
    tcp = sizing.tcpGbpsPerGpu.value
    pinned = catalog.gpu(w.accelerator) if w.accelerator else None
    pools = {p.name: p for p in platform.pools}
    data = dataset_sites(w, platform)
    options: list[tuple[int, Option]] = []
    for order, (rank, pool) in enumerate(eligible(w, platform, pinned)):
        plan = plan_workload(w, sized_on(w, pool, catalog), sizing, [])
        options.append((order, _option(pool, rank, plan, committed, marginal, data)))
    options.sort(key=lambda o: o[1].key(o[0]))
    if w.pool:
        named = pools.get(w.pool)
        if named is None:  # the named pool is not in this environment: nothing to size on
            placement = Placement(None, pinned, NODE_GPUS)
            return Choice(
                placement, plan_workload(w, placement, sizing, candidates(pinned)), f"pool {w.pool} is not in this environment", None
            )
        pool = named
        placement = sized_on(w, pool, catalog)
        plan = plan_workload(w, placement, sizing, candidates(placement.gpu))
        mine = _option(pool, 0, plan, committed, marginal, data)
        better = next((o for _, o in options if o.pool.name != pool.name and o.runs and o.meets_deadline and o.fits_free), None)
        if better is not None and (mine.meets_deadline and mine.fits_free and mine.runs):
            better = None
        return Choice(placement, plan, f"pinned to {pool.name}", better)
    if not options:
        placement = Placement(None, pinned, NODE_GPUS)
        return Choice(placement, plan_workload(w, placement, sizing, candidates(pinned)), "no eligible pool", None)
    best = options[0][1]
    others = "; ".join(o.describe() for _, o in options[1:])
    reason = best.describe() + (f". Also considered: {others}" if others else "")
    placement = placement_for(best.pool, pinned or best.pool.gpu, tcp)
    plan = plan_workload(w, placement, sizing, candidates(placement.gpu))
    return Choice(placement, _all_refused(w, plan, [o for _, o in options]), reason, None)


def _all_refused(w: Workload, plan: WorkloadPlan, options: list[Option]) -> WorkloadPlan:
    """The chosen plan, its precision PL303 naming every eligible pool where each refuses the precision: it named only
    the first, as if another pool could run it (review sizreview25 N6)."""
    refused = [o.pool.name for o in options if any(i.check == "PL303" and i.field == "precision" for i in o.plan.issues)]
    if len(refused) < 2 or len(refused) < len(options):
        return plan
    gpu = options[0].pool.gpu  # the chosen pool's, which the refusal is read on (plan_training: place.pool_gpu)
    refusal = gpu.training_refusal(w.precision, w.fp8_recipe) if gpu is not None else None
    if refusal is None:
        return plan
    issues = tuple(precision_refusal(refusal, w.precision, tuple(refused)) if i.check == "PL303" and i.field == "precision" else i
                   for i in plan.issues)  # fmt: skip
    return replace(plan, issues=issues)


def _option(  # noqa: PLR0917 - one option's inputs, called from choose only
    pool: ResolvedPool,
    rank: int,
    plan: WorkloadPlan,
    committed: Callable[[ResolvedPool, WorkloadPlan], int],
    marginal: Callable[[ResolvedPool, WorkloadPlan], float | None],
    data_sites: tuple[str, ...] | None,
) -> Option:
    capacity = pool.max_gpus if pool.gpu is not None else pool.spec.scaling.max
    free = max(0, capacity - committed(pool, plan))  # what the workloads placed before leave it while it runs
    runs = plan.runnable and not any(i.check == "PL303" for i in plan.issues)
    # physical GPUs, as free counts them: a service's MIG instances or time slices, seven or four to a GPU, were set
    # against the pool's free GPUs one for one (review sizreview45 D3: 13 instances, 2 GPUs, "needs 13, 8 free")
    need = pool_units(plan, pool)
    fits = runs and need <= free
    days = None
    meets = runs
    if runs and plan.kind in ("training", "fine-tuning") and plan.gpus:
        usable = min(plan.gpus, free)
        days = (plan.wall_clock_days or 0.0) * plan.gpus / usable if usable else math.inf
        meets = plan.deadline_days is None or days <= plan.deadline_days * 1.000001
    elif runs and plan.gpus is not None:
        meets = fits
    local = data_sites is None or pool.site.name in data_sites
    return Option(pool, rank, plan, free, runs, local, fits, meets, days, marginal(pool, plan) if runs else None)
