"""Fixtures for the Ansible tests: the generated project, the cached Debian rootfs, fake nodes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from alicerce.emit.tree import write_tree
from tests.ansible.rootfs import default_target
from tests.conftest import ROOT

BIN = ROOT / ".venv" / "bin"
ROOTFS = default_target()
CHROOT_HOST = "gpu-001.dc1.acme.example"
IN_CI = os.environ.get("CI", "").lower() == "true"


def tool(name: str) -> str:
    """The venv's copy of an Ansible tool."""
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed in .venv (make setup)")
    return str(path)


@pytest.fixture(scope="session")
def generated(prod_files: Mapping[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated tree of the reference platform's prod environment; returns its ansible/ folder
    (writable: the playbooks fetch their acceptance reports into it)."""
    out = tmp_path_factory.mktemp("generated") / "out"
    write_tree(out, dict(prod_files))
    return out / "ansible"


@pytest.fixture(scope="session")
def rootfs() -> Path:
    """The cached Debian 12 minbase rootfs (``make rootfs`` builds it); a missing one fails under CI."""
    if not (ROOTFS / ".alicerce-rootfs").is_file() or os.geteuid() != 0:
        why = f"no Debian rootfs at {ROOTFS} (run `make rootfs` as root)" if os.geteuid() == 0 else "chroot converges need root"
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    return ROOTFS


@pytest.fixture(scope="session")
def aptrepo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The local signed apt repositories on loopback HTTP; yields the role variables that point at them."""
    from tests.ansible import aptrepo as repo

    root = repo.build(tmp_path_factory.mktemp("aptrepo") / "repo")
    with repo.serve(root) as url:
        yield repo.role_vars(url, root)


@pytest.fixture
def node_root(rootfs: Path, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the rootfs for one test (the cache itself is never changed)."""
    target = tmp_path / "rootfs"
    subprocess.run(["cp", "-a", "--reflink=auto", str(rootfs), str(target)], check=True)
    yield target
    proc = target / "proc"
    if os.path.ismount(proc):
        subprocess.run(["umount", "--lazy", str(proc)], check=False)
    shutil.rmtree(target, ignore_errors=True)


def chroot_inventory(path: Path, root: Path, host: str = CHROOT_HOST) -> Path:
    """An extra inventory that reaches ``host`` through the chroot connection."""
    path.write_text(
        f"all:\n  hosts:\n    {host}:\n      ansible_connection: community.general.chroot\n"
        f"      ansible_host: {root}\n      ansible_become: false\n",
        encoding="utf-8",
    )
    return path
