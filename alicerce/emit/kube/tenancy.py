"""A team's namespaces and the guard rails a team cannot undo.

- Namespace with Pod Security labels, a GPU ResourceQuota, a LimitRange that only sets default
  requests (a default *limit* below a container's request rejects the pod, and a 1-CPU default limit
  caps a GPU container that names only ``nvidia.com/gpu``).
- RBAC: teams get ``alicerce-team``, a ClusterRole aggregated from alicerce's own parts, not the
  built-in ``edit`` (``edit`` aggregates ``system:aggregate-to-edit``, which writes NetworkPolicies):
  no NetworkPolicy, ResourceQuota, LimitRange or RBAC writes, so a team cannot remove its own fences.
- ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30): a team's
  pods may name only its own PriorityClasses, its jobs only its own WorkloadPriorityClasses, and a
  pod mounts a read-only file system's claim only read-only.

RDMA pods and ``IPC_LOCK``: team namespaces stay at the spec's Pod Security level (restricted by
default), which forbids adding ``IPC_LOCK`` (baseline does not allow it either). RDMA needs pinned
memory beyond the default 64 KiB-8 MiB memlock limit; ``IPC_LOCK`` is only needed to exceed
RLIMIT_MEMLOCK, and containers inherit the limit of containerd (runc sets only the rlimits of the
base runtime spec, which lists RLIMIT_NOFILE). So the hosts run containerd with
``LimitMEMLOCK=infinity``: kubespray's default (containerd role defaults ``containerd_limit_mem_lock:
infinity``, containerd.service.j2 34), and on EKS the node's NodeConfig base runtime spec (see the
README). No namespace is exempted to privileged for RDMA.
"""

from __future__ import annotations

from typing import Any

from alicerce.emit.kube.common import TEAM_LABEL, meta, team_labels
from alicerce.emit.kube.kueue import cluster_queue, local_queue
from alicerce.emit.kube.netpol import namespace_policies
from alicerce.emit.kube.priorities import (
    WORKLOAD_PRIORITY_LABEL,
    priority_class_name,
    team_kinds,
    workload_priority_class_name,
)
from alicerce.emit.kube.storage import TIER_LABEL
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedQuota, ResolvedSite, ResolvedTeam

TEAM_ROLE = "alicerce-team"
AGGREGATE_LABEL = "alicerce.dev/aggregate-to-team"
ADMISSION_API = "admissionregistration.k8s.io/v1"
ALL = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
READ = ["get", "list", "watch"]
# What a team works with in its namespaces. Absent on purpose: networkpolicies (write), resourcequotas and
# limitranges (write), roles and rolebindings, daemonsets (they would spread over every node), namespaces.
TEAM_RULES: tuple[tuple[str, tuple[str, ...], list[str]], ...] = (
    ("", ("pods", "services", "configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts"), ALL),
    ("", ("pods/log", "pods/status", "events", "endpoints", "resourcequotas", "limitranges"), READ),
    ("", ("pods/exec", "pods/attach", "pods/portforward"), ["get", "create"]),
    ("apps", ("deployments", "statefulsets", "replicasets", "deployments/scale", "statefulsets/scale"), ALL),
    ("batch", ("jobs", "cronjobs"), ALL),
    ("autoscaling", ("horizontalpodautoscalers",), ALL),
    ("policy", ("poddisruptionbudgets",), ALL),
    ("networking.k8s.io", ("ingresses",), ALL),
    ("networking.k8s.io", ("networkpolicies",), READ),
    ("events.k8s.io", ("events",), READ),
    ("kueue.x-k8s.io", ("workloads", "localqueues"), READ),
    ("trainer.kubeflow.org", ("trainjobs", "trainingruntimes"), ALL),
    ("jobset.x-k8s.io", ("jobsets",), ALL),
    ("ray.io", ("rayjobs", "rayclusters", "rayservices"), ALL),
)
# Objects that carry Kueue's priority label: the kinds its integrations admit (and pods themselves).
LABELLED_RESOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("pods",)),
    ("apps", ("deployments", "statefulsets")),
    ("batch", ("jobs",)),
    ("jobset.x-k8s.io", ("jobsets",)),
    ("trainer.kubeflow.org", ("trainjobs",)),
    ("ray.io", ("rayjobs", "rayclusters", "rayservices")),
    ("leaderworkerset.x-k8s.io", ("leaderworkersets",)),
)
GPU_QUOTA = "gpu-quota"


def namespace_gpu_limits(quotas: tuple[tuple[ResolvedQuota, ResolvedPool], ...], site: ResolvedSite) -> dict[str, int]:
    """Hard cap per GPU resource of a team namespace: its nominal quota plus what Kueue may let it borrow.

    Every GPU resource of the site is listed, at 0 where the team has no quota, so a namespace can
    never take GPUs no queue admits for it.
    """
    limits = {"nvidia.com/gpu": 0} | {r: 0 for p in site.pools if p.gpu_units for r in p.gpu_units.resources}
    for quota, pool in quotas:
        per_node = pool.gpu_units.resources if pool.gpu_units else {}
        for resource, nominal in quota.resources.items():
            room = max(per_node.get(resource, 0) * pool.spec.scaling.max - nominal, 0)
            borrow = quota.borrowing[resource] if quota.borrowing is not None else room
            limits[resource] += nominal + borrow
    return dict(sorted(limits.items()))


def _cel_list(values: list[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def team_roles() -> list[dict[str, Any]]:
    """The aggregated team ClusterRole and alicerce's part of it."""
    rules = [{"apiGroups": [group], "resources": list(resources), "verbs": verbs} for group, resources, verbs in TEAM_RULES]
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(TEAM_ROLE, labels={"alicerce.dev/managed": "true"}),
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_LABEL: "true"}}]},
            "rules": [],  # filled by the aggregation controller from the labelled roles
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(f"{TEAM_ROLE}-workloads", labels={AGGREGATE_LABEL: "true", "alicerce.dev/managed": "true"}),
            "rules": rules,
        },
    ]


# Where each kind Kueue admits holds the pod templates it takes a workload's priority from (when no
# kueue.x-k8s.io/priority-class label names one): kueue@v0.19.2 pkg/controller/jobs/*, PodSets of each integration.
# (path to a template's pod spec | path to a list, and the path to the pod spec within each item)
POD_TEMPLATES: dict[str, tuple[tuple[str, str | None], ...]] = {
    "Job": (("spec.template.spec", None),),
    "Deployment": (("spec.template.spec", None),),
    "StatefulSet": (("spec.template.spec", None),),
    "JobSet": (("spec.replicatedJobs", "template.spec.template.spec"),),
    "RayJob": (("spec.rayClusterSpec.headGroupSpec.template.spec", None), ("spec.rayClusterSpec.workerGroupSpecs", "template.spec")),
    "RayCluster": (("spec.headGroupSpec.template.spec", None), ("spec.workerGroupSpecs", "template.spec")),
    "RayService": (
        ("spec.rayClusterConfig.headGroupSpec.template.spec", None),
        ("spec.rayClusterConfig.workerGroupSpecs", "template.spec"),
    ),
    "LeaderWorkerSet": (("spec.leaderWorkerTemplate.leaderTemplate.spec", None), ("spec.leaderWorkerTemplate.workerTemplate.spec", None)),
}


def _allowed_class(root: str, path: str, classes: str) -> str:
    """CEL: the pod spec at ``root.path`` names no PriorityClass, or one of ``classes`` (every step guarded by has())."""
    steps = [root, *path.split("."), "priorityClassName"]
    guards = [f"!has({'.'.join(steps[: i + 1])})" for i in range(1, len(steps))]
    return "(" + " || ".join([*guards, f"{'.'.join(steps)} in {classes}"]) + ")"


def _template_classes(classes: str) -> str:
    """CEL over the pod templates of every kind Kueue admits: each names only the team's PriorityClasses."""
    checks = []
    for kind, templates in POD_TEMPLATES.items():
        parts = []
        for path, inner in templates:
            if inner is None:
                parts.append(_allowed_class("object", path, classes))
            else:
                steps = ["object", *path.split(".")]
                guards = [f"!has({'.'.join(steps[: i + 1])})" for i in range(1, len(steps))]
                parts.append("(" + " || ".join([*guards, f"{'.'.join(steps)}.all(t, {_allowed_class('t', inner, classes)})"]) + ")")
        checks.append(f"(request.kind.kind != '{kind}' || ({' && '.join(parts)}))")
    return " && ".join(checks)


def priority_policy(rp: ResolvedPlatform, site: ResolvedSite, team: ResolvedTeam) -> list[dict[str, Any]]:
    """A team may name only its own PriorityClasses (pods) and WorkloadPriorityClasses (jobs)."""
    kinds = team_kinds(site, team)
    classes = _cel_list([priority_class_name(k) for k in kinds])
    workload_classes = _cel_list([workload_priority_class_name(team.name, k) for k in kinds])
    name = f"alicerce-priorities-{team.name}"
    rules = [
        {"apiGroups": [group], "apiVersions": ["*"], "resources": list(resources), "operations": ["CREATE", "UPDATE"]}
        for group, resources in LABELLED_RESOURCES
    ]
    label = f"'{WORKLOAD_PRIORITY_LABEL}'"
    policy = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": meta(name, labels={TEAM_LABEL: team.name}),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "validations": [
                {
                    "expression": "request.kind.kind != 'Pod' || !has(object.spec.priorityClassName) "
                    f"|| object.spec.priorityClassName in {classes}",
                    "message": f"team {team.name} may use the PriorityClasses {classes}",
                    "reason": "Forbidden",
                },
                {
                    # Kueue takes a workload's priority from its pod template's PriorityClass (when no WorkloadPriorityClass
                    # label names one): a Job naming system-node-critical would queue above every team and preempt them
                    "expression": _template_classes(classes),
                    "message": f"team {team.name} may use the PriorityClasses {classes} in its pod templates",
                    "reason": "Forbidden",
                },
                {
                    "expression": f"!has(object.metadata.labels) || !({label} in object.metadata.labels) "
                    f"|| object.metadata.labels[{label}] in {workload_classes}",
                    "message": f"team {team.name} may use the WorkloadPriorityClasses {workload_classes}",
                    "reason": "Forbidden",
                },
            ],
        },
    }
    binding = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": meta(name, labels={TEAM_LABEL: team.name}),
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {TEAM_LABEL: team.name}}},
        },
    }
    return [policy, binding]


def team_pods_policy(
    name: str, expression: str, message: str, *, group: str = "", version: str = "v1", resource: str = "pods"
) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy on the pods (or ``resource``) of every team namespace, and its binding (deny)."""
    return [
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": meta(name),
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {"apiGroups": [group], "apiVersions": [version], "resources": [resource], "operations": ["CREATE", "UPDATE"]}
                    ]
                },
                "validations": [{"expression": expression, "message": message, "reason": "Forbidden"}],
            },
        },
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": meta(name),
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}},
            },
        },
    ]


def read_only_claims_policy(claims: list[str]) -> list[dict[str, Any]]:
    """Pods in team namespaces mount the claims of read-only file systems only read-only (a hostPath volume cannot
    be made read-only by its PersistentVolume; the claim's ``readOnly`` forces every mount of it read-only)."""
    if not claims:
        return []
    names = _cel_list(sorted(claims))
    expression = (
        "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.persistentVolumeClaim) || "
        f"!(v.persistentVolumeClaim.claimName in {names}) || "
        "(has(v.persistentVolumeClaim.readOnly) && v.persistentVolumeClaim.readOnly))"
    )
    return team_pods_policy("alicerce-read-only-claims", expression, f"mount {names} with persistentVolumeClaim.readOnly: true")


# Volume sources a pod names inline that reach node or network storage directly (core/v1 Volume at Kubernetes
# 1.35): every one but those Pod Security "restricted" allows (pod-security-admission policy/
# check_restrictedVolumes.go) and image volumes. Below restricted, a team pod could otherwise mount a shared
# file system's root (baseline forbids only hostPath) past its own claim.
INLINE_STORAGE_VOLUMES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker",
    "gcePersistentDisk", "gitRepo", "glusterfs", "hostPath", "iscsi", "nfs", "photonPersistentDisk",
    "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume",
)  # fmt: skip


def team_volumes_policy(rp: ResolvedPlatform) -> list[dict[str, Any]]:
    """Team pods reach storage only through claims, whatever the namespaces' Pod Security level (restricted
    already enforces it: no policy there)."""
    if rp.spec.security.pod_security == "restricted":
        return []
    inline = " || ".join(f"has(v.{source})" for source in INLINE_STORAGE_VOLUMES)
    return team_pods_policy(
        "alicerce-team-volumes",
        f"!has(object.spec.volumes) || object.spec.volumes.all(v, !({inline}))",
        "team pods mount storage through their persistentVolumeClaims, not inline volume sources",
    )


# How a RayJob may submit its job in a namespace that enforces "restricted" (kuberay v1.7.0): K8sJobMode (the
# default) runs a submitter Job whose pod, unless the RayJob names a ``submitterPodTemplate``, is KubeRay's default
# container with no securityContext at all (ray-operator/controllers/ray/common/job.go GetSubmitterTemplate,
# GetDefaultSubmitterContainer); SidecarMode appends that same default container to the Ray head pod
# (rayjob_controller.go getSubmitterContainer, 1025-1031). Pod Security rejects either pod, the Job controller retries
# in silence and the RayJob never starts. HTTPMode (the operator submits through the head's dashboard port, which
# the allow-kuberay-operator NetworkPolicy opens) and InteractiveMode run no submitter pod.
RAY_PODLESS_MODES = ("HTTPMode", "InteractiveMode")
RAYJOB_SUBMITTER_POLICY = "alicerce-rayjob-submitter"


def rayjob_submitter_policy(rp: ResolvedPlatform) -> list[dict[str, Any]]:
    """Under "restricted", a RayJob names a submitterPodTemplate (its own securityContext) or a mode without a
    submitter pod: refused at creation with the fix in the message, instead of a RayJob that waits forever."""
    if not rp.spec.operators.kuberay.enabled or rp.spec.security.pod_security != "restricted":
        return []
    modes = _cel_list(list(RAY_PODLESS_MODES))
    expression = (
        "!has(object.spec) || (has(object.spec.submissionMode) && object.spec.submissionMode in "
        f"{modes}) || ((!has(object.spec.submissionMode) || object.spec.submissionMode == 'K8sJobMode') "
        "&& has(object.spec.submitterPodTemplate))"
    )
    message = (
        "KubeRay's default submitter pod has no securityContext and Pod Security (restricted) rejects it: set "
        f"spec.submissionMode to one of {modes}, or give spec.submitterPodTemplate a securityContext that passes "
        "restricted (runAsNonRoot, seccompProfile RuntimeDefault, allowPrivilegeEscalation false, capabilities drop ALL)"
    )
    policy = team_pods_policy(RAYJOB_SUBMITTER_POLICY, expression, message, group="ray.io", resource="rayjobs")
    # CREATE only: the KubeRay operator updates every RayJob (its finalizer, rayjob_controller.go), and a RayJob made
    # before this policy must still be updated and deleted
    policy[0]["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["CREATE"]
    return policy


TEAM_CLAIMS_POLICY = "alicerce-team-claims"
# Groups of cluster administrators: Kubernetes' superuser group and kubeadm's (kubespray's admin kubeconfig) admin group
ADMIN_GROUPS = ("system:masters", "kubeadm:cluster-admins")


def team_claims_policy(rp: ResolvedPlatform, site: ResolvedSite) -> list[dict[str, Any]]:
    """Team members cannot delete the claims alicerce pre-binds to their volumes, nor take off the label that marks them.

    A static volume keeps the uid of the claim it was bound to (``claimRef.uid``, filled in by the PV controller):
    once that claim is deleted the volume is Released for good (reclaim policy Retain), and the claim Argo CD or
    Pulumi re-creates stays Pending beside it. Teams may still create and delete claims of their own (dynamic ones,
    on the default StorageClass); the platform's own deletions (the namespace controller deleting a removed team's
    namespace, Pulumi, Argo CD's prune) are not made as a team group and pass.

    The guard knows alicerce's claims by their tier label, and teams may update claims (their own ones need it), so
    UPDATE is matched too: a team member may change anything of such a claim (annotations, other labels) but the tier
    label, whose removal or change would otherwise let the next DELETE through (issue 21)."""
    groups = sorted({g for team in site.teams for g in team.spec.groups})
    if not groups:
        return []
    # a cluster administrator who is also in a team's group (running `pulumi up`, which replaces a claim that moves to a
    # new volume) is not held back
    admins = _cel_list(list(ADMIN_GROUPS))
    exempt = (
        f"!has(request.userInfo.groups) || request.userInfo.groups.exists(g, g in {admins}) || "
        f"!request.userInfo.groups.exists(g, g in {_cel_list(groups)}) || "
        f"!has(oldObject.metadata.labels) || !('{TIER_LABEL}' in oldObject.metadata.labels)"
    )
    kept = (
        f"has(object.metadata.labels) && '{TIER_LABEL}' in object.metadata.labels && "
        f"object.metadata.labels['{TIER_LABEL}'] == oldObject.metadata.labels['{TIER_LABEL}']"
    )
    policy = team_pods_policy(
        TEAM_CLAIMS_POLICY,
        f"request.operation != 'DELETE' || {exempt}",
        "this claim is bound to a shared file system's volume by alicerce: deleted, the volume stays Released and the "
        "re-created claim Pending; it goes with the team (remove the team from the spec)",
        resource="persistentvolumeclaims",
    )
    spec = policy[0]["spec"]
    spec["validations"].append(
        {
            "expression": f"request.operation != 'UPDATE' || {exempt} || ({kept})",
            "message": f"the label {TIER_LABEL} marks this claim as alicerce's, bound to a shared file system's volume: "
            "it cannot be removed or changed by a team (the claim is managed from the spec)",
            "reason": "Forbidden",
        }
    )
    # CREATE is not matched: a team's new claims are its own (a claim made with the label only binds the team itself)
    spec["matchConstraints"]["resourceRules"][0]["operations"] = ["UPDATE", "DELETE"]
    return policy


def namespace_objects(rp: ResolvedPlatform, site: ResolvedSite, team: ResolvedTeam, ns: str, queued: bool) -> list[dict[str, Any]]:
    """The namespace ``ns`` of ``team`` and everything in it alicerce owns (``queued``: the team has a ClusterQueue here)."""
    level = rp.spec.security.pod_security
    labels = team_labels(rp, team)
    ns_labels = {
        **labels,
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/enforce-version": f"v{rp.versions.kubernetes}",
        "pod-security.kubernetes.io/audit": level,
        "pod-security.kubernetes.io/warn": level,
    }
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns, labels=ns_labels)},
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": meta(GPU_QUOTA, ns, labels),
            "spec": {"hard": {f"requests.{r}": str(n) for r, n in namespace_gpu_limits(site.quotas(team), site).items()}},
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": meta("defaults", ns, labels),
            # requests only: a container that asks for more is never rejected, one that asks for nothing still gets scheduled sanely
            "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "250m", "memory": "512Mi"}}]},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta("team", ns, labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TEAM_ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in team.spec.groups],
        },
    ]
    out.extend(namespace_policies(rp, site, team, ns, labels))
    if queued:
        out.append(local_queue(rp, team, ns))
    return out


def team_objects(rp: ResolvedPlatform, site: ResolvedSite) -> list[dict[str, Any]]:
    """Every team's namespaces, queues, roles and admission policies at a site."""
    kueue = rp.spec.operators.kueue.enabled
    out: list[dict[str, Any]] = [*team_roles(), *team_volumes_policy(rp), *rayjob_submitter_policy(rp)]
    for team in site.teams:
        queue = cluster_queue(rp, site, team) if kueue else None
        if queue is not None:
            out.append(queue)
        for ns in team.namespaces:
            out.extend(namespace_objects(rp, site, team, ns, queue is not None))
        out.extend(priority_policy(rp, site, team))
    out.extend(team_claims_policy(rp, site))
    return out
