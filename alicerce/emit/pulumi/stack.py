"""What every target's build gets from the stack and gives back to the program."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pulumi
import pulumi_kubernetes as k8s


class Secrets(Protocol):
    """Where secret values come from: Pulumi secret config at `pulumi up`, placeholders in a preview."""

    def secret(self, key: str) -> pulumi.Output[str]: ...


class ConfigSecrets:
    def __init__(self, config: pulumi.Config) -> None:
        self._config = config

    def secret(self, key: str) -> pulumi.Output[str]:
        return self._config.require_secret(key)


@dataclass(frozen=True)
class OidcIdentity:
    """The identity provider whose groups (tenancy.teams[].groups) reach Kubernetes RBAC."""

    issuer_url: str
    client_id: str
    groups_prefix: str = "oidc:"


@dataclass(frozen=True)
class StackSettings:
    """WHERE-facts of a stack that are not in the spec (stacks/Pulumi.<env>.yaml)."""

    admin_principals: tuple[str, ...] = ()  # alicerce:adminPrincipals, IAM role ARNs with cluster admin
    oidc: OidcIdentity | None = None  # alicerce:oidcIssuerUrl + alicerce:oidcClientId

    @classmethod
    def from_config(cls, config: pulumi.Config) -> StackSettings:
        admins = config.get_object("adminPrincipals") or []
        issuer, client = config.get("oidcIssuerUrl"), config.get("oidcClientId")
        oidc = OidcIdentity(issuer, client) if issuer and client else None
        return cls(tuple(str(a) for a in admins), oidc)


@dataclass
class SiteBuild:
    """What a target's build of one site hands on: the cluster to put the Kubernetes layer into, and the outputs."""

    kube: k8s.Provider
    after: list[pulumi.Resource]  # what the Kubernetes layer waits for (node groups, add-ons, file systems)
    cluster: dict[str, Any]
    kubeconfig: pulumi.Output[str] | None = None
    node_pools: dict[str, pulumi.Output[str]] = field(default_factory=dict)
    storage: dict[str, pulumi.Output[str]] = field(default_factory=dict)
    volumes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # tier -> PersistentVolume source
