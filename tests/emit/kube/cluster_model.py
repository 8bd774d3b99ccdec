"""A small model of what the cluster does with alicerce's objects: Kueue admission, kube-scheduler filtering,
NetworkPolicy reachability. Each rule cites the upstream source it is written from; the model covers the
shapes alicerce's objects use, and fails loudly on anything else.

Kueue v0.19.2 (K), kubernetes v1.35 (KS: pkg/scheduler/framework/plugins), NetworkPolicy API (networking.k8s.io/v1).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

import celpy

from alicerce.resolve.model import ResolvedPool

QUANTITY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "k": 10**3, "m": 1e-3}


def quantity(text: str | int | float) -> float:
    text = str(text)
    for suffix, factor in sorted(QUANTITY.items(), key=lambda kv: -len(kv[0])):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


@dataclass
class Job:
    """One pod set: ``count`` pods with the same requests."""

    namespace: str
    count: int
    requests: dict[str, str]
    tolerations: list[dict[str, str]] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)


@dataclass
class Admission:
    flavor: str
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]


def _tolerates(tolerations: list[dict[str, str]], taint: dict[str, str]) -> bool:
    """corev1 Toleration.ToleratesTaint: key matches (or empty with Exists), effect matches (or empty), Equal compares values."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _kinds(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def admit(objs: list[dict[str, Any]], config: dict[str, Any], job: Job) -> Admission | str:
    """Kueue's admission of a job into a flavor on an empty cluster, or the reason it stays pending."""
    # LocalQueue defaulting: a job without a queue name goes to the LocalQueue "default" of its namespace
    # (K pkg/controller/jobframework/defaults.go 59-98); none there: Kueue does not manage the job.
    local = [q for q in _kinds(objs, "LocalQueue") if q["metadata"]["namespace"] == job.namespace and q["metadata"]["name"] == "default"]
    if not local:
        return "not managed by Kueue"
    queues = {q["metadata"]["name"]: q for q in _kinds(objs, "ClusterQueue")}
    queue = queues[local[0]["spec"]["clusterQueue"]]
    ns = next(n for n in _kinds(objs, "Namespace") if n["metadata"]["name"] == job.namespace)
    wanted = queue["spec"]["namespaceSelector"]["matchLabels"]
    if any(ns["metadata"]["labels"].get(k) != v for k, v in wanted.items()):
        return "namespace not selected by the ClusterQueue"
    # excluded prefixes are dropped before quota accounting (K pkg/workload/workload.go 463-478, 676-678)
    excluded = config.get("resources", {}).get("excludeResourcePrefixes", [])
    requests = {r: quantity(q) * job.count for r, q in job.requests.items() if not any(r.startswith(p) for p in excluded)}
    [group] = queue["spec"]["resourceGroups"]
    for resource, amount in requests.items():
        # an uncovered resource with a non-zero request blocks admission (K flavorassigner.go 802-813, 1069-1072)
        if amount and resource not in group["coveredResources"]:
            return f"resource {resource} unavailable in ClusterQueue"
    flavors = {f["metadata"]["name"]: f for f in _kinds(objs, "ResourceFlavor")}
    reasons = []
    for entry in group["flavors"]:  # in order (K flavorassigner.go 1089)
        flavor = flavors[entry["name"]]["spec"]
        offered = job.tolerations + flavor.get("tolerations", [])
        untolerated = [t for t in flavor.get("nodeTaints", []) if t["effect"] in ("NoSchedule", "NoExecute") and not _tolerates(offered, t)]
        if untolerated:  # K flavorassigner.go 1239-1244
            reasons.append(f"{entry['name']}: untolerated taint {untolerated[0]['key']}")
            continue
        labels = flavor.get("nodeLabels", {})
        if any(k in labels and labels[k] != v for k, v in job.node_selector.items()):  # K flavorassigner.go 1246-1253
            reasons.append(f"{entry['name']}: node selector")
            continue
        quota = {r["name"]: quantity(r["nominalQuota"]) for r in entry["resources"]}
        # borrowing from the cohort is not modelled: the empty-cluster quota of this queue alone
        short = [r for r, amount in requests.items() if amount > quota.get(r, 0)]
        if short:
            reasons.append(f"{entry['name']}: insufficient quota for {short[0]}")
            continue
        # the flavor's labels join the pods' nodeSelector, its tolerations their tolerations (K pkg/podset/podset.go 78-91)
        return Admission(entry["name"], {**job.node_selector, **labels}, [*job.tolerations, *flavor.get("tolerations", [])])
    return "; ".join(reasons)


@dataclass
class Node:
    pool: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    allocatable: dict[str, float]


def node_of(pool: ResolvedPool, fabric_units: int) -> Node:
    alloc: dict[str, float] = {"cpu": 10**6, "memory": 2.0**60}
    if pool.instance is not None:
        alloc = {"cpu": pool.instance.vcpus, "memory": pool.instance.memoryGiB * 2**30}
    if pool.gpu_units is not None:
        alloc |= {r: float(n) for r, n in pool.gpu_units.resources.items()}
    if pool.rdma is not None:
        alloc[pool.rdma.resource] = fabric_units
    taints = [{"key": t.key, "value": t.value or "", "effect": t.effect} for t in pool.spec.taints]
    return Node(pool.name, dict(pool.labels), taints, alloc)


def feasible(
    nodes: list[Node], requests: dict[str, str], admission: Admission, excluded: tuple[str, ...] = ("hugepages-", "ephemeral-storage")
) -> list[str]:
    """Pools whose nodes pass kube-scheduler's filters for one pod: NodeAffinity (nodeSelector,
    KS nodeaffinity/node_affinity.go), TaintToleration (NoSchedule/NoExecute, KS tainttoleration/taint_toleration.go),
    NodeResourcesFit (requests within allocatable, KS noderesources/fit.go). Huge pages and ephemeral storage are
    left out: the model's nodes do not size them."""
    out = []
    for node in nodes:
        if any(node.labels.get(k) != v for k, v in admission.node_selector.items()):
            continue
        if any(t["effect"] in ("NoSchedule", "NoExecute") and not _tolerates(admission.tolerations, t) for t in node.taints):
            continue
        if any(quantity(q) > node.allocatable.get(r, 0) for r, q in requests.items() if not r.startswith(excluded)):
            continue
        out.append(node.pool)
    return sorted(set(out))


# ---------------------------------------------------------------- NetworkPolicy


@dataclass(frozen=True)
class Endpoint:
    namespace: str | None  # None: outside the cluster (ip only)
    ip: str
    labels: tuple[tuple[str, str], ...] = ()  # the pod's labels


def _ns_labels(objs: list[dict[str, Any]], name: str) -> dict[str, str]:
    ns = next((n for n in _kinds(objs, "Namespace") if n["metadata"]["name"] == name), None)
    labels = dict(ns["metadata"].get("labels", {})) if ns else {}
    return labels | {"kubernetes.io/metadata.name": name}  # set by the API server on every namespace


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        value, op = labels.get(expr["key"]), expr["operator"]
        if (
            (op == "In" and value not in expr["values"])
            or (op == "NotIn" and value in expr["values"])
            or (op == "Exists" and value is None)
            or (op == "DoesNotExist" and value is not None)
        ):
            return False
    return True


def _peer_matches(objs: list[dict[str, Any]], peer: dict[str, Any], other: Endpoint) -> bool:
    if "ipBlock" in peer:
        # ipBlock is meant for addresses outside the cluster; CNIs differ on pod IPs: the model lets it match them too
        # (the worst case), so isolation must hold on the receiving side
        return ipaddress.ip_address(other.ip) in ipaddress.ip_network(peer["ipBlock"]["cidr"])
    if other.namespace is None:
        return False
    if "namespaceSelector" not in peer:  # a podSelector alone means the policy's own namespace: alicerce writes none
        raise NotImplementedError(peer)
    ns_ok = _selects(peer["namespaceSelector"], _ns_labels(objs, other.namespace)) if "namespaceSelector" in peer else True
    pod_ok = _selects(peer.get("podSelector", {}), dict(other.labels))
    return ns_ok and pod_ok


def _port_ok(rule: dict[str, Any], port: int, protocol: str) -> bool:
    ports = rule.get("ports")
    return not ports or any(p.get("protocol", "TCP") == protocol and p.get("port") in (None, port) for p in ports)


def _allowed(objs: list[dict[str, Any]], pod: Endpoint, direction: str, other: Endpoint, *, port: int, protocol: str) -> bool:
    """Whether the policies of ``pod``'s namespace that select it (their ``podSelector``) allow it."""
    key, peers = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    policies = [
        p
        for p in _kinds(objs, "NetworkPolicy")
        if p["metadata"]["namespace"] == pod.namespace and _selects(p["spec"]["podSelector"], dict(pod.labels))
    ]
    isolating = [p for p in policies if direction in p["spec"].get("policyTypes", [])]
    if not isolating:
        return True  # a pod no policy selects for a direction is not isolated in it
    for policy in isolating:
        for rule in policy["spec"].get(key, []):
            if _port_ok(rule, port, protocol) and (peers not in rule or any(_peer_matches(objs, p, other) for p in rule[peers])):
                return True
    return False


def reachable(objs: list[dict[str, Any]], source: Endpoint, target: Endpoint, port: int, protocol: str = "TCP") -> bool:
    """Both the sender's egress and the receiver's ingress must allow a connection (NetworkPolicy semantics)."""
    egress = source.namespace is None or _allowed(objs, source, "Egress", target, port=port, protocol=protocol)
    ingress = target.namespace is None or _allowed(objs, target, "Ingress", source, port=port, protocol=protocol)
    return egress and ingress


# ---------------------------------------------------------------- Pod Security admission

# The volume sources the restricted level allows (kubernetes v1.35 staging/src/k8s.io/pod-security-admission/policy/
# check_restrictedVolumes.go); baseline forbids only hostPath among them (check_hostPathVolumes.go).
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"})


def pod_security_violations(pod: dict[str, Any], level: str) -> list[str]:
    """What the Pod Security admission controller at ``level`` rejects in a pod spec (the checks alicerce's pods
    can meet; pod-security-admission/policy: check_hostNamespaces.go, check_privileged.go, check_hostPathVolumes.go
    for baseline; check_allowPrivilegeEscalation.go, check_capabilities_restricted.go, check_runAsNonRoot.go,
    check_runAsUser.go, check_seccompProfile_restricted.go, check_restrictedVolumes.go for restricted)."""
    if level == "privileged":
        return []
    out: list[str] = []
    pod_context = pod.get("securityContext", {})
    containers = [*pod.get("initContainers", []), *pod.get("containers", [])]
    if any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")):
        out.append("host namespaces")
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if "hostPath" in kinds or (level == "restricted" and not kinds <= RESTRICTED_VOLUMES):
            out.append(f"volume {volume['name']} of type {sorted(kinds)}")
    for c in containers:
        context = c.get("securityContext", {})
        if context.get("privileged"):
            out.append(f"{c['name']}: privileged")
        if level != "restricted":
            continue
        if context.get("allowPrivilegeEscalation") is not False:
            out.append(f"{c['name']}: allowPrivilegeEscalation != false")
        caps = context.get("capabilities", {})
        if "ALL" not in caps.get("drop", []) or set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"{c['name']}: unrestricted capabilities")
        if context.get("runAsNonRoot", pod_context.get("runAsNonRoot")) is not True:
            out.append(f"{c['name']}: runAsNonRoot != true")
        if context.get("runAsUser", pod_context.get("runAsUser")) == 0:
            out.append(f"{c['name']}: runAsUser=0")
        seccomp = context.get("seccompProfile", pod_context.get("seccompProfile", {}))
        if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
            out.append(f"{c['name']}: seccompProfile")
    return out


# ---------------------------------------------------------------- ValidatingAdmissionPolicy


def _policy_matches(policy: dict[str, Any], group: str, resource: str, operation: str) -> bool:
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    return any(
        group in r["apiGroups"] and resource in r["resources"] and (operation in r["operations"] or "*" in r["operations"]) for r in rules
    )


def admission_denials(
    objs: list[dict[str, Any]],
    namespace: str,
    obj: dict[str, Any],
    *,
    group: str = "",
    resource: str = "pods",
    operation: str = "CREATE",
    user_groups: tuple[str, ...] = (),
    old: dict[str, Any] | None = None,
) -> list[str]:
    """Messages of the ValidatingAdmissionPolicies (bound with Deny) that reject creating ``obj`` in ``namespace``
    (or the ``operation`` on it; an UPDATE from ``old``, which is then the ``oldObject``).

    The expressions run on cel-python, a CEL implementation (the API server runs cel-go with Kubernetes'
    libraries; alicerce's expressions use only standard CEL: has(), all(), in, lists). Binding match:
    namespaceSelector on the namespace's labels (admissionregistration.k8s.io/v1 MatchResources)."""
    env = celpy.Environment()
    policies = {p["metadata"]["name"]: p for p in _kinds(objs, "ValidatingAdmissionPolicy")}
    kind = obj["kind"]
    request: dict[str, Any] = {"kind": {"kind": kind}, "namespace": namespace, "operation": operation}
    if user_groups:
        request["userInfo"] = {"groups": list(user_groups)}
    # a DELETE has no object, only the oldObject (admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy variables)
    key = "oldObject" if operation == "DELETE" else "object"
    activation = {key: celpy.json_to_cel(obj), "request": celpy.json_to_cel(request)}
    if old is not None:
        activation["oldObject"] = celpy.json_to_cel(old)
    out: list[str] = []
    for binding in _kinds(objs, "ValidatingAdmissionPolicyBinding"):
        spec = binding["spec"]
        policy = policies[spec["policyName"]]
        selector = spec.get("matchResources", {}).get("namespaceSelector", {})
        if "Deny" not in spec["validationActions"] or not _selects(selector, _ns_labels(objs, namespace)):
            continue
        if not _policy_matches(policy, group, resource, operation):
            continue
        for validation in policy["spec"]["validations"]:
            if not env.program(env.compile(validation["expression"])).evaluate(activation):
                out.append(validation["message"])
    return out
