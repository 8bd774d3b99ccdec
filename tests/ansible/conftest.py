"""Fixtures for the Ansible tests: the generated project, the cached Debian rootfs, fake nodes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
def aptrepo() -> Iterator[dict[str, str]]:
    """The local signed apt repositories on loopback HTTP; yields the role variables that point at them.
    Built once per user and content (aptrepo.default_target), served read-only."""
    from tests.ansible import aptrepo as repo

    root = repo.build(repo.default_target())
    with repo.serve(root) as url:
        yield repo.role_vars(url, root)


# The layers under each overlay copy in use (its own upper layer first): a copy of a copy stacks its layer on these.
_LAYERS: dict[Path, list[Path]] = {}


@contextmanager
def private_copy(source: Path, target: Path) -> Iterator[Path]:
    """``target``: a writable copy of ``source`` whose writes stay its own; removed (and unmounted) after the block.

    An overlay mount where the kernel allows one (the converges run as root): ``source``'s files are its read-only
    lower layers and every write lands in a layer of the copy's own, so nothing is copied up front and only what a
    run changed is removed afterwards; ``cp -a`` of the 265-500 MB images cost each copy and its removal seconds of
    system time (no reflinks on ext4). ``source`` must not change while a copy of it is in use: the cached rootfs
    never does, and the converged image is left alone once its tests start (they work on copies).

    A copy of a copy lists the first copy's layers under its own rather than mounting an overlay on an overlay: the
    root of a stacked overlay reads as inode 2, and Ansible's is_chroot fact (without /proc, "is / inode 2?") would
    take the chroot for a real host and run the hardware path. For the same reason a copy whose root is inode 2
    anyway falls back to ``cp -a``, as does a machine where overlayfs cannot be mounted.
    """
    upper, work = target.with_name(f".{target.name}.upper"), target.with_name(f".{target.name}.work")
    for folder in (target, upper, work):
        folder.mkdir(parents=True)
    lowers = _LAYERS.get(source, [source])
    layers = f"lowerdir={':'.join(map(str, lowers))},upperdir={upper},workdir={work}"
    mounted = subprocess.run(["mount", "-t", "overlay", "overlay", "-o", layers, str(target)], check=False, capture_output=True)
    overlay = mounted.returncode == 0 and target.stat().st_ino != 2
    if mounted.returncode == 0 and not overlay:
        subprocess.run(["umount", str(target)], check=True)
    if not overlay:
        target.rmdir()
        subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(target)], check=True)
    else:
        _LAYERS[target] = [upper, *lowers]
    try:
        yield target
    finally:
        _LAYERS.pop(target, None)
        if os.path.ismount(target / "proc"):
            subprocess.run(["umount", "--lazy", str(target / "proc")], check=False)
        if overlay:
            subprocess.run(["umount", "--lazy", str(target)], check=False)
        for folder in (target, upper, work):
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def node_root(rootfs: Path, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the rootfs for one test (the cache itself is never changed)."""
    with private_copy(rootfs, tmp_path / "rootfs") as target:
        yield target


def chroot_inventory(path: Path, root: Path, host: str = CHROOT_HOST) -> Path:
    """An extra inventory that reaches ``host`` through the chroot connection."""
    path.write_text(
        f"all:\n  hosts:\n    {host}:\n      ansible_connection: community.general.chroot\n"
        f"      ansible_host: {root}\n      ansible_become: false\n",
        encoding="utf-8",
    )
    return path
