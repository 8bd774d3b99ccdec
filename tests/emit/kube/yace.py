"""What yet-another-cloudwatch-exporter v0.67.0 does with a configuration, re-stated in Python from the facts vendored
under tests/data/upstream/yet-another-cloudwatch-exporter/v0.67.0 (naming.json): the series and label names it serves,
and which tagged resources a discovery job finds. A test holds the name rules to the upstream unit test's own cases."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from alicerce.catalog import load_catalog
from tests.emit.kube.upstream import load

CHART = "prometheus-yet-another-cloudwatch-exporter"
UNDERSCORED = set(" ,\t/\\.-:=@<>()\u201c")


def version() -> str:
    """The exporter version of the pinned chart (its appVersion)."""
    chart = load_catalog().versions.charts[CHART]
    assert chart.appVersion is not None
    return chart.appVersion


def naming() -> dict[str, Any]:
    facts: dict[str, Any] = load("yet-another-cloudwatch-exporter", version(), "naming.json")
    return facts


def prom_string(text: str) -> str:
    """PromStringToBuilder: separators to _, % to _percent, a _ before a capital that follows a lower-case letter or digit."""
    out: list[str] = []
    prev = ""
    for c in text:
        if c in UNDERSCORED:
            out.append("_")
        elif c == "%":
            out.append("_percent")
        else:
            if c.isupper() and (prev.islower() or prev.isdigit()):
                out.append("_")
            out.append(c.lower())
        prev = c
    return "".join(out)


def series_name(namespace: str, metric: str, statistic: str) -> str:
    """BuildMetricName."""
    ns = prom_string(namespace[1:].lower() if namespace.startswith("/") else namespace.lower())
    prefix = "" if ns.startswith("aws") else "aws_"
    name = prom_string(metric)
    skip = 0
    for part in ns.split("_"):
        if name[skip:].startswith(part):
            skip = len(part)
    name = name[skip:].removeprefix("_")
    return f"{prefix}{ns}_{name}" + (f"_{prom_string(statistic)}" if statistic else "")


def label_name(text: str) -> str:
    """PromStringTag with labelsSnakeCase off (sanitize): separators to _, case kept."""
    if "%" in text or "\u201c" in text:
        text = text.replace("%", "_percent")
    return "".join("_" if c in UNDERSCORED else c for c in text)


def found(search_tags: list[Mapping[str, str]], tags: Mapping[str, str]) -> bool:
    """FilterThroughTags: the resource carries every searched key, each value matching its (unanchored) expression."""
    return all(t["key"] in tags and re.search(t["value"], tags[t["key"]]) is not None for t in search_tags)


def served(published: Mapping[int, float], minute: int, job: Mapping[str, Any]) -> float:
    """The value one read at the whole ``minute`` serves for a series CloudWatch has the datapoints ``published`` of
    (the minute a period starts -> its statistic), under a discovery ``job``'s period, length and delay (seconds):
    pkg/job/getmetricdata/windowcalculator.go Calculate (now - period/2 rounded to the period: the minute itself, since
    Go rounds halves up; the window [now - delay - length, now - delay), GetMetricData's end being exclusive), the
    newest datapoint in it (one per series without exportAllDataPoints), none: 0 with nilToZero, else NaN
    (pkg/promutil/migrate.go BuildMetrics)."""
    end = minute * 60 - job["delay"]
    inside = [m for m in published if end - job["length"] <= m * 60 < end]
    if inside:
        return published[max(inside)]
    return 0.0 if job["nilToZero"] else float("nan")
