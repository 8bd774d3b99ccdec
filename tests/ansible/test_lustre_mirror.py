"""The Lustre mirror a site names (nodeSoftware.lustreMirror): URL, key and the key's fingerprint reach the node stage,
which installs the key only when it has that fingerprint (issue 20, onprem 2 item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from alicerce.cli import build_app
from alicerce.emit.tree import render_tree
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT

FINGERPRINT = "EB693B3035CD5710E231E123A4B469963BF863CC"


def _spec(tmp_path: Path, mirror: dict[str, str]) -> Path:
    data = yaml.safe_load((ROOT / "platform.yaml").read_text())
    site = next(s for s in data["environments"]["prod"]["sites"] if s["name"] == "dc1")
    site.setdefault("nodeSoftware", {})["lustreMirror"] = mirror
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_spec_sets_the_lustre_mirror_and_its_key_fingerprint(tmp_path: Path) -> None:
    mirror = {"url": "https://apt.dc1.acme.example/lustre/lustre-2.15.1", "key": "https://apt.dc1.acme.example/key.asc"}
    path = _spec(tmp_path, {**mirror, "keyFingerprint": FINGERPRINT.lower()})
    files = render_tree(validated(load_file(path, "platform.yaml"), "prod"), subtrees=["ansible"])
    pool = yaml.safe_load(files["ansible/group_vars/pool_onprem_h100.yml"])
    assert pool["parallel_fs_client_lustre_repository_url"] == mirror["url"]
    assert pool["parallel_fs_client_lustre_repository_key_url"] == mirror["key"]
    assert pool["parallel_fs_client_lustre_repository_key_fingerprint"] == FINGERPRINT
    install = yaml.safe_load((ROOT / "alicerce/ansible/roles/parallel_fs_client/tasks/install.yml").read_text())
    (key,) = [t for t in install if "alicerce_apt_key" in t]
    assert key["alicerce_apt_key"]["fingerprint"] == "{{ parallel_fs_client_lustre_repository_key_fingerprint }}"
    assert key["alicerce_apt_key"]["dest"] == "/etc/apt/keyrings/alicerce-lustre.asc"  # the file lustre.sources trusts
    other = next(t for t in install if "ansible.builtin.get_url" in t)
    assert "rejectattr('name', 'equalto', 'lustre')" in other["loop"]  # never fetched unchecked


@pytest.mark.parametrize("bad", ["EB69 3B30", "not-a-fingerprint", "ABCDEF"])
def test_a_malformed_fingerprint_is_a_located_error(tmp_path: Path, bad: str) -> None:
    path = _spec(tmp_path, {"url": "https://apt.example/l", "key": "https://apt.example/k.asc", "keyFingerprint": bad})
    result = CliRunner().invoke(build_app(), ["validate", str(path), "--env", "prod"])
    assert result.exit_code == 2, result.output
    assert "nodeSoftware.lustreMirror.keyFingerprint" in result.output and "Traceback" not in result.output
