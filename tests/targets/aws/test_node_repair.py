"""EKS node auto repair against what the node monitoring agent really reports (review obsreview31 G-2)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from alicerce.catalog.alerts import APPLICATION_XIDS, CRITICAL_XIDS
from alicerce.targets.aws.components.gpu_node_pool import application_xid_overrides
from alicerce.targets.aws.resolve import AGENT_XIDS

AGENT = Path(__file__).parents[2] / "data/upstream/eks-node-monitoring-agent"
VERSIONS = sorted(p.name for p in AGENT.iterdir() if p.is_dir())
# EKS API reference, NodeRepairConfigOverrides.repairAction
REPAIR_ACTIONS = {"Replace", "Reboot", "NoAction"}


def facts(version: str) -> dict[str, Any]:
    return json.loads((AGENT / version / "xid.json").read_text())


def test_both_sides_of_the_agent_change_are_vendored() -> None:
    # v1.6.4 took 13 and 31 out of the fatal codes; the add-on is unpinned, so a cluster may run either side
    assert {13, 31} <= set(facts("v1.6.0")["fatal_codes"])
    assert not {13, 31} & set(facts("v1.7.0")["fatal_codes"])


@pytest.mark.parametrize("version", VERSIONS)
def test_no_application_xid_the_agent_rates_fatal_is_repaired(version: str) -> None:
    """An application XID the agent marks AcceleratedHardwareReady=False would reboot the node 10 minutes later: each
    such reason has a NoAction override, under the agent's own condition and reason strings."""
    agent = facts(version)
    overrides = {(o.condition, o.reason): o.action for o in application_xid_overrides()}
    fatal_app = [c for c in agent["fatal_codes"] if c in APPLICATION_XIDS]
    for code in fatal_app:
        reason = agent["reasons"]["fatal"]["template"].format(code=code)
        assert overrides.get((agent["condition"], reason)) == "NoAction", (version, code)


@pytest.mark.parametrize("version", VERSIONS)
def test_critical_xids_keep_their_repair(version: str) -> None:
    agent = facts(version)
    overridden = {o.reason for o in application_xid_overrides()}
    template = agent["reasons"]["fatal"]["template"]
    assert not {template.format(code=c) for c in CRITICAL_XIDS} & overridden


def test_overrides_are_complete_and_valid() -> None:
    # the API takes an override only with all four values; the wait is at least 1 minute
    for o in application_xid_overrides():
        assert o.action in REPAIR_ACTIONS and o.wait_minutes >= 1 and o.condition and o.reason


def test_the_runbook_s_agent_lists_are_the_vendored_ones() -> None:
    """alicerce.targets.aws.resolve holds the agent's fatal XIDs per line: each is the vendored list, and every
    vendored version is one of its lines."""
    assert {a.vendored for a in AGENT_XIDS} == set(VERSIONS)
    for a in AGENT_XIDS:
        assert list(a.fatal) == facts(a.vendored)["fatal_codes"], a.vendored


def _manual_branch(text: str) -> str:
    """The sentence of the aws runbook that names the XIDs EKS does not act on."""
    sentences = [s for s in text.split(". ") if "EKS does not act on" in s]
    assert len(sentences) == 1, text
    return sentences[0]


def test_every_critical_xid_is_repaired_by_eks_or_named_for_the_on_call() -> None:
    """Review obsreview32 D-2: the aws GPUCriticalXid runbook assumed EKS repairs every critical XID, but no vendored
    agent rates 154 fatal and v1.6.4 and later do not rate 94: no cordon, no repair, AcceleratedHardwareReady stays True.
    Each critical XID is fatal to every vendored agent, or named in the runbook's manual branch (and only those are)."""
    from tests.emit.kube.test_monitoring import platform, rules_of

    text = rules_of(platform("prod"), "aws")["GPUCriticalXid"]["annotations"]["description"]
    manual = {int(c) for c in re.findall(r"(?<![.\w])(\d+)(?![.\w])", _manual_branch(text).split("(")[0])}
    for code in CRITICAL_XIDS:
        everywhere = all(code in facts(v)["fatal_codes"] for v in VERSIONS)
        assert everywhere != (code in manual), (code, everywhere, manual)
    assert {154, 94} <= manual
