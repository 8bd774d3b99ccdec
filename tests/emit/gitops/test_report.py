"""reports/PLATFORM.md, the monitoring/ files and the bill of materials (`alicerce versions`), issue 13 items 1 and 7."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.emit.bom import bill_of_materials
from alicerce.emit.gitops.monitoring import emit_monitoring
from alicerce.emit.gitops.report import diagram, platform_report
from alicerce.emit.kube.monitoring import monitoring_objects
from alicerce.plan.platform import plan_platform
from alicerce.targets.aws.target import TARGET as AWS
from tests.emit.gitops.helpers import reference, variant

PROMTOOL = shutil.which("promtool")


def test_the_report_reads_alone_in_a_pull_request() -> None:
    rp = reference("prod")
    text = platform_report(rp)
    assert text.count("```mermaid") == 1
    for pool in rp.pools:
        assert f'{"pool_" + pool.name.replace("-", "_")}["{pool.name}<br/>' in text
    for team in rp.teams:
        assert f"ClusterQueue {team.name}" in text
    assert 'fabric_ib_dc1{{"fabric ib-dc1<br/>infiniband"}}' in text and "pool_onprem_h100 --- fabric_ib_dc1" in text
    assert "datasets<br/>fsx-lustre" in text and "dc1-lustre<br/>lustre" in text
    total = plan_platform(rp).to_json()["monthly_cost_usd"]
    assert f"**${total:,.0f}**" in text
    pins = bill_of_materials(rp)
    assert f"{sum(p.pinned for p in pins)} pinned, {sum(not p.pinned for p in pins)} unpinned" in text
    assert "| eks-addon | eks-pod-identity-agent | **unpinned** |" in text


def test_the_mermaid_ids_are_safe_and_every_edge_names_declared_nodes() -> None:
    lines = diagram(reference("prod"))
    declared = {line.split("[")[0].split("(")[0].split("{")[0].strip() for line in lines if "[" in line or "((" in line or "{{" in line}
    for line in lines:
        for arrow in (" --- ", " -.- ", " --> "):
            if arrow in line:
                left, right = line.strip().split(arrow)
                right = right.split("| ")[-1]
                assert left in declared and right in declared, line


def test_monitoring_files_are_the_rules_and_dashboard_of_the_in_cluster_layer() -> None:
    rp = reference("prod")
    files = emit_monitoring(rp)
    for site in ("aws", "dc1"):
        rule, board, *_ = monitoring_objects(rp, site)  # then PodMonitors and ScrapeConfigs
        assert yaml.safe_load(files[f"{site}/rules.yaml"]) == {"groups": rule["spec"]["groups"]}
        assert json.loads(files[f"{site}/dashboards/gpu-platform.json"]) == json.loads(board["data"]["gpu-platform.json"])


def test_sites_without_the_operator_still_get_rule_files() -> None:
    def no_operator(data: dict[str, Any]) -> None:
        data["operators"]["monitoring"] = {"enabled": False}
        for team in data["tenancy"]["teams"]:  # a budget guard reads the in-cluster Prometheus (AL363)
            team.get("budget", {}).pop("onExhausted", None)

    rp = variant(no_operator)
    assert monitoring_objects(rp, "dc1") == []
    files = emit_monitoring(rp)
    assert yaml.safe_load(files["dc1/rules.yaml"])["groups"]


@pytest.mark.skipif(PROMTOOL is None and os.environ.get("CI") != "true", reason="promtool missing (make tools installs it)")
def test_promtool_accepts_the_rule_files(tmp_path: Path) -> None:
    assert PROMTOOL is not None, "promtool is required under CI"
    for path, text in emit_monitoring(reference("prod")).items():
        if path.endswith("rules.yaml"):
            (tmp_path / "rules.yaml").write_text(text)
            done = subprocess.run([PROMTOOL, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)
            assert done.returncode == 0, done.stdout + done.stderr


def test_the_bill_of_materials_says_where_every_pin_comes_from() -> None:
    every = bill_of_materials(reference("prod"))
    pins = {(p.kind, p.component.split(" ")[0]): p for p in every}
    assert pins[("kubernetes", "kubernetes")].source.startswith("catalog bill of materials")
    assert pins[("driver", "nvidia-driver-branch")].source == "spec (versions.driverBranch)"  # platform.yaml pins 580
    assert pins[("chart", "gpu-operator")].version == reference("prod").charts["gpu-operator"].version
    assert pins[("eks-addon", "coredns")].source.startswith("catalog EKS add-on table for Kubernetes")
    unpinned = {p.component for p in every if not p.pinned}
    assert AWS.addons is not None
    # AWS picks these at deploy time (no per-minor table), the AMI ships its driver, distributions ship rdma-core
    assert {"eks-pod-identity-agent", "aws-ebs-csi-driver", AWS.addons.by_storage["efs"], "nvidia-driver", "rdma-core"} <= unpinned
    assert ("ansible", "collection") in pins and pins[("ansible", "ansible-core")].pinned
    drivers = {p.sites: p.version for p in every if p.component == "nvidia-driver"}
    assert drivers == {("aws",): None, ("dc1",): reference("prod").versions.driverVersion}  # EKS AMI's own vs the pinned one


def test_a_spec_pin_overrides_the_catalog_and_says_so() -> None:
    def pin(data: dict[str, Any]) -> None:
        data["versions"] |= {"kubernetes": "1.34", "eksAddons": {"eks-pod-identity-agent": "v1.3.8-eksbuild.2"}}

    pins = {p.component: p for p in bill_of_materials(variant(pin))}
    assert (pins["kubernetes"].version, pins["kubernetes"].source) == ("1.34", "spec (versions.kubernetes)")
    agent = pins["eks-pod-identity-agent"]
    assert (agent.version, agent.source) == ("v1.3.8-eksbuild.2", "spec (versions.eksAddons.eks-pod-identity-agent)")


def test_the_listed_eks_addons_are_the_ones_the_aws_target_installs() -> None:
    from alicerce.targets.aws.components.cluster import BOOT_ADDONS, WORKLOAD_ADDONS

    assert AWS.addons is not None
    assert sorted(AWS.addons.always) == sorted((*BOOT_ADDONS, *WORKLOAD_ADDONS))
