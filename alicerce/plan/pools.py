"""What the plan says of one node pool: its demand, recommended size, utilisation and cost."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from alicerce.plan.figures import rounded
from alicerce.plan.pricing import HOURS_PER_MONTH, SAVINGS_PLAN_FACTOR, NodePrice
from alicerce.plan.sizing import WorkloadPlan
from alicerce.plan.tco import OwnedPoolCost
from alicerce.resolve.gpu import MIG_RESOURCE_PREFIX
from alicerce.resolve.model import ResolvedPool
from alicerce.spec.models import MigSharing


def _parts_per_gpu(plan: WorkloadPlan, pool: ResolvedPool) -> int | None:
    """Parts of the workload's kind one physical GPU of the pool offers: the instances of its MIG profile each GPU is
    cut into (1 for a profile the layout holds once beside others), or the pool's time slices a GPU; None where the
    workload holds whole GPUs."""
    per_gpu = pool.gpu_units.per_gpu if pool.gpu_units else 1
    if not plan.sharing or per_gpu <= 1:
        return None
    sharing = pool.spec.sharing
    if isinstance(sharing, MigSharing) and plan.sharing.startswith("mig "):
        return sharing.profiles.get(plan.sharing.removeprefix("mig "), per_gpu)
    return per_gpu


def pool_units(plan: WorkloadPlan, pool: ResolvedPool) -> int:
    """Physical GPUs a workload holds on the pool (shared GPUs count by the pool's units per GPU: on a MIG pool, the
    instances of its profile each GPU is cut into, four 3g.40gb replicas of a GPU cut 3g.40gb + 2g.20gb + 2 x 1g.10gb
    holding four GPUs)."""
    gpus = plan.gpus or 0
    per_gpu = _parts_per_gpu(plan, pool)
    return gpus if per_gpu is None else math.ceil(gpus / per_gpu)


def packed_units(plans: list[WorkloadPlan], pool: ResolvedPool) -> int:
    """Physical GPUs several workloads hold together: whole GPUs one by one, and the MIG instances or time slices of
    all of them packed onto the same GPUs, as the scheduler places any pod on any free part. Each GPU offers its parts
    of every kind of the pool's layout at once, so the kind that needs the most GPUs sets the count: two services of one
    time slice each on a 4-way sliced pool hold one GPU, not one each (rounding each up alone sized and billed a pool
    of 1-GPU nodes for four single-slice services at four nodes, where one holds them)."""
    whole = 0
    kinds: dict[str, tuple[int, int]] = {}  # a kind of part -> (parts of it a GPU offers, parts the workloads hold)
    for plan in plans:
        per_gpu = _parts_per_gpu(plan, pool)
        if per_gpu is None:
            whole += plan.gpus or 0
            continue
        held = kinds.get(plan.sharing or "", (per_gpu, 0))[1]
        kinds[plan.sharing or ""] = (per_gpu, held + (plan.gpus or 0))
    return whole + max((math.ceil(held / per_gpu) for per_gpu, held in kinds.values()), default=0)


def gpu_equivalents(plan: WorkloadPlan, pool: ResolvedPool) -> float:
    """The physical GPUs a workload's parts are billed as: each MIG instance by the share of its GPU's compute slices
    it is, each time slice 1 / the slices a GPU (ResolvedPool.gpu_units.gpu_share, what the cost rules weigh a pod
    holding one by); whole GPUs as they are. One slice of a 4-way sliced GPU is a quarter of it: the plan's showback
    charged it a whole GPU, four times what the cost rules then charge the team."""
    gpus = plan.gpus or 0
    units = pool.gpu_units
    if _parts_per_gpu(plan, pool) is None or units is None:
        return float(gpus)
    share = 1 / units.per_gpu
    if plan.sharing and plan.sharing.startswith("mig "):
        share = units.gpu_share.get(MIG_RESOURCE_PREFIX + plan.sharing.removeprefix("mig "), share)
    return gpus * share


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
    owned: bool = False
    capacity_type: str | None = None
    region: str | None = None
    price: NodePrice | None = None
    owned_cost: OwnedPoolCost | None = None

    @property
    def bought_as(self) -> str:
        """How the pool's nodes are paid for, as the pool table prints it: owned, the capacity type, and a Savings Plan
        discount where the spec declares one (review sizreview58 G6: "on-demand" beside the discounted price)."""
        if self.owned:
            return "owned"
        bought = (self.capacity_type or "-").replace("capacity-", "")
        discounted = self.price is not None and any(f.name.startswith(SAVINGS_PLAN_FACTOR) for f in self.price.factors)
        return f"{bought} + savings plan" if discounted else bought

    @property
    def usd_per_gpu_hour(self) -> float | None:
        """What one used GPU-hour of this pool costs: the owned TCO at forecast utilisation; a pool with reserved nodes,
        billed every hour used or not, its month over the busy GPU-hours, as owned capacity (its four reserved p5 nodes,
        $160,717 a month for 43.6 busy GPU-hours, quoted the node's $6.88: review sizreview5 F6); else the node price."""
        if self.owned_cost is not None:
            return self.owned_cost.usd_per_gpu_hour()
        if self.price is None:
            return None
        if (blocks := self._block_gpu_hour) is not None:
            return blocks
        node = self.price.usd_per_gpu_hour
        if self.price.reserved_nodes and self.monthly_cost_usd and self.gpu_hours_per_month > 0 and node is not None:
            return max(node, self.monthly_cost_usd / self.gpu_hours_per_month)
        return node

    @property
    def billed_usd_per_gpu_hour(self) -> float | None:
        """What showback bills one allocated GPU-hour, as plan's own showback splits a month: a rented pool's price;
        an owned pool's month over its installed GPU-hours, so that idle capacity stays with the platform.

        Not :attr:`usd_per_gpu_hour`: an owned pool's cost per *used* GPU-hour already spreads the idle hours over the
        used ones, and billing each allocated hour at it charged a team the forecast's idleness again (an owned H100
        pool forecast 3% busy billed $63 per GPU-hour, 30x the plan's showback)."""
        if self.owned and self.monthly_cost_usd is not None:
            installed = self.declared_max * self.gpus_per_node * HOURS_PER_MONTH
            return self.monthly_cost_usd / installed if installed else None
        if (blocks := self._block_gpu_hour) is not None:
            return blocks
        return self.price.usd_per_gpu_hour if self.price is not None else None

    @property
    def _block_gpu_hour(self) -> float | None:
        """A Capacity Block pool's price of a used GPU-hour, for the plan and for showback alike: its month (whole
        blocks, bought for the runs) over the GPU-hours the runs use. The block's idle hours are the run's, not the
        platform's: each run buys its block, so no other work fills them. Review sizreview18 F11: the team's month
        counted the whole block ($944 a run) while showback and the per-run KPI counted the used hours at the list
        rate ($232, $4.92 a GPU-hour where a used one cost $19.97). None for other pools or a month with no runs.

        The pool's average: its own figure, and the price of a pod no planned workload owns. Each planned workload pays
        its own blocks (WorkloadPlan.billed_usd_per_gpu_hour, alicerce.plan.growth.block_bookings): with two run
        lengths on one pool the average showed a $1,888 run back at $3,001 and a $944 one at $387 (review sizreview19
        F3)."""
        if self.price is None or not self.price.block_steps or not self.monthly_cost_usd or self.gpu_hours_per_month <= 0:
            return None
        return self.monthly_cost_usd / self.gpu_hours_per_month

    def to_json(self, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name, "site": self.site, "accelerator": self.accelerator, "gpus_per_node": self.gpus_per_node,
            "gpu_units": self.gpu_units,
            "declared": {"min": self.declared_min, "max": self.declared_max},
            "recommended": {"min": self.recommended_min, "max": self.recommended_max},
            "peak_gpus": self.peak_gpus, "gpu_hours_per_month": round(self.gpu_hours_per_month, 1),
            "utilization": rounded(self.utilization), "demand_ratio": rounded(self.demand_ratio),
            "monthly_cost_usd": None if self.monthly_cost_usd is None else round(self.monthly_cost_usd, 2),
            "owned": self.owned, "capacity_type": self.capacity_type, "region": self.region,
            "usd_per_gpu_hour": rounded(self.usd_per_gpu_hour), "billed_usd_per_gpu_hour": rounded(self.billed_usd_per_gpu_hour),
            "workloads": list(self.workloads),
        }  # fmt: skip
        if explain and self.price is not None:
            out["price_factors"] = [f.to_json() for f in self.price.factors]
        if explain and self.owned_cost is not None:
            out["tco"] = self.owned_cost.to_json()
        return out
