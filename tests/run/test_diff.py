"""`alicerce diff` classification (issue 13, item 3): each destructive case, a pure resize, a quota move, no change.

Every case diffs the reference platform's prod environment against a variant of it, through the
real resolve, planner and Pulumi program under the mock engine.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import pytest

from alicerce.catalog.replacements import load_replacements
from alicerce.run.diff import EnvironmentDiff, diff_environment, diff_resources, planned, render_markdown
from alicerce.run.preview import PlannedResource
from tests.emit.gitops.helpers import pool, reference, variant

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@functools.cache
def base_plan() -> list[PlannedResource]:
    return planned(reference("prod"))


def diff(change: Callable[[dict[str, Any]], None]) -> EnvironmentDiff:
    """prod of the reference platform against prod with ``change`` applied (the base plan computed once)."""
    old, new = reference("prod"), variant(change)
    return diff_environment("prod", old, new, plan=lambda rp: base_plan() if rp is old else planned(rp))


def actions(result: EnvironmentDiff) -> dict[tuple[str, str], str]:
    return {(r.type, r.name): r.action for r in result.resources}


def test_no_change_is_no_change() -> None:
    result = diff(lambda data: None)
    assert result.status == "unchanged" and result.empty
    assert (result.resources, result.pools, result.quotas, result.objects, result.destructive) == ([], [], [], [], [])
    assert result.cost_delta == 0
    assert "No change" in render_markdown([result], "main → branch")


def test_a_pure_resize_grows_capacity_and_cost_and_replaces_nothing() -> None:
    def grow(data: dict[str, Any]) -> None:
        pool(data, "infer-l4")["scaling"] = {"min": 2, "max": 20}

    result = diff(grow)
    [change] = result.pools
    assert (change.pool, change.change, change.gpu_units_delta) == ("infer-l4", "resized", 16)  # 4 more nodes of 1 GPU sliced 4 ways
    assert result.gpu_units_delta == 16 and result.cost_delta is not None and result.cost_delta > 0
    assert actions(result)[("aws:eks/nodeGroup:NodeGroup", "aws-pool-infer-l4-ng")] == "update"
    assert result.destructive == [] and not [r for r in result.resources if r.action in ("replace", "delete")]
    text = render_markdown([result], "main → branch")
    assert "| infer-l4 | aws | resized | 64 → 80 (+16) | nodes 1–16 → 2–20 |" in text and "CAUTION" not in text
    # the minimum grows 1 → 2: EKS refuses a minimum above the current desired size, which Pulumi does not set
    [warning] = result.warnings
    assert "minimum 1 → 2" in warning and "desiredSize=2" in warning and "[!WARNING]" in text


def test_a_larger_maximum_alone_warns_of_nothing() -> None:
    def taller(data: dict[str, Any]) -> None:
        pool(data, "infer-l4")["scaling"] = {"min": 1, "max": 20}

    result = diff(taller)
    assert actions(result)[("aws:eks/nodeGroup:NodeGroup", "aws-pool-infer-l4-ng")] == "update"
    assert result.warnings == [] and "[!WARNING]" not in render_markdown([result], "main → branch")


def test_a_quota_move_changes_quotas_and_the_budget_split_only() -> None:
    def move(data: dict[str, Any]) -> None:
        teams = {t["name"]: t for t in data["tenancy"]["teams"]}
        teams["research"]["quotas"][0]["gpus"] = 64
        teams["applied-ml"]["quotas"][0]["gpus"] = 64

    result = diff(move)
    moved = {(q.team, q.pool): (q.units_before, q.units_after) for q in result.quotas}
    assert moved == {("research", "train-p5"): (96, 64), ("applied-ml", "train-p5"): (32, 64)}
    assert result.pools == [] and result.gpu_units_delta == 0 and result.destructive == []
    # a team's budget is split over its sites as the plan's busiest month at each plus the rest by what its quota there
    # is worth (review obsreview9 G2): research's aws quota is worth less, so the budget rules of
    # its sites' PrometheusRules move with it
    changed = {(o.kind, o.name) for o in result.objects}
    assert {kind for kind, _ in changed} == {"ClusterQueue", "ResourceQuota", "PrometheusRule"}, changed
    assert {r.type for r in result.resources} == {"kubernetes:yaml/v2:ConfigGroup"}  # nothing on AWS changes


def test_an_fsx_deployment_type_change_replaces_the_file_system_and_loses_its_data() -> None:
    def persistent_1(data: dict[str, Any]) -> None:
        next(t for t in data["storage"] if t["name"] == "datasets")["aws"]["deploymentType"] = "PERSISTENT_1"

    result = diff(persistent_1)
    fsx = next(r for r in result.resources if r.name == "aws-storage-datasets")
    assert fsx.action == "replace" and "deploymentType" in fsx.properties and fsx.destructive
    assert "every file" in (fsx.data_loss or "")
    assert any("FSx deployment type PERSISTENT_2 → PERSISTENT_1" in d for t in result.storage for d in t.details)
    text = render_markdown([result], "main → branch")
    assert "[!CAUTION]" in text and "**replace** `aws:fsx/lustreFileSystem:LustreFileSystem` `aws-storage-datasets`" in text


def _move_training_to_zone_b(data: dict[str, Any], *, file_systems: bool) -> None:
    pool(data, "train-p5")["aws"]["zone"] = "us-east-1b"
    if file_systems:  # the explicit acknowledgement: the tiers' own zones change (rule AL317 keeps them written down)
        for tier in data["storage"]:
            if tier["name"] in ("datasets", "checkpoints"):
                tier["aws"]["zone"] = "us-east-1b"


def test_moving_a_training_pool_alone_never_moves_its_file_systems() -> None:
    """The FSx zone is pinned in the spec (AL317), so a pool moved to another zone no longer takes the file systems
    with it: validate points at the pool (AL293) instead of `pulumi up` replacing both file systems."""
    from alicerce.spec.errors import SpecInvalid

    with pytest.raises(SpecInvalid) as raised:
        variant(lambda data: _move_training_to_zone_b(data, file_systems=False))
    assert {e.rule for e in raised.value.errors} == {"AL293"}


def test_moving_a_training_pool_and_its_file_systems_replaces_all_of_them_and_says_what_is_lost() -> None:
    result = diff(lambda data: _move_training_to_zone_b(data, file_systems=True))
    group = next(r for r in result.resources if r.name == "aws-pool-train-p5-ng")
    assert (group.action, group.properties) == ("replace", ("subnetIds",)) and group.destructive
    assert "instance-store scratch" in (group.data_loss or "")
    # review obsreview29 N-3: the group keeps its name, so the engine must delete the old one first (EKS refuses a second
    # group of one name, pulumi/pulumi-eks#294); the diff says the pool is empty in between
    assert "deleted before its replacement is created" in (group.data_loss or "")
    assert [p.change for p in result.pools] == ["changed"] and result.gpu_units_delta == 0
    moved = {r.name: r for r in result.resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem"}
    assert set(moved) == {"aws-storage-datasets", "aws-storage-checkpoints"}
    for fsx in moved.values():
        assert fsx.action == "replace" and fsx.properties == ("subnetIds",) and "every file" in (fsx.data_loss or "")
    text = render_markdown([result], "main → branch")
    assert "[!CAUTION]" in text and "`aws-storage-checkpoints`" in text


@pytest.mark.parametrize(
    ("resource", "change"),
    [
        ("aws-cluster-eks", lambda data: data["networks"].__setitem__("serviceCidr", "172.21.0.0/16")),
        (
            "aws-storage-model-registry",
            lambda data: next(t for t in data["storage"] if t["name"] == "model-registry").__setitem__(
                "aws", {"bucket": "acme-ml-models-elsewhere"}
            ),
        ),
    ],
    ids=["cluster-service-range", "bucket-replaced"],
)
def test_every_replacement_or_removal_that_loses_data_is_flagged(resource: str, change: Callable[[dict[str, Any]], None]) -> None:
    """EKS cluster replacements (terraform-provider-aws eks/cluster.go: service_ipv4_cidr ForceNew) lose every
    Kubernetes object; a bucket the tier stops creating is deleted with its objects."""
    result = diff(change)
    flagged = next(r for r in result.resources if r.name == resource)
    assert flagged.action in ("replace", "delete") and flagged.destructive, flagged


def test_the_replacement_catalog_covers_every_protected_resource() -> None:
    """Whatever the program protects holds data: diff must know what replacing or removing it loses."""
    facts = load_replacements()
    for typ in (
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        "aws:efs/fileSystem:FileSystem",
        "aws:s3/bucket:Bucket",
        "aws:kms/key:Key",
        "aws:eks/cluster:Cluster",
    ):
        assert typ in facts.destructive and facts.resources[typ].dataLoss, typ


def test_a_launch_template_change_rolls_every_node_of_its_pool() -> None:
    """A bigger root volume changes only the launch template; EC2 makes it a new template version, the node group
    follows the latest version, and EKS replaces every node one by one (EKS User Guide, managed-node-update-behavior).
    The mock engine answers version 1 for every template, so the node group's own inputs do not show it."""

    def bigger_root(data: dict[str, Any]) -> None:
        pool(data, "infer-l4").setdefault("aws", {})["rootVolume"] = "400GiB"

    result = diff(bigger_root)
    changes = {r.name: r for r in result.resources}
    assert changes["aws-pool-infer-l4-lt"].action == "update" and not changes["aws-pool-infer-l4-lt"].destructive
    group = changes["aws-pool-infer-l4-ng"]
    assert (group.action, group.properties) == ("update", ("launchTemplate.version",)) and group.destructive
    assert "rolling update" in (group.data_loss or "") and "instance-store scratch" in (group.data_loss or "")
    assert [r.name for r in result.destructive] == ["aws-pool-infer-l4-ng"]  # the other pools' groups do not roll
    text = render_markdown([result], "main → branch")
    assert "**update** `aws:eks/nodeGroup:NodeGroup` `aws-pool-infer-l4-ng` (launchTemplate.version): every node is replaced" in text


def test_a_kubernetes_version_change_rolls_the_node_groups() -> None:
    base = next(r for r in base_plan() if r.name == "aws-pool-infer-l4-ng")
    newer = PlannedResource(base.type, base.name, base.parent, base.parent_type, base.custom, {**base.inputs, "version": "9.99"})
    [change] = diff_resources([base], [newer])
    assert (change.action, change.properties) == ("update", ("version",)) and change.destructive
    scaled = {**base.inputs, "scalingConfig": {**base.inputs["scalingConfig"], "maxSize": 99}}
    [resize] = diff_resources([base], [PlannedResource(base.type, base.name, base.parent, base.parent_type, base.custom, scaled)])
    assert (resize.action, resize.destructive) == ("update", False)


def test_removing_a_tier_deletes_its_file_system_and_says_what_is_lost() -> None:
    def drop(data: dict[str, Any]) -> None:
        data["storage"] = [t for t in data["storage"] if t["name"] != "checkpoints"]

    result = diff(drop)
    deleted = next(r for r in result.resources if r.name == "aws-storage-checkpoints")
    assert deleted.action == "delete" and deleted.data_loss == load_replacements().destructive["aws:fsx/lustreFileSystem:LustreFileSystem"]
    assert [(t.tier, t.change) for t in result.storage] == [("checkpoints", "removed")]


def test_removing_a_team_deletes_its_namespaces_and_is_destructive() -> None:
    def drop(data: dict[str, Any]) -> None:
        data["tenancy"]["teams"] = [t for t in data["tenancy"]["teams"] if t["name"] != "serving"]
        gone = {w["name"] for w in data["workloads"] if w["team"] == "serving"}
        data["workloads"] = [w for w in data["workloads"] if w["name"] not in gone]
        data["monitoring"]["slos"] = [s for s in data["monitoring"]["slos"] if s.get("workload") not in gone]

    result = diff(drop)
    gone = {(o.site, o.name) for o in result.objects if o.kind == "Namespace" and o.change == "removed"}
    assert gone == {("aws", "serving"), ("aws", "serving-canary")}
    assert all(o.data_loss for o in result.destructive if o in result.objects)
    assert [(t.team, t.change) for t in result.teams] == [("serving", "removed")]
    data = result.to_json()
    assert data["destructive"] == len(result.destructive) >= 2
    json.dumps(data)  # plain JSON all the way down


def test_environments_added_and_removed() -> None:
    rp = reference("dev")
    added = diff_environment("dev", None, rp, plan=None)
    removed = diff_environment("dev", rp, None, plan=None)
    assert added.status == "added" and {p.change for p in added.pools} == {"added"}
    assert removed.status == "removed" and removed.gpu_units_delta == -added.gpu_units_delta


def test_a_budget_change_is_named_and_a_guard_that_goes_away_says_how_to_release_its_queue() -> None:
    """Issue 24 item 6: a budget's change was invisible in `alicerce diff` (only its PrometheusRule changed), and a guard
    that goes away releases nothing (alicerce.emit.kube.budgets), so the diff says so and how to release the queue."""
    from alicerce.run.diff import diff_tenancy

    def relax(data: dict[str, Any]) -> None:
        teams = {t["name"]: t for t in data["tenancy"]["teams"]}
        teams["research"]["budget"] = {"monthlyUsd": 1200000}

    _, teams = diff_tenancy(reference("prod"), variant(relax))
    assert [(t.team, t.change) for t in teams] == [("research", "budget")]
    details = teams[0].details
    assert details.startswith("$900,000 a month, alerts at 80%, 100%, stops admitting when spent → $1,200,000 a month, alerts at")
    assert "stops guarding it and releases nothing" in details
    assert """kubectl patch clusterqueue research --type merge -p '{"spec":{"stopPolicy":"None"}}'""" in details
    _, same = diff_tenancy(reference("prod"), variant(lambda data: None))
    assert same == []


def _monitoring_storage(size: str, values: dict[str, Any] | None = None) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["monitoring"]["storage"] = size
        if values is not None:
            data.setdefault("operators", {})["monitoring"] = {"values": values}

    return change


def test_growing_prometheus_storage_lists_the_claims_to_grow_before_it_merges() -> None:
    """Review obsreview24 F8: 100GiB -> 400GiB raised retentionSize to 360GiB on a 100Gi claim (a StatefulSet never
    resizes the claims it made) and `alicerce diff` said "No change"; Prometheus then fills its disk."""
    result = diff_environment("prod", reference("prod"), variant(_monitoring_storage("400GiB")), plan=None)
    assert result.status == "changed" and not result.empty and result.destructive == []
    changes = {c.site: c for c in result.prometheus_storage}
    assert set(changes) == {"aws", "dc1"}
    aws = changes["aws"]
    assert (aws.change, aws.claim_before, aws.claim_after) == ("grown", "100Gi", "400Gi")
    assert (aws.retention_size_before, aws.retention_size_after) == ("90GiB", "360GiB")
    # by hand from kube-prometheus-stack 88.5.3's helpers: release aws-operators-kube-prometheus-stack holds the chart's
    # name, so it is the full name cut to 26 characters, "aws-operators-kube-prometh", plus "-prometheus"; the claim is
    # prometheus-<name>-db (the operator's template) - prometheus-<name> (its StatefulSet) - 0
    name = "aws-operators-kube-prometh-prometheus"
    claim = f"prometheus-{name}-db-prometheus-{name}-0"
    assert aws.claims == (claim,)
    patch = f"""kubectl -n monitoring patch pvc {claim} -p '{{"spec":{{"resources":{{"requests":{{"storage":"400Gi"}}}}}}}}'"""
    assert aws.steps[0] == f"before this merges: {patch}"
    assert "capacity reads 400Gi" in aws.steps[1] and "then merge" in aws.steps[-1]
    # dc1's claim is on kubespray's local-path: it cannot grow, and its node's disk is what fills
    [dc1] = changes["dc1"].steps
    assert "cannot grow" in dc1 and "local-path" in dc1 and "kubectl -n monitoring patch" not in dc1
    text = render_markdown([result], "main → branch")
    assert "No change" not in text and "[!IMPORTANT]" in text and "CAUTION" not in text
    assert "aws: monitoring.storage 100Gi → 400Gi raises retentionSize 90GiB → 360GiB" in text and patch in text
    assert json.loads(json.dumps(result.to_json()))["prometheus_storage"][0]["claims"] == [claim]


def test_every_prometheus_replica_claim_is_named() -> None:
    grown = variant(_monitoring_storage("200GiB", {"prometheus": {"prometheusSpec": {"replicas": 2}}}))
    before = variant(_monitoring_storage("100GiB", {"prometheus": {"prometheusSpec": {"replicas": 2}}}))
    aws = next(c for c in diff_environment("prod", before, grown, plan=None).prometheus_storage if c.site == "aws")
    name = "aws-operators-kube-prometh-prometheus"
    assert aws.claims == tuple(f"prometheus-{name}-db-prometheus-{name}-{i}" for i in (0, 1))
    assert sum("kubectl -n monitoring patch pvc" in step for step in aws.steps) == 2


def test_shrinking_prometheus_storage_is_destructive() -> None:
    result = diff_environment("prod", reference("prod"), variant(_monitoring_storage("50GiB")), plan=None)
    assert {c.change for c in result.prometheus_storage} == {"shrunk"}
    aws = next(c for c in result.prometheus_storage if c.site == "aws")
    assert aws.retention_size_after == "45GiB" and "past 45GiB" in (aws.data_loss or "")
    assert aws in result.destructive and len(result.destructive) == 2  # both sites
    text = render_markdown([result], "main → branch")
    assert "[!CAUTION]" in text and "**shrink** Prometheus's volume at aws (100Gi → 50Gi)" in text


def _storage_class(name: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["monitoring"]["storageClass"] = name

    return change


def test_a_new_monitoring_storage_class_says_the_claims_stay_and_how_to_move_them() -> None:
    """Issue 24: monitoring.storageClass changed the volumeClaimTemplate only. A StatefulSet's volumeClaimTemplates are
    immutable, prometheus-operator recreates the StatefulSet and the pods mount the same claims again: Prometheus and
    Alertmanager stay on the old class with no error anywhere, and `alicerce diff` said nothing."""
    result = diff_environment("prod", reference("prod"), variant(_storage_class("io2-monitoring")), plan=None)
    assert result.status == "changed" and not result.empty and result.destructive == []
    changes = {c.site: c for c in result.prometheus_storage}
    assert {c.change for c in changes.values()} == {"reclassed"} and set(changes) == {"aws", "dc1"}
    aws, dc1 = changes["aws"], changes["dc1"]
    # aws's claims were on the site's default class alicerce writes (gp3-encrypted); dc1's on the cluster's default
    assert (aws.class_before, aws.class_after) == ("gp3-encrypted", "io2-monitoring")
    assert (dc1.class_before, dc1.class_after) == (None, "io2-monitoring")
    assert aws.claim_before == aws.claim_after == "100Gi"  # the size did not change: not a grow
    name = "aws-operators-kube-prometh-prometheus"
    claim = f"prometheus-{name}-db-prometheus-{name}-0"
    assert aws.claims == (claim,)
    assert "stay on gp3-encrypted" in aws.steps[0] and "nothing moves to io2-monitoring" in aws.steps[0]
    assert "CostHistoryTruncated" in aws.steps[1]
    assert f"kubectl -n monitoring delete pvc {claim} --wait=false" in aws.steps[2]
    assert f"delete pod prometheus-{name}-0" in aws.steps[2]
    # production's two Alertmanager replicas, by hand from prometheus-operator's names: alertmanager-<name>-db -
    # alertmanager-<name> - ordinal, <name> the chart's full name plus -alertmanager
    am = "aws-operators-kube-prometh-alertmanager"
    assert all(f"alertmanager-{am}-db-alertmanager-{am}-{i}" in aws.steps[3] for i in (0, 1))
    assert "one replica at a time" in aws.steps[3]
    text = render_markdown([result], "main → branch")
    assert "No change" not in text and "does not follow monitoring.storageClass" in text
    assert "aws: monitoring.storageClass gp3-encrypted → io2-monitoring" in text
    assert "dc1: monitoring.storageClass the cluster's default class → io2-monitoring" in text
    row = json.loads(json.dumps(result.to_json()))["prometheus_storage"][0]
    assert (row["change"], row["class_after"]) == ("reclassed", "io2-monitoring")


def test_a_new_storage_class_and_a_larger_volume_are_both_listed() -> None:
    def both(data: dict[str, Any]) -> None:
        _storage_class("io2-monitoring")(data)
        _monitoring_storage("200GiB")(data)

    changes = [(c.site, c.change) for c in diff_environment("prod", reference("prod"), variant(both), plan=None).prometheus_storage]
    assert sorted(changes) == [("aws", "grown"), ("aws", "reclassed"), ("dc1", "grown"), ("dc1", "reclassed")]


def test_the_same_storage_lists_no_prometheus_change() -> None:
    assert diff_environment("prod", reference("prod"), variant(_monitoring_storage("100GiB")), plan=None).prometheus_storage == []


def test_adding_a_pool_at_one_site_lists_the_budget_shares_it_moves_at_every_site() -> None:
    """Review obsreview24 F9: a pool and a research quota added at aws re-split research's one budget between its sites;
    dc1's share (its alerts and guard) moved mid-month though nothing changed at dc1, and diff said nothing of it."""

    def add_pool(data: dict[str, Any]) -> None:
        pools = data["nodePools"]
        infer = next(i for i, p in enumerate(pools) if p["name"] == "infer-l4")
        pools.insert(
            infer,
            {
                "name": "train-h200",
                "site": "aws",
                "purpose": "training",
                "accelerator": "H200-SXM-141GB:8",
                "aws": {"instanceType": "p5e.48xlarge", "zone": "us-east-1a"},
                "scaling": {"min": 0, "max": 4},
                "fabric": "efa",
                "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
            },
        )
        teams = {t["name"]: t for t in data["tenancy"]["teams"]}
        teams["research"]["quotas"].append({"pool": "train-h200", "gpus": 32})

    result = diff_environment("prod", reference("prod"), variant(add_pool), plan=None)
    shares = {(s.team, s.site): (s.usd_before, s.usd_after) for s in result.budget_shares}
    assert set(shares) == {("research", "aws"), ("research", "dc1")}, shares
    (aws_before, aws_after), (dc1_before, dc1_after) = shares["research", "aws"], shares["research", "dc1"]
    assert (round(dc1_before or 0), round(dc1_after or 0)) == (588973, 550226)  # the review's figures
    assert aws_before is not None and aws_after is not None and dc1_before is not None and dc1_after is not None
    assert aws_before + dc1_before == pytest.approx(900000, abs=2) and aws_after + dc1_after == pytest.approx(900000, abs=2)
    assert all(s.guarded for s in result.budget_shares)  # research stops admitting when spent
    text = render_markdown([result], "main → branch")
    assert "team `research` budget share at dc1: $588,973 → $550,226 (-$38,747) a month" in text
    assert "if it is already past $550,226, dc1's budget guard holds `research`'s queue" in text
    assert "team `research` budget share at aws: $311,027 → $349,774 (+$38,747) a month" in text


def test_a_change_that_moves_no_budget_lists_no_share() -> None:
    def taller(data: dict[str, Any]) -> None:
        pool(data, "infer-l4")["scaling"] = {"min": 1, "max": 20}

    assert diff_environment("prod", reference("prod"), variant(taller), plan=None).budget_shares == []


def renamed_research(data: dict[str, Any]) -> None:
    """research becomes research-ml: same namespace, groups and budget (the guard holds its queue once spent)."""
    team = next(t for t in data["tenancy"]["teams"] if t["name"] == "research")
    team |= {"name": "research-ml", "namespaces": ["research"]}
    for owned in [*data["workloads"], *data["monitoring"]["slos"]]:
        if owned.get("team") == "research":
            owned["team"] = "research-ml"


def test_a_renamed_team_is_told_its_month_of_spend_budget_alerts_and_hold_start_over() -> None:
    """Review obsreview24 F2: a rename showed as one team removed and one added, and said nothing of what restarts.
    Every cost record is keyed by the team's name, so the renamed team's month starts at $0 (research's hours count
    toward no budget), its budget alerts start over, and its ClusterQueue (named after the team) is made anew, unheld.
    The diff names the rename and what to do: rename on the 1st, or lower the budget and hold the queue by hand."""
    from alicerce.run.diff import diff_tenancy

    _, teams = diff_tenancy(reference("prod"), variant(renamed_research))
    assert [(t.team, t.change) for t in teams] == [("research-ml", "renamed")]
    details = teams[0].details
    assert details.startswith("from `research` (namespaces research); ")
    assert "research-ml's month-to-date spend starts at $0 at the rename" in details
    assert "what research spent this month counts toward no budget" in details
    assert "budget alerts start over" in details and "a queue the budget guard held this month is released" in details
    assert "List research in research-ml's renamedFrom to carry the month over; or rename on the 1st of a month (UTC)" in details
    assert 'team:gpu_cost_usd:sum_month{team="research"}' in details
    assert """kubectl patch clusterqueue research-ml --type merge -p '{"spec":{"stopPolicy":"Hold"}}'""" in details
    text = render_markdown([diff_environment("prod", reference("prod"), variant(renamed_research), plan=None)], "main → branch")
    assert "- team `research-ml` renamed: from `research`" in text
    # the JSON document's schema (schema/output/diff.schema.json) knows the change
    from dataclasses import asdict

    from alicerce.cli.documents import TeamChange

    assert TeamChange.model_validate(asdict(teams[0])).change == "renamed"


def test_a_renamed_team_that_names_its_former_name_is_told_its_month_carries_over() -> None:
    """teams[].renamedFrom carries the month (review obsreview24 F2): the diff says so instead of what restarts, and
    finds the rename by the declared name even where the team moved to namespaces of its own."""
    from alicerce.run.diff import diff_tenancy

    def carried(data: dict[str, Any]) -> None:
        renamed_research(data)
        team = next(t for t in data["tenancy"]["teams"] if t["name"] == "research-ml")
        team |= {"namespaces": ["research-ml"], "groups": ["oidc:research-ml"], "renamedFrom": ["research"]}

    _, teams = diff_tenancy(reference("prod"), variant(carried))
    assert [(t.team, t.change) for t in teams] == [("research-ml", "renamed")]
    details = teams[0].details
    assert details.startswith("from `research`; its month carries over (renamedFrom lists research): ")
    assert "what research spent this month counts toward research-ml's budget" in details
    assert "the budget guard holds it on its next run (within 15 minutes) if the month is spent" in details
    assert "starts at $0" not in details and "kubectl patch" not in details
    assert details.endswith("Remove renamedFrom after research-ml's first whole month")


def test_a_team_without_a_budget_renamed_is_told_only_of_its_spend_and_a_new_team_is_no_rename() -> None:
    """applied-ml has no budget: its rename splits the month's spend and chargeback between the names, and nothing
    is said of alerts or holds. A team added with namespaces and groups of its own, beside a team removed, is no rename."""
    from alicerce.run.diff import diff_tenancy

    def rename(data: dict[str, Any]) -> None:
        team = next(t for t in data["tenancy"]["teams"] if t["name"] == "applied-ml")
        team |= {"name": "ml-apps", "namespaces": ["applied-ml"]}
        for owned in [*data["workloads"], *data["monitoring"]["slos"]]:
            if owned.get("team") == "applied-ml":
                owned["team"] = "ml-apps"

    _, teams = diff_tenancy(reference("prod"), variant(rename))
    assert [(t.team, t.change) for t in teams] == [("ml-apps", "renamed")]
    assert "lists applied-ml up to the rename and ml-apps after it" in teams[0].details
    assert "budget" not in teams[0].details and "clusterqueue" not in teams[0].details.lower()

    def replace(data: dict[str, Any]) -> None:
        team = next(t for t in data["tenancy"]["teams"] if t["name"] == "applied-ml")
        team |= {"name": "vision", "groups": ["oidc:vision"]}  # its own namespace, vision, by default
        for owned in [*data["workloads"], *data["monitoring"]["slos"]]:
            if owned.get("team") == "applied-ml":
                owned["team"] = "vision"

    _, teams = diff_tenancy(reference("prod"), variant(replace))
    assert sorted((t.team, t.change) for t in teams) == [("applied-ml", "removed"), ("vision", "added")]


def _receiver(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in data["monitoring"]["receivers"] if r["name"] == name)
    return found


def test_a_routing_change_says_open_alerts_page_again_and_old_incidents_stay_open() -> None:
    """Review obsreview23 F6: the oncall PagerDuty receiver pages for research alone. Its routes' matchers change, so its
    group keys do (Alertmanager v0.34.0 dispatch/route.go Route.Key: the route's and its parents' matchers), and the
    PagerDuty dedup key is the group key's hash: every alert firing at the reload opens a second incident and the old
    one is never resolved. The diff says so per site; the Slack receiver's routes did not change and it is not named."""
    old = reference("prod")

    def research_pager(data: dict[str, Any]) -> None:
        _receiver(data, "oncall").update(teams=["research"])
        data.setdefault("waivers", []).append({"rule": "AL387", "environments": ["prod"], "expires": "2099-01-01",
                                               "justification": "the platform's criticals page through research's rota"})  # fmt: skip

    new = variant(research_pager)
    result = diff_environment("prod", old, new, plan=None)
    assert [n.split(":")[0] for n in result.notes] == ["aws", "dc1"]
    assert all("receiver oncall (pagerduty)" in n and "its routes' matchers changed" in n for n in result.notes)
    assert all("second PagerDuty incident" in n and "resolve those by hand" in n for n in result.notes)
    text = render_markdown([result], "main → branch")
    assert "**Alert notifications regrouped**" in text and "second PagerDuty incident" in text
    assert json.loads(json.dumps(result.to_json()))["notes"] == result.notes


def test_a_group_by_change_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release that changes the labels Alertmanager groups by (as obsfix4 added site and environment) regroups
    every receiver's alerts: the diff of an environment built by it names each receiver and the group_by."""
    from alicerce.run import diff as module

    old, new = reference("prod"), variant(lambda data: None)
    real = module.alertmanager_values

    def regrouped(rp: Any, site: Any) -> dict[str, Any]:
        values = real(rp, site)
        if rp is new:
            values["alertmanager"]["config"]["route"]["group_by"] = ["alertname"]
        return values

    monkeypatch.setattr(module, "alertmanager_values", regrouped)
    notes = diff_environment("prod", old, new, plan=None).notes
    assert {n.split(" is grouped")[0] for n in notes} == {
        f"{site}: receiver {r}" for site in ("aws", "dc1") for r in ("oncall (pagerduty)", "ml-platform (slack)")
    }
    assert all("its group_by changed" in n for n in notes)
    slack = next(n for n in notes if "ml-platform" in n)
    assert "notified again as new groups" in slack and "PagerDuty" not in slack


def test_a_change_that_keeps_the_routes_regroups_nothing() -> None:
    """A Slack channel, a pool's size, a heartbeat's Secret: no route's matchers or group_by change, no note."""

    def change(data: dict[str, Any]) -> None:
        _receiver(data, "ml-platform")["channel"] = "#elsewhere"
        _receiver(data, "heartbeat")["secret"] = {"name": "other-heartbeat", "key": "ping"}
        pool(data, "infer-l4")["scaling"] = {"min": 2, "max": 20}

    result = diff_environment("prod", reference("prod"), variant(change), plan=None)
    assert result.notes == [] and result.objects  # the objects did change


def test_a_release_that_regroups_alerts_says_so_in_its_upgrade_notes() -> None:
    """`alicerce diff` compares two specs under one release, so a group_by the release itself changes (obsfix4 added
    site and environment) regroups every receiver's alerts unseen by it. The grouping is pinned here with the
    CHANGELOG note of the release that set it: a change fails until its own note says what it does to open pages."""
    from alicerce.catalog.alerts import NODE_OUTAGE_GROUP_BY
    from alicerce.emit.kube.operators import ALERT_GROUP_BY
    from tests.conftest import ROOT

    pinned = (
        ("environment", "site", "alertname", "namespace", "workload", "application", "deployment", "team", "pool", "node", "Hostname"),
        ("environment", "site", "alertname", "namespace", "pool", "tier"),
    )
    assert pinned == (ALERT_GROUP_BY, NODE_OUTAGE_GROUP_BY), (
        "Alertmanager's group_by changed: add an upgrade note to CHANGELOG.md (every alert firing at the upgrade opens a "
        "second PagerDuty incident, the old one is never resolved: resolve those by hand), then pin the new grouping here"
    )
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "Upgrading regroups open notifications once: every alert firing when the new" in changelog
    # obsreview24 F7 added namespace to the outage route, which the job diagnoses now share
    assert "Upgrading regroups those three diagnoses and the outage alerts" in changelog
    # obsreview48 G-1, obsreview49 G-1 and obsreview51 N-3 added workload, application and deployment to the root's
    # grouping: each serving workload's, Ray Serve application's and deployment's outage is its own incident
    assert "Upgrading regroups every open alert that carries a workload, application or deployment label once" in changelog


def _add_west(data: dict[str, Any]) -> None:
    """A second AWS region with a system and an L40S pool and two teams' quotas there (review obsreview25 G5)."""
    data["environments"]["prod"]["sites"].append({
        "name": "west", "provider": "aws", "account": "333333333333", "region": "us-west-2",
        "zones": ["us-west-2a", "us-west-2b"], "vpcCidr": "10.21.0.0/16",
    })  # fmt: skip
    data["nodePools"] += [
        {"name": "west-system", "site": "west", "purpose": "system", "aws": {"instanceType": "m7i.4xlarge"},
         "scaling": {"min": 2, "max": 4}},
        {"name": "west-l40s", "site": "west", "purpose": "inference", "accelerator": "L40S-48GB:4",
         "aws": {"instanceType": "g6e.12xlarge"}, "scaling": {"min": 1, "max": 6},
         "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
    ]  # fmt: skip
    teams = {t["name"]: t for t in data["tenancy"]["teams"]}
    teams["research"]["quotas"].append({"pool": "west-l40s", "gpus": 8})
    teams["serving"]["quotas"].append({"pool": "west-l40s", "gpus": 16})


def test_a_new_site_lists_the_alerting_secrets_and_the_heartbeat_check_it_needs() -> None:
    """Review obsreview25 G5: adding site west listed its objects and budget shares, not the Alertmanager Secrets its
    receivers read there (prometheus-operator mounts them: missing, the Alertmanager does not start) nor the dead man's
    switch check its heartbeat key needs: merged as reviewed, west ran GPUs with no alerting and nothing noticed."""
    result = diff_environment("prod", reference("prod"), variant(_add_west), plan=None)
    assert [a.split(" (")[0] for a in result.alerting] == [
        "west: create Secret monitoring/alertmanager-pagerduty with key routing-key",
        "west: create Secret monitoring/alertmanager-slack with key webhook-url",
        "west: create Secret monitoring/alertmanager-heartbeat with key url-prod-west",
    ]
    assert "dead man's switch check" in result.alerting[2] and "dead man's switch" not in result.alerting[0]
    text = render_markdown([result], "main → branch")
    assert "**Alerting: before the sync; pages that change**" in text and "url-prod-west" in text
    assert json.loads(json.dumps(result.to_json()))["alerting"] == result.alerting
    assert diff_environment("prod", reference("prod"), reference("prod"), plan=None).alerting == []


def test_an_slo_tightened_and_renamed_says_what_its_pages_do() -> None:
    """Review obsreview25 N1: chat-latency renamed chat-p99 with its objective 99.5 -> 99.9 showed only "changed
    PrometheusRule". The page's threshold drops 5x (1h: 14.4 x 0.005 = 0.072 -> 14.4 x 0.001 = 0.0144; 6h: 0.03 ->
    0.006; the ticket 0.005 -> 0.001), and the rename resolves open pages under the old alert names."""

    def tighten(data: dict[str, Any]) -> None:
        (slo,) = [s for s in data["monitoring"]["slos"] if s["name"] == "chat-latency"]
        slo.update(name="chat-p99", objective=99.9)

    result = diff_environment("prod", reference("prod"), variant(tighten), plan=None)
    renamed, tightened = result.alerting
    assert renamed.startswith("SLO chat-latency of chat-70b renamed chat-p99: its alerts SLOChatLatencyBurnFast/")
    assert "SLOChatP99BurnFast/SLOChatP99BurnSlow" in renamed and "open pages resolve" in renamed
    assert "99.5% under 1000 ms → 99.9% under 1000 ms" in tightened
    assert "page 0.072 (1h) / 0.03 (6h), ticket 0.005 (3d) → page 0.0144 (1h) / 0.006 (6h), ticket 0.001 (3d)" in tightened
    assert "may page at the sync" in tightened


def test_a_change_of_gpus_per_node_says_what_the_missing_gpu_page_expects() -> None:
    """Review obsreview27 G5: infer-l40s moved from g6e.12xlarge (4 GPUs) to g6e.48xlarge (8) showed "changed
    PrometheusRule" and "destructive changes: none". The diff says the node group replaces the nodes and that
    GPUsMissingInferL40s holds each node to its own type's GPUs meanwhile; a layout change on the same type (time-slicing
    replicas 4 -> 8 on infer-l4) and an on-prem one (onprem-h100's GPUs split into two MIG instances each) say the page
    expects the new layout on every node from the sync; an unchanged pool says nothing."""

    def grow(data: dict[str, Any]) -> None:
        pool(data, "infer-l40s").update(accelerator="L40S-48GB:8", aws={"instanceType": "g6e.48xlarge"}, scaling={"min": 1, "max": 6})
        pool(data, "infer-l4")["sharing"]["replicas"] = 8
        pool(data, "onprem-h100")["sharing"] = {"mode": "mig", "profiles": {"3g.40gb": 1, "4g.40gb": 1}}

    result = diff_environment("prod", reference("prod"), variant(grow), plan=None)
    changes = {line.split(":")[0]: line for line in result.alerting if line.startswith("pool ")}
    assert set(changes) == {"pool infer-l40s at aws", "pool infer-l4 at aws", "pool onprem-h100 at dc1"}
    assert "4 nvidia.com/gpu → 8 nvidia.com/gpu per node (g6e.12xlarge → g6e.48xlarge)" in changes["pool infer-l40s at aws"]
    assert "GPUsMissingInferL40s holds each node to its own instance type's GPUs" in changes["pool infer-l40s at aws"]
    assert "the pool has no nodes until the new ones join" in changes["pool infer-l40s at aws"]  # review obsreview29 N-3
    assert "4 nvidia.com/gpu → 8 nvidia.com/gpu per node on the same g6.xlarge" in changes["pool infer-l4 at aws"]
    # review obsreview29 D-2: the sharing configs are named after their content, so the GPU Operator rolls the device
    # plugin (time-slicing) or the MIG manager, which repartitions only GPUs no pod uses; the hosts stay as they are
    # (the text said "cordon it or change its hardware", which is for a change of the hosts' GPUs)
    assert "rolls the device plugin over the nodes one at a time" in changes["pool infer-l4 at aws"]
    # review obsreview30 G-1: the page waits for that roll on a node that still offers GPUs, within the site's bound
    # (aws: train-p5 16 + infer-l40s 6 + infer-l4 16 GPU nodes at max here, x 60 s)
    assert "waits for it on a Ready node that still offers GPUs, for at most 38 minutes" in changes["pool infer-l4 at aws"]
    mig = changes["pool onprem-h100 at dc1"]
    assert "8 nvidia.com/gpu → 8 nvidia.com/mig-3g.40gb, 8 nvidia.com/mig-4g.40gb per node on the same hosts" in mig
    assert "restarts the MIG manager on every node" in mig and "drain the pool's GPU pods before the sync" in mig
    assert "cordon it" not in mig
    assert "at most 32 minutes" in mig and "a node at 0 or NotReady pages" in mig  # dc1: 32 hosts x 60 s

    def fewer_gpus(data: dict[str, Any]) -> None:
        pool(data, "onprem-h100")["accelerator"] = "H100-SXM5-80GB:4"
        for team in data["tenancy"]["teams"]:  # half the GPUs: half the quotas (AL260)
            for quota in team.get("quotas", []):
                if quota["pool"] == "onprem-h100":
                    quota["gpus"] //= 2

    (hosts,) = [a for a in diff_environment("prod", reference("prod"), variant(fewer_gpus), plan=None).alerting if a.startswith("pool ")]
    assert "8 nvidia.com/gpu → 4 nvidia.com/gpu per node: " in hosts and "cordon it" in hosts  # new hardware: the hosts change
    assert "Alerting: before the sync" in render_markdown([result], "t")
    assert not [a for a in diff_environment("prod", reference("prod"), reference("prod"), plan=None).alerting if a.startswith("pool ")]


def test_a_change_of_sharing_mode_says_which_goes_first_the_label_or_the_sync() -> None:
    """Review obsreview32 G-1: a change of sharing MODE adds or removes the node label that selects the config, which
    travels with the node's pipeline (kubespray on-prem, the EKS node group at aws) while the ConfigMap and the rules
    travel with the GitOps sync. The diff says the order per target: adding, the label first; removing, the sync first;
    a change within a mode says nothing of it."""

    def mig_on(data: dict[str, Any]) -> None:
        pool(data, "onprem-h100")["sharing"] = {"mode": "mig", "profiles": {"3g.40gb": 2}}

    def more_replicas(data: dict[str, Any]) -> None:
        pool(data, "infer-l4")["sharing"]["replicas"] = 8

    (added,) = [a for a in diff_environment("prod", reference("prod"), variant(mig_on), plan=None).alerting if a.startswith("pool ")]
    assert "gain nvidia.com/mig.config with `alicerce apply`" in added and "apply it before the sync" in added
    (removed,) = [a for a in diff_environment("prod", variant(mig_on), reference("prod"), plan=None).alerting if a.startswith("pool ")]
    assert "lose nvidia.com/mig.config with `alicerce apply`" in removed and "sync first" in removed
    (within,) = [
        a for a in diff_environment("prod", reference("prod"), variant(more_replicas), plan=None).alerting if a.startswith("pool ")
    ]
    assert "sharing mode" not in within
