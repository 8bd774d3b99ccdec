"""Chargeback for finance: one month of the cost recording rules, read from a site's Prometheus, by team, cost centre
and serving workload (`alicerce costs`).

Every figure is the hourly one alicerce's rules record (alicerce.emit.kube.costs: each hour's integral, minute by
minute), read at each hour mark of the month (UTC) and summed, as the budget rules and guard count: spend in USD,
GPU-hours allocated to and used by the team's pods, the cost of a used GPU-hour, and per serving workload its spend,
tokens (prompt and generated) and cost per million tokens. Rows are sorted and figures rounded, so the same TSDB gives the same bytes.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

TIMEOUT = 60
MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


class ChargebackError(Exception):
    """Prometheus could not be read, or the month is not one (a user-facing error with a hint)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def month_bounds(month: str) -> tuple[datetime.datetime, datetime.datetime]:
    """``2025-03`` -> the first instants of March and of April, UTC."""
    match = MONTH.match(month)
    if match is None:
        raise ChargebackError(f'month "{month}" is not YYYY-MM', "e.g. 2025-03")
    year, number = int(match[1]), int(match[2])
    if not 1970 <= year <= 9998:  # Prometheus keeps Unix time; datetime ends at year 9999
        raise ChargebackError(f'month "{month}" is outside the years Prometheus can hold', "a month from 1970 on")
    start = datetime.datetime(year, number, 1, tzinfo=datetime.UTC)
    end = datetime.datetime(year + number // 12, number % 12 + 1, 1, tzinfo=datetime.UTC)
    return start, end


def _over_month(record: str, by: str, seconds: int) -> str:
    # evaluated at the month's end: the hour marks from 01:00 of the first to midnight of the next month, each with
    # the hour it ends. The range starts a second after midnight of the first, which ends the previous month's last
    # hour (Prometheus 2 closes ranges on the left, 3 opens them: neither takes it in)
    return f"sum by ({by}) (sum_over_time({record}[{seconds - 1}s:1h]))"


def queries(start: datetime.datetime, end: datetime.datetime) -> dict[str, str]:
    seconds = int((end - start).total_seconds())
    team, workload = "site, team", "site, namespace, workload"
    return {
        # each hour's figure as the cost rules integrate it minute by minute (alicerce.emit.kube.costs): a job that
        # ran between two hour marks counts, which reading the rates at the marks missed
        "spend": _over_month("team:gpu_cost_usd:sum1h", team, seconds),
        "allocated": _over_month("team:gpu_hours_allocated:sum1h", team, seconds),
        "used": _over_month("team:gpu_hours_used:sum1h", team, seconds),
        "cost_center": f"max by (team, cost_center) (last_over_time(alicerce:namespace_team:info[{seconds}s]))",
        "workload_spend": _over_month("workload:gpu_cost_usd:sum1h", workload, seconds),
        "tokens": _over_month("workload:vllm_tokens:sum1h", workload, seconds),
    }


def _query(base: str, expr: str, at: datetime.datetime) -> list[dict[str, Any]]:
    url = f"{base.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at.timestamp():.3f}"})
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            body = json.load(response)
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace")[:300]
        raise ChargebackError(f"Prometheus at {base} refused a query: HTTP {e.code} {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ChargebackError(f"cannot read Prometheus at {base}: {getattr(e, 'reason', e)}", "check --prometheus") from None
    if body.get("status") != "success":
        raise ChargebackError(f"Prometheus at {base} refused a query: {body.get('error')}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _values(result: list[dict[str, Any]], *keys: str) -> dict[tuple[str, ...], float]:
    out = {}
    for sample in result:
        value = float(sample["value"][1])
        if not math.isnan(value):
            out[tuple(sample["metric"].get(k, "") for k in keys)] = value
    return out


@dataclass(frozen=True)
class Report:
    month: str
    teams: list[dict[str, Any]]
    workloads: list[dict[str, Any]]


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _ratio(numerator: float, denominator: float, scale: float = 1.0) -> float | None:
    return round(numerator / denominator * scale, 4) if denominator > 0 else None


def export(base: str, month: str) -> Report:
    """The month's chargeback from the Prometheus at ``base`` (http or https)."""
    example = "e.g. --prometheus http://prometheus-operated.monitoring.svc:9090"
    try:
        url = urllib.parse.urlsplit(base)
        url.port  # noqa: B018 (parsed on access: a port that is no number raises here)
    except ValueError as e:
        raise ChargebackError(f"--prometheus is not a URL: {e}", example) from None
    if url.username is not None or url.password is not None:
        # urllib would not send them (it looks the whole "user:pw@host" up as a host name) and every error would print them
        raise ChargebackError(
            "--prometheus carries credentials in the URL, which alicerce costs does not send (nor print)",
            "reach Prometheus without them: kubectl port-forward -n monitoring svc/prometheus-operated 9090, or a local proxy",
        )
    if url.scheme not in ("http", "https"):
        raise ChargebackError(f'"{base}" is not an http(s) URL', example)
    start, end = month_bounds(month)
    at = end
    q = queries(start, end)
    spend = _values(_query(base, q["spend"], at), "site", "team")
    allocated = _values(_query(base, q["allocated"], at), "site", "team")
    used = _values(_query(base, q["used"], at), "site", "team")
    centers = {key[0]: key[1] for key in _values(_query(base, q["cost_center"], at), "team", "cost_center")}
    teams = []
    for site, team in sorted(set(spend) | set(allocated) | set(used)):
        usd, busy = spend.get((site, team), 0.0), used.get((site, team), 0.0)
        teams.append({
            "month": month, "site": site, "team": team, "costCenter": centers.get(team, ""),
            "gpuHoursAllocated": round(allocated.get((site, team), 0.0), 3), "gpuHoursUsed": round(busy, 3),
            "spendUsd": _money(usd), "usdPerUsedGpuHour": _ratio(usd, busy),
        })  # fmt: skip
    workload_spend = _values(_query(base, q["workload_spend"], at), "site", "namespace", "workload")
    tokens = _values(_query(base, q["tokens"], at), "site", "namespace", "workload")
    workloads = []
    for site, namespace, workload in sorted(set(tokens)):  # serving workloads: those with tokens
        usd, count = workload_spend.get((site, namespace, workload), 0.0), tokens[(site, namespace, workload)]
        workloads.append({
            "month": month, "site": site, "namespace": namespace, "workload": workload, "spendUsd": _money(usd),
            "tokens": round(count), "usdPerMillionTokens": _ratio(usd, count, 1e6),
        })  # fmt: skip
    if not teams and not workloads:
        # a header alone reads as "nobody spent anything": say what was looked for instead
        raise ChargebackError(
            f"Prometheus at {base} holds none of alicerce's cost series for {month} (team:gpu_cost_usd:sum1h, "
            "team:gpu_hours_allocated:sum1h, team:gpu_hours_used:sum1h, workload:vllm_tokens:sum1h)",
            "point --prometheus at a site's Prometheus that loads alicerce's rules (PrometheusRule alicerce-gpu-platform "
            "in the monitoring namespace) and still keeps that month (monitoring.retention)",
        )
    return Report(month, teams, workloads)


TEAM_COLUMNS = ("month", "site", "team", "costCenter", "gpuHoursAllocated", "gpuHoursUsed", "spendUsd", "usdPerUsedGpuHour")
WORKLOAD_COLUMNS = ("month", "site", "namespace", "workload", "spendUsd", "tokens", "usdPerMillionTokens")


def render_json(report: Report) -> str:
    document = {"schemaVersion": 1, "month": report.month, "teams": report.teams, "workloads": report.workloads}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def render_csv(report: Report) -> str:
    """One table: a ``kind`` column (team or workload), then both kinds' columns; a figure that has no meaning for a row
    (a cost per used GPU-hour with no GPU-hour used) is empty."""
    columns = ["kind", *dict.fromkeys([*TEAM_COLUMNS, *WORKLOAD_COLUMNS])]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    for kind, rows in (("team", report.teams), ("workload", report.workloads)):
        for row in rows:
            writer.writerow({"kind": kind, **{k: ("" if v is None else v) for k, v in row.items()}})
    return out.getvalue()
