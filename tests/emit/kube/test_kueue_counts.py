"""What Kueue's counters counted in a window (alicerce.emit.kube.kpi.kueue_increase) through the ways its processes
come and go: a long-running follower elected leader, a queue's first count in a long-running Kueue, a pod that
started and went away within the window, an in-place restart's histogram, a scrape outage after a restart (review
obsreview14, whose repros these are). Label shapes as Kueue 0.19.2 serves them through the chart's ServiceMonitor."""

from __future__ import annotations

from pathlib import Path

from alicerce.emit.kube.kpi import KUEUE_OWN_LABELS
from tests.emit.kube.test_kpi import rounded
from tests.emit.kube.test_monitoring import expected, kueue_target, needs_promtool, platform, rules_of, run_promtool
from tests.emit.kube.upstream import load

AT = 'cluster_queue="research",site="aws",team="research"'
Q = 'cluster_queue="research",priority_class="",replica_role="leader"'
ADMITTED = "team:kueue_admitted_workloads:increase1h"
C = 'cluster="aws"'  # a label a scrape config adds to every target
# The starved-queue cases feed 5-minute samples and assert at whole 5 minutes, so they run at that pace (~3.5 -> ~0.8
# CPU-s each). The alert has no `for`, and it and every Kueue count part it reads are in one group (alicerce.slo)
# reading the inputs at the instant (subqueries step on whole minutes whatever the pace): at an asserted time it is the
# same query over the same samples at either pace. Checked when the pace changed: each passes at 5 m with the groups it
# needs in their order and reversed, and each quiet one fails at 5 m (the alert fires) without its admissions. A case
# that asserts between two 5-minute steps (7h2m) stays at 1 m: promtool would judge it at the step before.
STARVED_PACE = "5m"


@needs_promtool
def test_failover_to_a_long_running_follower_counts_its_first_admission(tmp_path: Path) -> None:
    """2 replicas, both running since 0 (days before the window). Leader kueue-a is killed at 200m; follower kueue-b
    (its process started at 0) is elected at 202m and admits one workload at 203m: its leader-role counter is born
    at 1. One admission in the hour."""
    rp = platform()
    a, a_started = kueue_target("kueue-a", "0x199 stale")
    b, b_started = kueue_target("kueue-b", "0x300")
    q = 'cluster_queue="research",priority_class="",replica_role="leader"'
    tests = [{"interval": "1m", "input_series": [
        a_started, b_started,
        {"series": f"kueue_admitted_workloads_total{{{q},{a}}}", "values": "5x199 stale"},
        {"series": f"kueue_admitted_workloads_total{{{q},{b}}}", "values": "_x203 1x97"},
        {"series": f'kueue_pending_workloads{{{q},{a},status="active"}}', "values": "0x199 stale"},
        {"series": f'kueue_pending_workloads{{{q},{b},status="active"}}', "values": "_x202 0x98"}],
        "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", AT, 1, "230m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_starved_quiet_after_failover_admission_by_long_running_follower(tmp_path: Path) -> None:
    """A backlog held for 7 h; leader kueue-a dies at 3 h, follower kueue-b (running since 0) takes over and admits one
    workload at 3h05 (counter born at 1). An admission in the window: not starved."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, a_started = kueue_target("kueue-a", "0x35 stale")
    b, b_started = kueue_target("kueue-b", "0x90")
    inadm = 'cluster_queue="research",status="inadmissible",replica_role="leader"'
    q = 'cluster_queue="research",priority_class="",replica_role="leader"'
    tests = [{"interval": "5m", "input_series": [
        a_started, b_started,
        {"series": f"kueue_pending_workloads{{{inadm},{a}}}", "values": "1x35 stale"},
        {"series": f"kueue_pending_workloads{{{inadm},{b}}}", "values": "_x36 1x54"},
        {"series": f"kueue_admitted_workloads_total{{{q},{a}}}", "values": "1x35 stale"},
        {"series": f"kueue_admitted_workloads_total{{{q},{b}}}", "values": "_x37 1x53"}],
        "alert_rule_test": [{"eval_time": "7h", "alertname": "SLOResearchQueueStarved", "exp_alerts": []}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_starved_quiet_after_a_queues_first_admission_in_a_long_running_kueue(tmp_path: Path) -> None:
    """One replica, up since 0 (a day before). Team research's queue never admitted anything since then (a new team, or
    its quota was 0): a backlog for 7 h, then one admission at 6h (its counter born at 1). Not starved at 7 h."""
    rp = platform("prod")
    a, a_started = kueue_target("kueue-a", "0x90")
    inadm = f'cluster_queue="research",status="inadmissible",replica_role="leader",{a}'
    q = f'cluster_queue="research",priority_class="",replica_role="leader",{a}'
    tests = [{"interval": "5m", "input_series": [
        a_started,
        {"series": f"kueue_pending_workloads{{{inadm}}}", "values": "1x90"},
        {"series": f"kueue_admitted_workloads_total{{{q}}}", "values": "_x72 1x18"}],
        "alert_rule_test": [{"eval_time": "7h", "alertname": "SLOResearchQueueStarved", "exp_alerts": []}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_queue_wait_slo_fires_on_first_admission_of_a_long_running_kueue(tmp_path: Path) -> None:
    """One replica up since 0. The queue's first admission since then, at 8 h, waited > 5.69 h (bucket le=20480 born at
    0, +Inf and _count born at 1): 1 of 1 admissions late, over the 5% allowed. Expected SLOResearchQueue to fire;
    with increase() alone it reads 0 / 0 (obsreview12 F7's silence)."""
    rp = platform("prod")
    rules = rules_of(rp, "aws")
    assert "SLOResearchQueue" in rules
    late = expected(rules["SLOResearchQueue"], {}, "")
    a, a_started = kueue_target("kueue-a", "0x600")
    q = f'cluster_queue="research",priority_class="",replica_role="leader",{a}'
    status = f'cluster_queue="research",replica_role="leader",{a}'
    tests = [{"interval": "1m", "input_series": [
        a_started,
        {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="20480"}}', "values": "_x480 0x120"},
        {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="+Inf"}}', "values": "_x480 1x120"},
        {"series": f"kueue_admission_wait_time_seconds_count{{{q}}}", "values": "_x480 1x120"},
        {"series": f'kueue_cluster_queue_status{{{status},status="active"}}', "values": "1x600"},
        {"series": f'kueue_pending_workloads{{{status},status="active"}}', "values": "1x480 0x120"}],
        "alert_rule_test": [{"eval_time": "9h", "alertname": "SLOResearchQueue", "exp_alerts": [late]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_finished_per_week_counts_a_queues_first_finish_in_a_kueue_up_for_ten_days(tmp_path: Path) -> None:
    """Kueue up since 0 (10 days); the team's first finished workload since then at 200 h (counter born at 1):
    experiments completed this week = 1."""
    rp = platform()
    a, a_started = kueue_target("kueue-a", "0x40")
    q = f'cluster_queue="research",priority_class="",replica_role="leader",{a}'
    tests = [{"interval": "6h", "input_series": [
        a_started,
        {"series": f"kueue_finished_workloads_total{{{q}}}", "values": "_x33 1x7"},
        {"series": f'kueue_pending_workloads{{{q},status="active"}}', "values": "0x40"}],
        "promql_expr_test": [rounded("team:kueue_finished_workloads:increase7d", AT, 1, "216h")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="6h")


@needs_promtool
def test_week_counts_a_finish_of_a_pod_that_came_and_went_in_the_week(tmp_path: Path) -> None:
    """6-hourly samples. kueue-a up since 0 until 96 h; kueue-b starts at 96 h (a rolling update), finishes one workload
    (counter born at 1) and is replaced at 144 h by kueue-c (a node drain), which finishes none. Week ending 216 h: 1."""
    rp = platform()
    q = 'cluster_queue="research",priority_class="",replica_role="leader"'
    a, a_started = kueue_target("kueue-a", "0x15 stale")
    b, b_started = kueue_target("kueue-b", "_x16 345600x7 stale")
    c, c_started = kueue_target("kueue-c", "_x24 518400x16")
    series = [a_started, b_started, c_started,
              {"series": f'kueue_pending_workloads{{{q},{a},status="active"}}', "values": "0x15 stale"},
              {"series": f'kueue_pending_workloads{{{q},{b},status="active"}}', "values": "_x16 0x7 stale"},
              {"series": f'kueue_pending_workloads{{{q},{c},status="active"}}', "values": "_x24 0x16"},
              {"series": f"kueue_finished_workloads_total{{{q},{b}}}", "values": "_x17 1x6 stale"}]  # fmt: skip
    tests = [{"interval": "6h", "input_series": series,
              "promql_expr_test": [rounded("team:kueue_finished_workloads:increase7d", AT, 1, "216h")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="6h")


@needs_promtool
def test_starved_quiet_when_the_pod_that_admitted_is_gone(tmp_path: Path) -> None:
    """Backlog for 7 h. kueue-a (up since 0) replaced at 2 h by kueue-b, which admits one workload at 2h05 (born at 1);
    kueue-b is drained at 4 h, kueue-c takes over and admits none. An admission in the window: not starved at 7 h."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    inadm = 'cluster_queue="research",status="inadmissible",replica_role="leader"'
    q = 'cluster_queue="research",priority_class="",replica_role="leader"'
    a, a_started = kueue_target("kueue-a", "0x23 stale")
    b, b_started = kueue_target("kueue-b", "_x24 7200x23 stale")
    c, c_started = kueue_target("kueue-c", "_x48 14400x42")
    series = [a_started, b_started, c_started,
              {"series": f"kueue_pending_workloads{{{inadm},{a}}}", "values": "1x23 stale"},
              {"series": f"kueue_pending_workloads{{{inadm},{b}}}", "values": "_x24 1x23 stale"},
              {"series": f"kueue_pending_workloads{{{inadm},{c}}}", "values": "_x48 1x42"},
              {"series": f"kueue_admitted_workloads_total{{{q},{b}}}", "values": "_x25 1x22 stale"}]  # fmt: skip
    tests = [
        {
            "interval": "5m",
            "input_series": series,
            "alert_rule_test": [{"eval_time": "7h", "alertname": "SLOResearchQueueStarved", "exp_alerts": []}],
        }
    ]
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_queue_wait_slo_quiet_when_every_admission_in_the_window_was_fast(tmp_path: Path) -> None:
    """kueue-a up since 0; its research histogram holds 4 late admissions from before the window (bucket le=20480 0,
    count 4). At 120 m one fast admission (bucket 1, count 5). The container restarts in place at 300 m; the new
    process admits one fast workload at once (bucket 1, count 1). Two admissions in the 6 h window, both fast:
    SLOResearchQueue must stay quiet. bucket: 0->1, 1->1 (no reset seen) = 1; count: 4->5, 5->1 (reset) = 2: 50% late."""
    rp = platform("prod")
    assert "SLOResearchQueue" in rules_of(rp, "aws")
    a, started = kueue_target("kueue-a", "0x299 _x2 18120x200")
    q = f'cluster_queue="research",priority_class="",replica_role="leader",{a}'
    status = f'cluster_queue="research",replica_role="leader",{a}'
    series = [started,
              {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="20480"}}', "values": "0x119 1x179 _x2 1x200"},
              {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="+Inf"}}', "values": "4x119 5x179 _x2 1x200"},
              {"series": f"kueue_admission_wait_time_seconds_count{{{q}}}", "values": "4x119 5x179 _x2 1x200"},
              {"series": f'kueue_cluster_queue_status{{{status},status="active"}}', "values": "1x299 _x2 1x200"},
              {"series": f'kueue_pending_workloads{{{status},status="active"}}', "values": "0x299 _x2 0x200"}]  # fmt: skip
    quiet = [{"eval_time": t, "alertname": "SLOResearchQueue", "exp_alerts": []} for t in ("350m", "440m")]
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": series, "alert_rule_test": quiet}], tmp_path)


@needs_promtool
def test_starved_quiet_during_a_kueue_scrape_outage_after_an_in_place_restart(tmp_path: Path) -> None:
    """The commit's own restart-in-place case (backlog 7 h, restart at 3 h, one admission at once, counter 1 -> 1),
    plus Kueue's scrape failing from 6h30 to 6h45 (three 5m samples missing). Not starved at 6h40."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    target, started = kueue_target("kueue-a", "0x35 _x1 10800x41 _x3 10800x9")
    pending = f'cluster_queue="research",status="inadmissible",replica_role="leader",{target}'
    admitted = f'kueue_admitted_workloads_total{{cluster_queue="research",priority_class="",replica_role="leader",{target}}}'
    tests = [{"interval": "5m", "input_series": [
        started,
        {"series": f"kueue_pending_workloads{{{pending}}}", "values": "1x36 _x1 1x40 _x3 1x9"},
        {"series": admitted, "values": "1x36 _x1 1x40 _x3 1x9"}],
        "alert_rule_test": [{"eval_time": t, "alertname": "SLOResearchQueueStarved", "exp_alerts": []}
                            for t in ("6h25m", "6h40m", "7h")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_a_kueue_counter_born_at_one_counts_its_first_workload(tmp_path: Path) -> None:
    """Review obsreview12 F1: Kueue creates a queue's counter at its first Inc(), so its first sample is 1 and increase()
    took it as the baseline: one workload finished in the week read 0, three read 2. What a Kueue process that started
    in the window counts was all counted in it; a Prometheus that starts beside a Kueue running for longer than the
    window cannot date the count it finds and adds nothing."""
    rp = platform()
    at = 'cluster_queue="research",site="aws",team="research"'
    queue = 'cluster_queue="research",priority_class="",replica_role="leader"'
    new, started = kueue_target("kueue-b", "_x29 619200x10")  # 6-hourly: a new leader from 172 h ...
    old, long_ago = kueue_target("kueue-a", "_x29 0x11")  # ... or a Kueue up since 0 h that Prometheus first sees at 174 h
    born = {"series": f"kueue_finished_workloads_total{{{queue},{new}}}", "values": "_x30 1 2 3 3 3 3 3 3"}  # from 180 h
    once = {"series": f"kueue_finished_workloads_total{{{queue},{new}}}", "values": "_x30 1 1 1 1 1 1 1 1"}
    found = {"series": f"kueue_finished_workloads_total{{{queue},{old}}}", "values": "_x29 1x9"}  # Prometheus from 174 h
    tests = [
        {
            "interval": "6h",
            "input_series": [started, counter],
            "promql_expr_test": [rounded("team:kueue_finished_workloads:increase7d", at, value, "216h")],
        }
        for counter, value in ((born, 3), (once, 1))
    ]
    tests.append(
        {
            "interval": "6h",
            "input_series": [long_ago, found],
            "promql_expr_test": [rounded("team:kueue_finished_workloads:increase7d", at, 0, "216h")],
        }
    )
    run_promtool(rp, "aws", tests, tmp_path, every="6h")  # the samples' own pace: the windows are days


@needs_promtool
def test_a_kueue_container_restarted_in_place_counts_its_new_counts(tmp_path: Path) -> None:
    """Review obsreview13 F1: Kueue's container restarts in its pod (OOMKill, a lost leader lease): every label stays,
    so the counter born again at 1 after a count of 1 was no change to increase(). The process's start time dates it;
    a restart that has counted nothing yet counts nothing (its counter is not served until its first Inc())."""
    rp = platform()
    at = 'cluster_queue="research",site="aws",team="research"'
    target, started = kueue_target("kueue-a", "0x199 _x3 12120x100")  # restarted at 202 m
    admitted = f'kueue_admitted_workloads_total{{cluster_queue="research",priority_class="",replica_role="leader",{target}}}'
    again = {"series": admitted, "values": "1x199 _x3 1x100"}  # one admission long ago, one at 203 m
    quiet = {"series": admitted, "values": "1x199 stale"}  # none since the restart
    tests = [
        {
            "interval": "1m",
            "input_series": [started, counter],
            "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", at, value, "230m")],
        }
        for counter, value in ((again, 1), (quiet, 0))
    ]
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_a_kueue_series_under_new_target_labels_counts_no_lifetime(tmp_path: Path) -> None:
    """Review obsreview13 F4: the same Kueue process, its series relabelled at 100 m (a ServiceMonitor change, a renamed
    metrics Service): the finished counter (500 in its lifetime) reappears under new labels. Nothing finished; it read
    500 for an hour, and for a week in the 7-day record."""
    rp = platform()
    at = 'cluster_queue="research",site="aws",team="research"'
    queue = 'cluster_queue="research",priority_class="",replica_role="leader"'
    before, started_before = kueue_target("kueue-a", "0x99 stale")
    after, started_after = kueue_target("kueue-a", "_x100 0x100", job="kueue-metrics")
    tests = [{"interval": "1m", "input_series": [
        started_before, started_after,
        {"series": f"kueue_finished_workloads_total{{{queue},{before}}}", "values": "500x99 stale"},
        {"series": f"kueue_finished_workloads_total{{{queue},{after}}}", "values": "_x100 500x100"},
        {"series": f'kueue_pending_workloads{{{queue},{before},status="active"}}', "values": "1x99 stale"},
        {"series": f'kueue_pending_workloads{{{queue},{after},status="active"}}', "values": "_x100 1x100"}],
        "promql_expr_test": [rounded("team:kueue_finished_workloads:increase1h", at, 0, "130m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_queue_alerts_after_a_kueue_restart_in_place_or_a_relabel(tmp_path: Path) -> None:
    """Review obsreview13 F1: Kueue's container restarts in its pod at 3 h (same labels) and admits one workload at once,
    its counter born at 1 again after a count of 1: an admission in the window, not starved. F4: the same Kueue's series
    relabelled at 400 m (a ServiceMonitor change) with a lifetime of 100 admissions, 20 of them late, and none since:
    no admission in the window, so the queue-wait SLO holds."""
    rules = rules_of(platform("prod"), "aws")
    assert "SLOResearchQueueStarved" in rules and "SLOResearchQueue" in rules
    target, started = kueue_target("kueue-a", "0x35 _x1 10800x54")
    pending = f'cluster_queue="research",status="inadmissible",replica_role="leader",{target}'
    admitted = f'kueue_admitted_workloads_total{{cluster_queue="research",priority_class="",replica_role="leader",{target}}}'
    restarted = {
        "interval": "5m",
        "input_series": [
            started,
            {"series": f"kueue_pending_workloads{{{pending}}}", "values": "1x36 _x1 1x53"},
            {"series": admitted, "values": "1x36 _x1 1x53"},
        ],
        "alert_rule_test": [{"eval_time": "7h", "alertname": "SLOResearchQueueStarved", "exp_alerts": []}],
    }
    inputs: list[dict[str, str]] = []
    for job, values in (("kueue-old", "{}x399 stale"), ("kueue-metrics", "_x400 {}x200")):
        target, started = kueue_target("kueue-a", values.format(0), job=job)
        queue = f'cluster_queue="research",priority_class="",replica_role="leader",{target}'
        status = f'cluster_queue="research",replica_role="leader",{target}'
        inputs += [started,
                   {"series": f'kueue_admission_wait_time_seconds_bucket{{{queue},le="20480"}}', "values": values.format(80)},
                   {"series": f'kueue_admission_wait_time_seconds_bucket{{{queue},le="+Inf"}}', "values": values.format(100)},
                   {"series": f"kueue_admission_wait_time_seconds_count{{{queue}}}", "values": values.format(100)},
                   {"series": f'kueue_cluster_queue_status{{{status},status="active"}}', "values": values.format(1)},
                   {"series": f'kueue_pending_workloads{{{status},status="active"}}', "values": values.format(0)}]  # fmt: skip
    quiet = [{"eval_time": t, "alertname": "SLOResearchQueue", "exp_alerts": []} for t in ("440m", "500m", "560m")]
    relabelled = {"interval": "1m", "input_series": inputs, "alert_rule_test": quiet}
    # two runs, each at its inputs' pace: the restart's 5-minute samples over 7 h were 420 of the ~22 CPU-s a run
    # of both at 1 m took (without its restart's admission the case fails at either pace: the alert fires)
    for case, every in ((restarted, "5m"), (relabelled, "1m")):
        folder = tmp_path / f"every-{every}"
        folder.mkdir()
        run_promtool(platform("prod"), "aws", [case], folder, every=every)


@needs_promtool
def test_admitted_after_in_place_restart_then_pod_replaced_is_not_the_lifetime(tmp_path: Path) -> None:
    """kueue-a up since 0, research admitted 500 in its lifetime, none since 150 m. Its container restarts in place at
    202 m (OOMKill); the new process admits nothing for research (the series is not served again). At 230 m the pod
    is replaced (memory limit raised: a rolling update), kueue-b from 231 m admits nothing. Admitted in the hour to
    240 m: 0."""
    rp = platform()
    a, a_started = kueue_target("kueue-a", "0x199 _x2 12120x28 stale")
    b, b_started = kueue_target("kueue-b", "_x231 13860x60")
    tests = [{"interval": "1m", "input_series": [
        a_started, b_started,
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "500x199 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x199 _x2 0x28 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{b},status="active"}}', "values": "_x231 0x60"}],
        "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", AT, 0, "240m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_admitted_after_in_place_restart_during_a_scrape_outage_is_not_the_lifetime(tmp_path: Path) -> None:
    """Same restart in place at 202 m, pod kept; Kueue's scrapes fail from 225 m (an API-server brown-out: the same one
    that cost it its lease). Admitted in the hour to 235 m: 0."""
    rp = platform()
    a, a_started = kueue_target("kueue-a", "0x199 _x2 12120x22 stale")
    tests = [{"interval": "1m", "input_series": [
        a_started,
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "500x199 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x199 _x2 0x22 stale"}],
        "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", AT, 0, "235m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_finished_week_after_in_place_restart_then_drain_is_not_the_lifetime(tmp_path: Path) -> None:
    """6-hourly. kueue-a up since 0 (30 days before), 2000 finished in its lifetime, the last at 0 h. Restart in place
    at 96 h, no finish since; pod drained at 120 h, kueue-c from 126 h finishes nothing. Week to 216 h: 0 (read 2000
    for ~4 days)."""
    rp = platform()
    q = 'cluster_queue="research",priority_class="",replica_role="leader"'
    a, a_started = kueue_target("kueue-a", "-2592000x15 345600x4 stale")
    c, c_started = kueue_target("kueue-c", "_x21 453600x16")
    series = [a_started, c_started,
              {"series": f"kueue_finished_workloads_total{{{q},{a}}}", "values": "2000x15 stale"},
              {"series": f'kueue_pending_workloads{{{q},{a},status="active"}}', "values": "0x20 stale"},
              {"series": f'kueue_pending_workloads{{{q},{c},status="active"}}', "values": "_x21 0x16"}]  # fmt: skip
    tests = [{"interval": "6h", "input_series": series,
              "promql_expr_test": [rounded("team:kueue_finished_workloads:increase7d", AT, 0, "216h")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="6h")


@needs_promtool
def test_queue_wait_slo_quiet_after_in_place_restart_then_pod_replaced(tmp_path: Path) -> None:
    """kueue-a up since 0; its research histogram holds a lifetime of 100 admissions, 20 late (le=20480: 80), none in
    the last 6 h before the restart. Restart in place at 400 m; the new process admits nothing for research. Pod
    replaced at 420 m (kueue-b). No admission in the 6 h window: SLOResearchQueue must stay quiet; it reads the
    lifetime's 20% late share."""
    rp = platform("prod")
    assert "SLOResearchQueue" in rules_of(rp, "aws")
    a, a_started = kueue_target("kueue-a", "0x399 _x2 24120x18 stale")
    b, b_started = kueue_target("kueue-b", "_x421 25260x200")
    inputs = [a_started, b_started]
    for t, life in ((a, "{}x399 stale"), (b, None)):
        status = f'cluster_queue="research",replica_role="leader",{t}'
        if life:
            q = f"{Q},{t}"
            inputs += [
                {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="20480"}}', "values": life.format(80)},
                {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="+Inf"}}', "values": life.format(100)},
                {"series": f"kueue_admission_wait_time_seconds_count{{{q}}}", "values": life.format(100)},
                {"series": f'kueue_cluster_queue_status{{{status},status="active"}}', "values": "1x399 _x2 1x18 stale"},
                {"series": f'kueue_pending_workloads{{{status},status="active"}}', "values": "0x399 _x2 0x18 stale"},
            ]
        else:
            inputs += [
                {"series": f'kueue_cluster_queue_status{{{status},status="active"}}', "values": "_x421 1x200"},
                {"series": f'kueue_pending_workloads{{{status},status="active"}}', "values": "_x421 0x200"},
            ]
    quiet = [{"eval_time": t, "alertname": "SLOResearchQueue", "exp_alerts": []} for t in ("470m", "560m")]
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": quiet}], tmp_path)


@needs_promtool
def test_starved_quiet_when_a_scrape_failed_a_window_before(tmp_path: Path) -> None:
    """The commit's own case (one replica up since 0, backlog for 7 h, the queue's first admission at 6 h, counter born
    at 1), plus ONE failed Kueue scrape at 1h20m (stale markers for all its series). The starved window is 20480 s:
    at 7h02m its start (1h20m40s) reads the stale marker. An admission in the window: not starved at 7h, 7h02m, 7h10m."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, a_started = kueue_target("kueue-a", "0x15 stale 0x80")
    inadm = f'cluster_queue="research",status="inadmissible",replica_role="leader",{a}'
    q = f'cluster_queue="research",priority_class="",replica_role="leader",{a}'
    tests = [{"interval": "5m", "input_series": [
        a_started,
        {"series": f"kueue_pending_workloads{{{inadm}}}", "values": "1x15 stale 1x80"},
        {"series": f"kueue_admitted_workloads_total{{{q}}}", "values": "_x72 1x24"}],
        "alert_rule_test": [{"eval_time": t, "alertname": "SLOResearchQueueStarved", "exp_alerts": []}
                            for t in ("7h", "7h2m", "7h10m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_first_admission_counts_when_a_scrape_failed_an_hour_before(tmp_path: Path) -> None:
    """1m samples. kueue-a up since 0; its research queue's first admission at 150 m (born at 1). One failed scrape
    at 110 m. Admitted in the hour to 170 m (window start 110 m, on the stale marker): 1."""
    rp = platform()
    a, a_started = kueue_target("kueue-a", "0x109 stale 0x100")
    q = f'cluster_queue="research",priority_class="",replica_role="leader",{a}'
    tests = [{"interval": "1m", "input_series": [
        a_started,
        {"series": f'kueue_pending_workloads{{{q},status="active"}}', "values": "0x109 stale 0x100"},
        {"series": f"kueue_admitted_workloads_total{{{q}}}", "values": "_x150 1x60"}],
        "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", AT, 1, "170m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_first_admission_after_an_in_place_restart_counts_as_the_restart_leaves_the_window(tmp_path: Path) -> None:
    """kueue-a up since 0, research admitted 5 in its lifetime; its container restarts in place at 100 m (the 99 m
    scrape fails; stale markers for the counter). The new process admits one at 114 m (counter born at 1). Admitted
    in the hour to 165 m (window from 105 m): 1 (reads 0 from 160 m to 170 m). At 170 m it reads 1 again."""
    rp = platform()
    a, a_started = kueue_target("kueue-a", "0x98 _ 6000x100")
    series = [a_started,
              {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "5x98 stale _x14 1x86"},
              {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x98 _ 0x100"}]  # fmt: skip
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", AT, 1, t) for t in ("165m", "170m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_starved_quiet_when_the_admission_followed_an_in_place_restart(tmp_path: Path) -> None:
    """Backlog for 9 h. kueue-a up since 0; restart in place at 180 m (the new process's first scrape at 180 m writes
    stale markers for the old counter); the new process admits one workload at 200 m (counter born at 1), none after.
    At 8h45 (window from ~3h04) that admission is in the window: not starved. (At 9h20 it left the window: starved is
    right then.)"""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, a_started = kueue_target("kueue-a", "0x35 10800x81")
    inadm = f'cluster_queue="research",status="inadmissible",replica_role="leader",{a}'
    series = [a_started,
              {"series": f"kueue_pending_workloads{{{inadm}}}", "values": "1x116"},
              {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "1x35 stale _x3 1x77"}]  # fmt: skip
    tests = [{"interval": "5m", "input_series": series,
              "alert_rule_test": [{"eval_time": t, "alertname": "SLOResearchQueueStarved", "exp_alerts": []}
                                  for t in ("8h45m", "8h55m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_admitted_survives_a_target_label_added_by_the_scrape_config(tmp_path: Path) -> None:
    """kueue-a up since 0, admitting one workload every 10 minutes. At 100 m the scrape config gains a target label
    (a scrapeClass or ServiceMonitor relabeling adding cluster="aws" to every target; same pod, same process). Admitted
    in the hour to 130 m: 6 (one per 10 minutes; the series under new labels start at 100 m). Any value but an error."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x99 stale"},
        {"series": f'process_start_time_seconds{{{a},cluster="aws"}}', "values": "_x100 0x60"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "1+0.1x99 stale"},
        {"series": f'kueue_admitted_workloads_total{{{Q},{a},cluster="aws"}}', "values": "_x100 11+0.1x60"},
        {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x99 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{a},cluster="aws",status="active"}}', "values": "_x100 0x60"},
    ]
    expr = "count(team:kueue_admitted_workloads:increase1h)"
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [{"expr": expr, "eval_time": "130m", "exp_samples": [{"labels": "{}", "value": 1}]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_starved_can_still_fire_after_a_target_label_is_added(tmp_path: Path) -> None:
    """A backlog for 7 h and nothing admitted since 0; a target label added at 3 h. Starved at 7 h (window from
    ~1h19: both label sets' start times in it)."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, _ = kueue_target("kueue-a", "0")
    inadm = 'cluster_queue="research",status="inadmissible",replica_role="leader"'
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x35 stale"},
        {"series": f'process_start_time_seconds{{{a},cluster="aws"}}', "values": "_x36 0x60"},
        {"series": f"kueue_pending_workloads{{{inadm},{a}}}", "values": "1x35 stale"},
        {"series": f'kueue_pending_workloads{{{inadm},{a},cluster="aws"}}', "values": "_x36 1x60"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "3x35 stale"},
        {"series": f'kueue_admitted_workloads_total{{{Q},{a},cluster="aws"}}', "values": "_x36 3x60"},
    ]
    fired = [expected(rules_of(rp, "aws")["SLOResearchQueueStarved"], {}, "")]
    tests = [{"interval": "5m", "input_series": series,
              "alert_rule_test": [{"eval_time": "7h", "alertname": "SLOResearchQueueStarved", "exp_alerts": fired}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_first_admission_after_in_place_restart_counts_when_the_window_start_scrape_failed(tmp_path: Path) -> None:
    """1m samples. kueue-a up since 0, research admitted 5 in its lifetime; restart in place at 100 m (its first
    scrape at 100 m has no counter: stale marker). The scrape at 105 m fails (stale markers for the whole target).
    The new process admits one at 114 m (born at 1). Admitted in the hour to 165 m (window from 105 m): 1."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    series = [{"series": f"process_start_time_seconds{{{a}}}", "values": "0x99 6000x4 stale 6000x100"},
              {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "5x99 stale _x12 1x86"},
              {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x104 stale 0x100"}]  # fmt: skip
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [rounded(ADMITTED, AT, 1, t) for t in ("164m", "165m", "166m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_starved_quiet_when_the_admission_followed_in_place_restart_and_the_window_start_scrape_failed(tmp_path: Path) -> None:
    """1m samples, a backlog all along. kueue-a up since 0 (its lifetime count 1); restart in place at 100 m; the scrape
    at 105 m fails; the new process admits one at 110 m (born at 1). At 447 m the window (20480 s) starts at 105m40s,
    after the failed scrape: that admission is in it. Not starved (for: 0m, so one evaluation notifies)."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, _ = kueue_target("kueue-a", "0")
    inadm = f'cluster_queue="research",status="inadmissible",replica_role="leader",{a}'
    series = [{"series": f"process_start_time_seconds{{{a}}}", "values": "0x99 6000x4 stale 6000x400"},
              {"series": f"kueue_pending_workloads{{{inadm}}}", "values": "1x104 stale 1x400"},
              {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "1x99 stale _x8 1x400"}]  # fmt: skip
    tests = [{"interval": "1m", "input_series": series,
              "alert_rule_test": [{"eval_time": t, "alertname": "SLOResearchQueueStarved", "exp_alerts": []}
                                  for t in ("446m", "447m", "448m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_first_admission_counts_when_the_new_process_first_scrape_failed(tmp_path: Path) -> None:
    """The plain crash shape, failed scrapes written as Prometheus writes them (stale markers for the whole target):
    kueue-a up since 0, research admitted 5; the container crashes, the 99 m scrape fails; the new process starts at
    99m30s but its metrics listener is not up yet, so the 100 m scrape fails too; 101 m is its first good scrape. It
    admits one at 114 m (born at 1). Admitted in the hour to 160 m (window from 100 m): 1."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    series = [{"series": f"process_start_time_seconds{{{a}}}", "values": "0x98 stale stale 5970x100"},
              {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "5x98 stale _x14 1x86"},
              {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x98 stale stale 0x100"}]  # fmt: skip
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [rounded(ADMITTED, AT, 1, t) for t in ("159m", "160m", "161m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_admitted_counts_a_new_pods_first_admission_as_its_start_leaves_the_window(tmp_path: Path) -> None:
    """1m samples. kueue-a up since 0, deleted at 120 m (its last scrape 119 m); kueue-b's process starts at 118m30s
    (7110 s), its target first scraped at 121 m. b admits one at 125 m (born at 1). Admitted in the hour: 1 at 175 m
    (b fresh) and still 1 at 179 m and 180 m (window from 119 m / 120 m: b's start just left it, b's target
    first scraped after the window start)."""
    rp = platform()
    a, a_started = kueue_target("kueue-a", "0x119 stale")
    b, b_started = kueue_target("kueue-b", "_x120 7110x100")
    series = [a_started, b_started,
              {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "3x119 stale"},
              {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x119 stale"},
              {"series": f'kueue_pending_workloads{{{Q},{b},status="active"}}', "values": "_x120 0x100"},
              {"series": f"kueue_admitted_workloads_total{{{Q},{b}}}", "values": "_x124 1x96"}]  # fmt: skip
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", AT, 1, t)
                                   for t in ("175m", "179m", "180m", "182m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_starved_quiet_when_a_new_pods_start_leaves_the_window_before_its_first_scrape_does(tmp_path: Path) -> None:
    """5m samples, a backlog all along. kueue-a replaced: kueue-b's process starts at 1h58 (7080 s), its target first
    scraped at 2h05 (slow readiness); b admits one at 2h10 (born at 1). The starved window (20480 s) at 7h40: from
    1h58m40s, after b's start, before b's first scrape: b's admission is in it; not starved."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, a_started = kueue_target("kueue-a", "0x23 stale")
    b, b_started = kueue_target("kueue-b", "_x24 7080x80")
    inadm = 'cluster_queue="research",status="inadmissible",replica_role="leader"'
    series = [a_started, b_started,
              {"series": f"kueue_pending_workloads{{{inadm},{a}}}", "values": "1x23 stale"},
              {"series": f"kueue_pending_workloads{{{inadm},{b}}}", "values": "_x24 1x80"},
              {"series": f"kueue_admitted_workloads_total{{{Q},{b}}}", "values": "_x25 1x79"}]  # fmt: skip
    tests = [{"interval": "5m", "input_series": series,
              "alert_rule_test": [{"eval_time": "7h40m", "alertname": "SLOResearchQueueStarved", "exp_alerts": []}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_starved_quiet_near_a_window_after_an_empty_tsdb_when_a_follower_took_over(tmp_path: Path) -> None:
    """1m samples from 0 (Prometheus's first scrape, empty TSDB); kueue-a (leader) and kueue-b (follower) up since a day
    before. A backlog all along. kueue-a dies at 60 m; kueue-b, elected, admits one at 65 m (its leader counter born
    at 1). At 5h35 / 5h40 (window 20480 s from -6m / -1m: Prometheus had data at its start, the alert's `since` holds)
    that admission is in the window: not starved."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, a_started = kueue_target("kueue-a", "-86400x59 stale")
    b, b_started = kueue_target("kueue-b", "-86400x400")
    inadm = 'cluster_queue="research",status="inadmissible",replica_role="leader"'
    series = [a_started, b_started,
              {"series": f"kueue_pending_workloads{{{inadm},{a}}}", "values": "1x59 stale"},
              {"series": f"kueue_pending_workloads{{{inadm},{b}}}", "values": "_x60 1x340"},
              {"series": f"kueue_admitted_workloads_total{{{Q},{b}}}", "values": "_x64 1x336"}]  # fmt: skip
    tests = [{"interval": "1m", "input_series": series,
              "alert_rule_test": [{"eval_time": t, "alertname": "SLOResearchQueueStarved", "exp_alerts": []}
                                  for t in ("5h35m", "5h40m", "5h45m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_starved_quiet_after_failover_to_a_follower_relabelled_earlier_in_the_window(tmp_path: Path) -> None:
    """5m samples, a backlog all along. kueue-a (leader) and kueue-b (follower) up since 0. At 1 h the scrape config
    adds cluster="aws" to every target (same pods, same processes). kueue-a dies at 3 h; kueue-b, elected, admits one
    at 3h10 (its leader counter born at 1). At 6 h and 6h30 (window from 0h19 / 0h49) that admission is in it: not
    starved."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, _ = kueue_target("kueue-a", "0")
    b, _ = kueue_target("kueue-b", "0")
    inadm = 'cluster_queue="research",status="inadmissible",replica_role="leader"'
    c = 'cluster="aws"'
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x11 stale"},
        {"series": f"process_start_time_seconds{{{a},{c}}}", "values": "_x11 0x23 stale"},
        {"series": f"process_start_time_seconds{{{b}}}", "values": "0x11 stale"},
        {"series": f"process_start_time_seconds{{{b},{c}}}", "values": "_x11 0x80"},
        {"series": f"kueue_pending_workloads{{{inadm},{a}}}", "values": "1x11 stale"},
        {"series": f"kueue_pending_workloads{{{inadm},{a},{c}}}", "values": "_x11 1x23 stale"},
        {"series": f"kueue_pending_workloads{{{inadm},{b},{c}}}", "values": "_x36 1x55"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{b},{c}}}", "values": "_x37 1x54"},
    ]
    tests = [{"interval": "5m", "input_series": series,
              "alert_rule_test": [{"eval_time": t, "alertname": "SLOResearchQueueStarved", "exp_alerts": []}
                                  for t in ("6h", "6h30m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_admitted_counts_failover_to_a_follower_relabelled_earlier_in_the_hour(tmp_path: Path) -> None:
    """1m samples. kueue-a (leader), kueue-b (follower) up since 0; cluster="aws" added to every target at 100 m; a dies
    at 120 m, b elected admits one at 125 m (born at 1). Admitted in the hour to 150 m: 1."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    b, _ = kueue_target("kueue-b", "0")
    c = 'cluster="aws"'
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x99 stale"},
        {"series": f"process_start_time_seconds{{{a},{c}}}", "values": "_x99 0x19 stale"},
        {"series": f"process_start_time_seconds{{{b}}}", "values": "0x99 stale"},
        {"series": f"process_start_time_seconds{{{b},{c}}}", "values": "_x99 0x100"},
        {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x99 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{a},{c},status="active"}}', "values": "_x99 0x19 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{b},{c},status="active"}}', "values": "_x120 0x80"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{b},{c}}}", "values": "_x124 1x76"},
    ]
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [rounded("team:kueue_admitted_workloads:increase1h", AT, 1, "150m")]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_admitted_after_an_upgrade_that_relabels_and_rolls(tmp_path: Path) -> None:
    """1m samples. kueue-a (leader) up since 0, research admitted 30 in its lifetime. At 100 m a chart upgrade adds
    cluster="aws" to every target and rolls the Deployment: kueue-b starts at 100 m (follower); kueue-a, under the
    new labels, admits one more at 101 m (31) and exits at 103 m; kueue-b, elected, admits one at 105 m (born at 1).
    Admitted in the hour to 150 m: 2 (2.33 with
    increase()'s extrapolation of kueue-a's 3-sample series: rounded)."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    b, _ = kueue_target("kueue-b", "0")
    c = 'cluster="aws"'
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x100 stale"},
        {"series": f"process_start_time_seconds{{{a},{c}}}", "values": "_x100 0x3 stale"},
        {"series": f"process_start_time_seconds{{{b},{c}}}", "values": "_x100 6000x100"},
        {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x100 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{a},{c},status="active"}}', "values": "_x100 0x3 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{b},{c},status="active"}}', "values": "_x104 0x96"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "30x100 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a},{c}}}", "values": "_x100 30 31x2 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{b},{c}}}", "values": "_x105 1x95"},
    ]
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [{"expr": "round(team:kueue_admitted_workloads:increase1h)", "eval_time": "150m",
                                   "exp_samples": [{"labels": f"{{{AT}}}", "value": 2}]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_first_admission_then_label_added_hourly(tmp_path: Path) -> None:
    """1m. kueue-a up since 0; research's first admission at 100 m (born 1); at 120 m the scrape adds cluster="aws".
    Admitted in the hour to 150 m: 1."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x119 stale"},
        {"series": f"process_start_time_seconds{{{a},{C}}}", "values": "_x120 0x60"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "_x100 1x19 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a},{C}}}", "values": "_x120 1x60"},
        {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x119 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{a},{C},status="active"}}', "values": "_x120 0x60"},
    ]
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [{"expr": "round(team:kueue_admitted_workloads:increase1h)", "eval_time": "150m",
                                   "exp_samples": [{"labels": f"{{{AT}}}", "value": 1}]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_failover_admission_then_label_added_hourly(tmp_path: Path) -> None:
    """1m. kueue-a leader (up since 0) dies at 100 m; follower kueue-b (up since 0) elected, admits 1 at 103 m (born 1);
    at 120 m the scrape adds cluster="aws". Admitted in the hour to 150 m: 1."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    b, _ = kueue_target("kueue-b", "0")
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x99 stale"},
        {"series": f"process_start_time_seconds{{{b}}}", "values": "0x119 stale"},
        {"series": f"process_start_time_seconds{{{b},{C}}}", "values": "_x120 0x60"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "5x99 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{b}}}", "values": "_x103 1x16 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{b},{C}}}", "values": "_x120 1x60"},
        {"series": f'kueue_pending_workloads{{{Q},{b},status="active"}}', "values": "_x102 0x17 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{b},{C},status="active"}}', "values": "_x120 0x60"},
    ]
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [{"expr": "round(team:kueue_admitted_workloads:increase1h)", "eval_time": "150m",
                                   "exp_samples": [{"labels": f"{{{AT}}}", "value": 1}]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_starved_quiet_when_first_admission_preceded_a_label_added(tmp_path: Path) -> None:
    """5m. Backlog 7 h; kueue-a up since 0; research's first admission at 3 h (born 1); the scrape adds cluster="aws"
    at 5 h. An admission in the window (from ~1h19): not starved at 7 h."""
    rp = platform("prod")
    assert "SLOResearchQueueStarved" in rules_of(rp, "aws")
    a, _ = kueue_target("kueue-a", "0")
    inadm = 'cluster_queue="research",status="inadmissible",replica_role="leader"'
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x59 stale"},
        {"series": f"process_start_time_seconds{{{a},{C}}}", "values": "_x60 0x30"},
        {"series": f"kueue_pending_workloads{{{inadm},{a}}}", "values": "1x59 stale"},
        {"series": f"kueue_pending_workloads{{{inadm},{a},{C}}}", "values": "_x60 1x30"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "_x36 1x23 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a},{C}}}", "values": "_x60 1x30"},
    ]
    tests = [{"interval": "5m", "input_series": series,
              "alert_rule_test": [{"eval_time": "7h", "alertname": "SLOResearchQueueStarved", "exp_alerts": []}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every=STARVED_PACE)


@needs_promtool
def test_queue_wait_fires_when_late_first_admission_preceded_a_label_added(tmp_path: Path) -> None:
    """1m. kueue-a up since 0; research's first admission at 8 h waited > 5.69 h (le=20480 born 0, count 1); the scrape
    adds cluster="aws" at 8h30. 1 of 1 late in the 6 h window at 9 h: SLOResearchQueue fires."""
    rp = platform("prod")
    rules = rules_of(rp, "aws")
    late = expected(rules["SLOResearchQueue"], {}, "")
    a, _ = kueue_target("kueue-a", "0")
    inputs = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x509 stale"},
        {"series": f"process_start_time_seconds{{{a},{C}}}", "values": "_x510 0x90"},
    ]
    for lab, vals in ((a, "_x480 {}x29 stale"), (f"{a},{C}", "_x510 {}x90")):
        q = f"{Q},{lab}"
        st = f'cluster_queue="research",replica_role="leader",{lab}'
        life = "1x509 stale" if lab == a else "_x510 1x90"
        pend = "1x479 0x30 stale" if lab == a else "_x510 0x90"
        inputs += [{"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="20480"}}', "values": vals.format(0)},
                   {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="+Inf"}}', "values": vals.format(1)},
                   {"series": f"kueue_admission_wait_time_seconds_count{{{q}}}", "values": vals.format(1)},
                   {"series": f'kueue_cluster_queue_status{{{st},status="active"}}', "values": life},
                   {"series": f'kueue_pending_workloads{{{st},status="active"}}', "values": pend}]  # fmt: skip
    tests = [{"interval": "1m", "input_series": inputs,
              "alert_rule_test": [{"eval_time": "9h", "alertname": "SLOResearchQueue", "exp_alerts": [late]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_week_first_finish_then_label_added(tmp_path: Path) -> None:
    """6h. kueue-a up since 0 (10 days); research's first finish at 102 h (born 1); cluster="aws" added at 150 h.
    Finished in the week to 216 h: 1."""
    rp = platform()
    a, _ = kueue_target("kueue-a", "0")
    q = Q  # Kueue 0.19.2's counters carry no cohort label (vendored metrics.json)
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "0x24 stale"},
        {"series": f"process_start_time_seconds{{{a},{C}}}", "values": "_x25 0x15"},
        {"series": f"kueue_finished_workloads_total{{{q},{a}}}", "values": "_x17 1x7 stale"},
        {"series": f"kueue_finished_workloads_total{{{q},{a},{C}}}", "values": "_x25 1x15"},
        {"series": f'kueue_pending_workloads{{{q},{a},status="active"}}', "values": "0x24 stale"},
        {"series": f'kueue_pending_workloads{{{q},{a},{C},status="active"}}', "values": "_x25 0x15"},
    ]
    tests = [{"interval": "6h", "input_series": series,
              "promql_expr_test": [{"expr": "round(team:kueue_finished_workloads:increase7d)", "eval_time": "216h",
                                   "exp_samples": [{"labels": f"{{{AT}}}", "value": 1}]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="6h")


def test_the_labels_kueue_increase_sets_aside_are_all_kueues_own() -> None:
    """KUEUE_OWN_LABELS is every label Kueue 0.19.2 puts on the counters kueue_increase reads (a missing one would make
    the birth join find no start-time series and drop first counts silently)."""
    facts = load("kueue", "0.19.2", "metrics.json")
    read = ("kueue_admitted_workloads_total", "kueue_finished_workloads_total", "kueue_evicted_workloads_total",
            "kueue_admission_wait_time_seconds", "kueue_admitted_until_ready_wait_time_seconds")  # fmt: skip
    assert {label for name in read for label in facts[name]["labels"]} <= set(KUEUE_OWN_LABELS)


@needs_promtool
def test_first_admission_during_a_relabel_rolled_back_counts_once(tmp_path: Path) -> None:
    """1m. kueue-a up for 30 days. At 100 m its job label becomes kueue-metrics (an upgrade), at 120 m it is back (a
    rollback, no pod roll); research's first admission at 110 m shows under both label sets: admitted in the hour to
    150 m, 1 (it read 2: review obsreview18 F3). A second admission at 130 m, under the restored labels, counts."""
    rp = platform()
    a, a_start = kueue_target("kueue-a", "-2592000x99 stale _x19 -2592000x60")
    b, b_start = kueue_target("kueue-a", "_x100 -2592000x19 stale", job="kueue-metrics")

    def admitted(restored: str, value: int) -> dict[str, object]:
        series = [a_start, b_start,
                  {"series": f"kueue_admitted_workloads_total{{{Q},{b}}}", "values": "_x110 1x9 stale"},
                  {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": restored},
                  {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x99 stale _x19 0x60"},
                  {"series": f'kueue_pending_workloads{{{Q},{b},status="active"}}', "values": "_x100 0x19 stale"}]  # fmt: skip
        # round(): increase() extrapolates the second admission's hour to 2.02
        read = {"expr": f"round({ADMITTED})", "eval_time": "150m", "exp_samples": [{"labels": f"{{{AT}}}", "value": value}]}
        return {"interval": "1m", "input_series": series, "promql_expr_test": [read]}

    run_promtool(rp, "aws", [admitted("_x120 1x60", 1), admitted("_x120 1x9 2x50", 2)], tmp_path)
