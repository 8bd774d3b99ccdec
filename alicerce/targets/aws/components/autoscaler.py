"""What cluster-autoscaler needs to know of an AWS pool it may scale from zero: the pool's node labels and the
node-template tags of its Auto Scaling group (keys from alicerce.targets.aws.resolve.template_tag, which rule AL300
checks against the Auto Scaling tag limits for the spec's labels and taints). Pure functions."""

from __future__ import annotations

from alicerce.resolve.model import ResolvedPool
from alicerce.targets.aws.resolve import eks_label_problem, template_tag

# cluster-autoscaler's AWS provider treats nodes with this label as GPU nodes (GPULabel in
# cloudprovider/aws/aws_cloud_provider.go @ cluster-autoscaler-1.35.0): a new node whose GPUs the
# device plugin has not advertised yet counts as not ready instead of triggering another scale-up.
GPU_NODE_LABEL = "k8s.amazonaws.com/accelerator"


GIB = 2**30
MIN_ROOT_VOLUME_GIB = 20


def root_volume_gib(pool: ResolvedPool) -> int:
    """The root volume of a pool's nodes in GiB (the spec's size, rounded up; at least the AMI's 20)."""
    assert pool.spec.aws is not None, f"pool {pool.name} is not an AWS pool"
    return max(MIN_ROOT_VOLUME_GIB, -(-pool.spec.aws.root_volume // GIB))


def ephemeral_storage(pool: ResolvedPool) -> str:
    """What backs a node's ephemeral storage (kubelet and containerd state): the instance-store NVMe RAID0 array
    where the instance has one (nodeadm localStorage RAID0, sizes in GB), else the root volume."""
    nvme = pool.instance.localNvme if pool.instance is not None else None
    if nvme is not None:
        return f"{nvme.count * nvme.sizeGB}G"
    return f"{root_volume_gib(pool)}Gi"


def node_labels(pool: ResolvedPool) -> dict[str, str]:
    """Every label a node of the pool carries: the resolved pool's (its own, its GPU configuration's) and the accelerator.

    The platform's labels (metadata.labels, cost center) are tags on every resource, and node labels only where
    EKS takes them as node-group labels (alicerce.targets.aws.resolve.eks_label_problem): a key over 63 characters
    or an empty value would make CreateNodegroup fail for every pool. The pool's own labels are kept as written;
    rule AL310 refuses the ones EKS would.
    """
    own = pool.spec.labels
    labels = {k: v for k, v in pool.labels.items() if k in own or eks_label_problem(k, v) is None}
    if pool.gpu is not None:
        labels[GPU_NODE_LABEL] = pool.gpu.id
    return dict(sorted(labels.items()))


def autoscaler_template_tags(pool: ResolvedPool) -> dict[str, str]:
    """The node-template tags of a pool's Auto Scaling group: what a node of the pool offers and carries.

    EKS copies no node-group tag to the Auto Scaling group (EKS user guide, "Create a managed node
    group": tags are not propagated), so these go on the group itself. Resources: the pool's GPU units
    as the device plugin advertises them (time-sliced replicas, MIG instances) and its EFA interfaces
    (cluster-autoscaler derives neither: it knows only the physical GPU count of an instance type), and the
    node's ephemeral storage.
    """
    tags = {template_tag("label", k): v for k, v in node_labels(pool).items()}
    for taint in pool.spec.taints:
        tags[template_tag("taint", taint.key)] = f"{taint.value}:{taint.effect}"
    if pool.gpu_units is not None:
        tags |= {template_tag("resources", r): str(n) for r, n in pool.gpu_units.resources.items()}
    if pool.rdma is not None and pool.efa_interfaces:
        tags[template_tag("resources", pool.rdma.resource)] = str(pool.efa_interfaces)
    # nor a node's ephemeral storage: without the tag a pod that requests some never scales a pool up from zero
    # (cloudprovider/aws/aws_manager.go extractAllocatableResourcesFromAsg reads resources/ephemeral-storage)
    tags[template_tag("resources", "ephemeral-storage")] = ephemeral_storage(pool)
    return dict(sorted(tags.items()))
