"""The desired in-cluster objects of one site, computed from the resolved platform.

ONE pure function, :func:`cluster_objects`, decides every namespace, quota, policy, queue,
priority class, storage class, alert rule and dashboard a site's cluster holds. Pulumi applies the list
(``alicerce/emit/pulumi/objects.py``); other deliveries render the same list.
Plain dicts in, plain dicts out, sorted deterministically; no Pulumi import here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from alicerce.emit.kube.identity import workload_identity_objects
from alicerce.emit.kube.monitoring import monitoring_objects
from alicerce.emit.kube.network import nic_cluster_policy
from alicerce.emit.kube.operators import KUEUE_NAMESPACE, MONITORING_NAMESPACE
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedQuota, ResolvedSite, ResolvedTeam, ResolvedTier
from alicerce.spec.models import ParallelFsTier, SharedNfsTier

KUEUE_API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
LOCAL_QUEUE = "default"  # Kueue's LocalQueue defaulting sends unlabelled jobs to the queue named "default"

# Pod priority by what a pool is for: inference above training above batch.
PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "alicerce-inference": (100000, "Online inference: latency-bound services that must not wait behind jobs."),
    "alicerce-training": (10000, "Training and fine-tuning jobs."),
    "alicerce-batch": (1000, "Batch inference and data preparation: runs in whatever capacity is left."),
}
PURPOSE_PRIORITY = {
    "inference": "alicerce-inference",
    "training": "alicerce-training",
    "fine-tuning": "alicerce-training",
    "batch-inference": "alicerce-batch",
    "data-prep": "alicerce-batch",
    "system": "alicerce-batch",
}
# Fair-sharing weight of a team's ClusterQueue in its cohort.
TEAM_WEIGHT = {"critical": "4", "high": "2", "normal": "1", "low": "500m"}
# API groups whose objects need an operator's CRDs first: group -> catalog chart key.
CRD_OWNERS = {
    "kueue.x-k8s.io": "kueue",
    "monitoring.coreos.com": "kube-prometheus-stack",
    "nvidia.com": "gpu-operator",
    "mellanox.com": "network-operator",
}
# cpu/memory quota where the catalog knows no node size (on-prem hosts): large enough never to bind,
# since the spec governs GPUs only and Kueue refuses workloads asking for resources a queue does not cover.
UNBOUNDED_CPU = "100k"
UNBOUNDED_MEMORY = "1Pi"


def crd_owner(obj: dict[str, Any]) -> str | None:
    """The catalog chart an object must wait for: the owner of its CRD, or of its namespace
    (the monitoring chart creates the namespace the dashboards live in); None for the rest."""
    group = str(obj["apiVersion"]).rpartition("/")[0]
    if group in CRD_OWNERS:
        return CRD_OWNERS[group]
    if obj["metadata"].get("namespace") == MONITORING_NAMESPACE:
        return "kube-prometheus-stack"
    return None


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(sorted(labels.items()))
    return meta


Quotas = tuple[tuple[ResolvedQuota, ResolvedPool], ...]
"""A team's quotas at one site, each with its pool (ResolvedSite.quotas)."""


def namespace_gpu_limits(quotas: Quotas, site: ResolvedSite) -> dict[str, int]:
    """Hard cap per GPU resource of a team namespace: its nominal quota plus what Kueue may let it borrow.

    Every GPU resource of the site is listed, at 0 where the team has no quota, so a namespace can
    never take GPUs no queue admits for it.
    """
    limits = {GPU: 0} | {r: 0 for p in site.pools if p.gpu_units for r in p.gpu_units.resources}
    for quota, pool in quotas:
        per_node = pool.gpu_units.resources if pool.gpu_units else {}
        for resource, nominal in quota.resources.items():
            room = max(per_node.get(resource, 0) * pool.spec.scaling.max - nominal, 0)
            borrow = quota.borrowing[resource] if quota.borrowing is not None else room
            limits[resource] += nominal + borrow
    return dict(sorted(limits.items()))


def _team_labels(rp: ResolvedPlatform, team: ResolvedTeam) -> dict[str, str]:
    return {
        "alicerce.dev/platform": rp.name,
        "alicerce.dev/environment": rp.environment,
        "alicerce.dev/team": team.name,
        "alicerce.dev/cost-center": team.cost_center,
    }


def _namespace_objects(rp: ResolvedPlatform, site: ResolvedSite, team: ResolvedTeam, ns: str) -> list[dict[str, Any]]:
    quotas = site.quotas(team)
    level = rp.spec.security.pod_security
    version = f"v{rp.versions.kubernetes}"
    labels = _team_labels(rp, team)
    ns_labels = {
        **labels,
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/enforce-version": version,
        "pod-security.kubernetes.io/audit": level,
        "pod-security.kubernetes.io/warn": level,
    }
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns, labels=ns_labels)}]
    out.append(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": _meta("gpu-quota", ns, labels),
            "spec": {"hard": {f"requests.{r}": str(n) for r, n in namespace_gpu_limits(quotas, site).items()}},
        }
    )
    out.append(
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": _meta("defaults", ns, labels),
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                        "default": {"cpu": "1", "memory": "2Gi"},
                    }
                ]
            },
        }
    )
    out.extend(_network_policies(rp, ns, labels))
    subjects = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in team.spec.groups]
    out.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta("team-edit", ns, labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": subjects,
        }
    )
    if quotas and rp.spec.operators.kueue.enabled:
        out.append(
            {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": _meta(LOCAL_QUEUE, ns, labels), "spec": {"clusterQueue": team.name}}
        )
    return out


def _network_policies(rp: ResolvedPlatform, ns: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(name, ns, labels), "spec": spec}

    same_ns: list[dict[str, Any]] = [{"podSelector": {}}]
    out = [
        policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
        policy(
            "allow-same-namespace",
            {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [{"from": same_ns}], "egress": [{"to": same_ns}]},
        ),
        policy(
            "allow-dns",
            {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [
                            {
                                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                            }
                        ],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    }
                ],
            },
        ),
        # datasets, checkpoints and model registries are reached over HTTPS (S3, object stores)
        policy(
            "allow-https-egress",
            {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]}],
            },
        ),
    ]
    if rp.spec.operators.monitoring.enabled:
        out.append(
            policy(
                "allow-metrics-scraping",
                {
                    "podSelector": {},
                    "policyTypes": ["Ingress"],
                    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}}}]}],
                },
            )
        )
    return out


def _flavor(pool: ResolvedPool) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": {"alicerce.dev/pool": pool.name}}
    if pool.spec.taints:
        spec["tolerations"] = [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect} for t in pool.spec.taints]
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": _meta(pool.name, labels={"alicerce.dev/pool": pool.name}),
        "spec": spec,
    }


def _pool_capacity(pool: ResolvedPool) -> tuple[str, str]:
    """cpu and memory of a whole pool at max size, where the catalog knows its node size.

    A team's cpu and memory quota on a flavor is the pool's whole capacity: it never binds, the
    GPU quota does (the spec governs GPUs), yet Kueue covers every resource a job asks for.
    """
    if pool.instance is None:
        return UNBOUNDED_CPU, UNBOUNDED_MEMORY
    nodes = max(pool.spec.scaling.max, 1)
    return str(nodes * pool.instance.vcpus), f"{int(nodes * pool.instance.memoryGiB)}Gi"


def _cluster_queue(rp: ResolvedPlatform, team: ResolvedTeam, quotas: Quotas) -> dict[str, Any]:
    # one resource group: every flavor lists every covered resource, in the same order (Kueue's rule)
    gpu_resources = sorted({r for quota, _ in quotas for r in quota.resources} or {GPU})
    flavors = []
    for quota, pool in quotas:
        cpu, memory = _pool_capacity(pool)
        resources: list[dict[str, Any]] = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]
        for resource in gpu_resources:
            entry: dict[str, Any] = {"name": resource, "nominalQuota": str(quota.resources.get(resource, 0))}
            if quota.borrowing is not None:
                entry["borrowingLimit"] = str(quota.borrowing.get(resource, 0))
            resources.append(entry)
        flavors.append({"name": pool.name, "resources": resources})
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": _meta(team.name, labels=_team_labels(rp, team)),
        "spec": {
            "cohortName": rp.spec.tenancy.cohort,
            "namespaceSelector": {"matchLabels": {"alicerce.dev/team": team.name}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": ["cpu", "memory", *gpu_resources], "flavors": flavors}],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "fairSharing": {"weight": TEAM_WEIGHT[team.spec.priority]},
        },
    }


def _priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": _meta(name, labels={"alicerce.dev/managed": "true"}),
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": text,
        }
        for name, (value, text) in PRIORITY_CLASSES.items()
    ]


def _storage_classes(site: ResolvedSite) -> list[dict[str, Any]]:
    default = site.capabilities.default_storage_class
    if default is None:
        return []
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": default["name"], "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": default["provisioner"],
            "parameters": default["parameters"],
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
        }
    ]


def _volume_source(tier: ResolvedTier, site: str, volumes: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]] | None:
    """(PersistentVolume source, mount options) of a shared tier at a site, or None."""
    mount = tier.mounts.get(site)
    spec = tier.spec
    if mount is None:
        return None
    if tier.name in volumes:  # created at deploy time (FSx, EFS): the caller knows its CSI volume
        return dict(volumes[tier.name]), list(mount.options)
    if mount.kind == "nfs" and isinstance(spec, SharedNfsTier) and spec.onprem is not None:
        return {"nfs": {"server": spec.onprem.server, "path": spec.onprem.export}}, list(mount.options)
    if mount.kind in ("lustre", "beegfs", "weka"):
        # mounted on every node by the parallel_fs_client role; pods reach it through the claim
        return {"hostPath": {"path": mount.path, "type": "Directory"}}, []
    return None


def shared_volumes(rp: ResolvedPlatform, site_name: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A ReadWriteMany claim on every shared file system tier, in every team namespace of the site.

    Each claim is pre-bound to its own PersistentVolume (one per namespace: a volume binds one
    claim) over the same file system, so teams mount ``datasets`` or ``home`` by name.
    """
    out: list[dict[str, Any]] = []
    site = rp.site(site_name)
    for tier in site.storage:
        found = _volume_source(tier, site_name, volumes)
        if found is None or not isinstance(tier.spec, ParallelFsTier | SharedNfsTier):
            continue
        source, options = found
        size = f"{tier.fsx.capacity_gib}Gi" if tier.fsx is not None else f"{max(1, (tier.spec.capacity or 2**40) // 2**30)}Gi"
        labels = {"alicerce.dev/storage-tier": tier.name}
        for team in site.teams:
            for ns in team.namespaces:
                pv = f"{rp.name}-{tier.name}-{ns}"[:253]
                pv_spec: dict[str, Any] = {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteMany"],
                    "persistentVolumeReclaimPolicy": "Retain",  # the data outlives the claim
                    "storageClassName": "",
                    "claimRef": {"namespace": ns, "name": tier.name},
                    **source,
                }
                if options:
                    pv_spec["mountOptions"] = options
                out.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": _meta(pv, labels=labels), "spec": pv_spec})
                claim = {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "",
                    "volumeName": pv,
                    "resources": {"requests": {"storage": size}},
                }
                out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(tier.name, ns, labels), "spec": claim})
    return out


_KIND_ORDER = {"Namespace": 0, "PriorityClass": 1, "StorageClass": 1, "PersistentVolume": 1, "ResourceFlavor": 2, "ClusterQueue": 3}


def sort_key(obj: dict[str, Any]) -> tuple[int, str, str, str]:
    meta = obj["metadata"]
    return (_KIND_ORDER.get(obj["kind"], 5), obj["kind"], meta.get("namespace", ""), meta["name"])


def cluster_objects(rp: ResolvedPlatform, site_name: str, volumes: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every object the cluster of ``site_name`` should hold besides the operators' own.

    ``volumes`` maps a storage tier created at deploy time (FSx, EFS) to its PersistentVolume
    source (e.g. ``{"csi": {"driver": ..., "volumeHandle": ...}}``); the caller fills it from the
    created resources (Pulumi outputs) or from a previous deployment's outputs. Tiers whose source
    the spec itself names (on-prem NFS, pre-mounted parallel file systems) need no entry.
    """
    site = rp.site(site_name)
    objs: list[dict[str, Any]] = [*_priority_classes(), *_storage_classes(site)]
    objs.extend(shared_volumes(rp, site_name, volumes or {}))
    kueue = rp.spec.operators.kueue.enabled
    flavor_pools: dict[str, ResolvedPool] = {}
    for team in site.teams:
        quotas = site.quotas(team)
        for ns in team.namespaces:
            objs.extend(_namespace_objects(rp, site, team, ns))
        if quotas and kueue:
            objs.append(_cluster_queue(rp, team, quotas))
            flavor_pools.update({pool.name: pool for _, pool in quotas})
    if kueue:
        for pool in site.pools:
            if pool.gpu is not None:
                flavor_pools.setdefault(pool.name, pool)
        objs.extend(_flavor(p) for p in flavor_pools.values())
    objs.extend(monitoring_objects(rp, site_name))
    objs.extend(workload_identity_objects(rp, site_name))
    if (policy := nic_cluster_policy(rp, site_name)) is not None:
        objs.append(policy)
    return sorted(objs, key=sort_key)


def group_by_crd_owner(objs: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Objects split by the chart whose CRDs they need ("" for built-in kinds), order kept."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in objs:
        groups[crd_owner(obj) or ""].append(obj)
    return dict(groups)


__all__ = ["KUEUE_API", "KUEUE_NAMESPACE", "cluster_objects", "crd_owner", "group_by_crd_owner"]
