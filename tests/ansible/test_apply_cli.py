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


# -- issue 20: the apply flow and day 2 as commands ----------------------------------------------------


def _base(tmp_path: Path) -> list[str]:
    return ["apply", "onprem", "--env", "prod", SPEC, "--workdir", str(tmp_path / "w"), "--kubespray-env", str(tmp_path / "e")]


def test_kubespray_runs_as_root_the_way_its_docs_invoke_it(successful_runner: list[dict[str, Any]], tmp_path: Path) -> None:
    """kubespray docs/ansible/ansible_collection.md (v2.31.0): ansible-playbook -i INVENTORY --become --become-user=root PLAYBOOK."""
    result = CliRunner().invoke(build_app(), [*_base(tmp_path), "--limit", "gpu-017.dc1.acme.example", "--kubespray", "scale"])
    assert result.exit_code == 0, result.output
    by_playbook = {c["playbook"]: c for c in successful_runner}
    for playbook in ("dc1/facts.yml", "dc1/scale.yml"):
        assert by_playbook[playbook]["cmdline"].startswith("--become --become-user=root"), playbook
    assert by_playbook["dc1/scale.yml"]["limit"] == "gpu-017.dc1.acme.example"
    for playbook in ("site.yml", "post-cluster.yml"):  # alicerce's plays say become themselves
        assert "--become" not in (by_playbook[playbook]["cmdline"] or "")


def test_remove_node_drains_and_removes_the_named_hosts_with_kubespray_alone(
    successful_runner: list[dict[str, Any]], tmp_path: Path
) -> None:
    host = "gpu-005.dc1.acme.example"
    result = CliRunner().invoke(build_app(), [*_base(tmp_path), "--kubespray", "remove-node", "--limit", host, "--json"])
    assert result.exit_code == 0, result.output
    (call,) = successful_runner  # no node stage, no cluster stage: the host is leaving
    assert call["playbook"] == "dc1/remove-node.yml" and call["limit"] is None
    # kubespray playbooks/remove_node.yml targets hosts: "{{ node }}" and pauses for a confirmation unless skip_confirmation
    assert call["cmdline"] == f"--become --become-user=root -e node={host} -e skip_confirmation=true"
    assert json.loads(result.stdout)["removed"] == [host]
    playbook = Path(call["project_dir"], call["playbook"]).read_text()
    assert "ansible.builtin.import_playbook: kubernetes_sigs.kubespray.remove_node" in playbook
    successful_runner.clear()
    offline = CliRunner().invoke(build_app(), [*_base(tmp_path), "--kubespray", "remove-node", "--limit", host, "--offline"])
    assert offline.exit_code == 0, offline.output
    assert successful_runner[0]["cmdline"].endswith("-e reset_nodes=false -e allow_ungraceful_removal=true")
    assert f"removed {host} from the cluster: delete it from" in offline.stdout
    successful_runner.clear()
    for bad in (["--kubespray", "remove-node"], ["--offline"], ["--kubespray", "remove-node", "--limit", host, "--check"]):
        refused = CliRunner().invoke(build_app(), [*_base(tmp_path), *bad])
        assert refused.exit_code == 2, (bad, refused.output)
    assert successful_runner == []


def test_the_kubeconfig_is_handed_over_even_when_host_acceptance_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 20 defect 3: a failed cluster stage suppressed the hand-off the GPU Operator (and so acceptance) waits for."""
    import ansible_runner

    def run(**kwargs: Any) -> SimpleNamespace:
        failed = kwargs["playbook"] == "post-cluster.yml"
        return SimpleNamespace(status="failed" if failed else "successful", rc=2 if failed else 0)

    monkeypatch.setattr(ansible_runner, "run", run)
    result = CliRunner().invoke(build_app(), _base(tmp_path))
    assert result.exit_code == 3
    assert "kubeconfig: " in result.stdout and "admin.conf" in result.stdout
    assert "--accept (cluster acceptance)" in result.stdout


def test_host_acceptance_leaves_the_device_plugin_s_resources_to_cluster_acceptance(
    successful_runner: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The post-cluster stage runs before the GPU Operator exists: it must not wait for nvidia.com/gpu; accept.yml does."""
    result = CliRunner().invoke(build_app(), [*_base(tmp_path), "--accept", "--json"])
    assert result.exit_code == 0, result.output
    (call,) = successful_runner
    assert call["playbook"] == "accept.yml"
    ansible = Path(call["project_dir"])
    post = yaml.safe_load((ansible / "post-cluster.yml").read_text())
    for play in post:  # host acceptance checks no allocatable, and keeps a GPU node's acceptance taint
        steps = play["tasks"][0]["block"]  # its rescue holds a failed node while the rest of the batch goes on
        (validation,) = [t for t in steps if t["ansible.builtin.import_role"]["name"] == "node_validation"]
        assert validation["vars"] == {"node_validation_allocatable": {}}
        release = steps[-1]
        assert release["ansible.builtin.import_role"]["tasks_from"] == "release.yml"
        assert release["vars"] == {"_kubernetes_node_release_pending": "{{ node_validation_allocatable | length == 0 }}"}
    accept = yaml.safe_load((ansible / "accept.yml").read_text())
    wait, check, release = accept[0]["tasks"]
    assert "alicerce_allocatable_report" in check["ansible.builtin.assert"]["fail_msg"]
    assert "node_validation_allocatable" in wait["until"] and wait["when"] == "node_validation_allocatable | length > 0"
    assert release["ansible.builtin.import_role"] == {"name": "kubernetes_node", "tasks_from": "release.yml"}  # then released
    group_vars = yaml.safe_load((ansible / "group_vars" / "pool_onprem_h100.yml").read_text())
    assert group_vars["node_validation_allocatable"]["nvidia.com/gpu"] == "8"  # the promise accept.yml checks


def test_a_secrets_alias_bomb_is_refused_with_the_spec_loader_limits(successful_runner: list[dict[str, Any]], tmp_path: Path) -> None:
    """Issue 22 defect 4: a 306-byte alias bomb used 2.9 GB; parsed with the spec loader it is AL004 at once."""
    bomb = tmp_path / "secrets.yml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(build_app(), [*_base(tmp_path), "--secrets", str(bomb)])
    assert result.exit_code == 2, result.output
    assert f"{bomb}:" in result.output and "AL004" in result.output and successful_runner == []
    vaulted = tmp_path / "inline.yml"
    vaulted.write_text("token: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\nplain: visible\n")
    warned = CliRunner().invoke(
        build_app(), [*_base(tmp_path), "--secrets", str(vaulted), "--kubespray", "skip", "--allow-plaintext-secrets"]
    )
    assert warned.exit_code == 0, warned.output
    assert "(plaintext: plain)" in warned.output  # the !vault value counts as sealed, the plain one does not
    escape = tmp_path / "escape.yml"  # a key name is the file's text: never echoed raw to the terminal
    escape.write_text('"\\e]0;PWNED\\a\\e[2Jk": value\n')
    warned = CliRunner().invoke(
        build_app(), [*_base(tmp_path), "--secrets", str(escape), "--kubespray", "skip", "--allow-plaintext-secrets"]
    )
    assert warned.exit_code == 0, warned.output
    assert "\x1b" not in warned.output and "\\x1b]0;PWNED" in warned.output


def test_an_apply_with_cloud_keys_in_the_environment_writes_none_of_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 defect 2, through the CLI and the real ansible-runner: grep every file apply leaves."""
    import stat

    fakes = {
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKEKEY00",
        "AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE0001",
        "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEFAKESESSIONTOKEN",
        "PULUMI_ACCESS_TOKEN": "pul-fakefakefakefakefakefakefake",
    }
    for name, value in fakes.items():
        monkeypatch.setenv(name, value)
    inventory = tmp_path / "local.yml"
    host = {"ansible_connection": "local", "ansible_become": False, "ansible_python_interpreter": sys.executable}
    host["preflight_target"] = "host"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {CHROOT_HOST: host}}}))
    workdir = tmp_path / "w"
    args = ["apply", "onprem", "--env", "prod", SPEC, "--limit", CHROOT_HOST, "--tags", "preflight-hardware", "-i", str(inventory)]
    result = CliRunner().invoke(build_app(), [*args, "--workdir", str(workdir)])
    assert result.exit_code == 3, result.output  # this machine has no 8 H100s: the run reached the host
    files = [p for p in workdir.rglob("*") if p.is_file() and not p.is_symlink()]
    assert any(p.name == "command" for p in files)
    for path in files:
        data = path.read_bytes()
        assert not [name for name, value in fakes.items() if value.encode() in data], path
    runner = workdir / "prod" / "runner"
    for path in runner.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path


FAKE_KUBECTL = """#!/bin/sh
# kubectl get node HOST -o json, as the API server answers before and after the device plugin runs
# (the node still holds the acceptance taint it joined with); any other verb is logged
if [ "$1" != get ]; then echo "$@" >> "{changes}"; exit 0; fi
count=$(cat "{state}" 2>/dev/null || echo 0); echo $((count + 1)) > "{state}"
if [ "$count" -ge "{after}" ]; then gpus='"nvidia.com/gpu": "8", '; else gpus=''; fi
printf '{{"spec": {{"taints": [{{"key": "alicerce.dev/acceptance", "value": "pending", "effect": "NoSchedule"}}]}}, '
printf '"status": {{"conditions": [{{"type": "Ready", "status": "True"}}], "allocatable": {{%s"cpu": "224"}}}}}}' "$gpus"
"""


@pytest.mark.parametrize(("after", "accepted"), [(2, True), (99, False)])
def test_cluster_acceptance_waits_for_the_device_plugin_then_accepts(generated: Path, tmp_path: Path, after: int, accepted: bool) -> None:
    """accept.yml through the real ansible-runner: a node accepted once its GPUs are allocatable, and only then
    released (its acceptance taint removed); refused and still held if they never are."""
    from alicerce.run.ansible import run_playbook

    kubectl = tmp_path / "kubectl"
    kubectl.write_text(FAKE_KUBECTL.format(state=tmp_path / "calls", changes=tmp_path / "changes", after=after))
    kubectl.chmod(0o755)
    local = {
        "ansible_connection": "local",
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
        "kubernetes_node_kubectl": str(kubectl),
        "kubernetes_node_target": "host",
        "accept_retries": 3,
        "accept_delay": 0,
        "node_validation_allocatable": {"nvidia.com/gpu": "8"},
    }
    extra = tmp_path / "local.yml"  # host variables win over the pool's group_vars (kubectl); every host runs locally
    extra.write_text(yaml.safe_dump({"all": {"vars": local, "hosts": {CHROOT_HOST: local}}}))
    result = run_playbook(generated, "accept.yml", tmp_path / "runner", limit=CHROOT_HOST, inventories=[extra])
    calls = int((tmp_path / "calls").read_text())
    if accepted:
        assert result.ok, [str(f) for f in result.failures]
        assert calls == 4  # two answers without nvidia.com/gpu, the one that has it, then release.yml's read
        assert (tmp_path / "changes").read_text().splitlines() == [f"taint node {CHROOT_HOST} alicerce.dev/acceptance:NoSchedule-"]
    else:
        # the wait gives up quietly; the check after it says what the node lacks (onprem 2, item 6)
        assert not result.ok and [(f.host, f.task) for f in result.failures] == [
            (CHROOT_HOST, "Assert that the node offers exactly what its pool promises")
        ]
        assert "is not accepted (it keeps the acceptance taint): nvidia.com/gpu: expected 8, offers 0" in result.failures[0].message
        assert calls == 4  # the first try and three retries
        assert not (tmp_path / "changes").exists()  # never released


def test_a_stage_that_fails_before_any_host_prints_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 20 defect 11: the recap of a stage that never reached a host was an empty table."""
    import ansible_runner

    def run(**kwargs: Any) -> SimpleNamespace:
        folder = Path(kwargs["private_data_dir"]) / "artifacts" / kwargs["ident"]
        folder.mkdir(parents=True)
        (folder / "stdout").write_text("\x1b[0;31m[ERROR]: Unable to parse /x/inventory.yml as an inventory source\x1b[0m\n")
        return SimpleNamespace(status="failed", rc=1)

    monkeypatch.setattr(ansible_runner, "run", run)
    result = CliRunner().invoke(build_app(), [*_base(tmp_path), "--kubespray", "skip"])
    assert result.exit_code == 3
    shown = " ".join(result.stdout.split())  # rich wraps at the terminal's width
    assert "failed before any host ran: [ERROR]: Unable to parse /x/inventory.yml as an inventory source" in shown


def test_an_interrupted_apply_stops_at_that_stage_and_exits_128_plus_the_signal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os
    import signal

    import ansible_runner

    calls: list[str] = []

    def run(**kwargs: Any) -> SimpleNamespace:
        calls.append(kwargs["playbook"])
        os.kill(os.getpid(), signal.SIGTERM)  # caught by apply while the stage runs, not the default handler
        assert kwargs["cancel_callback"]() is True
        return SimpleNamespace(status="canceled", rc=254)

    monkeypatch.setattr(ansible_runner, "run", run)
    before = signal.getsignal(signal.SIGTERM)
    result = CliRunner().invoke(build_app(), _base(tmp_path))
    assert result.exit_code == 128 + signal.SIGTERM, result.output
    assert calls == ["site.yml"] and "interrupted by signal 15" in result.stdout
    assert signal.getsignal(signal.SIGTERM) == before  # apply's handler is gone again


def test_a_failed_run_names_the_nodes_it_left_cordoned_and_how_to_resume(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 20 (onprem 2, item 2): an unreachable node aborts its batch at once (no rescue catches it); the recap
    says which drained nodes stay cordoned and the command that resumes, instead of leaving them to be found."""
    import ansible_runner

    hosts = ["gpu-001.dc1.acme.example", "gpu-002.dc1.acme.example", "gpu-003.dc1.acme.example"]

    def run(**kwargs: Any) -> SimpleNamespace:
        handler = kwargs["event_handler"]
        for host in hosts:
            drain = "Drain the node (driver upgrade)"
            handler({"event": "runner_on_ok", "event_data": {"host": host, "task": drain, "res": {"changed": True}}})
        uncordon = "Uncordon the node alicerce drained"
        handler({"event": "runner_on_ok", "event_data": {"host": hosts[0], "task": uncordon, "res": {"changed": True}}})
        handler({"event": "runner_on_unreachable", "event_data": {"host": hosts[2], "task": "Reboot", "res": {"msg": "timeout"}}})
        handler({"event": "playbook_on_stats", "event_data": {"ok": dict.fromkeys(hosts[:2], 3), "dark": {hosts[2]: 1}}})
        return SimpleNamespace(status="failed", rc=4)

    monkeypatch.setattr(ansible_runner, "run", run)
    args = ["apply", "onprem", SPEC, "--env", "prod", "--workdir", str(tmp_path), "--kubespray", "skip"]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 3, result.output
    assert f"still cordoned (drained by alicerce, not yet accepted): {hosts[1]}, {hosts[2]}\n" in result.stdout
    assert f"resume: fix the failure above, then alicerce apply onprem {SPEC} --env prod" in result.stdout
    data = json.loads(CliRunner().invoke(build_app(), [*args, "--json"]).stdout)
    assert data["held"] == hosts[1:]


@pytest.mark.parametrize(("dead", "goes_on"), [("gpu-005.dc1.acme.example", True), ("cp-2.dc1.acme.example", False)])
def test_a_dead_node_outside_the_limit_does_not_block_a_scale(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dead: str, goes_on: bool
) -> None:
    """Issue 20 (onprem 2, item 3): kubespray's facts.yml (v2.31.0 playbooks/internal_facts.yml) is any_errors_fatal and
    must run over every host before a --limit run (docs/operations/nodes.md); one dead worker blocked every scale.
    It now runs with any_errors_fatal=false, and only the limited hosts and the control plane must pass."""
    import ansible_runner

    calls: list[dict[str, Any]] = []

    def run(**kwargs: Any) -> SimpleNamespace:
        calls.append(kwargs)
        if kwargs["playbook"].endswith("/facts.yml"):
            handler = kwargs["event_handler"]
            event = {"host": dead, "task": "Gather minimal facts", "res": {"msg": "ssh: no route to host"}}
            handler({"event": "runner_on_unreachable", "event_data": event})
            handler({"event": "playbook_on_stats", "event_data": {"ok": {"cp-1.dc1.acme.example": 5}, "dark": {dead: 1}}})
            return SimpleNamespace(status="failed", rc=4)
        return SimpleNamespace(status="successful", rc=0)

    monkeypatch.setattr(ansible_runner, "run", run)
    new = "gpu-017.dc1.acme.example"
    result = CliRunner().invoke(build_app(), [*_base(tmp_path), "--limit", new, "--kubespray", "scale"])
    facts = next(c for c in calls if c["playbook"] == "dc1/facts.yml")
    assert facts["limit"] is None and facts["cmdline"].endswith("-e any_errors_fatal=false")
    assert [c["playbook"] for c in calls][2:] == (["dc1/scale.yml", "post-cluster.yml"] if goes_on else [])
    assert result.exit_code == (0 if goes_on else 3), result.output
    if goes_on:
        assert f"went on without {dead} (outside --limit" in result.stdout
        assert "--kubespray remove-node --offline --limit HOST" in result.stdout


def test_a_scale_ends_with_the_accept_command_for_the_new_nodes(successful_runner: list[dict[str, Any]], tmp_path: Path) -> None:
    """Issue 20 (onprem 2, item 6): scale.yml joins nodes with the acceptance taint; nothing said how they get released."""
    host = "gpu-017.dc1.acme.example"
    result = CliRunner().invoke(build_app(), [*_base(tmp_path), "--limit", host, "--kubespray", "scale"])
    assert result.exit_code == 0, result.output
    assert f"then: alicerce apply onprem {SPEC} --env prod --accept --limit {host} (the new nodes take work" in result.stdout
    data = json.loads(CliRunner().invoke(build_app(), [*_base(tmp_path), "--limit", host, "--kubespray", "scale", "--json"]).stdout)
    assert data["next"] == f"alicerce apply onprem {SPEC} --env prod --accept --limit {host}"
    plain = CliRunner().invoke(build_app(), [*_base(tmp_path), "--kubespray", "upgrade-cluster"])
    assert "--accept" not in plain.stdout.split("kubeconfig")[0] and "then: " not in plain.stdout
