"""Every command maps OS errors on its SPEC and output paths to a located error with exit code 2.

Directories, devices and FIFOs as SPEC, outputs that are directories, files or under /proc: each is
a user mistake, answered at once, with the path and a hint, never with a traceback or a hang.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from alicerce.cli import build_app
from tests.conftest import ROOT, alicerce

SPEC = str(ROOT / "platform.yaml")

COMMANDS = {
    "validate": ["validate"],
    "show": ["show", "--env", "prod"],
    "plan": ["plan"],
    "preview": ["preview", "--env", "prod"],
    "generate": ["generate", "--env", "prod", "--out", "{tmp}/out"],
    "apply": ["apply", "onprem", "--env", "prod", "--workdir", "{tmp}/work"],
}


def command(name: str, spec: str, tmp: Path) -> list[str]:
    return [arg.format(tmp=tmp) for arg in COMMANDS[name]] + [spec]


def assert_located(result: subprocess.CompletedProcess[str], spec: str, *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert f"{spec}:1:1: error[AL000]" in result.stdout, result.stdout
    for word in words:
        assert word in result.stdout, result.stdout


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "spec.fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_directory_as_spec_is_a_located_error(name: str, tmp_path: Path) -> None:
    spec = tmp_path / "specs"
    spec.mkdir()
    assert_located(alicerce(*command(name, str(spec), tmp_path)), str(spec), "is a directory")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
@pytest.mark.parametrize("name", ["validate", "generate"])
def test_a_device_as_spec_is_refused_at_once(name: str, device: str, tmp_path: Path) -> None:
    assert_located(alicerce(*command(name, device, tmp_path), timeout=20), device, "not a regular file")


@pytest.mark.parametrize("name", ["validate", "show"])
def test_a_fifo_as_spec_is_refused_without_waiting_for_a_writer(name: str, fifo: Path, tmp_path: Path) -> None:
    assert_located(alicerce(*command(name, str(fifo), tmp_path), timeout=20), str(fifo), "not a regular file")


def test_a_spec_path_through_a_file_is_a_located_error(tmp_path: Path) -> None:
    spec = f"{SPEC}/inner.yaml"
    assert_located(alicerce("validate", spec), spec, "Not a directory")


def test_plan_plot_into_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "charts.png"
    target.write_text("not a folder\n")
    result = alicerce("plan", SPEC, "--plot", str(target))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert str(target) in result.stderr and "not a folder" in result.stderr
    assert target.read_text() == "not a folder\n"


@pytest.mark.parametrize("kind", ["directory", "device", "under-a-file", "proc"])
def test_schema_output_that_cannot_hold_a_file_is_refused(kind: str, tmp_path: Path) -> None:
    target = {
        "directory": str(tmp_path),
        "device": "/dev/null",
        "under-a-file": f"{SPEC}/schema.json",
        "proc": "/proc/alicerce/schema.json",
    }[kind]
    result = alicerce("schema", "--output", target)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert target in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_schema_output_writes_a_regular_file_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("old\n")
    (tmp_path / "link.json").symlink_to("real.json")
    assert alicerce("schema", "--output", str(tmp_path / "link.json")).returncode == 0
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real.json").read_text() == (ROOT / "schema" / "platform.schema.json").read_text()


@pytest.mark.parametrize("kind", ["file", "under-a-file", "proc"])
def test_init_into_an_impossible_path_is_refused(kind: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x\n")
    target = {"file": str(tmp_path / "file"), "under-a-file": str(tmp_path / "file" / "repo"), "proc": "/proc/alicerce-repo"}[kind]
    result = alicerce("init", target)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert (tmp_path / "file").read_text() == "x\n"


def test_init_into_the_empty_current_folder_writes_in_place(tmp_path: Path) -> None:
    result = alicerce("init", ".", "--name", "here", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "platform.yaml").is_file()
    assert alicerce("validate", cwd=tmp_path).returncode == 0


def test_apply_workdir_under_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x\n")
    result = alicerce("apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path / "file"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "file" in result.stderr


@pytest.mark.parametrize("name", ["runner", "kubespray-env"])
def test_apply_with_a_file_where_its_run_folder_goes_is_refused_before_any_work(name: str, tmp_path: Path) -> None:
    (tmp_path / "w" / "prod").mkdir(parents=True)
    (tmp_path / "w" / "prod" / name).write_text("x\n")
    result = alicerce("apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path / "w"), "--kubespray", "skip")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"prod/{name} is not a folder" in result.stderr
    assert not (tmp_path / "w" / "prod" / "project").exists()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_symlink_loop_as_spec_is_a_located_error(name: str, tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to("loop.yaml")
    assert_located(alicerce(*command(name, str(loop), tmp_path)), str(loop), "symbolic links")


@pytest.mark.parametrize("option", ["--out", "--ci-dir"])
def test_a_symlink_loop_as_an_output_folder_is_a_user_error(option: str, tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    args = ["--out", str(tmp_path / "a")] if option == "--out" else ["--out", str(tmp_path / "out"), "--ci-dir", str(tmp_path / "a")]
    result = alicerce("generate", "--env", "prod", SPEC, *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert str(tmp_path / "a") in result.stderr


# The corrupt-manifest cases generate the minimal example's 43-file tree, not the reference's ~400: the manifest is
# read and refused before any file of the tree matters (each case was ~1.3 CPU-s, most of it rendering the tree).
SMALL = ("--env", "dev", str(ROOT / "examples" / "minimal.yaml"))


@pytest.fixture(scope="session")
def small_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The minimal example's tree as `alicerce generate` writes it, once per worker: each corrupt-manifest case
    copies it."""
    out = tmp_path_factory.mktemp("small-tree") / "out"
    result = alicerce("generate", *SMALL, "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize(
    "manifest",
    [
        rb'{"files": {"monitoring/aws/rules.yaml\u0000": "0"}}',  # a JSON-escaped NUL in a path
        b"[" * 100_000 + b"]" * 100_000,
        b'{"files": {"../../escape": "0"}}',
        b'{"files": {"/etc/hostname": "0"}}',
        b'{"files": {"a": 1}}',
    ],
    ids=["nul", "deep", "dotdot", "absolute", "not-a-digest"],
)
@pytest.mark.parametrize("check", [False, True], ids=["write", "check"])
def test_a_corrupt_manifest_is_a_user_error(manifest: bytes, check: bool, small_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(small_tree, out, symlinks=True)
    (out / ".alicerce" / "manifest.json").write_bytes(manifest)
    result = alicerce("generate", *SMALL, "--out", str(out), *(["--check"] if check else []))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == (1 if check else 2), result.stderr
    if not check:
        assert "manifest" in result.stderr
        forced = alicerce("generate", *SMALL, "--out", str(out), "--force")
        assert forced.returncode == 0, forced.stderr
        assert not (tmp_path / "escape").exists() and not list(out.glob(".alicerce/displaced/*/etc"))


@pytest.mark.parametrize("kind", ["inventory", "secrets"])
def test_apply_extra_files_that_are_not_regular_files_are_refused(kind: str, fifo: Path, tmp_path: Path) -> None:
    result = alicerce("apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path / "w"), f"--{kind}", str(fifo), timeout=30)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert str(fifo) in result.stderr


@pytest.fixture
def runner_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """ansible_runner.run replaced at the side-effect boundary: a successful, empty run."""
    import ansible_runner

    calls: list[dict[str, Any]] = []

    def run(**kwargs: Any) -> SimpleNamespace:
        calls.append(kwargs)
        kwargs["event_handler"]({"event": "playbook_on_stats", "event_data": {"ok": {"gpu-001.dc1.acme.example": 1}}})
        return SimpleNamespace(status="successful", rc=0)

    monkeypatch.setattr(ansible_runner, "run", run)
    return calls


def test_apply_and_generate_with_their_default_folders_leave_each_other_alone(
    tmp_path: Path, runner_calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """apply's project and run artifacts must not land inside generate's tree (they would be a change there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "platform.yaml").write_text((ROOT / "platform.yaml").read_text())
    for args in (["generate", "--env", "prod"], ["apply", "onprem", "--env", "prod", "--kubespray", "skip"], ["generate", "--env", "prod"]):
        result = CliRunner().invoke(build_app(), args)
        assert result.exit_code == 0, result.output
    # the node and cluster stages ran; kubespray's stage is skipped (it needs its own environment)
    assert (tmp_path / "out" / ".alicerce" / "manifest.json").is_file() and len(runner_calls) == 2


# -- 10. apply --secrets: ansible-vault or an explicit opt-in ----------------------------------------

VAULTED = "$ANSIBLE_VAULT;1.1;AES256\n6162636465666768696a6b6c6d6e6f70\n"


def apply_with_secrets(tmp_path: Path, secrets: Path, *extra: str) -> Any:
    args = [
        "apply",
        "onprem",
        "--env",
        "prod",
        SPEC,
        "--workdir",
        str(tmp_path / "work"),
        "--secrets",
        str(secrets),
        "--format",
        "json",
        "--kubespray",
        "skip",
        *extra,
    ]
    return CliRunner().invoke(build_app(), args)


def test_plaintext_secrets_are_warned_about(tmp_path: Path, runner_calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    secrets = tmp_path / "secrets.yml"
    secrets.write_text("kubernetes_node_join_token: abcdef.0123456789abcdef\n")
    result = apply_with_secrets(tmp_path, secrets)
    assert result.exit_code == 0, result.output
    assert "not encrypted with ansible-vault" in result.output and "ansible-vault encrypt" in result.output
    assert "abcdef.0123456789abcdef" not in result.output  # the warning never echoes a secret
    assert len(runner_calls) == 2  # the node and cluster stages (kubespray skipped)


@pytest.mark.parametrize("ci", ["true", "1"])
def test_plaintext_secrets_are_refused_in_ci_unless_allowed(
    ci: str, tmp_path: Path, runner_calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", ci)
    secrets = tmp_path / "secrets.yml"
    secrets.write_text("kubernetes_node_join_token: abcdef.0123456789abcdef\n")
    refused = apply_with_secrets(tmp_path, secrets)
    assert refused.exit_code == 2 and "--allow-plaintext-secrets" in refused.output and runner_calls == []
    allowed = apply_with_secrets(tmp_path, secrets, "--allow-plaintext-secrets")
    assert allowed.exit_code == 0, allowed.output
    assert len(runner_calls) == 2  # the node and cluster stages (kubespray skipped)


@pytest.mark.parametrize(
    "text",
    [
        VAULTED,
        "$ANSIBLE_VAULT;1.2;AES256;prod\n6162636465666768696a6b6c6d6e6f70\n",
        "kubernetes_node_join_token: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162636465666768696a6b6c6d6e6f70\n",
    ],
    ids=["whole-file", "vault-id", "inline-values"],
)
def test_vault_encrypted_secrets_pass_silently_in_ci(
    text: str, tmp_path: Path, runner_calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    secrets = tmp_path / "secrets.yml"
    secrets.write_text(text)
    result = apply_with_secrets(tmp_path, secrets)
    assert result.exit_code == 0, result.output
    assert "ansible-vault" not in result.output
    assert len(runner_calls) == 2  # the node and cluster stages (kubespray skipped)


def test_a_partly_encrypted_secrets_file_names_its_plaintext_keys(
    tmp_path: Path, runner_calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    secrets = tmp_path / "secrets.yml"
    secrets.write_text("sealed: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\nopen_token: hunter2\n")
    result = apply_with_secrets(tmp_path, secrets)
    assert result.exit_code == 2 and "open_token" in result.output and "hunter2" not in result.output


# -- review of issue 9: gaps ---------------------------------------------------------------------------


def test_apply_takes_an_inventory_folder_as_ansible_does(tmp_path: Path, runner_calls: list[dict[str, Any]]) -> None:
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "extra.yml").write_text("all:\n  vars:\n    ntp_servers: [10.0.0.1]\n")
    args = ["apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path / "w"), "--kubespray", "skip", "-i", str(inventory)]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert all(f"-i {inventory}" in call["cmdline"] for call in runner_calls) and len(runner_calls) == 2


def test_plan_plot_never_leaves_a_half_written_chart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from matplotlib.figure import Figure

    charts = tmp_path / "charts"
    charts.mkdir()
    (charts / "gpu-hours-by-team.png").write_bytes(b"the last complete chart")

    def disk_full(self: Figure, target: Any, **kwargs: Any) -> None:
        if isinstance(target, (str, os.PathLike)):
            Path(target).write_bytes(b"half")
        else:
            target.write(b"half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Figure, "savefig", disk_full)
    result = CliRunner().invoke(build_app(), ["plan", SPEC, "--plot", str(charts)])
    assert result.exit_code == 2, result.output
    assert (charts / "gpu-hours-by-team.png").read_bytes() == b"the last complete chart"
    assert sorted(p.name for p in charts.iterdir()) == ["gpu-hours-by-team.png"]


def test_schema_output_through_a_dangling_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "schema.json").symlink_to("elsewhere/deeper/schema.json")
    result = alicerce("schema", "-o", str(tmp_path / "schema.json"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "does not exist" in result.stderr
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("mine", [False, True], ids=["empty", "with-the-users-files"])
def test_a_failed_init_leaves_the_folder_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mine: bool) -> None:
    import errno

    from alicerce.emit import files

    real = files.write_file
    written: list[Path] = []

    def fill_the_disk(path: Path, data: bytes) -> None:
        if len(written) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        written.append(path)
        real(path, data)

    if mine:
        (tmp_path / "NOTES.md").write_text("mine\n")
        (tmp_path / ".github").mkdir()  # an empty folder of the user's stays too
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr(files, "write_file", fill_the_disk)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(build_app(), ["init", ".", "--name", "here", *(["--fill"] if mine else [])])
    assert result.exit_code == 2, result.output
    assert "No space left" in result.output
    assert len(written) == 2 and sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_output_folder_name_with_a_newline_still_has_its_leftovers_recognised() -> None:
    from alicerce.emit.files import LEFTOVER

    match = LEFTOVER.fullmatch(".out\nput.alicerce-stage-abcd1234")
    assert match is not None and match["name"] == "out\nput"
