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
        "prometheus-yet-another-cloudwatch-exporter",  # FSx/EFS throughput from CloudWatch (alicerce.emit.kube.cloud_metrics)
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
    # dc1's hosts own the driver (nodeSoftware.gpuDriver: host, installed by the nvidia_driver role); the toolkit is the
    # host's everywhere off the node image: the operator installs neither
    assert rp.site("dc1").software.gpu_driver == "host"
    assert dc1["driver"] == {"enabled": False} and dc1["toolkit"] == {"enabled": False}
    assert "config" not in dc1["devicePlugin"]  # no time-sliced pool on-prem
    # the host toolkit ignores NVIDIA_VISIBLE_DEVICES from unprivileged pods: GPUs are handed over as volume mounts
    assert dc1["devicePlugin"]["env"] == [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]
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
        # volume sources of deploy-time file systems come from the created FSx/EFS resources, as the cloud layer hands
        # them on (team volumes point one directory down or at the team's access point, or are read-only)
        volumes = result.outputs["handoff"][site]["volumes"] if site == "aws" else {}
        canonical = functools.partial(json.dumps, sort_keys=True)
        assert sorted(map(canonical, applied)) == sorted(map(canonical, cluster_objects(rp, site, volumes)))
        if site == "aws":
            drivers = {tier: v["csi"]["driver"] for tier, v in volumes.items()}
            assert drivers == {"datasets": "fsx.csi.aws.com", "checkpoints": "fsx.csi.aws.com", "home": "efs.csi.aws.com"}
            assert all(v["csi"]["volumeHandle"].startswith("fs-") for v in volumes.values())
        kueue = result.named(f"{site}-objects-kueue")
        assert {o["kind"] for o in kueue.inputs["objs"]} == {"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass"}
        runtimes = result.named(f"{site}-objects-training-operator")
        assert {o["kind"] for o in runtimes.inputs["objs"]} == {"ClusterTrainingRuntime"}
        assert f"{site}-operators-training-operator" in runtimes.depends_on
        assert f"{site}-operators-kueue" in kueue.depends_on and f"{site}-objects-core" in kueue.depends_on
    nics = result.named("dc1-objects-network-operator")
    assert [o["kind"] for o in nics.inputs["objs"]] == ["NicClusterPolicy"]
    assert "dc1-operators-network-operator" in nics.depends_on
    # the gpu operator's ServiceMonitor needs the monitoring CRDs, the charts need the cluster's nodes
    assert "aws-operators-kube-prometheus-stack" in result.named("aws-operators-gpu-operator").depends_on
    # and KubeRay's (review obsreview20 F1)
    for site in ("aws", "dc1"):
        assert f"{site}-operators-kube-prometheus-stack" in result.named(f"{site}-operators-kuberay-operator").depends_on
    assert "aws-addons-coredns" in result.named("aws-operators-kueue").depends_on
    # the Network Operator after the GPU Operator, whose Node Feature Discovery labels the adapters
    assert "dc1-operators-gpu-operator" in result.named("dc1-operators-network-operator").depends_on


def _team_volumes(result: Any, tier: str) -> dict[str, dict[str, Any]]:
    """The PersistentVolumes of a tier's claims in team namespaces, by namespace/claim."""
    applied = [o for r in result.children("aws-objects") for o in r.inputs["objs"]]
    return {
        f"{o['spec']['claimRef']['namespace']}/{o['spec']['claimRef']['name']}": o["spec"]
        for o in applied
        if o["kind"] == "PersistentVolume"
        and o["metadata"]["labels"]["alicerce.dev/storage-tier"] == tier
        and o["spec"]["claimRef"]["namespace"] != "alicerce-system"
    }


def test_a_file_system_linked_to_the_data_lake_reaches_only_granted_teams_read_only_for_read_grants(prod: Any) -> None:
    """Break-it review of issue 10: the FSx file system linked to the data lake (datasets) is the lake's objects.
    research reads the whole lake, applied-ml reads curated/ only, serving has no grant on the lake: it gets
    no claim at all, and nobody mounts it read-write."""
    _, result = prod
    volumes = _team_volumes(result, "datasets")
    assert sorted(volumes) == ["applied-ml/datasets", "research/datasets"]
    for spec in volumes.values():
        assert spec["csi"]["readOnly"] is True and spec["accessModes"] == ["ReadOnlyMany"]
    mountname = result.outputs["handoff"]["aws"]["volumes"]["datasets"]["csi"]["volumeAttributes"]["mountname"]
    assert volumes["research/datasets"]["csi"]["volumeAttributes"]["mountname"] == mountname
    assert volumes["applied-ml/datasets"]["csi"]["volumeAttributes"]["mountname"] == f"{mountname}/curated"
    applied = [o for r in result.children("aws-objects") for o in r.inputs["objs"]]
    assert not [o for o in applied if o["kind"] == "Job" and o["metadata"]["name"] == "prepare-datasets"]  # read grants: nothing to make


def test_read_write_grants_on_a_linked_file_system_mount_their_prefix_read_write(tmp_path: Any) -> None:
    """A read-write grant on the lake (per-team tier linked to it) mounts the grant's prefix read-write, and the
    prepare Job makes that prefix only; a team without a grant gets nothing."""
    from alicerce.emit.kube.storage import read_only_claims, shared_volumes
    from tests.pulumi.conftest import reference, resolved

    data = reference()
    tier = next(t for t in data["storage"] if t["name"] == "datasets")
    tier.pop("teamAccess")
    team = next(t for t in data["tenancy"]["teams"] if t["name"] == "applied-ml")
    team["storageAccess"] = [
        {"tier": "data-lake", "access": "read-write", "prefix": "applied-ml/"},
        {"tier": "data-lake", "prefix": "curated/"},
    ]
    rp = resolved(data, "prod", tmp_path)
    root = {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1", "volumeAttributes": {"dnsname": "d", "mountname": "m"}}}
    objs = [
        o
        for o in shared_volumes(rp, "aws", {"datasets": root})
        if o["metadata"].get("labels", {}).get("alicerce.dev/storage-tier") == "datasets"
    ]
    pvs = {
        f"{o['spec']['claimRef']['namespace']}/{o['spec']['claimRef']['name']}": o["spec"] for o in objs if o["kind"] == "PersistentVolume"
    }
    assert sorted(pvs) == ["alicerce-system/datasets-root", "applied-ml/datasets", "applied-ml/datasets-2", "research/datasets"]
    assert pvs["applied-ml/datasets"]["csi"]["volumeAttributes"]["mountname"] == "m/applied-ml"
    assert "readOnly" not in pvs["applied-ml/datasets"]["csi"] and pvs["applied-ml/datasets"]["accessModes"] == ["ReadWriteMany"]
    assert pvs["applied-ml/datasets-2"]["csi"]["readOnly"] is True and pvs["research/datasets"]["csi"]["readOnly"] is True
    (job,) = [o for o in objs if o["kind"] == "Job"]
    assert job["spec"]["template"]["spec"]["containers"][0]["command"][2].endswith("mkdir -p /fs/applied-ml && chmod 1777 /fs/applied-ml")
    assert "datasets" not in read_only_claims(rp, "aws") and "datasets-2" in read_only_claims(rp, "aws")


@covers("aws:efs/accessPoint:AccessPoint")
def test_each_team_mounts_its_own_efs_access_point(prod: Any) -> None:
    """Per-team directories on EFS are access points (the driver's <fs-id>::<access-point-id> handle), each rooted
    at the team's directory, not a path any pod could change."""
    _, result = prod
    points = {r.inputs["rootDirectory"]["path"]: r for r in result.of_type("aws:efs/accessPoint:AccessPoint")}
    assert sorted(points) == ["/teams/applied-ml", "/teams/research", "/teams/serving"]
    # each created for, and only open to, the team's own POSIX identity (tests/pulumi/test_aws.py checks the ids)
    assert all(p.inputs["rootDirectory"]["creationInfo"]["permissions"] == "0770" for p in points.values())
    volumes = _team_volumes(result, "home")
    fs = result.outputs["handoff"]["aws"]["volumes"]["home"]["csi"]["volumeHandle"]
    for claim, spec in volumes.items():
        handle = spec["csi"]["volumeHandle"]
        assert handle.startswith(f"{fs}::fsap-"), (claim, handle)
    assert volumes["serving-canary/home"]["csi"]["volumeHandle"] == volumes["serving/home"]["csi"]["volumeHandle"]
