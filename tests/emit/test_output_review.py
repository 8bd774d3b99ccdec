"""The output contract under a break-it review: what a user puts in or beside the tree survives.

These run :func:`write_tree` in-process on small trees (fast); the end-to-end cases of the contract
are in test_output_safety.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from alicerce.emit.errors import OutputError
from alicerce.emit.files import remove
from alicerce.emit.tree import MANIFEST, check_output, tree_changes, with_manifest, write_tree
from tests.conftest import Forked


def tree(**files: str) -> dict[str, str]:
    """A generated tree: ``a__b="x"`` is the file ``a/b`` holding ``x``, plus its manifest."""
    return with_manifest({name.replace("__", "/"): text for name, text in files.items()}, platform="p", environment="e")


OLD = tree(keep="1\n", sub__gone="2\n")
NEW = tree(keep="1\n")


@pytest.mark.parametrize("kind", ["folder", "symlink", "fifo"])
def test_an_obsolete_generated_path_the_user_replaced_is_kept_and_reported(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    gone = out / "sub" / "gone"
    gone.unlink()
    if kind == "folder":
        gone.mkdir()
        (gone / "mine.txt").write_text("mine\n")
    elif kind == "symlink":
        gone.symlink_to("../keep")
    else:
        os.mkfifo(gone)
    assert tree_changes(out, NEW).edited == ("sub/gone",)
    with pytest.raises(OutputError, match="sub/gone"):
        write_tree(out, NEW)
    assert os.path.lexists(gone)
    report = write_tree(out, NEW, force=True)
    assert report.displaced == ["sub/gone"]
    assert os.path.lexists(out / str(report.displaced_to) / "sub" / "gone")
    assert (out / MANIFEST).read_text() == NEW[MANIFEST]


def writer(out: Path, files: dict[str, str], *, force: bool = False, **env: str) -> Forked:
    """``write_tree(out, files)`` in a forked child (a process of its own without an interpreter start), so that
    ``ALICERCE_FAULT`` can kill or pause it at a step; ``wait()`` gives its exit code and stderr."""
    return Forked.call(lambda: write_tree(out, files, force=force), env=env)


def test_folders_shaped_like_leftovers_that_the_user_made_are_never_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    backup = tmp_path / ".out.old"  # the user's own copy of the tree (it even holds the manifest)
    shutil.copytree(out, backup)
    own = tmp_path / ".out.alicerce-old-abcd1234"
    own.mkdir()
    (own / "mine.txt").write_text("mine\n")
    report = write_tree(out, NEW)
    assert (backup / "sub" / "gone").read_text() == "2\n"
    assert (own / "mine.txt").read_text() == "mine\n"
    assert any(str(own) in warning for warning in report.warnings)


def test_a_crashed_runs_recorded_leftovers_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    killed = writer(out, NEW, ALICERCE_FAULT="file:1").wait()
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [p.name for p in tmp_path.glob(".out.alicerce-stage-*")]
    write_tree(out, NEW)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.alicerce-lock", "out"]


@pytest.mark.parametrize("user_wrote", [False, True])
def test_a_folder_made_after_a_crash_between_the_renames_never_costs_the_old_tree(tmp_path: Path, user_wrote: bool) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    (out / "ansible" / "host_vars").mkdir(parents=True)
    (out / "ansible" / "host_vars" / "gpu-001.yml").write_text("ansible_host: 10.0.0.1\n")
    killed = writer(out, NEW, ALICERCE_FAULT="between-renames", ALICERCE_RENAME_EXCHANGE="0").wait()
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not out.exists()
    out.mkdir()  # the user finds the folder gone and makes it again
    if user_wrote:
        (out / "new.txt").write_text("mine\n")
        with pytest.raises(OutputError, match="holds no") as refused:
            write_tree(out, NEW)
        assert "a crashed run left the previous tree in" in str(refused.value.hint)
        assert (out / "new.txt").read_text() == "mine\n"
        old = list(tmp_path.glob(".out.alicerce-old-*"))
        assert len(old) == 1 and (old[0] / "ansible" / "host_vars" / "gpu-001.yml").is_file()
    else:
        write_tree(out, NEW)  # the empty folder gives way to the old tree, whose kept files carry over
        assert (out / "ansible" / "host_vars" / "gpu-001.yml").read_text() == "ansible_host: 10.0.0.1\n"
        assert (out / MANIFEST).read_text() == NEW[MANIFEST]


@pytest.mark.parametrize("edit", ["generated", "kept", "added", "edited-again"])
def test_an_edit_made_while_the_new_tree_is_staged_stops_the_swap(tmp_path: Path, edit: str) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    (out / "ansible" / "host_vars").mkdir(parents=True)
    if edit == "edited-again":  # a forced run displaces the edited file; an editor then saves it again (a new inode)
        (out / "keep").write_text("first edit\n")
    run = writer(out, NEW, force=edit == "edited-again", ALICERCE_FAULT="file:1=3")
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(".out.alicerce-stage-*/*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    if edit == "generated":
        (out / "keep").write_text("edited while staging\n")
    elif edit == "kept":
        (out / "ansible" / "host_vars" / "gpu-001.yml").write_text("ansible_host: 10.0.0.1\n")
    elif edit == "added":
        (out / "NOTES.md").write_text("mine\n")
    else:
        (out / "keep.tmp").write_text("second edit\n")
        (out / "keep.tmp").rename(out / "keep")
    done = run.wait()
    assert done.returncode == 1 and "changed while alicerce wrote the new tree" in done.stderr, done.stderr
    assert (out / MANIFEST).read_text() == OLD[MANIFEST]
    written = {
        "generated": out / "keep",
        "kept": out / "ansible/host_vars/gpu-001.yml",
        "added": out / "NOTES.md",
        "edited-again": out / "keep",
    }
    assert written[edit].is_file()
    if edit == "edited-again":
        assert written[edit].read_text() == "second edit\n"
    assert not list(tmp_path.glob(".out.alicerce-stage-*"))


@pytest.fixture
def bind_mount(tmp_path: Path) -> Iterator[Callable[[Path, Path], None]]:
    """Bind-mount a folder (root only; skipped where mounting is not allowed), unmounted at the end."""
    mounted: list[Path] = []

    def mount(source: Path, at: Path) -> None:
        # CI runs as root where mounting works: there a missing mount fails the test rather than skipping it unseen
        unable = pytest.fail if os.environ.get("CI", "").lower() == "true" else pytest.skip
        if shutil.which("mount") is None or os.geteuid() != 0:
            unable("bind mounts need root")
        done = subprocess.run(["mount", "--bind", str(source), str(at)], capture_output=True, check=False)
        if done.returncode != 0:
            unable(f"cannot bind-mount here: {done.stderr!r}")
        mounted.append(at)

    yield mount
    if mounted:  # wherever a mount ended up (a failing run may have moved it with a tree), it goes
        from alicerce.emit.files import _mounted

        for at in sorted((p for p in _mounted() if Path(p).is_relative_to(tmp_path)), key=len, reverse=True):
            subprocess.run(["umount", "-l", at], check=False)


def test_a_mount_inside_the_output_folder_is_refused_and_what_it_shows_survives(tmp_path: Path, bind_mount: Any) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("precious\n")
    (out / "ansible" / ".cache").mkdir(parents=True)
    bind_mount(outside, out / "ansible" / ".cache")
    with pytest.raises(OutputError, match=r"holds a mount point \(ansible/.cache\)"):
        write_tree(out, NEW, force=True)
    assert (outside / "precious.txt").read_text() == "precious\n"


def test_the_output_folder_as_a_mount_point_is_refused_before_any_work(tmp_path: Path, bind_mount: Any) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    bind_mount(out, out)
    with pytest.raises(OutputError, match="is a mount point"):
        check_output(out)


def test_removing_an_old_tree_stops_at_a_mount_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever let a mount into an old tree (it was mounted after the check), removal never crosses it."""
    old = tmp_path / ".out.alicerce-old-abcd1234"
    (old / "mnt").mkdir(parents=True)
    (old / "mnt" / "precious.txt").write_text("precious\n")
    (old / "file.txt").write_text("ours\n")
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == old / "mnt" or real(path))
    warning = remove(old)
    assert warning is not None and "mount point" in warning
    assert (old / "mnt" / "precious.txt").read_text() == "precious\n"
    assert not (old / "file.txt").exists()


def test_leftovers_that_cannot_be_removed_do_not_pile_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that cannot remove the old tree (no permission, a mount) warns; the third such leftover stops the runs."""
    from alicerce.emit import files

    out = tmp_path / "out"
    write_tree(out, OLD)
    monkeypatch.setattr(files, "_purge", lambda path, device, table: False)
    for _ in range(files.MAX_LEFTOVERS):
        assert write_tree(out, OLD).warnings
    with pytest.raises(OutputError, match="cannot be removed"):
        write_tree(out, OLD)
    assert len(list(tmp_path.glob(".out.alicerce-*-*"))) == files.MAX_LEFTOVERS
    monkeypatch.undo()
    assert write_tree(out, OLD).warnings == []  # once they can go, the next run removes them all
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.alicerce-lock", "out"]


def test_a_kept_path_that_links_to_the_root_folder_is_carried_as_a_link_and_never_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    (out / "ansible").mkdir()
    (out / "ansible" / "host_vars").symlink_to("/")
    walked: list[str] = []
    real_walk = os.walk
    monkeypatch.setattr(os, "walk", lambda top, *a, **k: (walked.append(str(top)), real_walk(top, *a, **k))[1])
    write_tree(out, NEW)
    assert os.readlink(out / "ansible" / "host_vars") == "/"
    assert str(out / "ansible" / "host_vars") not in walked


def test_an_output_path_with_a_nul_character_is_refused() -> None:
    with pytest.raises(OutputError, match="NUL"):
        check_output(Path("out\0x"))


def test_a_host_vars_file_saved_between_the_last_check_and_the_swap_is_carried_into_the_new_tree(tmp_path: Path) -> None:
    """Issue 22: the writer pauses at ``staged`` (after its last re-check, just before the exchange); an editor
    saves a new host_vars file and replaces another (a new inode) then. Both must be in the new tree."""
    out = tmp_path / "out"
    write_tree(out, OLD)
    host_vars = out / "ansible" / "host_vars"
    host_vars.mkdir(parents=True)
    (host_vars / "gpu-001.yml").write_text("ansible_host: 10.0.0.1\n")
    (host_vars / "gpu-003.yml").write_text("ansible_host: 10.0.0.3\n")
    run = writer(out, NEW, ALICERCE_FAULT="staged=4")
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(".out.alicerce-stage-*/ansible/host_vars/gpu-003.yml")) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.5)  # the re-check of this small tree takes milliseconds: the writer now waits at the swap
    (host_vars / "gpu-002.yml").write_text("ansible_host: 10.0.0.2\n")
    (host_vars / "gpu-001.yml.tmp").write_text("ansible_host: 10.9.9.1\n")
    (host_vars / "gpu-001.yml.tmp").rename(host_vars / "gpu-001.yml")
    (host_vars / "gpu-003.yml").unlink()
    done = run.wait()
    assert done.returncode == 0, done.stderr
    assert (out / MANIFEST).read_text() == NEW[MANIFEST]  # the new tree went in
    assert (host_vars / "gpu-002.yml").read_text() == "ansible_host: 10.0.0.2\n"
    assert (host_vars / "gpu-001.yml").read_text() == "ansible_host: 10.9.9.1\n"
    assert not (host_vars / "gpu-003.yml").exists()
    assert sorted(p.name for p in host_vars.iterdir()) == ["gpu-001.yml", "gpu-002.yml"]
    assert not list(tmp_path.glob(".out.alicerce-*-*"))
