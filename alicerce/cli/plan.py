"""`alicerce plan`: size the platform from its workloads, and say where the spec is too small or big."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from alicerce.cli.common import DEFAULT_SPEC, JsonOption, SpecArg, load
from alicerce.cli.errors import UsageError, user_errors


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)


@user_errors(json_flag="as_json")
def plan(  # noqa: PLR0917 - typer options
    spec: SpecArg = DEFAULT_SPEC,
    env: Annotated[str | None, typer.Option("--env", "-e", help="Environment (default: the first production one).")] = None,
    as_json: JsonOption = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show every figure's formula, inputs, factors and sources.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write charts (PNG and SVG) into this directory.")] = None,
    tco: Annotated[bool, typer.Option("--tco", help="Total cost of ownership: own vs rent, unit costs, showback, forecast.")] = False,
    fail_on: Annotated[
        Literal["error", "warning", "never"], typer.Option("--fail-on", help="Exit 1 when a finding reaches this severity.")
    ] = "never",
    checks: Annotated[bool, typer.Option("--checks", help="List the plan's checks (ids, severity, waivable) and exit.")] = False,
) -> None:
    """Size GPUs, memory, storage throughput, fabric and cost from the declared workloads."""
    if checks:
        from alicerce.plan.report import print_checks

        print_checks(as_json)
        return
    from alicerce.plan.findings import Severity
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
        print(json.dumps(result.to_json(explain=explain, tco=tco), indent=2))
    else:
        from rich.console import Console

        from alicerce.plan.report import print_plan

        print_plan(Console(), result, explain=explain, tco=tco)
    threshold = {"error": Severity.ERROR, "warning": Severity.WARNING}.get(fail_on)
    if threshold is not None and any(f.severity >= threshold for f in result.findings):
        raise typer.Exit(1)
