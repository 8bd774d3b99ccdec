"""The desired in-cluster objects of one site, computed from the resolved platform.

ONE pure function, :func:`cluster_objects`, decides every namespace, quota, policy, queue,
priority class, storage class, training runtime, alert rule and dashboard a site's cluster holds.
Pulumi applies the list (``alicerce/emit/pulumi/objects.py``); the GitOps writer renders the same
list to files. Plain dicts in, plain dicts out, sorted deterministically; no Pulumi import here.
The topics live in their own modules: tenancy, netpol, kueue, priorities, storage, training,
monitoring, network.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from alicerce.emit.kube.identity import workload_identity_objects
from alicerce.emit.kube.kueue import flavors
from alicerce.emit.kube.monitoring import monitoring_objects
from alicerce.emit.kube.network import nic_cluster_policy
from alicerce.emit.kube.priorities import KUEUE_API, priority_classes, workload_priority_classes
from alicerce.emit.kube.storage import TIER_LABEL, read_only_claims, shared_volumes, system_namespace
from alicerce.emit.kube.tenancy import read_only_claims_policy, team_objects
from alicerce.emit.kube.training import training_runtimes
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.resolve.namespaces import KUEUE_NAMESPACE, MONITORING_NAMESPACE
from alicerce.resolve.operators import OPERATOR_CRD_OWNERS

# API groups whose objects need an operator's CRDs (or webhook) first: group -> catalog chart key (its record's)
CRD_OWNERS = dict(OPERATOR_CRD_OWNERS)


def crd_owner(obj: dict[str, Any]) -> str | None:
    """The catalog chart an object must wait for: the owner of its CRD, or of its namespace
    (the monitoring chart creates the namespace the dashboards live in); None for the rest."""
    group = str(obj["apiVersion"]).rpartition("/")[0]
    if group in CRD_OWNERS:
        return CRD_OWNERS[group]
    if obj["metadata"].get("namespace") == MONITORING_NAMESPACE:
        return "kube-prometheus-stack"
    return None


def _pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod spec of a workload object (empty for anything that runs no pod)."""
    spec: Mapping[str, Any] = obj.get("spec", {})
    if obj["kind"] == "Pod":
        return spec
    if obj["kind"] == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    template = spec.get("template")
    pod = template.get("spec", {}) if isinstance(template, Mapping) else {}
    return pod if isinstance(pod, Mapping) else {}


def object_needs(site: ResolvedSite, obj: Mapping[str, Any], objs: Iterable[Mapping[str, Any]]) -> set[str]:
    """The charts an object needs running before it is applied: the owner of its CRD (or namespace), and for a
    workload the chart of the CSI driver behind each claim it mounts (a Job whose volume no driver can mount never
    completes, and in Argo CD holds its sync wave forever)."""
    needs = {owner} if (owner := crd_owner(dict(obj))) else set()
    pod = _pod_spec(obj)
    if not pod:
        return needs
    namespace = obj["metadata"].get("namespace")
    claims = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs if o["kind"] == "PersistentVolumeClaim"}
    tiers = {t.name: t for t in site.storage}
    for volume in pod.get("volumes", []):
        claim = claims.get((namespace, volume.get("persistentVolumeClaim", {}).get("claimName")))
        tier = tiers.get(claim["metadata"].get("labels", {}).get(TIER_LABEL, "")) if claim else None
        # the chart of the CSI driver its target installs for that file system (Capabilities.csi_charts)
        if tier is not None and (chart := site.capabilities.csi_charts.get(tier.implementations.get(site.name, ""))):
            needs.add(chart)
    return needs


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


_KIND_ORDER = {
    "Namespace": 0,
    "PriorityClass": 1,
    "StorageClass": 1,
    "PersistentVolume": 1,
    "ClusterRole": 1,
    "ResourceFlavor": 2,
    "WorkloadPriorityClass": 2,
    "ClusterQueue": 3,
}


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
    objs: list[dict[str, Any]] = [*priority_classes(), *_storage_classes(site), *team_objects(rp, site)]
    storage = shared_volumes(rp, site_name, volumes or {})
    if any(o["kind"] == "Job" for o in storage):
        objs.append(system_namespace(rp))
    objs.extend(storage)
    objs.extend(read_only_claims_policy(read_only_claims(rp, site_name)))
    if rp.spec.operators.kueue.enabled:
        queues = [o for o in objs if o["kind"] == "ClusterQueue"]
        objs.extend(flavors(site, queues))
        objs.extend(workload_priority_classes(site))
    objs.extend(training_runtimes(rp, site))
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


__all__ = [
    "CRD_OWNERS",
    "KUEUE_API",
    "KUEUE_NAMESPACE",
    "cluster_objects",
    "crd_owner",
    "group_by_crd_owner",
    "object_needs",
]
