"""A Kueue series under relabelled target labels, rolled back within the window (alicerce.emit.kube.kpi
kueue_increase): each first count once, whichever target label changed, with restarts and failovers around it
(reviews obsreview18 F3, obsreview19 F1, F2, whose repros these are). Not covered: a relabel that drops the pod label
(the copy without it is keyed by its instance, another pod's identity), documented in kueue_increase."""

from __future__ import annotations

from pathlib import Path

from tests.emit.kube.test_monitoring import expected, kueue_target, needs_promtool, platform, rules_of, run_promtool

AT = 'cluster_queue="research",site="aws",team="research"'
Q = 'cluster_queue="research",priority_class="",replica_role="leader"'
JOB = "kueue-controller-manager-metrics-service"
ORIG = f'job="{JOB}",instance="kueue-a:8443",namespace="kueue-system",pod="kueue-a"'


def rollback(temp: str, orig: str = ORIG, restored: str = "_x120 1x60") -> list[dict[str, str]]:
    """kueue-a up 30 days under ``orig``; 100-120 m its target labels read ``temp`` (a ServiceMonitor change, then a
    helm rollback, no pod roll); research's first admission at 110 m."""
    return [
        {"series": f"process_start_time_seconds{{{orig}}}", "values": "-2592000x99 stale _x19 -2592000x60"},
        {"series": f"process_start_time_seconds{{{temp}}}", "values": "_x100 -2592000x19 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{temp}}}", "values": "_x110 1x9 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{orig}}}", "values": restored},
        {"series": f'kueue_pending_workloads{{{Q},{orig},status="active"}}', "values": "0x99 stale _x19 0x60"},
        {"series": f'kueue_pending_workloads{{{Q},{temp},status="active"}}', "values": "_x100 0x19 stale"},
    ]


def hourly(series: list[dict[str, str]], value: int) -> list[dict[str, object]]:
    read = {"expr": "round(team:kueue_admitted_workloads:increase1h)", "eval_time": "150m",
            "exp_samples": [{"labels": f"{{{AT}}}", "value": value}]}  # fmt: skip
    return [{"interval": "1m", "input_series": series, "promql_expr_test": [read]}]


@needs_promtool
def test_instance_relabel_rolled_back_counts_once(tmp_path: Path) -> None:
    """A relabeling that sets instance to the pod name (a common ServiceMonitor relabeling), rolled back. Exp 1."""
    temp = f'job="{JOB}",instance="kueue-a",namespace="kueue-system",pod="kueue-a"'
    run_promtool(platform(), "aws", hourly(rollback(temp), 1), tmp_path)


@needs_promtool
def test_no_pod_label_job_relabel_rolled_back_counts_once(tmp_path: Path) -> None:
    """Targets without a pod label (keyed by instance alone): job renamed and back. Exp 1 (control)."""
    orig = f'job="{JOB}",instance="kueue-a:8443",namespace="kueue-system"'
    temp = 'job="kueue-metrics",instance="kueue-a:8443",namespace="kueue-system"'
    run_promtool(platform(), "aws", hourly(rollback(temp, orig), 1), tmp_path)


@needs_promtool
def test_failover_back_to_a_pod_that_led_before(tmp_path: Path) -> None:
    """kueue-a leads (up 30 days); loses the lease at 100 m and restarts in place (process start 6000 s); kueue-b
    (up 30 days) leads, admits 1 at 103 m (born); kueue-b dies at 130 m, kueue-a leads again and admits 1 at 133 m
    (its leader counter born again at 1 in the new process). Admitted in the hour to 150 m: 2."""
    a, _ = kueue_target("kueue-a", "0")
    b, _ = kueue_target("kueue-b", "0")
    series = [
        {"series": f"process_start_time_seconds{{{a}}}", "values": "-2592000x99 6000x80"},
        {"series": f"process_start_time_seconds{{{b}}}", "values": "-2592000x129 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{a}}}", "values": "5x99 stale _x33 1x47"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{b}}}", "values": "_x103 1x26 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{a},status="active"}}', "values": "0x99 stale _x31 0x49"},
        {"series": f'kueue_pending_workloads{{{Q},{b},status="active"}}', "values": "_x101 0x28 stale"},
    ]
    run_promtool(platform(), "aws", hourly(series, 2), tmp_path)


@needs_promtool
def test_restart_under_temp_labels_then_rollback(tmp_path: Path) -> None:
    """Job renamed at 100 m, kueue-a restarts in place at 105 m (start 6300 s) under
    the temp labels, admits research's first at 110 m; rollback at 120 m. Admitted in the hour to 150 m: 1."""
    temp = 'job="kueue-metrics",instance="kueue-a:8443",namespace="kueue-system",pod="kueue-a"'
    series = [
        {"series": f"process_start_time_seconds{{{ORIG}}}", "values": "-2592000x99 stale _x19 6300x60"},
        {"series": f"process_start_time_seconds{{{temp}}}", "values": "_x100 -2592000x4 6300x14 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{temp}}}", "values": "_x110 1x9 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{ORIG}}}", "values": "_x120 1x60"},
        {"series": f'kueue_pending_workloads{{{Q},{ORIG},status="active"}}', "values": "0x99 stale _x19 0x60"},
        {"series": f'kueue_pending_workloads{{{Q},{temp},status="active"}}', "values": "_x100 0x19 stale"},
    ]
    run_promtool(platform(), "aws", hourly(series, 1), tmp_path)


@needs_promtool
def test_rollback_then_retry_then_crash_counts_the_first_admission(tmp_path: Path) -> None:
    """job renamed at 100 m (L2), research's first admission at 105 m, rolled back at 115 m (L1), upgrade retried at
    125 m (L2 again, no pod roll), kueue-a crashes and restarts in place at 130 m (process start 7800 s) and admits
    nothing more. Admitted in the hour to 150 m: 1. The earliest copy is L2's, whose target is fresh (its born is never
    read); the restored L1 copy, whose born carried the count before f450bc4, is no longer the earliest."""
    temp = 'job="kueue-metrics",instance="kueue-a:8443",namespace="kueue-system",pod="kueue-a"'
    series = [
        {"series": f"process_start_time_seconds{{{ORIG}}}", "values": "-2592000x99 stale _x14 -2592000x9 stale"},
        {"series": f"process_start_time_seconds{{{temp}}}", "values": "_x100 -2592000x14 stale _x9 -2592000x4 7800x50"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{temp}}}", "values": "_x105 1x9 stale _x9 1x4 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{ORIG}}}", "values": "_x115 1x9 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{ORIG},status="active"}}', "values": "0x99 stale _x14 0x9 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{temp},status="active"}}', "values": "_x100 0x14 stale _x9 0x55"},
    ]
    run_promtool(platform(), "aws", hourly(series, 1), tmp_path)


def queue_wait_rollback(temp: str) -> list[dict[str, str]]:
    """1m. kueue-a up 30 days under ORIG; 480-500 m its target reads ``temp``; research's first admission at 490 m
    waited > 5.69 h (le=20480 0, +Inf and count 1), 25 fast admissions at 510 m under the restored labels."""
    series = [
        {"series": f"process_start_time_seconds{{{ORIG}}}", "values": "-2592000x479 stale _x19 -2592000x40"},
        {"series": f"process_start_time_seconds{{{temp}}}", "values": "_x480 -2592000x19 stale"},
    ]
    for lab, le, inf, life, pend in (
        (temp, "_x490 0x9 stale", "_x490 1x9 stale", "_x480 1x19 stale", "_x480 1x9 0x9 stale"),
        (ORIG, "_x500 0x9 25x30", "_x500 1x9 26x30", "1x479 stale _x19 1x40", "1x479 stale _x19 0x40"),
    ):
        q = f"{Q},{lab}"
        st = f'cluster_queue="research",replica_role="leader",{lab}'
        series += [{"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="20480"}}', "values": le},
                   {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="+Inf"}}', "values": inf},
                   {"series": f"kueue_admission_wait_time_seconds_count{{{q}}}", "values": inf},
                   {"series": f'kueue_cluster_queue_status{{{st},status="active"}}', "values": life},
                   {"series": f'kueue_pending_workloads{{{st},status="active"}}', "values": pend}]  # fmt: skip
    return series


@needs_promtool
def test_queue_wait_quiet_when_instance_relabel_rolled_back(tmp_path: Path) -> None:
    """1 late of 26 (3.8%): SLOResearchQueue quiet at 9 h. The late first admission counted twice reads 2 of 27 (7.4%)."""
    temp = f'job="{JOB}",instance="kueue-a",namespace="kueue-system",pod="kueue-a"'
    tests = [{"interval": "1m", "input_series": queue_wait_rollback(temp),
              "alert_rule_test": [{"eval_time": "9h", "alertname": "SLOResearchQueue", "exp_alerts": []}]}]  # fmt: skip
    run_promtool(platform("prod"), "aws", tests, tmp_path)


@needs_promtool
def test_restart_then_relabel_kept_counts_once(tmp_path: Path) -> None:
    """Review obsreview19 F5: kueue-a restarts in place at 100 m (start 6000 s), research's
    first admission at 110 m, the job label is renamed at 120 m for good (no pod roll). Admitted in the hour to 150 m: 1
    (both label sets' targets are fresh; each reads the new process's count)."""
    temp = 'job="kueue-metrics",instance="kueue-a:8443",namespace="kueue-system",pod="kueue-a"'
    series = [
        {"series": f"process_start_time_seconds{{{ORIG}}}", "values": "-2592000x99 6000x19 stale"},
        {"series": f"process_start_time_seconds{{{temp}}}", "values": "_x120 6000x60"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{ORIG}}}", "values": "3x99 stale _x9 1x9 stale"},
        {"series": f"kueue_admitted_workloads_total{{{Q},{temp}}}", "values": "_x120 1x60"},
        {"series": f'kueue_pending_workloads{{{Q},{ORIG},status="active"}}', "values": "0x119 stale"},
        {"series": f'kueue_pending_workloads{{{Q},{temp},status="active"}}', "values": "_x120 0x60"},
    ]
    run_promtool(platform(), "aws", hourly(series, 1), tmp_path)


@needs_promtool
def test_queue_wait_fires_on_a_late_admission_after_le_normalised(tmp_path: Path) -> None:
    """Review obsreview19 F4: 1m. kueue-a up 30 days, 100 fast admissions before the window. At 8 h
    Prometheus is upgraded to 3.x, which writes le="20480.0" for the bucket Kueue serves as le="20480" (a new series;
    _count keeps its labels). At 8h20 one admission waited > 5.69 h: 1 of 1 late in the 6 h window: fires at 9 h."""
    rules = rules_of(platform("prod"), "aws")
    late = expected(rules["SLOResearchQueue"], {}, "")
    q = f"{Q},{ORIG}"
    st = f'cluster_queue="research",replica_role="leader",{ORIG}'
    series = [
        {"series": f"process_start_time_seconds{{{ORIG}}}", "values": "-2592000x600"},
        {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="20480"}}', "values": "100x479 stale"},
        {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="20480.0"}}', "values": "_x480 100x120"},
        {"series": f'kueue_admission_wait_time_seconds_bucket{{{q},le="+Inf"}}', "values": "100x499 101x100"},
        {"series": f"kueue_admission_wait_time_seconds_count{{{q}}}", "values": "100x499 101x100"},
        {"series": f'kueue_cluster_queue_status{{{st},status="active"}}', "values": "1x600"},
        {"series": f'kueue_pending_workloads{{{st},status="active"}}', "values": "1x499 0x100"},
    ]
    tests = [{"interval": "1m", "input_series": series,
              "alert_rule_test": [{"eval_time": "9h", "alertname": "SLOResearchQueue", "exp_alerts": [late]}]}]  # fmt: skip
    run_promtool(platform("prod"), "aws", tests, tmp_path)
