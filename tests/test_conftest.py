"""tests/conftest.py names tests and fixtures that exist: a rename must not quietly move a test into `make check`."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests.conftest import ROOT, SHARED_FIXTURES, SHARED_GROUPS, SLOW_FIXTURES, SLOW_GROUPS, SLOW_TESTS, Forked, _group, alicerce


def defined(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def test_every_slow_entry_names_an_existing_module_or_test() -> None:
    missing = []
    for entry in SLOW_TESTS:
        path, _, name = entry.partition("::")
        if not (ROOT / path).is_file() or (name and name not in defined(path)):
            missing.append(entry)
    assert missing == []


def test_every_shared_path_and_fixture_exists() -> None:
    assert [prefix for prefix in SHARED_GROUPS if not (ROOT / prefix).exists()] == []
    fixtures = set().union(*(defined(p.relative_to(ROOT).as_posix()) for p in (ROOT / "tests").rglob("*.py")))
    assert sorted((set(SHARED_FIXTURES) | SLOW_FIXTURES) - fixtures) == []


GROUPED = """
import os
import shutil
from pathlib import Path

import pytest


@pytest.mark.parametrize("n", range(6))
@pytest.mark.xdist_group("one")
def test_one(n):
    Path(os.environ["RAN"], f"one-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.parametrize("n", range(6))
@pytest.mark.xdist_group("two")
def test_two(n):
    Path(os.environ["RAN"], f"two-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_loadgroup_keeps_each_group_on_one_worker(tmp_path: Path) -> None:
    """`make test` relies on it: each expensive shared fixture (converged rootfs, previews, wheel) is built once."""
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    ran = tmp_path / "ran"
    ran.mkdir()
    env = {**os.environ, "RAN": str(ran), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.xdist_groups", "-n", "2", "--dist", "loadgroup"]
    done = subprocess.run([*command, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {group: {p.read_text() for p in ran.glob(f"{group}-*")} for group in ("one", "two")}
    assert [len(list(ran.glob(f"{group}-*"))) for group in workers] == [6, 6]
    assert all(len(names) == 1 for names in workers.values()), workers


def test_the_package_runs_from_current_bytecode_in_subprocesses() -> None:
    """conftest compiles alicerce once: the `alicerce` processes of the suite never compile it from source."""
    import importlib.util

    sources = [p for p in (ROOT / "alicerce").rglob("*.py") if "ansible" not in p.relative_to(ROOT / "alicerce").parts[:1]]
    stale = [
        p.relative_to(ROOT).as_posix()
        for p in sources
        if not Path(importlib.util.cache_from_source(str(p))).is_file()
        or Path(importlib.util.cache_from_source(str(p))).stat().st_mtime < p.stat().st_mtime
    ]
    assert len(sources) > 100 and stale == []


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "examples/mistakes.yaml"),  # located errors on stderr, exit code 2
        ("show", "--env", "prod", "--format", "json"),
        ("plan", "platform.yaml", "--env", "prod"),  # a table sized by COLUMNS
        ("validate", "--env", "prod", "--all-envs"),  # a command-line mistake, reported by the CLI framework
        ("generate", "--env", "prod", "platform.yaml", "--out", "."),  # a refusal
    ],
    ids=["errors", "json", "table", "usage", "refusal"],
)
def test_alicerce_in_the_test_process_answers_as_the_installed_script(args: tuple[str, ...]) -> None:
    """The suite runs most `alicerce` commands in its own process: same exit code, stdout and stderr as the script."""
    inside, script = alicerce(*args), alicerce(*args, process=True)
    assert (inside.returncode, inside.stdout, inside.stderr) == (script.returncode, script.stdout, script.stderr)


def test_alicerce_in_the_test_process_leaves_its_state_as_it_found_it(tmp_path: Path) -> None:
    before = (os.getcwd(), dict(os.environ), sys.stdout, sys.stderr, sys.argv)
    assert alicerce("validate", "platform.yaml", cwd=ROOT, env={"ALICERCE_NO_CACHE": "1"}).returncode == 0
    assert alicerce("validate", str(tmp_path / "missing.yaml"), cwd=tmp_path).returncode == 2
    assert (os.getcwd(), dict(os.environ), sys.stdout, sys.stderr, sys.argv) == before


@pytest.mark.parametrize(
    "args",
    [("validate", "examples/mistakes.yaml"), ("generate", "--env", "prod", "platform.yaml", "--out", ".")],
    ids=["errors", "refusal"],
)
def test_a_forked_run_answers_as_the_installed_script(args: tuple[str, ...]) -> None:
    forked, script = Forked(*args).wait(), alicerce(*args, process=True)
    assert (forked.returncode, forked.stdout, forked.stderr) == (script.returncode, script.stdout, script.stderr)


def test_a_forked_run_killed_at_a_fault_dies_alone_and_leaves_the_test_process_as_it_was(tmp_path: Path) -> None:
    """The child is killed by the signal it sends itself (SIGKILL, as the script would be); it neither returns
    into pytest nor runs the test process's exit handlers (which remove this run's result cache folder)."""
    import signal

    cache = Path(os.environ["ALICERCE_CACHE_DIR"])
    before = (os.getcwd(), dict(os.environ), sys.stdout, sys.stderr, sys.argv)
    killed = Forked(
        "generate", "--env", "prod", str(ROOT / "platform.yaml"), "--out", "out", cwd=tmp_path, env={"ALICERCE_FAULT": "locked"}
    )
    assert killed.wait().returncode == -signal.SIGKILL
    done = Forked("validate", str(tmp_path / "missing.yaml"), cwd=tmp_path).wait()
    assert done.returncode == 2 and "missing.yaml" in done.stdout
    assert (os.getcwd(), dict(os.environ), sys.stdout, sys.stderr, sys.argv) == before
    assert cache.is_dir()


def test_a_forked_call_exits_as_python_c_would_and_changes_the_environment_of_the_child_only() -> None:
    def fails() -> None:
        raise ValueError(os.environ["ALICERCE_FORKED_PROBE"])

    failed = Forked.call(fails, env={"ALICERCE_FORKED_PROBE": "seen in the child"}).wait()
    assert failed.returncode == 1 and "ValueError: seen in the child" in failed.stderr and "Traceback" in failed.stderr
    assert Forked.call(lambda: None).wait().returncode == 0
    assert "ALICERCE_FORKED_PROBE" not in os.environ


def test_the_converges_split_into_two_groups_by_the_image_they_start_from() -> None:
    """The runs on the converged image stay with the module fixture that builds it; the runs from a fresh
    rootfs copy go to a second worker (whatever the order a test names its fixtures in)."""

    def group(*fixtures: str) -> str | None:
        return _group(cast(pytest.Item, SimpleNamespace(path=ROOT / "tests/ansible/test_converge.py", fixturenames=list(fixtures))))

    assert group("converged") == group("aptrepo", "generated", "converged_copy") == "converge"
    assert group("rootfs", "aptrepo", "tmp_path_factory") == group("generated", "node_root", "aptrepo") == "converge-fresh"
    assert {"converge", "converge-fresh"} <= SLOW_GROUPS


def test_the_shared_prod_tree_is_read_only(prod_files: Mapping[str, str]) -> None:
    """Tests share one rendered prod tree per worker: one that wrote into it would change what the others read."""
    with pytest.raises(TypeError):
        prod_files["ansible/site.yml"] = "changed"  # type: ignore[index]
    assert prod_files["ansible/site.yml"].startswith("---")


def test_the_rootfs_cache_is_per_user_so_fresh_clones_share_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A fresh clone finds the rootfs an earlier clone built (mmdebstrap ~1 minute), as uv finds its cache."""
    from tests.ansible.rootfs import default_target

    monkeypatch.delenv("ALICERCE_ROOTFS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_target() == tmp_path / "cache" / "alicerce" / "rootfs" / "bookworm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_target() == Path.home() / ".cache" / "alicerce" / "rootfs" / "bookworm"
    assert not default_target().is_relative_to(ROOT)
    monkeypatch.setenv("ALICERCE_ROOTFS", str(tmp_path / "mine"))
    assert default_target() == tmp_path / "mine"


@pytest.mark.skipif(subprocess.run(["which", "gpg"], capture_output=True, check=False).returncode != 0, reason="gpg missing")
def test_the_signed_apt_repository_is_built_once_per_user_and_content(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each converge worker found the repository another run built (a new key each build: the same key is a reuse);
    other packages are another repository, and a stale or half-built folder is never trusted."""
    from tests.ansible import aptrepo

    monkeypatch.delenv("ALICERCE_APTREPO", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one = {"cuda/debian12/x86_64": [aptrepo.Package("nvidia-open", aptrepo.DRIVER)]}
    monkeypatch.setattr(aptrepo, "repositories", lambda: one)
    first = aptrepo.build(aptrepo.default_target())
    assert first.parent == tmp_path / "cache" / "alicerce" / "aptrepo" and (first / "cuda/debian12/x86_64/InRelease").is_file()
    key = (first / "key.asc").read_bytes()
    assert aptrepo.build(aptrepo.default_target()) == first and (first / "key.asc").read_bytes() == key  # reused
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no staging folder left behind
    (first / ".alicerce-aptrepo").write_text("other inputs")  # a folder of other inputs under this name: rebuilt
    assert aptrepo.build(first) == first and (first / "key.asc").read_bytes() != key

    other = {"cuda/debian12/x86_64": [aptrepo.Package("nvidia-open", "580.999.01")]}
    monkeypatch.setattr(aptrepo, "repositories", lambda: other)
    second = aptrepo.build(aptrepo.default_target())
    assert second != first and "580.999.01-1" in (second / "cuda/debian12/x86_64/Packages").read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="overlay mounts need root, as the converges do")
def test_private_copies_keep_their_writes_and_read_as_a_chroot(tmp_path: Path) -> None:
    """The converges' copies (overlay mounts): a write stays in its copy, a copy of a copy sees the first copy's
    changes, and every copy's root is never inode 2 (Ansible's is_chroot fallback would take it for a real host:
    an overlay stacked on an overlay reads so); each is gone after its block. A source overlayfs refuses gets cp -a."""
    from tests.ansible.conftest import private_copy

    source = tmp_path / "source"
    (source / "etc").mkdir(parents=True)
    (source / "etc" / "kept").write_text("source\n")
    (source / "etc" / "removed").write_text("source\n")
    with private_copy(source, tmp_path / "first") as first:
        (first / "etc" / "kept").write_text("first\n")
        (first / "etc" / "removed").unlink()
        (first / "new").write_text("first\n")
        assert os.path.ismount(first) and first.stat().st_ino != 2
        with private_copy(first, tmp_path / "second") as second:
            assert os.path.ismount(second) and second.stat().st_ino != 2  # layered, not an overlay on an overlay
            assert (second / "etc" / "kept").read_text() == "first\n" and not (second / "etc" / "removed").exists()
            (second / "new").write_text("second\n")
            assert (first / "new").read_text() == "first\n"
        assert not second.exists() and (first / "new").read_text() == "first\n"
    assert not first.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["source"]
    assert (source / "etc" / "kept").read_text() == "source\n" and (source / "etc" / "removed").exists()
    assert sorted(p.name for p in source.rglob("*")) == ["etc", "kept", "removed"]

    odd = tmp_path / "a,b"  # a comma ends overlayfs's lowerdir option: no mount, a full copy instead
    shutil.copytree(source, odd)
    with private_copy(odd, tmp_path / "copied") as copied:
        assert not os.path.ismount(copied) and (copied / "etc" / "kept").read_text() == "source\n"
        (copied / "etc" / "kept").write_text("copied\n")
    assert (odd / "etc" / "kept").read_text() == "source\n" and not copied.exists()
