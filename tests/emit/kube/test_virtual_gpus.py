"""Review obsreview21 F3: with KUBERNETES_VIRTUAL_GPUS on (alicerce sets it cluster-wide as soon as one pool
time-slices: aws's infer-l4) dcgm-exporter 4.5.3-4.8.2 sends every held GPU's DCGM_FI_DEV_GPU_UTIL twice: the device's
own series (no pod) and one copy per holder built from NVML's per-process samples mapped to pods through
/proc/<host pid>/cgroup (internal/pkg/transformation/kubernetes.go Process, pidmapper.go, process_metrics.go), "0"
where it maps no process (an exporter without the host's PIDs maps none). These tests feed that shape for a p5
training pod: on a GPU a pod holds alone its use is the device's, whatever its copy says."""

from __future__ import annotations

from pathlib import Path

from tests.emit.kube.scrape import dcgm_series, series
from tests.emit.kube.test_diagnoses import node_counter
from tests.emit.kube.test_monitoring import dcgm_scraped, expected, needs_promtool, platform, rules_of, run_promtool

NODE = "ip-10-20-1-1.ec2.internal"
P5 = 'label_alicerce_dev_pool="train-p5",label_alicerce_dev_accelerator="H100-SXM5-80GB"'
TRAIN = {"namespace": "research", "pod": "train-0"}


def p5_gpus(device: int, copy: int, minutes: int = 90) -> list[dict[str, str]]:
    """The 8 GPUs of a p5 held by research/train-0 as the exporter sends them in per-process mode: the device series
    (no pod) at ``device`` %, the holder's copy (pod_uid) at ``copy`` % (0: no process of the pod mapped)."""
    rp = platform()
    out = []
    for gpu in range(8):
        dev = dcgm_scraped(rp, "aws", dcgm_series(NODE, gpu))
        held = {**dcgm_scraped(rp, "aws", dcgm_series(NODE, gpu, ("train-0", "research", "trainer"))), "pod_uid": "uid-train-0"}
        out += [{"series": series("DCGM_FI_DEV_GPU_UTIL", dev), "values": f"{device}x{minutes}"},
                {"series": series("DCGM_FI_DEV_GPU_UTIL", held), "values": f"{copy}x{minutes}"}]  # fmt: skip
    return out


def node() -> list[dict[str, str]]:
    return [{"series": f'kube_node_labels{{node="{NODE}",{P5}}}', "values": "1x90"}]


@needs_promtool
def test_a_busy_training_pod_whose_copy_reads_zero_is_not_idle(tmp_path: Path) -> None:
    """8 GPUs 95 % busy, the holder's copies 0 (no hostPID): no GPUIdleWhileAllocated, and the pod's KPI reads 0.95."""
    tests = [{"interval": "1m", "input_series": [*node(), *p5_gpus(95, 0)],
              "alert_rule_test": [{"eval_time": "80m", "alertname": "GPUIdleWhileAllocated", "exp_alerts": []}],
              "promql_expr_test": [{"expr": 'count(gpu:dcgm_utilization:ratio{pod="train-0"} == 0.95)', "eval_time": "10m",
                                    "exp_samples": [{"labels": "{}", "value": 8}]}]}]  # fmt: skip
    run_promtool(platform(), "aws", tests, tmp_path)


@needs_promtool
def test_an_idle_training_pod_still_reads_idle(tmp_path: Path) -> None:
    """The same pod with its GPUs idle (device series 0): GPUIdleWhileAllocated fires."""
    rp = platform()
    rule = rules_of(rp, "aws")["GPUIdleWhileAllocated"]
    tests = [{"interval": "1m", "input_series": [*node(), *p5_gpus(0, 0)],
              "alert_rule_test": [{"eval_time": "80m", "alertname": "GPUIdleWhileAllocated",
                                   "exp_alerts": [expected(rule, TRAIN, "8")]}]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_a_busy_training_pod_reading_data_is_not_input_bound(tmp_path: Path) -> None:
    """GPUs 95 % busy (copies 0) while the node reads 2 GB/s under IO pressure 0.3 (a prefetching loader): quiet."""
    io = [node_counter(NODE, "node_pressure_io_waiting_seconds_total", 0.3),
          node_counter(NODE, "node_network_receive_bytes_total", 2e9, ',device="ens32"'),
          node_counter(NODE, "node_network_transmit_bytes_total", 1e7, ',device="ens32"')]  # fmt: skip
    for s in io:
        s["values"] = s["values"].replace("x60", "x90")
    tests = [{"interval": "1m", "input_series": [*node(), *p5_gpus(95, 0), *io],
              "alert_rule_test": [{"eval_time": "40m", "alertname": "GPUInputBound", "exp_alerts": []}]}]  # fmt: skip
    run_promtool(platform(), "aws", tests, tmp_path)
