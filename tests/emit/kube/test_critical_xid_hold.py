"""GPUCriticalXid pages a node in service, and its hold after the exporter's window belongs to one Node object
(review obsreview29 N-1, N-2). promtool over dcgm-exporter's XID count (alicerce's counters list) and kube-state-metrics
2.20.0's kube_node_spec_unschedulable and kube_node_created, with the labels the real exporters send once scraped."""

from __future__ import annotations

from pathlib import Path

from alicerce.catalog.alerts import XID_COUNT_METRIC, XID_COUNT_WINDOW_MINUTES
from tests.emit.kube.scrape import dcgm_series, series
from tests.emit.kube.test_monitoring import dcgm_scraped, expected, needs_promtool, platform, rules_of, run_promtool
from tests.emit.kube.upstream import load

WINDOW = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}


def _xid(host: str, code: str, values: str) -> tuple[dict[str, str], dict[str, str]]:
    """GPU 0 of ``host`` reporting XID ``code`` as ``values`` (5-minute samples), and its alert key."""
    gpu = dcgm_scraped(platform("prod"), "dc1", dcgm_series(host, 0))
    key = {k: gpu[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": code}
    return {"series": series(XID_COUNT_METRIC, gpu | WINDOW | {"xid": code}), "values": values}, key


@needs_promtool
def test_a_critical_xid_on_a_node_cordoned_for_repair_is_a_ticket(tmp_path: Path) -> None:
    """N-1: gpu-001 is cordoned for its repair and the validation reproduces XID 79 at 25 minutes: the technician's
    finding is a ticket (GPUXidError), not a page to the on-call. gpu-002, in service, pages on its XID 79."""
    assert {"kube_node_spec_unschedulable", "kube_node_created"} <= set(load("kube-state-metrics", "2.20.0", "metrics.json"))
    rp = platform("prod")
    rules = rules_of(rp, "dc1")
    repaired, repaired_key = _xid("gpu-001", "79", "_x5 1 stale")
    serving, serving_key = _xid("gpu-002", "79", "_x5 1 stale")
    inputs = [
        repaired,
        serving,
        {"series": 'kube_node_spec_unschedulable{node="gpu-001"}', "values": "1x12"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-002"}', "values": "0x12"},
        {"series": 'kube_node_created{node="gpu-001"}', "values": "-86400x12"},
        {"series": 'kube_node_created{node="gpu-002"}', "values": "-86400x12"},
    ]
    tests = [{"interval": "5m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "20m", "alertname": "GPUCriticalXid", "exp_alerts": []},
        {"eval_time": "25m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rules["GPUCriticalXid"], serving_key, "1")]},
        {"eval_time": "25m", "alertname": "GPUXidError", "exp_alerts": [expected(rules["GPUXidError"], repaired_key, "1")]},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path, every="5m")


@needs_promtool
def test_a_node_that_rejoins_under_its_name_does_not_inherit_the_hold(tmp_path: Path) -> None:
    """N-2: XID 79 on gpu-001 at 5 minutes; the host died, its Node object was deleted at 30 minutes without a cordon
    (an RMA) and the repaired host re-joined under its name at 3h05, schedulable: a new object, created after the XID.
    Held (value 0) while the old object exists, quiet after: the old GPU's page is not the new node's."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")["GPUCriticalXid"]
    xid, key = _xid("gpu-001", "79", "_ 1 stale")
    inputs = [
        xid,
        {"series": 'kube_node_spec_unschedulable{node="gpu-001"}', "values": "0x6 _x29 0x24"},
        {"series": 'kube_node_created{node="gpu-001"}', "values": "-86400x6 _x29 11100x24"},
    ]
    tests = [{"interval": "5m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "20m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key, "0")]},
        {"eval_time": "2h", "alertname": "GPUCriticalXid", "exp_alerts": []},
        {"eval_time": "4h", "alertname": "GPUCriticalXid", "exp_alerts": []},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path, every="5m")
