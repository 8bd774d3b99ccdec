"""Alert and SLO rules: promtool accepts them, and promtool's rule unit tests prove they fire on
the faults they are for (and stay quiet otherwise)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.catalog.alerts import STATIC_ALERTS
from alicerce.emit.kube.monitoring import monitoring_objects, rule_groups
from alicerce.emit.kube.objects import cluster_objects, crd_owner
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file, load_text
from tests.conftest import ROOT

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None and os.environ.get("CI") != "true", reason="promtool missing (apt-get install prometheus; make test installs it)"
)


def platform(env: str = "prod") -> ResolvedPlatform:
    return validated(load_file(ROOT / "platform.yaml", "platform.yaml"), env)


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None, "promtool is required under CI"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, check=False)


def rules_of(rp: ResolvedPlatform, site: str) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in rule_groups(rp, site) for r in g["rules"] if "alert" in r}


def render(template: str, labels: dict[str, str], value: str) -> str:
    """Expand the two template forms the rules use, as Prometheus would."""
    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    return out.replace("{{ $value }}", value)


def expected(rule: dict[str, Any], series_labels: dict[str, str], value: str) -> dict[str, Any]:
    return {
        "exp_labels": {**series_labels, **rule["labels"]},
        "exp_annotations": {k: render(v, series_labels, value) for k, v in rule["annotations"].items()},
    }


@needs_promtool
@pytest.mark.parametrize(("env", "site"), [("prod", "aws"), ("prod", "dc1"), ("dev", "aws")])
def test_promtool_accepts_the_rules(env: str, site: str, tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups(platform(env), site)}))
    result = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_rules_fire_on_their_faults_and_not_otherwise(tmp_path: Path) -> None:
    rp = platform("prod")
    rules = rules_of(rp, "dc1")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups(rp, "dc1")}))
    gpu = {"Hostname": "gpu-001", "UUID": "GPU-1", "gpu": "0"}
    node = {"node": "gpu-001.dc1.acme.example"}
    tests = [
        {  # XID 79 (fell off the bus) pages at once; the generic XID alert waits 5 minutes
            "interval": "1m",
            "input_series": [{"series": 'DCGM_FI_DEV_XID_ERRORS{Hostname="gpu-001",UUID="GPU-1",gpu="0"}', "values": "0 0 79 79 79"}],
            "alert_rule_test": [
                {"eval_time": "1m", "alertname": "GPUCriticalXid", "exp_alerts": []},
                {"eval_time": "2m", "alertname": "GPUCriticalXid", "exp_alerts": [expected(rules["GPUCriticalXid"], gpu, "79")]},
                {"eval_time": "4m", "alertname": "GPUXidError", "exp_alerts": []},
            ],
        },
        {  # 90 C for 10 minutes alerts; 80 C never does
            "interval": "1m",
            "input_series": [
                {"series": 'DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-001",UUID="GPU-1",gpu="0"}', "values": "90x15"},
                {"series": 'DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-002",UUID="GPU-2",gpu="0"}', "values": "80x15"},
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "GPUTemperatureHigh", "exp_alerts": []},
                {
                    "eval_time": "12m",
                    "alertname": "GPUTemperatureHigh",
                    "exp_alerts": [expected(rules["GPUTemperatureHigh"], {"Hostname": "gpu-001", "gpu": "0"}, "90")],
                },
            ],
        },
        {  # an H100 node of onprem-h100 that shows 7 of its 8 GPUs
            "interval": "1m",
            "input_series": [
                {"series": 'kube_node_status_capacity{node="gpu-001.dc1.acme.example",resource="nvidia_com_gpu"}', "values": "7x20"},
                {"series": 'kube_node_labels{node="gpu-001.dc1.acme.example",label_alicerce_dev_pool="onprem-h100"}', "values": "1x20"},
                {"series": 'kube_node_status_capacity{node="gpu-002.dc1.acme.example",resource="nvidia_com_gpu"}', "values": "8x20"},
                {"series": 'kube_node_labels{node="gpu-002.dc1.acme.example",label_alicerce_dev_pool="onprem-h100"}', "values": "1x20"},
            ],
            "alert_rule_test": [
                {
                    "eval_time": "20m",
                    "alertname": "GPUsMissingOnpremH100",
                    "exp_alerts": [expected(rules["GPUsMissingOnpremH100"], node, "7")],
                },
            ],
        },
        {  # chat-70b's p99 time to first token drifts to ~1 s against its 800 ms SLO
            "interval": "1m",
            "input_series": [
                {"series": 'vllm:time_to_first_token_seconds_bucket{namespace="serving",le="0.5"}', "values": "0+1x30"},
                {"series": 'vllm:time_to_first_token_seconds_bucket{namespace="serving",le="1"}', "values": "0+10x30"},
                {"series": 'vllm:time_to_first_token_seconds_bucket{namespace="serving",le="+Inf"}', "values": "0+10x30"},
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "SLOChatLatency", "exp_alerts": []},
                {"eval_time": "20m", "alertname": "SLOChatLatency", "exp_alerts": [expected(rules["SLOChatLatency"], {}, "")]},
            ],
        },
    ]
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}))
    result = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_gpu_pool_gets_a_missing_gpu_alert_with_its_count() -> None:
    rp = platform("prod")
    rules = rules_of(rp, "dc1")
    assert rules["GPUsMissingOnpremH100"]["expr"].endswith("< 8")
    assert set(STATIC_ALERTS) <= set(rules_of(rp, "aws"))
    assert "GPUsMissingInferL4" in rules_of(rp, "aws") and "GPUsMissingOnpremH100" not in rules_of(rp, "aws")


def test_overrides_drop_or_retune_alerts() -> None:
    text = (
        (ROOT / "platform.yaml")
        .read_text()
        .replace(
            "monitoring:\n  retention: 30d\n",
            "monitoring:\n  retention: 30d\n  alerts:\n    - {alert: GPUIdleWhileAllocated, enabled: false}\n"
            "    - {alert: GPUTemperatureHigh, severity: critical, for: 20m}\n",
            1,
        )
    )
    rules = rules_of(validated(load_text(text, "p.yaml"), "prod"), "aws")
    assert "GPUIdleWhileAllocated" not in rules
    assert rules["GPUTemperatureHigh"]["labels"]["severity"] == "critical"
    assert rules["GPUTemperatureHigh"]["for"] == "1200s"


def test_monitoring_objects_join_the_cluster_objects_after_the_monitoring_chart() -> None:
    rp = platform("prod")
    objs = [o for o in cluster_objects(rp, "aws") if o["metadata"]["name"].startswith("alicerce-gpu-platform")]
    assert [o["kind"] for o in objs] == ["ConfigMap", "PrometheusRule"]
    assert {crd_owner(o) for o in objs} == {"kube-prometheus-stack"}
    assert objs == sorted(monitoring_objects(rp, "aws"), key=lambda o: o["kind"])
