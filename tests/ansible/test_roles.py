"""Role interface in step with the model; lint at the production profile; syntax; argument specs bite."""

from __future__ import annotations

import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.emit.ansible.role_vars import ROLE_VARS, argument_specs_text, defaults, defaults_text, field_flag
from alicerce.emit.ansible.site import inventory_site
from alicerce.resolve.model import ResolvedPlatform
from tests.ansible.conftest import tool
from tests.conftest import ROOT

ROLES = ROOT / "alicerce" / "ansible" / "roles"


@pytest.mark.parametrize("model", ROLE_VARS, ids=lambda m: m.ROLE)
def test_argument_specs_defaults_and_model_are_one_interface(model: Any) -> None:
    spec = yaml.safe_load((ROLES / model.ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    role_defaults = yaml.safe_load((ROLES / model.ROLE / "defaults" / "main.yml").read_text())
    assert list(spec) == list(role_defaults) == list(model.model_fields)
    assert role_defaults == defaults(model)
    assert {name: option["default"] for name, option in spec.items()} == role_defaults
    assert all(name.startswith(model.ROLE + "_") for name in spec)
    # and byte for byte what `python -m alicerce.emit.ansible.role_vars --write` produces
    assert (ROLES / model.ROLE / "meta" / "argument_specs.yml").read_text() == argument_specs_text(model)
    assert (ROLES / model.ROLE / "defaults" / "main.yml").read_text() == defaults_text(model)


def test_generator_writes_every_public_variable_of_every_role(prod: ResolvedPlatform, generated: Path) -> None:
    site = next(s for s in prod.sites if s.capabilities.nodes_by_ansible)
    written = yaml.safe_load((generated / "group_vars" / "pool_onprem_h100.yml").read_text())
    inventory = (generated / "inventory.yml").read_text()
    for model in ROLE_VARS:
        public = {n for n, info in model.model_fields.items() if not field_flag(info, "secret")}
        per_host = {n for n, info in model.model_fields.items() if field_flag(info, "per_host")}
        assert {k for k in written if k.startswith(model.ROLE + "_")} | per_host == public, model.ROLE
        for name in per_host:
            assert f"{name}:" in inventory
    plan = inventory_site(prod, site)
    assert len(plan.host_vars) == 32


def test_secrets_are_never_rendered(generated: Path) -> None:
    # what generate wrote (not the bytecode Ansible leaves beside the filter plugins when another test runs it)
    text = "\n".join(
        p.read_text() for p in generated.rglob("*") if p.is_file() and "/roles/" not in str(p) and "__pycache__" not in p.parts
    )
    assert "parallel_fs_client_beegfs_auth_secret:" not in text  # README names it, never a value


def test_templates_start_with_the_managed_marker() -> None:
    for template in ROLES.glob("*/templates/*.j2"):
        first = template.read_text().splitlines()[0]
        assert first == "{{ ansible_managed | comment }}" or template.read_text().splitlines()[1] == "{{ ansible_managed | comment }}", (
            template
        )


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # --strict: a warning fails too, as `warn_list: []` of the roles' own config makes it (the generated
        # config keeps ansible-lint's default warn list: experimental, jinja[spacing], fqcn[deep])
        [tool("ansible-lint"), "--offline", "--profile", "production", "--strict", "--nocolor"],
        check=False,
        cwd=path,
        capture_output=True,
        text=True,
    )


def _source_files(base: str) -> dict[str, bytes]:
    folder = ROOT / "alicerce" / "ansible" / base
    return {
        f"{base}/{p.relative_to(folder).as_posix()}": p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_roles_pass_ansible_lint_production_with_nothing_skipped(generated: Path) -> None:
    """The roles are linted once, in the generated tree (~25 CPU-s a run): that holds them byte for byte, so
    linting the source folder as well linted the same files twice."""
    config = yaml.safe_load((ROOT / "alicerce" / "ansible" / ".ansible-lint").read_text())
    assert config["profile"] == "production" and config["skip_list"] == [] and config["warn_list"] == []
    tree = yaml.safe_load((generated / ".ansible-lint").read_text())
    assert tree["profile"] == "production" and tree["skip_list"] == [] and tree["exclude_paths"] == [".cache/", "kubespray/"]
    for base in ("roles", "library", "filter_plugins"):
        source = _source_files(base)
        copied = {
            p.relative_to(generated).as_posix(): p.read_bytes()
            for p in (generated / base).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        }
        assert source and copied == source, base
    # the collections the roles need: the source folder's requirements name those the generated tree pins
    source_requirements = yaml.safe_load((ROOT / "alicerce" / "ansible" / "requirements.yml").read_text())
    assert source_requirements == yaml.safe_load((generated / "requirements.yml").read_text())


def test_generated_tree_passes_ansible_lint_production(generated: Path) -> None:
    result = _lint(generated)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Profile 'production' was required, and it passed" in result.stdout + result.stderr


@pytest.mark.parametrize("playbook", ["site.yml", "validate.yml", "post-cluster.yml", "accept.yml"])
def test_generated_playbooks_pass_syntax_check(generated: Path, playbook: str) -> None:
    result = subprocess.run(
        [tool("ansible-playbook"), "--syntax-check", playbook],
        check=False,
        cwd=generated,
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(generated / "ansible.cfg"), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_execution_environment_builds_a_context(generated: Path, tmp_path: Path) -> None:
    """ansible-builder checks the definition against its schema and writes the image's build context."""
    context = tmp_path / "context"
    result = subprocess.run(
        [tool("ansible-builder"), "create", "--file", "execution-environment.yml", "--context", str(context)],
        check=False,
        cwd=generated,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    build = next(context.glob("*file")).read_text()  # Containerfile or Dockerfile, by container runtime
    assert f"ansible-core=={version('ansible-core')}" in build  # the controller's own, so what was tested is what runs
    assert (context / "_build" / "requirements.yml").read_bytes() == (generated / "requirements.yml").read_bytes()


@pytest.mark.parametrize(
    ("role", "bad", "complaint"),
    [
        ("nvme_scratch", {"nvme_scratch_filesystem": "btrfs"}, "nvme_scratch_filesystem"),
        ("preflight", {"preflight_gpu_count": "eight"}, "preflight_gpu_count"),
        ("kubernetes_node", {"kubernetes_node_taints": {"not": "a list"}}, "kubernetes_node_taints"),
        ("rdma", {"rdma_technology": "omnipath"}, "rdma_technology"),
    ],
)
def test_argument_specs_reject_bad_variables(tmp_path: Path, role: str, bad: dict[str, Any], complaint: str) -> None:
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        yaml.safe_dump([{"name": "Apply one role", "hosts": "localhost", "gather_facts": False, "roles": [{"role": role, **bad}]}])
    )
    result = subprocess.run(
        [tool("ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
        check=False,
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(ROOT / "alicerce" / "ansible" / "ansible.cfg"), "PATH": "/usr/bin:/bin", "ANSIBLE_NOCOLOR": "1"},
        cwd=ROOT / "alicerce" / "ansible",
    )
    assert result.returncode != 0
    assert "Validation of arguments failed" in result.stdout and complaint in result.stdout, result.stdout


def test_node_monitoring_runs_with_only_its_services_tag(tmp_path: Path) -> None:
    """storreview: `--tags services` skipped the task that registers what the timer's stop task reads, and failed on it
    on every node that mounts no tier."""
    playbook = tmp_path / "play.yml"
    role = {"role": "node_monitoring", "node_monitoring_target": "image", "node_monitoring_storage_tiers": []}
    playbook.write_text(yaml.safe_dump([{"name": "Services only", "hosts": "localhost", "roles": [role]}]))
    result = subprocess.run(
        [tool("ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook), "--tags", "services"],
        check=False,
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(ROOT / "alicerce" / "ansible" / "ansible.cfg"), "PATH": "/usr/bin:/bin", "ANSIBLE_NOCOLOR": "1"},
        cwd=ROOT / "alicerce" / "ansible",
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "Read whether a storage counters timer is installed" in result.stdout
