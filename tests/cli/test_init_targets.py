"""`alicerce init --target aws|onprem|hybrid` (issue 27, item 6): a starter for servers you own, too.

Each starter validates, plans, and generates with a clean `generate --check`; the on-prem and hybrid
ones have a control plane kubespray builds, an InfiniBand fabric and a GPU pool, and their README
makes `alicerce apply onprem` the next step.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import alicerce


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, env={"ALICERCE_NO_CACHE": "1"}, timeout=300)


@pytest.mark.parametrize("target", ["onprem", "hybrid"])
def test_an_owned_starter_validates_plans_and_generates(target: str, tmp_path: Path) -> None:
    repo = tmp_path / "demo"
    made = run("init", str(repo), "--name", "demo", "--target", target, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "alicerce apply onprem" in made.stdout

    spec = yaml.safe_load((repo / "platform.yaml").read_text(encoding="utf-8"))
    sites = spec["environments"]["dev"]["sites"]
    onprem = next(s for s in sites if s["provider"] == "onprem")
    assert onprem["controlPlane"]["hosts"]  # kubespray builds the control plane on these hosts
    assert {s["provider"] for s in sites} == ({"onprem"} if target == "onprem" else {"onprem", "aws"})
    assert any(f["onprem"]["technology"] == "infiniband" for f in spec["networks"]["fabrics"])
    gpu = [p for p in spec["nodePools"] if p["site"] == onprem["name"] and "accelerator" in p]
    assert gpu and gpu[0]["fabric"]

    assert run("validate", cwd=repo).returncode == 0
    planned = run("plan", "--format", "json", cwd=repo)
    assert planned.returncode == 0, planned.stderr
    pools = {p["name"]: p for p in json.loads(planned.stdout)["pools"]}
    assert pools["gpu"]["owned"] and pools["gpu"]["monthlyCostUsd"]  # owned servers, amortised (TCO)
    fresh = run("generate", "--check", "--env", "dev", "--out", "generated/dev", "--ci-dir", ".github/workflows", cwd=repo)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr

    readme = (repo / "README.md").read_text(encoding="utf-8")
    assert "alicerce apply onprem --env dev" in readme
    assert ("What a real account adds" in readme) == (target == "hybrid")  # the AWS account section only with an AWS site
    workflows = "".join(p.read_text(encoding="utf-8") for p in (repo / ".github" / "workflows").iterdir())
    assert "alicerce apply onprem --env dev" in workflows  # CI's deploy job for the site apply provisions


def test_an_unknown_starter_is_refused(tmp_path: Path) -> None:
    result = run("init", str(tmp_path / "x"), "--target", "gcp", cwd=tmp_path)
    assert result.returncode == 2 and "aws, onprem, hybrid" in result.stderr + result.stdout
    assert not (tmp_path / "x").exists()


def _gitops_folders(repo: Path) -> dict[str, str]:
    spec = yaml.safe_load((repo / "platform.yaml").read_text(encoding="utf-8"))
    folder = spec.get("gitops", {}).get("folder", "generated").strip("/")
    return {env: "/".join(p for p in (folder, env) if p) for env in spec["environments"]}


@pytest.mark.parametrize("example", ["onprem-superpod", "aws-only", "user-catalog"])
def test_a_repository_starts_from_a_reference_example(example: str, tmp_path: Path) -> None:
    """`init --example NAME` (issue 27, item 6): the example, its schema modeline pointing at the new repository's
    schema/, validates and every environment's generated tree is clean; the next steps follow its targets."""
    repo = tmp_path / "repo"
    made = run("init", str(repo), "--example", example, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    text = (repo / "platform.yaml").read_text(encoding="utf-8")
    source = (Path(__file__).resolve().parents[2] / "examples" / f"{example}.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# yaml-language-server: $schema=schema/platform.schema.json"
    assert (repo / "schema" / "platform.schema.json").is_file()
    assert text.splitlines()[1:] == source.splitlines()[1:]
    uses_onprem = any(s["provider"] == "onprem" for e in yaml.safe_load(text)["environments"].values() for s in e["sites"])
    assert ("alicerce apply onprem" in made.stdout) == uses_onprem
    assert run("validate", cwd=repo).returncode == 0
    for env, tree in _gitops_folders(repo).items():
        fresh = run("generate", "--check", "--env", env, "--out", tree, cwd=repo)
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr


def test_an_example_takes_the_name_given(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    assert run("init", str(repo), "--example", "minimal", "--name", "lab-one", cwd=tmp_path).returncode == 0
    assert yaml.safe_load((repo / "platform.yaml").read_text(encoding="utf-8"))["metadata"]["name"] == "lab-one"
    assert "lab-one" in (repo / "Pulumi.yaml").read_text(encoding="utf-8")
    assert run("validate", cwd=repo).returncode == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--example", "nope"], "aws-only, minimal, onprem-superpod, user-catalog"),  # mistakes.yaml is not offered
        (["--example", "mistakes"], "use one of"),
        (["--example", "minimal", "--target", "onprem"], "give one of them"),
    ],
)
def test_a_wrong_example_is_refused_and_nothing_is_written(args: list[str], says: str, tmp_path: Path) -> None:
    result = run("init", str(tmp_path / "x"), *args, cwd=tmp_path)
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()


def test_fill_around_a_spec_refuses_an_example(tmp_path: Path) -> None:
    (tmp_path / "platform.yaml").write_text("# mine\n", encoding="utf-8")
    result = run("init", ".", "--fill", "--example", "minimal", cwd=tmp_path)
    assert result.returncode == 2 and "--fill builds around it" in result.stderr
    assert (tmp_path / "platform.yaml").read_text(encoding="utf-8") == "# mine\n"
