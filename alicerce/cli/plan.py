"""`alicerce plan`: size the platform from its workloads, and say where the spec is too small or big."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, JsonOption, SpecArg, load
from alicerce.cli.errors import UsageError, user_errors

if TYPE_CHECKING:
    from rich.console import Console

    from alicerce.plan.platform import SizingPlan


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)


@user_errors(json_flag="as_json")
def plan(
    spec: SpecArg = DEFAULT_SPEC,
    env: Annotated[str | None, typer.Option("--env", "-e", help="Environment (default: the first production one).")] = None,
    as_json: JsonOption = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show every figure's formula and inputs.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write charts (PNG and SVG) into this directory.")] = None,
) -> None:
    """Size GPUs, memory, storage throughput, fabric and cost from the declared workloads."""
    from alicerce.plan.platform import plan_platform
    from alicerce.rules.validate import validated

    document = load(spec)
    environments = document.data.get("environments") or {}
    if env is None:
        env = next((name for name, e in environments.items() if isinstance(e, dict) and e.get("tier") == "production"),
                   next(iter(environments), None))  # fmt: skip
    if env is None:
        raise UsageError("the spec has no environments")
    if plot is not None:
        from alicerce.emit.files import ensure_folder

        ensure_folder(plot, plot)  # before the work: a file, or a folder under a file, is refused at once
    result = plan_platform(validated(document, env))
    if plot is not None:
        from alicerce.emit.charts import write_charts
        from alicerce.emit.files import os_error

        others = [result if name == env else plan_platform(validated(document, name)) for name in environments]
        try:
            written = write_charts(result, others, plot)
        except OSError as exc:
            raise os_error(exc, plot) from None
        if not as_json:
            typer.echo(f"wrote {len(written)} charts to {plot}", err=True)
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        return
    from rich.console import Console

    console = Console()
    _print(console, result, explain)


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _print(console: Console, result: SizingPlan, explain: bool) -> None:
    from rich.table import Table

    table = Table(title=f"Workloads ({result.environment})", title_justify="left")
    for column in ("workload", "kind", "pool", "GPU", "GPUs", "min", "days", "GPU-h", "cost USD", "ckpt GB/s", "read GB/s",
                   "net Gb/s/GPU", "RDMA", "replicas", "tok/s/replica"):  # fmt: skip
        table.add_column(column, justify="right" if column not in ("workload", "kind", "pool", "GPU") else "left")
    for w in result.workloads:
        table.add_row(
            w.name, w.kind, w.pool or "-", w.accelerator or "-", _num(w.gpus), _num(w.min_gpus), _num(w.wall_clock_days, 1),
            _num(w.gpu_hours), _num(w.cost_usd), _num(w.checkpoint_write_gbps, 2), _num(w.dataset_read_gbps, 3),
            _num(w.network_gbps_per_gpu, 1), "-" if w.rdma_required is None else ("yes" if w.rdma_required else "no"),
            _num(w.replicas), _num(w.tokens_per_second_per_replica),
        )  # fmt: skip
    console.print(table)
    pools = Table(title="Node pools: declared vs recommended", title_justify="left")
    for column in ("pool", "GPU", "declared min-max", "recommended min-max", "peak GPUs", "utilisation", "USD/month"):
        pools.add_column(column)
    for p in result.pools:
        pools.add_row(
            p.name, p.accelerator or "-", f"{p.declared_min}-{p.declared_max}", f"{p.recommended_min}-{p.recommended_max}",
            str(p.peak_gpus), "-" if p.utilization is None else f"{p.utilization:.0%}", _num(p.monthly_cost_usd),
        )  # fmt: skip
    console.print(pools)
    if result.storage:
        tiers = Table(title="Storage tiers", title_justify="left")
        for column in ("tier", "declared GB/s", "read GB/s", "write GB/s", "FSx to meet it"):
            tiers.add_column(column)
        for t in result.storage:
            fsx = "-" if t.fsx is None else f"{t.fsx['storageCapacityGiB']:,} GiB at {t.fsx['perUnitStorageThroughput'] or 'base'} MB/s/TiB"
            tiers.add_row(t.name, _num(t.declared_gbps, 1), _num(t.read_gbps, 2), _num(t.write_gbps, 2), fsx)
        console.print(tiers)
    console.print(f"Forecast monthly cost (on-demand, AWS pools and FSx): [bold]{_num(result.monthly_cost_usd)} USD[/bold]")
    if result.findings:
        console.print("[bold]Findings[/bold]")
        styles = {"error": "red", "warning": "yellow", "info": "cyan"}
        for f in result.findings:
            console.print(f"  [{styles[f.severity]}]{f.severity}[/] {f.subject}: {f.message}", highlight=False)
    if explain:
        for w in result.workloads:
            console.print(f"\n[bold]{w.name}[/bold] ({w.kind})")
            for figure in w.figures:
                inputs = ", ".join(f"{k}={_fmt(v)}" for k, v in figure.inputs.items())
                console.print(
                    f"  {figure.name} = {_fmt(figure.value)} {figure.unit}   [dim]{figure.formula}"
                    + (f"; {inputs}" if inputs else "")
                    + "[/dim]",
                    highlight=False,
                )
            for note in w.notes:
                console.print(f"  [yellow]note[/yellow] {note}")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:.3e}"
    return str(value)
