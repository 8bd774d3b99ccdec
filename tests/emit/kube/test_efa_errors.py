"""FabricErrorsRising on EFA (review obsreview29 N-4, obsreview30 N-4): a retransmit timeout or an impaired connection
now and then is SRD at work on a healthy busy fabric; what AWS's node monitoring agent calls a degraded interface (more
than one event a second, sustained) raises the ticket."""

from __future__ import annotations

from pathlib import Path

from alicerce.catalog.alerts import FABRIC_ERRORS_RISING
from alicerce.emit.kube.fabric_alerts import EFA_EVENTS_PER_SECOND, EFA_LINK_ERROR_COUNTERS
from tests.emit.kube.test_monitoring import expected, needs_promtool, platform, rules_of, run_promtool

NODE = "ip-10-20-1-1.ec2.internal"
P5 = 'label_alicerce_dev_pool="train-p5",label_alicerce_dev_accelerator="H100-SXM5-80GB"'
TIMEOUTS = "alicerce_efa_retransmit_timeouts_total"
IMPAIRED = "alicerce_efa_impaired_remote_connections_total"


def _counter(name: str, device: str, values: str) -> dict[str, str]:
    """A counter of alicerce's EFA textfile as the node exporter serves it."""
    labels = f'job="node-exporter",instance="{NODE}:9100",node="{NODE}",device="{device}",port="1"'
    return {"series": f"{name}{{{labels}}}", "values": values}


def test_the_efa_bound_is_the_node_monitoring_agent_s() -> None:
    """One event a second (eks-node-monitoring-agent v1.7.0 efa.go: rate.Every(time.Second), burst 100), on both
    counters the EFA branch reads, not on drops or RDMA errors (applications and congestion make those too)."""
    assert EFA_EVENTS_PER_SECOND == 1
    assert set(EFA_LINK_ERROR_COUNTERS) == {TIMEOUTS, IMPAIRED}
    assert f"rate({TIMEOUTS}[10m])) > 1" in rules_of(platform("prod"), "aws")[FABRIC_ERRORS_RISING]["expr"]


@needs_promtool
def test_an_occasional_efa_timeout_is_quiet_a_sustained_rate_tickets(tmp_path: Path) -> None:
    """train-p5's node, an hour. Quiet: rdmap0s31 times out 30 retransmissions a minute (0.5/s) with a burst of 100 at
    minute 20 (a 10-minute rate of at most 400 / 600 s = 0.67/s), rdmap3s31 one impaired connection every minute;
    before the fix both ticketed ("> 0"). Ticketed once 30 minutes have passed: rdmap1s31 120 timeouts a minute (2/s),
    rdmap2s31 90 impaired connections a minute (1.5/s), each valued its one counter (a 10-minute rate over a counter's
    first minutes reads low, so by minute 40)."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")[FABRIC_ERRORS_RISING]
    inputs = [
        {"series": f'kube_node_labels{{node="{NODE}",{P5}}}', "values": "1x60"},
        _counter(TIMEOUTS, "rdmap0s31", "0+30x20 700+30x40"),
        _counter(TIMEOUTS, "rdmap1s31", "0+120x60"),
        _counter(IMPAIRED, "rdmap2s31", "0+90x60"),
        _counter(IMPAIRED, "rdmap3s31", "0+1x60"),
    ]
    fired = [expected(rule, {"node": NODE, "device": device, "port": "1"}, "1") for device in ("rdmap1s31", "rdmap2s31")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "25m", "alertname": FABRIC_ERRORS_RISING, "exp_alerts": []},
        {"eval_time": "40m", "alertname": FABRIC_ERRORS_RISING, "exp_alerts": fired},
        {"eval_time": "60m", "alertname": FABRIC_ERRORS_RISING, "exp_alerts": fired},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)
