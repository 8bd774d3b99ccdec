"""The AWS-specific controllers of an EKS cluster, as Helm releases (plain data, like the operators):
cluster-autoscaler and, where the site serves inference, the AWS Load Balancer Controller.

Their IAM roles are bound to their service accounts with EKS Pod Identity in the cloud layer
(components/identity.py), so the values carry no role ARN and no output of the cloud layer: every
value is known from the resolved platform, and the Kubernetes layer can run in its own stack.

Why cluster-autoscaler and not Karpenter: every pool is an EKS managed node group whose launch
template alicerce owns (EFA interface layout, placement group, reservation or Capacity Block
targeting); cluster-autoscaler only moves the desired size of those groups within their bounds, so
reserved capacity and Capacity Blocks work as the launch templates say, and EKS itself scales a
Capacity Block group to zero before the block ends. Karpenter (>= 1.6 for reservations and blocks,
>= 1.11 for placement groups) would replace the node groups and launch templates with its own node
classes: a redesign, not a fix. See README, "Node autoscaling".
"""

from __future__ import annotations

from typing import Any

from alicerce.emit.kube.common import system_placement
from alicerce.emit.kube.operators import Release
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.identity import serves_inference
from alicerce.targets.aws.resolve import CAPABILITIES
from alicerce.targets.aws.spec import AwsSite

CLUSTER_AUTOSCALER, LOAD_BALANCER_CONTROLLER = CAPABILITIES.cloud_controllers  # catalog chart keys
# GPU nodes take longer than CPU nodes to become ready (EFA setup, RAID0 of the instance store, the device
# plugins): give them 20 minutes before cluster-autoscaler gives up on a scale-up (its default is 15m).
MAX_NODE_PROVISION_TIME = "20m0s"


def _release(rp: ResolvedPlatform, key: str, values: dict[str, Any]) -> Release:
    chart = rp.charts[key]
    return Release(key, chart.chart, chart.repository, chart.version, "kube-system", values)


def _system_placement(rp: ResolvedPlatform, site: AwsSite) -> dict[str, Any]:
    """Controllers run on the site's system pool (rule AL320 makes every site have one)."""
    return system_placement(names.site_pools(rp, site))


def cluster_autoscaler_values(rp: ResolvedPlatform, site: AwsSite) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart (kubernetes/autoscaler charts/cluster-autoscaler values.yaml @ 9.59.0).

    Auto-discovery finds the node groups EKS tags for this cluster. The explicit GPU limits are the
    node groups' max sizes (pool max x GPUs per node) and --max-nodes-total, their sum:
    cluster-autoscaler's --gpu-total works only on GKE (config/flags/flags.go @ cluster-autoscaler-1.35.0).
    """
    pools = names.site_pools(rp, site)
    cluster = names.site_name(rp, site)
    account = names.CLUSTER_AUTOSCALER_SA[1]
    return {
        "cloudProvider": "aws",
        "awsRegion": site.region,  # IMDSv2 with hop limit 1 hides the region from pods
        "autoDiscovery": {"clusterName": cluster},
        "rbac": {"serviceAccount": {"create": True, "name": account}},
        "extraArgs": {
            "expander": "least-waste",
            "max-nodes-total": sum(max(p.spec.scaling.max, 1) for p in pools),
            "max-node-provision-time": MAX_NODE_PROVISION_TIME,
            # emptyDir and the instance-store RAID are scratch: they must not pin an idle GPU node
            "skip-nodes-with-local-storage": False,
            "balance-similar-node-groups": False,  # each pool is its own node group with its own labels
        },
        **_system_placement(rp, site),
    }


def load_balancer_controller_values(rp: ResolvedPlatform, site: AwsSite) -> dict[str, Any]:
    """Values of the aws-load-balancer-controller chart (aws/eks-charts stable/aws-load-balancer-controller values.yaml @ 3.5.0).

    Region and VPC are given, not discovered (IMDSv2 with hop limit 1 hides them from pods); the VPC
    by its Name tag, which alicerce sets, so no output of the cloud layer is needed. keepTLSSecret
    reuses the webhook certificate the chart generated on the first install (without cert-manager it
    would generate a new one at each render, changing the webhook on every `pulumi up`).
    """
    account = names.LOAD_BALANCER_CONTROLLER_SA[1]
    return {
        "clusterName": names.site_name(rp, site),
        "region": site.region,
        "vpcTags": {"Name": names.site_name(rp, site)},
        "serviceAccount": {"create": True, "name": account},
        "keepTLSSecret": True,
        **_system_placement(rp, site),
    }


def controller_releases(rp: ResolvedPlatform, site: AwsSite) -> list[Release]:
    """The AWS controllers one EKS cluster runs, installed with the operators."""
    out = [_release(rp, CLUSTER_AUTOSCALER, cluster_autoscaler_values(rp, site))]
    if serves_inference(rp, site):
        out.append(_release(rp, LOAD_BALANCER_CONTROLLER, load_balancer_controller_values(rp, site)))
    return out
