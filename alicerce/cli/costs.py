"""`alicerce costs`: one month's chargeback for finance, read from a site's Prometheus."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.errors import UsageError, user_errors

EPILOG = """\b
Examples:
  alicerce costs --prometheus http://localhost:9090 --month 2025-03                 CSV on stdout
  alicerce costs --prometheus http://localhost:9090 --month 2025-03 --format json -o 2025-03.json
  alicerce costs --prometheus http://localhost:9090 --month 2025-03 --partial    a month Prometheus holds in part
  (reach a site's Prometheus with: kubectl -n monitoring port-forward svc/prometheus-operated 9090)
"""


class CostFormat(str, Enum):
    csv = "csv"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command("costs", epilog=EPILOG)(costs)


@user_errors()
def costs(
    prometheus: Annotated[str, typer.Option("--prometheus", help="The site's Prometheus, e.g. http://localhost:9090.")],
    month: Annotated[str, typer.Option("--month", help="The month, YYYY-MM (UTC).")],
    output_format: Annotated[CostFormat, typer.Option("--format", "-f", help="csv for spreadsheets, json for scripts.")] = CostFormat.csv,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
    partial: Annotated[
        bool,
        typer.Option("--partial", help="Accept a month Prometheus holds only part of (or one not over): export it, marked partial."),
    ] = False,
) -> None:
    """GPU spend, GPU-hours allocated and used, cost per used GPU-hour by team and cost centre, and spend and cost per
    million tokens by serving workload, and spend by training run, for one month, from the cost recording rules
    alicerce generates."""
    from alicerce.cli.errors import warn
    from alicerce.emit.files import write_text_atomic
    from alicerce.run.chargeback import TOLERATED_MINUTES_A_DAY, ChargebackError, export, lacking, render_csv, render_json

    try:
        report = export(prometheus, month, partial=partial)
    except ChargebackError as e:
        raise UsageError(str(e), e.hint) from None
    if report.partial:
        lacks = lacking(report.missing_days, report.lacks) if report.missing_days else ""
        lacks += ("; " if lacks else "") + (f"the month is not over (records up to {report.open_until})" if report.open_until else "")
        warn(f"{month} is partial: {lacks}", "the totals leave those days out")
    if report.missing_minutes and not report.missing_days:
        lost = ", ".join(f"{figures}: {minutes} min" for figures, minutes in report.missing_minutes.items())
        warn(f"{month}: sources were down for minutes the figures count as 0 ({lost})",
             f"under {TOLERATED_MINUTES_A_DAY} minutes a day, so the month is whole")  # fmt: skip
    text = render_json(report) if output_format == CostFormat.json else render_csv(report)
    if output is None:
        print(text, end="")
    else:
        write_text_atomic(output, text)
