"""A change of a pool's GPU sharing reaches the nodes (review obsreview29 D-2).

The GPU Operator's device plugin and MIG manager read their ConfigMaps when they start and switch configs only when a
node's selecting label changes (k8s-device-plugin cmd/config-manager and mig-parted v0.14.2 cmd/nvidia-mig-manager:
their node informers act on a label change, never on the file), and the operator does not watch the ConfigMaps (GPU
Operator docs, "Updating a Time-Slicing Config Map": restart the device plugin). Edited in place, a pool's new
time-slicing replicas or MIG layout reached no node, and GPUsMissing<Pool> paged critical on every node. The operator
rolls an operand's DaemonSet when its pod template changes (gpu-operator v26.3.3 controllers/object_controls.go
isDaemonsetSpecChanged, a hash of the rendered DaemonSet), and the ConfigMap's name is in that template: the device
plugin's volume is named after devicePlugin.config.name (handleDevicePluginConfig, createConfigMapVolume), the MIG
manager's mig-parted-config volume references migManager.config.name (TransformMIGManager). So the names follow the
content, and a new content rolls the operand."""

from __future__ import annotations

from typing import Any

import yaml

from alicerce.emit.ansible.kubespray import pool_vars
from alicerce.emit.kube.operators import operator_releases
from alicerce.resolve.gpu import DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets.aws.components.autoscaler import node_labels
from tests.emit.gitops.helpers import pool, reference, variant
from tests.emit.kube.upstream import load

CLUSTER_POLICY = load("gpu-operator", "v26.3.3", "crds/nvidia.com_clusterpolicies_v1.schema.json")


def _config(rp: ResolvedPlatform, site: str, operand: str) -> dict[str, Any]:
    values = next(r for r in operator_releases(rp, site) if r.key == "gpu-operator").values
    return dict(values[operand]["config"])


def _cluster_policy_field(operand: str) -> dict[str, Any]:
    """The ClusterPolicy's spec.<operand>.config (the chart's clusterpolicy.yaml passes the value's name into it)."""
    return dict(CLUSTER_POLICY["properties"]["spec"]["properties"][operand]["properties"]["config"]["properties"])


def _mig(profiles: dict[str, int]) -> ResolvedPlatform:
    def split(data: dict[str, Any]) -> None:
        pool(data, "onprem-h100")["sharing"] = {"mode": "mig", "profiles": profiles}

    return variant(split)


def test_new_time_slicing_replicas_name_a_new_device_plugin_config() -> None:
    assert _cluster_policy_field("devicePlugin")["name"] == {"type": "string"}
    before = _config(reference("prod"), "aws", "devicePlugin")

    def eight(data: dict[str, Any]) -> None:
        pool(data, "infer-l4")["sharing"]["replicas"] = 8

    after = _config(variant(eight), "aws", "devicePlugin")
    assert "replicas: 4" in before["data"]["infer-l4"] and "replicas: 8" in after["data"]["infer-l4"]
    assert after["name"] != before["name"], "an edit in place reaches no device plugin"
    assert str(after["name"]).startswith("alicerce-device-plugin-") and len(str(after["name"])) <= 63  # a volume name
    # the data keys are what the nodes' nvidia.com/device-plugin.config label selects: they stay the pool's name
    assert set(after["data"]) == set(before["data"]) and after["default"] == before["default"] == "default"

    def other(data: dict[str, Any]) -> None:
        pool(data, "infer-l40s")["scaling"]["max"] += 1

    assert _config(variant(other), "aws", "devicePlugin") == before, "an unrelated change must not roll the plugin"


def test_a_new_mig_layout_names_a_new_mig_manager_config() -> None:
    assert _cluster_policy_field("migManager")["name"] == {"type": "string"}
    before = _config(_mig({"3g.40gb": 1, "4g.40gb": 1}), "dc1", "migManager")
    after = _config(_mig({"1g.10gb": 7}), "dc1", "migManager")
    assert "1g.10gb: 7" in after["data"]["config.yaml"]
    assert after["name"] != before["name"], "the MIG manager applies a layout at start or on a label change only"
    assert str(after["name"]).startswith("alicerce-mig-parted-") and len(str(after["name"])) <= 63
    assert _config(_mig({"4g.40gb": 1, "3g.40gb": 1}), "dc1", "migManager") == before  # the same layout, the same name


def test_an_onprem_pool_s_nodes_carry_the_label_that_selects_its_layout() -> None:
    """The MIG manager and the device plugin read a node's config from its label only: an on-prem node that kubespray
    labelled without it kept whole GPUs, and GPUsMissing<Pool> paged on every node of the pool from the first sync."""
    rp = _mig({"3g.40gb": 2})
    site = next(s for s in rp.sites if s.name == "dc1")
    h100 = next(p for p in site.pools if p.name == "onprem-h100")
    labels = pool_vars(site, h100)["node_labels"]
    assert labels[MIG_CONFIG_LABEL] in yaml.safe_load(_config(rp, "dc1", "migManager")["data"]["config.yaml"])["mig-configs"]

    def sliced(data: dict[str, Any]) -> None:
        pool(data, "onprem-h100")["sharing"] = {"mode": "time-slicing", "replicas": 2}
        pool(data, "onprem-h100")["purpose"] = "inference"

    rp = variant(sliced)
    site = next(s for s in rp.sites if s.name == "dc1")
    labels = pool_vars(site, next(p for p in site.pools if p.name == "onprem-h100"))["node_labels"]
    assert labels[DEVICE_PLUGIN_CONFIG_LABEL] in _config(rp, "dc1", "devicePlugin")["data"]
    # the AWS node groups take the same labels from the same place
    aws = next(s for s in reference("prod").sites if s.name == "aws")
    assert node_labels(next(p for p in aws.pools if p.name == "infer-l4"))[DEVICE_PLUGIN_CONFIG_LABEL] == "infer-l4"


def test_a_pool_that_stops_sharing_keeps_the_config_its_labelled_nodes_select() -> None:
    """Review obsreview32 G-1: the selecting label moves with the node's pipeline (kubespray, the EKS node group), the
    ConfigMap with the GitOps sync, in no set order. A ConfigMap that lost the key a node's label still names stopped
    the node: the device plugin's config-manager init exits ("specified config ... does not exist"), 0 GPUs and the
    site's plugin roll stalled there; mig-parted left the GPUs partitioned. Each GPU pool keeps its key, at whole GPUs
    or MIG disabled, so the old label finds a config that matches what the new rules expect."""

    def both_sliced(data: dict[str, Any]) -> None:
        pool(data, "infer-l40s")["sharing"] = {"mode": "time-slicing", "replicas": 2}

    # infer-l40s stops time-slicing (back to the reference spec), infer-l4 goes on: the plugin still has a config
    before, after = variant(both_sliced), reference("prod")
    aws = next(s for s in before.sites if s.name == "aws")
    label = node_labels(next(p for p in aws.pools if p.name == "infer-l40s"))[DEVICE_PLUGIN_CONFIG_LABEL]
    assert "timeSlicing" in _config(before, "aws", "devicePlugin")["data"][label]  # not vacuous: it was sliced
    data = _config(after, "aws", "devicePlugin")["data"]
    assert all(DEVICE_PLUGIN_CONFIG_LABEL not in p.labels for s in after.sites for p in s.pools if p.name == "infer-l40s")
    assert yaml.safe_load(data[label]) == yaml.safe_load(data["default"]) == {"version": "v1"}
    assert "timeSlicing" in data["infer-l4"]

    # the last MIG pool of dc1 drops MIG: the MIG manager keeps alicerce-onprem-h100, disabled
    was = _mig({"3g.40gb": 2})
    dc1 = next(s for s in was.sites if s.name == "dc1")
    label = pool_vars(dc1, next(p for p in dc1.pools if p.name == "onprem-h100"))["node_labels"][MIG_CONFIG_LABEL]
    configs = yaml.safe_load(_config(reference("prod"), "dc1", "migManager")["data"]["config.yaml"])["mig-configs"]
    assert configs[label] == configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
