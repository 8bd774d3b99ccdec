"""`alicerce plan`: size the platform from its workloads, and say where the spec is too small or big."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, SpecArg, load
from alicerce.cli.errors import UsageError, user_errors
from alicerce.cli.output import Column, Format, FormatOption, JsonAlias, Table, console, print_json, print_table, wants_json

if TYPE_CHECKING:
    from rich.console import Console

    from alicerce.plan.platform import SizingPlan
    from alicerce.resolve.model import ResolvedPlatform

EPILOG = """\b
Examples:
  alicerce plan                               the first production environment of ./platform.yaml
  alicerce plan --env dev --explain           every figure with its formula and inputs
  alicerce plan --format json | jq .findings  the findings, for a script or a CI gate
  alicerce plan --plot charts/                cost, GPU-hours and utilisation charts (PNG and SVG)
"""


def register(app: typer.Typer) -> None:
    app.command("plan", epilog=EPILOG)(plan)


@user_errors()
def plan(
    *,
    spec: SpecArg = DEFAULT_SPEC,
    env: Annotated[
        str | None, typer.Option("--env", "-e", help="Environment (default: the only one, else the first production one).")
    ] = None,
    output_format: FormatOption = Format.text,
    as_json: JsonAlias = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show every figure's formula and inputs.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write charts (PNG and SVG) into this directory.")] = None,
) -> None:
    """Size GPUs, memory, storage throughput, fabric and cost from the declared workloads.

    Compares what the workloads need with the declared pools and tiers, and reports findings
    with numbers.
    """
    from alicerce.plan.platform import plan_platform
    from alicerce.rules.validate import validated

    as_json = wants_json(output_format, as_json)
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
    platform = validated(document, env)
    result = plan_platform(platform)
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
        print_json({"schemaVersion": 1, **result.to_json(), "userCatalog": user_catalog(platform)})
        return
    _print(console(), result, explain, user_catalog(platform))


def user_catalog(platform: ResolvedPlatform) -> list[str]:
    """The entries of the spec's own catalog the plan relies on: pools' GPUs and instance types, workloads' GPUs."""
    names = {p.gpu.id for p in platform.pools if p.gpu} | {p.instance.type for p in platform.pools if p.instance}
    names |= {gpu.id for w in platform.spec.workloads if w.accelerator and (gpu := platform.catalog.gpu(w.accelerator))}
    return sorted(n for n in names if platform.catalog.user_provided(n))


def _mark(gpu: str | None, user: list[str]) -> str:
    return "-" if gpu is None else f"{gpu} (user catalog)" if gpu in user else gpu


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _print(out: Console, result: SizingPlan, explain: bool, user: list[str]) -> None:
    workloads = Table(
        f"Workloads ({result.environment})",
        [Column("workload", key=True), Column("kind"), Column("pool", key=True), Column("GPU", key=True)]
        + [Column(h, numeric=True) for h in ("GPUs", "min", "days", "GPU-h", "cost USD", "ckpt GB/s", "read GB/s", "net Gb/s/GPU")]
        + [Column("RDMA"), Column("replicas", numeric=True), Column("tok/s/replica", numeric=True)],
    )
    for w in result.workloads:
        workloads.add(
            w.name, w.kind, w.pool or "-", _mark(w.accelerator, user), _num(w.gpus), _num(w.min_gpus), _num(w.wall_clock_days, 1),
            _num(w.gpu_hours), _num(w.cost_usd), _num(w.checkpoint_write_gbps, 2), _num(w.dataset_read_gbps, 3),
            _num(w.network_gbps_per_gpu, 1), "-" if w.rdma_required is None else ("yes" if w.rdma_required else "no"),
            _num(w.replicas), _num(w.tokens_per_second_per_replica),
        )  # fmt: skip
    print_table(workloads, out)
    pools = Table(
        "Node pools: declared vs recommended",
        [Column("pool", key=True), Column("GPU", key=True), Column("declared min-max"), Column("recommended min-max")]
        + [Column(h, numeric=True) for h in ("peak GPUs", "utilisation", "USD/month")],
    )
    for p in result.pools:
        pools.add(
            p.name, _mark(p.accelerator, user), f"{p.declared_min}-{p.declared_max}", f"{p.recommended_min}-{p.recommended_max}",
            str(p.peak_gpus), "-" if p.utilization is None else f"{p.utilization:.0%}", _num(p.monthly_cost_usd),
        )  # fmt: skip
    print_table(pools, out)
    if result.storage:
        tiers = Table(
            "Storage tiers",
            [
                Column("tier", key=True),
                *(Column(h, numeric=True) for h in ("declared GB/s", "read GB/s", "write GB/s")),
                Column("FSx to meet it"),
            ],
        )
        for t in result.storage:
            fsx = "-" if t.fsx is None else f"{t.fsx['storageCapacityGiB']:,} GiB at {t.fsx['perUnitStorageThroughput'] or 'base'} MB/s/TiB"
            tiers.add(t.name, _num(t.declared_gbps, 1), _num(t.read_gbps, 2), _num(t.write_gbps, 2), fsx)
        print_table(tiers, out)
    if user:
        out.print(f"From the spec's own catalog (user-provided facts): {', '.join(user)}", markup=False)
    out.print(f"Forecast monthly cost (on-demand, AWS pools and FSx): [bold]{_num(result.monthly_cost_usd)} USD[/bold]")
    if result.findings:
        out.print("[bold]Findings[/bold]")
        styles = {"error": "red", "warning": "yellow", "info": "cyan"}
        for f in result.findings:
            out.print(f"  [{styles[f.severity]}]{f.severity}[/] {f.subject}: {f.message}", highlight=False)
    if explain:
        for w in result.workloads:
            out.print(f"\n[bold]{w.name}[/bold] ({w.kind})")
            for figure in w.figures:
                inputs = ", ".join(f"{k}={_fmt(v)}" for k, v in figure.inputs.items())
                out.print(
                    f"  {figure.name} = {_fmt(figure.value)} {figure.unit}   [dim]{figure.formula}"
                    + (f"; {inputs}" if inputs else "")
                    + "[/dim]",
                    highlight=False,
                )
            for note in w.notes:
                out.print(f"  [yellow]note[/yellow] {note}")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:.3e}"
    return str(value)
