"""A team's ClusterQueue that admits nothing (review obsreview24 F1). Kueue reports a queue that is not Active as
``kueue_cluster_queue_status{status="active"} 0`` (v0.19.2 pkg/metrics/metrics.go 51-67, vendored metrics.json), for
any of the Active condition's reasons: a Hold set by hand, the budget guard's hold left after the budget went, a
missing ResourceFlavor or AdmissionCheck. Only the guard's hold while the team's budget is spent is no fault: every
rule read an inactive queue as that hold and muted itself, so any other stop left the team's jobs waiting with no
alert. These feed each pattern and its near miss through promtool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alicerce.emit.kube.diagnoses import GUARDED_QUEUE_INACTIVE_FOR, INACTIVE_REASONS, QUEUE_INACTIVE_FOR
from alicerce.emit.kube.monitoring import rule_groups
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from alicerce.spec.units import parse_duration
from tests.conftest import ROOT
from tests.emit.kube.test_monitoring import budget_share, expected, hourly_spend, needs_promtool, platform, rules_of, run_promtool
from tests.emit.kube.upstream import load

INACTIVE = "KueueClusterQueueInactive"
STARVED = 'cluster_queue="research",status="inadmissible",replica_role="standalone"'


def status(queue: str, active: str, pending: str | None = None) -> list[dict[str, str]]:
    """Kueue's status gauge of ``queue`` (one series per status: active 0 and pending 1 while it is stopped)."""
    key = f'cluster_queue="{queue}",replica_role="standalone"'
    pending = pending if pending is not None else " ".join(f"{1 - int(v[0])}{v[1:]}" for v in active.split())
    return [{"series": f'kueue_cluster_queue_status{{{key},status="active"}}', "values": active},
            {"series": f'kueue_cluster_queue_status{{{key},status="pending"}}', "values": pending}]  # fmt: skip


def test_kueue_reports_an_inactive_queue_and_why() -> None:
    """The upstream facts the alert stands on: the status gauge's values, and the Active condition's reasons its
    runbook names (each a reason Kueue 0.19.2 sets)."""
    facts = load("kueue", "0.19.2", "metrics.json")["kueue_cluster_queue_status"]
    assert {"active", "pending"} <= set(facts["status"])
    assert set(INACTIVE_REASONS) <= set(facts["inactive_reasons"]), set(INACTIVE_REASONS) - set(facts["inactive_reasons"])
    description = rules_of(platform("prod"), "aws")[INACTIVE]["annotations"]["description"]
    assert all(reason in description for reason in INACTIVE_REASONS)


def test_every_rule_that_reads_the_queue_status_has_an_inactive_queue_as_a_pattern_too() -> None:
    """Every rule that read kueue_cluster_queue_status used it to mute itself or to require an active queue."""
    readers = {r.get("alert") or r.get("record") for g in rule_groups(platform("prod"), "aws") for r in g["rules"]
               if "kueue_cluster_queue_status" in r["expr"]}  # fmt: skip
    assert INACTIVE in readers
    rule = rules_of(platform("prod"), "aws")[INACTIVE]
    assert "{.status.conditions}" in rule["annotations"]["description"] and "FlavorNotFound" in rule["annotations"]["description"]


@needs_promtool
def test_an_inactive_queue_is_reported_unless_the_budget_guard_holds_it(tmp_path: Path) -> None:
    """research's queue (a stopAdmitting budget) and applied-ml's and serving's (no budget) go inactive at 0. With
    research's month under its share the guard holds nothing: the unguarded queues fire after QUEUE_INACTIVE_FOR (30m),
    research's after GUARDED_QUEUE_INACTIVE_FOR (75m: the budget record's lag), not before; serving waited 75 minutes
    too, with every replacement replica blocked (review obsreview25 N6). With research's month at its share (the guard
    holds at the share exactly: budget_guard.decide) research's never fires."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")[INACTIVE]
    share = budget_share(rp, "aws", "research")
    wait, guarded = (int(parse_duration(d)) // 60 for d in (QUEUE_INACTIVE_FOR, GUARDED_QUEUE_INACTIVE_FOR))
    assert (wait, guarded) == (30, 75)

    def case(spent: float, research: bool) -> dict[str, Any]:
        free = ["applied-ml", "serving"]
        late = sorted([*free, "research"] if research else free)
        return {"interval": "1m",
                "input_series": [*status("research", "0x150"), *status("applied-ml", "0x150"),
                                 *status("serving", "0x150"), hourly_spend("aws", "research", spent, "x150")],
                "alert_rule_test": [
                    {"eval_time": f"{wait - 2}m", "alertname": INACTIVE, "exp_alerts": []},
                    *({"eval_time": f"{m}m", "alertname": INACTIVE,
                       "exp_alerts": [expected(rule, {"cluster_queue": q, "team": q}, "0") for q in free]}
                      for m in (wait + 2, guarded - 2)),
                    {"eval_time": f"{guarded + 2}m", "alertname": INACTIVE,
                     "exp_alerts": [expected(rule, {"cluster_queue": q, "team": q}, "0") for q in late]}]}  # fmt: skip

    run_promtool(rp, "aws", [case(share - 1, True), case(share, False)], tmp_path)


@needs_promtool
def test_the_guards_hold_is_quiet_while_the_month_record_catches_up(tmp_path: Path) -> None:
    """The month so far is recorded once an hour, at an offset within the hour (rules/group.go EvalTimestamp): the
    guard holds within 15 minutes of the mark that takes the spend past the share, the record shows it up to an hour
    later. Fed here as the hourly group writes it at its worst, at 59 minutes past each hour (promtool evaluates every
    group on the minute): the guard holds at the 1 h mark, the record says so at 1 h 59 m. Quiet at the share; a dollar
    under it, the same hold is not the guard's and fires."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")[INACTIVE]
    share = budget_share(rp, "aws", "research")
    month = 'team:gpu_cost_usd:sum_month{site="aws",team="research"}'
    wait = int(parse_duration(GUARDED_QUEUE_INACTIVE_FOR)) // 60

    def case(spent: float, fires: bool) -> dict[str, Any]:
        exp = [expected(rule, {"cluster_queue": "research", "team": "research"}, "0")] if fires else []
        return {"interval": "1m",
                "input_series": [*status("research", "1x59 0x240"), *status("applied-ml", "1x300"), *status("serving", "1x300"),
                                 {"series": month, "values": f"_x119 {spent!r} _x59 {spent!r} _x59 {spent!r}"}],
                "alert_rule_test": [{"eval_time": f"{60 + wait + 2}m", "alertname": INACTIVE, "exp_alerts": exp},
                                    {"eval_time": "4h", "alertname": INACTIVE, "exp_alerts": exp}]}  # fmt: skip

    run_promtool(rp, "aws", [case(share, False), case(share - 1, True)], tmp_path)


@needs_promtool
def test_a_queue_stopped_with_its_budget_unspent_starves_its_team(tmp_path: Path) -> None:
    """The repro of review obsreview24 F1: research's queue inactive for 8 hours with 4 workloads pending and nothing
    admitted, its month $0 of its share: SLOResearchQueueStarved was muted by the same clause that keeps it quiet
    under the guard's hold. Now it fires; with the month at the share (the guard's hold) it stays quiet."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")["SLOResearchQueueStarved"]
    share = budget_share(rp, "aws", "research")

    def case(spent: float, fires: bool) -> dict[str, Any]:
        return {"interval": "5m",
                "input_series": [{"series": f"kueue_pending_workloads{{{STARVED}}}", "values": "4x100"},
                                 *status("research", "0x100"), hourly_spend("aws", "research", spent, "x100")],
                "alert_rule_test": [{"eval_time": "6h30m", "alertname": "SLOResearchQueueStarved",
                                     "exp_alerts": [expected(rule, {}, "1")] if fires else []}]}  # fmt: skip

    # the inputs are constant 5-minute samples and the alert's subqueries keep their own 1-minute resolution: evaluated
    # at the samples' pace (1 m was 390 steps, ~8 CPU-s)
    run_promtool(rp, "aws", [case(0, True), case(share, False)], tmp_path, every="5m")


@needs_promtool
def test_a_team_whose_budget_only_alerts_has_no_hold_to_mute_on(tmp_path: Path) -> None:
    """research with ``onExhausted: alert``: no guard holds its queue, so a stopped queue is never the budget's, even
    with the month past the budget. Its queue alerts carry no mute, and the stop fires the starved SLO and the
    inactive alert."""
    text = (ROOT / "platform.yaml").read_text()
    old = "budget: {monthlyUsd: 900000, onExhausted: stopAdmitting}"
    assert old in text
    rp = validated(load_text(text.replace(old, "budget: {monthlyUsd: 900000, onExhausted: alert}"), "platform.yaml"), "prod")
    rules = rules_of(rp, "aws")
    assert "kueue_cluster_queue_status" not in rules["SLOResearchQueueStarved"]["expr"]
    assert "kueue_cluster_queue_status" not in rules["SLOResearchQueue"]["expr"]
    assert not any(r.get("record") == "team:gpu_budget_exhausted:bool" for g in rule_groups(rp, "aws") for r in g["rules"])
    past = 2 * budget_share(rp, "aws", "research")
    tests = [{"interval": "5m",
              "input_series": [{"series": f"kueue_pending_workloads{{{STARVED}}}", "values": "4x100"},
                               *status("research", "0x100"), hourly_spend("aws", "research", past, "x100")],
              "alert_rule_test": [
                  {"eval_time": "6h30m", "alertname": "SLOResearchQueueStarved",
                   "exp_alerts": [expected(rules["SLOResearchQueueStarved"], {}, "1")]},
                  {"eval_time": "6h30m", "alertname": INACTIVE,
                   "exp_alerts": [expected(rules[INACTIVE], {"cluster_queue": "research", "team": "research"}, "0")]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="5m")  # constant 5-minute samples: their pace


@needs_promtool
def test_the_guards_hold_kept_under_a_truncated_history_is_not_reported(tmp_path: Path) -> None:
    """Review obsreview25 N5: while Prometheus lacks the start of the month (CostHistoryTruncated) the guard keeps a hold
    it set this month whatever the under-counted month says (budget_guard.decide whole_month=False), and the budget
    record reads the same under-counted month: research's month at 60% of its share, its queue held, fired "its
    budget is not spent" at 77 minutes and the runbook said to release it. Quiet while truncated; the same hold with
    the history whole fires."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")[INACTIVE]
    share = budget_share(rp, "aws", "research")
    guarded = int(parse_duration(GUARDED_QUEUE_INACTIVE_FOR)) // 60

    def case(lowest: int, fires: bool) -> dict[str, Any]:
        # the TSDB's oldest sample at ``lowest`` s; Prometheus's namespace is older (created at 0)
        tsdb = [
            {"series": 'prometheus_tsdb_lowest_timestamp_seconds{namespace="monitoring",pod="prometheus-0"}', "values": f"{lowest}x150"},
            {"series": 'kube_namespace_created{namespace="monitoring"}', "values": "0x150"},
        ]
        exp = [expected(rule, {"cluster_queue": "research", "team": "research"}, "0")] if fires else []
        return {"interval": "1m",
                "input_series": [*status("research", "0x150"), *status("applied-ml", "1x150"), *status("serving", "1x150"),
                                 hourly_spend("aws", "research", share * 0.6, "x150"), *tsdb],
                "promql_expr_test": [{"expr": "count(alicerce:cost_history_start:seconds)", "eval_time": f"{guarded + 2}m",
                                      "exp_samples": [{"labels": "{}", "value": 1}] if not fires else []}],
                "alert_rule_test": [{"eval_time": f"{guarded + 2}m", "alertname": INACTIVE, "exp_alerts": exp}]}  # fmt: skip

    run_promtool(rp, "aws", [case(7200, False), case(0, True)], tmp_path)


@needs_promtool
def test_a_queue_stopped_after_the_truncation_began_is_reported(tmp_path: Path) -> None:
    """Review obsreview26 G-A: the truncated month's mute covered every guarded queue, for any reason, until the month
    ended. research's queue admits for 30 minutes and then stops (a sync removed its ResourceFlavor: FlavorNotFound)
    with the month at 60% of its share at 150m (two hour marks of 30%). Where the history was already truncated while
    it admitted, the stop cannot be a hold the guard keeps (a released hold; a new one needs BUDGET_EXHAUSTED):
    reported. Where the truncation began only after it stopped (retention deleted the month's start at 40m), it may be
    the guard's kept hold: quiet."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")[INACTIVE]
    share = budget_share(rp, "aws", "research")

    def case(lowest: str, fires: bool) -> dict[str, Any]:
        # the TSDB's oldest sample; Prometheus's namespace is older (created at 0): truncated once it is past 3600 s
        tsdb = [
            {"series": 'prometheus_tsdb_lowest_timestamp_seconds{namespace="monitoring",pod="prometheus-0"}', "values": lowest},
            {"series": 'kube_namespace_created{namespace="monitoring"}', "values": "0x200"},
        ]
        exp = [expected(rule, {"cluster_queue": "research", "team": "research"}, "0")] if fires else []
        return {"interval": "1m",
                "input_series": [*status("research", "1x30 0x170"), hourly_spend("aws", "research", share * 0.3, "x200"), *tsdb],
                "promql_expr_test": [{"expr": "count(alicerce:cost_history_start:seconds)", "eval_time": "150m",
                                      "exp_samples": [{"labels": "{}", "value": 1}]}],
                "alert_rule_test": [{"eval_time": "150m", "alertname": INACTIVE, "exp_alerts": exp}]}  # fmt: skip

    run_promtool(rp, "aws", [case("7200x200", True), case("0x40 7200x160", False)], tmp_path)
