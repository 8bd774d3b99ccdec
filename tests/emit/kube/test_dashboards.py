"""Dashboards per audience (issue 24 item 5): every panel query and template variable reads only series an exporter
the platform installs or one of its recording rules produces, at the site whose Prometheus the dashboard reads."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.emit.kube.dashboards import dashboards
from alicerce.emit.kube.monitoring import DASHBOARD_NAME, monitoring_objects, rule_groups
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT
from tests.emit.kube.labels import record_labels, unlabelled
from tests.emit.kube.scrape import dcgm_series, series
from tests.emit.kube.series import recorded, unproduced
from tests.emit.kube.test_monitoring import dcgm_scraped, needs_promtool, platform, run_promtool
from tests.emit.kube.upstream import load


def queries(board: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            metric = re.fullmatch(r"label_values\(([^,]+), (\w+)\)", variable["query"])
            assert metric is not None, variable["query"]
            exprs.append(metric.group(1))
    # a template variable is an exact label value: the panels' matchers stay valid PromQL once it is substituted
    return [e.replace("$team", "research").replace("$workload", "chat-70b") for e in exprs]


def series_labels(rp: ResolvedPlatform, site: str, groups: list[dict[str, Any]]) -> dict[str, frozenset[str] | None]:
    """The labels each series may carry: dcgm-exporter's as stored under the site's ServiceMonitor (a holder pod's too,
    and the labels its optional counters add), and each record's, from its rule. Other exporters' are not vendored:
    any label passes on them."""
    facts = load("dcgm-exporter", "4.5.3-4.8.2", "counters.json")
    dcgm = frozenset(dcgm_scraped(rp, site, dcgm_series("gpu-host", 0, ("pod", "namespace", "container"))))
    exporters: dict[str, frozenset[str] | None] = dict.fromkeys(facts["counters"], dcgm)
    exporters |= {name: dcgm | set(fact.get("labels_added", ())) for name, fact in facts["optional"].items()}
    return {**exporters, **record_labels(groups, exporters)}


@pytest.mark.parametrize(("env", "site"), [("prod", "aws"), ("prod", "dc1"), ("dev", "aws")])
def test_every_panel_reads_only_series_that_are_produced(env: str, site: str) -> None:
    rp = platform(env)
    groups = rule_groups(rp, site)
    known = series_labels(rp, site, groups)
    for name, board in dashboards(rp, rp.site(site), groups).items():
        assert unproduced(queries(board), groups) == {}, name
        # and each matcher names a label its series carries (review obsreview22 F6)
        assert unlabelled(queries(board), known) == {}, name


def test_one_dashboard_per_audience_with_what_that_audience_asks() -> None:
    rp = platform()
    boards = dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))
    assert set(boards) == {"gpu-platform.json", "team.json", "inference.json"}
    team = " ".join(queries(boards["team.json"]))
    assert "team:gpu_cost_usd:sum_month" in team and "alicerce:team_budget_usd:monthly" in team and "kueue_admission_wait" in team
    inference = " ".join(queries(boards["inference.json"]))
    assert all(f"vllm_time_to_first_token_seconds:p{q}" in inference for q in (50, 95, 99)) and "usd_per_million_tokens" in inference
    assert "pool:gpu_effective_utilization:ratio" in " ".join(queries(boards["gpu-platform.json"]))
    # the time from dataset to a deployed model where a served model's chain is recorded (chat-70b's team is at aws)
    assert "workload:model_lead_time:seconds" in queries(boards["gpu-platform.json"])
    assert "workload:model_lead_time:seconds" not in queries(dashboards(rp, rp.site("dc1"), rule_groups(rp, "dc1"))["gpu-platform.json"])
    # the budget line of the team dashboard is a series of the site's share of the budget
    budget = [r for g in rule_groups(rp, "aws") for r in g["rules"] if r.get("record") == "alicerce:team_budget_usd:monthly"]
    assert [r["labels"]["team"] for r in budget] == ["research"]
    assert len({b["uid"] for b in boards.values()}) == 3


def test_the_costliest_runs_are_ranked_at_one_instant() -> None:
    """Review obsreview13 F8: a top 10 drawn as a time series ran topk at each step, a line for every run that was ever
    in it. A table of one instant query, highest first; the other panels stay time series."""
    rp = platform()
    board = dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))["team.json"]
    runs = next(p for p in board["panels"] if "costliest runs" in p["title"])
    assert runs["type"] == "table" and runs["options"]["sortBy"] == [{"displayName": "Value", "desc": True}]
    assert [(t["instant"], t["range"], t["format"]) for t in runs["targets"]] == [(True, False, "table")]
    assert {p["type"] for p in board["panels"] if p is not runs} == {"timeseries"}


def test_a_panel_on_a_series_nobody_produces_is_caught() -> None:
    rp = platform()
    board = dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))["team.json"]
    board["panels"][0]["targets"][0]["expr"] = 'team:gpus_alocated:sum{team="$team"}'
    assert unproduced(queries(board), rule_groups(rp, "aws")) == {'team:gpus_alocated:sum{team="research"}': {"team:gpus_alocated:sum"}}


def test_a_panel_filtered_on_a_label_its_series_never_has_is_caught() -> None:
    """Review obsreview22 F6: the check read metric names only. team:gpus_allocated:sum is `sum by (team)` (and the
    site the rule adds): a pool matcher never matches; dcgm-exporter names the host Hostname, not node."""
    rp = platform()
    groups = rule_groups(rp, "aws")
    board = dashboards(rp, rp.site("aws"), groups)["team.json"]
    board["panels"][0]["targets"][0]["expr"] = 'team:gpus_allocated:sum{team="$team",pool="train-p5"}'
    board["panels"][1]["targets"][0]["expr"] = 'max by (node) (DCGM_FI_DEV_GPU_TEMP{node=~".+"})'
    known = series_labels(rp, "aws", groups)
    assert known["team:gpus_allocated:sum"] == {"team", "site"}
    assert unlabelled(queries(board), known) == {
        'team:gpus_allocated:sum{team="research",pool="train-p5"}': {("team:gpus_allocated:sum", "pool")},
        'max by (node) (DCGM_FI_DEV_GPU_TEMP{node=~".+"})': {("DCGM_FI_DEV_GPU_TEMP", "node")},
    }
    # what a record keeps through group_left and label_replace
    assert {"team", "run", "cost_center"} <= known["run:gpu_cost_usd:sum1h"]  # type: ignore[operator]


def test_the_dashboard_configmap_carries_every_dashboard() -> None:
    rp = platform()
    [cm] = [o for o in monitoring_objects(rp, "aws") if o["kind"] == "ConfigMap" and o["metadata"]["name"] == DASHBOARD_NAME]
    assert {k: json.loads(v) for k, v in cm["data"].items()} == dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))
    assert "ALERTS" not in recorded(rule_groups(rp, "aws"))


@pytest.mark.parametrize("example", ["aws-only.yaml", "minimal.yaml", "onprem-superpod.yaml", "user-catalog.yaml"])
def test_every_example_site_reads_only_produced_series(example: str) -> None:
    """A site without teams, budgets, SLOs or GPU pools records none of their series: its rules and panels leave
    them out instead of reading series that never exist."""
    path = ROOT / "examples" / example
    for env in yaml.safe_load(path.read_text())["environments"]:
        rp = validated(load_file(path, str(path)), env)
        for site in rp.sites:
            groups = rule_groups(rp, site.name)
            exprs = [r["expr"] for g in groups for r in g["rules"]]
            for board in dashboards(rp, site, groups).values():
                exprs += queries(board)
            assert unproduced(exprs, groups) == {}, (example, env, site.name)


@needs_promtool
def test_a_time_sliced_gpu_counts_once_in_the_power_panel_and_the_gpus_in_use(tmp_path: Path) -> None:
    """Review DEFECT 4: an L4 shared by four pods (KUBERNETES_VIRTUAL_GPUS): power once per pod, GPU_UTIL per process
    beside the device's own. The node draws 60 W (not 240) and the namespace uses one GPU (not four)."""
    rp = platform()
    board = dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))["gpu-platform.json"]
    (power,) = next(p for p in board["panels"] if p["title"] == "GPU power")["targets"]
    (tensor,) = next(p for p in board["panels"] if p["title"] == "Tensor core activity by node")["targets"]
    gpu = 'Hostname="ip-10-0-1-1",gpu="0",UUID="GPU-l4"'
    inputs = [{"series": f"DCGM_FI_DEV_GPU_UTIL{{{gpu}}}", "values": "80x10"}]
    for pod in "abcd":
        holder = f'{gpu},namespace="serving",pod="{pod}",container="vllm"'
        inputs += [
            {"series": f"DCGM_FI_DEV_POWER_USAGE{{{holder}}}", "values": "60x10"},
            {"series": f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{holder}}}", "values": "0.5x10"},
            {"series": f'DCGM_FI_DEV_GPU_UTIL{{{holder},uid="u{pod}"}}', "values": "20x10"},
        ]
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        {"expr": power["expr"], "eval_time": "5m", "exp_samples": [{"labels": '{Hostname="ip-10-0-1-1"}', "value": 60}]},
        {"expr": tensor["expr"], "eval_time": "5m", "exp_samples": [{"labels": '{Hostname="ip-10-0-1-1"}', "value": 50}]},
        {"expr": "namespace:dcgm_gpus_in_use:count", "eval_time": "5m", "exp_samples": [
            {"labels": 'namespace:dcgm_gpus_in_use:count{namespace="serving"}', "value": 1}]},
    ]}], tmp_path)  # fmt: skip


def test_a_time_sliced_gpu_counts_once_in_the_node_panels(tmp_path: Path) -> None:
    """Review obsreview2 DEFECT 4: with KUBERNETES_VIRTUAL_GPUS the exporter repeats a shared GPU's device counters
    once per pod holding it (vendored labels.json virtual_gpus): one L4 at 60 W shared by four pods is 60 W, not 240."""
    rp = platform()
    board = dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))["gpu-platform.json"]
    panels = {p["title"]: p["targets"][0]["expr"] for p in board["panels"]}
    node = "ip-10-20-7-1.ec2.internal"
    inputs = []
    for i in range(4):
        exposed = dcgm_series(node, 0, (f"chat-{i}", "serving", "main"))
        labels = dcgm_scraped(rp, "aws", exposed)
        inputs.append({"series": series("DCGM_FI_DEV_POWER_USAGE", labels), "values": "60x10"})
        inputs.append({"series": series("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", labels), "values": "0.3x10"})
    tests = [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        {"expr": panels["GPU power"], "eval_time": "5m", "exp_samples": [{"labels": f'{{Hostname="{node}"}}', "value": 60}]},
        {"expr": panels["Tensor core activity by node"], "eval_time": "5m",
         "exp_samples": [{"labels": f'{{Hostname="{node}"}}', "value": 30}]},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


def test_a_site_that_serves_nothing_gets_no_inference_board_or_panels() -> None:
    """Review obsreview24 N3: the serving records are recorded at every site, so dc1 (training only) got an inference
    board whose workload list stays empty and overview panels that never show a line."""
    rp = platform()
    dc1 = dashboards(rp, rp.site("dc1"), rule_groups(rp, "dc1"))
    assert "inference.json" not in dc1
    assert not [q for q in queries(dc1["gpu-platform.json"]) if "vllm" in q]
    aws = dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))
    assert "inference.json" in aws and [q for q in queries(aws["gpu-platform.json"]) if "vllm" in q]
