"""What one node of a cloud pool costs per hour, in its region and for its capacity type.

Prices carry their region and capacity type: the on-demand price of instances.yaml is moved to the
pool's region by the family's regional ratio, Spot is the family's Spot share of on-demand there,
Capacity Blocks have their own price list, On-Demand Capacity Reservations bill every reserved
instance whether it runs or not. A spec's `costs.cloud[]` entry (a negotiated price, a Savings Plan)
wins over the catalog. Where the catalog has no price for the region or capacity type the price is
unknown and says why (check PL311): never a us-east-1 or on-demand stand-in.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from pathlib import Path

from alicerce.catalog import Catalog
from alicerce.catalog.models import InstanceType
from alicerce.plan.figures import Factor
from alicerce.plan.sizing import Issue
from alicerce.resolve.model import ResolvedPool
from alicerce.spec.models import CloudPoolCosts, Costs

HOURS_PER_MONTH = 730.0


# the factor a pool's price carries where the spec declares a Savings Plan discount on it (the pool table's "bought as")
SAVINGS_PLAN_FACTOR = "Savings Plan / Reserved Instances discount"


@dataclass(frozen=True)
class NodePrice:
    """USD per node-hour of a cloud pool and how it was reached."""

    pool: str
    instance: str
    region: str
    capacity_type: str
    usd_per_hour: float | None
    factors: tuple[Factor, ...]
    reserved_nodes: int = 0  # billed every hour whether used or not (capacity reservations)
    issues: tuple[Issue, ...] = ()
    gpus_per_node: int = 1
    block_steps: tuple[tuple[int, int], ...] = ()  # Capacity Blocks: (up to hours, step hours) of the durations sold
    block_source: str = ""  # Capacity Blocks: where the durations sold come from
    # a catalog price whose source names the date it is next updated (Capacity Blocks): when it was read, that date and
    # where the catalog keeps it (file:line), so plan can say when the pool's month rests on a stale price (PL346;
    # review sizreview22 G5)
    as_of: datetime.date | None = None
    review_by: datetime.date | None = None
    where: str = ""

    @property
    def usd_per_gpu_hour(self) -> float | None:
        return None if self.usd_per_hour is None else self.usd_per_hour / max(1, self.gpus_per_node)


def capacity_type(pool: ResolvedPool) -> str:
    return pool.capacity_type  # its target's resolve decided it from the pool's section


def pool_region(pool: ResolvedPool) -> str:
    return str(getattr(pool.site, "region", ""))


def on_demand(instance: InstanceType, region: str, catalog: Catalog) -> tuple[float | None, tuple[Factor, ...], str]:
    """On-demand USD per hour in ``region`` (None and the reason when the catalog cannot say)."""
    base = instance.price
    # a price the catalog notes as an estimate (p5e: no public on-demand price, p5en's used) says so wherever it is quoted
    estimate = f" (estimate: {base.note})" if base.note else ""
    listed = Factor(f"on-demand {instance.type} in {base.region}{estimate}", base.usdPerHour, f"{base.source.url} ({base.asOf})")
    if region == base.region:
        return base.usdPerHour, (listed,), ""
    ratios = catalog.prices.regionFactors
    family = ratios.families.get(instance.family, {})
    if region not in family or base.region not in family:
        return None, (listed,), f"no on-demand price for {instance.type} in {region} (catalog: {', '.join(sorted(family)) or 'none'})"
    ratio = family[region] / family[base.region]
    factor = Factor(f"{region} / {base.region} price ratio ({instance.family})", ratio, f"{ratios.source.url} ({ratios.asOf})")
    return base.usdPerHour * ratio, (listed, factor), ""


def spot_price(
    instance: InstanceType, region: str, od: float, od_factors: tuple[Factor, ...], catalog: Catalog
) -> tuple[float, tuple[Factor, ...]] | None:
    """Spot USD per hour in ``region`` from its on-demand price there (None where the catalog has no Spot share)."""
    spot = catalog.prices.spot
    share = spot.families.get(instance.family, {}).get(region)
    if share is None:
        return None
    source = f"{spot.source.url} ({spot.asOf})"
    snapshot = spot.snapshotOnDemand.get(instance.type)
    if snapshot is not None:  # a fraction of the snapshot's price, carried to the region as on-demand is
        price = snapshot * od / instance.price.usdPerHour * share
        factors = (Factor(f"on-demand {instance.type} in the Spot snapshot (us-east-1)", snapshot, source),
                   *(f for f in od_factors if "price ratio" in f.name))  # fmt: skip
    else:
        price, factors = od * share, od_factors
    return price, (*factors, Factor(f"Spot share of on-demand ({instance.family}, {region})", share, source))


def _override(costs: Costs, pool: str) -> CloudPoolCosts | None:
    return next((c for c in costs.cloud if c.pool == pool), None)


def node_price(pool: ResolvedPool, catalog: Catalog, costs: Costs) -> NodePrice | None:
    """The pool's node-hour price, or None for pools that are not rented (on-prem)."""
    instance = pool.instance
    if pool.owned or instance is None:
        return None
    region, kind = pool_region(pool), capacity_type(pool)
    spec = _override(costs, pool.name)
    prices = catalog.prices
    issues: list[Issue] = []
    reserved = 0
    # a catalog price with an update date (Capacity Blocks): when it was read, that date, where the catalog keeps it
    as_of: datetime.date | None = None
    review_by: datetime.date | None = None
    where = ""
    if spec is not None and spec.usd_per_hour is not None:
        price: float | None = spec.usd_per_hour
        factors: tuple[Factor, ...] = (Factor("negotiated price per node-hour", spec.usd_per_hour, "spec"),)
    elif kind == "capacity-block":
        # a block is a flat fee per instance-hour that needs no on-demand price: p5e blocks sell only in us-east-2, where
        # the catalog has no on-demand row, and were once left unpriced there (review sizreview23 D1)
        block = prices.capacityBlocks.types.get(instance.type)
        if block is None or block.usdPerHour is None or region not in block.regions:
            price, factors = None, ()
            sold = block is not None and region in block.soldUnpriced
            issues.append(Issue("PL311", f"no Capacity Block price for {instance.type} in {region}"
                                + (f": AWS sells blocks there but its price table lists "
                                   f"{'only ' + ', '.join(block.regions) if block.regions else 'no price for the type'}; "
                                   f"left unpriced, not priced at another region's rate: declare the quoted price as "
                                   f"costs.cloud[{pool.name}].usdPerHour" if sold and block else "")))  # fmt: skip
        else:
            price = block.usdPerHour
            factors = (Factor(f"Capacity Block {instance.type}", block.usdPerHour,
                              f"{prices.capacityBlocks.source.url} ({prices.capacityBlocks.asOf})"),)  # fmt: skip
            as_of, review_by = prices.capacityBlocks.asOf, prices.capacityBlocks.reviewBy
            where = catalog_line("prices.yaml", "capacityBlocks:", f"{instance.type}:")
    else:
        od, factors, gap = on_demand(instance, region, catalog)
        price = od
        if od is None:
            issues.append(Issue("PL311", gap))
        elif kind == "spot":
            spot = spot_price(instance, region, od, factors, catalog)
            if spot is None:
                price = None
                issues.append(Issue("PL311", f"no Spot price for {instance.family} in {region}: left unpriced, not priced on-demand"))
            else:
                price, factors = spot
    # a reservation bills its instances used or not, at the on-demand price or at a negotiated one alike (a negotiated
    # price once skipped this and left the pool free: review sizreview2 D8)
    if kind == "capacity-reservation" and price is not None:
        if spec is not None and spec.reserved_nodes is not None:
            reserved = spec.reserved_nodes
        else:
            reserved = pool.spec.scaling.max
            issues.append(Issue("PL315", f"the reservation's size is not declared: priced as {reserved} reserved instances (max); "
                                f"set costs.cloud[{pool.name}].reservedNodes"))  # fmt: skip
        billed = "the negotiated price" if spec is not None and spec.usd_per_hour is not None else "on-demand"
        factors += (Factor(f"{reserved} reserved instances billed at {billed}, used or not", reserved,
                           f"{prices.capacityReservations.source.url} ({prices.capacityReservations.asOf})"),)  # fmt: skip
    # the pool's own month takes the discount on the hours it bills: a commitment that the account's use consumes
    # whole (AWS applies a Savings Plan to any eligible usage); own-vs-rent (rental_options) holds it every hour of the
    # term against an owned pool. The factor says which, so the two tables do not read as two prices for one purchase
    # (review sizreview9 F10)
    if price is not None and spec is not None and spec.savings_plan_discount is not None and kind not in ("spot", "capacity-block"):
        price *= 1 - spec.savings_plan_discount
        label = f"{SAVINGS_PLAN_FACTOR} on the hours billed (a commitment the account's use consumes)"
        factors += (Factor(label, 1 - spec.savings_plan_discount, "spec"),)
    # the durations AWS sells hold whatever the price (catalog or negotiated)
    steps = tuple((s.upToHours, s.stepHours) for s in prices.capacityBlocks.durationSteps) if kind == "capacity-block" else ()
    source = prices.capacityBlocks.durationSource.url if steps else ""
    return NodePrice(pool.name, instance.type, region, kind, price, factors, reserved, tuple(issues), instance.gpus or 1, steps, source,
                     as_of, review_by, where)  # fmt: skip


def block_hours(steps: tuple[tuple[int, int], ...], run_hours: float) -> float:
    """Hours of Capacity Block a run of ``run_hours`` must buy: the shortest duration sold that covers it (1-day steps up
    to 14 days, 7-day steps up to 182 days: 10 h buy 24, 15 days buy 21); a longer run buys whole longest blocks
    back to back and the shortest block that covers the rest."""
    if not steps or run_hours <= 0:
        return max(0.0, run_hours)
    longest = steps[-1][0]
    whole, rest = divmod(run_hours, longest)
    bought = whole * longest
    if rest > 1e-9:
        for up_to, step in steps:
            if rest <= up_to:
                bought += math.ceil(rest / step - 1e-9) * step
                break
    return float(bought)


def run_block_cost(price: NodePrice, gpus: int, run_hours: float) -> float | None:
    """What one run on ``gpus`` GPUs for ``run_hours`` of wall clock pays for its Capacity Blocks: every node it holds,
    for the whole block it must buy (review sizreview3 D12); None for a price that is not a Capacity Block's."""
    if not price.block_steps or price.usd_per_hour is None:
        return None
    nodes = math.ceil(gpus / max(1, price.gpus_per_node))
    return nodes * block_hours(price.block_steps, run_hours) * price.usd_per_hour


def monthly_node_cost(price: NodePrice, node_hours: float) -> float | None:
    """A month of a rented pool that bills ``node_hours`` (alicerce.plan.growth.rented_node_hours: its floor, what its
    workloads hold above it hour by hour, its cap); None where the pool has no price."""
    return None if price.usd_per_hour is None else node_hours * price.usd_per_hour


def cheapest_rental(gpu_id: str, region: str, catalog: Catalog) -> tuple[str, float, tuple[Factor, ...]] | None:
    """(instance type, on-demand USD per GPU-hour, factors) of the cheapest catalog type with this GPU in ``region``:
    a type AWS lists a price for before one whose price is an estimate (p5e quoted p5en's, a type that cannot be rented
    on demand: review sizreview5 F10), then the cheaper."""
    ranked: list[tuple[bool, float, str, tuple[Factor, ...]]] = []
    for instance in catalog.instances:
        if instance.gpu != gpu_id or not instance.gpus:
            continue
        price, factors, _ = on_demand(instance, region, catalog)
        if price is not None:
            ranked.append((bool(instance.price.note), price / instance.gpus, instance.type, factors))
    if not ranked:
        return None
    _, usd, instance_type, factors = min(ranked, key=lambda r: r[:3])
    return instance_type, usd, factors


@dataclass(frozen=True)
class RentalOption:
    """One way a buyer can rent the GPUs of an owned pool, per GPU-hour, and how it is billed.

    ``held``: billed every hour of the month whether used or not (a capacity reservation, a Savings Plan's
    commitment); otherwise billed per used hour (on-demand, Capacity Blocks in days, Spot).
    """

    purchase: str  # on-demand | savings-plan | capacity-block | capacity-reservation | spot
    instance: str
    usd_per_gpu_hour: float
    held: bool
    factors: tuple[Factor, ...]
    # reclaimable at two minutes' notice, and P-family Spot capacity is scarce: shown beside the others, but no
    # substitute for GPUs a run must hold for weeks, so it does not decide which way of buying them wins
    interruptible: bool = False
    # when the price was read, the date its source says it is next updated, and where the catalog keeps it
    # (file:line): what PL346 compares (review sizreview20 F7)
    as_of: datetime.date | None = None
    review_by: datetime.date | None = None
    where: str = ""

    def monthly_usd(self, gpus: int, utilization: float) -> float:
        """A month of ``gpus`` rented this way when ``utilization`` of their hours are used."""
        return self.usd_per_gpu_hour * gpus * HOURS_PER_MONTH * (1.0 if self.held else utilization)


@dataclass(frozen=True)
class UnpricedOption:
    """A purchase option AWS sells for the GPU in the region but publishes no price for, or one the spec prices only for
    another instance family: own-vs-rent lists it and cannot weigh it, so its bands are read as incomplete rather than
    as if it were not on offer (review sizreview23 G4)."""

    purchase: str
    instance: str
    why: str
    short: str  # what the own-vs-rent table and verdict say of it


def unpriced_options(gpu_id: str, region: str, catalog: Catalog) -> tuple[UnpricedOption, ...]:
    """The Capacity Blocks of ``gpu_id`` sold in ``region`` with no row in the price table (prices.yaml soldUnpriced)."""
    blocks = catalog.prices.capacityBlocks
    out = []
    for instance_type in catalog.instances:
        block = blocks.types.get(instance_type.type)
        if instance_type.gpu != gpu_id or block is None or region in block.regions or region not in block.soldUnpriced:
            continue
        listed = ", ".join(block.regions) or "no region"
        why = f"AWS sells {instance_type.type} Capacity Blocks in {region} but its price table lists {listed}"
        out.append(UnpricedOption("capacity-block", instance_type.type, why, f"sold in {region} with no published price"))
    return tuple(out)


def rental_options(gpu_id: str, region: str, catalog: Catalog, discounts: list[tuple[str, float, str]]) -> tuple[RentalOption, ...]:
    """Every purchase option the catalog and the spec price for ``gpu_id`` in ``region``, cheapest type each.

    ``discounts`` are the spec's Savings Plan / Reserved Instances discounts as (pool, discount, the pool's instance
    family); only those of the rented instance's family apply: Reserved Instances and EC2 Instance Savings Plans are
    bought for one family, and a Compute Savings Plan's rate differs by family, so a g6 discount says nothing of p5's
    (review sizreview49 D4: a 60% discount declared on an L4 pool priced a p5 at 60% off). Against an owned
    pool the commitment buys its GPUs for every hour of a one- or three-year term: AWS bills the part no usage
    consumes (Cost Explorer's SavingsPlansUtilization: UnusedCommitment), so it is held, like a reservation at the
    discounted rate. Billing it per used hour let a bursty schedule rent "cheaper" than owning with a commitment that
    cost 45% more (review sizreview8 F4); a fleet whose other usage soaks up the idle hours is not this pool's.
    """
    out: list[RentalOption] = []
    od = cheapest_rental(gpu_id, region, catalog)
    if od is not None:
        instance, usd, factors = od
        itype = next(i for i in catalog.instances if i.type == instance)
        as_of, where = itype.price.asOf, catalog_line("instances.yaml", f"- type: {instance}", "usdPerHour:")
        out.append(RentalOption("on-demand", instance, usd, False, factors, as_of=as_of, where=where))
        if same := [(pool, discount) for pool, discount, family in discounts if family == itype.family]:
            pool, discount = max(same, key=lambda d: (d[1], d[0]))
            factor = Factor(f"Savings Plan / Reserved Instances discount (costs.cloud[{pool}])", 1 - discount, "spec")
            out.append(RentalOption("savings-plan", instance, usd * (1 - discount), True, (*factors, factor), as_of=as_of, where=where))
        reservations = catalog.prices.capacityReservations
        factor = Factor("reserved instances billed at on-demand, used or not", 1.0, f"{reservations.source.url} ({reservations.asOf})")
        out.append(RentalOption("capacity-reservation", instance, usd, True, (*factors, factor), as_of=as_of, where=where))
        spot = spot_price(itype, region, usd * (itype.gpus or 1), factors, catalog)
        if spot is not None:
            out.append(RentalOption("spot", instance, spot[0] / (itype.gpus or 1), False, spot[1], interruptible=True))
    blocks = catalog.prices.capacityBlocks
    best: RentalOption | None = None
    for instance_type in catalog.instances:
        block = blocks.types.get(instance_type.type)
        if instance_type.gpu != gpu_id or not instance_type.gpus or block is None:
            continue
        if block.usdPerHour is None or region not in block.regions:  # sold unpriced: unpriced_options lists it
            continue
        usd = block.usdPerHour / instance_type.gpus
        if best is None or usd < best.usd_per_gpu_hour:
            factor = Factor(f"Capacity Block {instance_type.type}", block.usdPerHour, f"{blocks.source.url} ({blocks.asOf})")
            where = catalog_line("prices.yaml", "capacityBlocks:", f"{instance_type.type}:")
            best = RentalOption("capacity-block", instance_type.type, usd, False, (factor,), as_of=blocks.asOf,
                                review_by=blocks.reviewBy, where=where)  # fmt: skip
    if best is not None:
        out.append(best)
    return tuple(out)


CATALOG_DATA = Path(__file__).resolve().parent.parent / "catalog" / "data"


def catalog_line(file: str, anchor: str, key: str) -> str:
    """``alicerce/catalog/data/<file>:<line>`` of the first line holding ``key`` after the line holding ``anchor``: where
    a price a finding names is kept, so a reader can check or update it (review sizreview20 F7)."""
    lines = (CATALOG_DATA / file).read_text("utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if anchor in line), 0)
    found = next((i for i in range(start, len(lines)) if key in lines[i].split("#")[0]), start)
    return f"alicerce/catalog/data/{file}:{found + 1}"
