"""The generated site.yml rolls in batches: when a host of a batch fails, no later batch is touched."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from alicerce.emit.ansible.role_vars import ROLE_VARS
from alicerce.run.ansible import run_playbook

STUB = """---
- name: Record that the role ran on this host
  ansible.builtin.copy:
    content: "{{ role_name }}\\n"
    dest: "{{ rolling_marks }}/{{ inventory_hostname }}.{{ role_name }}"
    mode: "0644"

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
  ansible.builtin.copy:
    content: "released\\n"
    dest: "{{ rolling_marks }}/{{ inventory_hostname }}.released"
    mode: "0644"
"""


def test_a_failed_host_stops_the_roll_before_the_next_batch(generated: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(generated, project, ignore=shutil.ignore_patterns("roles", ".cache"))
    roles = project / "roles"  # the generated site.yml and inventory, with stub roles that only leave marks
    for model in ROLE_VARS:
        (roles / model.ROLE / "tasks").mkdir(parents=True)
        (roles / model.ROLE / "tasks" / "main.yml").write_text(STUB)
    (roles / "kubernetes_node" / "tasks" / "release.yml").write_text(RELEASE)
    marks = tmp_path / "marks"
    marks.mkdir()
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
                        "rolling_marks": str(marks),
                        "rolling_fail_host": fail_host,
                        "rolling_fail_role": "nvme_scratch",
                    }
                }
            }
        )
    )
    result = run_playbook(project, "site.yml", tmp_path / "runner", inventories=[extra])
    assert not result.ok
    assert [(f.host, f.task) for f in result.failures] == [
        (fail_host, "Fail where the test says"),
        (fail_host, "Stop the roll before the next batch"),  # held, then it stops the roll once its batch is through
    ]
    assert "stays held (cordoned, drained by alicerce)" in result.failures[1].message
    touched = {p.name.split(".nvidia_driver")[0] for p in marks.glob("*.nvidia_driver")}
    assert touched == set(hosts[:9])  # the canary and the whole failing batch, nobody after
    for host in hosts[9:]:
        assert sorted(p.name for p in marks.glob(f"{host}.*")) == [f"{host}.preflight"]  # checked, never changed
    assert not (marks / f"{fail_host}.kubernetes_node").exists()  # the failed host stopped at its failure
    assert not (marks / f"{fail_host}.released").exists()  # and stays cordoned
    # issue 20, onprem 2: the nodes of the failing batch that did not fail finish, are accepted and uncordoned
    released = {p.name.removesuffix(".released") for p in marks.glob("*.released")}
    assert released == set(hosts[:9]) - {fail_host}
    assert all((marks / f"{host}.node_validation").exists() for host in released)


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
    marks = tmp_path / "marks"
    marks.mkdir()
    hosts = _site_hosts(generated)
    fail_host = hosts[4]
    extra = tmp_path / "local.yml"
    local = {
        "ansible_connection": "local",
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
        "rolling_marks": str(marks),
        "rolling_fail_host": fail_host,
        "rolling_fail_role": "node_validation",
    }
    extra.write_text(yaml.safe_dump({"all": {"vars": local}}))
    result = run_playbook(project, "post-cluster.yml", tmp_path / "runner", inventories=[extra])
    assert not result.ok
    assert [(f.host, f.task) for f in result.failures] == [
        (fail_host, "Fail where the test says"),
        (fail_host, "Stop the roll before the next batch"),
    ]
    released = {p.name.removesuffix(".released") for p in marks.glob("*.released")}
    assert released == set(hosts[:9]) - {fail_host}  # before: the whole batch stayed held
    assert not [p for host in hosts[9:] for p in marks.glob(f"{host}.*")]


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
