"""Review obsreview21 F1: GPUIdleWhileAllocated averaged a pod's GPUs, so a pod holding 8 GPUs and using one (a
single-process script in an 8-GPU request, a launcher that started one rank) was never idle. It counts the pod's idle
GPUs now and fires when half of them or more are idle."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.emit.kube.scrape import dcgm_series, series
from tests.emit.kube.test_monitoring import dcgm_scraped, expected, needs_promtool, platform, rules_of, run_promtool

NODE = 'kube_node_labels{node="gpu-001",label_alicerce_dev_pool="onprem-h100"}'
TRAIN = {"namespace": "research", "pod": "train-0"}


@needs_promtool
@pytest.mark.parametrize(
    ("use", "idle"),
    [
        ([100] + [0] * 7, 7),  # one of 8 used: 7 held for nothing
        ([100] * 8, None),  # all busy
        ([0], 1),  # a 1-GPU notebook left idle
        ([60] * 5 + [0] * 3, None),  # most busy: under half idle
        ([60] * 4 + [0] * 4, 4),  # half idle
    ],
)
def test_a_pod_idle_on_half_its_gpus_or_more_is_reported_with_their_count(use: list[int], idle: int | None, tmp_path: Path) -> None:
    rp = platform("prod")
    rule = rules_of(rp, "dc1")["GPUIdleWhileAllocated"]
    inputs = [{"series": NODE, "values": "1x130"}]
    for gpu, percent in enumerate(use):
        labels = dcgm_scraped(rp, "dc1", dcgm_series("gpu-001", gpu, ("train-0", "research", "trainer")))
        inputs.append({"series": series("DCGM_FI_DEV_GPU_UTIL", labels), "values": f"{percent}x130"})
    fired = [expected(rule, TRAIN, str(idle))] if idle is not None else []
    tests = [{"interval": "1m", "input_series": inputs,
              "alert_rule_test": [{"eval_time": "120m", "alertname": "GPUIdleWhileAllocated", "exp_alerts": fired}]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)
