"""The Pulumi program: one environment of the platform spec, built site by site.

``__main__.py`` calls :func:`main`, which reads the stack config (``alicerce:spec``, default
``platform.yaml``; ``alicerce:environment``, default the stack name), resolves that environment
and calls :func:`build`. ``alicerce preview`` calls :func:`build` under Pulumi's mock engine.
Secrets come only from Pulumi secret config (an on-prem kubeconfig from the key its site names).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from alicerce.emit.pulumi.objects import ClusterObjects, ObjectsArgs
from alicerce.emit.pulumi.operators import Operators, OperatorsArgs
from alicerce.resolve.platform import ResolvedPlatform
from alicerce.spec.models import AwsSite, OnpremSite
from alicerce.targets.aws.components.cluster import AddonsArgs, ClusterArgs, EksAddons, EksCluster, OidcIdentity
from alicerce.targets.aws.components.fabric import EfaFabric, FabricArgs, needs_fabric
from alicerce.targets.aws.components.gpu_node_pool import GpuNodePool, NodePoolArgs, plan_node_pool
from alicerce.targets.aws.components.kms import KeyArgs, PlatformKey
from alicerce.targets.aws.components.network import Network, NetworkArgs
from alicerce.targets.aws.components.storage import Storage, StorageArgs, plan_storage


class Secrets(Protocol):
    """Where secret values come from: Pulumi secret config at `pulumi up`, placeholders in a preview."""

    def secret(self, key: str) -> pulumi.Output[str]: ...


class ConfigSecrets:
    def __init__(self, config: pulumi.Config) -> None:
        self._config = config

    def secret(self, key: str) -> pulumi.Output[str]:
        return self._config.require_secret(key)


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
class SiteOutputs:
    cluster: dict[str, Any]
    kubeconfig: pulumi.Output[str] | None
    node_pools: dict[str, pulumi.Output[str]]
    storage: dict[str, pulumi.Output[str]]


def _aws_site(rp: ResolvedPlatform, site: AwsSite, settings: StackSettings) -> SiteOutputs:
    n = site.name
    provider = aws.Provider(n, region=site.region, allowed_account_ids=[site.account])
    opts = pulumi.ResourceOptions(providers={"aws": provider})
    key = PlatformKey(f"{n}-kms", KeyArgs.from_resolved(rp, site), opts)
    kms = key.arn if rp.spec.security.encryption.at_rest else None
    network = Network(f"{n}-network", NetworkArgs.from_resolved(rp, site), opts)
    subnets = network.private_subnet_ids
    cluster_args = ClusterArgs.from_resolved(
        rp,
        site,
        vpc_id=network.vpc_id,
        subnet_ids=[subnets[z] for z in site.zones],
        kms_key_arn=kms,
        admin_principals=settings.admin_principals,
        oidc=settings.oidc,
    )
    cluster = EksCluster(f"{n}-cluster", cluster_args, opts)
    fabric = EfaFabric(f"{n}-fabric", FabricArgs.from_resolved(rp, site, network.vpc_id), opts) if needs_fabric(rp, site) else None
    cluster_name = cluster_args.name
    pools: dict[str, GpuNodePool] = {}
    for pool in rp.pools:
        if pool.site.name != n:
            continue
        plan = plan_node_pool(cluster_name, pool)
        pools[pool.name] = GpuNodePool(
            f"{n}-pool-{pool.name}",
            NodePoolArgs(
                plan=plan,
                tags=rp.tags,
                kubernetes_version=rp.versions["kubernetes"],
                cluster_name=cluster.cluster_name,
                node_role_arn=cluster.node_role_arn,
                subnet_ids=subnets,
                security_group_ids=[cluster.cluster_security_group_id, cluster.node_security_group_id],
                efa_security_group_id=fabric.security_group_id if fabric and plan.interfaces else None,
                kms_key_arn=kms,
            ),
            pulumi.ResourceOptions(providers={"aws": provider}, depends_on=[cluster]),
        )
    storage_plan = plan_storage(rp, site)
    addons = EksAddons(
        f"{n}-addons",
        AddonsArgs(cluster_args, cluster.cluster_name, efs=bool(storage_plan.efs)),
        pulumi.ResourceOptions(providers={"aws": provider}, depends_on=list(pools.values())),
    )
    storage = Storage(
        f"{n}-storage",
        StorageArgs(
            name=cluster_name,
            plan=storage_plan,
            tags=rp.tags,
            vpc_id=network.vpc_id,
            subnet_ids=subnets,
            node_security_group_id=cluster.node_security_group_id,
            kms_key_arn=kms,
        ),
        opts,
    )
    kube = k8s.Provider(f"{n}-k8s", kubeconfig=cluster.kubeconfig, enable_server_side_apply=True)
    _kubernetes_layer(rp, n, kube, [addons, storage], storage.volumes)
    return SiteOutputs(
        cluster={"provider": "aws", "name": cluster.cluster_name, "endpoint": cluster.endpoint, "region": site.region},
        kubeconfig=cluster.kubeconfig,
        node_pools={name: pool.node_group_name for name, pool in pools.items()},
        storage=storage.endpoints,
    )


def _onprem_site(rp: ResolvedPlatform, site: OnpremSite, secrets: Secrets) -> SiteOutputs:
    if site.kubeconfig_secret is None:
        raise pulumi.RunError(f"site {site.name}: set kubeconfigSecret to the Pulumi secret config key that holds its kubeconfig")
    kube = k8s.Provider(f"{site.name}-k8s", kubeconfig=secrets.secret(site.kubeconfig_secret), enable_server_side_apply=True)
    _kubernetes_layer(rp, site.name, kube, [])
    pools = {p.name: pulumi.Output.from_input(p.name) for p in rp.pools if p.site.name == site.name}
    return SiteOutputs({"provider": "onprem", "endpoint": site.control_plane_endpoint}, None, pools, {})


def _kubernetes_layer(
    rp: ResolvedPlatform,
    site: str,
    kube: k8s.Provider,
    after: list[pulumi.Resource],
    volumes: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    opts = pulumi.ResourceOptions(providers={"kubernetes": kube}, depends_on=after)
    operators = Operators(f"{site}-operators", OperatorsArgs.from_resolved(rp, site), opts)
    ClusterObjects(
        f"{site}-objects",
        ObjectsArgs.from_resolved(rp, site, operators.charts, volumes),
        pulumi.ResourceOptions(providers={"kubernetes": kube}, depends_on=after),
    )


def build(rp: ResolvedPlatform, secrets: Secrets, settings: StackSettings | None = None) -> dict[str, Any]:
    """Declare every resource of the environment; returns the stack outputs (not yet exported)."""
    settings = settings or StackSettings()
    sites: dict[str, SiteOutputs] = {}
    for site in rp.sites:
        sites[site.name] = _aws_site(rp, site, settings) if isinstance(site, AwsSite) else _onprem_site(rp, site, secrets)
    kubeconfigs: Mapping[str, pulumi.Output[str]] = {n: s.kubeconfig for n, s in sites.items() if s.kubeconfig is not None}
    return {
        "environment": rp.environment,
        "clusters": {n: s.cluster for n, s in sites.items()},
        "kubeconfigs": pulumi.Output.secret(kubeconfigs),
        "nodePools": {n: s.node_pools for n, s in sites.items()},
        "storage": {n: s.storage for n, s in sites.items() if s.storage},
    }


def main() -> None:
    """Entry point of ``pulumi up``/``pulumi preview`` (see ``__main__.py``)."""
    from alicerce.resolve.platform import resolve
    from alicerce.spec.errors import SpecInvalid, render_report
    from alicerce.spec.loader import load_file

    config = pulumi.Config("alicerce")
    spec = config.get("spec") or "platform.yaml"
    env = config.get("environment") or pulumi.get_stack()
    try:
        rp = resolve(load_file(spec, spec), env)
    except SpecInvalid as exc:
        out, err = render_report(exc.errors, False)
        raise pulumi.RunError(f"{spec} is not valid for environment {env}:\n{out}{err}") from None
    for key, value in build(rp, ConfigSecrets(config), StackSettings.from_config(config)).items():
        pulumi.export(key, value)
