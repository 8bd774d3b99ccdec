"""`alicerce apply onprem` and `alicerce generate` through the real CLI.

The unit tests patch only the side-effect boundary (``ansible_runner.run``); the others run real
ansible-runner against the chroot rootfs and against this machine in read-only preflight.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from alicerce.cli import build_app
from tests.ansible.conftest import CHROOT_HOST, chroot_inventory
from tests.conftest import ROOT

SPEC = str(ROOT / "platform.yaml")


def _events(handler: Any) -> None:
    host = CHROOT_HOST
    for event in (
        {"event": "playbook_on_play_start", "event_data": {"play": "Check every node"}},
        {"event": "playbook_on_task_start", "event_data": {"task": "Assert that the distribution is supported"}},
        {"event": "runner_on_ok", "event_data": {"host": host, "res": {"changed": False}}},
        {"event": "playbook_on_task_start", "event_data": {"task": "Install the driver packages"}},
        {
            "event": "runner_on_failed",
            "event_data": {"host": host, "task": "Install the driver packages", "res": {"msg": "no such package"}},
        },
        {
            "event": "runner_on_unreachable",
            "event_data": {"host": "gpu-002.dc1.acme.example", "task": "Gathering Facts", "res": {"msg": "ssh: timeout"}},
        },
        {
            "event": "playbook_on_stats",
            "event_data": {"ok": {host: 1}, "changed": {}, "failures": {host: 1}, "dark": {"gpu-002.dc1.acme.example": 1}, "skipped": {}},
        },
    ):
        handler(event)


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    import ansible_runner

    calls: list[dict[str, Any]] = []

    def run(**kwargs: Any) -> SimpleNamespace:
        calls.append(kwargs)
        _events(kwargs["event_handler"])
        return SimpleNamespace(status="failed", rc=2)

    monkeypatch.setattr(ansible_runner, "run", run)
    return calls


def test_apply_reports_typed_failures_and_exits_non_zero(fake_runner: list[dict[str, Any]], tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_app(),
        [
            "apply",
            "onprem",
            "--env",
            "prod",
            SPEC,
            "--check",
            "--limit",
            "rack_dc1_r01",
            "--tags",
            "nvidia_driver",
            "--workdir",
            str(tmp_path),
            "--json",
        ],
    )
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["status"] == "failed"
    assert data["failures"] == [
        {"kind": "TaskFailed", "host": CHROOT_HOST, "task": "Install the driver packages", "message": "no such package"},
        {"kind": "HostUnreachable", "host": "gpu-002.dc1.acme.example", "task": "Gathering Facts", "message": "ssh: timeout"},
    ]
    assert data["hosts"]["gpu-002.dc1.acme.example"]["unreachable"] == 1
    (call,) = fake_runner
    assert call["limit"] == "rack_dc1_r01" and call["tags"] == "nvidia_driver" and "--check --diff" in call["cmdline"]
    assert call["playbook"] == "site.yml" and Path(call["project_dir"], "inventory.yml").is_file()
    assert Path(call["private_data_dir"]).is_relative_to(tmp_path)


def test_apply_prints_a_recap_table(fake_runner: list[dict[str, Any]], tmp_path: Path) -> None:
    env = tmp_path / "kubespray-env"
    args = ["apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path), "--kubespray-env", str(env)]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 3
    assert "recap: failed" in result.stdout and CHROOT_HOST in result.stdout
    assert 'unreachable (1 host) at task "Gathering Facts": ssh: timeout\n  hosts: gpu-002.dc1.acme.example' in result.stdout


def test_apply_recap_summarises_each_failure_once_with_whole_host_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 16: at 80 columns the recap cut every host name and listed an unreachable host twice."""
    import ansible_runner

    hosts = [f"gpu-{n:03d}.dc1.acme.example" for n in range(1, 6)]

    def run(**kwargs: Any) -> SimpleNamespace:
        handler = kwargs["event_handler"]
        handler({"event": "playbook_on_task_start", "event_data": {"task": "Gathering Facts"}})
        for host in hosts[:3]:  # the same unreachable host reported twice, as a retry does
            for _ in range(2 if host == hosts[0] else 1):
                handler(
                    {
                        "event": "runner_on_unreachable",
                        "event_data": {"host": host, "task": "Gathering Facts", "res": {"msg": "ssh: timeout"}},
                    }
                )
        for host in hosts[3:]:
            handler(
                {
                    "event": "runner_on_failed",
                    "event_data": {"host": host, "task": "Install the driver packages", "res": {"msg": "no such package"}},
                }
            )
        dark = dict.fromkeys(hosts[:3], 1)
        failures = dict.fromkeys(hosts[3:], 1)
        handler({"event": "playbook_on_stats", "event_data": {"ok": {}, "changed": {}, "failures": failures, "dark": dark, "skipped": {}}})
        return SimpleNamespace(status="failed", rc=2)

    monkeypatch.setattr(ansible_runner, "run", run)
    args = ["apply", "onprem", SPEC, "--env", "prod", "--workdir", str(tmp_path), "--kubespray-env", str(tmp_path / "kubespray-env")]
    result = CliRunner().invoke(build_app(), args, env={"COLUMNS": "80"})
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert all(host in result.stdout for host in hosts)
    assert "…" not in result.stdout and max(len(line) for line in lines if "artifacts" not in line) <= 80
    assert [line for line in lines if line.startswith(("unreachable", "failed"))] == [
        'unreachable (3 hosts) at task "Gathering Facts": ssh: timeout',
        'failed (2 hosts) at task "Install the driver packages": no such package',
    ]
    unreachable = result.stdout.split('at task "Gathering Facts"')[1].split("failed (2 hosts)")[0]
    assert " ".join(unreachable.split()) == f": ssh: timeout hosts: {', '.join(hosts[:3])}"
    data = json.loads(CliRunner().invoke(build_app(), [*args, "--format", "json"]).stdout)
    assert data["schemaVersion"] == 1
    assert [g["hosts"] for g in data["failureGroups"]] == [hosts[:3], hosts[3:]]
    assert len(data["failures"]) == 5  # each host once


@pytest.fixture
def successful_runner(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """ansible_runner.run replaced by one that records its arguments and succeeds."""
    import ansible_runner

    calls: list[dict[str, Any]] = []

    def run(**kwargs: Any) -> SimpleNamespace:
        calls.append(kwargs)
        return SimpleNamespace(status="successful", rc=0)

    monkeypatch.setattr(ansible_runner, "run", run)
    return calls


def test_apply_runs_the_node_stage_then_kubespray_from_its_own_environment_then_the_cluster_stage(
    successful_runner: list[dict[str, Any]], tmp_path: Path
) -> None:
    calls = successful_runner
    env = tmp_path / "kubespray-env"
    args = ["apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path / "w"), "--kubespray-env", str(env), "--json"]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert [Path(c["project_dir"]).name + "/" + c["playbook"] for c in calls] == [
        "ansible/site.yml",
        "kubespray/dc1/cluster.yml",
        "ansible/post-cluster.yml",
    ]
    kubespray = calls[1]
    assert kubespray["inventory"].endswith("kubespray/dc1/inventory.yml")
    assert kubespray["envvars"]["PATH"].startswith(str(env / "bin"))  # kubespray's ansible-core, not alicerce's
    assert kubespray["envvars"]["ANSIBLE_COLLECTIONS_PATH"] == str(env / "collections")
    assert kubespray["envvars"]["ANSIBLE_CONFIG"].endswith("kubespray/ansible.cfg")
    assert "ANSIBLE_COLLECTIONS_PATH" not in calls[0]["envvars"]
    data = json.loads(result.stdout)
    assert [s["stage"] for s in data["stages"]] == ["nodes", "kubespray dc1", "cluster"]
    assert data["kubeconfigs"] == [str(tmp_path / "w" / "prod" / "project" / "ansible" / "kubespray" / "artifacts" / "dc1" / "admin.conf")]
    upgrade = CliRunner().invoke(build_app(), [*args[:-1], "--kubespray", "upgrade-cluster"])
    assert upgrade.exit_code == 0 and calls[-2]["playbook"] == "dc1/upgrade-cluster.yml"


def test_a_limit_naming_alicerce_groups_reaches_kubespray_as_hosts_after_its_facts_run(
    successful_runner: list[dict[str, Any]], tmp_path: Path
) -> None:
    # kubespray's inventory has no rack_* group: passed through, its run would stop at "--limit leaves us
    # with no hosts to target"; with a limit, kubespray asks for facts.yml without it first (docs/operations/nodes.md)
    calls = successful_runner
    base = ["apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path / "w"), "--kubespray-env", str(tmp_path / "e")]
    result = CliRunner().invoke(build_app(), [*base, "--limit", "rack_dc1_r01", "--json"])
    assert result.exit_code == 0, result.output
    assert [(c["playbook"], c["limit"]) for c in calls[1:3]] == [("dc1/facts.yml", None), ("dc1/cluster.yml", calls[2]["limit"])]
    rack = [f"gpu-{i:03d}.dc1.acme.example" for i in range(1, 17)]
    assert calls[2]["limit"] == ",".join(rack)
    assert calls[0]["limit"] == calls[3]["limit"] == "rack_dc1_r01"  # alicerce's own stages keep the pattern
    assert (Path(calls[1]["project_dir"]) / calls[1]["playbook"]).is_file()
    assert [json.loads(result.stdout)["stages"][i]["stage"] for i in (1, 2)] == ["kubespray dc1 facts", "kubespray dc1"]
    calls.clear()
    nothing = CliRunner().invoke(build_app(), [*base, "--limit", "rack_nowhere"])
    assert nothing.exit_code == 2 and "matches no host" in nothing.output and calls == []


def test_a_second_apply_keeps_what_the_first_left_in_the_tree(successful_runner: list[dict[str, Any]], tmp_path: Path) -> None:
    # kubespray's admin kubeconfig and fact cache and the acceptance reports land in the generated tree: a second
    # apply must neither refuse them as "files added since alicerce wrote them" nor displace the kubeconfig
    workdir = tmp_path / "w"
    args = ["apply", "onprem", "--env", "prod", SPEC, "--workdir", str(workdir), "--kubespray-env", str(tmp_path / "e"), "--json"]
    first = CliRunner().invoke(build_app(), args)
    assert first.exit_code == 0, first.output
    (admin,) = json.loads(first.stdout)["kubeconfigs"]
    ansible = workdir / "prod" / "project" / "ansible"
    group_vars = yaml.safe_load((ansible / "kubespray" / "dc1" / "group_vars" / "all.yml").read_text())
    # where kubespray's kubeconfig_localhost writes it: {{ artifacts_dir }}/admin.conf, inventory_dir = kubespray/dc1
    written = ansible / "kubespray" / "dc1" / group_vars["artifacts_dir"].replace("{{ inventory_dir }}/", "") / "admin.conf"
    assert written.resolve() == Path(admin).resolve()
    left = [written, ansible / "kubespray" / ".cache" / "facts" / "cp-1.dc1.acme.example", ansible / "acceptance" / "gpu-001.json"]
    for path in left:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("left by the first run\n")
    second = CliRunner().invoke(build_app(), args)
    assert second.exit_code == 0, second.output
    assert all(path.read_text() == "left by the first run\n" for path in left)


def test_kubespray_environment_is_built_once_from_the_generated_pins(prod: Any, tmp_path: Path) -> None:
    from alicerce.emit.tree import render_tree, write_tree
    from alicerce.run.ansible import kubespray_environment

    write_tree(tmp_path / "out", render_tree(prod))
    steps: list[list[str]] = []

    def run(argv: list[str], **_: Any) -> SimpleNamespace:
        steps.append(argv)
        return SimpleNamespace(returncode=0, stdout="", stderr="")

    root = tmp_path / "env"
    root.mkdir()
    kubespray = tmp_path / "out" / "ansible" / "kubespray"
    environment = kubespray_environment(kubespray, root, run=run)  # type: ignore[arg-type]
    assert steps[0][1:3] == ["-m", "venv"]
    # every package of kubespray's environment is checked against its sha256 (issue 22)
    assert steps[1][1:] == ["install", "--quiet", "--require-hashes", "-r", str(kubespray / "requirements.lock")]
    assert steps[2][1:5] == ["collection", "install", "-r", str(kubespray / "requirements.yml")]
    assert "ansible==11.13.0" in (kubespray / "requirements.txt").read_text()
    kubespray_environment(kubespray, root, run=run)  # type: ignore[arg-type]
    assert len(steps) == 3 and environment.bin == root.absolute() / "bin"  # the second call reuses it


def test_apply_refuses_an_environment_without_onprem_pools(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_app(), ["apply", "onprem", "--env", "dev", SPEC, "--workdir", str(tmp_path)])
    assert result.exit_code == 2 and "no on-prem node pools" in result.output


def test_apply_runs_real_ansible_runner_into_the_rootfs(node_root: Path, tmp_path: Path) -> None:
    inventory = chroot_inventory(tmp_path / "chroot.yml", node_root)
    result = CliRunner().invoke(
        build_app(),
        [
            "apply",
            "onprem",
            "--env",
            "prod",
            SPEC,
            "--limit",
            CHROOT_HOST,
            "--tags",
            "preflight",
            "-i",
            str(inventory),
            "--workdir",
            str(tmp_path / "w"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] and data["hosts"][CHROOT_HOST]["failed"] == 0 and data["tasks"] >= 3
    assert (Path(data["artifacts"]) / "stdout").is_file()


def test_apply_fails_on_a_host_without_the_promised_gpus(tmp_path: Path) -> None:
    """Real ansible-runner, real preflight, this machine in host mode (read-only): it has no 8 H100s."""
    inventory = tmp_path / "local.yml"
    host = {
        "ansible_connection": "local",
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
        "preflight_target": "host",
    }
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {CHROOT_HOST: host}}}))
    result = CliRunner().invoke(
        build_app(),
        [
            "apply",
            "onprem",
            "--env",
            "prod",
            SPEC,
            "--limit",
            CHROOT_HOST,
            "--tags",
            "preflight-hardware",
            "-i",
            str(inventory),
            "--workdir",
            str(tmp_path / "w"),
            "--json",
        ],
    )
    assert result.exit_code == 3, result.output
    (failure,) = json.loads(result.stdout)["failures"]
    assert failure["kind"] == "TaskFailed" and failure["host"] == CHROOT_HOST
    assert "expected 8 NVIDIA GPUs and at least 8 RDMA adapters, found 0" in failure["message"]
