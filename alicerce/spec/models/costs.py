"""What owned and rented capacity costs, where the catalog's dated defaults do not fit this platform.

Every figure here is optional: `alicerce plan --tco` takes the spec's figure when given and the
catalog's (alicerce/catalog/data/tco.yaml and prices.yaml, each with its source and date) otherwise,
and `--explain` says which one it used.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt

from alicerce.spec.base import Name, SpecModel

# A price past a billion dollars is a typo (and would overflow the totals to infinity).
MAX_USD = 1e9


class OnpremPoolCosts(SpecModel):
    """Capital cost and power of one on-prem pool's nodes."""

    pool: Name = Field(description="On-prem node pool.")
    server_usd: float | None = Field(default=None, ge=0, le=MAX_USD, description="Price of one node (servers with GPUs and NICs).")
    network_usd: float | None = Field(
        default=None, ge=0, le=MAX_USD, description="Compute-fabric cost per node (switches, cables, optics)."
    )
    node_power_kw: float | None = Field(default=None, gt=0, le=1000, description="Maximum input power of one node in kW.")


class OnpremSiteCosts(SpecModel):
    """The cost of running an on-prem site: amortisation, energy, space, staff, support, storage, links."""

    site: Name = Field(description="On-prem site.")
    life_years: float | None = Field(default=None, gt=0, le=15, description="Years the hardware is amortised over.")
    cost_of_capital: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Yearly rate of the money that buys the hardware (your WACC or borrowing rate; 0.08: 8%): capex becomes "
        "the monthly payment of a loan over lifeYears. Default: none, capex is spread straight-line without interest, and "
        "`alicerce plan` says so (PL325).",
        examples=[0.08],
    )
    pue: float | None = Field(default=None, ge=1, le=3, description="Power usage effectiveness (cooling and losses).")
    electricity_usd_per_kwh: float | None = Field(default=None, ge=0, le=100, description="Electricity tariff in USD per kWh.")
    colocation_usd_per_kw_month: float | None = Field(
        default=None, ge=0, le=MAX_USD, description="Space, cooling and power distribution per kW of provisioned IT power per month."
    )
    rack_usd_per_month: float | None = Field(
        default=None, ge=0, le=MAX_USD, description="Price of one rack per month; when given, racks are priced instead of kW."
    )
    kw_per_rack: float | None = Field(default=None, gt=0, le=1000, description="Power one rack can feed and cool.")
    load_fraction: float | None = Field(
        default=None, gt=0, le=1, description="A node's average draw at full GPU load, as a share of its maximum power (default 0.8)."
    )
    idle_fraction: float | None = Field(
        default=None, ge=0, le=1, description="A node's average draw when its GPUs are idle, as a share of its maximum power (default 0.3)."
    )
    support_fraction_per_year: float | None = Field(
        default=None, ge=0, le=1, description="Hardware support per year as a share of the server price."
    )
    licence_usd_per_gpu_year: float | None = Field(
        default=None, ge=0, le=MAX_USD, description="Software licences per GPU per year (NVIDIA AI Enterprise: 4500)."
    )
    staff_fte: float | None = Field(default=None, ge=0, le=10**6, description="Operations engineers for the site (default: nodes / 48).")
    usd_per_fte_year: float | None = Field(default=None, ge=0, le=MAX_USD, description="Fully loaded yearly cost of one engineer.")
    storage_usd_per_tb: float | None = Field(
        default=None, ge=0, le=MAX_USD, description="One-time price per TB of the site's shared storage, amortised over life."
    )
    storage_usd_per_gbps: float | None = Field(
        default=None,
        ge=0,
        le=MAX_USD,
        description="One-time price per GB/s of the throughput the site's shared tiers declare (the storage servers, flash "
        "and network ports that deliver it), amortised over life beside the price per TB. Default: none; the catalog's "
        "price per TB is hard-disk capacity, so a declared throughput left unpriced is a finding (PL353).",
        examples=[2000],
    )
    connectivity_usd_per_month: float | None = Field(default=None, ge=0, le=MAX_USD, description="WAN links and cross-connects per month.")
    pools: list[OnpremPoolCosts] = Field(default_factory=list, description="Per-pool capital cost and power.")


class CloudPoolCosts(SpecModel):
    """What a cloud pool's capacity is bought at, where that differs from the catalog's list prices."""

    pool: Name = Field(description="Cloud node pool.")
    reserved_nodes: StrictInt | None = Field(
        default=None, ge=0, le=10**6, description="Instances held by the pool's capacity reservation (billed whether used or not)."
    )
    savings_plan_discount: float | None = Field(
        default=None, ge=0, lt=1, description="Discount of a Savings Plan or Reserved Instances off on-demand (0.3: 30%)."
    )
    usd_per_hour: float | None = Field(default=None, gt=0, le=MAX_USD, description="A negotiated price per instance-hour.")


class Costs(SpecModel):
    """Inputs of the total cost of ownership and of the growth forecast."""

    horizon_quarters: StrictInt = Field(default=8, ge=1, le=40, description="Quarters the growth forecast covers.")
    owned: list[OnpremSiteCosts] = Field(
        default_factory=list, description="Owned sites (servers bought, not rented): what running each costs."
    )
    onprem: list[OnpremSiteCosts] = Field(default_factory=list, description="The old name of `owned`, still read (give one of the two).")
    cloud: list[CloudPoolCosts] = Field(default_factory=list, description="Cloud pools bought other than at list price.")

    @property
    def owned_key(self) -> Literal["owned", "onprem"]:
        """The key the spec lists its owned sites under: `owned`, or its old name where only that is given."""
        return "onprem" if self.onprem and not self.owned else "owned"

    @property
    def owned_sites(self) -> list[OnpremSiteCosts]:
        """Every owned site's costs, under either key (AL350 reports a spec that gives both)."""
        return [*self.owned, *self.onprem]
