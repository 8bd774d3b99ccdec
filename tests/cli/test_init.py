"""`alicerce init` (issue 16, item 2): a platform repository that deploys, and never a replaced user file.

The repository holds a Pulumi project whose program is the installed package's, one stack per
environment and layer with only what the spec cannot know, the local file backend by default with the
switch to a managed one documented, a starter spec with a workload and groups carrying the identity
provider's prefix, and a README whose quickstart commands run as written.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from importlib.metadata import version
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT, alicerce

# every key the Pulumi program reads from a stack (alicerce.emit.pulumi.program.main, StackSettings.from_config)
PROGRAM_KEYS = {"spec", "environment", "layers", "adminPrincipals", "apiAccessCidrs", "cloudStack"}


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("init") / "demo"
    result = run("init", str(target), "--name", "demo")
    assert result.returncode == 0, result.stderr
    return target


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_pulumi_project_runs_the_installed_program(repo: Path) -> None:
    project = yaml.safe_load((repo / "Pulumi.yaml").read_text())
    assert project["name"] == "demo" and project["runtime"]["name"] == "python" and project["stackConfigDir"] == "stacks"
    assert project["backend"] == {"url": "file://~"}  # Pulumi's local file backend, what `pulumi login --local` selects
    program = ast.parse((repo / "__main__.py").read_text())
    imports = [(n.module, [a.name for a in n.names]) for n in program.body if isinstance(n, ast.ImportFrom)]
    calls = [n.value.func.id for n in program.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]  # type: ignore[attr-defined]
    assert imports == [("alicerce.emit.pulumi.program", ["main"])] and calls == ["main"]
    from alicerce.emit.pulumi import program as installed

    assert callable(installed.main)  # the entry point the file names exists in the package
    pins = [line for line in (repo / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert pins == [f"alicerce=={version('alicerce')}"]


def test_two_stacks_per_environment_hold_only_what_the_spec_cannot_know(repo: Path) -> None:
    from alicerce.emit.pulumi.stack import StackSettings
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_file

    spec = load_file(repo / "platform.yaml", "platform.yaml")
    stacks = sorted(p.name for p in (repo / "stacks").iterdir())
    assert stacks == ["Pulumi.dev-kubernetes.yaml", "Pulumi.dev.yaml"]
    for stack, layer in (("dev", "cloud"), ("dev-kubernetes", "kubernetes")):
        config = yaml.safe_load((repo / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
        keys = {key.split(":", 1)[1] for key in config if key.startswith("alicerce:")}
        assert set(config) == {f"alicerce:{k}" for k in keys} and keys <= PROGRAM_KEYS  # no aws:region or account: the spec holds them
        assert config["alicerce:environment"] == "dev" and config["alicerce:layers"] == [layer]
        settings = StackSettings(
            tuple(config.get("alicerce:adminPrincipals", ())), tuple(config.get("alicerce:apiAccessCidrs", ())), (layer,)
        )
        rp = validated(spec, "dev")
        assert settings.problems(rp) == []  # the program would deploy this stack, not refuse it
    cloud = yaml.safe_load((repo / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    assert re.fullmatch(r"arn:aws:iam::123456789012:role/[\w+=,.@-]+", cloud["alicerce:adminPrincipals"][0])
    assert "REPLACE" in (repo / "stacks" / "Pulumi.dev.yaml").read_text()


def test_the_starter_spec_validates_has_a_workload_and_prefixed_groups(repo: Path) -> None:
    from alicerce.spec.models.security import IdentityProvider

    assert run("validate", cwd=repo).returncode == 0
    spec = yaml.safe_load((repo / "platform.yaml").read_text())
    prefix = IdentityProvider.model_fields["prefix"].default
    assert [g for t in spec["tenancy"]["teams"] for g in t["groups"] if not g.startswith(prefix)] == []
    plan = json.loads(run("plan", "--format", "json", cwd=repo).stdout)
    assert [w["name"] for w in plan["workloads"]] == ["assistant"]  # plan shows a sized workload, not an empty table


def test_generate_check_and_the_offline_preview_run_on_it(repo: Path) -> None:
    fresh = run("generate", "--check", "--env", "dev", "--out", "generated/dev", "--ci-dir", ".github/workflows", cwd=repo)
    assert fresh.returncode == 0, fresh.stderr
    preview = json.loads(run("preview", "--format", "json", cwd=repo).stdout)
    assert preview["counts"]["resources"] > 50 and preview["environment"] == "dev"


def test_every_alicerce_command_of_the_readme_quickstart_runs(repo: Path) -> None:
    readme = (repo / "README.md").read_text()
    assert "pip install -r requirements.txt" in readme and "pulumi preview --stack dev" in readme
    assert "PULUMI_BACKEND_URL" in readme and "--secrets-provider" in readme and "What a real account adds" in readme
    quickstart = readme.split("## Quickstart", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("  #")[0].strip() for line in quickstart.splitlines() if line.startswith("alicerce ")]
    assert len(commands) == 4
    for command in commands:
        done = run(*command.split()[1:], cwd=repo)
        assert done.returncode == 0, (command, done.stderr)


def test_init_refuses_to_replace_any_file_and_names_it(tmp_path: Path) -> None:
    target = tmp_path / "repo"
    target.mkdir()
    (target / "platform.yaml").write_text("mine\n")
    (target / "NOTES.md").write_text("mine too\n")
    before = files_of(target)
    refused = run("init", str(target))
    assert refused.returncode == 2 and f"{target / 'platform.yaml'}: already exists" in refused.stderr and "--fill" in refused.stderr
    assert files_of(target) == before  # nothing written
    unrelated = tmp_path / "clone"
    unrelated.mkdir()
    (unrelated / "NOTES.md").write_text("mine\n")
    assert run("init", str(unrelated)).returncode == 0  # a folder with none of init's files: they are added beside yours
    assert (unrelated / "NOTES.md").read_text() == "mine\n" and (unrelated / "Pulumi.yaml").is_file()


@pytest.mark.parametrize("fill", [[], ["--fill"]])
def test_init_never_writes_through_a_linked_folder(tmp_path: Path, fill: list[str]) -> None:
    """Security review of issue 22 (the output contract of defect 6, for init): in an existing folder, `.github` or
    `generated` linked elsewhere took the workflows and generated trees outside the folder named."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "clone"
    target.mkdir()
    (target / ".github").symlink_to(outside)
    refused = run("init", str(target), "--name", "demo", *fill)
    assert refused.returncode == 2 and f"{target / '.github'}: is a symbolic link" in refused.stderr, refused.stderr
    assert list(outside.iterdir()) == [] and sorted(p.name for p in target.iterdir()) == [".github"]


def test_fill_writes_only_the_missing_files(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "partial"
    assert run("init", str(target), "--name", "demo").returncode == 0
    (target / "platform.yaml").write_text((target / "platform.yaml").read_text() + "# edited\n")
    (target / "stacks" / "Pulumi.dev.yaml").unlink()
    (target / "README.md").unlink()
    edited = (target / "platform.yaml").read_bytes()
    result = run("init", str(target), "--name", "demo", "--fill", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.Draft202012Validator(json.loads((ROOT / "schema" / "output" / "init.schema.json").read_text())).validate(document)
    assert document["written"] == 2 and "platform.yaml" in document["kept"]
    assert (target / "platform.yaml").read_bytes() == edited
    assert files_of(target)["stacks/Pulumi.dev.yaml"] == files_of(repo)["stacks/Pulumi.dev.yaml"]


def test_fill_builds_the_repository_around_the_spec_already_there(tmp_path: Path) -> None:
    """A repository that has its spec but nothing else: --fill writes stacks, trees and workflows of THAT spec."""
    target = tmp_path / "existing"
    target.mkdir()
    (target / "platform.yaml").write_text((ROOT / "examples" / "aws-only.yaml").read_text())
    done = run("init", str(target), "--fill")
    assert done.returncode == 0, done.stderr
    spec = yaml.safe_load((target / "platform.yaml").read_text())
    stacks = sorted(p.name for p in (target / "stacks").iterdir())
    assert stacks == sorted(f"Pulumi.{s}.yaml" for env in spec["environments"] for s in (env, f"{env}-kubernetes"))
    assert yaml.safe_load((target / "Pulumi.yaml").read_text())["name"] == spec["metadata"]["name"]
    for env in spec["environments"]:
        fresh = run("generate", "--check", "--env", env, "--out", f"generated/{env}", cwd=target)
        assert fresh.returncode == 0, fresh.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "platform.yaml").write_text("apiVersion: alicerce.dev/v1\nkind: Platform\n")
    refused = run("init", str(broken), "--fill")
    assert refused.returncode == 2 and "platform.yaml:1:1: error[AL101]" in refused.stdout  # located, as validate reports it
    assert sorted(p.name for p in broken.iterdir()) == ["platform.yaml"]  # nothing written
