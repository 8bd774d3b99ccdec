"""What every target's build gets from the stack and gives back to the program, and the stack's layers.

An environment is deployed in two layers: ``cloud`` (network, key, cluster, node groups, storage,
IAM: needs only AWS credentials) and ``kubernetes`` (operators, controllers and in-cluster objects:
needs to reach each cluster's API server). A private API endpoint is reachable only from inside its
VPC or a network connected to it, so the two layers usually run as two stacks of this project, the
second from a runner that reaches the endpoint, reading the first one's outputs through a
StackReference (README, "Two stacks per environment"). One stack may hold both where the runner
reaches the endpoint (a public endpoint, or ``alicerce:apiAccessCidrs`` naming the runner's network).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pulumi
import pulumi_kubernetes as k8s

from alicerce.emit.kube.operators import Release
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets import target

CLOUD = "cloud"
KUBERNETES = "kubernetes"
LAYERS = (CLOUD, KUBERNETES)


class Secrets(Protocol):
    """Where secret values come from: Pulumi secret config at `pulumi up`, placeholders in a preview."""

    def secret(self, key: str) -> pulumi.Output[str]: ...


class ConfigSecrets:
    def __init__(self, config: pulumi.Config) -> None:
        self._config = config

    def secret(self, key: str) -> pulumi.Output[str]:
        return self._config.require_secret(key)


def missing_kubeconfigs(rp: ResolvedPlatform) -> list[tuple[int, str]]:
    """(index among the environment's sites, name) of each existing cluster the Kubernetes layer would reach
    with no ``kubeconfigSecret`` to reach it by. The spec may omit it (the Ansible tree needs none), but
    the Kubernetes layer of `pulumi up` and `alicerce preview` cannot run without it."""
    sites = rp.spec.environments[rp.environment].sites
    return [(i, s.name) for i, s in enumerate(sites) if getattr(s, "kubeconfig_secret", False) is None]


@dataclass(frozen=True)
class StackSettings:
    """WHERE-facts of a stack that are not in the spec (stacks/Pulumi.<stack>.yaml)."""

    admin_principals: tuple[str, ...] = ()  # alicerce:adminPrincipals, IAM role ARNs with cluster admin
    api_access_cidrs: tuple[str, ...] = ()  # alicerce:apiAccessCidrs, networks allowed to the private API endpoint
    layers: tuple[str, ...] = LAYERS  # alicerce:layers, what this stack deploys
    cloud_stack: str | None = None  # alicerce:cloudStack, the stack holding the cloud layer (kubernetes-only stacks)

    @classmethod
    def from_config(cls, config: pulumi.Config) -> StackSettings:
        admins = config.get_object("adminPrincipals") or []
        cidrs = config.get_object("apiAccessCidrs") or []
        layers = config.get_object("layers") or list(LAYERS)
        return cls(
            tuple(str(a) for a in admins),
            tuple(str(c) for c in cidrs),
            tuple(str(layer) for layer in layers),
            config.get("cloudStack"),
        )

    def problems(self, rp: ResolvedPlatform) -> list[str]:
        """Stack configurations that cannot deploy, found before any resource is declared (each with its fix)."""
        out: list[str] = []
        unknown = sorted(set(self.layers) - set(LAYERS))
        if unknown or not self.layers:
            out.append(f"alicerce:layers must list {' and/or '.join(LAYERS)}, not {list(self.layers)}")
            return out
        created = [s for s in rp.sites if not s.capabilities.nodes_by_ansible]  # clusters the cloud layer creates
        # a cloud whose clusters grant admin only to the principals the stack names (its target declares it)
        clouds = [c for s in created if (c := target(s.provider).cloud) is not None]
        if CLOUD in self.layers and clouds and not self.admin_principals:
            out.append(
                f"alicerce:adminPrincipals names no {clouds[0].admin_principal_kind}: the cluster grants admin only through explicit "
                "access entries, so the role that runs the Kubernetes layer must be listed "
                f"(pulumi config set --path 'alicerce:adminPrincipals[0]' {clouds[0].admin_principal_example})"
            )
        if KUBERNETES in self.layers:
            for _, name in missing_kubeconfigs(rp):
                out.append(
                    f"site {name} names no kubeconfigSecret, the Pulumi secret config key holding its kubeconfig, so the "
                    f"Kubernetes layer cannot reach its cluster (set kubeconfigSecret on the site in the spec, then "
                    f"pulumi config set --secret <that key> < admin.conf)"
                )
        access = rp.spec.security.endpoint_access
        private_only = not access.public
        if set(LAYERS) <= set(self.layers) and created and private_only and not self.api_access_cidrs:
            out.append(
                "the Kubernetes layer cannot reach a private-only API endpoint from outside the new VPC on the first run: deploy "
                "the layers as two stacks (alicerce:layers [cloud] here, a second stack with alicerce:layers [kubernetes] run from "
                "inside the VPC; README, 'Two stacks per environment'), or name the runner's connected network in "
                "alicerce:apiAccessCidrs"
            )
        return out


@dataclass
class SiteBuild:
    """What a target's cloud layer of one site hands on: the stack outputs, and what its Kubernetes layer needs."""

    cluster: dict[str, Any]
    after: list[pulumi.Resource] = field(default_factory=list)  # what the Kubernetes layer waits for in the same stack
    kubeconfig: pulumi.Output[str] | None = None
    node_pools: dict[str, pulumi.Output[str]] = field(default_factory=dict)
    storage: dict[str, pulumi.Output[str]] = field(default_factory=dict)
    handoff: dict[str, Any] = field(default_factory=dict)  # exported for the Kubernetes layer (no secrets)


@dataclass
class KubeSite:
    """One site's Kubernetes layer: where to install, what to wait for, what the target adds."""

    kube: k8s.Provider
    after: list[pulumi.Resource] = field(default_factory=list)
    volumes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # tier -> PersistentVolume source
    releases: tuple[Release, ...] = ()  # the target's own controllers, installed with the operators
