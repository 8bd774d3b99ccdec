"""A GPU node that stops giving its GPUs to jobs while it looks healthy to the other alerts (review obsreview27): a node
that died or is unreachable (NotReady), a Fabric Manager that is down on an NVSwitch node, a GPU the hardware clocks down
for power, a fabric rail that keeps erring, a workload that faults the same GPU in a loop."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from alicerce.catalog.alerts import (
    CLOCK_EVENTS_METRIC,
    CUDA_VALIDATION_FAILING,
    CUDA_VALIDATOR,
    FABRIC_ERRORS_RISING,
    FABRIC_MANAGER_DOWN,
    FABRIC_MANAGER_DOWN_STATES,
    FABRIC_MANAGER_STATUS,
    FABRIC_STATE_UNREADABLE,
    FABRIC_STATE_UNREADABLE_STATES,
    GPU_HARDWARE_SLOWDOWN,
    GPU_HEALTH_NAMES,
    HW_SLOWDOWN_CLOCK_EVENT,
    KNOWN_CORDON_BEFORE,
    LAST_KNOWN_CORDON,
    LAST_SEEN_UNCORDONED,
    POWER_BRAKE_CLOCK_EVENT,
    THERMAL_CLOCK_EVENTS,
    XID_COUNT_METRIC,
    XID_COUNT_WINDOW_MINUTES,
    gpu_health,
)
from alicerce.emit.kube.dcgm_counters import counters_csv
from alicerce.emit.kube.monitoring import rule_groups
from alicerce.targets.aws.resolve import CAPABILITIES as AWS
from alicerce.targets.onprem.resolve import CAPABILITIES as ONPREM
from tests.emit.kube.scrape import dcgm_series, series
from tests.emit.kube.test_monitoring import (
    A100_LABELS,
    dcgm_scraped,
    expected,
    needed_rules,
    needs_promtool,
    platform,
    promtool,
    rules_of,
    run_promtool,
    with_a100_pool,
)
from tests.emit.kube.upstream import load

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


def test_the_fabric_manager_states_alerted_are_dcgm_s() -> None:
    """The values the alert compares are DCGM's dcgmFabricManagerStatus_t (vendored from DCGM v4.5.3 dcgm_structs.h with
    the counters of its exporter), and the field is in the list alicerce mounts (review obsreview27 G1)."""
    enum = load("dcgm-exporter", "4.5.3-4.8.2", "counters.json")["optional"][FABRIC_MANAGER_STATUS]["enum"]
    assert {state: enum[state] for state in FABRIC_MANAGER_DOWN_STATES} == FABRIC_MANAGER_DOWN_STATES
    assert {state: enum[state] for state in FABRIC_STATE_UNREADABLE_STATES} == FABRIC_STATE_UNREADABLE_STATES
    assert set(enum) == {"not_supported", "success", *FABRIC_MANAGER_DOWN_STATES, *FABRIC_STATE_UNREADABLE_STATES}
    assert f"{FABRIC_MANAGER_STATUS}, gauge," in counters_csv()


def test_the_fabric_manager_alert_reads_only_nvswitch_pools() -> None:
    """train-p5 (H100 SXM5, NVSwitch) at aws and onprem-h100 at dc1; not the L40S/L4 pools, whose GPUs have no fabric."""
    rp = platform("prod")
    aws = rules_of(rp, "aws")[FABRIC_MANAGER_DOWN]
    assert aws["labels"]["severity"] == "critical"
    assert 'label_alicerce_dev_pool=~"train-p5"}' in aws["expr"]
    assert 'label_alicerce_dev_pool=~"onprem-h100"}' in rules_of(rp, "dc1")[FABRIC_MANAGER_DOWN]["expr"]


@needs_promtool
def test_fabric_manager_down_on_an_nvswitch_node_pages(tmp_path: Path) -> None:
    """Review obsreview27 G1: Fabric Manager failed on gpu-001 (status 4 on its 8 GPUs) and never started on gpu-005
    (status 1): each pages once its 10 minutes have passed, per node, valued the GPUs. Review obsreview45 D-1: gpu-007's
    Fabric Manager died at boot and its fabric stays in_progress (2) for good, which paged nothing. Quiet: gpu-002
    healthy (3); gpu-003 rebooting, training its fabric 3 minutes (2, then 1 for a minute as FM restarts) then healthy;
    gpu-004 cordoned for repair with FM down; gpu-006 a node a scale-up just added whose FM has not started yet. G-1:
    gpu-008's DCGM cannot read the state (unrecognized, 5: a driver newer than it knows): a warning after 30 minutes,
    no page."""
    rp = platform("prod")
    rules = rules_of(rp, "dc1")
    rule, unreadable = rules[FABRIC_MANAGER_DOWN], rules[FABRIC_STATE_UNREADABLE]
    assert unreadable["labels"]["severity"] == "warning"
    values = {"gpu-001": "4x40", "gpu-002": "3x40", "gpu-003": "2x3 1 3x36", "gpu-004": "1x40", "gpu-005": "1x40", "gpu-006": "1x40",
              "gpu-007": "2x40", "gpu-008": "5x40"}  # fmt: skip
    inputs: list[dict[str, str]] = []
    for node, fm in values.items():
        inputs += [
            {"series": series(FABRIC_MANAGER_STATUS, dcgm_scraped(rp, "dc1", dcgm_series(node, gpu))), "values": fm} for gpu in range(8)
        ]
        inputs += [
            {"series": f'kube_node_labels{{node="{node}",{DC1_LABELS}}}', "values": "1x40"},
            {"series": f'kube_node_created{{node="{node}"}}', "values": "0x40" if node == "gpu-006" else "-3600x40"},
            {"series": f'kube_node_spec_unschedulable{{node="{node}"}}', "values": "1x40" if node == "gpu-004" else "0x40"},
        ]
    fired = [expected(rule, {"node": "gpu-001", "state": "failure"}, "8"), expected(rule, {"node": "gpu-005", "state": "not_started"}, "8"),
             expected(rule, {"node": "gpu-007", "state": "in_progress"}, "8")]  # fmt: skip
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "8m", "alertname": FABRIC_MANAGER_DOWN, "exp_alerts": []},
        {"eval_time": "12m", "alertname": FABRIC_MANAGER_DOWN, "exp_alerts": fired},
        {"eval_time": "12m", "alertname": FABRIC_STATE_UNREADABLE, "exp_alerts": []},
        {"eval_time": "38m", "alertname": FABRIC_STATE_UNREADABLE,
         "exp_alerts": [expected(unreadable, {"node": "gpu-008", "state": "unrecognized"}, "8")]},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)


def test_the_fabric_manager_signal_follows_the_gpu_generation() -> None:
    """Review obsreview28 G-1: an A100 reads DCGM field 170 as not_supported (0) whatever Fabric Manager does (NVML
    reports fabric state from Hopper on, the catalog's Gpu.reports_fabric_state), so GPUFabricManagerDown reads only the
    H100 pool and the A100 pool gets the CUDA validation alert; no pool is left without one, none has both."""
    rp = with_a100_pool()
    rules = rules_of(rp, "dc1")
    assert 'label_alicerce_dev_pool=~"onprem-h100"}' in rules[FABRIC_MANAGER_DOWN]["expr"]
    assert 'label_alicerce_dev_pool=~"onprem-a100"}' in rules[CUDA_VALIDATION_FAILING]["expr"]
    assert rules[CUDA_VALIDATION_FAILING]["labels"]["severity"] == "critical"
    validator = load("gpu-operator", "v26.3.3", "validator.json")
    assert validator["daemonset"] == CUDA_VALIDATOR and "cuda-validation" in validator["init_containers"]
    assert validator["device_plugin_waits_for"] == "toolkit-ready"  # the node keeps advertising its GPUs
    pod_info = load("kube-state-metrics", "2.20.0", "metrics.json")["kube_pod_info"]
    assert {"node", "created_by_kind", "created_by_name"} <= set(pod_info["labels"])
    assert CUDA_VALIDATION_FAILING not in rules_of(platform("prod"), "dc1")  # the reference has no pre-Hopper NVSwitch pool


def _validator_pod(node: str, ready: str) -> list[dict[str, str]]:
    """The GPU Operator validator's pod on ``node`` as kube-state-metrics 2.20.0 lists it, Ready as ``ready`` says."""
    pod = f'namespace="gpu-operator",pod="{CUDA_VALIDATOR}-{node[-3:]}",uid="u-{node}"'
    return [
        {"series": f'kube_pod_info{{{pod},node="{node}",created_by_kind="DaemonSet",created_by_name="{CUDA_VALIDATOR}",'
                   f'host_ip="10.0.0.1",pod_ip="10.1.0.1",priority_class="system-node-critical",host_network="false"}}',
         "values": "1x60"},
        {"series": f'kube_pod_status_ready{{{pod},condition="true"}}', "values": ready},
    ]  # fmt: skip


@needs_promtool
def test_fabric_manager_down_on_an_a100_nvswitch_node_pages(tmp_path: Path) -> None:
    """Review obsreview28 G-1: Fabric Manager never started on a100-001 (its GPUs read field 170 as 0, not_supported, as
    every A100 does) and its CUDA validation never passes: GPUCudaValidationFailing pages once the operator stack's
    15 minutes have passed; GPUFabricManagerDown stays silent on it. Quiet: a100-002 validated; a100-003 rebooting, its
    validator Ready again after 8 minutes; a100-004 cordoned for repair. The H100 node whose FM failed (status 4)
    pages with GPUFabricManagerDown, not with this alert, though its validator is not Ready either."""
    rp = with_a100_pool()
    rule = rules_of(rp, "dc1")[CUDA_VALIDATION_FAILING]
    ready = {"a100-001": "0x60", "a100-002": "1x60", "a100-003": "1x5 0x8 1x47", "a100-004": "0x60", "gpu-001": "0x60"}
    inputs: list[dict[str, str]] = []
    for node, validator in ready.items():
        fm, labels = ("4x60", DC1_LABELS) if node.startswith("gpu") else ("0x60", A100_LABELS)
        inputs += [
            {"series": series(FABRIC_MANAGER_STATUS, dcgm_scraped(rp, "dc1", dcgm_series(node, gpu))), "values": fm} for gpu in range(8)
        ]
        inputs += [
            *_validator_pod(node, validator),
            {"series": f'kube_node_labels{{node="{node}",{labels}}}', "values": "1x60"},
            {"series": f'kube_node_created{{node="{node}"}}', "values": "-3600x60"},
            {"series": f'kube_node_spec_unschedulable{{node="{node}"}}', "values": "1x60" if node == "a100-004" else "0x60"},
        ]
    fabric = rules_of(rp, "dc1")[FABRIC_MANAGER_DOWN]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "13m", "alertname": CUDA_VALIDATION_FAILING, "exp_alerts": []},
        {"eval_time": "20m", "alertname": CUDA_VALIDATION_FAILING, "exp_alerts": [expected(rule, {"node": "a100-001"}, "1")]},
        {"eval_time": "20m", "alertname": FABRIC_MANAGER_DOWN,
         "exp_alerts": [expected(fabric, {"node": "gpu-001", "state": "failure"}, "8")]},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)


def xid_counts_at(faults: list[int], last: int, per_fault: int = 1) -> str:
    """promtool values of dcgm-exporter's XID count of one code on one GPU, faults at minutes ``faults`` each logging
    ``per_fault`` XIDs: the XIDs in the last XID_COUNT_WINDOW_MINUTES (expcollector.go counts DCGM's samples since now -
    window), stale while none (the code's series goes)."""
    values: list[str] = []
    for minute in range(last + 1):
        count = per_fault * sum(1 for f in faults if f <= minute < f + XID_COUNT_WINDOW_MINUTES)
        values.append(str(count) if count else ("stale" if values and values[-1] not in ("_", "stale") else "_"))
    return " ".join(values)


@needs_promtool
def test_a_crash_loop_faster_than_the_xid_window_counts_each_fault(tmp_path: Path) -> None:
    """Review obsreview27 G4: a workload restarted in-process faults gpu 1 with XID 13 every 4 minutes, 30 times in two
    hours: the exporter's 5-minute count never goes away (it reads 2 for the minute two faults share), so counting its
    appearances read one event and no ticket. Each rise is a fault: 30. A GPU whose four faults each log three XIDs
    together (one crash, three channels) is four events, no ticket; the suite's count held level 20 minutes stays one."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")["GPUApplicationXidRecurring"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    looping, burst = (dcgm_scraped(rp, "dc1", dcgm_series("gpu-001", gpu)) for gpu in (1, 2))
    key = {k: looping[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "13"}
    loop = xid_counts_at(list(range(2, 122, 4)), 130)
    assert "2" in loop.split() and "stale" not in loop.split()[:122]  # never absent: the old reading's one event
    tests = [{"interval": "1m", "input_series": [
        {"series": series(XID_COUNT_METRIC, looping | window | {"xid": "13"}), "values": loop},
        {"series": series(XID_COUNT_METRIC, burst | window | {"xid": "31"}), "values": xid_counts_at([10, 40, 70, 100], 130, 3)},
    ], "alert_rule_test": [
        {"eval_time": "15m", "alertname": "GPUApplicationXidRecurring", "exp_alerts": []},  # four faults
        {"eval_time": "20m", "alertname": "GPUApplicationXidRecurring", "exp_alerts": [expected(rule, key, "5")]},
        {"eval_time": "125m", "alertname": "GPUApplicationXidRecurring", "exp_alerts": [expected(rule, key, "30")]},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)


def test_the_slowdown_reasons_read_are_the_exporter_s() -> None:
    """The clock_event values the power slowdown alert reads are dcgm-exporter's names for DCGM's reason bits."""
    names = load("dcgm-exporter", "4.5.3-4.8.2", "counters.json")["optional"][CLOCK_EVENTS_METRIC]["clock_event_values"]
    assert {POWER_BRAKE_CLOCK_EVENT, HW_SLOWDOWN_CLOCK_EVENT, *THERMAL_CLOCK_EVENTS.split("|")} <= set(names)
    for site in ("aws", "dc1"):
        assert POWER_BRAKE_CLOCK_EVENT in rules_of(platform("prod"), site)[GPU_HARDWARE_SLOWDOWN]["expr"]


@needs_promtool
def test_gpus_braked_for_power_raise_a_ticket_per_node(tmp_path: Path) -> None:
    """Review obsreview27 G2: gpu-001's power supply asserts the brake: its 8 GPUs report hw_power_brake and hw_slowdown
    in every sample for an hour: one ticket for the node, valued 8, after 10 minutes; gpu-005 one GPU braked. Quiet:
    gpu-002 slowed by heat (hw_thermal beside hw_slowdown: GPUTemperatureHigh's), gpu-003 HW slowdown in 2 of the
    window's 10 samples (P-state changes, which DCGM says may report it), gpu-004 at its power cap (routine)."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")[GPU_HARDWARE_SLOWDOWN]
    window = {"window_size_in_ms": str(5 * 60_000)}
    reasons = {
        "gpu-001": {"hw_power_brake": 10, "hw_slowdown": 10},
        "gpu-002": {"hw_thermal": 10, "hw_slowdown": 10},
        "gpu-003": {"hw_slowdown": 2},
        "gpu-004": {"power_cap": 10},
    }
    inputs = [
        {"series": series(CLOCK_EVENTS_METRIC, dcgm_scraped(rp, "dc1", dcgm_series(node, gpu)) | window | {"clock_event": event}),
         "values": f"{count}x40"}
        for node, events in reasons.items() for gpu in range(8) for event, count in events.items()
    ]  # fmt: skip
    one = dcgm_scraped(rp, "dc1", dcgm_series("gpu-005", 3)) | window | {"clock_event": "hw_power_brake"}
    inputs.append({"series": series(CLOCK_EVENTS_METRIC, one), "values": "_x5 1x35"})
    fired = [expected(rule, {"Hostname": "gpu-001"}, "8"), expected(rule, {"Hostname": "gpu-005"}, "1")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "9m", "alertname": GPU_HARDWARE_SLOWDOWN, "exp_alerts": []},
        {"eval_time": "30m", "alertname": GPU_HARDWARE_SLOWDOWN, "exp_alerts": fired},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)


def _port_counter(node: str, name: str, device: str, values: str) -> dict[str, str]:
    """A port error counter as the node exporter serves it (its infiniband collector, or alicerce's EFA textfile)."""
    assert name in load("node-exporter", "v1.12.1", "metrics.json") or name.startswith("alicerce_efa_"), name
    labels = f'job="node-exporter",instance="{node}:9100",node="{node}",device="{device}",port="1"'
    return {"series": f"{name}{{{labels}}}", "values": values}


def _link_rate(node: str, device: str, gbps: int) -> dict[str, str]:
    """The port's signalling rate as the node exporter serves it: procfs parseRate, bytes/s of "<gbps> Gb/sec"."""
    assert "node_infiniband_rate_bytes_per_second" in load("node-exporter", "v1.12.1", "metrics.json")
    labels = f'job="node-exporter",instance="{node}:9100",node="{node}",device="{device}",port="1"'
    return {"series": f"node_infiniband_rate_bytes_per_second{{{labels}}}", "values": f"{gbps * 125_000_000}x60"}


@needs_promtool
def test_a_port_that_keeps_erring_raises_a_ticket(tmp_path: Path) -> None:
    """Review obsreview27 G3, obsreview28 N-1: a link may err up to a bit error rate of 1e-12 (ibdiagnet's BER check;
    on HDR/NDR the symbol errors are those left after FEC): 0.4 a second at 400 Gb/s (4X NDR), 0.2 at 200 Gb/s (4X HDR).
    mlx5_0 (NDR) counts 30 receive and 60 symbol errors a minute (0.5 and 1 a second) for an hour with its link up (a
    bad cable): a ticket once 30 minutes have passed (a 10-minute rate over a counter's first minutes reads low, so
    by minute 40), valued the 2 counters rising; mlx5_4 (HDR) 20 symbol errors a
    minute (0.33/s, above HDR's 0.2): a ticket valued 1. Quiet: mlx5_1 one burst of 50 at minute 10, then clean; mlx5_2
    (NDR) 20 symbol errors a minute (0.33/s) and mlx5_3 (HDR) 10 (0.17/s), healthy links within the BER, erring in every
    window; gpu-002, cordoned for repair, erring as mlx5_0 does."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")[FABRIC_ERRORS_RISING]
    receive, symbol = "node_infiniband_port_errors_received_total", "node_infiniband_symbol_error_total"
    rates = {
        ("gpu-001", "mlx5_0"): 400,
        ("gpu-001", "mlx5_1"): 400,
        ("gpu-001", "mlx5_2"): 400,
        ("gpu-001", "mlx5_3"): 200,
        ("gpu-001", "mlx5_4"): 200,
        ("gpu-002", "mlx5_0"): 400,
    }
    inputs = [
        *_node("gpu-001", ready="1x60"), *_node("gpu-002", ready="1x60", unschedulable="1x60"),
        *(_link_rate(node, device, gbps) for (node, device), gbps in rates.items()),
        _port_counter("gpu-001", receive, "mlx5_0", "0+30x60"), _port_counter("gpu-001", symbol, "mlx5_0", "0+60x60"),
        _port_counter("gpu-001", receive, "mlx5_1", "0x10 50x50"), _port_counter("gpu-001", symbol, "mlx5_1", "0x60"),
        _port_counter("gpu-001", symbol, "mlx5_2", "0+20x60"), _port_counter("gpu-001", receive, "mlx5_2", "0x60"),
        _port_counter("gpu-001", symbol, "mlx5_3", "0+10x60"),
        _port_counter("gpu-001", symbol, "mlx5_4", "0+20x60"),
        _port_counter("gpu-002", receive, "mlx5_0", "0+30x60"), _port_counter("gpu-002", symbol, "mlx5_0", "0+60x60"),
    ]  # fmt: skip
    fired = [expected(rule, {"node": "gpu-001", "device": "mlx5_0", "port": "1"}, "2"),
             expected(rule, {"node": "gpu-001", "device": "mlx5_4", "port": "1"}, "1")]  # fmt: skip
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "25m", "alertname": FABRIC_ERRORS_RISING, "exp_alerts": []},
        {"eval_time": "40m", "alertname": FABRIC_ERRORS_RISING, "exp_alerts": fired},
        {"eval_time": "60m", "alertname": FABRIC_ERRORS_RISING, "exp_alerts": fired},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)


@needs_promtool
def test_efa_retransmit_timeouts_that_keep_rising_raise_a_ticket(tmp_path: Path) -> None:
    """Review obsreview27 G3 on EFA (train-p5): rdmap0s31 of one p5 times out 120 retransmissions a minute (2/s, above
    the node monitoring agent's 1/s: obsreview29 N-4; one a minute, this test's old figure, is now quiet) for an hour:
    a ticket; rdmap1s31 drops packets on receive (congestion as much as the link: no ticket from this alert)."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")[FABRIC_ERRORS_RISING]
    node = "ip-10-20-1-1.ec2.internal"
    p5 = 'label_alicerce_dev_pool="train-p5",label_alicerce_dev_accelerator="H100-SXM5-80GB"'
    inputs = [
        {"series": f'kube_node_labels{{node="{node}",{p5}}}', "values": "1x60"},
        _port_counter(node, "alicerce_efa_retransmit_timeouts_total", "rdmap0s31", "0+120x60"),
        _port_counter(node, "alicerce_efa_receive_drops_total", "rdmap1s31", "0+20x60"),
    ]
    fired = [expected(rule, {"node": node, "device": "rdmap0s31", "port": "1"}, "1")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "40m", "alertname": FABRIC_ERRORS_RISING, "exp_alerts": fired}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_a_critical_xid_pages_until_the_node_is_cordoned(tmp_path: Path) -> None:
    """Review obsreview27 N1: the XID count leaves dcgm-exporter's 5-minute window and the page resolved itself while the
    GPU still needed its reset. XID 79 on gpu-001 (nobody acts): paging after 3 hours too, valued 0 (none in the window
    now), and quiet past the 24 hours it is held. XID 48 on gpu-002, cordoned at 30 minutes and uncordoned repaired at
    2 hours: quiet from the cordon on, and not paging again once back in service."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    lost, repaired = (dcgm_scraped(rp, "dc1", dcgm_series(node, 0)) for node in ("gpu-001", "gpu-002"))
    key = {k: lost[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}
    samples = 25 * 12  # 25 hours of 5-minute samples
    inputs = [
        {"series": series(XID_COUNT_METRIC, lost | window | {"xid": "79"}), "values": "_ 1 stale"},
        {"series": series(XID_COUNT_METRIC, repaired | window | {"xid": "48"}), "values": "_ 1 stale"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-001"}', "values": f"0x{samples}"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-002"}', "values": f"0x5 1x18 0x{samples - 24}"},
    ]
    repaired_key = {k: repaired[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "48"}
    tests = [{"interval": "5m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "5m", "alertname": "GPUCriticalXid", "exp_alerts": [
            expected(rule, key, "1"), expected(rule, repaired_key, "1")]},
        {"eval_time": "20m", "alertname": "GPUCriticalXid", "exp_alerts": [
            expected(rule, key, "0"), expected(rule, repaired_key, "0")]},
        {"eval_time": "40m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key, "0")]},
        {"eval_time": "3h", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key, "0")]},
        {"eval_time": "24h30m", "alertname": "GPUCriticalXid", "exp_alerts": []},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path, every="5m")


@needs_promtool
def test_a_critical_xid_on_a_node_since_removed_stops_paging(tmp_path: Path) -> None:
    """Review obsreview28 D-1: the held page (above) needs the node to still exist. An autoscaler removes a node without
    cordoning it (cluster-autoscaler and Karpenter taint it), so the runbook's cordon is impossible and the page held for
    24 hours. XID 79 on gpu-001, whose Node object is gone after 30 minutes: held at 20 minutes, quiet at 3 hours."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    gone = dcgm_scraped(rp, "dc1", dcgm_series("gpu-001", 0))
    key = {k: gone[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}
    inputs = [
        {"series": series(XID_COUNT_METRIC, gone | window | {"xid": "79"}), "values": "_ 1 stale"},
        # the node exists for 30 minutes (never cordoned: the autoscaler taints it and deletes it), then is gone
        {"series": 'kube_node_spec_unschedulable{node="gpu-001"}', "values": "0x6 stale"},
    ]
    tests = [{"interval": "5m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "20m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key, "0")]},
        {"eval_time": "3h", "alertname": "GPUCriticalXid", "exp_alerts": []},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path, every="5m")


TEAM_UTIL_SLOS = """    - {name: research-util, kind: gpu-utilization, team: research, threshold: 0.6, objective: 90}
    - {name: serving-util, kind: gpu-utilization, team: serving, threshold: 0.5, objective: 90}
"""


def _with_team_utilization_slos() -> Any:
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text
    from tests.conftest import ROOT

    anchor = "  slos:\n"
    text = (ROOT / "platform.yaml").read_text()
    assert anchor in text
    return validated(load_text(text.replace(anchor, anchor + TEAM_UTIL_SLOS, 1), "platform.yaml"), "prod")


def test_a_team_s_utilization_slo_reads_the_team_where_it_is() -> None:
    """Review obsreview27 N5: a team's gpu-utilization SLO read the site's ratio at both sites, without the team label:
    research's fired for what the other teams did and never for its own idle GPUs. Now the team's own ratio, labelled,
    at the sites where the team is (serving: aws only); the plan prints the same target."""
    from alicerce.plan.kpi import kpi_targets

    rp = _with_team_utilization_slos()
    for site in ("aws", "dc1"):
        rule = rules_of(rp, site)["SLOResearchUtil"]
        assert rule["expr"] == 'team:gpu_effective_utilization:ratio{team="research"} < 0.6'
        assert rule["labels"]["team"] == "research"
    assert "SLOServingUtil" in rules_of(rp, "aws") and "SLOServingUtil" not in rules_of(rp, "dc1")
    targets = {(t.kpi, t.subject) for t in kpi_targets(rp, [], {}, {})}
    assert ("team:gpu_effective_utilization:ratio", "research") in targets


@needs_promtool
def test_a_team_s_idle_gpus_fire_its_utilization_slo(tmp_path: Path) -> None:
    """research keeps 3 of the 10 GPUs it holds busy for 7 hours while the site is busy overall: its SLO fires, with
    its team label; applied-ml's own ratio is no SLO of research's."""
    rp = _with_team_utilization_slos()
    rule = rules_of(rp, "dc1")["SLOResearchUtil"]
    inputs = [
        {"series": 'team:gpu_effective_utilization:ratio{team="research"}', "values": "0.3x90"},
        {"series": 'team:gpu_effective_utilization:ratio{team="applied-ml"}', "values": "0.1x90"},
        {"series": "site:gpu_effective_utilization:ratio", "values": "0.9x90"},
    ]
    tests = [{"interval": "5m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "5h", "alertname": "SLOResearchUtil", "exp_alerts": []},
        {"eval_time": "7h", "alertname": "SLOResearchUtil", "exp_alerts": [expected(rule, {"team": "research"}, "0.3")]},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path, every="5m")


@needs_promtool
def test_the_inference_dashboard_lists_a_workload_whose_pods_are_all_down(tmp_path: Path) -> None:
    """Review obsreview27 N3: chat-70b's pods exist and none serves (no vLLM series): the inference dashboard's workload
    list read vLLM's request rate and lost it while ServingWorkloadDown paged for it. Its list reads the workload
    labels of the pods (kube-state-metrics), which keep it; only inference workloads are listed."""
    from alicerce.emit.kube.dashboards import dashboards
    from alicerce.emit.kube.monitoring import rule_groups

    rp = platform("prod")
    board = dashboards(rp, rp.site("aws"), rule_groups(rp, "aws"))["inference.json"]
    [query] = [v["query"] for v in board["templating"]["list"] if v["type"] == "query"]
    listed = query.removeprefix("label_values(").removesuffix(", workload)")
    assert "vllm" not in listed
    pods = [
        {"series": 'kube_pod_labels{namespace="serving",pod="chat-70b-0",label_alicerce_dev_workload="chat-70b"}', "values": "1x10"},
        {"series": 'kube_pod_labels{namespace="research",pod="llm-pretrain-0",label_alicerce_dev_workload="llm-pretrain"}',
         "values": "1x10"},
    ]  # fmt: skip
    tests = [{"interval": "1m", "input_series": pods, "promql_expr_test": [
        {"expr": f"max by (workload) ({listed})", "eval_time": "5m", "exp_samples": [{"labels": '{workload="chat-70b"}', "value": 1}]},
        {"expr": "workload:vllm_requests:rate5m", "eval_time": "5m", "exp_samples": []},  # what the list read
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


# what only an owned host has: a validation role, an RMA, a PDU, a BMC's event log (review obsreview31 N-4)
ON_PREM_ACTIONS = ("validation role", "RMA", "PDU", "ipmitool", "BMC")


def test_gpu_fault_runbooks_name_only_their_target_s_actions() -> None:
    """At aws the GPU health runbooks say to terminate the instance, not to run the node validation role, RMA the GPU or
    read the PDU and ipmitool; dc1's keep those."""
    rp = platform("prod")
    alerts = ("GPUApplicationXidRecurring", GPU_HARDWARE_SLOWDOWN, "GPURowRemapFailure", "GPUXidError", "GPUCriticalXid")
    aws, dc1 = rules_of(rp, "aws"), rules_of(rp, "dc1")
    for name in alerts:
        text = aws[name]["annotations"]["description"]
        assert not [a for a in ON_PREM_ACTIONS if a in text], (name, text)
    for name in ("GPUApplicationXidRecurring", GPU_HARDWARE_SLOWDOWN, "GPURowRemapFailure"):
        assert "terminate its instance" in aws[name]["annotations"]["description"], name
    assert "validation role" in dc1["GPUApplicationXidRecurring"]["annotations"]["description"]
    assert "RMA" in dc1["GPURowRemapFailure"]["annotations"]["description"]
    assert {"PDU", "ipmitool"} <= {a for a in ON_PREM_ACTIONS if a in dc1[GPU_HARDWARE_SLOWDOWN]["annotations"]["description"]}


def test_the_static_alert_names_are_the_generated_ones() -> None:
    """Overrides are validated against GPU_HEALTH_NAMES without resolving a site: they are the names generated."""
    for words in (AWS, ONPREM):
        assert tuple(a.name for a in gpu_health(words)) == GPU_HEALTH_NAMES


def test_the_aws_xid_page_says_it_ends_at_eks_s_cordon() -> None:
    """Review obsreview31 N-2: at aws the page ends when EKS cordons the node, before the reboot or replacement, which
    follows about 10 minutes after detection unless paused; the on-call checks the node's condition, not the page."""
    rp = platform("prod")
    aws = rules_of(rp, "aws")["GPUCriticalXid"]["annotations"]["description"]
    for words in ("page ends when EKS cordons the node", "10 minutes after detection", "20% of a group of over five",
                  "zonal shift", "AcceleratedHardwareReady condition went back to True or the node was replaced"):  # fmt: skip
        assert words in aws, words
    assert "not a resolved incident" not in aws
    assert "not a resolved incident" in rules_of(rp, "dc1")["GPUCriticalXid"]["annotations"]["description"]


def test_no_runbook_says_cordon_and_uncordon_back_to_back() -> None:
    """Review obsreview31 N-3: the hold reads the cordon at 1-minute subquery steps of scraped samples, so a cordon of a
    few seconds is not seen and the page holds on: the runbooks say to wait for the page to resolve before uncordoning."""
    rp = platform("prod")
    for site in ("aws", "dc1"):
        for name, rule in rules_of(rp, site).items():
            text = rule.get("annotations", {}).get("description", "")
            assert "cordon and uncordon" not in text, (site, name)
    assert "wait until the page resolves" in rules_of(rp, "aws")["GPUCriticalXid"]["annotations"]["description"]


@needs_promtool
def test_a_cordon_ends_the_hold_only_once_a_step_has_seen_it(tmp_path: Path) -> None:
    """Review obsreview31 N-3, at a 30 s scrape: XID 79 on two nodes, held (valued 0) after the window. gpu-001 is
    cordoned from 20m to 22m (the runbook's wait), then uncordoned: quiet from then on. gpu-002 is cordoned for one
    scrape between two minute steps (a back-to-back cordon and uncordon): no step sees it, the page holds on."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    waited, hurried = (dcgm_scraped(rp, "aws", dcgm_series(node, 0)) for node in ("gpu-001", "gpu-002"))
    hurried_key = {k: hurried[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}
    waited_key = {k: waited[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}
    inputs = [
        {"series": series(XID_COUNT_METRIC, waited | window | {"xid": "79"}), "values": "_x2 1x10 stale"},
        {"series": series(XID_COUNT_METRIC, hurried | window | {"xid": "79"}), "values": "_x2 1x10 stale"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-001"}', "values": "0x39 1x4 0x60"},  # 19m30s-21m30s
        {"series": 'kube_node_spec_unschedulable{node="gpu-002"}', "values": "0x40 1 0x60"},  # 20m30s only
        {"series": 'kube_node_created{node="gpu-001"}', "values": "-86400x100"},
        {"series": 'kube_node_created{node="gpu-002"}', "values": "-86400x100"},
    ]
    tests = [{"interval": "30s", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "15m", "alertname": "GPUCriticalXid", "exp_alerts": [
            expected(rule, waited_key, "0"), expected(rule, hurried_key, "0")]},
        {"eval_time": "23m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, hurried_key, "0")]},
        {"eval_time": "45m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, hurried_key, "0")]},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="30s")


@needs_promtool
def test_a_node_uncordoned_with_the_xid_its_repair_reproduced_pages(tmp_path: Path) -> None:
    """Review obsreview30 N-1 (repro /work/wt/or30-repro): gpu-001 is cordoned for repair from 0 to 40m, its validation
    reproduces XID 79 at 25m (a ticket, no page while cordoned), and it is uncordoned at 45m with the fault unfixed: held
    (valued 0) from the uncordon, until the on-call cordons it again at 85m; uncordoned at 110m, it stays quiet.
    Look-alikes that stay quiet: gpu-002, cordoned at 5m for an XID 48 at 0 (its count lasts into the cordon) and
    uncordoned repaired at 45m, no new XID; gpu-003, XID 79 at 25m while cordoned and still cordoned (in repair);
    gpu-004, cordoned by EKS at 5m for an XID 79 its agent read from DCGM before dcgm-exporter's count showed it (at
    10m, in the cordon), rebooted and uncordoned at 45m."""
    rp = platform("prod")
    rule = rules_of(rp, "dc1")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    unfixed, repaired, in_repair, eks = (dcgm_scraped(rp, "dc1", dcgm_series(n, 0)) for n in ("gpu-001", "gpu-002", "gpu-003", "gpu-004"))
    key = {k: unfixed[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}
    inputs = [
        {"series": series(XID_COUNT_METRIC, unfixed | window | {"xid": "79"}), "values": "_x5 1 stale"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-001"}', "values": "1x8 0x7 1x4 0x12"},
        {"series": series(XID_COUNT_METRIC, repaired | window | {"xid": "48"}), "values": "1 1 stale"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-002"}', "values": "0 1x7 0x24"},
        {"series": series(XID_COUNT_METRIC, in_repair | window | {"xid": "79"}), "values": "_x5 1 stale"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": "1x32"},
        {"series": series(XID_COUNT_METRIC, eks | window | {"xid": "79"}), "values": "_ _ 1 stale"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-004"}', "values": "0 1x7 0x24"},
        *({"series": f'kube_node_created{{node="gpu-00{n}"}}', "values": "-86400x32"} for n in (1, 2, 3, 4)),
        # no reboot on gpu-001 (the fault is still there, obsreview32 D-1's hold must not hide it); gpu-004 rebooted by
        # EKS at 30m (its node exporter gone for the reboot)
        *({"series": f'node_boot_time_seconds{{node="gpu-00{n}"}}', "values": "-86400x32"} for n in (1, 2, 3)),
        {"series": 'node_boot_time_seconds{node="gpu-004"}', "values": "-86400x5 _ 1800x25"},
    ]
    tests = [{"interval": "5m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "5m", "alertname": "GPUCriticalXid", "exp_alerts": []},  # gpu-002 cordoned while its XID 48 is still counted
        {"eval_time": "25m", "alertname": "GPUCriticalXid", "exp_alerts": []},  # in repair: GPUXidError's ticket
        {"eval_time": "50m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key, "0")]},
        {"eval_time": "75m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key, "0")]},
        {"eval_time": "85m", "alertname": "GPUCriticalXid", "exp_alerts": []},  # cordoned again by the on-call
        {"eval_time": "2h30m", "alertname": "GPUCriticalXid", "exp_alerts": []},  # uncordoned after its repair
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path, every="5m")


@needs_promtool
def test_a_node_rebooted_by_its_repair_does_not_page_for_the_xids_before_the_reboot(tmp_path: Path) -> None:
    """Review obsreview32 D-1 (repro /work/wt/or32-repro/test_eks_repeat_xid.py, inverted): the cordon evicts nothing, so
    the job on gpu-001's bad GPU restarts in place and raises XID 119 at 3, 6, 9 and 13 minutes, the last one 11 minutes
    into EKS's cordon (2m-19m); EKS reboots the node at 14m (its exporters' series end; boot time 16m), and uncordons it
    healthy at 20m: quiet then and after. gpu-002 is the same node without the reboot (the fault still there when it is
    uncordoned): held (valued 0) from the uncordon, as obsreview30 N-1 has it. gpu-003 is rebooted (its exporters'
    series stale at 14m) but its validation reproduces the XID after the boot (counted 17-21m, a new start) and it is
    uncordoned at 24m anyway, after the count left the exporter's window: held, by the boot branch alone (review
    obsreview34 N-2: its count lasted past the uncordon, so the not-since hold kept it whatever the boot filter did)."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    rebooted, unfixed, reproduced = (dcgm_scraped(rp, "aws", dcgm_series(n, 0)) for n in ("gpu-001", "gpu-002", "gpu-003"))
    assert "node_boot_time_seconds" in load("node-exporter", "v1.12.1", "metrics.json")

    def key(gpu: dict[str, str]) -> dict[str, str]:
        return {k: gpu[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "119"}

    looping = "_x3 1 1 1 2 2 1 2 2 1 1 2"  # minutes 3..13, one XID at 3, 6, 9 and 13 in the 5-minute count
    inputs = [
        {"series": series(XID_COUNT_METRIC, rebooted | window | {"xid": "119"}), "values": f"{looping} stale"},
        {"series": series(XID_COUNT_METRIC, unfixed | window | {"xid": "119"}), "values": f"{looping} 2 1 1 stale"},
        {"series": series(XID_COUNT_METRIC, reproduced | window | {"xid": "119"}), "values": f"{looping} stale _x2 1x4 stale"},
        {"series": 'node_boot_time_seconds{node="gpu-001"}', "values": "-86400x13 _x2 960x60"},
        {"series": 'node_boot_time_seconds{node="gpu-002"}', "values": "-86400x78"},
        # booted at 14m: its validation reproduces the XID 3 minutes later, past the boot clock margin
        {"series": 'node_boot_time_seconds{node="gpu-003"}', "values": "-86400x13 _x2 840x60"},
        *({"series": f'kube_node_spec_unschedulable{{node="gpu-00{n}"}}', "values": "0x1 1x17 0x60"} for n in (1, 2)),
        {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": "0 1x22 0x60"},  # uncordoned at 24m
        *({"series": f'kube_node_created{{node="gpu-00{n}"}}', "values": "-86400x80"} for n in (1, 2, 3)),
    ]
    held = [expected(rule, key(unfixed), "0"), expected(rule, key(reproduced), "0")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "10m", "alertname": "GPUCriticalXid", "exp_alerts": []},  # cordoned: GPUXidError's ticket
        {"eval_time": "25m", "alertname": "GPUCriticalXid", "exp_alerts": held},
        {"eval_time": "75m", "alertname": "GPUCriticalXid", "exp_alerts": held},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="1m")


@needs_promtool
def test_a_repaired_node_stays_quiet_through_an_exporter_restart_and_a_clock_behind(tmp_path: Path) -> None:
    """Review obsreview33 D-1 and N-1 (repro /work/wt/or33-repro/test_boot_time_lookalikes.py, inverted): both nodes are
    the repaired pattern above (XID 119 into EKS's cordon 2m-19m, rebooted at 14m, uncordoned healthy at 20m). gpu-001's
    node exporter restarts at 40m, its boot time stale for a step: read as "boot unknown" it re-armed the hold, a
    critical page for that step. gpu-002's clock runs 4 minutes behind: btime reads 12m for a 16m boot, before the last
    XID's 13m, and it was held for 24 h. Quiet throughout now: the latest boot in the window, and a 2-minute margin."""
    rp = platform("prod")
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    restarted, skewed = (dcgm_scraped(rp, "aws", dcgm_series(n, 0)) for n in ("gpu-001", "gpu-002"))
    looping = "_x3 1 1 1 2 2 1 2 2 1 1 2"  # minutes 3..13
    inputs = [
        {"series": series(XID_COUNT_METRIC, restarted | window | {"xid": "119"}), "values": f"{looping} stale"},
        {"series": series(XID_COUNT_METRIC, skewed | window | {"xid": "119"}), "values": f"{looping} stale"},
        {"series": 'node_boot_time_seconds{node="gpu-001"}', "values": "-86400x13 _x2 960x23 stale 960x40"},
        {"series": 'node_boot_time_seconds{node="gpu-002"}', "values": "-86400x13 _x2 720x64"},
        *({"series": f'kube_node_spec_unschedulable{{node="gpu-00{n}"}}', "values": "0x1 1x17 0x70"} for n in (1, 2)),
        *({"series": f'kube_node_created{{node="gpu-00{n}"}}', "values": "-86400x90"} for n in (1, 2)),
    ]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": t, "alertname": "GPUCriticalXid", "exp_alerts": []} for t in ("25m", "39m", "40m", "41m", "80m")
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="1m")


def _max_nesting(text: str) -> int:
    depth = deepest = 0
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        deepest = max(deepest, depth)
    return deepest


def test_aws_gpu_fault_texts_name_the_reserved_pools_and_nest_no_brackets() -> None:
    """Review obsreview32 N-5: GPUApplicationXidRecurring read "(then drain ... (the node group launches another; ...))",
    and "terminate the instance" in a capacity-reservation or Capacity Block pool frees the slot the node group may fill
    on the same host. The reference aws site's train-p5 is on a capacity reservation: the terminate runbooks say so by
    pool; with train-p5 on demand they do not; no GPU health text nests brackets."""
    from tests.emit.gitops.helpers import pool, variant

    def on_demand(data: dict[str, Any]) -> None:
        aws = pool(data, "train-p5")["aws"]
        aws["capacityType"] = "on-demand"
        del aws["capacityReservationId"]
        data["costs"]["cloud"] = [c for c in data["costs"]["cloud"] if c["pool"] != "train-p5"]

    names = ("GPUCriticalXid", "GPUApplicationXidRecurring", "GPURowRemapFailure")
    reserved, plain = rules_of(platform("prod"), "aws"), rules_of(variant(on_demand), "aws")
    for name in names:
        assert (
            "In pool train-p5 (a capacity reservation) the instance launched in its place may land on the same host"
            in (reserved[name]["annotations"]["description"])
        ), name
        assert "same host" not in plain[name]["annotations"]["description"], name
    for site in ("aws", "dc1"):
        for name, rule in rules_of(platform("prod"), site).items():
            assert _max_nesting(rule.get("annotations", {}).get("description", "")) <= 1, (site, name)


def _per_minute(length: int, value: str, changes: dict[range, str]) -> str:
    """promtool values, one a minute for ``length`` minutes: ``value``, or the value of the range a minute falls in."""
    return " ".join(next((v for r, v in changes.items() if m in r), value) for m in range(length))


@needs_promtool
def test_a_kube_state_metrics_gap_neither_pages_a_node_in_repair_nor_drops_a_hold(tmp_path: Path) -> None:
    """Review obsreview34 D-1 (repro /work/wt/or34-repro/test_ksm_gap_xid.py, inverted) and obsreview32 N-2: every
    kube-state-metrics series is stale at 17-18m (a failed scrape, its pod restarted) and at 40-47m (evicted and slow to
    come back). gpu-001 is cordoned for repair all along and its validation reproduces XID 79 at 15-19m and 41-46m: a
    ticket, never the page (read per evaluation the gap made it a node in service). gpu-002's XID 79 at 1-5m, never
    cordoned, is held (valued 0) through the short gap and through the long one as far as the bridge reaches. gpu-003 is
    cordoned at 2m, its validation reproduces XID 79 at 20m (18 minutes into the cordon) and it is uncordoned at 30m
    unfixed: held; the short gap re-marked its cordon start at 19m, which read the XID as the one the cordon was for.
    Beyond the bridge (46m) the cordon is unknown: no page from the raw branch and no hold, until it answers again."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    in_repair, held, reproduced = (dcgm_scraped(rp, "aws", dcgm_series(n, 0)) for n in ("gpu-001", "gpu-002", "gpu-003"))

    def key(gpu: dict[str, str]) -> dict[str, str]:
        return {k: gpu[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}

    gaps = {range(17, 19): "stale", range(40, 48): "stale"}
    inputs = [
        {
            "series": series(XID_COUNT_METRIC, in_repair | window | {"xid": "79"}),
            "values": _per_minute(48, "_", {range(15, 20): "1", range(20, 21): "stale", range(41, 47): "1", range(47, 48): "stale"}),
        },
        {"series": series(XID_COUNT_METRIC, held | window | {"xid": "79"}), "values": "_ 1x4 stale"},
        {"series": series(XID_COUNT_METRIC, reproduced | window | {"xid": "79"}), "values": "_x20 1x4 stale"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-001"}', "values": _per_minute(60, "1", gaps)},
        {"series": 'kube_node_spec_unschedulable{node="gpu-002"}', "values": _per_minute(60, "0", gaps)},
        {
            "series": 'kube_node_spec_unschedulable{node="gpu-003"}',
            "values": _per_minute(60, "0", gaps | {range(2, 17): "1", range(19, 30): "1"}),
        },
        *({"series": f'kube_node_created{{node="gpu-00{n}"}}', "values": _per_minute(60, "-86400", gaps)} for n in (1, 2, 3)),
        *({"series": f'node_boot_time_seconds{{node="gpu-00{n}"}}', "values": "-86400x60"} for n in (1, 2, 3)),
    ]
    both = [expected(rule, key(held), "0"), expected(rule, key(reproduced), "0")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "16m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key(held), "0")]},
        {"eval_time": "17m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key(held), "0")]},
        {"eval_time": "18m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rule, key(held), "0")]},
        {"eval_time": "35m", "alertname": "GPUCriticalXid", "exp_alerts": both},
        {"eval_time": "43m", "alertname": "GPUCriticalXid", "exp_alerts": both},
        {"eval_time": "46m", "alertname": "GPUCriticalXid", "exp_alerts": []},
        {"eval_time": "50m", "alertname": "GPUCriticalXid", "exp_alerts": both},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="1m")


@needs_promtool
def test_a_clock_ahead_at_boot_and_stepped_back_does_not_hide_a_reproduced_xid(tmp_path: Path) -> None:
    """Review obsreview34 N-1 (repro /work/wt/or34-repro/test_boot_clock_ahead.py, inverted): both nodes loop XID 119
    into EKS's cordon (1m-29m), reboot at 14m (their exporters' series end: stale), reproduce XID 119 in the repair's
    validation at 17m and are uncordoned at 30m unfixed: held. gpu-003's clock is right (btime 14m); gpu-004's is 3
    minutes ahead at boot, btime reads 17m until chrony steps it back at 18m (14m from then on). The window's largest
    btime kept 17m for 24 h, read the reproduced XID as before the boot, and gpu-004 was silent."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    right, ahead = (dcgm_scraped(rp, "aws", dcgm_series(n, 0)) for n in ("gpu-003", "gpu-004"))

    def key(gpu: dict[str, str]) -> dict[str, str]:
        return {k: gpu[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "119"}

    looping = "_x3 1 1 1 2 2 1 2 2 1 1 2"  # minutes 3..13
    inputs = [
        *(
            {"series": series(XID_COUNT_METRIC, gpu | window | {"xid": "119"}), "values": f"{looping} stale _x2 1x5 stale"}
            for gpu in (right, ahead)
        ),
        {"series": 'node_boot_time_seconds{node="gpu-003"}', "values": "-86400x13 _x2 840x70"},
        {"series": 'node_boot_time_seconds{node="gpu-004"}', "values": "-86400x13 _x2 1020x2 840x68"},
        *({"series": f'kube_node_spec_unschedulable{{node="gpu-00{n}"}}', "values": "0 1x28 0x60"} for n in (3, 4)),
        *({"series": f'kube_node_created{{node="gpu-00{n}"}}', "values": "-86400x90"} for n in (3, 4)),
    ]
    held = [expected(rule, key(right), "0"), expected(rule, key(ahead), "0")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "25m", "alertname": "GPUCriticalXid", "exp_alerts": []},  # cordoned: GPUXidError's ticket
        {"eval_time": "35m", "alertname": "GPUCriticalXid", "exp_alerts": held},
        {"eval_time": "80m", "alertname": "GPUCriticalXid", "exp_alerts": held},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path, every="1m")


@needs_promtool
def test_a_kube_state_metrics_outage_beyond_the_bridge_does_not_restart_a_cordon(tmp_path: Path) -> None:
    """Review obsreview35 N-1 / obsreview36 N-1 (repro /work/wt/or35-repro/test_ksm_long_gap_remarks_cordon.py): gpu-003
    is cordoned at 2m, its validation reproduces XID 79 at 20m (18 minutes into the cordon) and it is uncordoned at 50m
    unfixed. Kube-state-metrics is stale for 2 minutes (A, inside the 5-minute bridge) or 8 minutes (B, beyond it) at
    30m: held in both, as the cordon in force before the outage is the one known after it. C: a node in service until
    the outage comes back cordoned at 38m and reproduces XID 79 at 40m, the XID the cordon is for: a cordon first seen
    after an outage starts there, and the node uncordoned at 60m repaired stays quiet."""
    rp = platform("prod")
    rule = rules_of(rp, "aws")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    gpu = dcgm_scraped(rp, "aws", dcgm_series("gpu-003", 0))
    key = {k: gpu[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}
    minutes = 90

    def group(gap: range, cordon: range, xid_at: int, held: bool) -> dict[str, Any]:
        gaps = {gap: "stale"}
        inputs = [
            {"series": series(XID_COUNT_METRIC, gpu | window | {"xid": "79"}), "values": f"_x{xid_at} 1x4 stale"},
            {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": _per_minute(minutes, "0", gaps | {cordon: "1"})},
            {"series": 'kube_node_created{node="gpu-003"}', "values": _per_minute(minutes, "-86400", gaps)},
            {"series": 'node_boot_time_seconds{node="gpu-003"}', "values": f"-86400x{minutes}"},
        ]
        alerts = [expected(rule, key, "0")] if held else []
        return {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "45m", "alertname": "GPUCriticalXid", "exp_alerts": []},  # still cordoned
            {"eval_time": "65m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
            {"eval_time": "80m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
        ]}  # fmt: skip

    groups = [
        group(range(30, 32), range(2, 50), 20, held=True),
        group(range(30, 38), range(2, 50), 20, held=True),
        group(range(30, 38), range(38, 60), 40, held=False),
    ]
    run_promtool(rp, "aws", groups, tmp_path, every="1m")


def _xid_79_on_gpu_003() -> tuple[Any, dict[str, Any], dict[str, str], dict[str, str], dict[str, str]]:
    rp = platform("prod")
    rule = rules_of(rp, "aws")["GPUCriticalXid"]
    window = {"window_size_in_ms": str(XID_COUNT_WINDOW_MINUTES * 60_000)}
    gpu = dcgm_scraped(rp, "aws", dcgm_series("gpu-003", 0))
    key = {k: gpu[k] for k in ("Hostname", "gpu", "UUID")} | {"xid": "79"}
    return rp, rule, window, gpu, key


@needs_promtool
def test_an_old_cordon_is_not_carried_past_the_uncordon_by_a_kube_state_metrics_outage(tmp_path: Path) -> None:
    """Review obsreview38 D-1 (repro /work/wt/or38-repro/test_cordon_known_last.py::test_r1): the known cordon's carry
    read its own samples through a range, which skips the stale marker of the uncordon. gpu-003 is re-cordoned while
    kube-state-metrics is away for 18 minutes (12-29m), and XID 79 comes 2 minutes into the cordon seen at 30m (the
    XID the cordon is for); it is uncordoned repaired at 60m. A: no earlier cordon (the look-alike of the test above,
    C). B: an earlier cordon at 2-10m, uncordoned before the outage: it must not come back and hide the new cordon's
    start. Both quiet."""
    rp, _rule, window, gpu, _key = _xid_79_on_gpu_003()
    minutes = 90

    def group(changes: dict[range, str]) -> dict[str, Any]:
        gap = {range(12, 30): "stale"}
        inputs = [
            {"series": series(XID_COUNT_METRIC, gpu | window | {"xid": "79"}), "values": "_x32 1x4 stale"},
            {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": _per_minute(minutes, "0", gap | changes)},
            {"series": 'kube_node_created{node="gpu-003"}', "values": _per_minute(minutes, "-86400", gap)},
            {"series": 'node_boot_time_seconds{node="gpu-003"}', "values": f"-86400x{minutes}"},
        ]
        return {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "65m", "alertname": "GPUCriticalXid", "exp_alerts": []},
            {"eval_time": "80m", "alertname": "GPUCriticalXid", "exp_alerts": []},
        ]}  # fmt: skip

    seen = {range(30, 60): "1"}
    run_promtool(rp, "aws", [group(seen), group({range(2, 10): "1"} | seen)], tmp_path, every="1m")


def _cordon_records(
    minutes: int, cordon: range | set[int], down: range, late: range, *, deployed: int = 0, gap: range = range(0)
) -> dict[str, list[str]]:
    """The samples a real Prometheus writes for the three cordon records, a minute apart: what the rules compute from
    kube_node_spec_unschedulable cordoned in ``cordon`` and unscraped while Prometheus is ``down`` (nothing written
    then, and no stale marker: the restarted rule manager does not know the series it wrote before); ``late``: scraped
    but not evaluated yet (the first evaluation after a restart comes after the first scrape); ``deployed``: the minute
    of the rules' first evaluation; ``gap``: kube-state-metrics stale (scraped, no node's sample)."""
    written: dict[str, list[str]] = {LAST_SEEN_UNCORDONED: [], KNOWN_CORDON_BEFORE: [], LAST_KNOWN_CORDON: []}
    last: dict[str, float] = {}
    before: set[str] = set()
    for m in range(minutes):
        scraped = [n for n in range(max(0, m - 5), m + 1) if n not in down and n not in gap]  # the bridge, ends included
        bridged = (1 if scraped[-1] in cordon else 0) if scraped else None
        a_step_ago = [n for n in range(max(0, m - 6), m) if n not in down and n not in gap]
        now: dict[str, float] = {}
        evaluated = m >= deployed and m not in down and m not in late
        if evaluated:
            if bridged == 0:
                now[LAST_SEEN_UNCORDONED] = last[LAST_SEEN_UNCORDONED] = 60 * m
            carried = last.get(LAST_KNOWN_CORDON)
            if carried is not None and carried > last.get(LAST_SEEN_UNCORDONED, -1):
                now[KNOWN_CORDON_BEFORE] = carried
            elif bridged is not None and not (a_step_ago and a_step_ago[-1] in cordon):
                now[KNOWN_CORDON_BEFORE] = 0
            if bridged == 1 or now.get(KNOWN_CORDON_BEFORE, 0) > 0:
                now[LAST_KNOWN_CORDON] = last[LAST_KNOWN_CORDON] = 60 * m if bridged == 1 else now[KNOWN_CORDON_BEFORE]
        for name, values in written.items():
            values.append(str(now[name]) if name in now else "stale" if evaluated and name in before else "_")
        before = set(now) if evaluated else set() if m in down else before
    return written


@needs_promtool
def test_a_prometheus_down_beyond_the_lookback_does_not_restart_a_cordon(tmp_path: Path) -> None:
    """Review obsreview38 D-2 (repro /work/wt/or38-repro/test_cordon_known_last.py::test_r2): the cordon start read
    the known cordon through `offset 1m`, an instant selector with Prometheus' 5-minute lookback, so after Prometheus
    was down longer than that every cordon in force started anew. gpu-003 is cordoned at 2m, its validation reproduces
    XID 79 at 20m and it is uncordoned unfixed at 50m; Prometheus is down from 30m for 3 minutes (A), 10 (B), 15 (C),
    or 10 with its first evaluation a minute after its first scrape (D): held in all four. promtool cannot stop its own
    evaluation, so the cordon records are inputs with the samples a real Prometheus writes, and their rules are left
    out; the records that read them are the ones under test."""
    rp, rule, window, gpu, key = _xid_79_on_gpu_003()
    minutes = 90
    cordon = range(2, 50)

    def group(down: range, late: range = range(0)) -> dict[str, Any]:
        gone = {down: "_"}
        written = _cordon_records(minutes, cordon, down, late)
        inputs = [
            {"series": series(XID_COUNT_METRIC, gpu | window | {"xid": "79"}), "values": "_x20 1x4 stale"},
            {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": _per_minute(minutes, "0", gone | {cordon: "1"})},
            {"series": 'kube_node_created{node="gpu-003"}', "values": _per_minute(minutes, "-86400", gone)},
            {"series": 'node_boot_time_seconds{node="gpu-003"}', "values": _per_minute(minutes, "-86400", gone)},
            *({"series": f'{name}{{node="gpu-003"}}', "values": " ".join(written[name])} for name in _CORDON_RECORDS),
        ]
        alerts = [expected(rule, key, "0")]
        return {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "45m", "alertname": "GPUCriticalXid", "exp_alerts": []},
            {"eval_time": "55m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
            {"eval_time": "80m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
        ]}  # fmt: skip

    tests = [group(range(30, 33)), group(range(30, 40)), group(range(30, 45)), group(range(30, 40), late=range(40, 41))]
    _run_with_cordon_records_as_inputs(rp, tests, tmp_path)


_CORDON_RECORDS = (LAST_SEEN_UNCORDONED, KNOWN_CORDON_BEFORE, LAST_KNOWN_CORDON)


def _run_with_cordon_records_as_inputs(rp: Any, tests: list[dict[str, Any]], tmp_path: Path) -> None:
    """promtool over the rules without the three cordon records' own rules: the tests feed their samples."""
    groups = needed_rules(rule_groups(rp, "aws"), tests)
    for g in groups:
        g["rules"] = [r for r in g["rules"] if r.get("record") not in _CORDON_RECORDS]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    doc = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(doc))
    result = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_a_cordon_older_than_the_records_does_not_start_at_their_first_evaluation(tmp_path: Path) -> None:
    """The cordon records first evaluated (alicerce upgraded, or Prometheus' data lost) at 30m while gpu-003 has been
    cordoned since 2m: the cordon started at 2m, as the raw bridge says, not at the records' first evaluation. A: XID 79
    reproduced at 20m, uncordoned unfixed at 50m: held. B: XID 79 at 4m, the one the cordon is for, uncordoned
    repaired at 50m: quiet."""
    rp, rule, window, gpu, key = _xid_79_on_gpu_003()
    minutes = 90
    cordon = range(2, 50)

    def group(xid_at: int, held: bool) -> dict[str, Any]:
        written = _cordon_records(minutes, cordon, range(0), range(0), deployed=30)
        inputs = [
            {"series": series(XID_COUNT_METRIC, gpu | window | {"xid": "79"}), "values": f"_x{xid_at} 1x4 stale"},
            {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": _per_minute(minutes, "0", {cordon: "1"})},
            {"series": 'kube_node_created{node="gpu-003"}', "values": f"-86400x{minutes}"},
            {"series": 'node_boot_time_seconds{node="gpu-003"}', "values": f"-86400x{minutes}"},
            *({"series": f'{name}{{node="gpu-003"}}', "values": " ".join(written[name])} for name in _CORDON_RECORDS),
        ]
        alerts = [expected(rule, key, "0")] if held else []
        return {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "45m", "alertname": "GPUCriticalXid", "exp_alerts": []},
            {"eval_time": "55m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
            {"eval_time": "80m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
        ]}  # fmt: skip

    _run_with_cordon_records_as_inputs(rp, [group(20, held=True), group(4, held=False)], tmp_path)


@needs_promtool
def test_the_cordon_records_write_what_the_tests_feed_for_them(tmp_path: Path) -> None:
    """The records the two tests above feed as inputs are the ones the rules write (no gap: each minute a node
    cordoned at 2-10m, uncordoned, away from kube-state-metrics at 12-29m and cordoned again at 30-59m), and at their
    first evaluation (their expression over inputs without their own history) a node cordoned since before has no
    cordon known, not none (0), while a node in service has 0."""
    rp = platform("prod")
    minutes = 70
    cordon = set(range(2, 10)) | set(range(30, 60))
    gap = range(12, 30)
    records = _cordon_records(minutes, cordon, range(0), range(0), gap=gap)
    ksm = _per_minute(minutes, "0", {gap: "stale"} | {range(2, 10): "1", range(30, 60): "1"})
    inputs = [{"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": ksm}]

    def sample(name: str, m: int) -> list[dict[str, Any]]:
        value = records[name][m]
        return [] if value in ("_", "stale") else [{"labels": f'{name}{{node="gpu-003"}}', "value": float(value)}]

    at = (1, 5, 10, 11, 16, 20, 29, 31, 45, 60, 61)
    checks = [{"expr": name, "eval_time": f"{m}m", "exp_samples": sample(name, m)} for name in _CORDON_RECORDS for m in at]
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": inputs, "promql_expr_test": checks}], tmp_path, every="1m")
    known_before = {r["record"]: r["expr"] for g in rule_groups(rp, "aws") for r in g["rules"] if "record" in r}[KNOWN_CORDON_BEFORE]
    first = [
        {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": "1x40"},
        {"series": 'kube_node_spec_unschedulable{node="gpu-004"}', "values": "0x40"},
    ]
    expr = {"expr": known_before, "eval_time": "30m", "exp_samples": [{"labels": '{node="gpu-004"}', "value": 0}]}
    (tmp_path / "first").mkdir()
    _run_with_cordon_records_as_inputs(rp, [{"interval": "1m", "input_series": first, "promql_expr_test": [expr]}], tmp_path / "first")


@needs_promtool
def test_an_xid_reproduced_while_kube_state_metrics_is_away_is_in_the_cordon(tmp_path: Path) -> None:
    """Review obsreview38 D-3 (repro test_r3): an XID started in a cordon was read through the 5-minute bridge alone.
    gpu-003 is cordoned at 2-50m, its validation reproduces XID 79 at 20m and it is uncordoned unfixed at 50m; kube-
    state-metrics is away 2 minutes (A) or 18 minutes (B) around the XID: held in both, as the cordon is known."""
    rp, rule, window, gpu, key = _xid_79_on_gpu_003()
    minutes = 90

    def group(gap: range) -> dict[str, Any]:
        gaps = {gap: "stale"}
        inputs = [
            {"series": series(XID_COUNT_METRIC, gpu | window | {"xid": "79"}), "values": "_x20 1x4 stale"},
            {"series": 'kube_node_spec_unschedulable{node="gpu-003"}', "values": _per_minute(minutes, "0", gaps | {range(2, 50): "1"})},
            {"series": 'kube_node_created{node="gpu-003"}', "values": _per_minute(minutes, "-86400", gaps)},
            {"series": 'node_boot_time_seconds{node="gpu-003"}', "values": f"-86400x{minutes}"},
        ]
        alerts = [expected(rule, key, "0")]
        return {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "55m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
            {"eval_time": "80m", "alertname": "GPUCriticalXid", "exp_alerts": alerts},
        ]}  # fmt: skip

    run_promtool(rp, "aws", [group(range(17, 19)), group(range(12, 30))], tmp_path, every="1m")


def test_the_cordon_records_have_one_writer_each_and_are_written_before_they_are_read() -> None:
    """Each cordon record is written by one rule, in the group that reads it, and read at an instant only after it is
    written in that group's order (each reads the ones before it at the same evaluation); the two that carry a value
    read their own samples only through a range, which ends before this evaluation's."""
    for env, site in (("prod", "aws"), ("prod", "dc1"), ("dev", "aws")):
        groups = rule_groups(platform(env), site)
        writers = [(g["name"], i) for g in groups for i, r in enumerate(g["rules"]) if r.get("record") in _CORDON_RECORDS]
        assert len(writers) == len(_CORDON_RECORDS), (env, site, writers)
        assert len({name for name, _ in writers}) == 1, writers
        group = next(g for g in groups if g["name"] == writers[0][0])
        order = [r.get("record") for r in group["rules"]]
        assert order[: len(_CORDON_RECORDS)] == list(_CORDON_RECORDS), order
        for g in groups:
            for i, rule in enumerate(g["rules"]):
                for name in _CORDON_RECORDS:
                    instant = re.sub(rf"last_over_time\({re.escape(name)}\[[^]]+\]\)", "", rule["expr"])
                    if re.search(rf"{re.escape(name)}(?![\w:])", instant):
                        assert g is group and i > order.index(name), (env, site, rule.get("record") or rule.get("alert"), name)
