"""Budgets that act: the guard that stops a team's Kueue ClusterQueue from admitting once its monthly budget is spent.

A team whose budget says ``onExhausted: stopAdmitting`` gets, at each site where it has a ClusterQueue and a share of
its budget (``alicerce:team_budget_usd:monthly``, alicerce.emit.kube.monitoring), a place in the site's budget guard:
a CronJob in the monitoring namespace that runs :mod:`alicerce.emit.kube.budget_guard` every 15 minutes. It holds
the queue with Kueue's own ``spec.stopPolicy: Hold`` (Kueue v0.19.2 clusterqueue_types.go; vendored CRD schema in
tests/data/upstream/kueue/0.19.2): no new workload is admitted, admitted ones run to the end. It releases the queue
when the month's spend is under the budget again: the first run of the next month, or after the budget is raised.

Least privilege: the guard's ServiceAccount may get and patch only the ClusterQueues it guards (a ClusterRole with
``resourceNames``: ClusterQueues are cluster-scoped) and nothing else; it reads Prometheus through the operator's
``prometheus-operated`` Service. Pure: returns plain dicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from alicerce.emit.kube.common import MANAGED, meta, system_placement
from alicerce.emit.kube.costs import BUDGET
from alicerce.emit.kube.kueue import cluster_queue
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.resolve.namespaces import MONITORING_NAMESPACE

NAME = "alicerce-budget-guard"
SCHEDULE = "*/15 * * * *"
SCRIPT = "budget_guard.py"
CONFIG = "config.json"
MOUNT = "/etc/alicerce-budget-guard"
# prometheus-operator's governing Service of every Prometheus in a namespace (its StatefulSet's serviceName)
PROMETHEUS_URL = f"http://prometheus-operated.{MONITORING_NAMESPACE}.svc:9090"
NOBODY = 65534


def guarded_teams(rp: ResolvedPlatform, site: ResolvedSite, groups: list[dict[str, Any]]) -> list[str]:
    """The teams whose queue the site's guard holds: budget ``stopAdmitting``, a ClusterQueue here, a budget share
    recorded here (the rule ``groups`` of the site)."""
    recorded = {r["labels"]["team"] for g in groups for r in g["rules"] if r.get("record") == BUDGET}
    if not rp.spec.operators.kueue.enabled:
        return []
    out = []
    for team in site.teams:
        budget = team.spec.budget
        if budget is None or budget.on_exhausted != "stopAdmitting" or team.name not in recorded:
            continue
        if cluster_queue(rp, site, team) is not None:
            out.append(team.name)
    return sorted(out)


def guard_script() -> str:
    return (Path(__file__).parent / SCRIPT).read_text(encoding="utf-8")


def guard_config(site: ResolvedSite, teams: list[str]) -> dict[str, Any]:
    # a team's ClusterQueue carries its name (alicerce.emit.kube.kueue.cluster_queue); the names it had earlier this
    # month are summed with it (teams[].renamedFrom)
    former = {t.name: list(t.spec.renamed_from) for t in site.teams if t.spec.renamed_from}
    entries = [{"team": t, "clusterQueue": t} | ({"renamedFrom": former[t]} if t in former else {}) for t in teams]
    return {"prometheus": PROMETHEUS_URL, "site": site.name, "teams": entries}


def budget_guard(rp: ResolvedPlatform, site: ResolvedSite, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ServiceAccount, ClusterRole and binding, ConfigMap and CronJob of the site's guard (none without a team
    to guard)."""
    teams = guarded_teams(rp, site, groups)
    if not teams:
        return []
    labels = {**MANAGED, "app.kubernetes.io/name": NAME}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(NAME, MONITORING_NAMESPACE, labels)}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": meta(NAME, labels=labels),
        "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "resourceNames": teams, "verbs": ["get", "patch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": meta(NAME, labels=labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": MONITORING_NAMESPACE}],
    }
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(NAME, MONITORING_NAMESPACE, labels),
        "data": {SCRIPT: guard_script(), CONFIG: json.dumps(guard_config(site, teams), indent=1, sort_keys=True) + "\n"},
    }
    container = {
        "name": "guard",
        "image": rp.images["budget-guard"].image,
        "command": ["python3", f"{MOUNT}/{SCRIPT}", f"{MOUNT}/{CONFIG}"],
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": NOBODY,
            "runAsGroup": NOBODY,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": "guard", "mountPath": MOUNT, "readOnly": True}],
    }
    pod: dict[str, Any] = {
        "serviceAccountName": NAME,
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [{"name": "guard", "configMap": {"name": NAME}}],
        **system_placement(site.pools),
    }
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta(NAME, MONITORING_NAMESPACE, labels),
        "spec": {
            "schedule": SCHEDULE,
            "timeZone": "Etc/UTC",  # the month the guard counts is the UTC month, as the budget alerts' days are
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 600,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 1,
                    "activeDeadlineSeconds": 300,
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                }
            },
        },
    }
    return [account, role, binding, config, cron]
