"""`alicerce generate`: the tree, its determinism, its manifest, and the plans behind it."""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from alicerce.cli import build_app
from alicerce.emit.ansible.site import emit_ansible, ipoib_addresses
from alicerce.emit.errors import EmitError
from alicerce.emit.tree import EMITTERS, MANIFEST, render_tree, tree_changes
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT

SPEC = str(ROOT / "platform.yaml")


def test_generate_writes_the_ansible_tree_and_a_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(build_app(), ["generate", "--env", "prod", SPEC, "--out", str(out)])
    assert result.exit_code == 0, result.output
    for name in (
        "inventory.yml",
        "site.yml",
        "validate.yml",
        "ansible.cfg",
        "requirements.yml",
        "execution-environment.yml",
        ".ansible-lint",
    ):
        assert (out / "ansible" / name).is_file(), name
    assert (out / "ansible/roles/node_validation/tasks/main.yml").is_file()
    manifest = json.loads((out / MANIFEST).read_text())
    for relative, digest in manifest["files"].items():
        assert hashlib.sha256((out / relative).read_bytes()).hexdigest() == digest
    assert not tree_changes(out)
    (out / "ansible/site.yml").write_text("edited by hand\n")
    assert tree_changes(out).edited == ("ansible/site.yml",)


def test_generate_is_byte_identical_and_atomic(tmp_path: Path) -> None:
    runner = CliRunner()
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        assert runner.invoke(build_app(), ["generate", "--env", "prod", SPEC, "--out", str(out)]).exit_code == 0
    assert (first / MANIFEST).read_bytes() == (second / MANIFEST).read_bytes()
    # a re-run over an unchanged tree replaces it whole, leaving only the lock file beside it
    assert runner.invoke(build_app(), ["generate", "--env", "prod", SPEC, "--out", str(first)]).exit_code == 0
    assert (first / MANIFEST).read_bytes() == (second / MANIFEST).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".a.alicerce-lock", ".b.alicerce-lock", "a", "b"]


def test_inventory_groups_by_site_pool_purpose_and_rack(prod_files: Mapping[str, str]) -> None:
    files = prod_files
    inventory = yaml.safe_load(files["ansible/inventory.yml"])["all"]["children"]
    pool = inventory["site_dc1"]["children"]["pool_onprem_h100"]
    assert sorted(pool["children"]) == ["rack_dc1_r01", "rack_dc1_r02"]
    assert len(pool["children"]["rack_dc1_r02"]["hosts"]) == 16
    assert inventory["purpose_training"]["children"] == {"pool_onprem_h100": None}
    assert inventory["gpu_nodes"]["children"] == {"pool_onprem_h100": None}
    host = pool["children"]["rack_dc1_r02"]["hosts"]["gpu-032.dc1.acme.example"]
    assert host["rdma_addresses"][0] == "10.40.0.32/19" and host["rdma_addresses"][7] == "10.40.224.32/19"
    assert host["node_validation_rail_addresses"] == host["rdma_addresses"]
    assert sorted(inventory["kube_control_plane"]["hosts"]) == [f"cp-{i}.dc1.acme.example" for i in (1, 2, 3)]
    site = yaml.safe_load(files["ansible/site.yml"])
    assert [play["name"] for play in site] == [
        "Check every node of site dc1 before changing any",
        "Provision the nodes of site dc1 in rolling batches",
    ]
    provision = site[1]["tasks"][0]["block"]  # the roles, then the batch end (accept and release what it drained)
    roles = [t["ansible.builtin.import_role"]["name"] for t in provision if "ansible.builtin.import_role" in t]
    assert roles[-1] == "node_monitoring"  # acceptance runs after kubespray
    post = yaml.safe_load(files["ansible/post-cluster.yml"])
    assert [t["ansible.builtin.import_role"]["name"] for t in post[0]["tasks"][0]["block"]] == [
        "kubernetes_node",
        "node_validation",
        "kubernetes_node",
    ]  # labels, acceptance, release
    config = files["ansible/ansible.cfg"]
    assert "pipelining = true" in config and "fact_caching = jsonfile" in config and "forks = 34" in config


def test_group_vars_follow_the_spec(prod_files: Mapping[str, str]) -> None:
    files = prod_files
    data = yaml.safe_load(files["ansible/group_vars/pool_onprem_h100.yml"])
    assert (data["nvidia_driver_branch"], data["nvidia_driver_version"]) == ("580", "580.173.02")
    assert data["nvidia_driver_kernel_module_type"] == "open"  # operators.gpuOperator.kernelModuleType
    assert data["nvidia_fabricmanager_enabled"] is True  # H100 SXM5 x8: NVSwitch
    assert (data["rdma_rails"], data["rdma_rate_gbps"], data["preflight_hca_count"]) == (8, 400, 8)
    assert data["kubernetes_node_taints"] == ["nvidia.com/gpu=true:NoSchedule"]
    assert data["kubernetes_node_cpu_manager_policy"] == "static"
    assert [m["source"] for m in data["parallel_fs_client_mounts"]] == ["10.40.31.250@o2ib:/ai", "nfs.dc1.acme.example:/export/home"]
    assert data["node_validation_mounts"] == ["/lustre", "/home/shared"] and data["node_validation_scratch_path"] == "/scratch"


def test_environments_without_onprem_sites_get_no_ansible_tree() -> None:
    files = render_tree(validated(load_file(ROOT / "platform.yaml", "platform.yaml"), "dev"))
    assert not [p for p in files if p.startswith("ansible/")]
    assert {p.split("/", 1)[0] for p in files} == {".alicerce", "ci", "kubernetes", "monitoring", "reports"}
    assert [subtree for subtree, _ in EMITTERS] == ["ansible", "kubernetes", "monitoring", "ci", "reports"]


def test_ipoib_plan_splits_the_range_per_rail_and_refuses_overflow() -> None:
    plan = ipoib_addresses(ipaddress.ip_network("10.40.0.0/16"), 8, ["a", "b"])
    assert plan["b"] == [f"10.40.{32 * i}.2/19" for i in range(8)]
    with pytest.raises(EmitError, match="gives 2 addresses per rail"):
        ipoib_addresses(ipaddress.ip_network("10.40.0.0/27"), 8, ["a", "b", "c"])


def test_template_text_from_the_spec_is_refused_and_never_templated_by_ansible(tmp_path: Path) -> None:
    """The export's grammar refuses it (AL275 refuses template text in every other field); were it to get past
    validate, the emitter refuses it as an fstab field, and any template text in group_vars is held `!unsafe`,
    which Ansible never templates."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, is_trusted_as_template

    from alicerce.emit.ansible.role_vars import dump_yaml
    from alicerce.resolve.platform import resolve_spec
    from alicerce.rules.validate import check
    from alicerce.spec.loader import load_text

    injected = "/export/{{ lookup('pipe', 'id') }}"
    text = (ROOT / "platform.yaml").read_text().replace("export: /export/home", f'export: "{injected}"')
    checked = check(load_text(text, "platform.yaml"), ["prod"])
    assert {e.rule for e in checked.errors} == {"AL104"}
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if injected in row)
    assert any(f":{line}:" in e.render() and "storage[" in e.render() and "U+007B" in e.render() for e in checked.errors)
    # past validate (a model built without it), the emitter refuses to write it into an fstab line
    clean = check(load_file(ROOT / "platform.yaml"), ["prod"]).environments["prod"].spec
    home = next(i for i, tier in enumerate(clean.storage) if tier.name == "home")
    tier = clean.storage[home]
    assert tier.onprem is not None
    bypassed = tier.model_copy(update={"onprem": tier.onprem.model_copy(update={"export": injected})})
    spec = clean.model_copy(update={"storage": [*clean.storage[:home], bypassed, *clean.storage[home + 1 :]]})
    with pytest.raises(EmitError, match="mount source"):
        emit_ansible(resolve_spec(spec, "prod"))
    (tmp_path / "vars.yml").write_text(dump_yaml({"alicerce_value": "nfs.dc1.acme.example:" + injected}, inert=True))
    loader = DataLoader()
    data = loader.load_from_file(str(tmp_path / "vars.yml"), trusted_as_template=True)  # as Ansible loads group_vars
    source = data["alicerce_value"]
    assert not is_trusted_as_template(source)
    assert Templar(loader=loader, variables=data).template(source) == "nfs.dc1.acme.example:" + injected


def test_what_apply_leaves_in_the_ansible_tree_is_never_committed(tmp_path: Path) -> None:
    """Security review of issue 22: the documented layout commits generated/<env>, and `git add -A` after a run of
    the playbooks from there would commit the cluster's admin kubeconfig (kubespray's artifacts_dir)."""
    import subprocess

    files = emit_ansible(validated(load_file(ROOT / "platform.yaml"), "prod"))
    tree = tmp_path / "ansible"
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    left = ["kubespray/artifacts/dc1/admin.conf", "kubespray/.cache/facts/cp-1", ".cache/gpu-001", ".ansible/lint"]
    for name in [*left, "host_vars/gpu-001.dc1.acme.example.yml", "acceptance/gpu-001.dc1.acme.example.json"]:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("x\n")
    ignored = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--ignored", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert sorted(line[3:] for line in ignored if line.startswith("!! ")) == sorted(f"ansible/{name}" for name in left)
