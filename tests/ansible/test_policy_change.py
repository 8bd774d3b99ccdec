"""A kubelet resource-manager policy change, run by the real ansible-playbook against fake systemctl and kubectl.

Issue 20 (onprem 2, item 1): the change used to stop kubelet and leave it stopped until kubespray restarted it,
batch after batch, so a ``--tags`` run or one without the kubespray stage stranded every node it touched. The
whole change now happens inside the node's batch: drain, stop, clear state, new config, start, verify, release.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.emit.ansible.kubespray import kubelet_manager_config, kubelet_managers
from tests.ansible.conftest import tool
from tests.conftest import ROOT

ANSIBLE = ROOT / "alicerce" / "ansible"
ROLES = ANSIBLE / "roles"

# kubelet, faked where it matters: it refuses to start when a state file names another policy than its config
# (the real kubelet's cpu manager validateState), and writes the state of its configured policy when it starts.
SYSTEMCTL = """#!/bin/sh
echo "systemctl $*" >> "{events}"
case "$1" in
  show)
    echo "LoadState=loaded"; echo "ActiveState=$(cat "{active}" 2>/dev/null || echo active)"; echo "SubState=running" ;;
  stop) echo inactive > "{active}" ;;
  start)
    want=$(sed -n 's/^cpuManagerPolicy: //p' "{config}"); want=${{want:-none}}
    if [ -f "{state}/cpu_manager_state" ] && ! grep -q "\\"policyName\\": *\\"$want\\"" "{state}/cpu_manager_state"; then
      echo failed > "{active}"; echo "kubelet: state file policy differs from $want" >> "{events}"
    else
      printf '{{"policyName": "%s", "defaultCpuSet": "0-63", "checksum": 1}}' "$want" > "{state}/cpu_manager_state"
      echo active > "{active}"
    fi ;;
esac
exit 0
"""

KUBECTL = """#!/bin/sh
echo "kubectl $*" >> "{events}"
case "$1" in
  get) cat "{node}" ;;
  wait) [ "$(cat "{active}" 2>/dev/null || echo active)" = active ] || exit 1 ;;
esac
exit 0
"""


def _node(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("events", "active", "state", "bin", "kubelet-config.yaml", "node.json", "kubelet.conf")}
    paths["state"].mkdir()
    paths["bin"].mkdir()
    paths["events"].write_text("")
    paths["kubelet.conf"].write_text("joined\n")
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "maxPods": 110,
        "systemReserved": {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "500Mi", "pid": "1000"},
    }
    paths["kubelet-config.yaml"].write_text(yaml.safe_dump(config))
    (paths["state"] / "cpu_manager_state").write_text('{"policyName":"none","defaultCpuSet":"0-63","checksum":1}')
    node = {"metadata": {"annotations": {"alicerce.dev/drained": "true"}}, "spec": {"unschedulable": True}}
    paths["node.json"].write_text(json.dumps(node))
    fill = {"events": paths["events"], "active": paths["active"], "state": paths["state"], "config": paths["kubelet-config.yaml"]}
    for name, text in (("systemctl", SYSTEMCTL), ("kubectl", KUBECTL)):
        script = paths["bin"] / name
        script.write_text(text.format(**fill, node=paths["node.json"]))
        script.chmod(0o755)
    return paths


def _run(tmp_path: Path, paths: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    main = yaml.safe_load((ROLES / "kubernetes_node" / "tasks" / "main.yml").read_text())
    (reset,) = [t for t in main if "resource-managers.yml" in str(t.get("ansible.builtin.import_tasks"))]
    play = {
        "name": "A node batch as site.yml runs it",
        "hosts": "gpu-001",
        "gather_facts": False,
        "vars": {
            "kubernetes_node_target": "host",
            "kubernetes_node_cpu_manager_policy": "static",
            "kubernetes_node_kubelet_config": kubelet_manager_config(kubelet_managers("training")),
            "kubernetes_node_kubelet_config_path": str(paths["kubelet-config.yaml"]),
            "kubernetes_node_state_dir": str(paths["state"]),
            "kubernetes_node_kubectl": str(paths["bin"] / "kubectl"),
            "kubernetes_node_ready_timeout": 10,
        },
        "tasks": [
            # the role's own import, with the tags main.yml gives it
            {
                "name": "Role step",
                "ansible.builtin.import_role": {"name": "kubernetes_node", "tasks_from": "resource-managers.yml"},
                "tags": reset["tags"],
            },
            # the end of the batch (site.yml): release what this batch drained, tagged always
            {
                "name": "Release the drained node",
                "when": "_kubernetes_node_drained_now | default(false) | bool",
                "ansible.builtin.include_role": {"name": "kubernetes_node", "tasks_from": "release.yml", "apply": {"tags": ["always"]}},
                "tags": ["always"],
            },
        ],
    }
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([play], sort_keys=False))
    inventory = tmp_path / "inventory.yml"
    local: dict[str, Any] = {
        "ansible_connection": "local",
        "ansible_python_interpreter": str(Path(tool("ansible-playbook")).parent / "python"),
    }
    inventory.write_text(yaml.safe_dump({"all": {"children": {"kube_control_plane": {"hosts": {"gpu-001": local}}}}}))
    return subprocess.run(
        [
            tool("ansible-playbook"),
            "-i",
            str(inventory),
            str(playbook),
            "-e",
            f"_kubernetes_node_kubelet_kubeconfig={paths['kubelet.conf']}",
            *args,
        ],
        check=False,
        capture_output=True,
        text=True,
        env={
            "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"),
            "PATH": f"{paths['bin']}:/usr/bin:/bin:/usr/sbin:/sbin",
            "ANSIBLE_NOCOLOR": "1",
        },
        cwd=ANSIBLE,
    )


def _events(paths: dict[str, Path]) -> list[str]:
    wanted = ("drain", "annotate", "stop", "start", "wait", "uncordon", "kubelet:")
    return [
        line.split()[1] if line.startswith("systemctl") else line
        for line in paths["events"].read_text().splitlines()
        if any(f" {w}" in f" {line}" for w in wanted)
    ]


@pytest.mark.parametrize("tags", [[], ["--tags", "configure"], ["--tags", "kubernetes_node"]])
def test_a_policy_change_drains_restarts_verifies_and_releases_within_the_batch(tmp_path: Path, tags: list[str]) -> None:
    paths = _node(tmp_path)
    result = _run(tmp_path, paths, *tags)
    assert result.returncode == 0, result.stdout[-3000:]
    steps = [line.split()[1] if line.startswith("kubectl") else line for line in _events(paths)]
    assert steps == ["drain", "annotate", "stop", "start", "wait", "uncordon", "annotate"], paths["events"].read_text()
    assert "--force" not in paths["events"].read_text()  # pods survive a kubelet restart: none is deleted
    assert paths["active"].read_text().strip() == "active"  # kubelet runs, with the new policy
    assert json.loads((paths["state"] / "cpu_manager_state").read_text())["policyName"] == "static"
    config = yaml.safe_load(paths["kubelet-config.yaml"].read_text())
    assert config["cpuManagerPolicy"] == "static" and config["topologyManagerPolicy"] == "restricted"
    assert config["cpuManagerPolicyOptions"] == {"full-pcpus-only": "true"}
    assert config["systemReserved"] == {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "500Mi", "pid": "1000"}
    assert config["maxPods"] == 110  # the rest of kubespray's config is kept


@pytest.mark.parametrize("tags", [["--tags", "services"], ["--tags", "install"], ["--skip-tags", "configure"]])
def test_no_tag_selection_runs_part_of_a_policy_change(tmp_path: Path, tags: list[str]) -> None:
    """The old role stopped kubelet under --tags services without draining or starting it again."""
    paths = _node(tmp_path)
    result = _run(tmp_path, paths, *tags)
    assert result.returncode == 0, result.stdout[-3000:]
    assert [s for s in _events(paths) if s in ("stop", "start") or "drain" in s] == []
    assert json.loads((paths["state"] / "cpu_manager_state").read_text())["policyName"] == "none"


def test_back_to_no_cpu_manager_drops_its_keys(tmp_path: Path) -> None:
    paths = _node(tmp_path)
    static = {"cpuManagerPolicy": "static", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}, "topologyManagerPolicy": "restricted"}
    paths["kubelet-config.yaml"].write_text(yaml.safe_dump({"maxPods": 110, **static, "systemReserved": {"cpu": "2", "memory": "8Gi"}}))
    (paths["state"] / "cpu_manager_state").write_text('{"policyName":"static","defaultCpuSet":"2-63","checksum":1}')
    back = {
        "kubernetes_node_cpu_manager_policy": "none",
        "kubernetes_node_kubelet_config": kubelet_manager_config(kubelet_managers("system")),
    }
    result = _run(tmp_path, paths, "-e", json.dumps(back))
    assert result.returncode == 0, result.stdout[-3000:]
    config = yaml.safe_load(paths["kubelet-config.yaml"].read_text())
    assert config == {"maxPods": 110, "systemReserved": {"cpu": "500m", "memory": "512Mi"}}
    assert json.loads((paths["state"] / "cpu_manager_state").read_text())["policyName"] == "none"


def test_the_batch_end_no_longer_waits_for_kubespray() -> None:
    text = (ROOT / "alicerce" / "emit" / "templates" / "ansible" / "site.yml.j2").read_text()
    assert "_kubernetes_node_wait_for_cluster" not in text
    tasks = yaml.safe_load((ROLES / "kubernetes_node" / "tasks" / "resource-managers.yml").read_text())
    assert "tags" not in json.dumps([t for t in tasks if "block" in t])  # one tag set for every step: all or none


@pytest.mark.parametrize("purpose", ["training", "inference", "system"])
def test_the_written_policies_are_what_kubespray_renders(purpose: str) -> None:
    """The node stage writes the values kubespray's kubelet-config template renders from the pool variables, so
    kubespray's later restart finds state files that match (template keys and defaults from the pinned release)."""
    from alicerce.emit.ansible.kubespray import kubelet_manager_vars

    managers = kubelet_managers(purpose)
    kubespray = kubelet_manager_vars(managers)
    config = kubelet_manager_config(managers)
    facts = json.loads((ROOT / "tests" / "data" / "upstream" / "kubespray" / "v2.31.0" / "variables.json").read_text())["variables"]
    for key, variable in (
        ("cpuManagerPolicy", "kubelet_cpu_manager_policy"),
        ("cpuManagerPolicyOptions", "kubelet_cpu_manager_policy_options"),
        ("topologyManagerPolicy", "kubelet_topology_manager_policy"),
        ("topologyManagerScope", "kubelet_topology_manager_scope"),
    ):
        assert "kubelet-config.v1beta1.yaml.j2" in facts[variable]["defined_at"]  # rendered only when defined
        assert config[key] == kubespray.get(variable)
    for resource in ("cpu", "memory"):
        default = facts[f"system_{resource}_reserved"]["default"].strip('"')
        assert config["systemReserved"][resource] == kubespray.get(f"system_{resource}_reserved", default)


def test_drain_forces_only_before_a_reboot() -> None:
    """Issue 20 (onprem 2, item 6): --force deletes pods no controller recreates. A reboot ends them anyway; a kubelet
    restart does not, so there a bare pod stops the drain (and the run) instead of being deleted."""
    from tests.ansible.test_role_decisions import _render

    drain = yaml.safe_load((ROLES / "kubernetes_node" / "tasks" / "drain.yml").read_text())
    argv = drain[1]["ansible.builtin.command"]["argv"]
    forced = _render("kubernetes_node", argv, inventory_hostname="gpu-001", kubernetes_node_drain_force=True)
    assert forced[-1] == "--force" and "--ignore-daemonsets" in forced
    assert "--force" not in _render("kubernetes_node", argv, inventory_hostname="gpu-001")
    reboot = yaml.safe_load((ROLES / "kubernetes_node" / "tasks" / "reboot.yml").read_text())
    assert reboot[0]["vars"]["kubernetes_node_drain_force"] is True
    tasks = yaml.safe_load((ROLES / "kubernetes_node" / "tasks" / "resource-managers.yml").read_text())
    change = next(t for t in tasks if "block" in t)
    (drain_step,) = [t for t in change["block"] if "ansible.builtin.import_tasks" in t]
    assert drain_step["vars"]["kubernetes_node_drain_force"] is False
