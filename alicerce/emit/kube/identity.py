"""Workload identity in the team namespaces: the team's service account, and the egress its pods need
to reach the node-local credential agent.

Each team namespace gets the service account ``ResolvedTeam.service_account`` (``team-<name>``);
on AWS the cloud layer binds it to the team's IAM role with EKS Pod Identity associations. Where the
site's pods fetch credentials from a node-local agent (the EKS Pod Identity agent on
169.254.170.23:80), the namespaces' default-deny egress would block it, so a NetworkPolicy allows
exactly that address and port. Kept apart from objects.py so the tenancy objects and the identity
plumbing change independently; cluster_objects adds these.
"""

from __future__ import annotations

from typing import Any

from alicerce.resolve.model import ResolvedPlatform, ResolvedSite, ResolvedTeam

AGENT_POLICY = "allow-credential-agent"


def _labels(rp: ResolvedPlatform, team: ResolvedTeam) -> dict[str, str]:
    return {"alicerce.dev/platform": rp.name, "alicerce.dev/environment": rp.environment, "alicerce.dev/team": team.name}


def _agent_policy(site: ResolvedSite, namespace: str, labels: dict[str, str]) -> dict[str, Any] | None:
    agent = site.capabilities.workload_identity_agent
    if not agent:
        return None
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": AGENT_POLICY, "namespace": namespace, "labels": labels},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": cidr}}], "ports": [{"protocol": "TCP", "port": port}]} for cidr, port in agent],
        },
    }


def workload_identity_objects(rp: ResolvedPlatform, site_name: str) -> list[dict[str, Any]]:
    """The team service accounts of a site and, where the site has a credential agent, the egress to it."""
    site = rp.site(site_name)
    out: list[dict[str, Any]] = []
    for team in site.teams:
        labels = dict(sorted(_labels(rp, team).items()))
        for namespace in team.namespaces:
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": team.service_account, "namespace": namespace, "labels": labels},
                }
            )
            if (policy := _agent_policy(site, namespace, labels)) is not None:
                out.append(policy)
    return out
