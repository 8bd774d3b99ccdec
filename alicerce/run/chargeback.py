"""Chargeback for finance: one month of the cost recording rules, read from a site's Prometheus, by team, cost centre
and serving workload (`alicerce costs`).

Every figure is the hourly one alicerce's rules record (alicerce.emit.kube.costs: each clock hour's integral, minute
by minute), read at the hour mark that ends it for each hour of the month (UTC) and summed, as the budget rules and
guard count: spend in USD, GPU-hours allocated to and used by the team's pods, the cost of a used GPU-hour, and per
serving workload its spend, tokens (prompt and generated) and cost per million tokens. Rows are sorted and figures
rounded, so the same TSDB gives the same bytes.
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
from dataclasses import dataclass, field
from typing import Any

from alicerce.emit.kube.costs import (
    ALLOCATED_HOUR,
    MEASURED_HOUR,
    RUN_HOUR,
    TEAM_HOUR,
    TOKENS_HOUR,
    TOKENS_MEASURED_HOUR,
    USED_HOUR,
    USED_MEASURED_HOUR,
    WORKLOAD_HOUR,
    hour_total,
)

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
    return f"sum by ({by}) (sum_over_time({hour_total(record)}[{seconds - 1}s:1h]))"


# the team's cost centre in each hour: the one of its namespaces' info series seen last in the hour (the namespace ->
# team info, alicerce.emit.kube.kpi.join_rules), one per team (topk) whatever a change within the hour left
HOUR_CENTER = "topk by (team) (1, max by (team, cost_center) (max_over_time(timestamp(alicerce:namespace_team:info)[1h:1m] offset 1ms)))"


def _by_center(record: str, seconds: int) -> str:
    """The month of a team's hourly ``record`` by the cost centre of each hour: a team whose costCenter changed within
    the month is split at the hour it changed (review obsreview22 F7: the whole month went to whichever code
    Prometheus returned last). An hour whose centre is not recorded keeps its figure, with no cost_center label."""
    hour = hour_total(record)
    booked = f"{hour} + on (team) group_left (cost_center) (0 * {HOUR_CENTER}) or on (site, team) {hour}"
    return f"sum by (site, team, cost_center) (sum_over_time(({booked})[{seconds - 1}s:1h]))"


def queries(start: datetime.datetime, end: datetime.datetime) -> dict[str, str]:
    seconds = int((end - start).total_seconds())
    workload, run = "site, namespace, workload", "site, namespace, team, cost_center, run_kind, run, run_uid"
    return {
        # each hour's figure as the cost rules integrate it minute by minute (alicerce.emit.kube.costs): a job that
        # ran between two hour marks counts, which reading the rates at the marks missed; by the hour's cost centre
        "spend": _by_center(TEAM_HOUR, seconds),
        "allocated": _by_center(ALLOCATED_HOUR, seconds),
        "used": _by_center(USED_HOUR, seconds),
        "workload_spend": _over_month(WORKLOAD_HOUR, workload, seconds),
        "tokens": _over_month(TOKENS_HOUR, workload, seconds),
        # each training run's hours in the month (a run that spans two months is in both, each with its own hours)
        "run_spend": _over_month(RUN_HOUR, run, seconds),
    }


def _query(base: str, expr: str, at: datetime.datetime) -> list[dict[str, Any]]:
    url = f"{base.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at.timestamp():.3f}"})
    return _get(base, url)


def _get(base: str, url: str) -> list[dict[str, Any]]:
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


# Each figure is whole for an hour when the sources it reads answered all of it (read at the mark that ends it):
# kube-state-metrics for spend and GPU-hours allocated (MEASURED_HOUR: the rules recorded while it was down for hours
# and the month read whole with those hours' spend missing, review obsreview24 F3), dcgm-exporter for GPU-hours used
# and the cost of a used GPU-hour, the serving scrape for tokens and the cost per million tokens (review obsreview25
# G3: those read whole while their exporter was down). Hours before alicerce recorded a figure's source count as its
# spend's, and hours before it recorded MEASURED_HOUR as whole while its rules ran (alicerce:namespace_team:info,
# recorded at every evaluation, alicerce.emit.kube.kpi.join_rules).
FIGURES: dict[str, tuple[str, str]] = {  # figure group -> (the source record, the source in words)
    "spendUsd, gpuHoursAllocated": (MEASURED_HOUR, "kube-state-metrics"),
    "gpuHoursUsed, usdPerUsedGpuHour": (USED_MEASURED_HOUR, "dcgm-exporter"),
    "tokens, usdPerMillionTokens": (TOKENS_MEASURED_HOUR, "the serving scrape"),
}
_ALICERCE_RAN = "max(max_over_time(alicerce:namespace_team:info[1h] offset 1ms))"
_SPEND = f"(min({hour_total(MEASURED_HOUR)}) or ({_ALICERCE_RAN} unless on () count({hour_total(MEASURED_HOUR)})))"
_WHOLE = 59.5 / 60  # every minute of the hour (a Prometheus's evaluation offset keeps a sample's minute in its hour)


def answered(record: str) -> str:
    """The part of the hour that ends at the evaluation time (0 to 1) in which ``record``'s sources answered, at the
    site that answered least; a source record absent that hour (rules older than it) reads as the spend's."""
    if record == MEASURED_HOUR:
        return _SPEND
    return f"(min({hour_total(record)}) or on () {_SPEND})"


# the hours every figure's sources answered whole: the rest lose minutes a figure counts as 0, named per figure
COVERAGE = " and on () ".join(f"{answered(record)} >= {_WHOLE:.6g}" for record, _ in FIGURES.values())
# A day lacks a figure when its sources were down more than this many minutes of it, summed: a Prometheus rescheduled
# by a kube-prometheus-stack upgrade (its volume detached and attached, its WAL replayed) is down for minutes, and a
# per-hour share of 95% made such a restart a missing day, so finance learned to pass --partial always, which also
# hides a real outage of hours (review obsreview25 N2). 30 minutes is 2% of a day: a restart stays under it, an
# exporter down for an hour does not; the minutes lost below it are still reported (missingMinutes)
TOLERATED_MINUTES_A_DAY = 30
HOUR = datetime.timedelta(hours=1)


def _query_marks(base: str, query: str, start: datetime.datetime, last: datetime.datetime) -> dict[datetime.datetime, float]:
    params = {"query": query, "start": f"{(start + HOUR).timestamp():.3f}", "end": f"{last.timestamp():.3f}", "step": "3600"}
    url = f"{base.rstrip('/')}/api/v1/query_range?" + urllib.parse.urlencode(params)
    return {datetime.datetime.fromtimestamp(float(t), datetime.UTC): float(v) for series in _get(base, url) for t, v in series["values"]}


def _marks_held(base: str, start: datetime.datetime, last: datetime.datetime) -> set[datetime.datetime]:
    """The hour marks from ``start`` + 1h to ``last`` whose hour every figure's sources answered whole (as the month's
    sums read the hourly records: the hour that ends at the mark)."""
    return set(_query_marks(base, COVERAGE, start, last))


def _minutes_lost(
    base: str, start: datetime.datetime, last: datetime.datetime, marks: list[datetime.datetime]
) -> dict[str, dict[datetime.datetime, int]]:
    """Per figure group, the minutes of each of ``marks``' hours its sources were down (an hour with no record: 60)."""
    lost: dict[str, dict[datetime.datetime, int]] = {}
    for figures, (record, _) in FIGURES.items():
        part = _query_marks(base, answered(record), start, last)
        lost[figures] = {m: round(60 * (1 - min(1.0, part.get(m, 0.0)))) for m in marks}
    return lost


def _days(marks: list[datetime.datetime]) -> list[str]:
    """The days (UTC) of hour marks: a mark stands for the hour it ends, so midnight belongs to the day before."""
    return sorted({(mark - datetime.timedelta(seconds=1)).date().isoformat() for mark in marks})


def day_spans(days: list[str]) -> str:
    """``2025-03-01`` .. ``2025-03-09``, ``2025-03-20`` as "2025-03-01 to 2025-03-09, 2025-03-20"."""
    spans: list[list[datetime.date]] = []
    for day in map(datetime.date.fromisoformat, days):
        if spans and day - spans[-1][1] == datetime.timedelta(days=1):
            spans[-1][1] = day
        else:
            spans.append([day, day])
    return ", ".join(a.isoformat() if a == b else f"{a.isoformat()} to {b.isoformat()}" for a, b in spans)


def lacking(days: list[str], lacks: dict[str, list[str]] | None = None) -> str:
    """What a month lacks on ``days``: hours Prometheus holds no record of, or whose cost sources were down; with
    ``lacks`` (figure group -> days), which figures lack which days, for sources other than kube-state-metrics."""
    spend = next(iter(FIGURES))
    if lacks is None or set(lacks) <= {spend}:
        return f"no whole records, or kube-state-metrics down, on {day_spans(days)} (UTC)"
    parts = [f"no whole records, or kube-state-metrics down, on {day_spans(lacks[spend])} (UTC)"] if lacks.get(spend) else []
    parts += [f"{FIGURES[f][1]} down ({f}) on {day_spans(d)} (UTC)" for f, d in lacks.items() if f != spend and d]
    return "; ".join(parts)


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
    runs: list[dict[str, Any]] = field(default_factory=list)  # training runs: a TrainJob (its JobSet), a plain Job or a RayJob
    missing_days: list[str] = field(default_factory=list)  # days (UTC) Prometheus holds no record of, or sources down
    lacks: dict[str, list[str]] = field(default_factory=dict)  # figure group -> the missing days that lack it
    missing_minutes: dict[str, int] = field(default_factory=dict)  # figure group -> minutes its sources lost, all month
    open_until: str | None = None  # the month is not over: figures up to this hour mark (UTC)

    @property
    def partial(self) -> bool:
        return bool(self.missing_days) or self.open_until is not None


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _ratio(numerator: float, denominator: float, scale: float = 1.0) -> float | None:
    return round(numerator / denominator * scale, 4) if denominator > 0 else None


def export(base: str, month: str, partial: bool = False, now: datetime.datetime | None = None) -> Report:
    """The month's chargeback from the Prometheus at ``base`` (http or https). A month Prometheus holds only part of (a
    retention shorter than the month, records that began after its first day, an outage, a month not over) is an
    error that names the missing days, unless ``partial`` accepts it: the report then says it is partial and which
    days it lacks (review obsreview2 DEFECT 12: finance got smaller totals and exit 0)."""
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
    now = now or datetime.datetime.now(datetime.UTC)
    last = min(end, now.replace(minute=0, second=0, microsecond=0))
    expected = [start + HOUR * i for i in range(1, int((last - start) / HOUR) + 1)]
    held = _marks_held(base, start, last) if expected else set()
    lost = _minutes_lost(base, start, last, [m for m in expected if m not in held]) if len(held) < len(expected) else {}
    lacks = {figures: _days_over(minutes) for figures, minutes in lost.items()}
    unrecorded = lacks.get(next(iter(FIGURES)), [])  # a day without kube-state-metrics (or records) lacks every figure: said once
    lacks = {f: days if f == next(iter(FIGURES)) else [d for d in days if d not in unrecorded] for f, days in lacks.items()}
    lacks = {f: days for f, days in lacks.items() if days}
    missing = sorted({day for days in lacks.values() for day in days})
    minutes = {figures: sum(m.values()) for figures, m in lost.items() if sum(m.values())}
    open_until = last.isoformat().replace("+00:00", "Z") if last < end else None
    if held or not expected:  # nothing held at all: the cost series below say whether this is alicerce's Prometheus
        _refuse_partial(base, month, missing, open_until, partial, figures=lacks)
    # a row per team and cost centre: a team whose costCenter changed within the month has one for each
    spend = _values(_query(base, q["spend"], at), "site", "team", "cost_center")
    allocated = _values(_query(base, q["allocated"], at), "site", "team", "cost_center")
    used = _values(_query(base, q["used"], at), "site", "team", "cost_center")
    teams = []
    for key in sorted(set(spend) | set(allocated) | set(used)):
        usd, busy = spend.get(key, 0.0), used.get(key, 0.0)
        site, team, center = key
        teams.append({
            "month": month, "site": site, "team": team, "costCenter": center,
            "gpuHoursAllocated": round(allocated.get(key, 0.0), 3), "gpuHoursUsed": round(busy, 3),
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
    # a run is its name and its incarnation (the Job's, JobSet's or RayJob's uid): a name submitted again
    # is another row
    run_keys = ("site", "namespace", "team", "cost_center", "run_kind", "run", "run_uid")
    runs = [
        {"month": month, "site": site, "namespace": namespace, "team": owner, "costCenter": center, "runKind": kind, "run": name,
         "runUid": uid, "spendUsd": _money(usd)}
        for (site, namespace, owner, center, kind, name, uid), usd in sorted(_values(_query(base, q["run_spend"], at), *run_keys).items())
    ]  # fmt: skip
    if not teams and not workloads:
        # a header alone reads as "nobody spent anything": say what was looked for instead
        raise ChargebackError(
            f"Prometheus at {base} holds none of alicerce's cost series for {month} (team:gpu_cost_usd:sum1h, "
            "team:gpu_hours_allocated:sum1h, team:gpu_hours_used:sum1h, workload:vllm_tokens:sum1h)",
            "point --prometheus at a site's Prometheus that loads alicerce's rules (PrometheusRule alicerce-gpu-platform "
            "in the monitoring namespace) and still keeps that month (monitoring.retention)",
        )
    _refuse_partial(base, month, missing, open_until, partial, figures=lacks)
    return Report(month, teams, workloads, runs, missing, open_until=open_until, lacks=lacks, missing_minutes=minutes)


def _days_over(minutes: dict[datetime.datetime, int]) -> list[str]:
    """The days (UTC) whose hours lost more than TOLERATED_MINUTES_A_DAY minutes, summed."""
    per_day: dict[str, int] = {}
    for mark, lost in minutes.items():
        (day,) = _days([mark])
        per_day[day] = per_day.get(day, 0) + lost
    return sorted(day for day, lost in per_day.items() if lost > TOLERATED_MINUTES_A_DAY)


def _refuse_partial(
    base: str, month: str, missing: list[str], open_until: str | None, partial: bool, *, figures: dict[str, list[str]] | None = None
) -> None:
    if (missing or open_until) and not partial:
        lacks = [lacking(missing, figures)] if missing else []
        lacks += [f"the month is not over (records up to {open_until})"] if open_until else []
        raise ChargebackError(
            f"Prometheus at {base} holds only part of {month}: {'; '.join(lacks)}",
            "a whole month needs monitoring.retention of 31d or more, alicerce's rules loaded and kube-state-metrics, "
            "dcgm-exporter and the serving scrape answering all month "
            "(KubeStateMetricsAbsent, DCGMExporterDown say when not); to export what it holds, marked partial, "
            "pass --partial",
        )


TEAM_COLUMNS = ("month", "site", "team", "costCenter", "gpuHoursAllocated", "gpuHoursUsed", "spendUsd", "usdPerUsedGpuHour")
WORKLOAD_COLUMNS = ("month", "site", "namespace", "workload", "spendUsd", "tokens", "usdPerMillionTokens")
RUN_COLUMNS = ("month", "site", "namespace", "team", "costCenter", "runKind", "run", "runUid", "spendUsd")


def render_json(report: Report) -> str:
    document: dict[str, Any] = {"schemaVersion": 1, "month": report.month, "teams": report.teams, "workloads": report.workloads,
                                "runs": report.runs}  # fmt: skip
    if report.partial:  # only a month accepted as partial says so: a whole month's document is as it was
        document |= {"partial": True, "missingDays": report.missing_days, "openUntil": report.open_until}
        if set(report.lacks) - {next(iter(FIGURES))}:  # a source other than kube-state-metrics: which figures lack which days
            document["lackingFigures"] = report.lacks
    if report.missing_minutes:  # minutes lost under the daily tolerance are still said, by figure
        document["missingMinutes"] = report.missing_minutes
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def render_csv(report: Report) -> str:
    """One table: a ``kind`` column (team, workload or run), then every kind's columns; a figure that has no meaning for
    a row (a cost per used GPU-hour with no GPU-hour used) is empty."""
    columns = ["kind", *dict.fromkeys([*TEAM_COLUMNS, *WORKLOAD_COLUMNS, *RUN_COLUMNS])]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    for kind, rows in (("team", report.teams), ("workload", report.workloads), ("run", report.runs)):
        for row in rows:
            writer.writerow({"kind": kind, **{k: ("" if v is None else v) for k, v in row.items()}})
    return out.getvalue()
