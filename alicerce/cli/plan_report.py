"""The human-readable plan: the tables of `alicerce plan` (laid out for the width they have, ids never
cut: alicerce.cli.output), and the `--explain` arithmetic.

Presentation only; every number comes from :class:`alicerce.plan.platform.SizingPlan`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from alicerce.cli.output import Column, Table, camel_keys, console, print_json, print_table
from alicerce.plan.findings import CHECKS

if TYPE_CHECKING:
    from rich.console import Console

    from alicerce.plan.figures import Figure
    from alicerce.plan.platform import SizingPlan
    from alicerce.plan.sizing import WorkloadPlan

# identifiers a user types again: whole in every layout
KEYS = {"workload", "pool", "GPU", "tier", "team", "id", "rent"}

STYLES = {"error": "red", "warning": "yellow", "info": "cyan"}
KIND = {"training": "train", "fine-tuning": "fine-tune", "inference": "serve", "batch-inference": "batch", "data-prep": "data"}


def _per_tib(fsx: dict[str, Any]) -> str:
    """A file system's MB/s a TiB: its PerUnitStorageThroughput, or a scratch type's baseline, which takes no setting
    (its throughput over its TiB; review sizreview33 N-2: "at base" named no figure)."""
    if fsx["perUnitStorageThroughput"]:
        return f"{fsx['perUnitStorageThroughput']} MB/s/TiB"
    return f"the {fsx['throughputMBps'] * 1024 / fsx['storageCapacityGiB']:,.0f} MB/s/TiB baseline"


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:.3e}"
    return str(value)


def _target(value: float, unit: str, op: str = "") -> str:
    """A KPI target as the table prints it. Cents and percentages round away from the bound's side, an upper bound up and
    a lower one down, so a live value at the plan's exact figure never reads past the printed one ($12.954 printed
    "<= $12.95" read over it: review obsreview24 N5). Whole dollars stay the nearest: a budget's share is the threshold
    the rules hold to six digits (alicerce.emit.kube.costs), and $1 either way of a run's cost is no reading. The JSON
    carries the exact figure."""

    def bound(scaled: float, digits: int) -> float:
        unit_step = 10**digits
        rounded = math.ceil(scaled * unit_step - 1e-9) if op == "<=" else math.floor(scaled * unit_step + 1e-9) if op == ">=" else None
        return scaled if rounded is None else rounded / unit_step

    if unit == "ratio":
        digits = 2 if value < 0.01 else 1
        return f"{bound(value * 100, digits):.{digits}f}%"
    if unit == "USD":
        return _usd(value) if value >= 100 else f"${bound(value, 2):,.2f}"
    if unit == "s" and value >= 3600:
        return f"{value / 3600:g} h"
    return f"{value:g}"


def _table(title: str, columns: list[tuple[str, str]]) -> Table:
    return Table(title, [Column(name, key=name in KEYS, numeric=justify == "right") for name, justify in columns])


def print_checks(as_json: bool) -> None:
    if as_json:
        print_json({"schemaVersion": 1, "checks": [camel_keys(c.to_json()) for c in CHECKS.values()]})
        return
    table = _table("Plan checks (waive with `waivers: [{rule: PL3xx, ...}]`)", [("id", "left"), ("severity", "left"),
                   ("waivable", "left"), ("checks", "left")])  # fmt: skip
    for c in CHECKS.values():
        table.add(c.id, c.severity.label, "yes" if c.waivable else "", c.summary)
    print_table(table, console())


def print_plan(console: Console, result: SizingPlan, *, explain: bool = False, tco: bool = False, user: list[str] | None = None) -> None:
    user = user or []
    workloads = _table(
        f"Workloads ({result.environment})",
        [("workload", "left"), ("kind", "left"), ("pool", "left"), ("GPUs", "right"), ("days", "right"), ("GPU-h", "right"),
         ("MFU", "right"), ("cost USD", "right"), ("showback", "right"), ("repl", "right"), ("tok/s", "right")],
    )  # fmt: skip
    for w in result.workloads:
        gpus = _num(w.gpus) if w.cpu_cores is None else f"{w.cpu_cores} cpu"
        if w.gpus is not None and w.gpu_share != 1:  # a shared pool's parts, and the whole GPUs they are
            gpus = f"{w.gpus:,} = {w.gpus * w.gpu_share:,.3g}"
        workloads.add(
            w.name, KIND.get(w.kind, w.kind), w.pool or "-", gpus, _num(w.wall_clock_days, 1), _num(w.whole_gpu_hours),
            _pct(w.mfu), _num(w.cost_usd), _num(w.showback_usd), _num(w.replicas), _num(w.tokens_per_second_per_replica),
        )  # fmt: skip
    print_table(workloads, console)
    console.print(
        "[dim]GPU-h and cost: training per run, serving per month; showback: the same GPU-hours at the pool's "
        "billed/GPU-h (on Capacity Blocks at the rate of the workload's own blocks), what the cost rules and "
        "`alicerce costs` charge the team (on an owned pool the rest of cost USD is the pool's idle time); tok/s: "
        "output tokens per replica"
        + ("; on shared GPUs, GPUs reads \"parts = whole GPUs\": the MIG instances or time slices its replicas run in, "
           "each the share of a GPU the cost rules charge it as (a MIG instance by its compute slices, a time slice as 1 / "
           "the slices a GPU), and GPU-h counts those whole GPUs"
           if any(w.sharing_declared for w in result.workloads) else "")
        + ("; a service its pool cannot hold (PL305) costs and bills the pool's month, not its GPU-hours: the replicas "
           "past the pool stay Pending" if any(w.cost_capped for w in result.workloads) else "")
        + "[/dim]"
    )  # fmt: skip
    pools = _table(
        "Node pools: declared vs recommended, and what a month costs",
        [("pool", "left"), ("GPU", "left"), ("bought as", "left"), ("declared", "right"), ("recomm.", "right"), ("peak", "right"),
         ("util.", "right"), ("USD/month", "right"), ("USD/GPU-h", "right"), ("billed/GPU-h", "right")],
    )  # fmt: skip
    for p in result.pools:
        pools.add(
            p.name, _gpu(p.accelerator, user), p.bought_as, f"{p.declared_min}-{p.declared_max}",
            f"{p.recommended_min}-{p.recommended_max}", str(p.peak_gpus) if p.gpus_per_node else "-", _pct(p.utilization),
            _num(p.monthly_cost_usd), _num(p.usd_per_gpu_hour, 2), _num(p.billed_usd_per_gpu_hour, 2),
        )  # fmt: skip
    print_table(pools, console)
    # one story for finance: the plan's price of a GPU-hour and what showback (dashboards, `alicerce costs`) bills
    console.print(
        "[dim]USD/GPU-h: what a used GPU-hour costs (rented: the node price; owned or reserved: the month over the "
        "forecast busy GPU-hours; Capacity Blocks: the blocks the runs buy over the GPU-hours they use). billed/GPU-h: "
        "what showback and `alicerce costs` charge each allocated GPU-hour (rented: the node price; Capacity Blocks: "
        "the same as USD/GPU-h, a block's idle hours are its run's, and each workload is charged its own blocks' rate, "
        "so where several share the pool this is their mean weighted by GPU-hours; owned: the month over the "
        "installed GPU-hours, idle capacity stays with the platform).[/dim]"
    )
    if result.storage:
        tiers = _table("Storage tiers", [("tier", "left"), ("declared GB/s", "right"), ("read GB/s", "right"),
                                         ("write GB/s", "right"), ("FSx to meet it", "left"), ("USD/month", "right")])  # fmt: skip
        for t in result.storage:
            fsx = "-" if t.fsx is None else f"{t.fsx['storageCapacityGiB']:,} GiB at {_per_tib(t.fsx)}"
            # billed by the GB held but no capacity declared (PL328): unpriced; on-prem tiers: the site's capex
            month = t.usd_per_month
            shown = _usd(month) if month is not None else ("unpriced" if t.stored is not None else "-")
            tiers.add(t.name, _num(t.declared_gbps, 1), _num(t.read_gbps, 2), _num(t.write_gbps, 2), fsx, shown)
        print_table(tiers, console)
    parts = ", ".join(f"{name} {_usd(v)}" for name, v in result.cost_breakdown.items() if v)
    console.print(f"Monthly cost ({result.environment}): [bold]{_usd(result.monthly_cost_usd)}[/bold] = {parts}", highlight=False)
    if result.unpriced:
        console.print(f"  left out of every total (cannot be placed or sized): {', '.join(result.unpriced)}", highlight=False)
    if result.kpi_targets:
        kpis = _table("KPI targets (the generated recording rules measure them)", [("KPI", "left"), ("subject", "left"),
                      ("target", "right"), ("unit", "left"), ("from", "left")])  # fmt: skip
        for k in result.kpi_targets:
            kpis.add(k.kpi, k.subject, f"{k.op} {_target(k.target, k.unit, k.op)}", k.unit, k.source)
        print_table(kpis, console)
    placed = {name: reason for name, reason in result.placements.items() if not reason.startswith(("pinned", "no eligible", "pool "))}
    if placed:
        console.print("[bold]Placement[/bold]")
        for name, reason in placed.items():
            console.print(escape(f"  {name} -> {reason if explain else reason.split('. Also considered')[0]}"), highlight=False)
    shared = [w for w in result.workloads if w.sharing]
    if shared:
        # the MIG / time-slicing recommendation reached only --format json (review sizreview22 N3)
        console.print("[bold]GPU sharing[/bold]")
        for w in shared:
            console.print(escape(f"  {w.name} -> {_sharing_text(w)}"), highlight=False)
    if result.findings:
        console.print("[bold]Findings[/bold]")
        for f in result.findings:
            label = f.severity.label
            where = f" ({f.where()})" if f.path else ""  # a declared field's place, as AL errors print it
            console.print(f"  [{STYLES[label]}]{label}[/] {f.check} " + escape(f"{f.subject}{where}: {f.message}"), highlight=False)
    if result.waived:
        console.print(f"[dim]{len(result.waived)} finding(s) waived: {', '.join(f'{f.check} {f.subject}' for f in result.waived)}[/dim]")
    if tco:
        print_tco(console, result)
    if explain:
        print_explain(console, result)


def print_alert_secrets(console: Console, secrets: list[dict[str, Any]]) -> None:
    """The Secret keys the generated Alertmanager configuration reads: each must exist before the first sync, or its
    receiver sends nothing (a heartbeat's missing key is its own page: no pings reach the dead man's switch)."""
    if not secrets:
        return
    table = _table("Secrets to create (Alertmanager reads them; never generated)",
                   [("Secret", "left"), ("key", "left"), ("namespace", "left"), ("site", "left"), ("receiver", "left"),
                    ("declared at", "left")])  # fmt: skip
    for s in secrets:
        receiver = f"{s['receiver']} ({s['kind']}{', heartbeat' if s['heartbeat'] else ''})"
        table.add(s["secret"], s["key"], s["namespace"], s["site"], receiver, s["location"])
    print_table(table, console)


def _gpu(accelerator: str | None, user: list[str]) -> str:
    if accelerator is None:
        return "cpu"
    return f"{accelerator} (user catalog)" if accelerator in user else accelerator


def print_tco(console: Console, result: SizingPlan) -> None:
    owned = list(result.own_vs_rent)
    if owned:
        items = _table(
            f"Owned pools: a month at forecast utilisation ({result.environment})",
            [("pool", "left"), ("util.", "right"), ("capex", "right"), ("support", "right"), ("space", "right"), ("power", "right"),
             ("staff", "right"), ("licences", "right"), ("total", "right"), ("USD/GPU-h", "right"), ("racks", "right")],
        )  # fmt: skip
        for o in owned:
            c = o.owned
            money = (_num(c.items[k]) for k in ("capex", "support", "space", "power", "staff", "licences"))
            items.add(o.pool, _pct(c.utilization), *money, _num(c.monthly_usd), _num(c.usd_per_gpu_hour(), 2), str(c.racks))
        print_table(items, console)
        columns = [("pool", "left"), ("option", "left"), ("instance", "left"), ("USD per used GPU-h", "right"), ("owning wins", "left")]
        vs = _table("Own or rent: every purchase option the catalog and the spec price", columns)
        for o in owned:
            busy = o.owned.utilization
            vs.add(o.pool, f"owned at {busy:.0%}", "-", _num(o.owned_usd_per_gpu_hour, 2), "")
            for r in o.options:
                wins = o.wins(r)
                # per used GPU-hour at the pool's utilisation: a held option is paid for its idle hours too
                per_used = r.usd_per_gpu_hour / busy if r.held and busy > 0 else r.usd_per_gpu_hour
                span = (
                    "never"
                    if wins is None
                    else ("always" if wins[0] <= 0 and wins[1] >= 1 else f"above {wins[0]:.0%}" if wins[0] > 0 else f"below {wins[1]:.0%}")
                )
                note = " (billed used or not)" if r.held else " (interruptible: not weighed)" if r.interruptible else ""
                vs.add("", r.purchase + note, r.instance, _num(per_used, 2), span)
            for gap in o.unpriced:  # sold here, no published price: listed so the bands read as incomplete (sizreview23 G4)
                vs.add("", f"{gap.purchase} ({gap.short}: not weighed)", gap.instance, "-", "-")
        print_table(vs, console)
        for o in owned:
            console.print(f"{o.pool}: {o.verdict()}", markup=False)
    units = _table("Unit costs", [("workload", "left"), ("pool", "left"), ("per run", "right"), ("per month", "right"),
                                  ("USD per 1M tokens", "right")])  # fmt: skip
    for u in result.unit_costs:
        units.add(u.workload, u.pool or "-", _usd(u.cost_per_run_usd), _usd(u.monthly_usd), _num(u.usd_per_million_tokens, 2))
    print_table(units, console)
    console.print("[dim]per 1M tokens: the month's cost over its input + output tokens at traffic.meanRps (else the peak)[/dim]")
    show = _table("Showback: a month by team", [("team", "left"), ("USD/month", "right"), ("budget", "right")])
    for team, usd in result.showback.items():
        show.add(team, _num(usd), _num(result.budgets.get(team)))
    print_table(show, console)
    console.print("[dim]by team: each GPU pool's month as the cost rules charge it, the GPU-hours a team's workloads "
                  "hold at the pool's billed/GPU-h; what no workload holds (idle owned, always-on or reserved capacity, "
                  "the free GPUs of started nodes) is the platform's[/dim]")  # fmt: skip
    fc = result.forecast
    if fc is not None:
        names = list(dict.fromkeys(r.pool for r in fc.rows if r.capacity_gpus))
        growing = ", ".join(fc.growing) or "no workload declares growth"
        columns = [("quarter", "right"), *((n, "right") for n in names), ("k USD/month", "right"), ("grown to demand", "right")]
        grow = _table(f"Forecast by quarter: GPUs needed at once / capacity ({growing})", columns)
        cells = {(r.quarter, r.pool): r for r in fc.rows}
        for q in range(fc.horizon + 1):
            grow.add(f"Q{q}", *(f"{cells[q, n].peak_gpus}/{cells[q, n].capacity_gpus}" for n in names),
                         f"{fc.monthly_usd[q] / 1000:,.0f}", f"{fc.demand_usd[q] / 1000:,.0f}")  # fmt: skip
        print_table(grow, console)
        for pool, quarter, need, capacity in fc.runs_out:
            console.print(f"  {pool} runs out in Q{quarter}: {need} GPUs needed at once, {capacity} there", highlight=False)


def _figure_line(figure: Figure) -> str:
    inputs = ", ".join(f"{k}={_fmt(v)}" for k, v in figure.inputs.items())
    return escape(f"  {figure.name} = {_fmt(figure.value)} {figure.unit}   {figure.formula}" + (f"; {inputs}" if inputs else ""))


def _sharing_text(w: WorkloadPlan) -> str:
    """What the plan's sharing means for the pool: the instances the pool's GPUs are cut into, which a replica runs in,
    or a recommendation (sizing._sharing: a MIG profile whose memory and compute slices hold the one replica and its
    load, else time-slicing)."""
    if w.sharing_declared:
        part = "time slices" if (w.sharing or "").startswith("time-slicing") else "MIG instances"
        return f"{w.sharing}: each replica runs in one of its pool's {part} (nodePools[].sharing), sized on its share"
    return (f"{w.sharing}: one replica and its load fit less than a whole GPU; partition its pool's GPUs (nodePools[].sharing) "
            "to run more work on them")  # fmt: skip


def print_explain(console: Console, result: SizingPlan) -> None:
    for w in result.workloads:
        console.print(f"\n[bold]{w.name}[/bold] ({w.kind}, pool {w.pool or '-'})")
        if w.name in result.placements:
            console.print(escape(f"  placement: {result.placements[w.name]}"), highlight=False)
        if w.sharing:
            console.print(escape(f"  sharing: {_sharing_text(w)}"), highlight=False)
        for figure in w.figures:
            console.print(_figure_line(figure), highlight=False)
            for f in figure.factors:
                console.print(escape(f"      x {f.name} = {_fmt(f.value)}   {f.why} [{f.source}]"), highlight=False)
        for note in w.notes:
            console.print("  [yellow]note[/yellow] " + escape(note))
    for p in result.pools:
        factors: list[Any] = list(p.price.factors) if p.price else []
        if p.owned_cost is not None:
            factors = list(p.owned_cost.factors)
        if factors:
            console.print(f"\n[bold]{p.name}[/bold] price ({'owned: TCO' if p.owned else p.capacity_type}, {p.region or p.site})")
            for f in factors:
                console.print(escape(f"  {f.name} = {_fmt(f.value)}   [{f.source}]"), highlight=False)
    for site in result.sites:  # an owned site's shared storage and links (review tcoreview 4: built, never shown)
        console.print(f"\n[bold]{site.site}[/bold] shared storage and links (owned: TCO)")
        for f in site.factors:
            console.print(escape(f"  {f.name} = {_fmt(f.value)}   [{f.source}]"), highlight=False)
