"""The on-prem target's Pulumi resources of one site: none but the way into its existing cluster.

The nodes and the control plane come from the generated Ansible tree (`alicerce apply onprem`);
Pulumi reaches the cluster through the kubeconfig held in the Pulumi secret the site names.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from alicerce.emit.pulumi.stack import KubeSite, Secrets, SiteBuild, StackSettings
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.targets.onprem.spec import OnpremSite


def build_site(rp: ResolvedPlatform, resolved: ResolvedSite, secrets: Secrets, settings: StackSettings) -> SiteBuild:
    """The cloud layer of an on-prem site: nothing to create, only its outputs."""
    site = resolved.spec
    assert isinstance(site, OnpremSite)
    return SiteBuild(
        cluster={"provider": "onprem", "endpoint": site.control_plane_endpoint},
        node_pools={p.name: pulumi.Output.from_input(p.name) for p in resolved.pools},
    )


def kube_site(rp: ResolvedPlatform, resolved: ResolvedSite, handoff: pulumi.Output[Any], secrets: Secrets) -> KubeSite:
    """The Kubernetes layer of an on-prem site: its existing cluster, through the kubeconfig secret it names."""
    site = resolved.spec
    assert isinstance(site, OnpremSite)
    if site.kubeconfig_secret is None:
        raise pulumi.RunError(f"site {site.name}: set kubeconfigSecret to the Pulumi secret config key that holds its kubeconfig")
    return KubeSite(kube=k8s.Provider(f"{site.name}-k8s", kubeconfig=secrets.secret(site.kubeconfig_secret), enable_server_side_apply=True))
