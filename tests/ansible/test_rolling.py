"""The generated site.yml rolls in batches: when a host of a batch fails, no later batch is touched.

The roles are stubs that leave a mark per host and role: a debug task, read back from the run's
events (a copy task ran a module process per host and role, ~130 of them, for the same fact).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from alicerce.emit.ansible.role_vars import ROLE_VARS
from alicerce.run.ansible import RunResult, run_playbook

STUB = """---
- name: Record that the role ran on this host
  ansible.builtin.debug:
    msg: "{{ role_name }}"

- name: Drain the node as a driver upgrade would
  ansible.builtin.set_fact:
    _kubernetes_node_drained_now: true
  when: role_name == "nvidia_driver"

- name: Fail where the test says
  ansible.builtin.fail:
    msg: "forced failure of {{ inventory_hostname }}"
  when: inventory_hostname == rolling_fail_host and role_name == rolling_fail_role
"""

RELEASE = """---
- name: Record that the node was released
  ansible.builtin.debug:
    msg: released
"""


def test_a_failed_host_stops_the_roll_before_the_next_batch(generated: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(generated, project, ignore=shutil.ignore_patterns("roles", ".cache"))
    roles = project / "roles"  # the generated site.yml and inventory, with stub roles that only leave marks
    for model in ROLE_VARS:
        (roles / model.ROLE / "tasks").mkdir(parents=True)
        (roles / model.ROLE / "tasks" / "main.yml").write_text(STUB)
    (roles / "kubernetes_node" / "tasks" / "release.yml").write_text(RELEASE)
    site = yaml.safe_load((generated / "site.yml").read_text())
    rolling = site[1]
    assert (rolling["serial"], rolling["max_fail_percentage"]) == ([1, "25%"], 0)
    hosts = _site_hosts(generated)  # in inventory order: dc1-system's 2 hosts, then onprem-h100's racks
    assert len(hosts) == 34  # a canary, then batches of 8
    fail_host = hosts[4]  # in the second batch (hosts[1:9])
    extra = tmp_path / "local.yml"
    extra.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_become": False,
                        "ansible_python_interpreter": sys.executable,
                        "rolling_fail_host": fail_host,
                        "rolling_fail_role": "nvme_scratch",
                    }
                }
            }
        )
    )
    result = run_playbook(project, "site.yml", tmp_path / "runner", inventories=[extra])
    assert not result.ok
    marks = _marks(result)
    assert [(f.host, f.task) for f in result.failures] == [
        (fail_host, "Fail where the test says"),
        (fail_host, "Stop the roll before the next batch"),  # held, then it stops the roll once its batch is through
    ]
    assert "stays held (cordoned, drained by alicerce)" in result.failures[1].message
    touched = {mark.removesuffix(".nvidia_driver") for mark in marks if mark.endswith(".nvidia_driver")}
    assert touched == set(hosts[:9])  # the canary and the whole failing batch, nobody after
    for host in hosts[9:]:
        assert sorted(mark for mark in marks if mark.startswith(f"{host}.")) == [f"{host}.preflight"]  # checked, never changed
    assert f"{fail_host}.kubernetes_node" not in marks  # the failed host stopped at its failure
    assert f"{fail_host}.released" not in marks  # and stays cordoned
    # issue 20, onprem 2: the nodes of the failing batch that did not fail finish, are accepted and uncordoned
    released = {mark.removesuffix(".released") for mark in marks if mark.endswith(".released")}
    assert released == set(hosts[:9]) - {fail_host}
    assert all(f"{host}.node_validation" in marks for host in released)


def test_a_node_that_fails_acceptance_leaves_the_rest_of_its_batch_released(generated: Path, tmp_path: Path) -> None:
    """post-cluster.yml rolls like site.yml: the failed node stays held, its batch-mates are released, nobody after."""
    project = tmp_path / "project"
    shutil.copytree(generated, project, ignore=shutil.ignore_patterns("roles", ".cache"))
    roles = project / "roles"
    for model in ROLE_VARS:
        (roles / model.ROLE / "tasks").mkdir(parents=True)
        (roles / model.ROLE / "tasks" / "main.yml").write_text(STUB)
    (roles / "kubernetes_node" / "tasks" / "post-cluster.yml").write_text(STUB)
    (roles / "kubernetes_node" / "tasks" / "release.yml").write_text(RELEASE)
    hosts = _site_hosts(generated)
    fail_host = hosts[4]
    extra = tmp_path / "local.yml"
    local = {
        "ansible_connection": "local",
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
        "rolling_fail_host": fail_host,
        "rolling_fail_role": "node_validation",
    }
    extra.write_text(yaml.safe_dump({"all": {"vars": local}}))
    result = run_playbook(project, "post-cluster.yml", tmp_path / "runner", inventories=[extra])
    assert not result.ok
    marks = _marks(result)
    assert [(f.host, f.task) for f in result.failures] == [
        (fail_host, "Fail where the test says"),
        (fail_host, "Stop the roll before the next batch"),
    ]
    released = {mark.removesuffix(".released") for mark in marks if mark.endswith(".released")}
    assert released == set(hosts[:9]) - {fail_host}  # before: the whole batch stayed held
    assert not [mark for host in hosts[9:] for mark in marks if mark.startswith(f"{host}.")]


def _marks(result: RunResult) -> set[str]:
    """``host.role`` for every stub role that ran on a host, ``host.released`` for every node released: from the run's events."""
    marks: set[str] = set()
    for path in (result.artifacts / "job_events").glob("*.json"):
        event = json.loads(path.read_text())
        data = event.get("event_data") or {}
        if event.get("event") != "runner_on_ok":
            continue
        if data.get("task") == "Record that the role ran on this host":
            marks.add(f"{data['host']}.{data['role']}")
        elif data.get("task") == "Record that the node was released":
            marks.add(f"{data['host']}.released")
    assert marks, "no stub role ran"
    return marks


def _rack(generated: Path, rack: str) -> list[str]:
    inventory = yaml.safe_load((generated / "inventory.yml").read_text())
    pool = inventory["all"]["children"]["site_dc1"]["children"]["pool_onprem_h100"]
    return list(pool["children"][rack]["hosts"])


def _site_hosts(generated: Path) -> list[str]:
    """dc1's hosts in the order Ansible plays them (inventory order: pool groups, then their racks)."""
    inventory = yaml.safe_load((generated / "inventory.yml").read_text())
    out: list[str] = []

    def walk(group: dict[str, Any]) -> None:
        out.extend(h for h in (group.get("hosts") or {}) if h not in out)
        for child in (group.get("children") or {}).values():
            walk(child or {})

    walk(inventory["all"]["children"]["site_dc1"])
    return out
