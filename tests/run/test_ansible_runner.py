"""alicerce's ansible-runner boundary driven through the REAL ``ansible_runner.run`` (no mock).

Tiny local projects (``connection: local``) stand in for the stages: each run writes what its
Ansible saw (check mode, extra vars, environment) to a file the test reads back.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from alicerce.run.ansible import KubesprayEnvironment, RunResult, run_playbook

FAKE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKESECRET0"
FAKE_KEY_ID = "AKIAFAKEFAKEFAKE0000"

SEEN = """\
---
- name: Record what this run sees
  hosts: all
  gather_facts: false
  tasks:
    - name: Write it down
      ansible.builtin.copy:
        dest: "{{ out }}/{{ lookup('ansible.builtin.env', 'STAGE_NAME') | default('x', true) }}-{{ run_name }}.json"
        mode: "0600"
        content: >-
          {{ {'check': ansible_check_mode, 'secret': secret_value | default(None),
              'config': lookup('ansible.builtin.env', 'ANSIBLE_CONFIG'),
              'collections': lookup('ansible.builtin.env', 'ANSIBLE_COLLECTIONS_PATH'),
              'aws': lookup('ansible.builtin.env', 'AWS_SECRET_ACCESS_KEY'),
              'extra_inventory': extra_inventory_var | default(None)} | to_json }}
      check_mode: false
"""


def _project(root: Path, out: Path, run_name: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = false\n")
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"hosts": {"localhost": host}, "vars": {"out": str(out), "run_name": run_name}}}
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (root / "seen.yml").write_text(SEEN)
    return root


def _seen(out: Path, name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / name).read_text())
    return data


def test_every_stage_and_every_run_sees_only_its_own_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20 defect 2: env/envvars and env/cmdline of the first run overrode every later stage and run."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    runs, out = tmp_path / "runner", tmp_path / "out"
    out.mkdir()
    secrets = tmp_path / "secrets.yml"
    secrets.write_text("secret_value: from-the-secrets-file\n")
    extra = tmp_path / "extra.yml"
    extra.write_text(yaml.safe_dump({"all": {"vars": {"extra_inventory_var": "from-extra"}}}))
    # the "kubespray" environment: alicerce's own interpreter, with a collections folder of its own
    env_root = tmp_path / "kubespray-env"
    env_root.mkdir()
    (env_root / "bin").symlink_to(Path(sys.executable).parent)
    environment = KubesprayEnvironment(env_root)

    def stages(run_name: str, **first: object) -> list[RunResult]:
        nodes = _project(tmp_path / run_name / "nodes", out, run_name)
        kubespray = _project(tmp_path / run_name / "kubespray", out, run_name)
        monkeypatch.setenv("STAGE_NAME", "nodes")
        results = [run_playbook(nodes, "seen.yml", runs, ident="nodes", **first)]  # type: ignore[arg-type]
        monkeypatch.setenv("STAGE_NAME", "kubespray")
        results.append(run_playbook(kubespray, "seen.yml", runs, ident="kubespray", environment=environment))
        return results

    monkeypatch.setattr("alicerce.run.ansible.ENVIRONMENT_ALLOWLIST", ("HOME", "STAGE_NAME"), raising=False)
    first = stages("first", check=True, extra_vars_files=[secrets], inventories=[extra])
    second = stages("second")
    assert all(r.ok for r in first + second), [r.status for r in first + second]

    for stage, run in (("kubespray", "first"), ("nodes", "second"), ("kubespray", "second")):
        seen = _seen(out, f"{stage}-{run}.json")
        assert seen["check"] is False and seen["secret"] is None and seen["extra_inventory"] is None, (stage, run, seen)
        assert seen["config"] == str(tmp_path / run / stage / "ansible.cfg"), (stage, run, seen)
        assert seen["collections"] == (str(env_root.absolute() / "collections") if stage == "kubespray" else ""), (stage, run)
        assert seen["aws"] == ""
    assert _seen(out, "nodes-first.json") == {
        "check": True,
        "secret": "from-the-secrets-file",
        "config": str(tmp_path / "first" / "nodes" / "ansible.cfg"),
        "collections": "",
        "aws": "",
        "extra_inventory": "from-extra",
    }
    # four private data folders, none shared
    folders = {r.artifacts.parent.parent for r in first + second}
    assert len(folders) == 4 and all(f.parent == runs for f in folders)


def test_no_secret_of_the_environment_reaches_any_artifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 defect 2: artifacts/<id>/command held the whole environment (AWS keys included)."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE")
    out = tmp_path / "out"
    out.mkdir()
    runs = tmp_path / "runner"
    result = run_playbook(_project(tmp_path / "p", out, "one"), "seen.yml", runs)
    assert result.ok
    files = [p for p in runs.rglob("*") if p.is_file()]
    assert any(p.name == "command" for p in files) and any(p.parent.name == "job_events" for p in files)
    for path in files:
        text = path.read_bytes()
        for secret in (FAKE_SECRET, FAKE_KEY_ID, "ghp_FAKE"):
            assert secret.encode() not in text, path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert "env" not in json.loads((result.artifacts / "command").read_text())
    for folder in [runs, *(p for p in runs.rglob("*") if p.is_dir())]:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_old_runs_are_pruned_and_the_shared_layout_removed(tmp_path: Path) -> None:
    from alicerce.run.ansible import prune_runs

    runs = tmp_path / "runner"
    (runs / "env").mkdir(parents=True)
    (runs / "env" / "envvars").write_text("{}")
    (runs / "artifacts" / "old").mkdir(parents=True)
    names = [f"20261204T0500{n:02d}.000000Z-nodes" for n in range(5)]
    for name in names:
        (runs / name).mkdir()
    (runs / "mine").mkdir()  # not a run folder: kept
    prune_runs(runs, keep=2)
    assert sorted(p.name for p in runs.iterdir()) == sorted([*names[-2:], "mine"])


def test_a_stage_that_reaches_no_host_says_why(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", tmp_path, "one")
    (project / "broken.yml").write_text("- name: Broken\n  hosts: all\n  tasks:\n    - name: No module\n      no_such: {}\n")
    result = run_playbook(project, "broken.yml", tmp_path / "runner")
    assert not result.ok and not result.stats
    assert result.reason.startswith("[ERROR]: couldn't resolve module/action 'no_such'")
    assert "broken.yml:4:7" in result.reason and "\x1b" not in result.reason


SLEEPER = """\
---
- name: Sleep
  hosts: all
  gather_facts: false
  tasks:
    - name: Sleep long
      ansible.builtin.shell: "sleep 300 # {marker}"
      changed_when: false
"""

DRIVER = """\
import sys
from pathlib import Path
from alicerce.run.ansible import run_playbook
result = run_playbook(Path(sys.argv[1]), "sleep.yml", Path(sys.argv[2]))
print(result.status, result.signal, flush=True)
"""


def _alive(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in cmdline and state != "Z":
                pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_apply_stops_every_ansible_worker(tmp_path: Path, signum: int) -> None:
    """Issue 20 defect 11: on SIGINT/SIGTERM alicerce exited but Ansible's workers ran on."""
    marker = f"alicerce-sleeper-{tmp_path.name}"
    project = _project(tmp_path / "p", tmp_path, "one")
    (project / "sleep.yml").write_text(SLEEPER.format(marker=marker))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-c", DRIVER, str(project), str(tmp_path / "runner")]
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _alive(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(marker), "the sleeping task never started"
        child.send_signal(signum)
        stdout, _ = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
    assert stdout.split() == ["canceled", str(int(signum))]
    time.sleep(1)
    assert _alive(marker) == []
