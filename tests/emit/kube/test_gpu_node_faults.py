"""A GPU node that stops giving its GPUs to jobs while it looks healthy to the other alerts (review obsreview27): a node
that died or is unreachable (NotReady), a Fabric Manager that is down on an NVSwitch node, a GPU the hardware clocks down
for power, a fabric rail that keeps erring, a workload that faults the same GPU in a loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.emit.kube.test_monitoring import expected, needs_promtool, platform, rules_of, run_promtool

DC1_LABELS = 'label_alicerce_dev_pool="onprem-h100",label_alicerce_dev_accelerator="H100-SXM5-80GB"'


def _node(name: str, *, ready: str, unschedulable: str = "0x60", created: str = "-3600x60") -> list[dict[str, str]]:
    """An onprem-h100 node whose kubelet last posted 8 allocatable GPUs (kube-state-metrics keeps that count while the
    node is NotReady: node.status.allocatable is the kubelet's to write) and whose Ready=true condition reads ``ready``."""
    return [
        {"series": f'kube_node_labels{{node="{name}",{DC1_LABELS}}}', "values": "1x60"},
        {"series": f'kube_node_created{{node="{name}"}}', "values": created},
        {"series": f'kube_node_spec_unschedulable{{node="{name}"}}', "values": unschedulable},
        {"series": f'kube_node_status_allocatable{{node="{name}",resource="nvidia_com_gpu",unit="integer"}}', "values": "8x60"},
        {"series": f'kube_node_status_condition{{node="{name}",condition="Ready",status="true"}}', "values": ready},
    ]


@needs_promtool
def test_a_notready_gpu_node_pages_as_lost_gpus(tmp_path: Path) -> None:
    """Review obsreview27 D1: gpu-001 dies at minute 6 (Ready no longer true, allocatable still 8): the pool's lost-GPU
    page fires once the 15-minute hold has passed, valued 0. Quiet: a healthy node; a node NotReady for 8 minutes (a
    reboot) that comes back; a dead node cordoned for its repair; a node a scale-up added, NotReady while it joins."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")["GPUsMissingOnpremH100"]
    dead = {"node": "gpu-001.dc1.acme.example", "resource": "nvidia_com_gpu"}
    tests: list[dict[str, Any]] = [{
        "interval": "1m",
        "input_series": [
            *_node("gpu-001.dc1.acme.example", ready="1x5 0x55"),
            *_node("gpu-002.dc1.acme.example", ready="1x60"),
            *_node("gpu-003.dc1.acme.example", ready="1x5 0x8 1x47"),  # rebooted: back after 8 minutes
            *_node("gpu-004.dc1.acme.example", ready="1x5 0x55", unschedulable="0x5 1x55"),  # cordoned for repair
            *_node("gpu-005.dc1.acme.example", ready="0x10 1x50", created="0x60"),  # joining
        ],
        "alert_rule_test": [
            {"eval_time": "5m", "alertname": "GPUsMissingOnpremH100", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "GPUsMissingOnpremH100", "exp_alerts": []},  # pending: 14 minutes NotReady
            {"eval_time": "25m", "alertname": "GPUsMissingOnpremH100", "exp_alerts": [expected(rule, dead, "0")]},
            {"eval_time": "55m", "alertname": "GPUsMissingOnpremH100", "exp_alerts": [expected(rule, dead, "0")]},
        ],
    }]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)


def test_the_lost_gpu_page_names_notready_in_its_runbook() -> None:
    """The on-call paged for a dead node is told so (review obsreview27 D1), at both sites' pools."""
    rp = platform("prod")
    for site, alert in (("dc1", "GPUsMissingOnpremH100"), ("aws", "GPUsMissingTrainP5")):
        rule = rules_of(rp, site)[alert]
        assert 'kube_node_status_condition{condition="Ready",status="true"} == 0' in rule["expr"]
        assert "NotReady" in rule["annotations"]["description"]
