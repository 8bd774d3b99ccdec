"""The Kubernetes layer as the program declares it: pinned charts, values per target, CRDs first."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from alicerce.emit.kube.objects import cluster_objects
from tests.pulumi.conftest import covers

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pulumi_aws warns about its own deprecated classes on import


def charts(result: Any, site: str) -> dict[str, Any]:
    prefix = f"{site}-operators-"
    return {r.name[len(prefix) :]: r for r in result.of_type("kubernetes:helm.sh/v4:Chart") if r.name.startswith(prefix)}


@covers("kubernetes:helm.sh/v4:Chart", "alicerce:operators:Operators", "kubernetes:core/v1:Namespace")
def test_charts_are_pinned_to_the_catalog(prod: Any) -> None:
    rp, result = prod
    aws, dc1 = charts(result, "aws"), charts(result, "dc1")
    assert set(aws) == {
        "kube-prometheus-stack",
        "gpu-operator",
        "aws-efa-k8s-device-plugin",
        "aws-fsx-csi-driver",
        "kueue",
        "kuberay-operator",
        "training-operator",
        "cluster-autoscaler",  # the AWS controllers (alicerce.targets.aws.components.controllers)
        "aws-load-balancer-controller",
    }
    assert set(dc1) == {"kube-prometheus-stack", "gpu-operator", "network-operator", "kueue", "kuberay-operator", "training-operator"}
    for key, chart in {**aws, **dc1}.items():
        pinned = rp.charts[key]
        assert chart.inputs["version"] == pinned.version
        if pinned.repository.startswith("oci://"):
            assert chart.inputs["chart"] == f"{pinned.repository}/{pinned.chart}"
        else:
            assert chart.inputs["repositoryOpts"]["repo"] == pinned.repository and chart.inputs["chart"] == pinned.chart
    assert aws["kueue"].inputs["version"] == "0.19.2" and aws["gpu-operator"].inputs["version"] == "v26.3.3"
    namespaces = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"]
        for r in result.children("aws-operators")
        if r.type == "kubernetes:core/v1:Namespace"
    }
    assert namespaces["gpu-operator"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert "aws-operators-ns-gpu-operator" in aws["gpu-operator"].depends_on


def test_gpu_operator_values_per_target(prod: Any) -> None:
    rp, result = prod
    aws = charts(result, "aws")["gpu-operator"].inputs["values"]
    assert aws["driver"] == {"enabled": False} and aws["toolkit"] == {"enabled": False}  # the EKS NVIDIA AMI ships both
    assert aws["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    assert aws["mig"]["strategy"] == "mixed"
    assert "replicas: 4" in aws["devicePlugin"]["config"]["data"]["infer-l4"]
    dc1 = charts(result, "dc1")["gpu-operator"].inputs["values"]
    # dc1 leaves the driver to the operator (nodeSoftware.gpuDriver defaults to operator); the toolkit is the host's
    assert rp.site("dc1").software.gpu_driver == "operator"
    assert dc1["driver"]["enabled"] is True and dc1["toolkit"]["enabled"] is False
    assert dc1["driver"]["version"] == rp.versions.driverVersion == "580.173.02"
    assert dc1["driver"]["kernelModuleType"] == "open"
    assert dc1["driver"]["rdma"] == {"enabled": False}  # DMA-BUF: no host MOFED/DOCA stack is declared
    assert "devicePlugin" not in dc1  # no time-sliced pool on-prem
    # every operand reaches every GPU pool: the pools' taints are tolerated
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in dc1["daemonsets"]["tolerations"]


def test_efa_device_plugin_runs_on_efa_pools_only(prod: Any) -> None:
    _, result = prod
    values = charts(result, "aws")["aws-efa-k8s-device-plugin"].inputs["values"]
    # the chart builds its node affinity from supportedInstanceLabels (it has no affinity value)
    assert values["supportedInstanceLabels"] == {"keys": ["alicerce.dev/pool"], "values": ["train-p5"]}
    assert "affinity" not in values
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]


@covers("kubernetes:yaml/v2:ConfigGroup", "alicerce:objects:ClusterObjects")
def test_objects_are_applied_from_the_pure_function_and_crds_come_first(prod: Any) -> None:
    rp, result = prod
    for site in ("aws", "dc1"):
        applied = [o for r in result.children(f"{site}-objects") for o in r.inputs["objs"]]
        # volume sources of deploy-time file systems come from the created FSx/EFS resources: the root volumes of
        # alicerce-system hold them as created (team volumes point one directory down, or are read-only)
        volumes = {
            o["metadata"]["labels"]["alicerce.dev/storage-tier"]: {"csi": {k: v for k, v in o["spec"]["csi"].items() if k != "readOnly"}}
            for o in sorted(applied, key=lambda o: o.get("spec", {}).get("claimRef", {}).get("namespace") == "alicerce-system")
            if o["kind"] == "PersistentVolume" and "csi" in o["spec"]
        }
        canonical = functools.partial(json.dumps, sort_keys=True)
        assert sorted(map(canonical, applied)) == sorted(map(canonical, cluster_objects(rp, site, volumes)))
        if site == "aws":
            drivers = {tier: v["csi"]["driver"] for tier, v in volumes.items()}
            assert drivers == {"datasets": "fsx.csi.aws.com", "checkpoints": "fsx.csi.aws.com", "home": "efs.csi.aws.com"}
            assert all(v["csi"]["volumeHandle"].startswith("fs-") for v in volumes.values())
        kueue = result.named(f"{site}-objects-kueue")
        assert {o["kind"] for o in kueue.inputs["objs"]} == {"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass"}
        runtimes = result.named(f"{site}-objects-training-operator")
        assert [o["kind"] for o in runtimes.inputs["objs"]] == ["ClusterTrainingRuntime"]
        assert f"{site}-operators-training-operator" in runtimes.depends_on
        assert f"{site}-operators-kueue" in kueue.depends_on and f"{site}-objects-core" in kueue.depends_on
    nics = result.named("dc1-objects-network-operator")
    assert [o["kind"] for o in nics.inputs["objs"]] == ["NicClusterPolicy"]
    assert "dc1-operators-network-operator" in nics.depends_on
    # the gpu operator's ServiceMonitor needs the monitoring CRDs, the charts need the cluster's nodes
    assert "aws-operators-kube-prometheus-stack" in result.named("aws-operators-gpu-operator").depends_on
    assert "aws-addons-coredns" in result.named("aws-operators-kueue").depends_on
    # the Network Operator after the GPU Operator, whose Node Feature Discovery labels the adapters
    assert "dc1-operators-gpu-operator" in result.named("dc1-operators-network-operator").depends_on
