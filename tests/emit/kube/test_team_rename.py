"""Day 2, a team renamed mid-month (review obsreview24 F2): research becomes research-ml, same namespace, same people,
same budget. Every cost record is keyed by the team label, so without more the renamed team's month restarted at $0:
a team at 235% of its share showed 88%, its budget alerts stayed quiet and the guard released its hold.
``teams[].renamedFrom`` carries the month: the budget alerts, the month's records and the guard count the hours spent
under the former name (each once), while the chargeback keeps both names as they were recorded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from alicerce.emit.kube import budget_guard
from alicerce.emit.kube.budgets import CONFIG, NAME
from alicerce.emit.kube.monitoring import monitoring_objects
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import load_text
from tests.conftest import ROOT
from tests.emit.kube.prometheus import at, needs_prometheus, prometheus_server
from tests.emit.kube.test_budget_guard import FakeApiServer, api_server, budget, config, queue, spend
from tests.emit.kube.test_costs import P5, held, prices
from tests.emit.kube.test_monitoring import expected, needs_promtool, rules_of, run_promtool

HOURLY = 128 * 6.88  # 128 p5 GPUs at the plan's on-demand price: $880.64 an hour, before and after the rename


def renamed(share_usd: float, former: str = "") -> ResolvedPlatform:
    """The reference prod with research renamed research-ml (``former``: its renamedFrom line) and a budget whose
    share at aws is ``share_usd``."""
    reference = validated(load_text((ROOT / "platform.yaml").read_text(), "platform.yaml"), "prod")
    dc1_price = prices(reference)["onprem-h100"]
    aws, dc1 = 96 * 6.88, 192 * dc1_price
    total = 224 * dc1_price * 744 + share_usd * (aws + dc1) / aws
    text = (ROOT / "platform.yaml").read_text()
    budget = "budget: {monthlyUsd: 900000, onExhausted: stopAdmitting}"
    text = text.replace(budget, budget.replace("900000", f"{total:.2f}"))
    carried = f"\\1  renamedFrom: [{former}]\n" if former else ""
    text = re.sub(r"\n(\s+)- name: research\n", rf"\n\1- name: research-ml\n\1  namespaces: [research]\n{carried}", text)
    text = text.replace("team: research\n", "team: research-ml\n")
    return validated(load_text(text, "platform.yaml"), "prod")


@needs_promtool
@pytest.mark.parametrize("former", ["research", ""])
def test_a_team_renamed_mid_month_keeps_its_month_where_it_names_its_former_name(tmp_path: Path, former: str) -> None:
    """Five hours recorded under research (what the old rules wrote), then three under the renamed rules: $7,045 spent
    this month against a $3,000 share. With renamedFrom: [research] BudgetResearchMl100 fires at 8h10m and the month's
    record lists research-ml alone (the hours count once); without it the month restarts at the rename, research's
    hours stay under its old name and the alert stays quiet (what `alicerce diff` warns of)."""
    rp = renamed(3000, former)
    rules = rules_of(rp, "aws")
    share = float(rules["BudgetResearchMl100"]["expr"].rsplit("> ", 1)[1])
    assert 2 * share < HOURLY * 8 and share > HOURLY * 3  # past twice the share, yet under it after the rename
    node = "ip-10-20-1-1.ec2.internal"
    inputs = [
        {"series": 'team:gpu_cost_usd:sum1h{site="aws",team="research"}', "values": f"{HOURLY}x300"},
        {"series": f'kube_node_labels{{node="{node}",{P5}}}', "values": "1x600"},
        *held("research", "train-0", node, 128, "_x300 GPUSx300"),
    ]
    fired = [expected(rules["BudgetResearchMl100"], {"team": "research-ml"}, "")] if former else []
    month = 'team:gpu_cost_usd:sum_month{team=~"research|research-ml"}'
    names = ["research-ml"] if former else ["research", "research-ml"]
    tests = [{
        "interval": "1m",
        "input_series": inputs,
        "alert_rule_test": [{"eval_time": "8h10m", "alertname": "BudgetResearchMl100", "exp_alerts": fired}],
        "promql_expr_test": [{"expr": f"count by (team) ({month})", "eval_time": "8h10m",
                              "exp_samples": [{"labels": f'{{team="{n}"}}', "value": 1} for n in names]}],
    }]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_prometheus
@pytest.mark.parametrize("carried", [True, False])
def test_the_guard_holds_a_renamed_teams_new_queue_when_the_month_under_both_names_is_spent(tmp_path: Path, carried: bool) -> None:
    """research spent $100/h from 1 March; renamed research-ml at 06:00 on the 2nd (its new ClusterQueue unheld), it
    goes on at $100/h. By 02:30 on the 3rd the month under both names is $3,000 + $2,000, its $5,000 budget: the guard
    holds research-ml's queue where its config names the former name, and leaves it open ($2,000) where it does not."""
    rename = "2025-03-02T06:00"
    run = "2025-03-03T02:30"
    series = {**spend("research", 100, ("2025-03-01T00:00", rename)), **spend("research-ml", 100, (rename, "2025-03-03T04:00")),
              **budget("research-ml", 5000, run)}  # fmt: skip
    state = FakeApiServer({"research-ml": queue("research-ml")})
    with prometheus_server(series, tmp_path) as prometheus, api_server(state) as kube:
        cfg = config(prometheus, kube, tmp_path, ["research-ml"])
        if carried:
            cfg["teams"][0]["renamedFrom"] = ["research"]
        assert budget_guard.run(cfg, at(run)) == 0
    assert state.queues["research-ml"]["spec"].get("stopPolicy", "None") == ("Hold" if carried else "None")


def test_the_guard_of_a_renamed_team_is_told_its_former_names() -> None:
    rp = renamed(3000, "research")
    [cm] = [o for o in monitoring_objects(rp, "aws") if o["kind"] == "ConfigMap" and o["metadata"]["name"] == NAME]
    assert '"renamedFrom": [\n    "research"\n   ]' in cm["data"][CONFIG]


@pytest.mark.parametrize(
    ("former", "message"),
    [
        ("research-ml", "team research-ml lists its own name as a former name"),
        ("applied-ml", "team research-ml lists the name of team applied-ml as a former name"),
    ],
)
def test_a_former_name_in_use_is_a_located_error(former: str, message: str) -> None:
    with pytest.raises(SpecInvalid) as e:
        renamed(3000, former)
    [text] = [error.render() for error in e.value.errors]
    assert text.startswith("platform.yaml:") and "error[AL226]" in text and message in text
    assert re.search(r"tenancy\.teams\[\d\]\.renamedFrom\[0\]", text), text


def test_a_former_name_two_teams_claim_is_a_located_error() -> None:
    text = (ROOT / "platform.yaml").read_text()
    text = re.sub(r"\n(\s+)- name: research\n", r"\n\1- name: research\n\1  renamedFrom: [vision]\n", text)
    text = re.sub(r"\n(\s+)- name: applied-ml\n", r"\n\1- name: applied-ml\n\1  renamedFrom: [vision]\n", text)
    with pytest.raises(SpecInvalid) as e:
        validated(load_text(text, "platform.yaml"), "prod")
    [text] = [error.render() for error in e.value.errors]
    assert "error[AL226]" in text and "teams research and applied-ml both list vision as a former name" in text
