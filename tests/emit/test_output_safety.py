"""`alicerce generate` never destroys a user's files: the output contract, atomic swaps, the lock.

Every case runs the CLI (`alicerce()`) inside a throwaway "platform repository" (the spec, a `.git`,
notes), as a user would. Crashes are injected with ``ALICERCE_FAULT=<point>``: the writer kills itself
with SIGKILL at that exact step, so every trial hits the step it names; those runs and the races are
processes of their own (`Forked`: a forked child of the test process).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alicerce.cli import build_app
from alicerce.emit.tree import KEPT, MANIFEST
from tests.conftest import ROOT, Forked, alicerce

REFERENCE = (ROOT / "platform.yaml").read_text("utf-8")
# The kill and race trials run the writer over a 43-file tree (the minimal example, its environment named prod):
# the kill points and the lock do not depend on the tree's size, and its generate costs ~0.16 CPU-s against
# the reference's ~0.8. One trial of each test still runs the reference's ~400-file tree. The tests of a folder,
# a lock, a manifest or the workflows use it too; those of hand edits and kept paths (ansible/) the reference.
SMALL = (ROOT / "examples" / "minimal.yaml").read_text("utf-8").replace("\n  dev:\n", "\n  prod:\n", 1)


# Each `generate` fsyncs every file and folder it writes (~500 for the reference prod tree): on this disk under
# load that was most of these tests' time (a kill trial ~11 s of wall for ~2 CPU-s). A kill, a crash or a
# second run never needs the data on the disk, only in the page cache, so the repositories live in a
# memory file system when there is one with room (the same calls: rename, renameat2, flock, link).
SHM = Path("/dev/shm")


def _memory_folder(tmp_path: Path) -> Path:
    try:
        stat = os.statvfs(SHM)
    except OSError:
        return tmp_path
    if not os.access(SHM, os.W_OK) or stat.f_bavail * stat.f_frsize < 512 * 2**20:
        return tmp_path
    return Path(tempfile.mkdtemp(prefix="alicerce-output-safety-", dir=SHM))


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A platform repository: the spec, a second spec variant (both also small), a .git folder and a note."""
    base = _memory_folder(tmp_path)
    yield _fill(base / "repo")
    if base != tmp_path:
        shutil.rmtree(base, ignore_errors=True)


def _fill(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "platform.yaml").write_text(REFERENCE)
    (root / "other.yaml").write_text(REFERENCE.replace("CC-4410", "CC-9999"))
    (root / "small.yaml").write_text(SMALL)
    (root / "small-other.yaml").write_text(SMALL.replace("CC-0000", "CC-9999"))
    (root / "NOTES.md").write_text("my notes\n")
    return root


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (hidden ones too) with a digest of its content or link target.

    A lock file counts by its presence only: it is alicerce's, and each run that takes it writes its pid.
    """
    out: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.name.endswith(".alicerce-lock"):
            out[rel] = "lock"
        elif path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "special"
    return out


def complete_tree(out: Path) -> str:
    """The manifest's digest when ``out`` holds exactly the tree its manifest lists (plus kept paths)."""
    manifest = json.loads((out / MANIFEST).read_text("utf-8"))
    present = {
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if (p.is_file() or p.is_symlink()) and not p.relative_to(out).as_posix().startswith(KEPT)
    }
    assert present == set(manifest["files"]) | {MANIFEST}
    for relative, digest in manifest["files"].items():
        assert hashlib.sha256((out / relative).read_bytes()).hexdigest() == digest, relative
    return hashlib.sha256((out / MANIFEST).read_bytes()).hexdigest()


def leftovers(parent: Path, name: str) -> list[str]:
    """Siblings a run of ``generate --out parent/name`` may leave behind, but the lock file."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}.") and p.name != f".{name}.alicerce-lock")


def generate(repo: Path, *args: str, spec: str = "platform.yaml", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return alicerce("generate", "--env", "prod", spec, *args, cwd=repo, env=env)


def assert_refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


# -- 1. data loss: the current folder, '', a folder holding the spec or a .git ---------------------


@pytest.mark.parametrize("out", [".", "", "./", "sub/.."])
def test_the_current_folder_is_refused_and_untouched(repo: Path, out: str) -> None:
    (repo / "sub").mkdir()
    before = snapshot(repo)
    assert_refused(generate(repo, "--out", out), "current folder")
    assert snapshot(repo) == before


def test_a_folder_that_holds_the_spec_is_refused(repo: Path) -> None:
    before = snapshot(repo)
    assert_refused(alicerce("generate", "--env", "prod", str(repo / "platform.yaml"), "--out", str(repo), cwd=ROOT), "platform.yaml")
    # a folder above the spec's folder
    assert_refused(
        alicerce("generate", "--env", "prod", str(repo / "platform.yaml"), "--out", str(repo.parent), cwd=ROOT), "holds the spec"
    )
    # from below, the folder that holds the spec also holds the current folder
    nested = repo / "deep" / "er"
    nested.mkdir(parents=True)
    assert_refused(alicerce("generate", "--env", "prod", "../../platform.yaml", "--out", "../..", cwd=nested), "current folder")
    assert snapshot(repo) == {**before, "deep": "dir", "deep/er": "dir"}


def test_a_folder_with_a_git_repository_is_refused_even_with_force(repo: Path) -> None:
    assert generate(repo, "--out", "out", spec="small.yaml").returncode == 0
    (repo / "out" / ".git").mkdir()
    before = snapshot(repo)
    assert_refused(generate(repo, "--out", "out", "--force", spec="small.yaml"), ".git")
    assert snapshot(repo) == before


def test_a_foreign_non_empty_folder_is_refused(repo: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "design.md").write_text("mine\n")
    before = snapshot(repo)
    assert_refused(generate(repo, "--out", "docs"), "docs", "manifest")
    assert_refused(generate(repo, "--out", "docs", "--force"), "docs")
    assert snapshot(repo) == before


def test_an_empty_folder_and_a_missing_one_are_written(repo: Path) -> None:
    (repo / "empty").mkdir()
    assert generate(repo, "--out", "empty", spec="small.yaml").returncode == 0
    complete_tree(repo / "empty")
    assert generate(repo, "--out", "new/deeper/out", spec="small.yaml").returncode == 0
    complete_tree(repo / "new" / "deeper" / "out")
    assert (repo / "NOTES.md").read_text() == "my notes\n"


# -- 3. a file, the spec itself, symlinks -------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "spec", "link-to-folder", "link-to-file", "dangling-link", "link-to-owned-tree", "fifo"])
def test_a_path_that_is_not_a_folder_is_refused_and_untouched(repo: Path, kind: str) -> None:
    target = repo / "target"
    if kind == "file":
        target.write_text("data\n")
    elif kind == "spec":
        target = repo / "small.yaml"
    elif kind == "link-to-folder":
        (repo / "elsewhere").mkdir()
        target.symlink_to("elsewhere")
    elif kind == "link-to-file":
        target.symlink_to("NOTES.md")
    elif kind == "dangling-link":
        target.symlink_to("nowhere")
    elif kind == "link-to-owned-tree":
        assert generate(repo, "--out", "owned", spec="small.yaml").returncode == 0
        target.symlink_to("owned")
    else:
        os.mkfifo(target)
    before = snapshot(repo)
    assert_refused(generate(repo, "--out", target.name, spec="small.yaml"), target.name)
    assert snapshot(repo) == before


# -- 2. hand edits, removed and added files ----------------------------------------------------------


def test_hand_edits_and_added_files_stop_the_run_until_force(repo: Path) -> None:
    assert generate(repo, "--out", "out").returncode == 0
    out = repo / "out"
    (out / "ansible" / "inventory.yml").write_text("edited by hand\n")
    (out / "NOTES.md").write_text("notes inside the tree\n")
    (out / "ansible" / "site.yml").unlink()
    (out / "ansible" / "host_vars").mkdir()
    (out / "ansible" / "host_vars" / "gpu-001.dc1.acme.example.yml").write_text("ansible_host: 10.30.0.1\n")
    before = snapshot(repo)

    refused = generate(repo, "--out", "out")
    assert_refused(refused, "ansible/inventory.yml", "NOTES.md", "ansible/site.yml", "--force")
    assert "gpu-001" not in refused.stderr  # a kept path is the user's, never a change
    assert snapshot(repo) == before
    as_json = generate(repo, "--out", "out", "--format", "json")
    assert as_json.returncode == 2
    report = json.loads(as_json.stdout)
    assert report["changes"] == {"edited": ["ansible/inventory.yml"], "removed": ["ansible/site.yml"], "added": ["NOTES.md"]}

    forced = generate(repo, "--out", "out", "--force", "--format", "json")
    assert forced.returncode == 0, forced.stderr
    complete_tree(out)
    # nothing the user wrote is lost: replaced files are kept under .alicerce/displaced/<time>/
    displaced = list((out / ".alicerce" / "displaced").iterdir())
    assert len(displaced) == 1
    assert (displaced[0] / "ansible" / "inventory.yml").read_text() == "edited by hand\n"
    assert (displaced[0] / "NOTES.md").read_text() == "notes inside the tree\n"
    assert (out / "ansible" / "host_vars" / "gpu-001.dc1.acme.example.yml").read_text() == "ansible_host: 10.30.0.1\n"
    assert json.loads(forced.stdout)["displaced"] == ["NOTES.md", "ansible/inventory.yml"]
    # the next run finds nothing changed: kept and displaced files are not changes
    assert generate(repo, "--out", "out").returncode == 0
    assert (out / "ansible" / "host_vars" / "gpu-001.dc1.acme.example.yml").is_file()
    assert leftovers(repo, "out") == []


def test_kept_paths_survive_a_tree_that_has_no_folder_for_them(repo: Path) -> None:
    """dev has no on-prem site, so no ansible/: the user's host_vars are still carried, not an added folder."""
    assert generate(repo, "--out", "out").returncode == 0
    host_vars = repo / "out" / "ansible" / "host_vars"
    host_vars.mkdir()
    (host_vars / "gpu-001.dc1.acme.example.yml").write_text("ansible_host: 10.30.0.1\n")
    dev = alicerce("generate", "--env", "dev", "platform.yaml", "--out", "out", cwd=repo)
    assert dev.returncode == 0, dev.stderr
    assert (host_vars / "gpu-001.dc1.acme.example.yml").read_text() == "ansible_host: 10.30.0.1\n"
    assert generate(repo, "--out", "out").returncode == 0
    complete_tree(repo / "out")


def test_a_file_edited_to_what_generate_writes_is_not_a_change(repo: Path) -> None:
    assert generate(repo, "--out", "out").returncode == 0
    first = (repo / "out" / "ansible" / "site.yml").read_bytes()
    (repo / "out" / "ansible" / "site.yml").write_bytes(first)
    assert generate(repo, "--out", "out").returncode == 0


def test_an_unreadable_manifest_makes_every_file_a_change(repo: Path) -> None:
    assert generate(repo, "--out", "out", spec="small.yaml").returncode == 0
    (repo / "out" / MANIFEST).write_text("{not json")
    assert_refused(generate(repo, "--out", "out", spec="small.yaml"), "manifest")
    assert generate(repo, "--out", "out", "--force", spec="small.yaml").returncode == 0
    complete_tree(repo / "out")


# -- 6. paths that end in an OS error ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "words"),
    [
        ("a/b/..", ["a/b/.."]),
        ("..", [".."]),
        ("NOTES.md/out", ["NOTES.md is not a folder"]),
        ("/proc/alicerce-out", ["/proc/alicerce-out"]),
        ("/proc/self/out", ["/proc/self/out"]),
    ],
)
def test_impossible_output_paths_are_user_errors(repo: Path, out: str, words: list[str]) -> None:
    (repo / "a" / "b").mkdir(parents=True)
    before = snapshot(repo)
    assert_refused(generate(repo, "--out", out, spec="small.yaml"), *words)
    assert snapshot(repo) == before


def test_a_read_only_file_system_is_a_user_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EROFS where the staging folder is made (a real read-only mount needs privileges CI lacks)."""
    from alicerce.emit import files

    real_mkdir = os.mkdir

    def read_only(path: str | os.PathLike[str], mode: int = 0o777) -> None:
        if str(path).startswith(str(repo)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real_mkdir(path, mode)

    monkeypatch.setattr(files.os, "mkdir", read_only)
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(build_app(), ["generate", "--env", "prod", "small.yaml", "--out", "out"])
    assert result.exit_code == 2, result.output
    assert "Read-only file system" in result.output
    assert not (repo / "out").exists() and leftovers(repo, "out") == []


# -- 4. atomicity: SIGKILL at every step, the folder always holds a complete tree --------------------

POINTS = ("locked", "file", "staged", "swapped", "done")
FALLBACK_POINTS = (*POINTS, "between-renames")


def _trial(repo: Path, point: str, *, fallback: bool, states: dict[str, str], specs: tuple[str, str]) -> None:
    out = repo / "out"
    before = complete_tree(out)
    target_spec = specs[1] if before == states[specs[0]] else specs[0]
    env = {"ALICERCE_FAULT": point}
    if fallback:
        env["ALICERCE_RENAME_EXCHANGE"] = "0"
    killed = Forked("generate", "--env", "prod", target_spec, "--out", "out", cwd=repo, env=env).wait()
    assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
    if out.exists():
        assert complete_tree(out) in (before, states[target_spec]), point
    else:
        # only the fallback's two renames leave a moment without the folder; the old tree waits beside it
        assert fallback and point == "between-renames"
        old = [p for p in repo.iterdir() if p.name.startswith(".out.alicerce-old-")]
        assert len(old) == 1 and complete_tree(old[0]) == before
    rerun = generate(repo, "--out", "out", spec=target_spec)
    assert rerun.returncode == 0, rerun.stderr
    assert complete_tree(out) == states[target_spec]
    assert leftovers(repo, "out") == []


def _states(repo: Path, *specs: str) -> dict[str, str]:
    """The complete tree of each spec, generated in turn into repo/out (the last one stays there)."""
    states = {}
    for spec in specs:
        assert generate(repo, "--out", "out", spec=spec).returncode == 0
        states[spec] = complete_tree(repo / "out")
    return states


@pytest.mark.parametrize("fallback", [False, True], ids=["rename-exchange", "two-renames"])
def test_a_killed_generate_leaves_a_complete_tree_and_the_next_run_cleans_up(repo: Path, fallback: bool) -> None:
    small = ("small-other.yaml", "small.yaml")
    states = _states(repo, *small)
    files = len(json.loads((repo / "out" / MANIFEST).read_text())["files"])
    rng = random.Random(9)
    points = FALLBACK_POINTS if fallback else POINTS
    # every step once, and the staging step twice ("file:N" kills after the Nth file is staged, N drawn each
    # time): ALICERCE_FAULT kills at exactly the step it names, so a repeated step replays the same kill (the
    # random repeats this test made before cost ~1 CPU-minute and reached no other code)
    trials = [*points, "file"]
    for point in trials:
        _trial(repo, f"file:{rng.randint(1, files)}" if point == "file" else point, fallback=fallback, states=states, specs=small)
    if not fallback:
        # and one kill in the middle of staging the reference's tree (staging is the same code in both params; the
        # second would only repeat it at ~3 CPU-s)
        reference = ("other.yaml", "platform.yaml")
        states.update(_states(repo, *reference))
        big = len(json.loads((repo / "out" / MANIFEST).read_text())["files"])
        _trial(repo, f"file:{rng.randint(files, big)}", fallback=fallback, states=states, specs=reference)
    assert (repo / "NOTES.md").read_text() == "my notes\n" and (repo / ".git" / "HEAD").is_file()


def test_leftovers_of_an_old_style_crash_are_recovered(repo: Path) -> None:
    """The writer before this contract crashed between its renames leaving `.out.old` and no out/."""
    assert generate(repo, "--out", "out", spec="small.yaml").returncode == 0
    state = complete_tree(repo / "out")
    (repo / "out").rename(repo / ".out.old")
    (repo / ".out.abcd1234").mkdir()  # its staging folder is not recognisably alicerce's: kept
    assert generate(repo, "--out", "out", spec="small.yaml").returncode == 0
    assert complete_tree(repo / "out") == state
    assert leftovers(repo, "out") == [".out.abcd1234"]


# -- 5. concurrency: two runs at once, and a held lock ----------------------------------------------


def test_two_runs_at_once_never_crash_and_leave_a_complete_tree(repo: Path) -> None:
    states = _states(repo, "small-other.yaml", "small.yaml", "other.yaml", "platform.yaml")
    # three races and three waits for the lock (ten before: the same two cases, repeated); the first race is
    # the reference's two trees, the others the small ones (the lock and the swap do not depend on the size)
    for trial in range(6):
        specs = ("platform.yaml", "other.yaml") if trial == 0 else ("small.yaml", "small-other.yaml")
        # in half the trials the first run holds the lock a while, so the second must wait for it
        pause = {"ALICERCE_FAULT": "locked=0.4"} if trial % 2 else {}
        first, second = specs
        runs = [
            Forked("generate", "--env", "prod", first, "--out", "out", cwd=repo, env=pause),
            Forked("generate", "--env", "prod", second, "--out", "out", cwd=repo),
        ]
        for run in runs:
            result = run.wait()
            assert result.returncode == 0, result.stderr
            assert "Traceback" not in result.stderr
        assert complete_tree(repo / "out") in {states[spec] for spec in specs}
        assert leftovers(repo, "out") == []


def test_a_held_lock_is_waited_for_then_refused_naming_its_holder(repo: Path) -> None:
    assert generate(repo, "--out", "out", spec="small.yaml").returncode == 0
    before = snapshot(repo / "out")
    fd = os.open(repo / ".out.alicerce-lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"4242\n")
        result = generate(repo, "--out", "out", env={"ALICERCE_LOCK_WAIT": "0.3"}, spec="small.yaml")
    finally:
        os.close(fd)
    assert_refused(result, "pid 4242")
    assert snapshot(repo / "out") == before


def test_leftover_names_are_recognisable() -> None:
    from alicerce.emit.files import LEFTOVER

    assert LEFTOVER.fullmatch(".out.alicerce-stage-k3j9x0_a") and LEFTOVER.fullmatch(".out.alicerce-old-k3j9x0_a")
    assert not LEFTOVER.fullmatch(".out.old") and not re.fullmatch(LEFTOVER, ".notes.md")


# -- 6. --ci-dir: a folder shared with the user's own workflows, under the same contract (issue 22) ---


def test_a_workflow_linked_outside_the_repository_is_never_written_through(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours to write\n")
    workflows = repo / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "alicerce-pr.yml").symlink_to(outside)
    (workflows / "mine.yml").write_text("name: mine\n")
    before = snapshot(repo)

    refused = generate(repo, "--out", "out", "--ci-dir", ".github/workflows", spec="small.yaml")
    assert_refused(refused, "alicerce-pr.yml", "--force")
    assert snapshot(repo) == before  # refused before the tree was written, too
    assert outside.read_text() == "not yours to write\n"

    forced = generate(repo, "--out", "out", "--ci-dir", ".github/workflows", "--force", spec="small.yaml")
    assert forced.returncode == 0, forced.stderr
    assert outside.read_text() == "not yours to write\n"
    assert not (workflows / "alicerce-pr.yml").is_symlink() and "alicerce" in (workflows / "alicerce-pr.yml").read_text()
    [displaced] = (workflows / ".alicerce-displaced").iterdir()
    assert os.readlink(displaced / "alicerce-pr.yml") == str(outside)  # the link itself is what was kept
    assert (workflows / "mine.yml").read_text() == "name: mine\n"  # the user's own workflow is left alone


def test_a_linked_ci_dir_is_refused(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (repo / ".github").mkdir()
    (repo / ".github" / "workflows").symlink_to(tmp_path / "elsewhere")
    assert_refused(generate(repo, "--out", "out", "--ci-dir", ".github/workflows", spec="small.yaml"), "symbolic link")
    assert list((tmp_path / "elsewhere").iterdir()) == [] and not (repo / "out").exists()


def test_a_hand_edited_workflow_stops_the_run_until_force_which_keeps_it(repo: Path) -> None:
    assert generate(repo, "--out", "out", "--ci-dir", ".github/workflows", spec="small.yaml").returncode == 0
    workflows = repo / ".github" / "workflows"
    pr = workflows / "alicerce-pr.yml"
    generated = pr.read_text()
    pr.write_text(generated + "# my change\n")
    before = snapshot(repo)

    refused = generate(repo, "--out", "out", "--ci-dir", ".github/workflows", spec="small.yaml")
    assert_refused(refused, "edited", "alicerce-pr.yml", "--force")
    assert snapshot(repo) == before

    forced = generate(repo, "--out", "out", "--ci-dir", ".github/workflows", "--force", spec="small.yaml")
    assert forced.returncode == 0, forced.stderr
    assert pr.read_text() == generated and "replaced 1 changed workflows" in forced.stdout
    [displaced] = (workflows / ".alicerce-displaced").iterdir()
    assert (displaced / "alicerce-pr.yml").read_text() == generated + "# my change\n"
    assert generate(repo, "--out", "out", "--ci-dir", ".github/workflows", spec="small.yaml").returncode == 0  # nothing changed since


@pytest.mark.parametrize("ci", [False, True], ids=["out", "ci-dir"])
def test_force_never_moves_your_files_through_a_linked_displaced_folder(repo: Path, tmp_path: Path, ci: bool) -> None:
    """Security review of issue 22: with the displaced folder a link, --force moved the user's files to where it pointed."""
    args = ("--out", "out", "--ci-dir", ".github/workflows") if ci else ("--out", "out")
    assert generate(repo, *args, spec="small.yaml").returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if ci:
        edited, displaced = repo / ".github" / "workflows" / "alicerce-pr.yml", repo / ".github" / "workflows" / ".alicerce-displaced"
    else:
        edited, displaced = repo / "out" / "reports" / "PLATFORM.md", repo / "out" / ".alicerce" / "displaced"
    edited.write_text("edited by hand\n")
    if displaced.exists():
        shutil.rmtree(displaced)
    displaced.symlink_to(elsewhere)
    before = snapshot(repo)

    refused = generate(repo, *args, "--force", spec="small.yaml")
    assert_refused(refused, "is a link", "remove the link")
    assert snapshot(repo) == before and list(elsewhere.iterdir()) == []
    assert edited.read_text() == "edited by hand\n"
