"""Total cost of ownership of owned (on-prem) GPU pools, and where owning beats renting.

A month of an owned pool of N nodes at forecast utilisation u::

    capex    = N x (server + fabric) / (life years x 12)              amortised straight-line, or with a
               declared cost of capital r a year: N x (server + fabric) x i / (1 - (1 + i)^-(12 x life)), i = r / 12
    support  = N x server x support share per year / 12
    space    = N x node kW x colocation USD per kW-month              (or racks x rack price)
    power    = N x node kW x (idle + (load - idle) x u) x PUE x USD per kWh x 730
    staff    = (N / nodes per FTE, or the site's declared FTE by node share) x USD per FTE-year / 12
    licences = GPUs x USD per GPU-year / 12

Cost per used GPU-hour = month / (GPUs x 730 x u). Writing month = F + V x u (V: the power that
follows utilisation), owning matches renting at ``p`` USD per GPU-hour when
``u* = F / (p x GPUs x 730 - V)``: the break-even utilisation. Every figure comes from the spec's
`costs.owned[]` entry or, failing that, catalog/data/tco.yaml with its date and source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from alicerce.catalog import Catalog
from alicerce.catalog.models import TcoFactor
from alicerce.plan.figures import Factor, rounded
from alicerce.plan.sizing import Issue
from alicerce.resolve.model import ResolvedPool
from alicerce.spec.models import Costs, OnpremPoolCosts, OnpremSiteCosts

HOURS_PER_MONTH = 730.0


@dataclass(frozen=True)
class OwnedPoolCost:
    """A month of one owned pool, item by item, at one utilisation."""

    pool: str
    site: str
    nodes: int
    gpus: int
    utilization: float
    items: dict[str, float]  # capex, support, space, power, staff, licences (USD per month)
    fixed_usd: float  # the part that does not follow utilisation (F)
    variable_usd_at_full: float  # power that follows utilisation, at u = 1 (V)
    racks: int
    node_kw: float
    factors: tuple[Factor, ...]
    issues: tuple[Issue, ...] = ()
    complete: bool = True  # False when a price (a server) is unknown: the total is a lower bound

    @property
    def monthly_usd(self) -> float:
        return sum(self.items.values())

    def at(self, utilization: float) -> float:
        """The month's cost at another utilisation."""
        return self.fixed_usd + self.variable_usd_at_full * utilization

    def usd_per_gpu_hour(self, utilization: float | None = None) -> float | None:
        u = self.utilization if utilization is None else utilization
        if u <= 0 or not self.gpus:
            return None
        return self.at(u) / (self.gpus * HOURS_PER_MONTH * u)

    def break_even(self, rental_usd_per_gpu_hour: float) -> float | None:
        """Utilisation above which owning costs less per used GPU-hour than renting; None if never (u* > 1)."""
        denominator = rental_usd_per_gpu_hour * self.gpus * HOURS_PER_MONTH - self.variable_usd_at_full
        if denominator <= 0:
            return None
        u = self.fixed_usd / denominator
        return u if u <= 1 else None

    def marginal_usd_per_gpu_hour(self) -> float:
        """What one more busy GPU-hour costs on capacity already owned: the power it adds."""
        return self.variable_usd_at_full / max(1, self.gpus) / HOURS_PER_MONTH

    def to_json(self) -> dict[str, Any]:
        return {
            "pool": self.pool, "site": self.site, "nodes": self.nodes, "gpus": self.gpus, "racks": self.racks,
            "node_kw": rounded(self.node_kw), "utilization": rounded(self.utilization),
            "monthly_usd": rounded(self.monthly_usd), "items": {k: rounded(v) for k, v in self.items.items()},
            "usd_per_gpu_hour": rounded(self.usd_per_gpu_hour()), "complete": self.complete,
            "factors": [f.to_json() for f in self.factors],
        }  # fmt: skip


def site_costs(costs: Costs, site: str) -> OnpremSiteCosts:
    return next((s for s in costs.owned_sites if s.site == site), OnpremSiteCosts.model_validate({"site": site}))


def _pool_costs(site: OnpremSiteCosts, pool: str) -> OnpremPoolCosts:
    return next((p for p in site.pools if p.pool == pool), OnpremPoolCosts.model_validate({"pool": pool}))


@dataclass
class _Inputs:
    """Each factor from the spec when given, else the catalog; remembers which for --explain."""

    site: OnpremSiteCosts
    catalog: Catalog
    factors: list[Factor] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)  # spec keys whose low-trust catalog default the month used

    def get(self, key: str, spec_value: float | None, default: TcoFactor, label: str) -> float:
        """``key``: the spec's name for the figure (costs.onprem[].<key>), named when a low-trust default stands in."""
        if spec_value is not None:
            self.factors.append(Factor(label, spec_value, "spec"))
            return spec_value
        self.factors.append(
            Factor(label, default.value, f"{default.source.url or default.source.title} ({default.asOf}, {default.trust} trust)")
        )
        if default.trust == "low":
            self.assumed.append(key)
        return default.value


def monthly_capex(principal: float, life_years: float, rate: float | None) -> float:
    """A month of ``principal`` spent on hardware that lasts ``life_years``: straight-line without a cost of capital,
    else the payment of a loan at ``rate`` a year over the life (an annuity; equal to straight-line at rate 0)."""
    months = life_years * 12
    if not rate:
        return principal / months
    i = rate / 12
    payment: float = principal * i / (1 - (1 + i) ** -months)
    return payment


def _capital(site: OnpremSiteCosts, inputs: _Inputs, issues: list[Issue], owned_key: str) -> float | None:
    """The site's declared cost of capital (a factor of the explanation), or None with PL325 saying capex carries no
    interest: no public rate fits every buyer, so the plan asks for the buyer's own rather than assume one."""
    if site.cost_of_capital is not None:
        inputs.factors.append(Factor("cost of capital (per year)", site.cost_of_capital, "spec"))
        return site.cost_of_capital
    issues.append(Issue("PL325", f"no cost of capital for site {site.site}: capex is spread over the hardware's life without "
                        f"interest, which understates owning; set costs.{owned_key}[{site.site}].costOfCapital (e.g. 0.08)"))  # fmt: skip
    return None


def _per_gpu(catalog_gpus: int, pool_gpus: int) -> str:
    """How a figure for the catalog's node shape was carried over to the pool's (nothing where they match)."""
    return "" if catalog_gpus == pool_gpus else f": the {catalog_gpus}-GPU node's x {pool_gpus}/{catalog_gpus} GPUs"


def owned_pool_cost(
    pool: ResolvedPool, costs: Costs, catalog: Catalog, utilization: float, *, staff_share: float | None = None
) -> OwnedPoolCost:
    """A month of an owned GPU pool at ``utilization`` (0-1); ``staff_share`` is this pool's share of a
    site's declared staff (by nodes), when the site declares an FTE count."""
    tco = catalog.tco
    site = site_costs(costs, pool.site.name)
    spec_pool = _pool_costs(site, pool.name)
    inputs = _Inputs(site, catalog)
    issues: list[Issue] = []
    nodes = pool.spec.scaling.max
    gpus = nodes * pool.gpus_per_node
    gpu_id = pool.gpu.id if pool.gpu else ""
    complete = True
    if spec_pool.server_usd is not None:
        server: float | None = spec_pool.server_usd
        inputs.factors.append(Factor("server per node (USD)", spec_pool.server_usd, "spec"))
    elif gpu_id in tco.server:
        quote = tco.server[gpu_id]
        # a quote prices one node shape: a pool of 4-GPU nodes paid the 8-GPU server's price per node (and its power,
        # below) until the count scaled it
        server = quote.usd * pool.gpus_per_node / quote.gpus
        scaled = "" if pool.gpus_per_node == quote.gpus else f", scaled per GPU to {pool.gpus_per_node}: ${server:,.0f}"
        inputs.factors.append(Factor(f"server per node (USD){_per_gpu(quote.gpus, pool.gpus_per_node)}", server,
                                     f"{quote.source.url} ({quote.asOf}, {quote.trust} trust)"))  # fmt: skip
        issues.append(Issue("PL319", f"server price is the catalog's market quote for {quote.gpus}-GPU {gpu_id} nodes "
                            f"(${quote.usd:,.0f}, {quote.asOf}{scaled}); put your quote in "
                            f"costs.{costs.owned_key}[{site.site}].pools[{pool.name}].serverUsd"))  # fmt: skip
    else:
        server = None
        complete = False
        issues.append(Issue("PL311", f"no server price for {gpu_id or 'these'} nodes: capex and support left out; "
                            f"set costs.{costs.owned_key}[{site.site}].pools[{pool.name}].serverUsd"))  # fmt: skip
    # the catalog's fabric is a compute fabric's share per node (adapters, switches, cables): a pool with no RDMA fabric
    # buys none (it was charged one: review sizreview2 D4); its Ethernet is the site's
    if spec_pool.network_usd is not None:
        fabric: float = spec_pool.network_usd
        inputs.factors.append(Factor("fabric per node (USD)", fabric, "spec"))
    elif pool.rdma is None:
        fabric = 0.0
        inputs.factors.append(Factor("fabric per node (USD): the pool declares no RDMA fabric", fabric, "spec"))
    else:
        share = tco.fabricPerNode
        # switch ports, cables and optics are bought per rail of the fabric; adapters a node has beyond its rails
        # (hcas above rails: storage or spare ports) are not on it (review tcoreview 1)
        rails = pool.rdma.fabric.rails
        fabric = share.usd * rails / share.rails
        source = f"{share.source.url} ({share.asOf}, {share.trust} trust)"
        label = "" if rails == share.rails else f": the {share.rails}-rail node's share x {rails}/{share.rails} rails"
        inputs.factors.append(Factor(f"fabric per node (USD){label}", fabric, source))
        if share.trust == "low":  # one public sheet's row; PL329 names it (review sizreview23 N3)
            inputs.assumed.append(f"pools[{pool.name}].networkUsd")
    if spec_pool.node_power_kw is not None:
        node_kw = spec_pool.node_power_kw
        inputs.factors.append(Factor("node power (kW, max)", node_kw, "spec"))
    elif gpu_id in tco.nodePowerKw:
        power = tco.nodePowerKw[gpu_id]
        node_kw = power.kw * pool.gpus_per_node / power.gpus
        inputs.factors.append(Factor(f"node power (kW, max){_per_gpu(power.gpus, pool.gpus_per_node)}", node_kw,
                                     f"{power.source.url} ({power.asOf}, {power.trust} trust)"))  # fmt: skip
    else:
        tdp = pool.gpu.tdpWatts if pool.gpu else 0
        host, count = tco.hostPowerKw, pool.gpus_per_node
        node_kw = host.kw * count / host.gpus + count * tdp / 1000
        label = "host + GPUs x TDP" if count == host.gpus else f"the {host.gpus}-GPU host's x {count}/{host.gpus} + GPUs x TDP"
        inputs.factors.append(Factor(f"node power (kW, max): {label}", node_kw, f"{host.source.url} and gpus.yaml"))
    life = inputs.get("lifeYears", site.life_years, tco.lifeYears, "amortisation (years)")
    capital = _capital(site, inputs, issues, costs.owned_key)
    support = inputs.get(
        "supportFractionPerYear", site.support_fraction_per_year, tco.supportFractionPerYear, "support per year (share of server)"
    )
    pue = inputs.get("pue", site.pue, tco.pue, "PUE")
    tariff = inputs.get("electricityUsdPerKwh", site.electricity_usd_per_kwh, tco.electricityUsdPerKwh, "electricity (USD/kWh)")
    # both low trust (a blog's planning rule, alicerce's own idle figure) and declarable, so PL329 names them where the
    # month uses them (they were neither: review sizreview23 N3)
    load = inputs.get("loadFraction", site.load_fraction, tco.loadFraction, "draw at full load (share of max)")
    idle = inputs.get("idleFraction", site.idle_fraction, tco.idleFraction, "draw when idle (share of max)")
    kw_per_rack = inputs.get("kwPerRack", site.kw_per_rack, tco.kwPerRack, "kW per rack")
    per_rack = max(1, math.floor(kw_per_rack / node_kw))
    racks = math.ceil(nodes / per_rack) if nodes else 0
    if site.rack_usd_per_month is not None:
        space = racks * site.rack_usd_per_month
        inputs.factors.append(Factor("rack (USD/month)", site.rack_usd_per_month, "spec"))
    else:
        rate = inputs.get(
            "colocationUsdPerKwMonth", site.colocation_usd_per_kw_month, tco.colocationUsdPerKwMonth, "space and cooling (USD per kW-month)"
        )
        space = nodes * node_kw * rate
    licence = inputs.get("licenceUsdPerGpuYear", site.licence_usd_per_gpu_year, tco.licenceUsdPerGpuYear, "licences (USD per GPU-year)")
    fte_cost = inputs.get("usdPerFteYear", site.usd_per_fte_year, tco.usdPerFteYear, "engineer (USD/year)")
    if staff_share is not None and site.staff_fte is not None:
        fte = site.staff_fte * staff_share
        inputs.factors.append(Factor("engineers (share of the site's declared FTE)", fte, "spec"))
    else:
        per_fte = tco.nodesPerFte
        fte = nodes / per_fte.value
        inputs.factors.append(Factor("engineers (nodes / nodes per FTE)", fte, f"{per_fte.source.title} ({per_fte.trust} trust)"))
        if per_fte.trust == "low":
            inputs.assumed.append("staffFte")
    # issue 23: the defaults no public source pins down (a 2010 mailing-list salary, a staffing ratio alicerce chose) are
    # the buyer's own figures to give: the plan names the ones this month rests on, as PL319 does the server quote
    if inputs.assumed:
        issues.append(Issue("PL329", f"the month rests on low-trust catalog defaults for {', '.join(sorted(set(inputs.assumed)))}: "
                            f"put your own figures in costs.{costs.owned_key}[{site.site}]"))  # fmt: skip
    power_full = nodes * node_kw * HOURS_PER_MONTH * pue * tariff
    items = {
        "capex": monthly_capex(nodes * ((server or 0.0) + fabric), life, capital),
        "support": nodes * (server or 0.0) * support / 12,
        "space": space,
        "power": power_full * (idle + (load - idle) * utilization),
        "staff": fte * fte_cost / 12,
        "licences": gpus * licence / 12,
    }
    variable = power_full * (load - idle)
    fixed = sum(items.values()) - variable * utilization
    return OwnedPoolCost(
        pool.name, pool.site.name, nodes, gpus, utilization, items, fixed, variable, racks, node_kw, tuple(inputs.factors),
        tuple(issues), complete,
    )  # fmt: skip


@dataclass(frozen=True)
class SiteExtras:
    """Costs of an owned site that belong to no pool: shared storage and connectivity."""

    site: str
    storage_tb: float
    storage_usd: float
    connectivity_usd: float
    factors: tuple[Factor, ...]
    storage_gbps: float = 0.0  # the throughput the site's shared tiers declare, GB/s
    issues: tuple[Issue, ...] = ()

    @property
    def monthly_usd(self) -> float:
        return self.storage_usd + self.connectivity_usd


def site_extras(site: str, storage_bytes: float, storage_bytes_per_second: float, costs: Costs, catalog: Catalog) -> SiteExtras:
    """The month of an owned site's shared storage (its tiers' capacity, and the throughput they declare where the
    spec prices it) and links."""
    tco = catalog.tco
    spec = site_costs(costs, site)
    inputs = _Inputs(spec, catalog)
    issues: list[Issue] = []
    per_tb = inputs.get("storageUsdPerTb", spec.storage_usd_per_tb, tco.storageUsdPerTb, "shared storage (USD per TB, one-time)")
    life = inputs.get("lifeYears", spec.life_years, tco.lifeYears, "amortisation (years)")
    tb = storage_bytes / 1e12
    gbps = storage_bytes_per_second / 1e9
    principal = tb * per_tb
    if spec.storage_usd_per_gbps is not None:
        principal += gbps * spec.storage_usd_per_gbps
        inputs.factors.append(Factor("shared storage throughput (USD per GB/s, one-time)", spec.storage_usd_per_gbps, "spec"))
    elif gbps and spec.storage_usd_per_tb is None:
        # the catalog's figure is RAID-6 hard-disk capacity: what delivers a declared throughput (flash, servers, ports)
        # is priced by no public figure, so the buyer's own is asked for rather than the tier costed as disk alone
        issues.append(Issue("PL353", f"its shared tiers declare {gbps:,.4g} GB/s in all, which the catalog's ${per_tb:,.0f} per TB "
                            f"of hard-disk capacity does not buy: set costs.{costs.owned_key}[{site}].storageUsdPerGbps, or "
                            "storageUsdPerTb to the price of the tier you buy"))  # fmt: skip
    connectivity = spec.connectivity_usd_per_month or 0.0
    if spec.connectivity_usd_per_month is not None:
        inputs.factors.append(Factor("connectivity (USD/month)", connectivity, "spec"))
    if spec.cost_of_capital is not None:
        inputs.factors.append(Factor("cost of capital (per year)", spec.cost_of_capital, "spec"))
    storage = monthly_capex(principal, life, spec.cost_of_capital)
    return SiteExtras(site, tb, storage, connectivity, tuple(inputs.factors), gbps, tuple(issues))
