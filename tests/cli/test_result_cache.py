"""The validate result cache: replays exactly, and misses whenever anything that matters changed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from alicerce.cli.fastpath import parse_validate
from alicerce.cli.result_cache import Request, Result
from tests.conftest import ROOT, alicerce


def run(args: list[str], cwd: Path, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, env={"ALICERCE_CACHE_DIR": str(cache), **env})


def entries(cache: Path) -> int:
    return len(list(cache.glob("validate/*/*.json")))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "examples" / "mistakes.yaml", tmp_path / "spec.yaml")
    return tmp_path


def test_a_replay_is_identical_to_the_full_check(workdir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for fmt in ("text", "json"):
        first = run(["validate", "spec.yaml", "--format", fmt], workdir, cache)
        second = run(["validate", "spec.yaml", "--format", fmt], workdir, cache)
        uncached = run(["validate", "spec.yaml", "--format", fmt], workdir, cache, ALICERCE_NO_CACHE="1")
        assert first.returncode == second.returncode == uncached.returncode == 2
        assert first.stdout == second.stdout == uncached.stdout
        assert first.stderr == second.stderr == uncached.stderr
    assert entries(cache) == 2


def test_a_changed_spec_is_checked_again(workdir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert run(["validate", "spec.yaml"], workdir, cache).returncode == 2
    spec = workdir / "spec.yaml"
    fixed = spec.read_text().replace("account: 123456789012", 'account: "123456789012"')
    fixed = fixed.replace("purpose: trainig", "purpose: training").replace("instanceTyp:", "instanceType:")
    fixed = fixed.replace("zones: [us-east-1a]", "zones: [us-east-1a, us-east-1b]")  # EKS needs two zones (AL312)
    spec.write_text(fixed)
    result = run(["validate", "spec.yaml"], workdir, cache)
    assert result.returncode == 2  # the GPU pool still lacks its taint
    assert [line.split("error[")[1][:5] for line in result.stdout.splitlines()] == ["AL218"]
    assert entries(cache) == 2


def test_the_date_is_part_of_the_key(workdir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run(["validate", "spec.yaml"], workdir, cache, ALICERCE_TODAY="2026-01-01")
    run(["validate", "spec.yaml"], workdir, cache, ALICERCE_TODAY="2026-01-02")
    assert entries(cache) == 2


def test_a_corrupt_entry_is_ignored(workdir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run(["validate", "spec.yaml"], workdir, cache)
    for entry in cache.glob("validate/*/*.json"):
        entry.write_text("{not json")
    result = run(["validate", "spec.yaml"], workdir, cache)
    assert result.returncode == 2 and "AL102" in result.stdout


def test_no_cache_writes_nothing(workdir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run(["validate", "spec.yaml"], workdir, cache, ALICERCE_NO_CACHE="1")
    assert not cache.exists()


@pytest.mark.parametrize(
    ("argv", "request_"),
    [
        (["validate"], Request("platform.yaml", None, "text")),
        (["validate", "x.yaml", "--env", "prod", "-f", "json"], Request("x.yaml", "prod", "json")),
        (["validate", "--env=dev", "--format=text", "y.yaml"], Request("y.yaml", "dev", "text")),
        (["validate", "--all-envs"], Request("platform.yaml", None, "text")),
        (["validate", "--format", "sarif", "--", "platform.yaml"], Request("platform.yaml", None, "sarif")),  # generated CI's form
        (["validate", "--", "-odd.yaml"], Request("-odd.yaml", None, "text")),
        (["validate", "a.yaml", "--", "b.yaml"], None),
        (["validate", "--", "a.yaml", "--env", "prod"], None),
        (["validate", "--help"], None),
        (["validate", "--env", "a", "--all-envs"], None),
        (["validate", "-f", "yaml"], None),
        (["validate", "a.yaml", "b.yaml"], None),
        (["validate", "--env"], None),
        (["show", "--env", "prod"], None),
        ([], None),
    ],
)
def test_only_plain_validate_command_lines_take_the_fast_path(argv: list[str], request_: Request | None) -> None:
    assert parse_validate(argv) == request_


def test_a_cache_entry_is_written_whole_and_private_or_not_at_all(tmp_path: Path) -> None:
    """Entries are written to a private file beside them and renamed into place (a concurrent reader sees no entry or a
    whole one); a folder that cannot be written is skipped and leaves no stray file."""
    import os
    import stat

    from alicerce.spec.cachedir import write_entry

    entry = tmp_path / "cache" / "validate" / "ab" / "key.json"
    write_entry(entry, b"{}")
    write_entry(entry, b'{"second": 1}')
    assert entry.read_bytes() == b'{"second": 1}'
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert sorted(p.name for p in entry.parent.iterdir()) == ["key.json"]
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be")
    write_entry(blocked / "key.json", b"{}")  # no error, nothing written
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        write_entry(locked / "key.json", b"{}")
        assert os.geteuid() == 0 or list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_the_key_follows_alicerces_code_and_data_but_not_its_ansible_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing a module or a catalog data file invalidates every stored result; the Ansible content (roles, modules
    run on the nodes), which validate never reads, is not walked."""
    import os

    from alicerce.cli import result_cache

    package = tmp_path / "alicerce"
    for name in ("rules/base.py", "catalog/data/gpus.yaml", "ansible/library/module.py", "ansible/roles/r/tasks/main.yaml"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("x = 1\n")
    monkeypatch.setattr(result_cache, "PACKAGE", package)

    def fingerprint() -> str:
        result_cache._fingerprint.cache_clear()
        return result_cache._fingerprint()

    def touch(name: str, stamp: int) -> None:
        os.utime(package / name, ns=(stamp, stamp))

    first = fingerprint()
    touch("ansible/library/module.py", 10**18)
    touch("ansible/roles/r/tasks/main.yaml", 10**18)
    assert fingerprint() == first
    touch("rules/base.py", 10**18)
    second = fingerprint()
    assert second != first
    touch("catalog/data/gpus.yaml", 10**18)
    assert fingerprint() != second
    result_cache._fingerprint.cache_clear()


def test_the_cache_keys_hash_is_sha256() -> None:
    """The keys are hashed without hashlib (alicerce.spec.cachedir.sha256): the digests are SHA-256's all the same."""
    import hashlib

    from alicerce.spec.cachedir import sha256

    for data in (b"", b"abc", bytes(range(256)) * 300):
        hasher = sha256(data[:7])
        hasher.update(data[7:])
        assert hasher.hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_validate_served_in_process_leaves_the_garbage_collector_as_it_found_it(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path turns the cyclic collector off while it checks (a short-lived process), and back on after."""
    import gc

    from alicerce.cli.fastpath import serve

    monkeypatch.setenv("ALICERCE_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[bool] = []
    monkeypatch.setattr("alicerce.cli.fastpath.run_validate", lambda request: seen.append(gc.isenabled()) or Result("", "", 0))
    assert gc.isenabled()
    assert serve(["validate", str(workdir / "spec.yaml")]) == 0
    assert seen == [False] and gc.isenabled()
