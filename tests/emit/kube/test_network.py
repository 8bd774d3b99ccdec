"""The Network Operator's NicClusterPolicy: RDMA adapters for pods on on-prem fabric pools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from alicerce.catalog import load_catalog
from alicerce.emit.kube.network import NIC_CLUSTER_POLICY, nic_cluster_policy
from alicerce.emit.kube.objects import cluster_objects, crd_owner
from alicerce.emit.kube.operators import operator_releases
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT
from tests.emit.kube.test_objects import find, platform


def with_fabric(tmp_path: Path, **onprem: Any) -> ResolvedPlatform:
    data = yaml.safe_load((ROOT / "platform.yaml").read_text())
    fabric = next(f for f in data["networks"]["fabrics"] if f["name"] == "ib-dc1")
    fabric["onprem"] = onprem
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return validated(load_file(path, "platform.yaml"), "prod")


def device_config(policy: dict[str, Any]) -> list[dict[str, Any]]:
    config: list[dict[str, Any]] = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]
    return config


def test_infiniband_site_gets_the_device_plugin_and_no_unused_components() -> None:
    rp = platform("prod")
    [policy] = find(cluster_objects(rp, "dc1"), "NicClusterPolicy")
    assert policy["metadata"]["name"] == NIC_CLUSTER_POLICY and crd_owner(policy) == "network-operator"
    spec = policy["spec"]
    assert "ofedDriver" not in spec  # the rdma role installs the host stack
    assert device_config(policy) == [
        {"rdmaHcaMax": 63, "resourceName": "ib", "selectors": {"linkTypes": ["infiniband"], "vendors": ["15b3"]}}
    ]
    assert {p.rdma.resource for p in rp.pools if p.rdma and p.site.name == "dc1"} == {"rdma/ib"}
    # no pod address ranges on the fabric in the spec: no Multus, CNI plugins, IPoIB CNI or NV-IPAM with nothing to serve
    assert "secondaryNetwork" not in spec and "nvIpam" not in spec
    images = load_catalog().versions.networkOperator
    pinned = next(r for r in images if r.version == rp.versions.networkOperator).components
    assert pinned is not None
    components = [spec["rdmaSharedDevicePlugin"]]
    assert {(c["repository"], c["version"]) for c in components} == {(pinned.repository, pinned.version)}
    # the agents run on the fabric's pools only and tolerate their taints
    rdma_pools = sorted(p.name for p in rp.pools if p.site.name == "dc1" and p.spec.fabric == "ib-dc1")
    terms = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "alicerce.dev/pool", "operator": "In", "values": rdma_pools}]}]
    taints = {(t.key, t.effect) for name in rdma_pools for t in rp.pool(name).spec.taints}
    # and the acceptance taint new nodes join with: acceptance waits for the rdma/ib this plugin offers (issue 20)
    assert {(t["key"], t["effect"]) for t in spec["tolerations"]} == taints | {("alicerce.dev/acceptance", "NoSchedule")}


def test_roce_site_selects_ethernet_links(tmp_path: Path) -> None:
    rp = with_fabric(tmp_path, technology="roce", rateGbps=400)
    policy = nic_cluster_policy(rp, "dc1")
    assert policy is not None
    assert device_config(policy)[0]["resourceName"] == "roce"
    assert device_config(policy)[0]["selectors"]["linkTypes"] == ["ether"]
    assert "secondaryNetwork" not in policy["spec"]


def test_no_policy_where_no_on_prem_fabric() -> None:
    assert not find(cluster_objects(platform("prod"), "aws"), "NicClusterPolicy")
    assert not find(cluster_objects(platform("dev"), "aws"), "NicClusterPolicy")


def test_one_node_feature_discovery_per_cluster_and_the_network_operator_after_it() -> None:
    releases = {r.key: r for r in operator_releases(platform("prod"), "dc1")}
    assert "gpu-operator" in releases
    # the GPU Operator's NFD labels the adapters; the chart's NodeFeatureRule (CRD from an NFD) is not rendered
    assert releases["network-operator"].values["nfd"] == {"enabled": False, "deployNodeFeatureRules": False}
    assert releases["network-operator"].depends_on == ("gpu-operator",)


def test_a_node_held_for_acceptance_gets_the_rdma_device_plugin_and_promises_its_resource(tmp_path: Path) -> None:
    """Issue 20 (onprem 2, item 4): a new node joins tainted alicerce.dev/acceptance and accept.yml releases it once it
    offers what its pool promises; the RDMA device plugin (and NFD, which labels the adapters it selects) must run there,
    and rdma/ib belongs in the promise where the pool has an InfiniBand or RoCE fabric."""
    from alicerce.emit.ansible.site import acceptance_promise

    rp = platform("prod")
    [policy] = find(cluster_objects(rp, "dc1"), "NicClusterPolicy")
    held = {"key": "alicerce.dev/acceptance", "operator": "Exists", "effect": "NoSchedule"}
    assert held in policy["spec"]["tolerations"]
    pool = rp.pool("onprem-h100")
    (plugin,) = device_config(policy)
    assert acceptance_promise(rp, rp.site("dc1"), pool) == {
        "nvidia.com/gpu": "8",
        f"rdma/{plugin['resourceName']}": str(plugin["rdmaHcaMax"]),
    }
    system = next(p for p in rp.site("dc1").pools if p.rdma is None)
    assert "rdma/ib" not in acceptance_promise(rp, rp.site("dc1"), system)
    # without the GPU Operator (a site of RDMA pools only) the Network Operator brings its own NFD, whose worker
    # must reach held RDMA nodes too
    from alicerce.emit.kube.operators import network_operator_values

    values = network_operator_values(rp.site("dc1"), own_nfd=True)
    assert values["nfd"]["enabled"] is True
    tolerations = values["node-feature-discovery"]["worker"]["tolerations"]
    assert held in tolerations
    # the chart's own list (values.yaml at v26.1.0) is kept: a list in values replaces it
    assert {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    with_gpu = next(r for r in operator_releases(rp, "dc1") if r.key == "network-operator").values
    assert "worker" not in with_gpu["node-feature-discovery"]  # the GPU Operator's NFD serves (and tolerates the taint)
