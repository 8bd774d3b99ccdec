"""Priorities: pod PriorityClasses by workload kind, and Kueue WorkloadPriorityClasses by team and kind.

Two engines read priority. kube-scheduler reads a pod's ``priorityClassName`` (its preemption);
Kueue reads the job's ``kueue.x-k8s.io/priority-class`` label, naming a WorkloadPriorityClass, and
falls back to the pods' PriorityClass when the label is absent (Kueue v0.19.2
pkg/controller/jobframework/reconciler.go 1716-1733). Nothing defaults either for a job: Kueue's
WorkloadPriorityClass defaulting is an alpha gate that is off, and a mutating admission policy is
not GA in Kubernetes 1.35. So jobs name them, and a ValidatingAdmissionPolicy
(alicerce.emit.kube.tenancy) lets each team's namespaces name only its own.

- PriorityClass ``alicerce-<kind>``: the kind of work (inference > training > batch).
- WorkloadPriorityClass ``alicerce-<team>-<kind>``: that kind's value plus the team's priority
  offset, so kinds dominate and, within a kind, a critical team's jobs are ordered and preempt
  ahead of a low one's (ClusterQueue ``withinClusterQueue: LowerPriority``; across the cohort,
  fair sharing's weights, also from the team priority, decide).
"""

from __future__ import annotations

from typing import Any

from alicerce.emit.kube.common import meta
from alicerce.resolve.model import ResolvedSite, ResolvedTeam

KUEUE_API = "kueue.x-k8s.io/v1beta2"
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"

# Pod priority by what a pool is for: inference above training above batch.
PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "inference": (100000, "Online inference: latency-bound services that must not wait behind jobs."),
    "training": (10000, "Training and fine-tuning jobs."),
    "batch": (1000, "Batch inference and data preparation: runs in whatever capacity is left."),
}
PURPOSE_KIND = {
    "inference": "inference",
    "training": "training",
    "fine-tuning": "training",
    "batch-inference": "batch",
    "data-prep": "batch",
    "system": "batch",
}
# A team's priority, added to its kinds' values: always below the gap between two kinds.
TEAM_OFFSET = {"critical": 400, "high": 300, "normal": 200, "low": 100}
# Fair-sharing weight of a team's ClusterQueue in its cohort.
TEAM_WEIGHT = {"critical": "4", "high": "2", "normal": "1", "low": "500m"}


def priority_class_name(kind: str) -> str:
    return f"alicerce-{kind}"


def workload_priority_class_name(team: str, kind: str) -> str:
    return f"alicerce-{team}-{kind}"


def team_kinds(site: ResolvedSite, team: ResolvedTeam) -> list[str]:
    """The kinds of work a team runs at a site: those of the pools it has quota on, and batch (CPU work) always."""
    kinds = {PURPOSE_KIND[pool.spec.purpose] for _, pool in site.quotas(team)} | {"batch"}
    return [k for k in PRIORITY_CLASSES if k in kinds]


def priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": meta(priority_class_name(kind), labels={"alicerce.dev/managed": "true"}),
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": text,
        }
        for kind, (value, text) in PRIORITY_CLASSES.items()
    ]


def workload_priority_classes(site: ResolvedSite) -> list[dict[str, Any]]:
    out = []
    for team in site.teams:
        for kind in team_kinds(site, team):
            value = PRIORITY_CLASSES[kind][0] + TEAM_OFFSET[team.spec.priority]
            out.append(
                {
                    "apiVersion": KUEUE_API,
                    "kind": "WorkloadPriorityClass",
                    "metadata": meta(workload_priority_class_name(team.name, kind), labels={"alicerce.dev/team": team.name}),
                    "value": value,
                    "description": f"{kind} work of team {team.name} ({team.spec.priority} priority)",
                }
            )
    return out
