"""One spec, one cost: `plan` (text and JSON), `diff` (JSON and markdown) and the generated PLATFORM.md agree.

Each reads the planner through a different door (the CLI's table, its JSON document, diff's
before/after, the report's Markdown), so a rounding, a forgotten pool or a different price source in
any of them shows up here as a mismatch against the JSON figures.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from alicerce.cli import build_app
from alicerce.emit.tree import render_tree
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT

BASE: dict[str, Any] = yaml.safe_load((ROOT / "platform.yaml").read_text())


def _spot_and_discounts(d: dict[str, Any]) -> None:
    """Every way capacity is bought: Spot, a Savings Plan, a negotiated price, a reservation, owned."""
    d["costs"]["cloud"] += [{"pool": "infer-l40s", "savingsPlanDiscount": 0.3}, {"pool": "infer-l4", "usdPerHour": 0.5}]
    d["costs"]["onprem"][0].update(electricityUsdPerKwh=0.12, pools=[{"pool": "onprem-h100", "serverUsd": 280000}])
    d["nodePools"][1]["scaling"]["min"] = 3  # data-prep: three Spot nodes always on


VARIANTS = {"reference": lambda d: None, "spot, discounts and quotes": _spot_and_discounts}


def invoke(*args: str) -> str:
    result = CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})
    assert result.exit_code == 0 and result.exception is None, result.output
    return result.output


def dollars(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("env", ["dev", "prod"])
def test_plan_diff_and_platform_md_agree(variant: str, env: str, tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    VARIANTS[variant](data)
    spec = tmp_path / "platform.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))

    document = json.loads(invoke("plan", str(spec), "--env", env, "--format", "json"))
    total = document["monthlyCostUsd"]
    pools = {p["name"]: p["monthlyCostUsd"] for p in document["pools"]}
    assert total > 0 and sum(document["costBreakdown"].values()) == pytest.approx(total, rel=1e-9)

    # plan's text: "Monthly cost (env): $X = ..." and a USD/month column per pool, rounded to the dollar
    text = invoke("plan", str(spec), "--env", env)
    (shown,) = re.findall(rf"^Monthly cost \({env}\): (\$[\d,]+)", text, re.MULTILINE)
    assert dollars(shown) == round(total)
    for name, cost in pools.items():
        cells = next(cells for line in text.splitlines() if (cells := line.replace("│", " ").split())[:1] == [name])
        # a pool the planner cannot price (an owned CPU pool: the TCO catalog prices GPU servers) shows "-"
        assert (f"{round(cost):,}" if cost is not None else "-") in cells, (name, cost, cells)

    # diff of the spec against itself and against the reference: the same total, to the cent
    changes = json.loads(invoke("diff", str(spec), str(spec), "--env", env, "--format", "json", "--no-plan"))
    (same,) = changes["environments"]
    assert same["monthlyCostUsd"]["before"] == same["monthlyCostUsd"]["after"] == pytest.approx(total, abs=0.005)
    reference = tmp_path / "reference.yaml"
    reference.write_text((ROOT / "platform.yaml").read_text())
    against = json.loads(invoke("diff", str(reference), str(spec), "--env", env, "--format", "json", "--no-plan"))
    assert against["environments"][0]["monthlyCostUsd"]["after"] == pytest.approx(total, abs=0.005)
    if against["environments"][0]["monthlyCostUsd"]["delta"]:  # the PR comment shows a cost row only when it moves
        markdown = invoke("diff", str(reference), str(spec), "--env", env, "--no-plan")
        assert f"→ ${round(total):,}" in markdown

    # the generated report, as `alicerce generate` writes it
    report = render_tree(validated(load_file(spec), env), ["reports"])["reports/PLATFORM.md"]
    (headline,) = re.findall(r"Monthly cost of the declared capacity[^*]*\*\*(\$[\d,]+)\*\*", report)
    # every environment here buys some capacity other than on demand (Spot, a reservation, owned nodes)
    assert "on-demand prices" not in report, "the report must not say the total is at on-demand prices"
    assert dollars(headline) == round(total)
    for name, cost in pools.items():
        row = next(line for line in report.splitlines() if line.startswith(f"| {name} |"))
        assert (cost is None and row.endswith("— |")) or row.rstrip(" |").endswith(f"${round(cost or 0):,}"), row


def test_plan_shows_the_used_and_the_billed_gpu_hour_and_showback_bills_the_billed_one() -> None:
    """Issue 24 item 6: plan printed one "USD/GPU-h" (per used GPU-hour on owned pools) while showback bills each
    allocated GPU-hour at another price; finance saw two stories. Plan prints both, each with its definition, and the
    price the generated cost rules bill is the billed one."""
    from alicerce.emit.kube.costs import PRICE
    from alicerce.emit.kube.monitoring import rule_groups

    spec = str(ROOT / "platform.yaml")
    document = json.loads(invoke("plan", spec, "--env", "prod", "--format", "json"))
    pools = {p["name"]: p for p in document["pools"]}
    owned = pools["onprem-h100"]
    assert owned["billedUsdPerGpuHour"] < owned["usdPerGpuHour"]  # idle installed hours stay with the platform
    assert pools["infer-l40s"]["billedUsdPerGpuHour"] == pools["infer-l40s"]["usdPerGpuHour"]  # rented: one price
    # reserved nodes bill every hour used or not (review sizreview5 F6): a used GPU-hour of train-p5's four reserved p5
    # costs the month over its 43.6 busy GPU-hours; showback bills each allocated one at the node's $6.88
    reserved = pools["train-p5"]
    assert reserved["billedUsdPerGpuHour"] == 6.88
    assert reserved["usdPerGpuHour"] == pytest.approx(reserved["monthlyCostUsd"] / reserved["gpuHoursPerMonth"], rel=1e-3)
    rules = [r for g in rule_groups(validated(load_file(ROOT / "platform.yaml"), "prod"), "dc1") for r in g["rules"]]
    (billed,) = [r["expr"] for r in rules if r.get("record") == PRICE and r["labels"]["pool"] == "onprem-h100"]
    assert float(billed.removeprefix("vector(").removesuffix(")")) == pytest.approx(owned["billedUsdPerGpuHour"], abs=0.001)
    text = " ".join(invoke("plan", spec, "--env", "prod").split())  # as read, whatever the terminal's width wraps
    assert "billed/GPU-h" in text and "what showback and `alicerce costs` charge each allocated GPU-hour" in text
    # on Capacity Blocks each workload is charged its own blocks' rate, not the pool's (review sizreview24 N3: two
    # workloads on a p5e block pool were shown at 21.29 and 5.41 a GPU-hour beside the pool's 20.36)
    assert "showback: the same GPU-hours at the pool's billed/GPU-h (on Capacity Blocks at the rate of the workload's own blocks)" in text
    assert "each workload is charged its own blocks' rate, so where several share the pool this is their mean" in text
