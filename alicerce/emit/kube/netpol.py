"""The NetworkPolicies of a team namespace: deny everything, then allow what a team needs, one named policy each.

A policy set is a tuple of builders (:data:`NAMESPACE_POLICIES`), each returning the allows it adds
for one namespace; a new need (a target's agent, a gateway) is one more builder, or one more
``PlatformEndpoint`` its target resolves. Kubernetes semantics (NetworkPolicy API): a pod selected
by any policy for a direction is isolated in that direction and reachable only as some policy
allows; traffic between two pods needs the sender's egress and the receiver's ingress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from alicerce.emit.kube.common import TEAM_LABEL, meta
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite, ResolvedTeam
from alicerce.resolve.namespaces import KUBERAY_NAMESPACE, MONITORING_NAMESPACE

NAMESPACE_NAME = "kubernetes.io/metadata.name"  # set by the API server on every namespace


@dataclass(frozen=True)
class PolicyContext:
    rp: ResolvedPlatform
    site: ResolvedSite
    team: ResolvedTeam
    namespace: str
    labels: dict[str, str]

    def policy(self, name: str, spec: dict[str, Any], why: str | None = None) -> dict[str, Any]:
        metadata = meta(name, self.namespace, self.labels)
        if why:
            metadata["annotations"] = {"alicerce.dev/why": why}
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata, "spec": {"podSelector": {}, **spec}}


def _namespaces(names: Iterable[str]) -> dict[str, Any]:
    return {"namespaceSelector": {"matchExpressions": [{"key": NAMESPACE_NAME, "operator": "In", "values": sorted(names)}]}}


def default_deny(ctx: PolicyContext) -> list[dict[str, Any]]:
    return [ctx.policy("default-deny", {"policyTypes": ["Ingress", "Egress"]})]


def same_team(ctx: PolicyContext) -> list[dict[str, Any]]:
    # every namespace of the team (serving-canary calls serving), none of another team's
    team = {"namespaceSelector": {"matchLabels": {TEAM_LABEL: ctx.team.name}}}
    spec = {"policyTypes": ["Ingress", "Egress"], "ingress": [{"from": [team]}], "egress": [{"to": [team]}]}
    return [ctx.policy("allow-same-team", spec)]


def cluster_dns(ctx: PolicyContext) -> list[dict[str, Any]]:
    dns = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME: "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    spec = {
        "policyTypes": ["Egress"],
        "egress": [{"to": [dns], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}],
    }
    return [ctx.policy("allow-dns", spec)]


def https_egress(ctx: PolicyContext) -> list[dict[str, Any]]:
    # datasets, checkpoints, registries and the EKS API are reached over HTTPS; other teams' pods stay closed by their own ingress policy
    spec = {
        "policyTypes": ["Egress"],
        "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]}],
    }
    return [ctx.policy("allow-https-egress", spec)]


def platform_endpoints(ctx: PolicyContext) -> list[dict[str, Any]]:
    """What the site's target says pods must reach outside the pod network (API server, node-local agents)."""
    out = []
    for endpoint in ctx.site.endpoints:
        to = [{"ipBlock": {"cidr": cidr}} for cidr in endpoint.cidrs]
        ports = [{"protocol": protocol, "port": port} for protocol, port in endpoint.ports]
        out.append(ctx.policy(f"allow-{endpoint.name}", {"policyTypes": ["Egress"], "egress": [{"to": to, "ports": ports}]}, endpoint.why))
    return out


def metrics_scraping(ctx: PolicyContext) -> list[dict[str, Any]]:
    if not ctx.rp.spec.operators.monitoring.enabled:
        return []
    spec = {"policyTypes": ["Ingress"], "ingress": [{"from": [_namespaces([MONITORING_NAMESPACE])]}]}
    return [ctx.policy("allow-metrics-scraping", spec)]


def serves(site: ResolvedSite, team: ResolvedTeam) -> bool:
    """A team serves at a site when it has quota on an inference pool there."""
    return any(pool.spec.purpose == "inference" for _, pool in site.quotas(team))


def gateway_ingress(ctx: PolicyContext) -> list[dict[str, Any]]:
    """Serving namespaces accept traffic from the gateway or load balancers the spec names (tenancy.ingress)."""
    ingress = ctx.rp.spec.tenancy.ingress
    if not serves(ctx.site, ctx.team) or not (ingress.namespaces or ingress.cidrs):
        return []
    sources: list[dict[str, Any]] = [_namespaces(ingress.namespaces)] if ingress.namespaces else []
    sources += [{"ipBlock": {"cidr": str(cidr)}} for cidr in ingress.cidrs]
    return [
        ctx.policy("allow-gateway", {"policyTypes": ["Ingress"], "ingress": [{"from": sources}]}, "requests from the platform's gateway")
    ]


# KubeRay v1.7.0 calls each Ray head from the operator pod: the RayJob and RayService controllers through the head
# Service's dashboard port (rayjob_controller.go 218, 301; rayservice_controller.go 2014), the RayService controller
# also the head's Serve proxy (rayservice_controller.go 2092); defaults 8265 and 8000 (utils/constant.go 107, 110)
RAY_HEAD = {"ray.io/node-type": "head"}
RAY_OPERATOR_PORTS = (8265, 8000)


def ray_operator(ctx: PolicyContext) -> list[dict[str, Any]]:
    """The KubeRay operator reaches the Ray heads' dashboard and Serve ports, nothing else."""
    if not ctx.rp.spec.operators.kuberay.enabled:
        return []
    spec = {
        "podSelector": {"matchLabels": RAY_HEAD},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [_namespaces([KUBERAY_NAMESPACE])], "ports": [{"protocol": "TCP", "port": p} for p in RAY_OPERATOR_PORTS]}],
    }
    return [ctx.policy("allow-kuberay-operator", spec, "the KubeRay operator polls Ray jobs and Serve through the heads")]


NamespacePolicies = Callable[[PolicyContext], list[dict[str, Any]]]
NAMESPACE_POLICIES: tuple[NamespacePolicies, ...] = (
    default_deny,
    same_team,
    cluster_dns,
    https_egress,
    platform_endpoints,
    metrics_scraping,
    gateway_ingress,
    ray_operator,
)


def namespace_policies(
    rp: ResolvedPlatform, site: ResolvedSite, team: ResolvedTeam, namespace: str, labels: dict[str, str]
) -> list[dict[str, Any]]:
    ctx = PolicyContext(rp, site, team, namespace, labels)
    return [policy for build in NAMESPACE_POLICIES for policy in build(ctx)]
