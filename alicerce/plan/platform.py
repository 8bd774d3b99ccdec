"""The platform-level plan: workloads placed on pools, pools and tiers sized and costed, findings with numbers.

Pure: reads a ResolvedPlatform and the catalog, returns a SizingPlan. Findings compare what the
workloads need with what the spec declares, in the words a capacity review would use, each under a
stable check id (alicerce/plan/findings.py). Costs cover only what can run: a workload the plan
cannot size is reported and left out of every total.
"""

from __future__ import annotations

import datetime
import itertools
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from alicerce.catalog import Catalog, load_catalog
from alicerce.catalog.fsx import GIB as FSX_GIB
from alicerce.catalog.models import Gpu, Sizing
from alicerce.plan.figures import Factor, days_text, deadline_text, rounded
from alicerce.plan.findings import PlanFinding, apply_waivers
from alicerce.plan.growth import (
    LONGEST_MONTH_HOURS,
    BlockBooking,
    Forecast,
    block_bookings,
    block_runs,
    busy_gpu_hours,
    cpu_node_hours,
    cpu_pool_node_hours,
    forecast,
    held_while,
    late_runs,
    peak_month_gpu_hours,
    pool_gpu_hours,
    pool_peak,
    queued_run,
    rented_node_hours,
    run_hours,
)
from alicerce.plan.kpi import KpiTarget, kpi_targets
from alicerce.plan.placement import Choice, choose, dataset_sites, sized_on
from alicerce.plan.pools import PoolPlan, gpu_equivalents, packed_units, pool_units
from alicerce.plan.pricing import (
    HOURS_PER_MONTH,
    NodePrice,
    RentalOption,
    UnpricedOption,
    block_hours,
    monthly_node_cost,
    node_price,
    rental_options,
    run_block_cost,
    unpriced_options,
)
from alicerce.plan.sizing import GIB, Placement, WorkloadPlan, plan_workload
from alicerce.plan.tco import OwnedPoolCost, SiteExtras, owned_pool_cost, site_extras
from alicerce.resolve.eligibility import eligible
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedTeam, ResolvedTier
from alicerce.resolve.platform import file_system
from alicerce.spec.models import TimeSlicing, Workload


@dataclass(frozen=True)
class TierPlan:
    name: str
    declared_gbps: float | None
    read_gbps: float
    write_gbps: float
    fsx: dict[str, Any] | None  # the FSx configuration that meets the need, on AWS
    stored: dict[str, Any] | None = None  # billed by the GB it holds (an object store, an elastic file system)

    @property
    def usd_per_month(self) -> float | None:
        """What the tier bills a month, where the plan can say."""
        for priced in (self.fsx, self.stored):
            if priced is not None and priced.get("usdPerMonth") is not None:
                return float(priced["usdPerMonth"])
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "declared_gbps": self.declared_gbps,
            "read_gbps": round(self.read_gbps, 3),
            "write_gbps": round(self.write_gbps, 3),
            "fsx": self.fsx,
            "stored": self.stored,
        }


def owning_wins(owned: OwnedPoolCost, option: RentalOption) -> tuple[float, float] | None:
    """The utilisations (low, high) within [0, 1] at which owning costs less a month than renting the
    same GPUs through ``option``; None when it never does.

    Owned month = F + V x u. Per used hour: rent = R x u (R = price x GPUs x 730), so owning wins above
    u* = F / (R - V). Held (billed used or not): rent = R, so owning wins below (R - F) / V."""
    fixed, variable = owned.fixed_usd, owned.variable_usd_at_full
    full = option.usd_per_gpu_hour * owned.gpus * HOURS_PER_MONTH
    if option.held:
        if fixed >= full:
            return None
        return (0.0, 1.0 if variable <= 0 else min(1.0, (full - fixed) / variable))
    if full <= variable:
        return None
    low = fixed / (full - variable)
    return (low, 1.0) if low <= 1 else None


def cheapest_by_utilization(owned: OwnedPoolCost, options: tuple[RentalOption, ...]) -> tuple[tuple[float, float, str], ...]:
    """Which of owning and each rental option costs least a month, band by band of utilisation in [0, 1]:
    (from, to, "owned" or the option's purchase). Every cost is a line in u, so the bands break only
    where two lines cross."""
    lines = [("owned", owned.fixed_usd, owned.variable_usd_at_full)]
    for o in (o for o in options if not o.interruptible):
        full = o.usd_per_gpu_hour * owned.gpus * HOURS_PER_MONTH
        lines.append((o.purchase, full, 0.0) if o.held else (o.purchase, 0.0, full))
    cuts = {0.0, 1.0}
    for i, (_, a1, b1) in enumerate(lines):
        for _, a2, b2 in lines[i + 1 :]:
            if b1 != b2 and 0 < (u := (a2 - a1) / (b1 - b2)) < 1:
                cuts.add(u)
    points = sorted(cuts)
    bands: list[tuple[float, float, str]] = []
    for low, high in itertools.pairwise(points):
        mid = (low + high) / 2
        winner = min(lines, key=lambda line: line[1] + line[2] * mid)[0]
        if bands and bands[-1][2] == winner:
            bands[-1] = (bands[-1][0], high, winner)
        else:
            bands.append((low, high, winner))
    return tuple(bands)


@dataclass(frozen=True)
class OwnVsRent:
    """Is an owned pool cheaper than renting the same GPUs, against every way the catalog and the spec
    price renting them, and from which utilisation and quarter."""

    pool: str
    gpu: str
    owned: OwnedPoolCost
    rental: str | None  # instance type (on-demand)
    rental_region: str
    rental_usd_per_gpu_hour: float | None  # on-demand
    rental_factors: tuple[Factor, ...]
    break_even_utilization: float | None  # against on-demand
    cheaper_from_quarter: int | None  # first forecast quarter at which owning costs less than every option (0: today)
    options: tuple[RentalOption, ...] = ()
    # sold for this GPU here with no published price: listed, not weighed (review sizreview23 G4)
    unpriced: tuple[UnpricedOption, ...] = ()

    @property
    def owned_usd_per_gpu_hour(self) -> float | None:
        return self.owned.usd_per_gpu_hour()

    def wins(self, option: RentalOption) -> tuple[float, float] | None:
        return owning_wins(self.owned, option)

    def bands(self) -> tuple[tuple[float, float, str], ...]:
        return cheapest_by_utilization(self.owned, self.options)

    def cheapest_at(self, utilization: float) -> str:
        """Owned, or the purchase option that costs least at ``utilization``."""
        owned = self.owned.at(utilization)
        held = [o for o in self.options if not o.interruptible]
        best = min(held, key=lambda o: o.monthly_usd(self.owned.gpus, utilization), default=None)
        if best is None or owned <= best.monthly_usd(self.owned.gpus, utilization):
            return "owned"
        return best.purchase

    @staticmethod
    def describe(option: RentalOption, wins: tuple[float, float] | None) -> str:
        if wins is None:
            return f"{option.purchase} always"
        low, high = wins
        if low <= 0 and high >= 1:
            return f"owning always vs {option.purchase}"
        return f"owning vs {option.purchase} " + (f"above {low:.0%}" if low > 0 else f"below {high:.0%}")

    def _block_assumption(self) -> str:
        """What a Capacity Block band assumes (review sizreview20 F8): its price per used hour is the whole blocks of this
        pool's runs (a 59-day run buys 63 days: x1.068), so the band holds at the utilisations the same runs give run more
        or less often, down to 0%; a schedule of shorter runs rounds more up (whole days: 3 hours a day buy 24, x8) and
        pays more a used hour than the line says. Empty where no band is the block's."""
        block = next((o for o in self.options if o.purchase == "capacity-block"), None)
        if block is None or all(w != "capacity-block" for *_, w in self.bands()):
            return ""
        bought = next((f.value for f in block.factors if f.name.startswith("whole blocks")), 1.0)
        return (
            f"; capacity-block at this pool's runs' whole blocks, x{bought:.3f} the hours used: at other utilisations "
            "the same runs more or less often, and shorter runs pay more a used hour (whole days: 3 h a day buy 24)"
        )

    def _not_weighed(self) -> str:
        """The options sold here without a price: the bands leave them out, and say so (review sizreview23 G4)."""
        if not self.unpriced:
            return ""
        listed = "; ".join(f"{o.purchase} ({o.instance}), {o.short}" for o in self.unpriced)
        return f"; not weighed: {listed} (PL311)"

    def verdict(self) -> str:
        u = self.owned.utilization
        if not self.options:
            return f"no rental price for {self.gpu} in {self.rental_region}{self._not_weighed()}"
        bands = ", ".join(f"{w} {lo:.0%}-{hi:.0%}" for lo, hi, w in self.bands()) + self._block_assumption() + self._not_weighed()
        if not self.owned.complete:
            # without the servers' price the owned month is a lower bound (PL311): owning can only look cheaper than it is
            return (f"no verdict: the owned month leaves out the servers (no price, PL311), so it is a lower bound; declare "
                    f"serverUsd for pool {self.pool} (with that bound, cheapest by utilisation: {bands})")  # fmt: skip
        winner = self.cheapest_at(u)
        head = ("owning is cheaper" if winner == "owned" else f"renting ({winner}) is cheaper") + f" at {u:.0%} utilisation"
        when = ""
        if winner != "owned":
            when = (
                f"; owning wins from quarter {self.cheaper_from_quarter} of the forecast"
                if self.cheaper_from_quarter is not None
                else "; the forecast never reaches it"
            )
        spot = ""
        for o in (o for o in self.options if o.interruptible and o.monthly_usd(self.owned.gpus, u) < self.owned.at(u)):
            wins = self.wins(o)
            upto = f" below {wins[0]:.0%}" if wins is not None and wins[0] > 0 else ""
            spot = f"; {o.purchase} costs less{upto} where runs survive interruption (not weighed: it can be reclaimed)"
        return f"{head} (cheapest by utilisation: {bands}){when}{spot}"

    def to_json(self) -> dict[str, Any]:
        return {
            "pool": self.pool, "gpu": self.gpu, "owned": self.owned.to_json(),
            "rental": {"instance": self.rental, "region": self.rental_region, "usd_per_gpu_hour": rounded(self.rental_usd_per_gpu_hour),
                       "factors": [f.to_json() for f in self.rental_factors]},
            "options": [
                {"purchase": o.purchase, "instance": o.instance, "usd_per_gpu_hour": rounded(o.usd_per_gpu_hour),
                 "billed": "held" if o.held else "used", "interruptible": o.interruptible,
                 "owning_wins": None if (w := self.wins(o)) is None else {"from": rounded(w[0]), "to": rounded(w[1])},
                 "factors": [f.to_json() for f in o.factors]}
                for o in self.options
            ],
            "unpriced_options": [{"purchase": o.purchase, "instance": o.instance, "why": o.why, "short": o.short} for o in self.unpriced],
            "cheapest_by_utilization": [{"from": rounded(lo), "to": rounded(hi), "option": w} for lo, hi, w in self.bands()],
            "break_even_utilization": rounded(self.break_even_utilization), "cheaper_from_quarter": self.cheaper_from_quarter,
            "verdict": self.verdict(),
        }  # fmt: skip


@dataclass(frozen=True)
class UnitCost:
    workload: str
    team: str
    pool: str | None
    cost_per_run_usd: float | None  # training and fine-tuning
    monthly_usd: float | None  # serving
    usd_per_million_tokens: float | None  # serving: the month over its input + output tokens at the mean rate

    def to_json(self) -> dict[str, Any]:
        return {k: rounded(v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class SizingPlan:
    environment: str
    workloads: tuple[WorkloadPlan, ...]
    pools: tuple[PoolPlan, ...]
    storage: tuple[TierPlan, ...]
    findings: tuple[PlanFinding, ...]
    monthly_cost_usd: float = 0.0
    waived: tuple[PlanFinding, ...] = ()
    placements: dict[str, str] = field(default_factory=dict)  # workload -> why its pool
    unpriced: tuple[str, ...] = ()  # workloads left out of the totals (cannot run)
    cost_breakdown: dict[str, float] = field(default_factory=dict)
    showback: dict[str, float] = field(default_factory=dict)  # team -> USD per month
    budgets: dict[str, float] = field(default_factory=dict)
    own_vs_rent: tuple[OwnVsRent, ...] = ()
    unit_costs: tuple[UnitCost, ...] = ()
    sites: tuple[SiteExtras, ...] = ()
    forecast: Forecast | None = None
    assumptions: dict[str, Any] = field(default_factory=dict)
    kpi_targets: tuple[KpiTarget, ...] = ()  # what the KPI recording rules should read (alicerce.plan.kpi)
    # team -> site -> the part of its budget that site's Prometheus watches (site_budgets; the budget alerts and guard)
    site_budgets: dict[str, dict[str, float]] = field(default_factory=dict)

    UNITS: ClassVar[dict[str, str]] = {
        "model_state_gib": "GiB", "memory_per_gpu_gib": "GiB",
        "gpus": "GPUs, or on a shared pool the MIG instances or time slices the replicas are scheduled on",
        "gpu_share": "the GPU each of gpus is (1 on whole GPUs; a MIG instance by its compute slices, a time slice 1 / the slices a GPU)",
        "gpu_hours": "GPU-hours of whole GPUs, gpus x gpuShare x hours (training: whole run; serving: per month)",
        "wall_clock_days": "days", "cost_usd": "USD (training: whole run; serving: per month), at the pool's price or owned TCO",
        "showback_usd": "USD (same period), the GPU-hours at the pool's billed rate: what showback charges the team",
        "cost_capped": "a service its pool cannot hold (PL305): cost and showback are the pool's month, not its GPU-hours'",
        "checkpoint_gib": "GiB", "checkpoint_write_gbps": "GB/s", "dataset_read_gbps": "GB/s",
        "network_gbps_per_gpu": "Gbit/s", "tokens_per_second_per_replica": "output tokens/s", "mfu": "of dense BF16 peak",
    }  # fmt: skip

    def to_json(self, explain: bool = False, tco: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "environment": self.environment,
            "units": self.UNITS,
            "workloads": [w.to_json(explain) for w in self.workloads],
            "placements": self.placements,
            "pools": [p.to_json(explain) for p in self.pools],
            "storage": [t.to_json() for t in self.storage],
            "findings": [f.to_json() for f in self.findings],
            "waived": [f.to_json() for f in self.waived],
            # the total of the cents shown, so the document adds up to the cent (the rounded parts of a total
            # can sum a cent away from the rounded total)
            "monthly_cost_usd": round(sum(round(v, 2) for v in self.cost_breakdown.values()), 2)
            if self.cost_breakdown
            else round(self.monthly_cost_usd, 2),
            "cost_breakdown": {k: round(v, 2) for k, v in self.cost_breakdown.items()},
            "unpriced_workloads": list(self.unpriced),
            "kpi_targets": [k.to_json() for k in self.kpi_targets],
        }
        if tco:
            out["tco"] = {
                "own_vs_rent": [o.to_json() for o in self.own_vs_rent],
                "unit_costs": [u.to_json() for u in self.unit_costs],
                "showback": {k: round(v, 2) for k, v in self.showback.items()},
                "budgets": self.budgets,
                "sites": [
                    {
                        "site": s.site,
                        "storage_tb": rounded(s.storage_tb),
                        "storage_gbps": rounded(s.storage_gbps),
                        "storage_usd": rounded(s.storage_usd),
                        "connectivity_usd": rounded(s.connectivity_usd),
                        "factors": [f.to_json() for f in s.factors],
                    }
                    for s in self.sites
                ],
                "forecast": self.forecast.to_json() if self.forecast else None,
            }
        return out


def _candidates(platform: ResolvedPlatform, chosen: Gpu | None) -> list[Gpu]:
    seen = {p.gpu.id: p.gpu for p in platform.pools if p.gpu is not None}
    if chosen is not None:
        seen.setdefault(chosen.id, chosen)
    return [seen[k] for k in sorted(seen)]


def _no_pool_text(w: Workload, platform: ResolvedPlatform, gpu: str) -> str:
    """PL301's words: where the pin alone left out the pools of the workload's kind, it says so, not that no pool runs
    the kind (review sizreview25 N7: an A100 training pool existed beside an H100 pin)."""
    others = [f"{p.name} ({p.gpu.id if p.gpu else 'cpu'})" for _, p in eligible(w, platform, None)] if w.accelerator else []
    if others:
        return (f"no pool in {platform.environment} of the pinned {w.accelerator} runs {w.kind} workloads, only "
                f"{', '.join(others)}; sized on {gpu}")  # fmt: skip
    return f"no pool in {platform.environment} runs {w.kind} workloads; sized on {gpu}"


# The last plan and what it was made from. `generate` plans an environment for its report and again for each site's
# cost rules (one environment, four sites: five plans, a quarter of a prod generate's CPU time); the platform and the plan are
# frozen records, so the same platform object on the same day with the same catalog gets the same plan back.
_LAST: list[tuple[ResolvedPlatform, Catalog, datetime.date, SizingPlan]] = []  # at most one


def plan_platform(platform: ResolvedPlatform, catalog: Catalog | None = None, today: datetime.date | None = None) -> SizingPlan:
    """Size every workload of an environment, place it, then size and cost its pools and storage tiers."""
    catalog = catalog or load_catalog()
    today = today or _today()
    if _LAST and _LAST[0][0] is platform and _LAST[0][1] is catalog and _LAST[0][2] == today:
        return _LAST[0][3]
    plan = _plan(platform, catalog, today)
    _LAST[:] = [(platform, catalog, today, plan)]
    return plan


def _plan(platform: ResolvedPlatform, catalog: Catalog, today: datetime.date) -> SizingPlan:
    sizing = catalog.sizing
    costs = platform.spec.costs
    hours_month = sizing.hoursPerMonth.value
    findings: list[PlanFinding] = []
    prices = {p.name: node_price(p, catalog, costs) for p in platform.pools}
    for pool_name, price in prices.items():
        for issue in price.issues if price else ():
            findings.append(PlanFinding(issue.check, pool_name, issue.message))
        findings += _stale_pool_price(price, today, catalog)
    # on-prem pools at full utilisation, only to know the power a busy GPU-hour adds (placement's marginal cost)
    staff = staff_shares(platform)
    owned_full = {
        p.name: owned_pool_cost(p, costs, catalog, 1.0, staff_share=staff.get(p.name))
        for p in platform.pools
        if p.owned and p.gpu is not None
    }

    def marginal(pool: ResolvedPool, plan: WorkloadPlan) -> float | None:
        if pool.name in owned_full:  # the power its GPU-hours a month draw, a month as every pool's "adds" is (review
            # sizreview41 D3: a run's whole 886,045 GPU-hours were set against rented pools' months)
            month = busy_gpu_hours(plan, gpu_equivalents(plan, pool), hours_month)
            return month * owned_full[pool.name].marginal_usd_per_gpu_hour()
        price = prices.get(pool.name)
        if price is None or price.usd_per_hour is None:
            return None
        if pool.gpu is None:  # CPU pool: the nodes that hold the cores, for as long as the job runs
            return cpu_node_hours(plan, pool.instance.cores if pool.instance else 1, hours_month) * price.usd_per_hour
        if price.block_steps and plan.kind in ("training", "fine-tuning"):
            blocks = _run_blocks(price, pool, plan)  # a run buys its own blocks, whatever the others hold
            if blocks is not None:
                return blocks
        # what the pool's month rises by, on the timeline that bills it: the always-on and reserved nodes the
        # workloads placed before it leave free cost it nothing, the nodes it holds above them cost what they are
        # held (review sizreview37 D-4: a second service on a reservation the first filled "added $0"; D-1, D-5: a
        # batch job's 3 nodes 8 hours a day on 1 reserved node added $26,786 where the month stayed put); on Capacity
        # Blocks the same for services and batch work, whose blocks the month buys (three one-slice services on one
        # block's node each "added $28,711", counting only the pool's minimum as free: review sharedreview D3)
        # at the nodes it needs where the pool is too small for it alone (PL305 says so): 12 one-GPU replicas on
        # an 8-node pool add 12 nodes' month, not the 8 the pool's month is capped at; else within the pool's max,
        # as its month is billed (review sizreview43 D1: a run the month stretches onto the 2 nodes a service
        # leaves under the max, within the reservation, was priced 2 nodes past it, $23,329 where the month rose $0)
        before = others(pool, plan)
        most = max(pool.spec.scaling.max, math.ceil(pool_units(plan, pool) / pool.gpus_per_node))
        after = rented_node_hours([*before, plan], pool, price, hours_month, max_nodes=most)
        held = rented_node_hours(before, pool, price, hours_month, max_nodes=most)
        return (after - held) * price.usd_per_hour

    pools_by_name = {p.name: p for p in platform.pools}
    # each pool's workloads: those pinned to it from the start, wherever the spec lists them (review sizreview40 D1: a
    # service pinned to a reservation and listed last was not there when the runs before it were priced, so each
    # "added $0" where it pushes a node past the reservation), then each other one as it is placed
    placed: dict[str, dict[str, WorkloadPlan]] = defaultdict(dict)
    for w in platform.spec.workloads:
        if (pool := pools_by_name.get(w.pool or "")) is not None and pool.gpu is not None:
            plan = plan_workload(w, sized_on(w, pool, catalog), sizing, [])
            if plan.runnable and not any(i.check in ("PL303", "PL322") for i in plan.issues) and (plan.min_gpus or 0) <= pool.max_gpus:
                placed[pool.name][w.name] = plan

    def others(pool: ResolvedPool, plan: WorkloadPlan) -> list[WorkloadPlan]:
        """The workloads on the pool besides ``plan``."""
        return [p for name, p in placed[pool.name].items() if name != plan.name]

    def committed(pool: ResolvedPool, plan: WorkloadPlan) -> int:
        """GPUs the other workloads on the pool hold while ``plan`` runs there."""
        return held_while(others(pool, plan), plan, pool, hours_month)

    cannot: set[str] = set()  # workloads the plan found cannot run (PL303): reported, never priced
    plans: list[WorkloadPlan] = []
    choices: dict[str, Choice] = {}
    for index, w in enumerate(platform.spec.workloads):
        choice = choose(w, platform, catalog, committed, lambda g: _candidates(platform, g), marginal)
        choices[w.name] = choice
        plan = choice.plan
        if choice.placement.pool is None and w.kind != "data-prep":
            gpu = choice.placement.gpu.id if choice.placement.gpu else "nothing"
            findings.append(PlanFinding("PL301", w.name, _no_pool_text(w, platform, gpu)))
        pool = pools_by_name.get(choice.placement.pool or "")
        if pool is not None and pool.gpu is not None and choice.placement.gpu is not None and pool.gpu.id != choice.placement.gpu.id:
            findings.append(PlanFinding("PL302", w.name, f"pins {choice.placement.gpu.id} but runs on pool {pool.name} of {pool.gpu.id}; "
                                        f"sized for {choice.placement.gpu.id}"))  # fmt: skip
        if choice.better is not None:
            findings.append(
                PlanFinding("PL314", w.name, f"pool {pool.name if pool else w.pool} misses its needs; {choice.better.describe()}")
            )
        findings.extend(_dataset_findings(w, pool, platform))
        # a finding about one declared field names it, for the CLI to locate (review sizreview22 G4)
        findings.extend(PlanFinding(i.check, w.name, i.message, ("workloads", index, i.field) if i.field else ()) for i in plan.issues)
        if pool is not None and pool.gpu is not None and plan.min_gpus is not None and plan.min_gpus > pool.max_gpus:
            findings.append(PlanFinding("PL303", w.name, f"does not fit on pool {pool.name}: needs at least {plan.min_gpus} "
                                        f"{plan.accelerator} GPUs, the pool has {pool.max_gpus} at max size"))  # fmt: skip
        if pool is not None and pool.gpu is not None and plan.runnable:
            holds = _holds(w, choice.placement, sizing)
            findings.extend(_quota_findings(platform, w.name, plan.team, pool, plan, holds))
            costly, whole_note = _sharing_cost(w, plan, pool, choice.placement, sizing, _candidates(platform, choice.placement.gpu))
            findings.extend(costly)
            if whole_note:  # --explain shows the layout PL354 compares with (review sizreview45 G5)
                plan = replace(plan, notes=(*plan.notes, whole_note))
        if pool is not None:
            placed[pool.name].pop(w.name, None)  # as placed now, or not at all where it cannot run
        if any(f.check in ("PL303", "PL322") and f.subject == w.name for f in findings):
            cannot.add(w.name)
        elif pool is not None and plan.runnable:
            placed[pool.name][w.name] = plan
        plans.append(plan)
    runnable = [p for p in plans if p.runnable and p.name not in cannot]
    unpriced = tuple(p.name for p in plans if not p.runnable or p.pool is None or p.name in cannot)
    # pools: demand, recommendation, price
    pool_plans: list[PoolPlan] = []
    for pool in platform.pools:
        mine = [p for p in runnable if p.pool == pool.name]
        pool_plans.append(_pool_plan(pool, mine, hours_month, prices.get(pool.name), costs, catalog, findings, staff.get(pool.name)))
    storage = _storage(platform, runnable, catalog, findings)
    # workload cost at its pool's GPU-hour price (owned: TCO at forecast utilisation)
    by_pool = {p.name: p for p in pool_plans}
    bookings = _block_bookings(runnable, pools_by_name, prices, hours_month)
    priced: list[WorkloadPlan] = []
    units: list[UnitCost] = []
    for plan in plans:
        pp = by_pool.get(plan.pool or "")
        rate = pp.usd_per_gpu_hour if pp is not None and plan.runnable and plan.name not in cannot else None
        cost = sized = billed = None
        capped = False
        own: dict[str, Any] = {}  # its own price of a GPU-hour, and the figures that show it
        pool_of = pools_by_name.get(plan.pool or "")
        share = gpu_equivalents(plan, pool_of) / plan.gpus if plan.gpus and pool_of is not None else 1.0
        if rate is not None and plan.gpu_hours is not None and pp is not None:
            cost = sized = plan.gpu_hours * share * rate
            billed = plan.gpu_hours * share * pp.billed_usd_per_gpu_hour if pp.billed_usd_per_gpu_hour is not None else None
            booking = bookings.get(plan.name)
            if booking is not None:  # on Capacity Blocks it pays the whole blocks its own schedule buys (sizreview19 F3, F6)
                cost = sized = booking.usd
                billed = booking.usd
                own = {"billed_usd_per_gpu_hour": booking.usd_per_gpu_hour, "figures": (*plan.figures, *booking.figures())}
            if pp.monthly_cost_usd is not None and plan.kind not in ("training", "fine-tuning"):
                # a month of a capped pool cannot cost more than the pool, nor bill more: replicas it cannot hold stay
                # Pending and hold no GPU the cost rules would charge; said, as its GPU-hours are the sized ones (review
                # sizreview58 D6: 51.5M GPU-h beside $2.57M read as $0.05 a GPU-hour), owned or rented (sizreview59 D5:
                # an owned pool's service billed 6.1x the pool's whole month)
                capped = cost > pp.monthly_cost_usd
                cost = min(cost, pp.monthly_cost_usd)
                billed = min(billed, pp.monthly_cost_usd) if billed is not None else None
        if capped:
            own["notes"] = (
                *plan.notes,
                f"cost and showback are the month of pool {plan.pool} at its most, what its GPUs bill: the replicas past them "
                "stay Pending (PL305), and its GPU-hours are the sized ones",
            )
        priced.append(replace(plan, cost_usd=cost, showback_usd=billed, gpu_share=share, cost_capped=capped, **own))
        if plan.runnable and plan.name not in cannot and plan.kind != "data-prep":
            training = plan.kind in ("training", "fine-tuning")
            # per token at the size the traffic needs, even where the pool is too small to serve it all
            per_million = sized / plan.tokens_per_month * 1e6 if sized is not None and plan.tokens_per_month else None
            units.append(UnitCost(plan.name, plan.team, plan.pool, cost if training else None, None if training else cost, per_million))
    # environment totals
    fsx = sum((t.fsx or {}).get("usdPerMonth", 0) for t in storage)
    stored = sum((t.stored or {}).get("usdPerMonth") or 0 for t in storage)
    sites: list[SiteExtras] = []
    for site in platform.sites:
        if site.pools and all(p.owned for p in site.pools) and any(p.gpu is not None for p in site.pools):
            tiers = [t.spec for t in site.storage if t.spec.class_ in ("parallel-fs", "shared-nfs")]
            shared = sum(float(getattr(t, "capacity", 0) or 0) for t in tiers)
            throughput = sum(float(getattr(t, "throughput", 0) or 0) for t in tiers)
            extras = site_extras(site.name, shared, throughput, costs, catalog)
            sites.append(extras)
            findings.extend(PlanFinding(i.check, site.name, i.message) for i in extras.issues)
    breakdown = {
        "rented pools": sum(p.monthly_cost_usd or 0 for p in pool_plans if not p.owned),
        "owned pools": sum(p.monthly_cost_usd or 0 for p in pool_plans if p.owned),
        "FSx": fsx,
        "storage by the GB": stored,
        "owned sites (storage, links)": sum(s.monthly_usd for s in sites),
    }
    total = sum(breakdown.values())
    showback, budgets = _showback(platform, priced, pool_plans, pools_by_name, hours_month, fsx + breakdown["owned sites (storage, links)"])
    peak = peak_site_spend(priced, pool_plans, pools_by_name, hours_month)
    watched = site_budgets(platform, pool_plans, peak)
    for team, usd in showback.items():
        if team in budgets and usd > budgets[team]:
            findings.append(PlanFinding("PL318", team, f"monthly showback ${usd:,.0f} is over the ${budgets[team]:,.0f} budget"))
    findings += _unpriced_budgets(platform, pool_plans)
    findings += _peak_months_over_budget(platform, peak, watched)
    findings += _unfunded_quotas(platform, pool_plans, peak, watched)
    findings += _held_services(platform)
    findings += _audit_on_hosts(platform)
    findings += _assumed_schedules(priced, pool_plans, hours_month)
    findings += _services_on_spot(platform, priced, pools_by_name)
    findings += _training_on_spot(platform, priced, pools_by_name, sizing.defaultCheckpointIntervalSeconds.value)
    growth = forecast(platform, {k: c for k, c in choices.items() if k not in cannot}, pool_plans, catalog, prices)
    for pool_name, quarter, need, capacity in growth.runs_out:
        findings.append(PlanFinding("PL313", pool_name, f"runs out in quarter {quarter} of the forecast: its workloads need {need} GPUs "
                                    f"at once, it has {capacity}"))  # fmt: skip
    own_vs_rent, unsold = _own_vs_rent(platform, pool_plans, priced, catalog, growth, today)
    findings += unsold
    kept, waived = apply_waivers(findings, platform.spec, platform.environment, today)
    targets = kpi_targets(
        platform, [(p.name, p.utilization) for p in pool_plans if p.gpus_per_node], watched,
        {u.workload: u.usd_per_million_tokens for u in units if u.usd_per_million_tokens is not None},
        {w.name: (showback_on_pool(w, pools_by_name.get(w.pool or "")), wall_clock_on_pool(w, pools_by_name.get(w.pool or "")))
         for w in priced if w.kind in ("training", "fine-tuning")},
        stages={w.name: (wall_clock_on_pool(w, pools_by_name.get(w.pool or "")),
                         pools_by_name[w.pool].site.name if w.pool in pools_by_name else None) for w in priced},
    )  # fmt: skip
    return SizingPlan(
        platform.environment, tuple(priced), tuple(pool_plans), storage, tuple(kept), total, tuple(waived),
        {name: c.reason for name, c in choices.items()}, unpriced, breakdown, showback, budgets, own_vs_rent, tuple(units),
        tuple(sites), growth, kpi_targets=tuple(targets), site_budgets=watched,
    )  # fmt: skip


def _assumed_schedules(plans: list[WorkloadPlan], pools: list[PoolPlan], hours_month: float) -> list[PlanFinding]:
    """PL332: without runsPerQuarter a run is counted once a month (alicerce.plan.growth.busy_gpu_hours), so a run of a
    month or more is busy back to back. On capacity paid whether used or not, that share is the pool's utilisation, its
    USD per GPU-hour and the own-vs-rent verdict: a 58-day run once a quarter is 64% busy, the default said 100% and
    priced its GPU-hour 36% lower (review sizreview5 F3). On rented capacity it is the pool's month itself: a run once
    a quarter on Capacity Blocks read 45% too high, and nothing said so (review sizreview8 F13)."""
    paid = {p.name for p in pools if p.owned or (p.price is not None and p.price.reserved_nodes)}
    rented = {p.name for p in pools if p.name not in paid and p.price is not None}
    out = []
    for plan in plans:
        if plan.kind not in ("training", "fine-tuning") or plan.runs_per_quarter is not None or not plan.runnable:
            continue
        guess = _one_run_a_month(plan, hours_month)
        if plan.pool in rented:
            out.append(PlanFinding("PL332", plan.name, f"declares no runsPerQuarter: {guess} on {plan.pool}, whose month of "
                                   "rented GPUs follows that guess: declare the schedule"))  # fmt: skip
        if plan.pool in paid:
            out.append(PlanFinding("PL332", plan.name, f"declares no runsPerQuarter: {guess} on {plan.pool}, whose idle hours "
                                   "are paid; its utilisation and GPU-hour price follow that guess: declare the schedule"))  # fmt: skip
    return out


def _one_run_a_month(plan: WorkloadPlan, hours_month: float) -> str:
    """The undeclared schedule in words, as busy_gpu_hours counts it: one run a month, its hours a day, at most the
    month's (a 40-day run at 12 hours a day is 66% of the month, not "busy every month"; a run longer than the month
    is capped at it: review sizreview9 F8)."""
    days, per_day = plan.wall_clock_days or 0.0, plan.hours_per_day
    daily = f", {per_day:g} hours a day" if per_day < 24 else ""
    counted = min(run_hours(plan), hours_month * per_day / 24)
    if days * 24 >= hours_month:
        return f"counted as busy every month (its {days:.0f}-day runs back to back{daily}: {counted / hours_month:.0%} of its GPUs' month)"
    return f"counted as one {days:.1f}-day run a month{daily} ({counted / hours_month:.0%} of its GPUs' month)"


def _services_on_spot(platform: ResolvedPlatform, plans: list[WorkloadPlan], pools: dict[str, ResolvedPool]) -> list[PlanFinding]:
    """PL333: placement picks the cheapest pool that serves the peak, and Spot often is; but EC2 reclaims a Spot node at
    two minutes' notice, and the replicas left carry the peak at more than the load the latency targets were sized for
    (examples/aws-only.yaml's assistant: 7 replicas at load 0.94, 6 left: review sizreview5 F11). A service with latency
    targets on Spot is told how many replicas one node holds and what would ride a reclaim out."""
    bound = {w.name for w in platform.spec.workloads if w.kind == "inference" and w.latency is not None}
    bound |= {s.workload for s in platform.spec.monitoring.slos if s.kind == "inference-latency" and s.workload}
    out = []
    for plan in plans:
        pool = pools.get(plan.pool or "")
        if plan.name not in bound or pool is None or pool.capacity_type != "spot" or not plan.replicas or not plan.gpus_per_replica:
            continue
        per_gpu = pool.gpu_units.per_gpu if pool.gpu_units and plan.sharing else 1
        on_node = min(plan.replicas, max(1, pool.gpus_per_node * per_gpu // plan.gpus_per_replica))
        left = plan.replicas - on_node
        after = "none is left" if not left else f"the {left} left carry its peak at {plan.replicas / left:.2f}x the load it was sized for"
        spare = f"{on_node} more replica{'s' if on_node > 1 else ''}"
        out.append(PlanFinding("PL333", plan.name, f"serves latency targets from Spot pool {pool.name}: a reclaim (two minutes' "
                               f"notice) takes a node's {on_node} of its {plan.replicas} replicas and {after}; keep {spare} "
                               "than the peak needs (the pool's max and the team's quota), or serve it from on-demand or "
                               "reserved capacity"))  # fmt: skip
    return out


def _training_on_spot(
    platform: ResolvedPlatform, plans: list[WorkloadPlan], pools: dict[str, ResolvedPool], default_interval: float
) -> list[PlanFinding]:
    """PL336: a synchronous run across nodes stops whole when EC2 reclaims any one of them (two minutes' notice) and
    resumes from its last checkpoint once the node is replaced; the plan's wall clock, GPU-hours and cost count none of
    it. Placement picks Spot for its price: a 28-node, 58-day run went there without a word (review sizreview10 F13)."""
    intervals = {w.name: w.checkpoint_interval or default_interval for w in platform.spec.workloads}
    out = []
    for plan in plans:
        pool = pools.get(plan.pool or "")
        if plan.kind not in ("training", "fine-tuning") or pool is None or pool.capacity_type != "spot" or not plan.gpus:
            continue
        nodes = math.ceil(plan.gpus / (pool.gpus_per_node or 1))
        if nodes < 2:
            continue
        hours = intervals.get(plan.name, default_interval) / 3600
        out.append(PlanFinding("PL336", plan.name, f"trains on {nodes} nodes of Spot pool {pool.name} for "
                               f"{plan.wall_clock_days or 0:.1f} days: a reclaim of any one stops the whole run, which resumes "
                               f"from its last checkpoint (every {hours:g} h) once the node is replaced, losing about half an "
                               f"interval on all {plan.gpus} GPUs each time; the plan counts none of it: train on on-demand, "
                               "reserved or Capacity Block nodes, or checkpoint more often"))  # fmt: skip
    return out


def _unpriced_budgets(platform: ResolvedPlatform, pool_plans: list[PoolPlan]) -> list[PlanFinding]:
    """PL326: a team's spend is its allocated GPUs times its pools' billed GPU-hour prices (alicerce.emit.kube.costs
    reads them from here): a pool without one has no price series, so its GPUs drop out of the spend. A budget only
    on such pools never alerts nor stops its queue; one partly on them undercounts (review obsreview2 DEFECT 9:
    nothing said so)."""
    prices = {p.name: p.billed_usd_per_gpu_hour for p in pool_plans}
    gpu_pools = {pool.name for pool in platform.pools if pool.gpu is not None}
    out = []
    for team in platform.teams:
        budget = team.spec.budget
        if budget is None:
            continue
        pools = sorted({q.pool for q in team.quotas if q.pool in gpu_pools})
        unpriced = [name for name in pools if prices.get(name) is None]
        if not unpriced:
            continue
        named = ", ".join(f"'{name}'" for name in unpriced)
        at = f"tenancy.teams[{team.index}].budget"
        if len(unpriced) == len(pools):
            what = f"its GPU quota is only on {named}, which has no price (PL311): its spend reads $0, so the budget never alerts"
            what += " nor stops its queue" if budget.on_exhausted == "stopAdmitting" else ""
        else:
            what = f"its GPUs on {named}, which has no price (PL311), count $0 against the budget"
        fix = f"give {named} a price (costs.cloud[] usdPerHour for a cloud pool, costs.onprem for an owned one) or drop the budget"
        out.append(PlanFinding("PL326", team.name, f"{at}: {what}; {fix}"))
    return out


def _today() -> datetime.date:
    from alicerce.rules.validate import today

    return today()


def _replica_rate(w: WorkloadPlan) -> str:
    """What one serving replica manages and what bounds it, so a shortfall explains itself."""
    figures = {f.name: f.value for f in w.figures}
    rate, prefill, step, batch = (
        figures.get(n) for n in ("requests/s per replica", "prefill per request", "decode step", "batch per replica")
    )
    if rate is None or prefill is None or step is None or batch is None:
        return ""
    replicas = next((f for f in w.figures if f.name == "replicas"), None)
    by_rate = replicas.inputs.get("replicas for the rate") if replicas is not None else None
    target = "" if by_rate is None else f"; the rate takes {by_rate:.0f} replicas, the latency targets the rest (PL331)"
    # a shared pool's replica runs in one MIG instance or time slice, not on whole GPUs ("one replica of 1 GPUs")
    gpus = w.gpus_per_replica or w.tensor_parallel or 1
    replica = f"one replica in one {w.sharing} unit" if w.sharing_declared else f"one replica of {gpus} GPU{'' if gpus == 1 else 's'}"
    return (f": {replica} serves {rate:.2f} req/s "
            f"(prefill {prefill:.2f} s a request, decode steps of {step * 1000:.0f} ms at a batch of {batch:.0f}){target}")  # fmt: skip


def staff_shares(platform: ResolvedPlatform) -> dict[str, float]:
    """Each owned GPU pool's share (by nodes at max size) of its site's owned GPU nodes: how a site's declared staffFte is
    split over the pools that are costed, so the site's engineers are charged once, in full."""
    owned = [p for p in platform.pools if p.owned and p.gpu is not None]
    nodes: dict[str, int] = defaultdict(int)
    for p in owned:
        nodes[p.site.name] += p.spec.scaling.max
    return {p.name: p.spec.scaling.max / nodes[p.site.name] if nodes[p.site.name] else 0.0 for p in owned}


def _pool_plan(  # noqa: PLR0917 - one pool's inputs, called once
    pool: ResolvedPool,
    plans: list[WorkloadPlan],
    hours_month: float,
    price: NodePrice | None,
    costs: Any,
    catalog: Catalog,
    findings: list[PlanFinding],
    staff_share: float | None = None,
) -> PoolPlan:
    spec = pool.spec
    per_node = pool.gpus_per_node
    capacity = spec.scaling.max * per_node
    steady: list[WorkloadPlan] = []  # the services and batch work that hold their GPUs all month
    hours = held = 0.0
    reserved = price.reserved_nodes if price is not None and not pool.owned and per_node else 0
    on_reserved = 0.0  # node-hours a month the workloads hold of the reserved nodes, each filling them first
    for w in plans:
        if w.gpus is None:
            _cores_finding(pool, w, findings)
            continue
        gpus = pool_units(w, pool)
        # a month's GPU-hours as the cost rules count them: a MIG instance or time slice by its share of the GPU
        billed = gpu_equivalents(w, pool)
        hours += busy_gpu_hours(w, billed, hours_month)  # what the workloads want of the pool
        held += (holds := pool_gpu_hours(w, billed, capacity, hours_month))  # what they can hold of it, at their hours a day
        if reserved and gpus:
            nodes = math.ceil(gpus / per_node)
            on_reserved += holds / per_node * min(nodes, reserved) / nodes
        if w.kind in ("training", "fine-tuning"):
            _deadline_finding(pool, w, findings)
        else:
            if (w.gpu_hours or 0) >= (w.gpus or 0) * hours_month * 0.99:
                steady.append(w)
            if gpus > capacity:
                findings.append(
                    PlanFinding(
                        "PL305",
                        w.name,
                        f"needs {w.replicas} replicas ({gpus} GPUs) at peak{_replica_rate(w)}; pool {pool.name} has {capacity} at max "
                        f"{_nodes(spec.scaling.max)}; {_nodes(math.ceil(gpus / per_node))} are needed",
                    )
                )
        if w.rdma_required and spec.fabric is None:
            findings.append(
                PlanFinding(
                    "PL309",
                    w.name,
                    f"spans {_nodes(math.ceil(gpus / per_node))} at {w.network_gbps_per_gpu:.0f} Gbit/s per GPU for gradient traffic; "
                    f"pool {pool.name} joins no RDMA fabric",
                )
            )
    peak = pool_peak([w for w in plans if w.gpus is not None], pool, hours_month)
    rec_max = math.ceil(peak / per_node) if per_node else spec.scaling.max
    demand = hours / (capacity * hours_month) if capacity and per_node else None
    # one workload alone, past the pool only where its runs overlap one another (a run wider than the pool is PL304):
    # two 59-day runs a quarter of 224 GPUs on a 256-GPU pool hold 448 at once (review sizreview41 D1)
    widest = max((pool_units(w, pool) for w in plans if w.gpus is not None), default=0)
    if per_node and (len(plans) > 1 or peak > widest) and peak > capacity:
        # the peak has the runs one after another already, as far as their deadlines and the month let them
        # (growth.pool_peak): telling the user to stagger them told them what the queue does (review sizreview39 G3);
        # past the pool's month no order of the runs fits them (review sizreview16 F9)
        # the runs that start beside the queue, so the user knows whose deadline to relax (review sizreview42 G1)
        late = sorted(late_runs([queued_run(w) for w in plans if w.kind in ("training", "fine-tuning") and w.wall_clock_days is not None]))
        beside = ""
        if late:
            beside = f" (cannot wait within their deadlines for the runs ahead of them, so start beside them: {', '.join(late)})"
        advice = (f"grow the pool, or relax the deadlines that keep runs from waiting for one another{beside}"
                  if demand is None or demand <= 1
                  else f"even one after another they need {demand:.0%} of its GPU-hours: grow the pool or run less")  # fmt: skip
        them = f"its {len(plans)} workloads need" if len(plans) > 1 else f"{plans[0].name}'s overlapping runs need"
        findings.append(PlanFinding("PL306", pool.name, f"{them} {peak} GPUs at once, the runs one after "
                                    f"another as far as their deadlines and the month let them ({_nodes(rec_max)}); max is "
                                    f"{_nodes(spec.scaling.max)}: {advice}"))  # fmt: skip
    rec_min = math.ceil(packed_units(steady, pool) / per_node) if per_node else spec.scaling.min
    if pool.owned and pool.gpu is not None:  # owned servers do not scale to zero: the peak's nodes are bought and stay
        rec_min = rec_max  # (review sizreview41 G2: onprem-h100 was recommended 0-28)
    utilization = None if demand is None else min(1.0, held / (capacity * hours_month))
    # on a reservation the cost is the reserved nodes, billed used or not: a smaller max saves nothing, fewer reserved
    # nodes do (review sizreview41 G1), and what they sit idle is the month's, whatever the peak (review sizreview61:
    # 10 reserved nodes a 46-day run a quarter holds a quarter of the time said nothing of the rest)
    reserved_idle = ""
    if reserved and plans and price is not None and price.usd_per_hour:
        busy = min(1.0, on_reserved / (reserved * hours_month))  # at most: workloads side by side share them
        never = max(0, reserved - rec_max)  # never needed at once
        idle_usd = ((1 - busy) * reserved) * price.usd_per_hour * hours_month
        if busy < 0.3 or never:
            reserved_idle = (f"its {reserved} reserved nodes are busy {busy:.0%} of the month at most"
                             + (f" ({never} never needed at once)" if never else "")
                             + f": ${idle_usd:,.0f} a month billed for them idle; reserve fewer or place more work on it")  # fmt: skip
    if per_node and plans and utilization is not None and utilization < 0.3 and spec.scaling.max > rec_max:
        spare = f"; {reserved_idle}" if reserved_idle else ""
        findings.append(PlanFinding("PL307", pool.name, f"forecast GPU utilisation is {utilization:.0%}: its workloads peak at {peak} GPUs "
                                    f"({_nodes(rec_max)}), max is {_nodes(spec.scaling.max)}{spare}"))  # fmt: skip
    elif reserved_idle:
        findings.append(PlanFinding("PL307", pool.name, reserved_idle))
    if per_node and not plans and spec.scaling.max:
        findings.append(PlanFinding("PL308", pool.name, "no declared workload runs here; its size is not backed by the workload inventory"))
    owned = pool.owned and pool.gpu is not None
    cost: float | None = None
    owned_cost = None
    if owned:
        owned_cost = owned_pool_cost(pool, costs, catalog, utilization or 0.0, staff_share=staff_share)
        findings.extend(PlanFinding(i.check, pool.name, i.message) for i in owned_cost.issues)
        cost = owned_cost.monthly_usd
    elif price is not None:
        if per_node:
            node_hours = rented_node_hours(plans, pool, price, hours_month)
        else:  # CPU pool: its always-on nodes, and the nodes that hold the workloads' cores as long as they run
            cores = pool.instance.cores if pool.instance else 1
            busy = cpu_pool_node_hours(plans, cores, spec.scaling.min, hours_month)
            node_hours = min(max(spec.scaling.min, spec.scaling.max) * hours_month, busy)
        cost = monthly_node_cost(price, node_hours)
    return PoolPlan(
        name=pool.name, site=pool.site.name, accelerator=pool.gpu.id if pool.gpu else None, gpus_per_node=per_node,
        gpu_units=pool.max_gpu_units,
        declared_min=spec.scaling.min, declared_max=spec.scaling.max, recommended_min=rec_min,
        recommended_max=max(rec_max, rec_min), peak_gpus=peak, gpu_hours_per_month=hours, utilization=utilization,
        demand_ratio=demand, monthly_cost_usd=cost, workloads=tuple(w.name for w in plans), owned=owned,
        capacity_type=None if owned or price is None else price.capacity_type, region=price.region if price else None,
        price=price, owned_cost=owned_cost,
    )  # fmt: skip


def _dataset_findings(w: Workload, pool: ResolvedPool | None, platform: ResolvedPlatform) -> list[PlanFinding]:
    """PL327: the pool a workload runs on is at a site without the tier its dataset is read from. A parallel file
    system is mounted only at its own sites (a pod elsewhere cannot read it at all), and an object store elsewhere is
    read across sites every epoch, at the WAN's rate and its egress price. Placement avoids it where another
    eligible pool is at the data; this says so where none is, or the workload is pinned (review sizreview4 D10)."""
    sites = dataset_sites(w, platform)
    if pool is None or sites is None or pool.site.name in sites or w.dataset is None:
        return []
    held = f"held at {', '.join(sites)}" if sites else "held at no site of this environment"
    local = [p.name for p in platform.pools if p.site.name in sites and p.spec.purpose == pool.spec.purpose]
    hint = f"; pool {local[0]} is at the data" if local else "; declare the tier at this site, or a pool at the data"
    return [PlanFinding("PL327", w.name, f"runs on pool {pool.name} at site {pool.site.name} but reads its dataset from tier "
                        f"{w.dataset.tier}, {held}{hint}")]  # fmt: skip


def _holds(w: Workload, placement: Placement, sizing: Sizing) -> Callable[[int], float | None]:
    """The wall-clock days of ``w`` pinned at a count on its placement; None where no layout holds it there."""

    def days(gpus: int) -> float | None:
        plan = plan_workload(w.model_copy(update={"gpus": gpus}), placement, sizing, [])
        return plan.wall_clock_days if plan.gpus is not None else None

    return days


def _within_quota(
    platform: ResolvedPlatform,
    name: str,
    pool: ResolvedPool,
    plan: WorkloadPlan,
    *,
    quota: int,
    holds: Callable[[int], float | None],
) -> str:
    """The pin PL341 suggests for a training run: of the counts within the quota a layout holds, sized as a pin would
    be (whole nodes, whole context, pipeline and expert groups), the one that runs shortest; the quota itself was a
    count no layout divided, which PL303 then refused (review sizreview11 F5), one degree's step missed counts on
    10-GPU nodes (sizreview12 F3), and the largest count was 4x slower than a smaller one (sizreview13 F7). A service
    is sized by its traffic, not pinned (sizreview13 F6)."""
    w = next(x for x in platform.spec.workloads if x.name == name)
    if w.kind not in ("training", "fine-tuning"):
        return ""
    pp = w.pipeline_parallel or 1
    node, group = pool.gpus_per_node or 1, math.lcm(pp * (w.context_parallel or 1), pp * (w.expert_parallel or 1))
    counts = [n for n in range(quota, (plan.min_gpus or 1) - 1, -1) if n % group == 0 and (n % node == 0 or n < node)]
    timed = [(days, -n) for n in counts[:64] if (days := holds(n)) is not None]
    if timed:
        days, fit = min(timed)
        # fewer GPUs can also run shorter, where the planned count is past its fabric's scaling (review sizreview41 D4)
        than = plan.wall_clock_days or 0.0
        trade = ("and accept a longer run" if days > than * (1 + 1e-9) else
                 f"shorter than the {than:.1f} days it is sized at" if days < than * (1 - 1e-9) else
                 "as long as it is sized at")  # fmt: skip
        return f", or pin the workload's gpus to {-fit}, the fastest count within the quota ({days:.1f} days), {trade}"
    return f"; no count within the quota holds the run, which needs at least {plan.min_gpus} GPUs"


def _sharing_cost(  # noqa: PLR0917 - the service, where it was sized, and how to size it on whole GPUs
    w: Workload, plan: WorkloadPlan, pool: ResolvedPool, place: Placement, sizing: Sizing, candidates: list[Gpu]
) -> tuple[list[PlanFinding], str]:
    """PL354: a service sized in a shared pool's MIG instances or time slices that holds more of the pool's GPUs than
    whole GPUs of the same model would serve it on. Each part repeats the weights and the engine's reserved memory, and
    reads its weights at every step over its share of the bandwidth, so small batches in many parts can cost several
    times the GPUs one engine a GPU needs (an 8B model at 5 requests/s: 13 slices of 4 H100s, where one whole H100
    serves it). The engines on whole GPUs run at the engine's own memory fraction: a time-sliced pool's declared
    kvMemoryFraction is a slice's share of the GPU (review sizreview45 D1: 0.225 read on a whole H100 left it room for
    2 sequences). With the finding, a note of the whole-GPU layout it compares with, for `--explain`."""
    if not plan.sharing_declared or place.shared is None:
        return [], ""
    alone = w.model_copy(update={"kv_memory_fraction": None}) if isinstance(place.shared, TimeSlicing) else w
    whole = plan_workload(alone, replace(place, shared=None), sizing, candidates)
    held = pool_units(plan, pool)
    if not whole.runnable or whole.gpus is None or whole.gpus >= held:
        return [], ""
    batch = {f.name: f.value for f in plan.figures}.get("batch per replica")
    batches = {f.name: f.value for f in whole.figures}.get("batch per replica")
    replica = "a whole GPU" if (whole.gpus_per_replica or 1) == 1 else f"a replica of {whole.gpus_per_replica} whole GPUs"
    contrast = ""
    if batch is not None and batches is not None:
        contrast = f" (a batch of {_sequences(batch)} a part, {_sequences(batches)} on {replica})"

    def count(n: int, what: str) -> str:
        return f"{n} {what}{'' if n == 1 else 's'}"

    note = (f"on whole {plan.accelerator} GPUs (PL354): {count(whole.gpus, 'GPU')}, {count(whole.replicas or 0, 'replica')} "
            f"of {count(whole.gpus_per_replica or 1, 'GPU')}"
            f"{f' at a batch of {_sequences(batches)}' if batches is not None else ''}"
            f"{f', {rate:,.0f} output tokens/s a replica' if (rate := whole.tokens_per_second_per_replica) else ''}")  # fmt: skip
    return [PlanFinding("PL354", w.name, f"its {plan.replicas} replicas ({plan.sharing} on pool {pool.name}) hold {held} "
                        f"{plan.accelerator} GPUs, where engines on whole GPUs of the same model serve it on {whole.gpus}"
                        f"{contrast}: each part holds its own copy of the weights and the engine's reserved memory; serve it "
                        "from a pool of whole GPUs, or share the GPUs in fewer, larger parts")], note  # fmt: skip


def _sequences(x: float) -> str:
    """A count of sequences as a reader takes it in: 2.3, 696, 1,020."""
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def _quota_findings(  # noqa: PLR0917 - the run, its team and pool, and how to size a pin of it
    platform: ResolvedPlatform,
    name: str,
    team_name: str,
    pool: ResolvedPool,
    plan: WorkloadPlan,
    holds: Callable[[int], float | None],
) -> list[PlanFinding]:
    """A run sized above its team's quota on its pool: Kueue admits a workload whole, within the team's nominal quota
    plus what it may borrow from the cohort (borrowingLimit; none: what the cohort has idle). Above both it is never
    admitted; above the nominal quota it runs only on borrowed GPUs, which the lending teams reclaim by evicting the
    whole workload (ClusterQueue preemption.reclaimWithinCohort, alicerce.emit.kube.kueue)."""
    team = next((t for t in platform.teams if t.name == team_name), None)
    quota = next((q for q in team.quotas if q.pool == pool.name), None) if team is not None else None
    if quota is None:
        return []  # no quota on the pool: placement (quota_pools) already keeps the run off it, or the team governs nothing
    # in the pool's schedulable units, as quotas are; a run sized beyond the whole pool (PL304 says so) runs on the pool.
    # A service's MIG instances or time slices are units already, and the pool holds max_gpu_units of them, not
    # max_gpus (review sizreview46 1: 13 one-seventh instances on one p5 were capped at its 8 GPUs)
    units = min(plan.gpus or 0, pool.max_gpu_units if plan.sharing_declared else pool.max_gpus)
    if units <= quota.units:
        return []
    where = f"tenancy.teams[{team_name}].quotas[{quota.index}]"
    if quota.borrowing_limit is not None and units > quota.units + quota.borrowing_limit:
        # a run can take fewer GPUs for longer; a service's replicas follow its load and latency targets (its gpus field
        # sizes nothing: review sizreview46)
        fewer = ("pin the workload's gpus and accept a longer run" if plan.kind in ("training", "fine-tuning")
                 else "serve less at once: a lower peak rate or looser latency targets take fewer replicas")  # fmt: skip
        return [
            PlanFinding(
                "PL340",
                name,
                f"is sized at {units} GPUs on pool {pool.name}, above team {team_name}'s quota of {quota.units} plus its borrowing "
                f"limit of {quota.borrowing_limit}: Kueue never admits it (raise {where}.gpus or borrowingLimit to fit {units}, "
                f"or {fewer})",
            )
        ]
    return [
        PlanFinding(
            "PL341",
            name,
            f"is sized at {units} GPUs on pool {pool.name}, above team {team_name}'s quota of {quota.units}: it runs only on "
            f"{units - quota.units} GPUs borrowed from the cohort, and is evicted whole when their owners reclaim them (raise "
            f"{where}.gpus to {units}{_within_quota(platform, name, pool, plan, quota=quota.units, holds=holds)})",
        )
    ]


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def wall_clock_on_pool(w: WorkloadPlan, pool: ResolvedPool | None) -> float | None:
    """A run's wall-clock days on its pool: a run sized wider than the pool at max size runs on the pool's GPUs (PL304's
    figure), which its per-run cost target and lead time read too (review sizreview35 D-C): as the plan sized it there
    (pool_days), else the same GPU-hours on the pool's GPUs, no fewer than it takes there."""
    capacity = runnable_capacity(w, pool)
    if w.wall_clock_days is None or not w.gpus or not capacity or w.gpus <= capacity:
        return w.wall_clock_days
    if w.pool_days is not None:
        return w.pool_days
    return w.wall_clock_days * w.gpus / capacity


def showback_on_pool(w: WorkloadPlan, pool: ResolvedPool | None) -> float | None:
    """A run's showback on its pool: where the plan sized it on the pool's GPUs (pool_days), its GPU-hours there at the
    same rate, which the run-cost KPI sets against its days there (review sizreview63 N4: the planned count's cost over
    the pool's days set a target 15-23% under what the run spends on the pool going as planned)."""
    days = wall_clock_on_pool(w, pool)
    if w.showback_usd is None or w.pool_days is None or w.pool_gpus is None or days != w.pool_days:
        return w.showback_usd
    if not w.gpus or not w.wall_clock_days:
        return w.showback_usd
    return w.showback_usd * (w.pool_gpus * w.pool_days) / (w.gpus * w.wall_clock_days)


def runnable_capacity(w: WorkloadPlan, pool: ResolvedPool | None) -> int:
    """The most of the pool's GPUs at max size the run can use: whole groups of its layout (TP x CP x PP, the expert
    grid), as Megatron-Core and torchtitan refuse a world they do not divide (review sizreview60 D3: 40 GPUs for a run
    of 32-GPU groups)."""
    capacity = pool.spec.scaling.max * pool.gpus_per_node if pool is not None else 0
    if w.pool_gpus is not None and w.pool_gpus <= capacity:  # the count the plan sized it on there (pool_days)
        return w.pool_gpus
    return capacity // w.group_gpus * w.group_gpus


def _deadline_finding(pool: ResolvedPool, w: WorkloadPlan, findings: list[PlanFinding]) -> None:
    spec = pool.spec
    capacity = runnable_capacity(w, pool)
    if w.gpus is None or w.gpu_hours is None or capacity == 0:
        return
    total = spec.scaling.max * pool.gpus_per_node
    its = f"its {capacity}" if capacity == total else f"the {capacity} of its {total} its {w.group_gpus}-GPU groups run on"
    if w.gpus > capacity and w.deadline_days is None:
        # no deadline to miss, and still a count the pool cannot give: a gang-scheduled run asks for all its GPUs at
        # once and does not start on fewer (review sizreview59 D3: 256 pinned on a 128-GPU pool had no finding, and its
        # days were the pinned count's in the table and the pool's in the KPI)
        days = wall_clock_on_pool(w, pool) or 0.0
        findings.append(PlanFinding("PL306", pool.name, f"{w.name} is planned on {w.gpus} GPUs, more than {its} at max "
                                    f"{_nodes(spec.scaling.max)}: its pods do not start on fewer, and its GPU-hours take "
                                    f"{days_text(days)} days on {capacity}; pin {capacity} or fewer GPUs, or grow the pool"))  # fmt: skip
        return
    if w.gpus > capacity and w.deadline_days is not None:
        days = wall_clock_on_pool(w, pool) or 0.0  # the same GPU-hours on fewer GPUs
        if days <= w.deadline_days * 1.000001:
            # a pinned count past the pool that still meets the deadline on the pool's GPUs: no missed deadline, a count
            # the pool cannot give (review sizreview37 D-3: PL304 said 11.54 days were past a 60-day deadline)
            on_pool = f"on them it finishes in {days_text(days)} days, within its {deadline_text(w.deadline_days)} deadline"
            wider = f"{w.name} is planned on {w.gpus} GPUs, more than {its} at max {_nodes(spec.scaling.max)}"
            fix = f"pin {capacity} or fewer GPUs, or grow the pool"
            quarter = 3 * HOURS_PER_MONTH / 24
            if w.runs_per_quarter and w.runs_per_quarter * days > quarter * 1.000001:
                # its schedule's runs at the pool's pace overlap: pinning the pool's count meets PL320 (review sizreview63 N8)
                nodes = math.ceil(w.gpus / pool.gpus_per_node)
                on_pool += (f", but its {w.runs_per_quarter:g} runs a quarter take {w.runs_per_quarter * days:.0f} of a "
                            f"{quarter:.0f}-day quarter there")  # fmt: skip
                fix = f"grow the pool to {_nodes(nodes)}, or run fewer a quarter"
            findings.append(PlanFinding("PL306", pool.name, f"{wider}: {on_pool}; {fix}"))
            return
        nodes = math.ceil(w.gpus / pool.gpus_per_node)
        # a size that misses the deadline too (PL337, PL338) is not what is needed: what it takes (review sizreview13 F8)
        missed = (w.wall_clock_days or 0.0) > w.deadline_days * 1.000001
        need = f"its planned {_nodes(nodes)} take {days_text(w.wall_clock_days or 0.0)} days" if missed else f"{_nodes(nodes)} are needed"
        # its days as the plan sized it on the pool's GPUs (pool_days, as PL338 reads them: review sizreview62 E1), else
        # the planned GPU-hours spread over them, which says so
        message = (
            f"pool {pool.name} with max {_nodes(spec.scaling.max)} finishes {w.name} in {days_text(days)} days ("
            + (f"sized on its {capacity:,} GPUs" if w.pool_days is not None else f"its planned GPU-hours on {capacity:,} GPUs")
            + f"), past its {deadline_text(w.deadline_days)} deadline; {need}"
        )
        findings.append(PlanFinding("PL304", w.name, message))


def _cores_finding(pool: ResolvedPool, w: WorkloadPlan, findings: list[PlanFinding]) -> None:
    """PL304 for data preparation: the CPU pool at max size holds fewer cores than the job's for its deadline (review
    sizreview34 D-2: 611 cores on a one-node pool of 64 vCPUs were priced as ten nodes, and nothing said the pool would
    take 19 hours over a 2-hour deadline); physical cores, a tokenizer process each (review sizreview61 G4: a vCPU of
    a two-thread core was counted as one)."""
    cores = pool.instance.cores if pool.instance is not None and pool.gpu is None else None
    capacity = pool.spec.scaling.max * (cores or 0)
    if not cores or not capacity or not w.cpu_cores or w.deadline_days is None or w.cpu_cores <= capacity:
        return
    days = (w.wall_clock_days or 0.0) * w.cpu_cores / capacity  # the same core-hours on fewer cores
    nodes = math.ceil(w.cpu_cores / cores)
    findings.append(PlanFinding("PL304", w.name, f"pool {pool.name} with max {_nodes(pool.spec.scaling.max)} ({capacity:,} cores) "
                                f"finishes {w.name} in {days_text(days)} days, past its {deadline_text(w.deadline_days)} "
                                f"deadline; {_nodes(nodes)} are needed for its {w.cpu_cores:,} cores"))  # fmt: skip


def _showback(  # noqa: PLR0917 - the plan's parts, called once
    platform: ResolvedPlatform,
    plans: list[WorkloadPlan],
    pools: list[PoolPlan],
    resolved: dict[str, ResolvedPool],
    hours_month: float,
    shared_usd: float,
) -> tuple[dict[str, float], dict[str, float]]:
    """Each pool's month split over teams by the GPU-hours their workloads use there, at the rate showback bills; what no
    workload uses (idle owned capacity, always-on and reserved floors, the free GPUs of started nodes) and shared storage
    stay with the platform."""
    out: dict[str, float] = defaultdict(float)
    for pool in pools:
        if not pool.monthly_cost_usd:
            continue
        if _own_blocks(pool, plans, resolved, hours_month, out):
            continue
        usage: dict[str, float] = defaultdict(float)
        gpus_max = pool.declared_max * pool.gpus_per_node
        month = pool.monthly_cost_usd
        rate = pool.billed_usd_per_gpu_hour if pool.gpus_per_node else None
        instance = resolved[pool.name].instance
        for plan in plans:
            # the workloads its month holds: not those the plan found cannot run (PL303), left out of every total
            if plan.name not in pool.workloads:
                continue
            if pool.gpus_per_node:
                usage[plan.team] += pool_gpu_hours(plan, gpu_equivalents(plan, resolved[pool.name]), gpus_max, hours_month)
            else:  # a CPU pool's jobs by the node-hours each holds (review sizreview36 D-4: each weighed 1)
                usage[plan.team] += cpu_node_hours(plan, instance.cores if instance is not None else 1, hours_month)
        used = sum(usage.values())
        if not used:
            out["(platform: unused capacity)"] += month
            continue
        if rate is None:  # a CPU pool bills what its jobs hold: all of it goes to them
            for team, hours in usage.items():
                out[team] += month * hours / used
            continue
        # a GPU pool charges each team what the cost rules will: the GPU-hours its workloads hold at the billed rate
        # (their showback); what no workload holds (an owned pool's idle time, a rented pool's always-on and reserved
        # nodes left idle, the free GPUs of a node a job starts) stays with the platform, whichever way the pool is
        # bought and in whichever order the spec lists its workloads (reviews sizreview36 D-3, sizreview38 G5,
        # sizreview40 D2: a job riding a service's node was charged 6x its own showback where the pool had no floor,
        # its own where it had one)
        charged = used * rate
        scale = min(1.0, month / charged) if charged else 0.0
        for team, hours in usage.items():
            out[team] += hours * rate * scale
        out["(platform: unused capacity)"] += month - charged * scale
    out["(platform: shared storage)"] += shared_usd
    budgets = {t.name: t.spec.budget.monthly_usd for t in platform.teams if t.spec.budget is not None}
    return {k: v for k, v in sorted(out.items()) if v}, budgets


def _own_blocks(
    pool: PoolPlan, plans: list[WorkloadPlan], resolved: dict[str, ResolvedPool], hours_month: float, out: dict[str, float]
) -> bool:
    """A Capacity Block pool's month split as its workloads buy it: each team pays its workloads' own blocks (the
    GPU-hours each holds a month at its own price). Split by GPU-hours used, a team with a 5.91-hour run's 1-day block
    ($943.92) was charged $471.96 and one with a 29.55-hour run's 2 days ($1,887.84) $2,359.80 (review sizreview19 F3).
    What no workload buys (the always-on floor) stays with the platform. False where no workload of the pool has a price
    of its own."""
    own = [p for p in plans if p.pool == pool.name and p.runnable and p.billed_usd_per_gpu_hour is not None]
    if not own or not pool.monthly_cost_usd:
        return False
    rp = resolved[pool.name]
    usd = {p.name: busy_gpu_hours(p, gpu_equivalents(p, rp), hours_month) * (p.billed_usd_per_gpu_hour or 0.0) for p in own}
    spent = sum(usd.values())
    if not spent:
        return False
    # the always-on floor's blocks no workload buys stay with the platform, as a rented pool's floor does (review
    # sizreview39 D4: $40,431 of a 2-node floor's idle blocks went to the one team that ran there); where the floor
    # holds some of their blocks, the month is less than their own and each pays its share of it
    scale = min(1.0, pool.monthly_cost_usd / spent)
    for plan in own:
        out[plan.team] += usd[plan.name] * scale
    out["(platform: unused capacity)"] += pool.monthly_cost_usd - spent * scale
    return True


def peak_site_spend(
    plans: list[WorkloadPlan], pools: list[PoolPlan], resolved: dict[str, ResolvedPool], hours_month: float
) -> dict[str, dict[str, float]]:
    """Team -> site -> its GPU spend in the busiest calendar month, as the cost rules record it: the GPUs its pods hold
    times the pool's billed price per GPU-hour (alicerce.emit.kube.costs); pools without a GPU price record nothing."""
    prices = {p.name: (p.billed_usd_per_gpu_hour or 0.0, p.site) for p in pools if p.gpus_per_node}
    capacity = {p.name: p.declared_max * p.gpus_per_node for p in pools}
    held: dict[str, list[tuple[str, float, float]]] = defaultdict(list)  # pool -> (team, GPU-hours, price) a workload
    for plan in plans:
        if plan.runnable and plan.pool in prices:
            # a workload priced apart (Capacity Blocks) is charged its own price, as the cost rules charge its pods
            price = plan.billed_usd_per_gpu_hour if plan.billed_usd_per_gpu_hour is not None else prices[plan.pool][0]
            gpus = gpu_equivalents(plan, resolved[plan.pool])
            held[plan.pool].append((plan.team, peak_month_gpu_hours(plan, gpus, hours_month, capacity[plan.pool]), price))
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for pool, runs in held.items():
        # the pool's workloads together hold its GPUs the month round at most: each its share of that (review sizreview35
        # D-E: two runs on one pool kept $826k of a budget at dc1, whose pool holds $443k, and left aws $74k)
        wanted = sum(hours for _, hours, _ in runs)
        scale = min(1.0, capacity[pool] * LONGEST_MONTH_HOURS / wanted) if wanted else 1.0
        for team, hours, price in runs:
            out[team][prices[pool][1]] += hours * scale * price
    return {team: dict(sites) for team, sites in out.items()}


def site_budgets(platform: ResolvedPlatform, pools: list[PoolPlan], peak: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Team -> site -> the share of its monthly budget that site's Prometheus watches (each sees only its own pods).

    The shares add up to the budget, so a team over it is over its share at one site at least and the alert fires
    there: each site watching the budget less the others' planned spend let research spend 115% of it unseen (review
    obsreview9 G2, F12). A site's share is the plan's busiest month there (the month research's 224-GPU pretraining run
    fills dc1, $381.7k, so its own guard does not stop it: review obsreview7 DEFECT 1) plus the budget the plan leaves
    unspent, split by what the team's quota at each site is worth at the plan's prices. When the sites' busiest months
    add up to more than the budget no split holds them all (PL334 says so): each site keeps its part of the budget pro
    rata to its busiest month, so the site that plans the larger run keeps the larger share (quota worth gave a site
    less than its own run: review obsreview10 F3), and one it plans nothing at watches $0. A team with no priced quota
    watches all of it at its first site."""
    out: dict[str, dict[str, float]] = {}
    for team in platform.teams:
        if team.spec.budget is None:
            continue
        usd = team.spec.budget.monthly_usd
        sites = budget_sites(platform, team)
        planned = {s: peak.get(team.name, {}).get(s, 0.0) for s in sites}
        if sum(planned.values()) > usd:
            # a site it plans nothing at watches $0: the budget is spoken for, any spend there is over it
            out[team.name] = {s: planned[s] * usd / sum(planned.values()) for s in sites}
        else:
            worth = quota_worth(platform, pools, team)
            site_of = {p.name: p.site.name for p in platform.pools}
            if not sum(worth.values()):
                first = next((site_of[q.pool] for q in team.quotas if site_of.get(q.pool) in worth), sites[0])
                worth[first] = 1.0
            headroom = usd - sum(planned.values())
            # a site with no share keeps its $0, as above: its budget alert and guard say when the team spends there
            # (dropped, the team could borrow GPUs there through its cohort unseen: review obsreview11 F1)
            out[team.name] = {s: planned[s] + headroom * worth[s] / sum(worth.values()) for s in sites}
    return out


def budget_sites(platform: ResolvedPlatform, team: ResolvedTeam) -> list[str]:
    """The sites whose Prometheus each watch a share of the team's budget: those that run its namespace."""
    return [s.name for s in platform.sites if team.name in {t.name for t in s.teams}] or [platform.sites[0].name]


def quota_worth(platform: ResolvedPlatform, pools: list[PoolPlan], team: ResolvedTeam) -> dict[str, float]:
    """Site -> what the team's nominal quota there costs an hour at full use, at the plan's prices."""
    prices = {p.name: p.billed_usd_per_gpu_hour or 0.0 for p in pools}
    per_gpu = {p.name: (p.gpu_units.per_gpu if p.gpu_units else 1) for p in platform.pools}
    site_of = {p.name: p.site.name for p in platform.pools}
    worth = dict.fromkeys(budget_sites(platform, team), 0.0)
    for quota in team.quotas:
        if site_of.get(quota.pool) in worth:
            worth[site_of[quota.pool]] += quota.units / per_gpu.get(quota.pool, 1) * prices.get(quota.pool, 0.0)
    return worth


def _unfunded_quotas(
    platform: ResolvedPlatform, pools: list[PoolPlan], peak: dict[str, dict[str, float]], watched: dict[str, dict[str, float]]
) -> list[PlanFinding]:
    """PL335: the budget holds the plan's months, but what it leaves a site for work the plan does not schedule (the
    team's quota there, its notebooks and ad hoc runs) is under one hour of that quota at full use: the site's budget
    alert, and its guard where the budget stops admitting, act within the hour the team uses it (review sizreview7 F3:
    a budget a few dollars over the busiest months left a site cents, and nothing said so). PL334 speaks for a budget
    under the months."""
    out = []
    for team in platform.teams:
        budget = team.spec.budget
        shares = watched.get(team.name, {})
        if budget is None or sum(peak.get(team.name, {}).values()) > budget.monthly_usd:
            continue
        worth = quota_worth(platform, pools, team)
        for site, share in sorted(shares.items()):
            spare = share - peak.get(team.name, {}).get(site, 0.0)
            if worth.get(site, 0.0) <= 0 or spare >= worth[site]:
                continue
            held = " and its budget guard holds the queue" if budget.on_exhausted == "stopAdmitting" else ""
            out.append(
                PlanFinding(
                    "PL335",
                    team.name,
                    f"its budget leaves ${spare:,.2f} at {site} beyond the plan's busiest month there, under one hour of its "
                    f"quota at {site} at full use (${worth[site]:,.2f}): work the plan does not schedule there alerts{held} "
                    f"within the hour (raise tenancy.teams[{team.index}].budget.monthlyUsd by what that work spends a month, "
                    f"or lower the quota at {site})",
                )
            )
    return out


def _held_services(platform: ResolvedPlatform) -> list[PlanFinding]:
    """PL345: the budget guard holds the team's ClusterQueue (spec.stopPolicy Hold: no new admission), and Kueue admits
    each pod of a Deployment, StatefulSet or LeaderWorkerSet in a team namespace as a workload of its own (kueue v0.19.2
    site/content/en/docs/tasks/run/deployment.md: "every Pod from a Deployment is represented as a single independent
    Plain Pod"; the integrations alicerce.emit.kube.kueue.FRAMEWORKS enables). A held team that serves keeps its
    running replicas but admits no new one: a rollout, a lost node or an autoscaler step takes replicas away until the
    next month (review obsreview22 F13). The guard holds the whole queue: serving and training share it, and alicerce
    does not write the serving manifests that could name another one."""
    out = []
    for team in platform.teams:
        budget = team.spec.budget
        served = sorted(w.name for w in platform.spec.workloads if w.team == team.name and w.kind == "inference")
        if budget is None or budget.on_exhausted != "stopAdmitting" or not served:
            continue
        out.append(
            PlanFinding(
                "PL345",
                team.name,
                f"its budget stops admitting and it serves {', '.join(served)}: Kueue admits each serving pod on its own, so "
                "once the guard holds the team's queue no replacement or added replica is admitted (a rollout, a lost node "
                "or a scale-up loses replicas until the next month or a larger budget) "
                f"(set tenancy.teams[{team.index}].budget.onExhausted: alert, or serve from a team whose budget only alerts)",
            )
        )
    return out


def _peak_months_over_budget(
    platform: ResolvedPlatform, peak: dict[str, dict[str, float]], watched: dict[str, dict[str, float]]
) -> list[PlanFinding]:
    """PL334: the plan's busiest month at each of a team's sites, added up, is over its budget. The schedule gives runs
    per quarter, not dates, so those months may be one: then the team overspends, or its guard holds a run the plan
    scheduled. PL318 compares the average month and stays silent (review obsreview10 F3)."""
    out = []
    for team in platform.teams:
        budget = team.spec.budget
        months = {site: usd for site, usd in sorted(peak.get(team.name, {}).items()) if usd > 0}
        busiest = sum(months.values())
        if budget is None or busiest <= budget.monthly_usd:
            continue
        usd = budget.monthly_usd
        at = f"tenancy.teams[{team.index}].budget.monthlyUsd"
        held = "alerts and its budget guard holds the queue" if budget.on_exhausted == "stopAdmitting" else "alerts"
        parts = ", ".join(f"${m:,.0f} at {s}" for s, m in months.items())
        what = f"its busiest month ({parts}) is over its ${usd:,.0f} budget"
        if len(months) > 1:
            what = f"its busiest months ({parts}) add up to ${busiest:,.0f}, over its ${usd:,.0f} budget: no split over its sites"
            what += " holds them all"
        shares = watched.get(team.name, {})
        if len(shares) > 1:
            listed = ", ".join(f"${m:,.0f} at {s}" for s, m in sorted(shares.items()))
            unspent = ""
            if min(shares.values()) == 0:
                unspent = "; at $0 any spend alerts"
                unspent += " and the guard holds the queue at the first dollar" if budget.on_exhausted == "stopAdmitting" else ""
            what += f"; each site watches a share pro rata to its busiest month ({listed}{unspent})"
        what += f", so a month that runs the schedule {held} at {usd / busiest:.0%} of it"
        # rounded up: the budget it names holds the months (rounded down it still fell a dollar short: review sizreview7 F2)
        fix = f"raise {at} to {math.ceil(busiest):,}, or declare fewer runsPerQuarter or GPUs"
        out.append(PlanFinding("PL334", team.name, f"{what} ({fix})"))
    return out


def _unsold_blocks(option: RentalOption, plans: list[WorkloadPlan], catalog: Catalog) -> list[tuple[WorkloadPlan, int]]:
    """The pool's runs AWS sells no Capacity Blocks for, with the instances each holds: more than an account holds
    across its blocks (review sizreview16 F5: a run on 384 p5.48xlarge was priced at the block rate)."""
    blocks = catalog.prices.capacityBlocks
    per = next((i.gpus for i in catalog.instances if i.type == option.instance), None) or 1
    held = [(p, math.ceil((p.gpus or 0) / per)) for p in plans if p.kind in ("training", "fine-tuning") and p.wall_clock_days]
    return [(p, n) for p, n in held if n > blocks.instancesAcrossBlocks]


def _whole_blocks(option: RentalOption, plans: list[WorkloadPlan], catalog: Catalog) -> RentalOption:
    """A Capacity Block option priced per used GPU-hour as the pool's runs would buy it: each run the shortest block
    that covers its wall clock (1-day steps to 14 days, then 7-day steps), for its busy hours only (review sizreview8
    F5: the list rate per used hour, $4.92, where the same plan's Capacity Block pool paid $5.34 for the run)."""
    steps = tuple((s.upToHours, s.stepHours) for s in catalog.prices.capacityBlocks.durationSteps)
    hours_month = catalog.sizing.hoursPerMonth.value
    # batch work too: a whole day of block for each day it runs (review sizreview19 F6); a service holds its GPUs
    # every hour of the blocks it buys
    runs = [(p, *block_runs(p, hours_month)) for p in plans if p.gpus and (p.kind != "inference" or p.sharing)]
    used = sum(n * (p.gpus or 0) * hours for p, n, hours, _ in runs)
    if not used:
        return option
    bought = sum(n * (p.gpus or 0) * block_hours(steps, wall) for p, n, _, wall in runs) / used
    source = catalog.prices.capacityBlocks.durationSource.url
    factor = Factor("whole blocks of the pool's runs (block hours bought / hours used)", bought, source)
    return replace(option, usd_per_gpu_hour=option.usd_per_gpu_hour * bought, factors=(*option.factors, factor))


def _other_families(
    options: tuple[RentalOption, ...], declared: list[tuple[str, float, str]], catalog: Catalog
) -> tuple[UnpricedOption, ...]:
    """The Savings Plan own-vs-rent cannot weigh: the spec declares discounts, none for the rented instance's family."""
    rented = next((o.instance for o in options if o.purchase == "on-demand"), None)
    if rented is None or not declared or any(o.purchase == "savings-plan" for o in options):
        return ()
    family = next(i.family for i in catalog.instances if i.type == rented)
    others = ", ".join(f"{pool}: {fam}" for pool, _, fam in declared)
    why = (f"the spec's Savings Plan / Reserved Instances discounts are for other instance families ({others}), and a "
           f"discount is bought for one family or priced by it: declare costs.cloud[].savingsPlanDiscount on a {family} pool")  # fmt: skip
    return (UnpricedOption("savings-plan", rented, why, f"no discount declared for {family}"),)


def _own_vs_rent(  # noqa: PLR0917 - the plan's parts
    platform: ResolvedPlatform, pools: list[PoolPlan], plans: list[WorkloadPlan], catalog: Catalog, growth: Forecast, today: datetime.date
) -> tuple[tuple[OwnVsRent, ...], list[PlanFinding]]:
    """Each owned pool against every way of renting its GPUs, PL344 for the Capacity Blocks AWS would not sell and PL346
    for the prices it compares that are stale or far apart in date."""
    region = next((str(s.spec.region) for s in platform.sites if hasattr(s.spec, "region")), "us-east-1")
    family_of = {p.name: p.instance.family for p in platform.pools if p.instance is not None}
    declared = [(c.pool, c.savings_plan_discount, family_of[c.pool]) for c in platform.spec.costs.cloud
                if c.savings_plan_discount is not None and c.pool in family_of]  # fmt: skip
    out, findings = [], []
    limit = catalog.prices.capacityBlocks.instancesAcrossBlocks
    for pool in pools:
        if pool.owned_cost is None or pool.accelerator is None:
            continue
        on_pool = [p for p in plans if p.pool == pool.name]
        options: tuple[RentalOption, ...] = ()
        for offer in rental_options(pool.accelerator, region, catalog, declared):
            if offer.purchase != "capacity-block":
                options += (offer,)
            elif unsold := _unsold_blocks(offer, on_pool, catalog):
                runs = ", ".join(f"{p.name} holds {n} {offer.instance}" for p, n in unsold)
                findings.append(PlanFinding("PL344", pool.name, f"Capacity Blocks left out of own-vs-rent: {runs}, past "
                                            f"the {limit} instances AWS sells across an account's blocks"))  # fmt: skip
            else:
                options += (_whole_blocks(offer, on_pool, catalog),)
        findings += _stale_prices(pool.name, options, today, catalog)
        unpriced = unpriced_options(pool.accelerator, region, catalog) + _other_families(options, declared, catalog)
        for u in unpriced:
            findings.append(PlanFinding("PL311", pool.name, f"own-vs-rent cannot weigh {u.purchase} {u.instance}: {u.why}; "
                                        "listed as not weighed, so the cheapest-by-utilisation bands leave it out"))  # fmt: skip
        on_demand = next((o for o in options if o.purchase == "on-demand"), None)
        price = on_demand.usd_per_gpu_hour if on_demand else None
        u_star = pool.owned_cost.break_even(price) if price is not None else None
        option = OwnVsRent(
            pool.name, pool.accelerator, pool.owned_cost, on_demand.instance if on_demand else None, region, price,
            on_demand.factors if on_demand else (), u_star, None, options, unpriced,
        )  # fmt: skip
        from_quarter = None
        if options:
            from_quarter = next((q for q, u in growth.utilization(pool.name) if option.cheapest_at(u) == "owned"), None)
        out.append(replace(option, cheaper_from_quarter=from_quarter))
    return tuple(out), findings


# prices read this far apart are not one market: AWS cut p5 on-demand 44% between the Capacity Block price's date
# (2024-12-01) and the on-demand price's (2025-06-05), so a verdict between them compares two markets (review
# sizreview20 F7)
STALE_SPREAD_DAYS = 183


def _stale_prices(pool: str, options: tuple[RentalOption, ...], today: datetime.date, catalog: Catalog) -> list[PlanFinding]:
    """PL346: a price own-vs-rent weighs that is past the date its source says it is updated, and the options it compares
    read more than STALE_SPREAD_DAYS apart, each with its date and where the catalog keeps it (file:line)."""
    out = []
    for o in options:
        if o.review_by is not None and today > o.review_by:
            note = catalog.prices.capacityBlocks.reviewNote if o.purchase == "capacity-block" else None
            out.append(PlanFinding("PL346", pool, f"own-vs-rent weighs the {o.purchase} price of {o.instance} read {o.as_of} "
                                   f"({o.where}), past the {o.review_by} its source says it is updated"
                                   + (f": {note}" if note else "")
                                   + "; re-read it and update the catalog, or waive PL346 once checked"))  # fmt: skip
    dated = [o for o in options if o.as_of is not None]
    if dated:
        old, new = min(dated, key=lambda o: o.as_of or today), max(dated, key=lambda o: o.as_of or today)
        assert old.as_of is not None and new.as_of is not None
        if (new.as_of - old.as_of).days > STALE_SPREAD_DAYS:
            out.append(PlanFinding("PL346", pool, f"own-vs-rent compares the {old.purchase} price read {old.as_of} ({old.where}) with "
                                   f"the {new.purchase} price read {new.as_of} ({new.where}), {(new.as_of - old.as_of).days} "
                                   "days apart, where list prices move (p5 on-demand fell 44% in 2025): re-read the older and "
                                   "update the catalog, or waive PL346 once checked"))  # fmt: skip
    return out


def _stale_pool_price(price: NodePrice | None, today: datetime.date, catalog: Catalog) -> list[PlanFinding]:
    """PL346 for a rented pool costed at a catalog price past the date its source says it is updated (a Capacity Block
    pool: its month, its runs' blocks, its team's showback and the run-cost KPI all rest on it), once a pool, with the
    date and the file:line the price is kept at, as own-vs-rent's (review sizreview22 G5: the reference's owned pool got
    two warnings for the very price a Capacity Block pool was costed at silently)."""
    if price is None or price.usd_per_hour is None or price.review_by is None or today <= price.review_by:
        return []
    note = catalog.prices.capacityBlocks.reviewNote if price.capacity_type == "capacity-block" else None
    return [PlanFinding("PL346", price.pool, f"the pool is costed at the {price.capacity_type} price of {price.instance} read "
                        f"{price.as_of} ({price.where}), past the {price.review_by} its source says it is updated"
                        + (f": {note}" if note else "")
                        + f"; re-read it and update the catalog, declare costs.cloud[{price.pool}].usdPerHour, or waive "
                        "PL346 once checked")]  # fmt: skip


def _block_bookings(
    plans: list[WorkloadPlan], pools: dict[str, ResolvedPool], prices: dict[str, NodePrice | None], hours_month: float
) -> dict[str, BlockBooking]:
    """Each workload's own Capacity Blocks, pool by pool (alicerce.plan.growth.block_bookings)."""
    out: dict[str, BlockBooking] = {}
    for name, pool in pools.items():
        price = prices.get(name)
        if price is not None and price.block_steps and pool.gpus_per_node:
            out.update(block_bookings([p for p in plans if p.pool == name], pool, price, hours_month))
    return out


def _run_blocks(price: NodePrice, pool: ResolvedPool, plan: WorkloadPlan) -> float | None:
    """A run's Capacity Blocks (every node it holds, for the whole block its wall clock needs); None for other prices
    and for work without a wall clock (serving is priced by the pool's month)."""
    if plan.wall_clock_days is None:
        return None
    return run_block_cost(price, pool_units(plan, pool), plan.wall_clock_days * 24)


def _storage(platform: ResolvedPlatform, plans: list[WorkloadPlan], catalog: Catalog, findings: list[PlanFinding]) -> tuple[TierPlan, ...]:
    by_name = {w.name: w for w in platform.spec.workloads}
    pool_site = {p.name: p.site.name for p in platform.pools}
    reads: dict[str, float] = defaultdict(float)
    writes: dict[str, float] = defaultdict(float)
    kept: dict[str, float] = defaultdict(float)  # bytes of checkpoints a tier holds at once
    datasets: dict[str, float] = defaultdict(float)  # the largest dataset read from a tier, which it holds beside them

    def parallel_fs(site: str | None, purpose: str) -> str | None:
        """The parallel-fs tier at ``site`` for ``purpose``, else any parallel-fs tier there."""
        at_site = [t for t in platform.storage if t.spec.class_ == "parallel-fs" and (site is None or site in t.sites)]
        chosen = next((t for t in at_site if t.spec.purpose == purpose), at_site[0] if at_site else None)
        return chosen.name if chosen else None

    for plan in plans:
        if plan.pool is None:
            # a workload the environment places on no pool does not run there: it reads and writes nothing (dev's FSx
            # was sized, and PL310 fired, for the checkpoints of a pretraining run dev never runs: review sizreview10 F9)
            continue
        spec = by_name[plan.name]
        site = pool_site.get(plan.pool)
        source = spec.dataset.tier if spec.dataset and spec.dataset.tier else parallel_fs(site, "datasets")
        if source and plan.dataset_read_gbps:
            reads[source] += plan.dataset_read_gbps
        if source and spec.dataset is not None:
            datasets[source] = max(datasets[source], float(spec.dataset.size))
        checkpoints = parallel_fs(site, "checkpoints")
        if checkpoints and plan.checkpoint_write_gbps:
            writes[checkpoints] += plan.checkpoint_write_gbps
            # a run keeps its last checkpoint until the next is written whole: two of them at once
            kept[checkpoints] += 2 * (plan.checkpoint_gib or 0.0) * GIB
    out: list[TierPlan] = []
    for tier in platform.storage:
        stored = _stored_month(tier, platform, catalog, findings)
        if tier.name not in reads and tier.name not in writes:
            if stored is not None:
                out.append(TierPlan(tier.name, None, 0.0, 0.0, None, stored))
            if tier.fsx is None:  # nothing else billed by the month for it here (on-prem capex is counted per site)
                continue
            # a managed file system is provisioned, and billed, whether or not a workload reads it: price it at
            # what it declares, and say it sits idle (review sizreview3 D1)
            findings.append(PlanFinding("PL342", tier.name, "no workload reads or writes this tier; it is still provisioned and billed"))
        need = max(reads[tier.name], writes[tier.name])
        declared = getattr(tier.spec, "throughput", None)
        declared_gbps = declared / 1e9 if declared else None
        fsx = None
        if tier.fsx is not None:
            # the tier's target sizes its file system again for the workloads' need (resolve's sizing, one decision)
            providers = {s.name: s.provider for s in platform.sites}
            sized = file_system(tier.spec, tier.implementations, providers, catalog, max(need * 1e9, declared or 0.0), pinned=False)
            if sized is not None:
                fsx = {"storageCapacityGiB": sized.capacity_gib, "perUnitStorageThroughput": sized.per_unit_throughput,
                       "throughputMBps": round(sized.throughput_mbps, 1), "usdPerMonth": sized.usd_per_month,
                       "capacityTiB": round(sized.capacity_gib * FSX_GIB / 2**40, 2)}  # fmt: skip
        if declared_gbps is not None and need > declared_gbps:
            what = "checkpoint writes" if writes[tier.name] >= reads[tier.name] else "dataset reads"
            findings.append(PlanFinding("PL310", tier.name, f"{what} need {need:.1f} GB/s; the tier declares {declared_gbps:.1f} GB/s"))
        findings += _checkpoints_fit(tier, kept[tier.name], datasets[tier.name])
        out.append(TierPlan(tier.name, declared_gbps, reads[tier.name], writes[tier.name], fsx, stored))
    return tuple(out)


def _checkpoints_fit(tier: ResolvedTier, kept: float, dataset: float) -> list[PlanFinding]:
    """PL343: the checkpoints the runs writing to a tier keep at once (each its last and the one being written), beside
    the largest dataset read from it, fit what it holds: the file system generate deploys for it, else its declared
    capacity (review sizreview8 F6: a 913 GiB checkpoint on a 1,200 GiB tier passed, and the second save would fail with
    the disk full; sizreview9 F16: not the one the plan would size for the write rate, which is not the one deployed).
    Throughput sizing never raises the capacity; AL373 checks the dataset alone."""
    capacity = tier.fsx.capacity_gib * FSX_GIB if tier.fsx is not None else getattr(tier.spec, "capacity", None)
    if not kept or capacity is None or kept + dataset <= float(capacity):
        return []
    beside = f" beside its {dataset / 2**40:,.1f} TiB dataset" if dataset else ""
    return [PlanFinding("PL343", tier.name, f"the runs writing checkpoints here keep {kept / GIB:,.0f} GiB at once (each its last "
                        f"checkpoint and the one being written){beside}; it holds {float(capacity) / GIB:,.0f} GiB: the next "
                        f"save fails when it is full (raise its capacity to at least "
                        f"{math.ceil((kept + dataset) / 2**40 * 10) / 10:g}TiB)")]  # fmt: skip


def _stored_month(tier: ResolvedTier, platform: ResolvedPlatform, catalog: Catalog, findings: list[PlanFinding]) -> dict[str, Any] | None:
    """A month of a tier its implementation bills by the GB held (review sizreview4: S3 and EFS were in no total):
    its declared capacity at the catalog's price, at the first site of this environment where the catalog prices
    that implementation in the site's region. None where no site bills it so; PL328 where one does but the tier
    declares no capacity, or the catalog has no price for the region: the month then leaves it out, and says so."""
    prices = catalog.prices.storage
    for site in platform.sites:
        implementation = tier.implementations.get(site.name)
        price = prices.implementations.get(implementation or "")
        if site.name not in tier.sites or price is None:
            continue
        region = str(getattr(site.spec, "region", ""))
        capacity = getattr(tier.spec, "capacity", None)
        if region not in price.regions:
            why = f"the catalog prices {implementation} storage in {', '.join(price.regions)}, not {region}"
        elif capacity is None:
            why = f"{implementation} bills the GB it holds (${price.usdPerGBMonth:.3f}/GB-month) and the tier declares no capacity"
        else:
            # AWS's GB-month is 2^30 bytes (the S3 FAQ's billing examples; FSx bills GiB too): decimal GB billed 7% more
            # (review sizreview8 F9)
            gb = float(capacity) / 2**30
            # AWS applies the volume tiers to the account's whole S3 Standard storage in the region: priced per tier,
            # the figure errs high by at most the next tier's cent (review sizreview9 F12)
            tiers = ", volume tiers applied to this tier alone" if price.volumeTiers else ""
            return {"implementation": implementation, "site": site.name, "capacityGB": round(gb, 1), "usdPerGBMonth": price.usdPerGBMonth,
                    "usdPerMonth": round(price.monthly_usd(gb), 2), "basis": f"{price.what}{tiers} ({prices.asOf})"}  # fmt: skip
        findings.append(PlanFinding("PL328", tier.name, f"not in the month's cost: {why}"))
        return {"implementation": implementation, "site": site.name, "capacityGB": None, "usdPerGBMonth": price.usdPerGBMonth,
                "usdPerMonth": None, "basis": f"{price.what} ({prices.asOf})"}  # fmt: skip
    return None


__all__ = ["HOURS_PER_MONTH", "OwnVsRent", "PoolPlan", "SizingPlan", "TierPlan", "UnitCost", "plan_platform"]


# A floor on what kube-apiserver's audit log writes a day, from one event no policy drops: every kubelet renews its
# node's Lease every 10 seconds (Kubernetes docs, "Leases: node heartbeats", and "Nodes: heartbeats": the default
# update interval), an `update` of coordination.k8s.io, which kubespray's policy logs at Metadata ("Default level for
# all other requests", roles/kubernetes/control-plane/templates/apiserver-audit-policy.yaml.j2, read at commit
# 55231177, not pinned to v2.31.0). A Metadata event is about 1 KB of JSON (estimate: user, source IPs, objectRef,
# annotations, user agent; not measured here). Pod and node status writes (RequestResponse, with bodies), controllers
# and operators add far more, so the days held are at most what this floor gives
LEASE_RENEWS_PER_DAY = 86400 // 10
AUDIT_EVENT_KB = 1.0


def _audit_on_hosts(platform: ResolvedPlatform) -> list[PlanFinding]:
    """PL347: an on-prem site keeps kube-apiserver's audit log on its control-plane hosts only (no security.audit
    webhook), rotated by count (the target's Capabilities.audit_log_on_hosts, which its builder sets), and the oldest file
    goes whatever its age (--audit-log-maxbackup): a declared retention longer than that holds at the lease floor is a
    trail that loses its oldest days quietly, while the AWS sites of the same spec keep theirs in CloudWatch Logs
    (review obsreview25 G6)."""
    audit = platform.spec.security.audit
    if not audit.enabled or audit.webhook is not None:
        return []
    out = []
    days = audit.retention / 86400
    for site in platform.sites:
        rotation = site.capabilities.audit_log_on_hosts
        if rotation is None:
            continue
        servers = rotation.servers
        nodes = len({h for pool in site.pools for h in pool.hosts} | set(servers))
        if not nodes:
            continue
        per_day_mb = nodes * LEASE_RENEWS_PER_DAY * AUDIT_EVENT_KB / 1024
        # each API server logs the requests it serves, in its own files: the site keeps that many sets of files
        held = rotation.files * rotation.megabytes * max(1, len(servers)) / per_day_mb
        if days <= held:
            continue
        out.append(
            PlanFinding(
                "PL347",
                site.name,
                f"audit logs stay on the {max(1, len(servers))} API servers' hosts: {rotation.files} files of {rotation.megabytes} MB "
                f"each ({rotation.files * rotation.megabytes / 1000:g} GB a server), at most {held:.0f} days at {nodes} nodes' "
                f"Lease renewals alone ({per_day_mb:.0f} MB a day; pod and node status writes add far more), not the declared "
                f"{days:g}-day security.audit.retention: the oldest days are deleted quietly "
                "(set security.audit.webhook to ship the events to a store that keeps them)",
            )
        )
    return out
