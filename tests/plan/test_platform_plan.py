"""The platform plan of the reference spec: placement, pools, storage, findings and the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from alicerce.plan.platform import plan_platform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT

REFERENCE = load_file(ROOT / "platform.yaml", "platform.yaml")
ISSUE_KEYS = {
    "name", "kind", "accelerator", "gpus", "minGpus", "modelStateGib", "memoryPerGpuGib", "gpuHours", "wallClockDays",
    "costUsd", "checkpointGib", "checkpointWriteGbps", "datasetReadGbps", "networkGbpsPerGpu", "rdmaRequired",
    "replicas", "tokensPerSecondPerReplica",
}  # fmt: skip


def test_reference_prod_plan() -> None:
    plan = plan_platform(validated(REFERENCE, "prod"))
    by_name = {w.name: w for w in plan.workloads}
    assert by_name["llm-pretrain"].pool == "onprem-h100"
    assert by_name["llm-pretrain"].wall_clock_days is not None and by_name["llm-pretrain"].wall_clock_days <= 60
    assert by_name["chat-70b"].pool == "infer-l40s"
    assert by_name["tokenize-corpus"].cpu_cores is not None
    errors = {f.subject: f.message for f in plan.findings if f.severity == "error"}
    assert errors == {"chat-70b": "needs 9 replicas (36 GPUs) at peak; pool infer-l40s has 32 at max 8 nodes; 9 nodes are needed"}


def test_too_small_pool_names_the_days_and_the_nodes_needed() -> None:
    text = (ROOT / "platform.yaml").read_text().replace("    tokens: 1T\n", "    tokens: 2T\n", 1)
    from alicerce.spec.loader import load_text

    plan = plan_platform(validated(load_text(text, "p.yaml"), "prod"))
    (finding,) = [f for f in plan.findings if f.subject == "llm-pretrain"]
    assert finding.severity == "error"
    assert finding.message.startswith("pool onprem-h100 with max 32 nodes finishes llm-pretrain in ")
    assert "past its 60-day deadline;" in finding.message and finding.message.endswith("nodes are needed")


def test_json_has_the_documented_shape_and_is_deterministic() -> None:
    first = plan_platform(validated(REFERENCE, "prod")).to_json()
    second = plan_platform(validated(load_file(ROOT / "platform.yaml"), "prod")).to_json()
    assert json.dumps(first) == json.dumps(second)
    for workload in first["workloads"]:
        assert set(workload) >= ISSUE_KEYS
    assert {"pools", "findings", "storage", "units"} <= set(first)


def test_cli_plan_json_and_charts(tmp_path: Path) -> None:
    alicerce = Path(sys.executable).with_name("alicerce")
    env = {**os.environ, "COLUMNS": "200"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(alicerce), "plan", *args], cwd=ROOT, capture_output=True, text=True, env=env, check=False)

    result = run("--format", "json", "--env", "dev")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["environment"] == "dev"
    table = run("--explain")
    assert table.returncode == 0 and "Findings" in table.stdout and "6 x active parameters x tokens" in table.stdout
    digests = []
    for attempt in ("a", "b"):
        out = tmp_path / attempt
        assert run("--plot", str(out)).returncode == 0
        files = sorted(out.iterdir())
        assert [f.name for f in files] == sorted(
            f"{name}.{ext}" for name in ("cost-by-environment", "gpu-hours-by-team", "pool-utilization") for ext in ("png", "svg")
        )
        digests.append([hashlib.sha256(f.read_bytes()).hexdigest() for f in files])
    assert digests[0] == digests[1]
    assert run("--env", "nope").returncode == 2
