"""Growth: capacity and cost, quarter by quarter, and when each pool runs out.

A workload's `growth.perQuarter` compounds its demand: the tokens of each training or fine-tuning
run, the peak traffic of a service, the data a preparation job reads. Each quarter of the horizon
(`costs.horizonQuarters`, default 8) re-sizes the growing workloads on the pools they were placed
on, adds up what each pool must hold at once and what it costs that month, and names the first
quarter a pool cannot hold its workloads: so a platform can be bought a step at a time.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from alicerce.catalog import Catalog
from alicerce.plan.figures import Factor, Figure, rounded
from alicerce.plan.pools import PoolPlan, gpu_equivalents, packed_units, pool_units
from alicerce.plan.pricing import NodePrice, block_hours, monthly_node_cost
from alicerce.plan.sizing import WorkloadPlan, plan_workload
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool
from alicerce.spec.models import Workload

if TYPE_CHECKING:
    from alicerce.plan.placement import Choice


@dataclass(frozen=True)
class QuarterPool:
    quarter: int
    pool: str
    peak_gpus: int
    capacity_gpus: int
    utilization: float | None
    monthly_usd: float | None  # the pool as declared (never more than its max size can cost)
    demand_usd: float | None  # the pool grown to hold the demand (owned: more nodes at today's TCO per GPU)

    def to_json(self) -> dict[str, Any]:
        return {k: rounded(v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Forecast:
    horizon: int
    rows: tuple[QuarterPool, ...]
    monthly_usd: tuple[float, ...]  # the environment's pools as declared, per quarter (0 = today)
    demand_usd: tuple[float, ...]  # the pools grown to meet the forecast demand
    runs_out: tuple[tuple[str, int, int, int], ...]  # (pool, first quarter over capacity, GPUs needed, capacity)
    growing: tuple[str, ...]

    def utilization(self, pool: str) -> list[tuple[int, float]]:
        return [(r.quarter, r.utilization) for r in self.rows if r.pool == pool and r.utilization is not None]

    def to_json(self) -> dict[str, Any]:
        return {
            "horizon_quarters": self.horizon,
            "growing_workloads": list(self.growing),
            "monthly_usd": [round(v, 2) for v in self.monthly_usd],
            "demand_usd": [round(v, 2) for v in self.demand_usd],
            "pools": [r.to_json() for r in self.rows],
            "runs_out": [{"pool": p, "quarter": q, "gpus_needed": n, "capacity_gpus": c} for p, q, n, c in self.runs_out],
        }


def concurrent_runs(plan: WorkloadPlan, hours_month: float) -> int:
    """Runs of a training schedule in flight at once: runs per quarter x wall-clock over the quarter's days, rounded up
    (two 77-day runs in a 91-day quarter overlap: 2). One for anything else, or a schedule whose runs follow one another."""
    if plan.kind not in ("training", "fine-tuning") or plan.runs_per_quarter is None:
        return 1
    quarter_days = 3 * hours_month / 24
    return max(1, math.ceil(plan.runs_per_quarter * (plan.wall_clock_days or 0.0) / quarter_days - 1e-9))


def peak_units(plan: WorkloadPlan, pool: ResolvedPool, hours_month: float) -> int:
    """GPUs a workload holds on the pool at its peak: each overlapping run of its schedule (PL320) holds its own. The
    pool table and the forecast both read it (the forecast once summed one run's GPUs: review sizreview2 D1)."""
    return pool_units(plan, pool) * concurrent_runs(plan, hours_month)


def run_share(plan: WorkloadPlan, hours_month: float) -> float:
    """The share of a month's days a training schedule keeps a run in flight: runs per quarter / 3 x wall-clock days
    (one run a month where none is declared, at most the month); more than 1 where its runs overlap (PL320)."""
    days = (plan.wall_clock_days or 0.0) * 24 / hours_month
    return plan.runs_per_quarter / 3 * days if plan.runs_per_quarter is not None else min(1.0, days)


def held_while(placed: list[WorkloadPlan], plan: WorkloadPlan, pool: ResolvedPool, hours_month: float) -> int:
    """GPUs the workloads ``placed`` on the pool hold while ``plan`` runs there: the pool's peak with it
    (:func:`pool_peak`: services and batch work all the time, training runs one after another as far as their
    deadlines and the month let them) less its own, so that it fits where that peak does. Two 9-day runs a month on a
    4-node reservation follow one another in it: the second found "0 free" and went to a pool that cost $32,661 a month
    more (review sizreview38 D3); three runs a queue holds two at a time, 40 GPUs of 48, were read all at once and the
    third went to on-demand nodes for $30,771 a month (sizreview42 D1)."""
    return max(0, pool_peak([*placed, plan], pool, hours_month) - pool_units(plan, pool))


def pool_peak(plans: list[WorkloadPlan], pool: ResolvedPool, hours_month: float) -> int:
    """GPUs a pool's workloads hold at once at their peak: services and batch work, the runs that cannot wait for the
    others within their deadlines (:func:`late_runs`), and of the runs that queue one after another as many of the
    widest as the month overlaps at once, the runs' shares of it rounded up (:func:`pool_node_hours` lays them so).
    Review sizreview39 G3: eight runs the month queues read all 120 GPUs at once, and PL306 told the user to stagger
    what was staggered."""
    runs = [p for p in plans if _is_run(p)]
    held = packed_units([p for p in plans if not _is_run(p)], pool)
    late = late_runs([queued_run(p) for p in runs])
    held += sum(peak_units(p, pool, hours_month) for p in runs if p.name in late)
    queued = [p for p in runs if p.name not in late]
    at_once = max(1, math.ceil(sum(run_share(p, hours_month) for p in queued) - 1e-9))
    # each run's copies in flight at once count one by one (review sizreview40 D3: two runs that each overlap
    # themselves read as three runs of both copies, 128 GPUs where 3 x 32 are in flight)
    copies = [pool_units(p, pool) for p in queued for _ in range(concurrent_runs(p, hours_month))]
    return held + sum(sorted(copies, reverse=True)[:at_once])


class Queued(NamedTuple):
    """A training run as a queue sees it: its wall-clock days and its deadline in days (None: none)."""

    name: str
    wall: float
    deadline: float | None


def queued_run(plan: WorkloadPlan) -> Queued:
    return Queued(plan.name, plan.wall_clock_days or 0.0, plan.deadline_days)


def late_runs(queue: list[Queued]) -> set[str]:
    """The runs that cannot be sure to meet their deadline waiting in one queue: these run beside the others. Earliest
    deadline first, without preemption, a run may wait for every run ahead of it and for one behind it that has just
    started (the non-preemptive EDF bound); a run found late runs beside the rest and holds up none of them. Start
    times are not declared, so no phase between runs of the same period is assumed (review sizreview42 D2, D3: one
    run due in 9 days behind a 4-day run with none and beside another due in 9 was read on time; two runs a month each
    were read free to interleave)."""
    late: set[str] = set()
    ordered = sorted(queue, key=lambda r: (math.inf if r.deadline is None else r.deadline, r.name))
    for at, run in enumerate(ordered):
        if run.deadline is None:
            continue
        ahead = sum(o.wall for o in ordered[:at] if o.name not in late)
        started = max((o.wall for o in ordered[at + 1 :]), default=0.0)
        if started + ahead + run.wall > run.deadline * (1 + 1e-9):
            late.add(run.name)
    return late


def _is_run(plan: WorkloadPlan) -> bool:
    return plan.kind in ("training", "fine-tuning") and plan.wall_clock_days is not None


def run_hours(plan: WorkloadPlan) -> float:
    """Hours one run holds its GPUs: its wall-clock days at its hours a day (a run of 12 hours a day holds them half of
    each day; counted as 24 the pool read twice as busy and owning won against renting: review sizreview8 F12)."""
    return (plan.wall_clock_days or 0.0) * plan.hours_per_day


def busy_gpu_hours(plan: WorkloadPlan, gpus: float, hours_month: float) -> float:
    """GPU-hours a month a workload keeps ``gpus`` busy. Training: its declared schedule (runs per quarter x
    wall-clock, spread over the quarter's three months), else one run a month (its wall-clock, at most the month);
    overlapping runs hold more GPUs than ``gpus``: what they add is counted too (PL320 says so)."""
    if plan.kind in ("training", "fine-tuning"):
        hours = run_hours(plan)
        if plan.runs_per_quarter is not None:
            return gpus * plan.runs_per_quarter * hours / 3
        return gpus * min(hours, hours_month * plan.hours_per_day / 24)
    return (plan.gpu_hours or 0.0) * (gpus / plan.gpus if plan.gpus else 1.0)


def pool_gpu_hours(plan: WorkloadPlan, gpus: float, capacity: int, hours_month: float) -> float:
    """GPU-hours a month a workload keeps a pool of ``capacity`` GPUs busy: :func:`busy_gpu_hours`, at most the whole
    pool for the hours a day it runs. A run sized wider than the pool runs longer on it, not on GPUs it lacks: at 12
    hours a day its GPU-hours past half the pool's were read as a 57% busy pool, above the 50% the schedule allows
    (review sizreview33 D-2; PL304 says the run misses its deadline there, PL313 that the pool runs out)."""
    return min(busy_gpu_hours(plan, gpus, hours_month), capacity * hours_month * plan.hours_per_day / 24)


def cpu_node_hours(plan: WorkloadPlan, cores: int, hours_month: float) -> float:
    """Node-hours a month a data-preparation job holds on a CPU pool of ``cores`` physical cores a node: the nodes its
    cores fill, its wall-clock days (at most the month's) at its hours a day (review sizreview35 D-B: counted 24 a day,
    an 8-hour job paid three times)."""
    return math.ceil((plan.cpu_cores or 0) / cores) * cpu_job_hours(plan, hours_month)


def cpu_job_hours(plan: WorkloadPlan, hours_month: float) -> float:
    """Hours a month a data-preparation job runs: its wall-clock days, at most the month's, at its hours a day."""
    return min(plan.wall_clock_days or 0.0, hours_month / 24) * plan.hours_per_day


def cpu_pool_node_hours(plans: list[WorkloadPlan], cores: int, floor: int, hours_month: float) -> float:
    """Node-hours a month a CPU pool bills: its ``floor`` of always-on nodes, and the jobs' node-hours past what the floor
    holds over the hours they run, at most the month's (review sizreview62 E4: 6 always-on nodes that held a job's 91
    cores were billed again for it; sizreview63 N5: taking the floor off each job alone billed overlapping jobs
    none)."""
    held = sum(cpu_node_hours(w, cores, hours_month) for w in plans)
    running = min(hours_month, sum(cpu_job_hours(w, hours_month) for w in plans if w.cpu_cores))
    return floor * hours_month + max(0.0, held - floor * running)


# the longest calendar month: the budget rules sum spend per calendar month (team:gpu_cost_usd:sum_month)
LONGEST_MONTH_HOURS = 31 * 24


def peak_month_gpu_hours(plan: WorkloadPlan, gpus: float, hours_month: float, capacity: int | None = None) -> float:
    """GPU-hours the busiest calendar month can hold ``gpus`` for a workload: what each site's budget share must hold
    (alicerce.plan.platform.site_budgets; review obsreview9 G2: a quarter's average at dc1, $238k, against a run's
    month there, $381.7k). A schedule declares runs per quarter, not dates, and Kueue admits the next run as soon as
    the last ends, so a quarter's runs can fall back to back in one month: three 20-day runs fill a 31-day month, not
    the 20 days one run would (review obsreview10 F4). Undeclared, one run a month (busy_gpu_hours). The rest scale
    to a 31-day month."""
    if capacity is not None:
        # a pool of ``capacity`` GPUs holds no more for it, its hours a day, as pool_gpu_hours (review sizreview34 D-1: a
        # 448-GPU run on a 256-GPU pool kept $163k of its team's budget at dc1 for GPUs the site does not have)
        return min(peak_month_gpu_hours(plan, gpus, hours_month), capacity * LONGEST_MONTH_HOURS * plan.hours_per_day / 24)
    if plan.kind in ("training", "fine-tuning"):
        # a fraction of a run a quarter (one every two quarters) still fills its month whole; runs that overlap (PL320)
        # each hold their GPUs, so a month holds as many runs at once as the schedule has in flight (review obsreview11
        # F3: four 30-day runs a quarter held one run's 31 days, below the average month)
        runs = max(1, math.ceil(plan.runs_per_quarter - 1e-9)) if plan.runs_per_quarter is not None else 1
        # a run of some hours a day holds its GPUs those hours of each day of the month (review sizreview9 F5)
        month = concurrent_runs(plan, hours_month) * LONGEST_MONTH_HOURS * plan.hours_per_day / 24
        return gpus * min(runs * run_hours(plan), month)
    return busy_gpu_hours(plan, gpus, hours_month) * LONGEST_MONTH_HOURS / hours_month


def serving_nodes(replicas: dict[int, int], per_node: int) -> int:
    """Nodes that hold serving replicas (GPUs a replica -> replicas), each whole on one node: its tensor-parallel
    group shares NVLink or PCIe, and a pod never spans nodes; one larger than a node holds whole nodes of its own.
    Largest replicas first, each into the fullest node it fits (counted by free GPUs, so a billion replicas cost no
    more than ten). Five 1-GPU replicas on 8-GPU nodes hold one node; three 4-GPU replicas hold two."""
    nodes = 0
    free: dict[int, int] = defaultdict(int)  # free GPUs -> nodes with that many
    for size, wanted in sorted(replicas.items(), reverse=True):
        count = wanted
        if size > per_node:
            nodes += count * math.ceil(size / per_node)
            continue
        for left in sorted((f for f in free if f >= size and free[f]), reverse=True):
            if not count:
                break
            fit = left // size  # replicas one such node takes
            full, rest = divmod(min(count, free[left] * fit), fit)
            free[left] -= full + (1 if rest else 0)
            free[left - fit * size] += full
            if rest:
                free[left - rest * size] += 1
            count -= full * fit + rest
        fit = per_node // size
        full, rest = divmod(count, fit)
        free[per_node - fit * size] += full
        if rest:
            free[per_node - rest * size] += 1
    return nodes + sum(free.values())


def _always_on(plan: WorkloadPlan) -> bool:
    """An always-on serving workload: its replicas hold nodes all month (not batch work)."""
    return plan.kind == "inference" and bool(plan.replicas) and bool(plan.gpus_per_replica)


def block_runs(plan: WorkloadPlan, hours_month: float) -> tuple[float, float, float]:
    """(runs a month, hours each run holds its GPUs, hours of wall clock a Capacity Block must cover for each run) of a
    workload that is not an always-on service. A training or fine-tuning run: its declared schedule (one run a month
    where none is), its run hours, its wall-clock days. Batch work (batch inference, a shared-GPU service) runs its
    hours every day of the month: a run a day of ``hours_per_day``, each needing its own day of block, since blocks are
    sold in whole days and all end at 11:30 UTC (EC2 User Guide, "Find and purchase Capacity Blocks",
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html): 3 hours a day buy 24."""
    if plan.kind in ("training", "fine-tuning") and plan.wall_clock_days is not None:
        runs = plan.runs_per_quarter / 3 if plan.runs_per_quarter is not None else 1.0
        return runs, run_hours(plan), plan.wall_clock_days * 24
    return hours_month / 24, plan.hours_per_day, plan.hours_per_day


@dataclass(frozen=True)
class Hold:
    """Nodes a workload holds on a rented pool, when: ``nodes`` for ``hours`` of each day it runs, on ``days`` of the
    month's days (a share; a schedule whose runs overlap holds more than one). Services and batch work hold theirs every
    day; a training run while it runs (:func:`pool_node_hours` lays runs one after another)."""

    workload: str
    nodes: float
    hours: float
    days: float
    daily: bool
    wall: float = 0.0  # a run: the wall-clock days one run holds its nodes
    deadline: float | None = None  # a run: the days it must end within, where it declares a deadline

    def node_hours(self, hours_month: float) -> float:
        return self.nodes * self.hours * self.days * hours_month / 24


def node_holds(
    plans: list[WorkloadPlan],
    pool: ResolvedPool,
    price: NodePrice,
    hours_month: float,
    *,
    riding: dict[str, float] | None = None,
    max_nodes: int | None = None,
) -> tuple[list[Hold], dict[str, float]]:
    """What a rented GPU pool's workloads hold (:class:`Hold`: whole nodes, and when), and each workload's own GPU-hours
    of them: what it holds, with the rest of the nodes it alone starts. The serving nodes' GPUs that neither a replica
    nor batch work fills are the services' (by the GPUs each holds): they start those nodes.

    A training run holds whole nodes for its wall clock (a 12-GPU run on 8-GPU nodes is billed two instances, not one
    and a half: review sizreview4 gap); one wider than ``max_nodes`` holds them for longer (review sizreview37 D-2). On
    Capacity Blocks each run buys the shortest duration sold that covers its wall clock, for every node it holds: two
    10-hour runs a month buy two 1-day blocks, 48 node-hours a node, where rounding the month's 20 busy hours up to a day
    bought one (review sizreview4). Serving replicas hold whole nodes all month, packed (:func:`serving_nodes`); batch
    work runs in what they leave free before it adds whole nodes, which on Capacity Blocks it buys for whole days, every
    day it runs (:func:`block_runs`; review sizreview19 F6: 3 hours a day of one p5 were billed 91 node-hours, $3,589,
    where its blocks cost 730, $28,711). ``riding``, where given, takes each batch job's GPU-hours that run in the
    serving nodes' free GPUs."""
    per_node = pool.gpus_per_node or 1
    replicas: dict[int, int] = defaultdict(int)
    own: dict[str, float] = {}
    services = [p for p in plans if _always_on(p)]
    for plan in services:
        if not plan.sharing:
            replicas[plan.gpus_per_replica or 0] += plan.replicas or 0
            own[plan.name] = (plan.gpus_per_replica or 0) * (plan.replicas or 0) * hours_month
    # services on shared GPUs: their instances or slices packed together onto whole GPUs, each packed where a GPU is
    # free (two services of 2 and 3 MIG instances on one 7-way cut GPU, with 5 more free on its node, start one node
    # between them, not one each: review sizreview39 D2); each holds what its parts are billed as (a time slice a
    # quarter of a GPU), as a service on whole GPUs holds its GPUs: the parts no service fills are the serving nodes'
    # spare, as their free GPUs are
    shared = [p for p in services if p.sharing]
    packed = packed_units(shared, pool)
    replicas[1] += packed
    for plan in shared:
        own[plan.name] = gpu_equivalents(plan, pool) * hours_month
    serving = serving_nodes(replicas, per_node)
    gpus = sum(size * n for size, n in replicas.items())
    # the serving nodes, packed together, each service's share of them by the GPUs or parts its replicas hold
    held_by = sum(own[p.name] for p in services)
    holds = [Hold(p.name, serving * own[p.name] / held_by, 24.0, 1.0, True) for p in services if held_by]
    free = serving * per_node - gpus  # whole GPUs the serving nodes leave free: a job needing more at once cannot run in them
    spare = (free + packed) * hours_month - sum(own[p.name] for p in shared)  # ... and their free GPU-hours, parts too
    for plan in plans:
        if _always_on(plan):
            continue
        units = pool_units(plan, pool)
        whole = math.ceil(units / per_node)
        runs, _, wall = block_runs(plan, hours_month)
        if plan.kind not in ("training", "fine-tuning") or plan.wall_clock_days is None:
            # batch work on shared GPUs rides the parts the services leave free on their GPUs, and needs whole free GPUs
            # only for what those do not hold (review sharedreview D2: a one-slice nightly job beside three one-slice
            # services started a node of its own where the fourth slice of their GPU was free)
            need = packed_units([*shared, plan], pool) - packed if plan.sharing else units
            used = busy_gpu_hours(plan, gpu_equivalents(plan, pool), hours_month)
            absorbed = min(spare, used) if need <= free + 1e-9 else 0.0
            if price.block_steps and absorbed < used * (1 - 1e-9):
                # Capacity Blocks are sold by the whole instance and day: a job the spare does not hold whole buys nodes
                # of its own for all of it, not half a node (review sharedreview2 D1: $14,355 where the month rose $28,711)
                absorbed = 0.0
            spare -= absorbed
            if riding is not None:
                riding[plan.name] = absorbed
            rest = (used - absorbed) / used if used else 0.0
            # what the serving nodes cannot hold starts nodes of its own, whole, its hours every day: a 1-GPU batch job on
            # 4-GPU nodes bills the node it starts, not a quarter of it (review sizreview10 F11: $638 where the
            # g6e.12xlarge bills $2,553); on Capacity Blocks a whole day of block for each day it runs
            daily = busy_gpu_hours(plan, units, hours_month) / max(1, units) / (hours_month / 24)  # the hours a day it runs
            hours = block_hours(price.block_steps, wall) if price.block_steps else daily
            held = Hold(plan.name, rest * whole, min(24.0, hours), 1.0, True)
            own[plan.name] = absorbed + held.node_hours(hours_month) * per_node
            holds.append(held)
            continue
        nodes = min(whole, max_nodes) if max_nodes else whole
        longer = whole / nodes if nodes else 1.0
        if price.block_steps:  # every node for the whole block that covers its wall clock, around the clock
            hours, span = 24.0, block_hours(price.block_steps, wall)
        else:
            hours, span = plan.hours_per_day, (plan.wall_clock_days or 0.0) * 24
        # the declared schedule spread over the quarter, else one run a month (a longer one holds the month)
        days = runs * span / hours_month * longer if plan.runs_per_quarter is not None else min(1.0, span * longer / hours_month)
        held = Hold(plan.name, nodes, hours, days, False, plan.wall_clock_days or 0.0, plan.deadline_days)
        own[plan.name] = held.node_hours(hours_month) * per_node
        holds.append(held)
    # what the serving nodes hold that neither a replica nor batch work fills is the services' that start those nodes
    # (their replicas need fewer GPUs than the instances have): split over them by the GPUs or parts they hold
    for plan in services:
        own[plan.name] += spare * own[plan.name] / held_by if held_by else 0.0
    return holds, own


def pool_node_hours(holds: list[Hold], floor: int, cap: int, hours_month: float) -> float:
    """Node-hours a month a rented pool bills: at every hour the larger of its floor (always-on and reserved nodes,
    billed whether used or not) and the nodes its workloads hold then, at most ``cap`` nodes. One timeline for the
    pool's month, the forecast and placement's marginal cost (review sizreview37 D-1, D-5: busy node-hours were set
    against the floor as one total, so a batch job's 3 nodes for 8 hours a day fit one reserved node's 24 hours and
    billed nothing, and a run beside a service on the reservation was billed as if the service held none of it).

    Every day the services hold their nodes and batch work its nodes its hours a day, all from the same hour (the
    peak a day can reach); training runs follow one another through the month (Kueue admits the next as the last
    ends), each its hours a day, on top, in the order that bills least (as a queue that packs them well does; the
    spec's order decided it: review sizreview38 D1). A run wider than the nodes the services leave under the cap runs
    on those, for longer (sizreview38 G4); what the cap still turns away at some hour runs later, in idle reserved
    nodes first."""
    runs = sorted((h for h in holds if not h.daily), key=lambda h: (-h.nodes, -h.days, h.workload))
    daily = [h for h in holds if h.daily]
    serving = sum(h.nodes for h in daily if h.hours >= 24.0)
    room = max(floor, cap) - serving
    # a run that cannot wait for the others within its deadline starts with them (review sizreview39 D1: one due in 10
    # days was laid after another 8.8-day run inside the reservation, where placement had found it cannot wait), judged
    # on its wall clock as sized, as placement and the peak judge it (sizreview42 D4)
    late = late_runs([Queued(r.workload, r.wall, r.deadline) for r in runs])
    if room > 0:  # the nodes a run can have beside the services: a wider one runs on those, for longer
        runs = [replace(r, nodes=room, days=r.days * r.nodes / room) if r.nodes > room else r for r in runs]
    beside = [r for r in runs if r.workload in late]
    queued = [r for r in runs if r.workload not in late]
    if len(queued) > 5:  # past 120 orders, the largest first
        return _timeline(daily, queued, beside, floor, cap, hours_month)
    # the least of every order (runs that overlap wrap round the month, so even a rotation of one order bills
    # otherwise), the first of equals in the largest-first order
    # (rounded, so that float noise does not pick among equals)
    return min((_timeline(daily, list(order), beside, floor, cap, hours_month) for order in itertools.permutations(queued)),
               key=lambda r: round(r, 6))  # fmt: skip


def _timeline(  # noqa: PLR0917 - the holds and the pool's bounds, called from pool_node_hours only
    daily: list[Hold], runs: list[Hold], beside: list[Hold], floor: int, cap: int, hours_month: float
) -> float:
    """:func:`pool_node_hours` for one order of the ``runs``, one after another, with the runs ``beside`` them from the
    month's first day."""
    cuts, at = {0.0, 1.0}, 0.0
    spans: list[tuple[float, float]] = []
    for run in runs:
        spans.append((at, run.days))
        at += run.days
        cuts |= {(at - run.days) % 1.0, at % 1.0}
    for run in beside:
        spans.append((0.0, run.days))
        cuts.add(run.days % 1.0)
    runs = [*runs, *beside]
    top = max(floor, cap)
    total = idle = spare = turned = 0.0  # turned: node-hours the cap turned away at their hour, to run later
    for start, end in itertools.pairwise(sorted(cuts)):
        if end - start < 1e-12:
            continue
        mid = (start + end) / 2
        # runs in flight on these days, each as many times as its schedule overlaps itself there
        day = daily + [run for run, (begin, span) in zip(runs, spans, strict=True) for _ in range(_times(begin, span, mid))]
        hours = sorted({0.0, 24.0} | {min(24.0, h.hours) for h in day})
        for low, high in itertools.pairwise(hours):
            weight = (high - low) * (end - start) * hours_month / 24
            held = sum(h.nodes for h in day if h.hours > low)
            total += max(floor, min(held, top)) * weight
            turned += max(0.0, held - top) * weight
            idle += max(0.0, floor - held) * weight
            spare += max(0.0, top - max(floor, held)) * weight
    return total + min(spare, max(0.0, turned - idle))  # what the idle floor cannot take starts nodes later


def _times(begin: float, span: float, at: float) -> int:
    """How many times a run laid from ``begin`` for ``span`` of the month (wrapping round it) covers the day ``at``."""
    return max(0, math.ceil(begin + span - at - 1e-12) - math.ceil(begin - at - 1e-12))


@dataclass(frozen=True)
class BlockBooking:
    """What one workload on a Capacity Block pool buys for itself, against what it uses: a training run's blocks (per
    run), or a month of the days of block that batch work and serving hold (review sizreview19 F3: the pool's one
    average showed a $1,888 run back at $3,001 and a $944 one at $387)."""

    per_run: bool  # training and fine-tuning: the figures of one run; else of a month
    instances: float  # instances it buys blocks for (batch beside serving: the share of instances its GPU-hours take)
    runs: float  # runs a month (batch and serving: days)
    used_hours: float  # hours each run holds its GPUs
    block_hours: float  # hours of block each run buys: the shortest duration sold that covers its wall clock
    usd: float  # what it pays: a run, or a month
    gpu_hours: float  # the GPU-hours its pods hold for that: what the cost rules see
    source: str  # where the durations sold come from (prices.yaml capacityBlocks.durationSource)
    # batch work: the instances its pods occupy while they run, its GPUs over a node's where it rides the serving nodes'
    # free GPUs, the whole nodes it starts where it does not (None: ``instances``, the instances it buys blocks for)
    held_instances: float | None = None

    @property
    def usd_per_gpu_hour(self) -> float | None:
        return self.usd / self.gpu_hours if self.gpu_hours > 0 else None

    def figures(self) -> tuple[Figure, ...]:
        """Hours used against hours paid, and the price of a GPU-hour held that follows (`plan --explain`)."""
        what, span = ("a run", "a run") if self.per_run else ("a day", "a month")
        # a month's "instances" are whole days of block: a job riding the serving nodes' free GPUs takes the share of them
        # its GPU-hours fill (1 GPU x 3 h of an 8-GPU node's 24: 1/64), so the label says so (review sizreview20 F9)
        label = "instances" if self.per_run else "instances for whole days"
        inputs: dict[str, Any] = {label: self.instances, f"hours used {what}": self.used_hours}
        inputs[f"block hours {what}"] = self.block_hours
        if not self.per_run:
            inputs["days a month"] = self.runs
        paid = self.instances * self.block_hours * (1.0 if self.per_run else self.runs)
        # the node-hours its pods hold: a 1-GPU job riding a service's p5 3 hours a day holds 1/8 x 3 x 30.42 = 11.41;
        # ``instances`` (1/64 there: the share of a whole day of block its GPU-hours take) has the hours folded in
        # already, and node-hours used read 1.426 (review sizreview20 F9)
        held = self.instances if self.held_instances is None else self.held_instances
        if self.held_instances is not None:
            inputs["instances its pods hold"] = held
        used = held * self.used_hours * (1.0 if self.per_run else self.runs)
        inputs["node-hours used"] = used
        factor = Factor("block hours bought: 1-day steps up to 14 days, then 7-day steps up to 182; every block ends at "
                        "11:30 UTC", self.block_hours, self.source)  # fmt: skip
        return (
            Figure(f"Capacity Block node-hours paid {span}", paid, "node-hours", f"{label} x block hours {what} (the "
                   f"shortest duration sold that covers its wall clock){'' if self.per_run else ' x days a month'}",
                   inputs, (factor,)),
            Figure("USD per GPU-hour held", self.usd_per_gpu_hour, "USD/GPU-h", f"its own blocks' USD {span} / the GPU-hours "
                   "its pods hold: the price its pods' cost rule charges", {"USD": self.usd, "GPU-hours held": self.gpu_hours}),
        )  # fmt: skip


def block_bookings(plans: list[WorkloadPlan], pool: ResolvedPool, price: NodePrice, hours_month: float) -> dict[str, BlockBooking]:
    """Each workload's own Capacity Blocks on a Capacity Block pool (:class:`BlockBooking`); none for other prices.
    A run pays its instances for the whole block it buys; batch work and serving their part of the month's blocks
    (:func:`node_holds`)."""
    if not price.block_steps or price.usd_per_hour is None:
        return {}
    per_node = pool.gpus_per_node or 1
    absorbed: dict[str, float] = {}
    _, own = node_holds(plans, pool, price, hours_month, riding=absorbed)
    out = {}
    for plan in plans:
        if plan.name not in own or plan.gpus is None:
            continue
        units = pool_units(plan, pool)
        runs, used, wall = block_runs(plan, hours_month)
        if plan.kind in ("training", "fine-tuning") and plan.wall_clock_days is not None:
            whole = math.ceil(units / per_node)
            bought = block_hours(price.block_steps, wall)
            usd = whole * bought * price.usd_per_hour
            out[plan.name] = BlockBooking(True, whole, runs, used, bought, usd, units * used, price.block_source)
            continue
        # a month: its part of the month's blocks (a whole day of block for each day it runs, where it starts nodes of
        # its own) over the GPU-hours it holds in them
        if _always_on(plan):
            used = 24.0
        bought = block_hours(price.block_steps, min(used, 24.0))
        nodes = own[plan.name] / per_node / (bought * runs) if runs else 0.0
        usd = own[plan.name] / per_node * price.usd_per_hour
        held = busy_gpu_hours(plan, gpu_equivalents(plan, pool), hours_month)  # as the cost rules count its GPU-hours
        occupied = None
        if plan.name in absorbed:  # batch work: its share riding the serving nodes, the rest on whole nodes it starts
            riding = absorbed[plan.name] / held if held else 0.0
            occupied = riding * units / per_node + (1 - riding) * math.ceil(units / per_node)
        out[plan.name] = BlockBooking(False, nodes, runs, used, bought, usd, held, price.block_source, occupied)
    return out


def rented_node_hours(
    plans: list[WorkloadPlan], pool: ResolvedPool, price: NodePrice, hours_month: float, *, max_nodes: int | None = None
) -> float:
    """Node-hours a month a rented GPU pool bills for ``plans`` above and within its floor, the always-on and reserved
    nodes (:func:`pool_node_hours` over :func:`node_holds`). ``max_nodes``: the pool grown past its declared max (the
    forecast's demand)."""
    scaling = pool.spec.scaling
    most = scaling.max if max_nodes is None else max_nodes
    holds, _ = node_holds(plans, pool, price, hours_month, max_nodes=most)
    return pool_node_hours(holds, max(scaling.min, price.reserved_nodes), most, hours_month)


def grown(w: Workload, quarters: int) -> Workload:
    """``w`` with its demand grown for ``quarters`` quarters."""
    if w.growth is None or quarters == 0:
        return w
    factor = (1 + w.growth.per_quarter) ** quarters
    update: dict[str, Any] = {}
    if w.tokens is not None:
        update["tokens"] = max(1, round(w.tokens * factor))
    if w.traffic is not None:
        traffic: dict[str, Any] = {}
        if w.traffic.peak_rps is not None:
            traffic["peak_rps"] = w.traffic.peak_rps * factor
        if w.traffic.concurrency is not None:
            traffic["concurrency"] = max(1, math.ceil(w.traffic.concurrency * factor))
        update["traffic"] = w.traffic.model_copy(update=traffic)
    if w.dataset is not None and w.kind == "data-prep":
        update["dataset"] = w.dataset.model_copy(update={"size": max(1, round(w.dataset.size * factor))})
    return w.model_copy(update=update)


def forecast(
    platform: ResolvedPlatform, choices: dict[str, Choice], pools: list[PoolPlan], catalog: Catalog, prices: dict[str, NodePrice | None]
) -> Forecast:
    sizing = catalog.sizing
    hours_month = sizing.hoursPerMonth.value
    horizon = platform.spec.costs.horizon_quarters
    resolved = {p.name: p for p in platform.pools}
    specs = {w.name: w for w in platform.spec.workloads}
    growing = tuple(w.name for w in platform.spec.workloads if w.growth is not None)
    rows: list[QuarterPool] = []
    totals: list[float] = []
    demand_totals: list[float] = []
    over: dict[str, tuple[int, int, int]] = {}
    for quarter in range(horizon + 1):
        plans: list[WorkloadPlan] = []
        for name, choice in choices.items():
            base = choice.plan
            if not base.runnable:
                continue
            if name in growing and quarter:
                plans.append(plan_workload(grown(specs[name], quarter), choice.placement, sizing, []))
            else:
                plans.append(base)
        total = demand_total = 0.0
        for pool in pools:
            rp = resolved[pool.name]
            mine = [p for p in plans if p.pool == pool.name and p.runnable]
            capacity = pool.declared_max * pool.gpus_per_node
            peak = pool_peak(mine, rp, hours_month) if pool.gpus_per_node else 0
            hours = sum(pool_gpu_hours(p, gpu_equivalents(p, rp), capacity, hours_month) for p in mine) if pool.gpus_per_node else 0.0
            utilization = min(1.0, hours / (capacity * hours_month)) if capacity else None
            cost: float | None = None
            demand: float | None = None
            if pool.owned_cost is not None:
                cost = pool.owned_cost.at(utilization or 0.0)
                extra = max(0, peak - capacity)  # GPUs to buy: at today's full-utilisation TCO per GPU
                demand = cost + (extra * pool.owned_cost.at(1.0) / pool.owned_cost.gpus if pool.owned_cost.gpus else 0.0)
            elif prices.get(pool.name) is not None and pool.gpus_per_node:
                price = prices[pool.name]
                assert price is not None
                cost = monthly_node_cost(price, rented_node_hours(mine, rp, price, hours_month))
                # the pool grown to hold its peak: its runs at their own width, its month past the declared max
                needed = max(pool.declared_max, math.ceil(peak / pool.gpus_per_node))
                demand = monthly_node_cost(price, rented_node_hours(mine, rp, price, hours_month, max_nodes=needed))
            elif pool.monthly_cost_usd is not None:
                cost = demand = pool.monthly_cost_usd  # CPU pools: not forecast, carried as they are today
            total += cost or 0.0
            demand_total += demand or 0.0
            rows.append(QuarterPool(quarter, pool.name, peak, capacity, utilization, cost, demand))
            if pool.gpus_per_node and peak > capacity and pool.name not in over:
                over[pool.name] = (quarter, peak, capacity)
        totals.append(total)
        demand_totals.append(demand_total)
    runs_out = tuple((pool, q, need, cap) for pool, (q, need, cap) in sorted(over.items()) if q > 0)
    return Forecast(horizon, tuple(rows), tuple(totals), tuple(demand_totals), runs_out, growing)
