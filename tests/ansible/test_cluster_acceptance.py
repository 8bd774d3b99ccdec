"""Cluster acceptance (accept.yml): a node is released only when it is Ready and offers exactly what its pool promises."""

from __future__ import annotations

import json
from collections.abc import Mapping

import yaml

from tests.ansible.test_filters import A


def _node(ready: bool, **allocatable: str) -> str:
    status = "True" if ready else "False"
    return json.dumps({"status": {"conditions": [{"type": "Ready", "status": status}], "allocatable": allocatable}})


def test_acceptance_wants_the_exact_counts_and_says_what_differs() -> None:
    """Issue 20 (onprem 2, item 6): more GPUs than promised (a time-slicing or MIG config the pool does not declare)
    is not acceptance; the failure names each resource and what the node offers."""
    promise = {"nvidia.com/gpu": "8", "rdma/ib": "63"}
    assert A.allocatable_report(_node(True, **{"nvidia.com/gpu": "8", "rdma/ib": "63", "cpu": "96"}), promise) == "accepted"
    assert A.allocatable_report(_node(True, **{"nvidia.com/gpu": "16", "rdma/ib": "63"}), promise) == (
        "nvidia.com/gpu: expected 8, offers 16"
    )
    assert not A.allocatable_ready(_node(True, **{"nvidia.com/gpu": "16", "rdma/ib": "63"}), promise)
    assert A.allocatable_report(_node(False, **{"nvidia.com/gpu": "8"}), promise) == (
        "not Ready (Ready is not True); rdma/ib: expected 63, offers 0"
    )
    assert A.allocatable_report("", promise).startswith("not Ready (no node object)")
    observed = {"node": {"ready": True, "allocatable": {"nvidia.com/gpu": "16", "rdma/ib": "63"}}}
    checks = {c["check"]: c for c in A.acceptance_report(observed, {"allocatable": promise})}
    assert checks["node allocatable"]["ok"] is False  # host acceptance's report agrees: exactly


def test_accept_yml_releases_only_what_the_one_check_accepts(prod_files: Mapping[str, str]) -> None:
    accept = yaml.safe_load(prod_files["ansible/accept.yml"])
    wait, check, release = accept[0]["tasks"]
    rule = "alicerce_allocatable_report(node_validation_allocatable) == 'accepted'"
    assert rule in wait["until"] and wait["failed_when"] is False
    assert rule in check["ansible.builtin.assert"]["that"] and "alicerce_allocatable_report" in check["ansible.builtin.assert"]["fail_msg"]
    assert release["ansible.builtin.import_role"] == {"name": "kubernetes_node", "tasks_from": "release.yml"}
