"""Numbers that carry how they were computed, so `alicerce plan --explain` can show every step.

A :class:`Figure` is one computed value with its formula and inputs; a :class:`Factor` is one
multiplier of a model (an efficiency, a price ratio) with the source it comes from. Both are plain
frozen data and serialise to JSON for `--explain --json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def rounded(value: Any) -> Any:
    """Round floats for output: three decimals below 1000, one above (deterministic JSON)."""
    if isinstance(value, float):
        return round(value, 3) if abs(value) < 1000 else round(value, 1)
    return value


@dataclass(frozen=True)
class Factor:
    """One multiplier of a model, the value it took here and where that value comes from."""

    name: str
    value: float
    source: str  # a key of the catalog's sources, or "spec" / "computed"
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": rounded(self.value), "source": self.source, "why": self.why}


@dataclass(frozen=True)
class Figure:
    """One computed number with how it was computed."""

    name: str
    value: float | None
    unit: str
    formula: str
    inputs: dict[str, Any] = field(default_factory=dict)
    factors: tuple[Factor, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "value": rounded(self.value),
            "unit": self.unit,
            "formula": self.formula,
            "inputs": {k: rounded(v) for k, v in self.inputs.items()},
        }
        if self.factors:
            out["factors"] = [f.to_json() for f in self.factors]
        return out


def days_text(days: float) -> str:
    """Days as a message says them: to two decimals, trailing zeros dropped (5.5, 30, 0.29), neither rounded to whole
    days ("the 6-day deadline" for 5.5) nor to six digits ("0.291667"; review sizreview13 F5)."""
    return f"{days:.2f}".rstrip("0").rstrip(".")


def deadline_text(days: float) -> str:
    """A deadline as declared: "the 5.5-day deadline" from a day, "the 7-hour deadline" from an hour, then minutes and
    seconds (review sizreview14 F12: a 7h deadline read "the 0.29-day deadline"; review sizreview18 F9: a 1s one read
    "the 0-hour deadline")."""
    for unit, per_day in (("day", 1), ("hour", 24), ("minute", 24 * 60)):
        if days * per_day >= 1:
            return f"{days_text(days * per_day)}-{unit}"
    return f"{days_text(days * 86_400)}-second"
