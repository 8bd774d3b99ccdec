"""EFA fabric KPIs on AWS (issue 24 item 1): the EFA ports' counters the EFA pools' writer serves through the node
exporter's textfile collector feed the same fabric records as InfiniBand's port counters, and so the pool KPIs, the
fabric dashboard panels and the communication-bound diagnosis; run by promtool with series as they are scraped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alicerce.catalog.alerts import EFA_COUNTERS_FILE
from alicerce.emit.kube.kpi import EFA_ERRORS, EFA_RX, EFA_TX
from alicerce.emit.storage_counters import TEXTFILE_DIRECTORY
from tests.emit.kube.scrape import dcgm_series, series
from tests.emit.kube.test_kpi import rounded
from tests.emit.kube.test_monitoring import dcgm_scraped, expected, needs_promtool, platform, rules_of, run_promtool
from tests.emit.kube.upstream import load
from tests.targets.aws.test_efa_counters import writer

NODE = "ip-10-20-1-1.ec2.internal"
OTHER = "ip-10-20-1-2.ec2.internal"
P5 = 'label_alicerce_dev_pool="train-p5",label_alicerce_dev_accelerator="H100-SXM5-80GB"'
STEPS = "x60"
SITE = 'site="aws"'
FILE = f"/host/root{TEXTFILE_DIRECTORY}/{EFA_COUNTERS_FILE}"


def scraped(node: str, metric: str, labels: str, values: str) -> dict[str, str]:
    """A series of the node's node exporter pod (textfile collector for the EFA counters), with the node label it adds."""
    return {"series": f'{metric}{{job="node-exporter",instance="{node}:9100",node="{node}"{labels}}}', "values": values}


def grows(node: str, metric: str, per_second: float, device: str = "rdmap0s31") -> dict[str, str]:
    return scraped(node, metric, f',device="{device}",port="1"', f"0+{per_second * 60:g}{STEPS}")


def nodes(*names: str) -> list[dict[str, str]]:
    return [{"series": f'kube_node_labels{{node="{n}",{P5}}}', "values": f"1{STEPS}"} for n in names]


def answers(node: str) -> dict[str, str]:
    """The node exporter answers (its pressure collector, which every node has)."""
    assert "node_pressure_io_waiting_seconds_total" in load("node-exporter", "v1.12.1", "metrics.json")
    return scraped(node, "node_pressure_io_waiting_seconds_total", "", f"0{STEPS}")


def test_the_records_read_what_the_writer_writes_and_the_site_reads_its_textfiles() -> None:
    # what the records read, and nothing more: each series is 32 per p5 node (review obsreview20 F8)
    assert set(writer().METRICS) == {EFA_RX, EFA_TX, *EFA_ERRORS}
    assert EFA_COUNTERS_FILE == writer().FILE_NAME  # the staleness alert names the writer's file
    rp = platform()
    assert {p.name: p.rdma.traffic_counters for p in rp.site("aws").pools if p.rdma is not None} == {"train-p5": True}
    # an on-prem site without EFA keeps its fabric records as they were: no EFA terms
    assert EFA_RX not in str(rules_of(rp, "dc1")) and "EfaCountersMissing" not in rules_of(rp, "dc1")


@needs_promtool
def test_efa_traffic_and_errors_per_node_and_pool(tmp_path: Path) -> None:
    """Two p5 nodes: node 1 sends 10 GB/s through each of two EFA ports and receives 5 GB/s on one, with 2 drops/s,
    1 RDMA write error/s and 1 impaired remote connection/s; node 2 runs an older efa driver that keeps no RDMA write,
    retransmit or impaired-connection counters, sends 1 GB/s and drops nothing. The older driver's node still has its
    error KPI (0), not none."""
    inputs: list[dict[str, Any]] = [
        *nodes(NODE, OTHER),
        grows(NODE, EFA_TX, 10e9), grows(NODE, EFA_TX, 10e9, "rdmap1s31"), grows(NODE, EFA_RX, 5e9),
        grows(NODE, "alicerce_efa_receive_drops_total", 2), grows(NODE, "alicerce_efa_rdma_read_errors_total", 0),
        grows(NODE, "alicerce_efa_rdma_write_errors_total", 1), grows(NODE, "alicerce_efa_retransmit_timeouts_total", 0),
        grows(NODE, "alicerce_efa_impaired_remote_connections_total", 1),
        grows(OTHER, EFA_TX, 1e9), grows(OTHER, EFA_RX, 0), grows(OTHER, "alicerce_efa_receive_drops_total", 0),
        grows(OTHER, "alicerce_efa_rdma_read_errors_total", 0),
        # the node exporter's infiniband collector reports each EFA port's rate (100 Gb/s = 12.5 GB/s)
        scraped(NODE, "node_infiniband_rate_bytes_per_second", ',device="rdmap0s31",port="1"', f"12500000000{STEPS}"),
        scraped(NODE, "node_infiniband_rate_bytes_per_second", ',device="rdmap1s31",port="1"', f"12500000000{STEPS}"),
    ]  # fmt: skip
    pool = f'pool="train-p5",{SITE}'
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded(f'node:infiniband_transmit_bytes:rate5m{{node="{NODE}"}} / 1e9', f'node="{NODE}",{SITE}', 20),
        rounded(f'node:infiniband_receive_bytes:rate5m{{node="{NODE}"}} / 1e9', f'node="{NODE}",{SITE}', 5),
        rounded(f'node:infiniband_errors:rate5m{{node="{NODE}"}}', f'node="{NODE}",{SITE}', 4),
        rounded(f'node:infiniband_errors:rate5m{{node="{OTHER}"}}', f'node="{OTHER}",{SITE}', 0),
        rounded("node:infiniband_link_utilization:ratio", f'node="{NODE}",{SITE}', 0.8),
        rounded("pool:infiniband_transmit_bytes:rate5m / 1e9", pool, 21),
        rounded("pool:infiniband_errors:rate5m", pool, 4),
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_communication_bound_fires_on_an_efa_pool(tmp_path: Path) -> None:
    rp = platform()
    rule = rules_of(rp, "aws")["GPUCommunicationBound"]
    assert 'pool=~"train-p5"' in rule["expr"]

    def state(tensor: float, link: float, at: Path) -> None:
        inputs: list[dict[str, Any]] = [
            *nodes(NODE),
            scraped(NODE, "node_infiniband_rate_bytes_per_second", ',device="rdmap0s31",port="1"', f"12500000000{STEPS}"),
            grows(NODE, EFA_TX, link * 12.5e9),
        ]
        for metric, value in (("DCGM_FI_DEV_GPU_UTIL", 95), ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", tensor)):
            for gpu in range(2):
                labels = dcgm_scraped(rp, "aws", dcgm_series(NODE, gpu, ("train-0", "research", "trainer")))
                inputs.append({"series": series(metric, labels), "values": f"{value:g}{STEPS}"})
        at.mkdir()
        fired = [expected(rule, {"node": NODE, "pool": "train-p5", "namespace": "research"}, "")] if tensor < 0.15 and link > 0.6 else []
        run_promtool(rp, "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "45m", "alertname": "GPUCommunicationBound", "exp_alerts": fired}]}], at)  # fmt: skip

    state(0.05, 0.8, tmp_path / "a")  # idle tensor cores, a saturated EFA port: communication-bound
    state(0.05, 0.1, tmp_path / "b")  # a quiet fabric: not communication


@needs_promtool
def test_a_node_of_an_efa_pool_without_efa_counters_alerts(tmp_path: Path) -> None:
    """Node 1's exporter answers and serves no EFA counter (the writer failed, or the efa driver is not loaded); node 2
    serves them. A node whose exporter is down is NodeExporterAbsent's, not this alert's."""
    rule = rules_of(platform(), "aws")["EfaCountersMissing"]
    down = "ip-10-20-1-3.ec2.internal"
    inputs = [*nodes(NODE, OTHER, down), answers(NODE), answers(OTHER), grows(OTHER, EFA_RX, 1e9)]
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "10m", "alertname": "EfaCountersMissing", "exp_alerts": []},  # not before its 15 minutes
        {"eval_time": "30m", "alertname": "EfaCountersMissing", "exp_alerts": [expected(rule, {"node": NODE}, "")]},
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_an_efa_node_serving_traffic_but_no_port_rate_alerts(tmp_path: Path) -> None:
    """Review obsreview20 F7: one failing EFA device fails the node exporter's whole infiniband collector, so node 1
    serves no port rate while the writer keeps serving its EFA traffic: its link utilisation (and GPUCommunicationBound)
    is blind. Node 2, a healthy EFA node, serves both; node 3, of a pool without EFA, serves neither and is not this
    alert's; node 4 serves no EFA counter either (EfaCountersMissing's)."""
    rp = platform()
    rule = rules_of(rp, "aws")["EfaLinkRateMissing"]
    assert 'pool=~"train-p5"' in rule["expr"] and rule["for"] == "15m"
    cpu, bare = "ip-10-20-2-1.ec2.internal", "ip-10-20-1-4.ec2.internal"
    rate = f"12500000000{STEPS}"
    inputs: list[dict[str, Any]] = [
        *nodes(NODE, OTHER, bare), answers(NODE), answers(OTHER), answers(bare),
        {"series": f'kube_node_labels{{node="{cpu}",label_alicerce_dev_pool="system"}}', "values": f"1{STEPS}"},
        answers(cpu),
        grows(NODE, EFA_RX, 1e9), grows(OTHER, EFA_RX, 1e9),
        scraped(OTHER, "node_infiniband_rate_bytes_per_second", ',device="rdmap0s31",port="1"', rate),
    ]  # fmt: skip
    link = f'node:infiniband_link_utilization:ratio{{node="{NODE}"}}'
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": inputs,
        "promql_expr_test": [{"expr": link, "eval_time": "30m", "exp_samples": []}],  # what the alert is about
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": "EfaLinkRateMissing", "exp_alerts": []},  # not before its 15 minutes
            {"eval_time": "30m", "alertname": "EfaLinkRateMissing", "exp_alerts": [expected(rule, {"node": NODE}, "")]},
        ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_efa_counters_that_stop_moving_alert_and_fresh_ones_do_not(tmp_path: Path) -> None:
    rule = rules_of(platform(), "aws")["EfaCountersStale"]
    stuck = scraped(NODE, "node_textfile_mtime_seconds", f',file="{FILE}"', f"60{STEPS}")  # written once, a minute in
    fresh = scraped(OTHER, "node_textfile_mtime_seconds", f',file="{FILE}"', f"0+60{STEPS}")  # rewritten every scrape
    labels = {"job": "node-exporter", "instance": f"{NODE}:9100", "node": NODE, "file": FILE}
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": [stuck, fresh], "alert_rule_test": [
        {"eval_time": "8m", "alertname": "EfaCountersStale", "exp_alerts": []},
        {"eval_time": "30m", "alertname": "EfaCountersStale", "exp_alerts": [expected(rule, labels, "")]},
    ]}], tmp_path)  # fmt: skip


def node_io(pressure: float, read: float, write: float, nic_rx: float = 0) -> list[dict[str, str]]:
    """A node's IO pressure, local NVMe reads and writes and ENA NIC traffic, per second."""
    disk, nic = ',device="nvme1n1"', ',device="ens32"'
    return [scraped(NODE, "node_pressure_io_waiting_seconds_total", "", f"0+{pressure * 60:g}{STEPS}"),
            scraped(NODE, "node_disk_read_bytes_total", disk, f"0+{read * 60:g}{STEPS}"),
            scraped(NODE, "node_disk_written_bytes_total", disk, f"0+{write * 60:g}{STEPS}"),
            scraped(NODE, "node_network_receive_bytes_total", nic, f"0+{nic_rx * 60:g}{STEPS}"),
            scraped(NODE, "node_network_transmit_bytes_total", nic, f"0{STEPS}")]  # fmt: skip


@needs_promtool
def test_nccl_over_efa_is_no_storage_io(tmp_path: Path) -> None:
    """Review obsreview20 DEFECT F9: a p5 node all-reducing 20 GB/s each way over EFA and reading its dataset at 1 GB/s
    over the NIC (FSx through its CSI driver) reads 1 GB/s of storage, not 21; its fabric records keep the EFA bytes."""
    inputs: list[dict[str, Any]] = [*nodes(NODE), *node_io(0.0, 0, 0, nic_rx=1e9), grows(NODE, EFA_RX, 20e9), grows(NODE, EFA_TX, 20e9)]
    pool = f'pool="train-p5",{SITE}'
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded("pool:storage_read_bytes:rate5m / 1e9", pool, 1.0),
        rounded("pool:storage_write_bytes:rate5m / 1e9", pool, 0.0),
        rounded("pool:infiniband_receive_bytes:rate5m / 1e9", pool, 20.0),
    ]}], tmp_path)  # fmt: skip


def gpus(values: str) -> list[dict[str, str]]:
    rp = platform()
    scrape = dcgm_scraped(rp, "aws", dcgm_series(NODE, 0, ("train-0", "research", "trainer")))
    return [{"series": series("DCGM_FI_DEV_GPU_UTIL", scrape), "values": values}]


@needs_promtool
def test_a_checkpoint_gathered_over_efa_is_a_checkpoint_stall(tmp_path: Path) -> None:
    """Review obsreview20 DEFECT F9: FSDP's full state dict checkpoint. Every rank sends its shards to rank 0 over EFA
    (its node receives 10 GB/s, sends 1), whose GPUs then idle at 2% while it writes 4 GB/s to local NVMe under IO
    pressure: TrainingCheckpointStall, as without the EFA traffic (tests/emit/kube/test_diagnoses.py), and not
    GPUInputBound, which NCCL's receive side made fire."""
    rp = platform()
    stall = rules_of(rp, "aws")["TrainingCheckpointStall"]
    pattern = [*nodes(NODE), *gpus("90x19 2x40"), *node_io(0.8, 1e7, 4e9), grows(NODE, EFA_RX, 10e9), grows(NODE, EFA_TX, 1e9)]
    labels = {"node": NODE, "pool": "train-p5", "namespace": "research"}
    for name, at, fired, sub in (("GPUInputBound", "40m", [], "a"), ("TrainingCheckpointStall", "35m", [expected(stall, labels, "")], "b")):
        (tmp_path / sub).mkdir()
        run_promtool(rp, "aws", [{"interval": "1m", "input_series": pattern, "alert_rule_test": [
            {"eval_time": at, "alertname": name, "exp_alerts": fired}]}], tmp_path / sub)  # fmt: skip
