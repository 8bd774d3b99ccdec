"""Charts of a sizing plan, as PNG and SVG with deterministic bytes (no dates, fixed SVG ids)."""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alicerce.plan.platform import SizingPlan

UTILISATION_STEPS = 20


def _save(figure: Any, out: Path, name: str, written: list[Path]) -> None:
    import matplotlib.pyplot as plt

    from alicerce.emit.files import write_bytes_atomic

    figure.tight_layout()
    for suffix, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        path = out / f"{name}.{suffix}"
        rendered = io.BytesIO()  # drawn whole first: a failure never leaves a half-written chart over the last one
        figure.savefig(rendered, format=suffix, metadata=metadata)
        write_bytes_atomic(path, rendered.getvalue())
        written.append(path)
    plt.close(figure)


def write_charts(plan: SizingPlan, by_environment: Sequence[SizingPlan], out: Path) -> list[Path]:
    """GPU-hours by team, pool utilisation, monthly cost by environment (what can run, owned pools at
    their TCO), own-vs-rent cost per GPU-hour against utilisation, and the growth forecast's cost."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "alicerce", "font.size": 9, "figure.dpi": 100})
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    hours: dict[str, float] = defaultdict(float)
    for w in plan.workloads:
        if w.runnable and w.pool is not None:
            hours[w.team] += w.gpu_hours or 0.0
    teams = sorted(hours)
    pools = [p for p in plan.pools if p.utilization is not None]
    costs = {p.environment: p.monthly_cost_usd for p in by_environment}

    bars = [
        ("gpu-hours-by-team", f"GPU-hours by team ({plan.environment})", teams, [hours[t] for t in teams], "GPU-hours"),
        ("pool-utilization", f"Forecast GPU utilisation by pool ({plan.environment})", [p.name for p in pools],
         [100 * (p.utilization or 0.0) for p in pools], "% of GPU-hours at max size"),
        ("cost-by-environment", "Monthly cost by environment (rented pools, owned TCO, storage)", sorted(costs),
         [costs[e] for e in sorted(costs)], "USD per month"),
    ]  # fmt: skip
    for name, title, labels, values, unit in bars:
        figure, axes = plt.subplots(figsize=(7, 3.5))
        drawn = axes.bar(labels, values, color="#3b6ea5")
        axes.bar_label(drawn, labels=[f"{v:,.0f}" for v in values], fontsize=8)
        axes.set_title(title)
        axes.set_ylabel(unit)
        axes.spines[["top", "right"]].set_visible(False)
        _save(figure, out, name, written)

    # own vs rent: what a used GPU-hour costs on each owned pool as utilisation varies, against renting
    figure, axes = plt.subplots(figsize=(7, 3.5))
    utilisation = [(i + 1) / UTILISATION_STEPS for i in range(UTILISATION_STEPS)]
    for option in plan.own_vs_rent:
        owned = [option.owned.usd_per_gpu_hour(u) or 0.0 for u in utilisation]
        axes.plot([100 * u for u in utilisation], owned, label=f"{option.pool} (owned)")
        for rental in option.options:  # per used GPU-hour: a held option also pays for its idle hours
            cost = [rental.usd_per_gpu_hour / u if rental.held else rental.usd_per_gpu_hour for u in utilisation]
            axes.plot([100 * u for u in utilisation], cost, linestyle="--",
                      label=f"{rental.instance} {rental.purchase} ({option.rental_region})")  # fmt: skip
        axes.plot([100 * option.owned.utilization], [option.owned.usd_per_gpu_hour() or 0.0], "o", color="#c44e52")
    axes.set_title(f"Own or rent: USD per used GPU-hour ({plan.environment})")
    axes.set_xlabel("utilisation of the owned pool (%)")
    axes.set_ylabel("USD per GPU-hour")
    axes.set_ylim(bottom=0, top=max([o.rental_usd_per_gpu_hour or 0.0 for o in plan.own_vs_rent] + [1.0]) * 3)
    axes.spines[["top", "right"]].set_visible(False)
    if plan.own_vs_rent:
        axes.legend(fontsize=7, frameon=False)
    _save(figure, out, "own-vs-rent", written)

    # growth: the month's cost at each quarter of the forecast
    figure, axes = plt.subplots(figsize=(7, 3.5))
    quarters = list(range(len(plan.forecast.monthly_usd))) if plan.forecast else []
    values = list(plan.forecast.monthly_usd) if plan.forecast else []
    axes.plot(quarters, values, marker="o", color="#3b6ea5")
    axes.set_title(f"Forecast monthly cost of the pools by quarter ({plan.environment})")
    axes.set_xlabel("quarters from now")
    axes.set_ylabel("USD per month")
    axes.set_ylim(bottom=0)
    axes.spines[["top", "right"]].set_visible(False)
    _save(figure, out, "forecast-cost", written)
    return written
