"""The Network Operator's NicClusterPolicy of an on-prem site: RDMA adapters and secondary networks for pods.

The hosts carry the RDMA driver stack (rdma-core or DOCA-OFED, installed by the `rdma` role), so
the policy deploys no driver container (no ``ofedDriver``; the operator then marks the nodes ready
for its other components at once). It runs the RDMA shared device plugin, which offers the
adapters of each fabric technology to pods as one extended resource (``rdma/ib``, ``rdma/roce``).

No secondary pod networks: the spec gives pods no address ranges on the fabric, so Multus, the CNI
plugins, NV-IPAM and the IPoIB CNI would run with no IPPool and no IPoIBNetwork/MacvlanNetwork to
serve; they are not deployed. Pods reach the adapters through the device plugin and use RDMA
verbs (NCCL's IB transport), bootstrapping over the primary pod network.
"""

from __future__ import annotations

import json
from typing import Any

from alicerce.emit.kube.common import MANAGED, POOL_LABEL, RDMA_PODS_PER_NODE, held_tolerations, host_rdma_pools, tolerate
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool

NIC_CLUSTER_POLICY = "nic-cluster-policy"  # the only name the operator reconciles
NETWORK_API = "mellanox.com/v1alpha1"
MELLANOX_VENDOR = "15b3"  # PCI vendor id of NVIDIA (Mellanox) adapters
# technology -> netlink link type the RDMA shared device plugin selects adapters by
LINK_TYPES = {"infiniband": "infiniband", "roce": "ether"}


def _resource(pool: ResolvedPool) -> str:
    assert pool.rdma is not None, f"pool {pool.name} has no RDMA attachment"
    return pool.rdma.resource


def site_fabrics(rp: ResolvedPlatform, site_name: str) -> dict[str, list[ResolvedPool]]:
    """Host RDMA technologies of a site (InfiniBand, RoCE) -> the pools on them."""
    out: dict[str, list[ResolvedPool]] = {}
    for pool in host_rdma_pools(rp.site(site_name).pools):
        out.setdefault(pool.rdma.technology if pool.rdma else "", []).append(pool)
    return out


def promised_rdma(rp: ResolvedPlatform, site_name: str, pool: ResolvedPool) -> dict[str, str]:
    """The RDMA resource a node of ``pool`` offers once the NicClusterPolicy's device plugin runs (acceptance waits for it).

    The shared device plugin advertises ``rdmaHcaMax`` units of its resource on every node it selects.
    """
    policy = nic_cluster_policy(rp, site_name)
    if policy is None or pool not in host_rdma_pools(rp.site(site_name).pools):
        return {}
    return {_resource(pool): str(RDMA_PODS_PER_NODE)}


def nic_cluster_policy(rp: ResolvedPlatform, site_name: str) -> dict[str, Any] | None:
    """The NicClusterPolicy of an on-prem site with RDMA pools; None where the site needs none."""
    technologies = site_fabrics(rp, site_name)
    images = rp.network_components
    if not technologies or not rp.spec.operators.network_operator.enabled or images is None:
        return None  # a pinned release without known images is refused by validation (AL253)

    def image(name: str) -> dict[str, Any]:
        return {"image": name, "repository": images.repository, "version": images.version, "imagePullSecrets": []}

    config = {
        "configList": [
            {
                # the plugin advertises rdma/<resourceName>: the resource resolve decided pods request
                "resourceName": _resource(pools[0]).removeprefix("rdma/"),
                "rdmaHcaMax": RDMA_PODS_PER_NODE,
                "selectors": {"vendors": [MELLANOX_VENDOR], "linkTypes": [LINK_TYPES[tech]]},
            }
            for tech, pools in sorted(technologies.items())
        ]
    }
    rdma_pools = sorted(pool.name for pools in technologies.values() for pool in pools)
    return {
        "apiVersion": NETWORK_API,
        "kind": "NicClusterPolicy",
        "metadata": {"name": NIC_CLUSTER_POLICY, "labels": dict(MANAGED)},
        "spec": {
            # the device plugin and CNI agents run on the RDMA pools only, tolerating their taints
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": rdma_pools}]}]
                }
            },
            # and the acceptance taint a new node joins with: acceptance waits for the rdma/* resource this plugin offers
            "tolerations": tolerate([rp.pool(name) for name in rdma_pools])
            + held_tolerations(rp.site(site_name).capabilities.nodes_by_ansible),
            "rdmaSharedDevicePlugin": {**image("k8s-rdma-shared-dev-plugin"), "config": json.dumps(config, indent=2, sort_keys=True)},
        },
    }
