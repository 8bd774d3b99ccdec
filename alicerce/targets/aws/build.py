"""The AWS target's Pulumi resources of one site, in two layers.

cloud: a VPC and an EKS cluster with everything around it (key, node groups, fabric, storage,
workload identity); kubernetes: the way into that cluster and the AWS controllers it runs, built
from what the cloud layer handed on (in the same stack, or through a StackReference).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from alicerce.emit.kube.storage import PER_TEAM
from alicerce.emit.pulumi.stack import KubeSite, Secrets, SiteBuild, StackSettings
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.audit import AuditArgs, AuditTrail
from alicerce.targets.aws.components.cluster import AddonsArgs, ClusterArgs, EksAddons, EksCluster, kubeconfig
from alicerce.targets.aws.components.controllers import controller_releases
from alicerce.targets.aws.components.fabric import EfaFabric, FabricArgs, needs_fabric
from alicerce.targets.aws.components.gpu_node_pool import GpuNodePool, NodePoolArgs, node_group_settings
from alicerce.targets.aws.components.identity import IdentityArgs, WorkloadIdentity
from alicerce.targets.aws.components.kms import KeyArgs, PlatformKey
from alicerce.targets.aws.components.network import Network, NetworkArgs
from alicerce.targets.aws.components.storage import Storage, StorageArgs, StorageLayout, storage_layout
from alicerce.targets.aws.spec import AwsSite


def _site(resolved: ResolvedSite) -> AwsSite:
    site = resolved.spec
    assert isinstance(site, AwsSite)
    return site


def preview_identity(resolved: ResolvedSite) -> tuple[str, str]:
    """The region and account the offline preview's mock engine answers with (ARNs, the caller identity)."""
    site = _site(resolved)
    return site.region, site.account


def build_site(rp: ResolvedPlatform, resolved: ResolvedSite, secrets: Secrets, settings: StackSettings) -> SiteBuild:
    """The cloud layer of an AWS site: VPC, platform key, EKS cluster, a node group per pool, the EFA fabric,
    storage, add-ons and workload identity."""
    site = _site(resolved)
    n = site.name
    provider = aws.Provider(n, region=site.region, allowed_account_ids=[site.account])
    opts = pulumi.ResourceOptions(providers={"aws": provider})
    key = PlatformKey(f"{n}-kms", KeyArgs.from_resolved(rp, site), opts)
    kms = key.arn if rp.spec.security.encryption.at_rest else None
    network = Network(f"{n}-network", NetworkArgs.from_resolved(rp, site, kms), opts)
    subnets = network.private_subnet_ids
    cluster_args = ClusterArgs.from_resolved(
        rp,
        site,
        vpc_id=network.vpc_id,
        subnet_ids=[subnets[z] for z in site.zones],
        kms_key_arn=kms,
        admin_principals=settings.admin_principals,
        api_access_cidrs=settings.api_access_cidrs,
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
            # nodes join once the CNI (with its role) and kube-proxy are there
            pulumi.ResourceOptions(providers={"aws": provider}, depends_on=[cluster, *cluster.boot_addons]),
        )
    layout = storage_layout(rp, site)
    # CoreDNS and the CSI controllers run on untainted nodes that exist from the start: wait for those pools only,
    # not for GPU pools (tainted, often at zero, and on reserved capacity slow or unable to launch)
    hosts = [pools[p.name] for p in resolved.pools if not p.spec.taints and p.spec.scaling.min > 0] or list(pools.values())
    addons = EksAddons(
        f"{n}-addons",
        AddonsArgs(cluster_args, cluster.cluster_name, efs=bool(layout.efs)),
        pulumi.ResourceOptions(providers={"aws": provider}, depends_on=hosts),
    )
    identity = WorkloadIdentity(
        names.identity_component(site), IdentityArgs.from_resolved(rp, site, cluster_args, cluster.cluster_name, kms), opts
    )
    storage = Storage(
        f"{n}-storage",
        StorageArgs(
            name=cluster_name,
            site=site.name,
            layout=layout,
            tags=rp.tags,
            vpc_id=network.vpc_id,
            subnet_ids=subnets,
            node_security_group_id=cluster.node_security_group_id,
            kms_key_arn=kms,
            node_role_arn=cluster.node_role_arn,
            audited=rp.spec.security.audit.enabled,
            admin_principals=tuple(sorted(settings.admin_principals)),
        ),
        opts,
    )
    if rp.spec.security.audit.enabled:
        # after the key (CloudTrail checks that it may encrypt with it when the trail is created) and the access-log bucket
        AuditTrail(
            f"{n}-audit",
            AuditArgs.from_resolved(rp, site, kms, storage.log_bucket_id, settings.admin_principals),
            pulumi.ResourceOptions(providers={"aws": provider}, depends_on=[key, storage]),
        )
    handoff: dict[str, Any] = {
        "name": cluster.cluster_name,
        "endpoint": cluster.endpoint,
        "certificateAuthority": cluster.certificate_authority,
        "volumes": storage.volumes,
    }
    return SiteBuild(
        cluster={
            "provider": "aws",
            "name": cluster.cluster_name,
            "endpoint": cluster.endpoint,
            "region": site.region,
            # attach to the runner of the Kubernetes layer (README, "Two stacks per environment")
            "apiClientsSecurityGroupId": cluster.api_clients_security_group_id,
            "privateSubnetIds": [subnets[z] for z in site.zones],
        },
        # in one stack, the Kubernetes layer also waits for the admin access it authenticates through
        after=[addons, storage, identity, *cluster.admin_access],
        kubeconfig=cluster.kubeconfig,
        node_pools={name: pool.node_group_name for name, pool in pools.items()},
        storage=storage.endpoints,
        handoff=handoff,
    )


def _csi_field(tier: str, *keys: str) -> Callable[[Any], Any]:
    """One field of the CSI volume source of a tier's file system, out of the handoff."""

    def read(handoff: Any) -> Any:
        value = handoff["volumes"][tier]["csi"]
        for key in keys:
            value = value[key]
        return value

    return read


def _team_handle(tier: str, team: str) -> Callable[[Any], Any]:
    """The volume handle of a team's own access point on a tier's file system, out of the handoff."""

    def read(handoff: Any) -> Any:
        return handoff["volumes"][tier][PER_TEAM][team]["csi"]["volumeHandle"]

    return read


def _handoff_volumes(handoff: pulumi.Output[Any], layout: StorageLayout) -> dict[str, dict[str, Any]]:
    """The volume sources of the site's file systems: their shape known now, their ids from the handoff (so the
    Kubernetes objects can derive per-team subdirectories from them, as from the cloud layer's own)."""
    volumes: dict[str, dict[str, Any]] = {}
    for fsx in layout.fsx:
        attributes = {key: handoff.apply(_csi_field(fsx.name, "volumeAttributes", key)) for key in ("dnsname", "mountname")}
        volumes[fsx.name] = {
            "csi": {
                "driver": "fsx.csi.aws.com",
                "volumeHandle": handoff.apply(_csi_field(fsx.name, "volumeHandle")),
                "volumeAttributes": attributes,
            }
        }
    for efs in layout.efs:
        volumes[efs.name] = {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": handoff.apply(_csi_field(efs.name, "volumeHandle"))}}
        if efs.teams:  # each team's access point
            volumes[efs.name][PER_TEAM] = {
                team: {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": handoff.apply(_team_handle(efs.name, team))}}
                for team in efs.teams
            }
    return dict(sorted(volumes.items()))


def kube_site(rp: ResolvedPlatform, resolved: ResolvedSite, handoff: pulumi.Output[Any], secrets: Secrets) -> KubeSite:
    """The Kubernetes layer's view of an AWS site: its cluster (from the cloud layer's handoff), its file
    systems' volumes, and the AWS controllers it runs."""
    site = _site(resolved)
    name = names.site_name(rp, site)
    config = kubeconfig(name, handoff.apply(lambda h: h["endpoint"]), handoff.apply(lambda h: h["certificateAuthority"]), site.region)
    layout = storage_layout(rp, site)
    volumes = _handoff_volumes(handoff, layout)
    return KubeSite(
        kube=k8s.Provider(f"{site.name}-k8s", kubeconfig=config, enable_server_side_apply=True),
        volumes=volumes,
        releases=tuple(controller_releases(rp, site)),
    )
