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
