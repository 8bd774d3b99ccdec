"""The AWS target's Pulumi resources of one site (a VPC and an EKS cluster with everything around it)."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from alicerce.emit.pulumi.stack import Secrets, SiteBuild, StackSettings
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.spec.models import AwsSite
from alicerce.targets.aws.components.cluster import AddonsArgs, ClusterArgs, EksAddons, EksCluster
from alicerce.targets.aws.components.fabric import EfaFabric, FabricArgs, needs_fabric
from alicerce.targets.aws.components.gpu_node_pool import GpuNodePool, NodePoolArgs, node_group_settings
from alicerce.targets.aws.components.kms import KeyArgs, PlatformKey
from alicerce.targets.aws.components.network import Network, NetworkArgs
from alicerce.targets.aws.components.storage import Storage, StorageArgs, storage_layout


def build_site(rp: ResolvedPlatform, resolved: ResolvedSite, secrets: Secrets, settings: StackSettings) -> SiteBuild:
    """An AWS site: VPC, platform key, EKS cluster, a node group per pool, the EFA fabric, storage, add-ons."""
    site = resolved.spec
    assert isinstance(site, AwsSite)
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
    for pool in resolved.pools:
        group = node_group_settings(cluster_name, pool)
        pools[pool.name] = GpuNodePool(
            f"{n}-pool-{pool.name}",
            NodePoolArgs(
                settings=group,
                tags=rp.tags,
                kubernetes_version=rp.versions.kubernetes,
                cluster_name=cluster.cluster_name,
                node_role_arn=cluster.node_role_arn,
                subnet_ids=subnets,
                security_group_ids=[cluster.cluster_security_group_id, cluster.node_security_group_id],
                efa_security_group_id=fabric.security_group_id if fabric and group.interfaces else None,
                kms_key_arn=kms,
            ),
            pulumi.ResourceOptions(providers={"aws": provider}, depends_on=[cluster]),
        )
    layout = storage_layout(rp, site)
    addons = EksAddons(
        f"{n}-addons",
        AddonsArgs(cluster_args, cluster.cluster_name, efs=bool(layout.efs)),
        pulumi.ResourceOptions(providers={"aws": provider}, depends_on=list(pools.values())),
    )
    storage = Storage(
        f"{n}-storage",
        StorageArgs(
            name=cluster_name,
            layout=layout,
            tags=rp.tags,
            vpc_id=network.vpc_id,
            subnet_ids=subnets,
            node_security_group_id=cluster.node_security_group_id,
            kms_key_arn=kms,
        ),
        opts,
    )
    return SiteBuild(
        kube=k8s.Provider(f"{n}-k8s", kubeconfig=cluster.kubeconfig, enable_server_side_apply=True),
        after=[addons, storage],
        cluster={"provider": "aws", "name": cluster.cluster_name, "endpoint": cluster.endpoint, "region": site.region},
        kubeconfig=cluster.kubeconfig,
        node_pools={name: pool.node_group_name for name, pool in pools.items()},
        storage=storage.endpoints,
        volumes=storage.volumes,
    )
