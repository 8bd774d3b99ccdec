"""What the AWS target decides: instance types, EFA attachment, placement, zones, storage services."""

from __future__ import annotations

from alicerce.catalog import Catalog
from alicerce.spec.models import AwsSite, Fabric, Networks, NodePool, ParallelFsTier, SharedNfsTier, Site, StorageTier
from alicerce.targets.base import Capabilities, PlatformEndpoint
from alicerce.targets.resolver import MountFacts, NodeSoftwareOwners, PoolPlacement, TargetResolver

RESERVED = ("capacity-reservation", "capacity-block")

CAPABILITIES = Capabilities(
    provider="aws",
    label="AWS",
    pool_section="aws",
    pool_section_hint="add aws: {instanceType: ...}",
    nodes_by_ansible=False,
    # the EKS AL2023 NVIDIA AMIs ship the driver, the container toolkit and the EFA module (EKS user guide, "NVIDIA AMIs")
    gpu_stack_on_image=True,
    storage={"parallel-fs": "fsx-lustre", "shared-nfs": "efs", "object": "s3", "block": "ebs", "local-nvme": "instance-store"},
    default_storage_class={
        "name": "gp3-encrypted",
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", "encrypted": "true"},
    },
    managed_control_plane=True,
)
# the EKS Pod Identity agent listens on this link-local address on every node (EKS user guide, "EKS Pod Identity agent")
POD_IDENTITY_AGENT = PlatformEndpoint(
    "eks-pod-identity-agent", ("169.254.170.23/32",), (("TCP", 80),), "AWS credentials for workload identity (EKS Pod Identity agent)"
)


def _site(site: Site, networks: Networks) -> Site:
    return site.model_copy(update={"service_cidr": site.service_cidr or networks.service_cidr})


def _pool(pool: NodePool, site: Site, fabric: Fabric | None, catalog: Catalog) -> PoolPlacement:
    if not isinstance(site, AwsSite) or pool.aws is None:
        return PoolPlacement()
    instance = catalog.instance(pool.aws.instance_type)
    efa = instance.efa.maxInterfaces if instance is not None and instance.efa is not None and fabric is not None else 0
    reserved = pool.aws.capacity_type in RESERVED
    placement = pool.aws.placement_group if pool.aws.placement_group is not None else bool(efa) and not reserved
    return PoolPlacement(
        instance=instance,
        rdma_technology="efa" if efa else None,
        rdma_interfaces=efa,
        placement_group=placement,
        # EFA traffic does not cross zones: an EFA pool lives in one (rule AL212 asks for it at multi-zone sites)
        zone=pool.aws.zone or (site.zones[0] if efa else None),
    )


def _implementation(tier: StorageTier) -> str | None:
    return CAPABILITIES.storage[tier.class_]


def _mount(tier: StorageTier, implementation: str) -> MountFacts | None:
    # FSx and EFS are mounted by their CSI drivers; the options are the ones those drivers document
    if implementation == "fsx-lustre" and isinstance(tier, ParallelFsTier):
        return MountFacts("fsx-lustre", "", ("flock",))
    if implementation == "efs" and isinstance(tier, SharedNfsTier):
        return MountFacts("efs", "", ("tls",))
    return None


def _software(site: Site) -> NodeSoftwareOwners:
    # the EKS NVIDIA AMI carries driver and toolkit; kube-prometheus-stack's DaemonSet is the node exporter
    return NodeSoftwareOwners(gpu_driver="node-image", node_exporter="cluster")


def _endpoints(site: Site) -> tuple[PlatformEndpoint, ...]:
    # the EKS API is reached on 443, which every team namespace may already use (HTTPS egress)
    return (POD_IDENTITY_AGENT,)


RESOLVER = TargetResolver(
    capabilities=CAPABILITIES,
    site=_site,
    pool=_pool,
    implementation=_implementation,
    mount=_mount,
    software=_software,
    endpoints=_endpoints,
)
