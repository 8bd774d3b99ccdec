"""Storage per tier on-prem (issue 24 item 1): the KPIs and alerts over the counters node_monitoring writes, run by
promtool with series as the node exporter serves them (textfile collector, scraped with the node label)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alicerce.emit.kube.monitoring import rule_groups
from alicerce.emit.kube.operators import monitoring_values
from alicerce.emit.storage_counters import TEXTFILE_DIRECTORY
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT
from tests.emit.kube.test_diagnoses import NODE, OTHER, POOL, STEPS, check, cordoned, gpus, io, node_labels
from tests.emit.kube.test_kpi import rounded
from tests.emit.kube.test_monitoring import expected, needs_promtool, platform, rules_of, run_promtool

REPAIRED = "gpu-003.dc1.acme.example"  # a third node of the pool, cordoned

LUSTRE = 'tier="dc1-lustre",mountpoint="/lustre",fstype="lustre"'
# where the cluster's node exporter finds the host's file (through the chart's /host/root mount)
FILE = f"/host/root{TEXTFILE_DIRECTORY}/alicerce_storage.prom"


def scraped(node: str, metric: str, labels: str, values: str) -> dict[str, str]:
    return {"series": f'{metric}{{job="node-exporter",instance="{node}:9100",node="{node}",{labels}}}', "values": values}


def test_the_cluster_node_exporter_reads_the_host_s_counters_and_keeps_the_chart_s_own_arguments() -> None:
    rp = platform()
    exporter = monitoring_values(rp, rp.site("dc1"))["prometheus-node-exporter"]
    assert exporter["hostRootFsMount"] == {"enabled": True}
    assert exporter["extraArgs"][-1] == f"--collector.textfile.directory=/host/root{TEXTFILE_DIRECTORY}"
    assert exporter["extraArgs"][0].startswith("--collector.filesystem.mount-points-exclude=")
    # AWS nodes mount no tier themselves (FSx and EFS through CSI drivers): no storage rules there. Its EFA pools' nodes
    # write their ports' counters into the same directory, so the exporter reads it there too (issue 24)
    aws = monitoring_values(rp, rp.site("aws"))["prometheus-node-exporter"]
    assert aws["extraArgs"][-1] == f"--collector.textfile.directory=/host/root{TEXTFILE_DIRECTORY}"
    assert "StorageTierUnreadable" not in rules_of(rp, "aws") and "StorageTierUnreadable" in rules_of(rp, "dc1")


@needs_promtool
def test_tier_throughput_and_operations_per_tier_and_per_pool(tmp_path: Path) -> None:
    """Two nodes of onprem-h100 read the Lustre tier at 1 GB/s and 3 GB/s with 100 and 300 reads/s, and write nothing."""
    inputs: list[dict[str, Any]] = node_labels(NODE, OTHER)
    for node, rate in ((NODE, 1e9), (OTHER, 3e9)):
        inputs += [
            scraped(node, "alicerce_storage_client_read_bytes_total", LUSTRE, f"0+{rate * 60:g}{STEPS}"),
            scraped(node, "alicerce_storage_client_reads_total", LUSTRE, f"0+{rate / 1e7 * 60:g}{STEPS}"),
            scraped(node, "alicerce_storage_client_written_bytes_total", LUSTRE, f"0{STEPS}"),
            scraped(node, "alicerce_storage_client_writes_total", LUSTRE, f"0{STEPS}"),
        ]
    site = 'site="dc1",tier="dc1-lustre"'
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded("tier:storage_client_read_bytes:rate5m", site, 4e9),
        rounded("tier:storage_client_written_bytes:rate5m", site, 0),
        rounded("tier:storage_client_ops:rate5m", site, 400),
        rounded("pool_tier:storage_client_read_bytes:rate5m", f'pool="onprem-h100",{site}', 4e9),
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_a_tier_a_node_cannot_read_alerts_and_a_readable_one_stays_quiet(tmp_path: Path) -> None:
    """A node cordoned for its repair (REPAIRED) does not warn: it is out of service (review obsreview5 G7)."""
    rule = rules_of(platform(), "dc1")["StorageTierUnreadable"]
    inputs = [
        scraped(NODE, "alicerce_storage_client_up", LUSTRE, f"0{STEPS}"),
        scraped(OTHER, "alicerce_storage_client_up", LUSTRE, f"1{STEPS}"),
        scraped(REPAIRED, "alicerce_storage_client_up", LUSTRE, f"0{STEPS}"),
        *cordoned(REPAIRED),
        *cordoned(NODE, value=0),
    ]
    labels = {
        "job": "node-exporter",
        "instance": f"{NODE}:9100",
        "node": NODE,
        "tier": "dc1-lustre",
        "mountpoint": "/lustre",
        "fstype": "lustre",
    }
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "5m", "alertname": "StorageTierUnreadable", "exp_alerts": []},  # not before its 10 minutes
        {"eval_time": "20m", "alertname": "StorageTierUnreadable", "exp_alerts": [expected(rule, labels, "0")]},
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_counters_that_stop_moving_alert_and_fresh_ones_do_not(tmp_path: Path) -> None:
    """A node cordoned for its repair (REPAIRED) does not warn: it is out of service (review obsreview5 G7)."""
    rule = rules_of(platform(), "dc1")["StorageCountersStale"]
    stuck = scraped(NODE, "node_textfile_mtime_seconds", f'file="{FILE}"', f"60{STEPS}")  # written once, a minute in
    repaired = scraped(REPAIRED, "node_textfile_mtime_seconds", f'file="{FILE}"', f"60{STEPS}")
    fresh = scraped(OTHER, "node_textfile_mtime_seconds", f'file="{FILE}"', f"0+60{STEPS}")  # rewritten every scrape
    other = scraped(NODE, "node_textfile_mtime_seconds", 'file="/host/root/var/lib/prometheus/node-exporter/smartmon.prom"', f"0{STEPS}")
    labels = {"job": "node-exporter", "instance": f"{NODE}:9100", "node": NODE, "file": FILE}
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": [stuck, fresh, other, repaired, *cordoned(REPAIRED)],
                                      "alert_rule_test": [
        {"eval_time": "8m", "alertname": "StorageCountersStale", "exp_alerts": []},
        {"eval_time": "30m", "alertname": "StorageCountersStale", "exp_alerts": [expected(rule, labels, "")]},
    ]}], tmp_path)  # fmt: skip


def test_the_storage_alerts_take_overrides_like_any_built_in_one() -> None:
    text = (
        (ROOT / "platform.yaml")
        .read_text()
        .replace("\nmonitoring:\n", "\nmonitoring:\n  alerts:\n    - {alert: StorageTierUnreadable, severity: critical}\n", 1)
    )
    rules = rules_of(validated(load_text(text, "p.yaml"), "prod"), "dc1")
    assert rules["StorageTierUnreadable"]["labels"]["severity"] == "critical"


@needs_promtool
def test_a_raid0_scratch_array_counts_its_disks_once(tmp_path: Path) -> None:
    """Review DEFECT 7: 8 GB/s read through md127, a RAID0 over eight NVMe disks (1 GB/s each), and an LVM volume over a
    ninth disk; the node reads 8.5 GB/s from its disks, not 17, and does 8,500 reads/s."""
    disks = [(f"nvme{i}n1", 1e9) for i in range(8)] + [("md127", 8e9), ("sda", 5e8), ("dm-0", 5e8)]
    inputs: list[dict[str, Any]] = node_labels(NODE)
    for device, rate in disks:
        inputs += [
            scraped(NODE, "node_disk_read_bytes_total", f'device="{device}"', f"0+{rate * 60:g}{STEPS}"),
            scraped(NODE, "node_disk_reads_completed_total", f'device="{device}"', f"0+{rate / 1e6 * 60:g}{STEPS}"),
            scraped(NODE, "node_disk_written_bytes_total", f'device="{device}"', f"0{STEPS}"),
            scraped(NODE, "node_disk_writes_completed_total", f'device="{device}"', f"0{STEPS}"),
        ]
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded("node:disk_read_bytes:rate5m / 1e6", f'node="{NODE}",site="dc1"', 8500),  # MB/s
        rounded("node:disk_iops:rate5m", f'node="{NODE}",site="dc1"', 8500),
        rounded("pool:disk_read_bytes:rate5m / 1e6", 'pool="onprem-h100",site="dc1"', 8500),
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_a_node_that_never_wrote_its_counters_alerts_and_one_that_did_stays_quiet(tmp_path: Path) -> None:
    """storreview: a collector failing from its first run leaves no series for StorageTierUnreadable or
    StorageCountersStale to fire on."""
    rule = rules_of(platform(), "dc1")["StorageCountersMissing"]
    # NODE's exporter answers without the counters: it alerts. DOWN's exporter is down altogether, which is
    # NodeExporterAbsent's (obsreview3 DEFECT B: this one sent the operator to the timer); REPAIR is cordoned for repair
    # (DEFECT A): both stay quiet here
    down, repair = "gpu-003.dc1.acme.example", "gpu-004.dc1.acme.example"
    inputs = [*node_labels(NODE, OTHER, down, repair), *io(NODE, 0.1, 1e6, 1e6), *io(repair, 0.1, 1e6, 1e6),
              *cordoned(repair), scraped(OTHER, "alicerce_storage_client_up", LUSTRE, f"1{STEPS}")]  # fmt: skip
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "20m", "alertname": "StorageCountersMissing", "exp_alerts": []},  # a node still joining
        {"eval_time": "45m", "alertname": "StorageCountersMissing", "exp_alerts": [
            expected(rule, {"node": NODE, "pool": "onprem-h100"}, "")]},
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_nccl_traffic_on_the_fabric_is_not_storage_where_the_clients_count_their_mounts(tmp_path: Path) -> None:
    """Review obsreview3 DEFECT E: node:storage_read_bytes summed the InfiniBand ports and NICs, which carry NCCL's
    collectives: 8 rails at 5 GB/s each way read as 40 GB/s of storage on a node that reads nothing, on the pool panel
    and in GPUInputBound's read-versus-write test. At dc1 every shared file system's client counts its mounts (Lustre,
    NFS): storage is the local disks plus those counters, and the AWS site (FSx and EFS through CSI drivers, uncounted)
    keeps the approximation."""
    from tests.emit.kube.test_diagnoses import node_counter

    inputs: list[dict[str, Any]] = node_labels(NODE)
    for rail in range(8):
        port = f',device="mlx5_{rail}",port="1"'
        inputs += [node_counter(NODE, f"node_infiniband_port_data_{d}_bytes_total", 5e9, port) for d in ("received", "transmitted")]
    inputs += [node_counter(NODE, "node_pressure_io_waiting_seconds_total", 0.01)]
    inputs += [scraped(NODE, f"alicerce_storage_client_{c}_bytes_total", LUSTRE, f"0{STEPS}") for c in ("read", "written")]
    inputs += [
        scraped(NODE, "alicerce_storage_client_read_bytes_total", 'tier="home",mountpoint="/home",fstype="nfs4"', f"0+{2e8 * 60:g}{STEPS}")
    ]
    pool = 'pool="onprem-h100",site="dc1"'
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded("pool:storage_read_bytes:rate5m", pool, 2e8),
        rounded("pool:storage_write_bytes:rate5m", pool, 0),
        rounded("pool:infiniband_receive_bytes:rate5m", pool, 4e10),
    ]}], tmp_path)  # fmt: skip
    assert "node:storage_client_read_bytes:rate5m" not in {r.get("record") for g in rule_groups(platform(), "aws") for r in g["rules"]}


def waits(node: str, metadata: float, data: float, operations: float = 0) -> list[dict[str, str]]:
    """The Lustre client's timings on a node: seconds its metadata and data calls took per second, and metadata calls
    per second."""
    return [
        scraped(node, "alicerce_storage_client_metadata_wait_seconds_total", LUSTRE, f"0+{metadata * 60:g}{STEPS}"),
        scraped(node, "alicerce_storage_client_data_wait_seconds_total", LUSTRE, f"0+{data * 60:g}{STEPS}"),
        scraped(node, "alicerce_storage_client_metadata_operations_total", LUSTRE, f"0+{operations * 60:g}{STEPS}"),
    ]


@needs_promtool
def test_input_bound_fires_on_idle_gpus_waiting_on_metadata(tmp_path: Path) -> None:
    """Review obsreview21 F11: a loader opening and stat-ing millions of small files on Lustre idles the GPUs with no
    IO pressure (a metadata RPC sleeps outside io_schedule()). The client times its calls: here they wait 6 s per
    second on metadata (six in flight at every moment) and 0.5 s on reads."""
    rule = rules_of(platform(), "dc1")["GPUInputBound"]
    idle = node_labels(NODE) + gpus(NODE, "DCGM_FI_DEV_GPU_UTIL", 20) + io(NODE, 0.0, 5e7, 1e6)
    check("GPUInputBound", idle + waits(NODE, 6, 0.5), "40m", [expected(rule, POOL, "")], tmp_path / "a")
    # near misses: busy GPUs with the same waits; calls waiting longer on data than on metadata (a data stall, which IO
    # pressure reports); under one metadata call in flight on average
    busy = node_labels(NODE) + gpus(NODE, "DCGM_FI_DEV_GPU_UTIL", 85) + io(NODE, 0.0, 5e7, 1e6)
    check("GPUInputBound", busy + waits(NODE, 6, 0.5), "40m", [], tmp_path / "b")
    check("GPUInputBound", idle + waits(NODE, 6, 9), "40m", [], tmp_path / "c")
    check("GPUInputBound", idle + waits(NODE, 0.5, 0.1), "40m", [], tmp_path / "d")


@needs_promtool
def test_metadata_waits_per_node_and_metadata_operations_per_tier(tmp_path: Path) -> None:
    inputs = node_labels(NODE, OTHER) + waits(NODE, 6, 0.5, 2000) + waits(OTHER, 1, 3, 500)
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded(f'node:storage_client_metadata_wait_seconds:rate5m{{node="{NODE}"}}', f'node="{NODE}",site="dc1"', 6),
        rounded(f'node:storage_client_data_wait_seconds:rate5m{{node="{OTHER}"}}', f'node="{OTHER}",site="dc1"', 3),
        rounded("tier:storage_metadata_ops:rate5m", 'site="dc1",tier="dc1-lustre"', 2500),
    ]}], tmp_path)  # fmt: skip


def lustre_bytes(node: str, read: float, written: float) -> list[dict[str, str]]:
    """What the Lustre client moved per second on a node, read and written."""
    return [
        scraped(node, "alicerce_storage_client_read_bytes_total", LUSTRE, f"0+{read * 60:g}{STEPS}"),
        scraped(node, "alicerce_storage_client_written_bytes_total", LUSTRE, f"0+{written * 60:g}{STEPS}"),
    ]


@needs_promtool
def test_checkpoint_stall_on_lustre_fires_on_the_client_s_data_waits_without_io_pressure(tmp_path: Path) -> None:
    """Review obsreview27 G6: a checkpoint stalled on Lustre (a writer waiting for its OSC's grant or dirty cache in
    osc_enter_cache, an fsync in cl_sync_io_wait: neither io_schedule()) shows a few per cent of IO pressure. GPUs
    trained at 90 % for 20 minutes, then sit at 2 % while the node writes 4 GB/s to Lustre, its read, write and fsync
    calls 8 s per second (eight in flight at every moment), PSI io 2 %: the stall fires on the client's timings."""
    rule = rules_of(platform(), "dc1")["TrainingCheckpointStall"]
    assert "node:storage_client_data_wait_seconds:rate5m >= 1" in rule["expr"]
    dropped = node_labels(NODE) + gpus(NODE, "DCGM_FI_DEV_GPU_UTIL", 2, values="90x19 2x40") + io(NODE, 0.02, 0, 0)
    writing = dropped + lustre_bytes(NODE, 0, 4e9)
    check("TrainingCheckpointStall", writing + waits(NODE, 0, 8), "35m", [expected(rule, POOL, "")], tmp_path / "a")
    # near misses: under one data call in flight on average (the writes flow); the same waits on reads (an O_DIRECT or
    # GPUDirect Storage loader's input stall, not a checkpoint); GPUs still computing (an asynchronous checkpoint)
    check("TrainingCheckpointStall", writing + waits(NODE, 0, 0.5), "35m", [], tmp_path / "b")
    reading = dropped + lustre_bytes(NODE, 4e9, 1e6)
    check("TrainingCheckpointStall", reading + waits(NODE, 0, 8), "35m", [], tmp_path / "c")
    busy = node_labels(NODE) + gpus(NODE, "DCGM_FI_DEV_GPU_UTIL", 90) + io(NODE, 0.02, 0, 0) + lustre_bytes(NODE, 0, 4e9)
    check("TrainingCheckpointStall", busy + waits(NODE, 0, 8), "35m", [], tmp_path / "d")


def test_the_checkpoint_stall_runbook_says_what_fsx_cannot_show() -> None:
    """FSx for Lustre (the AWS site's checkpoint tier, through its CSI driver) has no per-node timings: the stall reads
    IO pressure alone there, and its runbook says a Lustre write stall may not show."""
    rules = rules_of(platform(), "aws")["TrainingCheckpointStall"]
    assert "storage_client_data_wait" not in rules["expr"]
    assert "FSx for Lustre" in rules["annotations"]["description"]
