"""`alicerce plan`: size the platform from its workloads, and say where the spec is too small or big."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from alicerce.cli.common import DEFAULT_SPEC, SpecArg, load
from alicerce.cli.errors import UsageError, user_errors
from alicerce.cli.output import Format, FormatOption, JsonAlias, camel_keys, console, print_json, wants_json

if TYPE_CHECKING:
    from alicerce.plan.findings import PlanFinding
    from alicerce.plan.platform import SizingPlan
    from alicerce.resolve.model import ResolvedPlatform
    from alicerce.spec.loader import Document, Pos

EPILOG = """\b
Examples:
  alicerce plan                               the only, else the first production, environment of ./platform.yaml
  alicerce plan --env dev --explain           every figure with its formula, factors and sources
  alicerce plan --tco                         own vs rent, unit costs, showback per team, the growth forecast
  alicerce plan --format json | jq .findings  the findings, for a script
  alicerce plan --fail-on error               a CI gate: exit 1 when a workload cannot run on what is declared
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
    explain: Annotated[bool, typer.Option("--explain", help="Show every figure's formula, inputs, factors and sources.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write charts (PNG and SVG) into this directory.")] = None,
    tco: Annotated[bool, typer.Option("--tco", help="Total cost of ownership: own vs rent, unit costs, showback, forecast.")] = False,
    fail_on: Annotated[
        Literal["error", "warning", "never"], typer.Option("--fail-on", help="Exit 1 when a finding reaches this severity.")
    ] = "never",
    checks: Annotated[bool, typer.Option("--checks", help="List the plan's checks (ids, severity, waivable) and exit.")] = False,
) -> None:
    """Size GPUs, memory, storage throughput, fabric and cost from the declared workloads.

    Compares what the workloads need with the declared pools and tiers, and reports findings with
    numbers and stable ids (PL3xx).
    """
    as_json = wants_json(output_format, as_json)
    if checks:
        from alicerce.cli.plan_report import print_checks

        print_checks(as_json)
        return
    from alicerce.plan.findings import Severity
    from alicerce.plan.platform import plan_platform
    from alicerce.rules.validate import validated, validated_environment

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
    checked = validated_environment(document, env)
    platform = checked.resolved
    result = located_findings(plan_platform(platform), checked.pos)
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
    secrets = located_alert_secrets(document, platform)
    if as_json:
        print_json(
            {"schemaVersion": 1, **camel_keys(result.to_json(explain=explain, tco=tco)), "userCatalog": user_catalog(platform),
             "alertSecrets": secrets}
        )  # fmt: skip
    else:
        from alicerce.cli.plan_report import print_alert_secrets, print_plan

        print_plan(console(), result, explain=explain, tco=tco, user=user_catalog(platform))
        print_alert_secrets(console(), secrets)
    threshold = {"error": Severity.ERROR, "warning": Severity.WARNING}.get(fail_on)
    if threshold is not None and any(f.severity >= threshold for f in result.findings):
        raise typer.Exit(1)


def user_catalog(platform: ResolvedPlatform) -> list[str]:
    """The entries of the spec's own catalog the plan relies on: pools' GPUs and instance types, workloads' GPUs."""
    names = {p.gpu.id for p in platform.pools if p.gpu} | {p.instance.type for p in platform.pools if p.instance}
    names |= {gpu.id for w in platform.spec.workloads if w.accelerator and (gpu := platform.catalog.gpu(w.accelerator))}
    return sorted(n for n in names if platform.catalog.user_provided(n))


def _receiver_path(data: Any, env: str, receiver: str) -> tuple[str | int, ...]:
    """Where the spec names a receiver's secret key: in the environment's overrides where they set it (their lists
    merge by name), else in the top-level list; the list itself when neither names it."""
    prefixes: list[tuple[str | int, ...]] = [("environments", env, "overrides", "monitoring", "receivers"), ("monitoring", "receivers")]
    for prefix in prefixes:
        node: Any = data
        for element in prefix:
            node = node.get(element) if isinstance(node, dict) else None
        for i, item in enumerate(node if isinstance(node, list) else []):
            if isinstance(item, dict) and item.get("name") == receiver and "secret" in item:
                return (*prefix, i, "secret", "key")
    return prefixes[-1]


def located_findings(result: SizingPlan, pos: Pos) -> SizingPlan:
    """The plan with each finding about one declared field located at it (file:line:col), as AL errors are: the
    positions live with the checked spec, not the plan (review sizreview22 G4)."""
    from alicerce.spec.loader import locate

    def at(f: PlanFinding) -> PlanFinding:
        if not f.path:
            return f
        span, _ = locate(pos, f.path)
        return replace(f, location=f"{span.file}:{span.line}:{span.column}")

    return replace(result, findings=tuple(at(f) for f in result.findings), waived=tuple(at(f) for f in result.waived))


def located_alert_secrets(document: Document, platform: ResolvedPlatform) -> list[dict[str, Any]]:
    """The Secret keys the environment's Alertmanagers read (alicerce.plan.alerting), each with where the spec names it."""
    from alicerce.plan.alerting import alert_secrets
    from alicerce.spec.loader import locate

    out = []
    for s in alert_secrets(platform):
        span, _ = locate(document.pos, _receiver_path(document.data, platform.environment, s.receiver))
        row = {"secret": s.secret, "key": s.key, "namespace": s.namespace, "site": s.site, "receiver": s.receiver}
        out.append(row | {"kind": s.kind, "heartbeat": s.heartbeat, "location": f"{span.file}:{span.line}:{span.column}"})
    return out


__all__ = ["located_alert_secrets", "located_findings", "plan", "register", "user_catalog"]
