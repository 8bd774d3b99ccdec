"""The `alicerce` command line as a user runs it: the first tests start the installed script (its entry point,
the validate fast path, exit codes through the interpreter); the rest run it in the test process (conftest.alicerce)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, alicerce


def run(*args: str, cwd: Path = ROOT, process: bool = False) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, process=process)


def test_validate_reference_defaults_to_platform_yaml_and_all_envs() -> None:
    result = run("validate", process=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid (environments: dev, prod)" in result.stderr


def test_validate_json_valid() -> None:
    result = run("validate", "platform.yaml", "--env", "prod", "--format", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout) == {"schemaVersion": 1, "valid": True, "environments": ["prod"], "errors": []}


def test_validate_reports_every_error_located_with_exit_2() -> None:
    result = run("validate", "examples/mistakes.yaml", process=True)
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert [line.split(": error")[0] for line in lines] == [
        "examples/mistakes.yaml:18:18",
        "examples/mistakes.yaml:26:14",
        "examples/mistakes.yaml:28:11",
    ]
    assert "Traceback" not in result.stdout + result.stderr


def test_validate_json_errors_have_the_documented_shape() -> None:
    result = run("validate", "examples/mistakes.yaml", "--format", "json")
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False
    for error in report["errors"]:
        assert {"file", "line", "column", "path", "message", "hint", "rule"} <= set(error)
    assert report["errors"][2]["hint"] == 'did you mean "instanceType"?'


def test_unknown_environment_is_a_user_error() -> None:
    result = run("validate", "--env", "prdo")
    assert result.returncode == 2
    assert 'no environment "prdo" (did you mean "prod"?)' in result.stdout


def test_env_and_all_envs_exclude_each_other() -> None:
    assert run("validate", "--env", "prod", "--all-envs", process=True).returncode == 2


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    result = run("validate", str(tmp_path / "nope.yaml"), process=True)
    assert result.returncode == 2 and "AL000" in result.stdout and "Traceback" not in result.stderr


def test_show_prints_the_resolved_environment() -> None:
    result = run("show", "--env", "prod")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["environment"] == "prod"
    pools = {p["name"]: p for p in data["nodePools"]}
    assert pools["train-p5"]["resolved"]["efaInterfaces"] == 32
    assert run("show", "--env", "prod", "--format", "json").stdout == run("show", "--env", "prod", "--format", "json").stdout


def test_show_invalid_environment_exits_2() -> None:
    assert run("show", "--env", "nope").returncode == 2


def test_schema_prints_the_committed_schema() -> None:
    result = run("schema")
    assert result.returncode == 0
    assert result.stdout == (ROOT / "schema" / "platform.schema.json").read_text()


@pytest.mark.parametrize("section", ["gpus", "instances", "versions"])
def test_catalog_tables_and_json(section: str) -> None:
    table = run("catalog", section)
    assert table.returncode == 0 and table.stdout.strip()
    assert json.loads(run("catalog", section, "--format", "json").stdout)[section]


def test_rules_lists_every_error_id_file_schema_and_cross_field() -> None:
    rules = json.loads(run("rules", "--format", "json").stdout)["rules"]
    stages = {r["stage"] for r in rules}
    assert stages == {"file", "schema", "cross-field"}
    assert sum(r["id"].startswith("AL2") for r in rules) >= 25
    assert {"AL000", "AL014", "AL100", "AL123", "AL212"} <= {r["id"] for r in rules}


def test_init_creates_a_valid_repository(tmp_path: Path) -> None:
    target = tmp_path / "new-platform"
    result = run("init", str(target), "--name", "new-platform")
    assert result.returncode == 0, result.stderr
    files = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    assert {".gitignore", "README.md", "platform.yaml", "schema/platform.schema.json"} <= files
    # a platform repository: Pulumi project, stacks, CI workflows, pre-commit, the generated tree (issue 13)
    assert {"Pulumi.yaml", "__main__.py", "requirements.txt", "stacks/Pulumi.dev.yaml", "stacks/Pulumi.dev-kubernetes.yaml"} <= files
    assert {".github/workflows/alicerce-pr.yml", ".github/workflows/alicerce-deploy.yml", "generated/dev/.alicerce/manifest.json"} <= files
    check = run("validate", "platform.yaml", cwd=target)
    assert check.returncode == 0, check.stdout
    fresh = run(
        "generate", "--check", "--env", "dev", "--out", "generated/dev", "--ci-dir", ".github/workflows", "platform.yaml", cwd=target
    )
    assert fresh.returncode == 0, fresh.stderr
    again = run("init", str(target))
    assert again.returncode == 2 and "already exists" in again.stderr


def test_init_rejects_a_bad_name(tmp_path: Path) -> None:
    result = run("init", str(tmp_path / "x"), "--name", "Bad_Name")
    assert result.returncode == 2 and not (tmp_path / "x").exists()


def test_internal_errors_keep_their_traceback(tmp_path: Path) -> None:
    """A bug is not a user error: exit 1 with the traceback, so it can be reported."""
    script = tmp_path / "boom.py"
    script.write_text(
        "import sys\n"
        "import alicerce.rules.validate as sv\n"
        "def broken(*a, **k):\n    raise RuntimeError('bug')\n"
        "sv.check = broken\n"
        "from alicerce.cli import main\n"
        "sys.argv = ['alicerce', 'validate']\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "RuntimeError" in result.stderr


def test_validate_imports_no_pulumi_ansible_or_cli_framework() -> None:
    """`alicerce validate` must feel instant: the full check loads none of the heavy toolchains."""
    code = (
        "import sys\n"
        "from alicerce.cli.fastpath import serve\n"
        "serve(['validate', 'platform.yaml'])\n"
        "heavy = ('pulumi', 'pulumi_aws', 'pulumi_kubernetes', 'ansible', 'ansible_runner', 'typer', 'matplotlib', 'jinja2')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    env = {**os.environ, "ALICERCE_NO_CACHE": "1"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    assert result.stdout.strip() == "[]", result.stderr


ESCAPE = "\x1b[2J\x1b]0;owned\x07x\ny"  # clear the screen, retitle the terminal, a second line


@pytest.mark.parametrize(
    "args",
    [
        ["rules", ESCAPE],
        ["diff", "--base", ESCAPE, "platform.yaml"],
        ["apply", "onprem", "--env", "prod", "--check", "--secrets", ESCAPE, "platform.yaml"],
        ["generate", "--env", "dev", "--out", "{tmp}/" + ESCAPE, "platform.yaml"],
        ["init", "{tmp}/" + ESCAPE],
    ],
)
def test_no_command_echoes_an_escape_code_it_was_given(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 (8): terminal escape codes were echoed raw in errors. Spec text was escaped already; the command
    line's own values (a rule id, --base, --secrets, --out, init's folder) reached the terminal as they were."""
    from alicerce.cli import build_app
    from alicerce.cli import run as run_in_process

    monkeypatch.chdir(ROOT)
    code = run_in_process(build_app(), [a.replace("{tmp}", str(tmp_path)) for a in args])
    out = capsys.readouterr()
    assert code in (0, 2)
    for text in (out.out, out.err):
        assert "\x1b" not in text and "\x07" not in text, text
    assert "\\x1b[2J" in out.out + out.err


# Mixtral 8x7B's shape, the model of each workload below
LAYOUT_MOE = (
    "{parameters: 46.7B, activeParameters: 12.9B, architecture: moe, layers: 32, hiddenSize: 4096, experts: {total: 8, perToken: 2}}"
)
PLAN_FIELDS_SPEC = """\
apiVersion: alicerce.dev/v1
kind: Platform
metadata: {name: g4, owner: a@example.com, costCenter: CC-0000}
environments:
  prod:
    tier: production
    sites:
      - {name: aws, provider: aws, account: "123456789012", region: us-east-1, zones: [us-east-1a, us-east-1b], vpcCidr: 10.0.0.0/16}
nodePools:
  - {name: system, site: aws, purpose: system, aws: {instanceType: m7i.2xlarge}, scaling: {min: 2, max: 3}}
  - name: train
    site: aws
    purpose: training
    accelerator: "H100-SXM5-80GB:8"
    aws: {instanceType: p5.48xlarge, zone: us-east-1a}
    scaling: {min: 0, max: 512}
    fabric: efa
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
networks:
  fabrics:
    - name: efa
monitoring:
  receivers:
    - {name: oncall, kind: webhook, secret: {name: s, key: url}}
    - {name: heartbeat, kind: webhook, secret: {name: alertmanager-heartbeat, key: url}, heartbeat: true}
tenancy:
  teams:
    - {name: ml, groups: [ml], quotas: [{pool: train, gpus: 4096}]}
workloads:
  - name: late
    kind: training
    team: ml
    pool: train
    model: $MOE
    tokens: 1T
    sequenceLength: 4096
    globalBatchTokens: 4194304
    gpus: 256
    tensorParallel: 2
    expertParallel: 8
    zeroStage: 1
    deadline: 5d
  - name: wide
    kind: training
    team: ml
    pool: train
    model: $MOE
    tokens: 1T
    gpus: 256
    tensorParallel: 1
    expertParallel: 8
    expertTensorParallel: 16
  - name: odd
    kind: training
    team: ml
    pool: train
    model: $MOE
    tokens: 1T
    gpus: 250
    expertParallel: 8
  - name: long
    kind: training
    team: ml
    pool: train
    model: $MOE
    tokens: 1T
    sequenceLength: 1048576
    tensorParallel: 2
""".replace("$MOE", LAYOUT_MOE)


def test_plan_errors_about_a_declared_field_point_at_it(tmp_path: Path) -> None:
    """Review sizreview22 G4 and sizreview23 N1: PL322, PL339 and PL303 on a pinned count named only the workload, where the AL errors of
    the same layouts print file:line:col (CONVENTIONS.md: errors found after schema validation point back to YAML).
    Each now names the field and where it is written, in the text report and in --format json."""
    path = tmp_path / "p.yaml"
    path.write_text(PLAN_FIELDS_SPEC)
    lines = PLAN_FIELDS_SPEC.splitlines()

    def at(workload: str, field: str) -> str:
        start = next(i for i, line in enumerate(lines) if line == f"  - name: {workload}")
        row = next(i for i in range(start, len(lines)) if lines[i].startswith(f"    {field}: "))
        return f"{path}:{row + 1}:{len(field) + 7}"

    result = run("plan", str(path), "--format", "json")
    located = {(f["id"], f["subject"]): (f["path"], f["location"]) for f in json.loads(result.stdout)["findings"]}
    assert located[("PL339", "late")] == ("workloads[0].gpus", at("late", "gpus"))
    assert located[("PL322", "wide")] == ("workloads[1].expertTensorParallel", at("wide", "expertTensorParallel"))
    assert located[("PL303", "odd")] == ("workloads[2].gpus", at("odd", "gpus"))
    # review sizreview23 N1: no layout holds a 1M-token sequence's activations: located at the field that shrinks them
    assert located[("PL303", "long")] == ("workloads[3].sequenceLength", at("long", "sequenceLength"))
    assert located[("PL332", "late")] == (None, None)  # a finding about no one field names none
    text = run("plan", str(path)).stdout
    assert f"error PL303 odd (workloads[2].gpus at {at('odd', 'gpus')}): the expert grid (EP 8 x TP 1 x PP 1) does not" in text


def test_the_text_plan_and_explain_say_when_a_model_shares_a_gpu(tmp_path: Path) -> None:
    """Review sizreview22 N3: the MIG / time-slicing recommendation (sizing._sharing) reached only `--format json`. A
    1.24B model at 0.5 req/s on an H100 pool: one replica, its weights and KV cache in a 1g.10gb slice, its load under
    the slice's 1/7 of the compute; the text plan and --explain now say so."""
    path = tmp_path / "p.yaml"
    small = """\
workloads:
  - name: small
    kind: inference
    team: ml
    pool: train
    model: {parameters: 1.24B, layers: 16, hiddenSize: 2048, kvHeads: 8, headDim: 64}
    traffic: {peakRps: 0.5, inputTokens: 500, outputTokens: 100}
    latency:
      timePerOutputToken: {p99: 50ms}
"""
    path.write_text(PLAN_FIELDS_SPEC.split("workloads:")[0] + small)
    planned = json.loads(run("plan", str(path), "--format", "json").stdout)
    (sharing,) = [w["sharing"] for w in planned["workloads"] if w["name"] == "small"]
    assert sharing == "mig 1g.10gb"
    text, explained = run("plan", str(path)).stdout, run("plan", str(path), "--explain").stdout
    assert "GPU sharing" in text and "small -> mig 1g.10gb: one replica and its load fit less than a whole GPU" in text
    assert "  sharing: mig 1g.10gb: one replica" in explained
