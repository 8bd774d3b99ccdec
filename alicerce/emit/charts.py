"""Charts of a sizing plan, as PNG and SVG with deterministic bytes (no dates, fixed SVG ids)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alicerce.plan.platform import SizingPlan


def write_charts(plan: SizingPlan, by_environment: Sequence[SizingPlan], out: Path) -> list[Path]:
    """GPU-hours by team, pool utilisation forecast, and monthly cost by environment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "alicerce", "font.size": 9, "figure.dpi": 100})
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    hours: dict[str, float] = defaultdict(float)
    for w in plan.workloads:
        hours[w.team] += w.gpu_hours or 0.0
    teams = sorted(hours)
    pools = [p for p in plan.pools if p.utilization is not None]
    costs = {p.environment: p.monthly_cost_usd for p in by_environment}

    charts = [
        ("gpu-hours-by-team", f"GPU-hours by team ({plan.environment})", teams, [hours[t] for t in teams], "GPU-hours"),
        ("pool-utilization", f"Forecast GPU utilisation by pool ({plan.environment})", [p.name for p in pools],
         [100 * (p.utilization or 0.0) for p in pools], "% of GPU-hours at max size"),
        ("cost-by-environment", "Forecast monthly cost by environment (on-demand)", sorted(costs),
         [costs[e] for e in sorted(costs)], "USD per month"),
    ]  # fmt: skip
    for name, title, labels, values, unit in charts:
        figure, axes = plt.subplots(figsize=(7, 3.5))
        bars = axes.bar(labels, values, color="#3b6ea5")
        axes.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=8)
        axes.set_title(title)
        axes.set_ylabel(unit)
        axes.spines[["top", "right"]].set_visible(False)
        figure.tight_layout()
        for suffix, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
            path = out / f"{name}.{suffix}"
            figure.savefig(path, format=suffix, metadata=metadata)
            written.append(path)
        plt.close(figure)
    return written
