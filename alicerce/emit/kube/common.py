"""Names and small helpers every module of the in-cluster layer shares."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedTeam

POOL_LABEL = "alicerce.dev/pool"
PURPOSE_LABEL = "alicerce.dev/purpose"
SYSTEM_PURPOSE = "system"
TEAM_LABEL = "alicerce.dev/team"
GPU = "nvidia.com/gpu"
MANAGED = {"app.kubernetes.io/managed-by": "alicerce"}


def meta(name: str, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    if labels:
        out["labels"] = dict(sorted(labels.items()))
    return out


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` merged over ``base``: maps merge recursively, anything else is replaced (as Helm merges values)."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def content_name(stem: str, content: str) -> str:
    """A ConfigMap's name carrying its content: the stem and 10 hex digits of the content's SHA-256. The GPU Operator's
    operands read their ConfigMaps at start only (dcgm-exporter's counters; the device plugin's config-manager and the
    MIG manager switch configs on a node label change, not on a file change), and the operator rolls an operand's
    DaemonSet when the ClusterPolicy names another ConfigMap (gpu-operator v26.3.3 controllers/object_controls.go: the
    name is the pod template's volume, and isDaemonsetSpecChanged compares the template's hash): a new content under a
    new name rolls them, an edit in place does not (review obsreview29 D-2)."""
    return f"{stem}-{hashlib.sha256(content.encode()).hexdigest()[:10]}"


# Every node alicerce's Ansible builds joins with this taint (kubelet registerWithTaints) and loses it only once it
# passed acceptance (kubernetes_node release.yml): the operators' node agents that acceptance needs tolerate it.
ACCEPTANCE_TAINT = {"key": "alicerce.dev/acceptance", "value": "pending", "effect": "NoSchedule"}


# what every agent a node needs before it can pass acceptance tolerates: the GPU Operator's device plugin, DCGM and
# NFD, the Network Operator's RDMA device plugin (the resources acceptance waits for come from them)
ACCEPTANCE_TOLERATION = {"key": ACCEPTANCE_TAINT["key"], "operator": "Exists", "effect": ACCEPTANCE_TAINT["effect"]}


def held_tolerations(nodes_by_ansible: bool) -> list[dict[str, str]]:
    """The acceptance toleration where nodes join held (on-prem nodes built by alicerce's Ansible), else none."""
    return [dict(ACCEPTANCE_TOLERATION)] if nodes_by_ansible else []


def tolerate(pools: Iterable[ResolvedPool]) -> list[dict[str, str]]:
    """Tolerations (key Exists, per effect) for every taint the pools carry."""
    keys = sorted({(t.key, t.effect) for p in pools for t in p.spec.taints})
    return [{"key": k, "operator": "Exists", "effect": e} for k, e in keys]


def system_pools(pools: Iterable[ResolvedPool]) -> list[ResolvedPool]:
    """A site's system pools: where the platform's own controllers run (rule AL320 requires one with min > 0)."""
    return [p for p in pools if p.spec.purpose == SYSTEM_PURPOSE]


def system_placement(pools: Iterable[ResolvedPool]) -> dict[str, Any]:
    """The nodeSelector and tolerations that pin a platform component to the site's system pool.

    Every node of the other pools is either tainted (GPU pools, kubespray's control plane) or meant for
    the teams' jobs (untainted Spot data-prep nodes, reclaimed at two minutes' notice): a controller that
    may land anywhere either stays Pending or is evicted with the Spot node. The system pool's own taints,
    if it declares any, are tolerated here, so a system taint keeps team pods off it but not the platform.
    """
    system = system_pools(pools)
    if not system:
        return {}
    placement: dict[str, Any] = {"nodeSelector": {PURPOSE_LABEL: SYSTEM_PURPOSE}}
    if tolerations := tolerate(system):
        placement["tolerations"] = tolerations
    return placement


def host_rdma_pools(pools: Iterable[ResolvedPool]) -> list[ResolvedPool]:
    """The pools whose nodes reach their fabric through host RDMA adapters (InfiniBand, RoCE), not EFA."""
    return [p for p in pools if p.rdma is not None and p.rdma.technology != "efa"]


def team_labels(rp: ResolvedPlatform, team: ResolvedTeam) -> dict[str, str]:
    return {
        "alicerce.dev/platform": rp.name,
        "alicerce.dev/environment": rp.environment,
        TEAM_LABEL: team.name,
        "alicerce.dev/cost-center": team.cost_center,
    }


# Pods that may share one RDMA adapter pool at a time: the RDMA shared device plugin's rdmaHcaMax, which is
# also how many rdma/<resource> units each node advertises (NVIDIA's Network Operator examples use 63).
RDMA_PODS_PER_NODE = 63


def fabric_units_per_node(pool: ResolvedPool) -> int:
    """How many units of its fabric resource (vpc.amazonaws.com/efa, rdma/ib, rdma/roce) one node of a pool offers."""
    if pool.rdma is None:
        return 0
    return pool.rdma.interfaces if pool.rdma.technology == "efa" else RDMA_PODS_PER_NODE
