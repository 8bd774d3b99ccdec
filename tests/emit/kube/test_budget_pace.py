"""The budget projection's pace (review obsreview26 D1): the trailing week's spend (team:gpu_cost_usd:sum7d, from
team:gpu_cost_usd:sum1h, a name kept across upgrades so the month of an upgrade still reads its earlier hours) is divided
by the hours of that week the spend itself was recorded (site:cost_hours_recorded:count7d). Counting a record newer than
the spend (site:cost_sources_answered_hours:sum1h, added later) read an upgraded platform's week over the hours since
the upgrade: 7x the pace on its first day. research spends steadily at 40 p5 GPUs ($275.20/h, under its share's pace)
from the 1st; with the newer record born at hour 140 (an upgrade) BudgetResearchProjected stays quiet at 150 h, as
it does without the upgrade."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.emit.kube.costs import MEASURED_HOUR, TEAM_COST, TEAM_HOUR
from alicerce.emit.kube.monitoring import rule_groups
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT
from tests.emit.kube.test_monitoring import needed_rules, needs_promtool, promtool, rules_of


@needs_promtool
@pytest.mark.parametrize("measured", ["1x160", "_x139 1x21"], ids=["always-recorded", "record-born-at-140h"])
def test_an_upgrade_does_not_read_the_week_as_a_day(measured: str, tmp_path: Path) -> None:
    text = (ROOT / "platform.yaml").read_text().replace("budget: {monthlyUsd: 900000,", "budget: {monthlyUsd: 800000,")
    rp = validated(load_text(text, "platform.yaml"), "prod")
    rule = rules_of(rp, "aws")["BudgetResearchProjected"]
    under = 40 * 6.88
    research = 'site="aws",team="research"'
    fed = {TEAM_HOUR, TEAM_COST, MEASURED_HOUR}  # given as inputs, their rules left out
    inputs: list[dict[str, Any]] = [{"series": f"{name}{{{research}}}", "values": f"{under:.2f}x160"} for name in (TEAM_HOUR, TEAM_COST)]
    inputs.append({"series": f'{MEASURED_HOUR}{{site="aws"}}', "values": measured})
    tests = [{"interval": "1h", "input_series": inputs,
              "alert_rule_test": [{"eval_time": "150h", "alertname": rule["alert"], "exp_alerts": []}]}]  # fmt: skip
    groups = [{**g, "rules": [r for r in g["rules"] if r.get("record") not in fed]} for g in needed_rules(rule_groups(rp, "aws"), tests)]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1h", "tests": tests}))
    result = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
