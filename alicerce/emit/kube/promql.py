"""Just enough PromQL reading to know which recorded series an expression needs.

A site without teams, GPU pools, budgets or SLOs records none of the series the spec would give it (the namespace ->
team map, prices, budgets, SLO error ratios): the rules and panels that read them would only ever be empty, so they
are left out (:func:`fed`). Recording-rule names have the ``level:metric:operations`` form, three parts; exporters'
names have at most two (``vllm:num_requests_waiting``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_RECORDED = re.compile(r"(?<![\w:])([a-zA-Z_][\w]*:[\w]+:[\w]+)(?![\w:])")


def recorded_read(expr: str) -> set[str]:
    """The recording-rule names an expression reads."""
    text = _RANGES.sub("", _MATCHERS.sub("", _STRINGS.sub('""', expr)))
    return set(_RECORDED.findall(text))


def fed(groups: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rule groups without the rules that read a recorded series no rule records here (transitively), and
    without the groups that end up empty."""
    groups = [dict(g, rules=list(g["rules"])) for g in groups]
    while True:
        have = {r["record"] for g in groups for r in g["rules"] if "record" in r}
        kept = [dict(g, rules=[r for r in g["rules"] if recorded_read(r["expr"]) <= have]) for g in groups]
        if sum(len(g["rules"]) for g in kept) == sum(len(g["rules"]) for g in groups):
            return [g for g in kept if g["rules"]]
        groups = kept
