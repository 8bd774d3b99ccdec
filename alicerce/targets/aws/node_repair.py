"""Which XIDs EKS node auto repair acts on, per line of the node monitoring agent (review obsreview32 D-2).

EKS repairs a GPU node only when the eks-node-monitoring-agent add-on sets AcceleratedHardwareReady=False, which it
does for the XIDs it rates fatal (its WellKnownXidCodes, aws/eks-node-monitoring-agent monitors/nvidia/dcgm/
dcgm_policies.go); any other code is an NvidiaXID<code>Warning event: no cordon, no repair, the condition stays True.
alicerce installs the add-on unpinned, so a cluster runs either side of v1.6.4 (pull 136, which took XIDs 13, 31, 94 and
121 out of the list). The lists below are the agent's, read at the versions vendored under
tests/data/upstream/eks-node-monitoring-agent (a test holds them equal); GPUCriticalXid's runbook at aws names from
them which critical XIDs EKS repairs and which the on-call must take out of service by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from alicerce.catalog.alerts import CRITICAL_XIDS

ADDON = "eks-node-monitoring-agent"


@dataclass(frozen=True)
class AgentXids:
    """The XIDs one line of the agent rates fatal."""

    versions: str  # the agent versions the list holds for, in the runbook's words
    vendored: str  # the version the list was read at (tests/data/upstream/eks-node-monitoring-agent/<vendored>/xid.json)
    fatal: tuple[int, ...]


AGENT_XIDS = (
    AgentXids("before v1.6.4", "v1.6.0", (13, 31, 48, 63, 64, 74, 79, 94, 95, 119, 120, 121, 140)),
    AgentXids(
        "v1.6.4 and later",
        "v1.7.0",
        (46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158),
    ),
)


def repaired_critical_xids() -> tuple[int, ...]:
    """The critical XIDs every agent line rates fatal: EKS cordons and repairs the node whatever the add-on's version."""
    return tuple(c for c in CRITICAL_XIDS if all(c in a.fatal for a in AGENT_XIDS))


def unrepaired_critical_xids() -> dict[int, tuple[str, ...]]:
    """Critical XID -> the agent lines on which EKS does nothing for it (none of them rates it fatal)."""
    return {c: lines for c in CRITICAL_XIDS if (lines := tuple(a.versions for a in AGENT_XIDS if c not in a.fatal))}


def _codes(codes: list[str]) -> str:
    return codes[0] if len(codes) == 1 else f"{', '.join(codes[:-1])} and {codes[-1]}"


def manual_xids_text() -> str:
    """The critical XIDs EKS does not act on, in words: 'XID 154, nor on XID 94 with an agent v1.6.4 and later'."""
    everywhere = [str(c) for c, lines in unrepaired_critical_xids().items() if len(lines) == len(AGENT_XIDS)]
    partly = [
        f"XID {c} with an agent {' or '.join(lines)}" for c, lines in unrepaired_critical_xids().items() if len(lines) < len(AGENT_XIDS)
    ]
    parts = ([f"XID {_codes(everywhere)}"] if everywhere else []) + partly
    return ", nor on ".join(parts)


def critical_xid_action() -> str:
    """GPUCriticalXid's runbook at an EKS site: EKS's repair for the XIDs it acts on, the on-call's for the others."""
    repaired = _codes([str(c) for c in repaired_critical_xids()])
    manual = manual_xids_text()
    # the cordon, the 10 minutes and the pause: EKS User Guide node-health.html "Node auto repair" and node-repair.html
    # (review obsreview29 N-5, obsreview31 N-2); a cordon and uncordon counts only once the subquery step (1m) and a
    # scrape have seen it (review obsreview31 N-3)
    text = (
        f"for XID {repaired}, EKS node auto repair cordons the node and reboots or replaces it about 10 minutes after "
        "detection, unless repairs are paused (an ARC zonal shift, or more than 20% of a group of over five nodes "
        "unhealthy): check that the node's AcceleratedHardwareReady condition went back to True or the node was "
        "replaced (kubectl get node; aws eks describe-nodegroup shows the group's health issues); if neither, drain the "
        "node and terminate its instance, and the node group launches another. "
    )
    if manual:
        text += (
            f"EKS does not act on {manual} (aws eks describe-addon --addon-name {ADDON} gives the agent's version): "
            "no cordon, no repair, and AcceleratedHardwareReady stays True, so drain the node and terminate its "
            "instance now. "
        )
    return text + (
        "A rebooted node keeps its name: once its GPUs are healthy, cordon it, wait until the page resolves (about 2 "
        "minutes: one subquery step plus one scrape), then uncordon it"
    )
