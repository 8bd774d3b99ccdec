"""Workload identity in the team namespaces: the team's service account.

Each team namespace gets the service account ``ResolvedTeam.service_account`` (``team-<name>``);
on AWS the cloud layer binds it to the team's IAM role with EKS Pod Identity associations. The
egress to the node-local credential agent is one of the site's platform endpoints (netpol.py).
"""

from __future__ import annotations

from typing import Any

from alicerce.resolve.model import ResolvedPlatform, ResolvedTeam


def _labels(rp: ResolvedPlatform, team: ResolvedTeam) -> dict[str, str]:
    return {"alicerce.dev/platform": rp.name, "alicerce.dev/environment": rp.environment, "alicerce.dev/team": team.name}


def workload_identity_objects(rp: ResolvedPlatform, site_name: str) -> list[dict[str, Any]]:
    """The team service accounts of a site."""
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
    return out
