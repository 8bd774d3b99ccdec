"""The kubernetes/ subtree: Argo CD Applications that the pinned Argo CD accepts, ordered by sync waves,
carrying the very releases and objects the Pulumi layer applies (issue 13, items 1 and 2)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import jsonschema
import pytest
import yaml

from alicerce.catalog import load_catalog
from alicerce.emit.gitops.argocd import (
    CORE_GROUP,
    SYNC_WAVE,
    SiteDelivery,
    deploy_time_tiers,
    pulumi_owned_objects,
    release_name,
    tree_objects,
)
from alicerce.emit.gitops.kubernetes import emit_kubernetes
from alicerce.emit.kube.objects import cluster_objects, crd_owner
from alicerce.emit.kube.operators import operator_releases
from alicerce.emit.kube.storage import UNKNOWN_DRIVER
from tests.emit.gitops.helpers import UPSTREAM, application_schema, argocd_app_version, reference, variant

CASES = [("prod", "aws"), ("prod", "dc1"), ("dev", "aws")]


@functools.cache
def reference_files(env: str) -> Mapping[str, str]:
    """The kubernetes/ tree of the reference's ``env``, rendered once per worker (~0.3 CPU-s; a dozen tests read it).
    Read-only: a test that wants to change a file copies it."""
    return MappingProxyType(emit_kubernetes(reference(env)))


def applications(env: str) -> dict[str, dict[str, Any]]:
    """Every Application file of the environment's tree, parsed back from its text."""
    files = reference_files(env)
    return {path: yaml.safe_load(text) for path, text in files.items() if path.endswith(".yaml") and "/objects/" not in path}


def wave(app: dict[str, Any]) -> int:
    return int(app["metadata"]["annotations"][SYNC_WAVE])


def test_the_pinned_argocd_has_a_vendored_application_schema() -> None:
    """A new Argo CD pin fails here until its Application CRD schema (and the chart facts) are vendored."""
    chart = load_catalog().versions.charts["argo-cd"]
    crd = UPSTREAM / "argocd" / argocd_app_version() / "crds" / "argoproj.io_applications_v1alpha1.schema.json"
    assert crd.is_file() and (crd.parent.parent / "SOURCE.yaml").is_file(), f"vendor Argo CD {chart.appVersion} under {crd.parent.parent}"
    source = yaml.safe_load((crd.parent.parent / "SOURCE.yaml").read_text("utf-8"))
    assert source["upstream"]["tag"] == chart.appVersion and source["helm_chart"]["version"] == chart.version
    facts = UPSTREAM / "argo-cd" / chart.version
    assert {p.name for p in facts.iterdir()} >= {"SOURCE.yaml", "values.json", "hooks.json", "secret_refs.json"}


@pytest.mark.parametrize("env", ["prod", "dev"])
def test_every_application_validates_against_the_argocd_crd(env: str) -> None:
    validator = jsonschema.Draft7Validator(application_schema(strict=True))
    apps = applications(env)
    assert len(apps) >= 10
    for path, app in apps.items():
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(app)]
        assert errors == [], path
        assert app["apiVersion"] == "argoproj.io/v1alpha1" and app["kind"] == "Application"


def test_the_strict_schema_rejects_what_argocd_would_drop() -> None:
    """The check can fail: a misspelt sync option and a missing project are both caught."""
    app = next(iter(applications("prod").values()))
    app["spec"]["syncPolicy"]["automated"]["selfheal"] = True
    del app["spec"]["project"]
    messages = [e.message for e in jsonschema.Draft7Validator(application_schema(strict=True)).iter_errors(app)]
    assert any("selfheal" in m for m in messages) and any("project" in m for m in messages)


@pytest.mark.parametrize(("env", "site"), CASES)
def test_every_operator_release_is_a_pinned_helm_application(env: str, site: str) -> None:
    rp = reference(env)
    apps = applications(env)
    for release in operator_releases(rp, site):
        app = apps[f"{site}/apps/{release_name(site, release)}.yaml"]
        source = app["spec"]["source"]
        assert source["chart"] == release.chart
        assert source["targetRevision"] == rp.charts[release.key].version  # exactly the pinned version, never a range
        assert not source["repoURL"].startswith("oci://") and release.repository.rstrip("/").endswith(source["repoURL"])
        assert source["helm"].get("valuesObject", {}) == release.values  # the values Pulumi passes, inline
        assert app["spec"]["destination"]["namespace"] == release.namespace
        assert "ServerSideApply=true" in app["spec"]["syncPolicy"]["syncOptions"]


@pytest.mark.parametrize(("env", "site"), CASES)
def test_sync_waves_put_crds_and_operators_before_their_custom_resources(env: str, site: str) -> None:
    rp = reference(env)
    delivery = SiteDelivery.of(rp, site)
    waves = delivery.release_waves
    for release in delivery.releases:
        for dependency in release.depends_on:
            if dependency in waves:
                assert waves[release.key] > waves[dependency], release.key
    assert delivery.group_waves[CORE_GROUP] == 0
    for group, objs in delivery.objects.items():
        for obj in objs:
            owner = crd_owner(obj)
            if owner is not None and owner in waves:
                assert delivery.group_waves[group] > waves[owner], (obj["kind"], owner)
    for path, app in applications(env).items():
        name = str(app["metadata"]["name"])
        if path.startswith(f"{site}/apps/") and "-objects-" in name:
            assert wave(app) == delivery.group_waves[name.split("-objects-", 1)[1]], name


def test_the_nic_cluster_policy_follows_the_network_operator() -> None:
    apps = applications("prod")
    policy_app = apps["dc1/apps/dc1-objects-network-operator.yaml"]
    operator_app = apps["dc1/apps/dc1-operators-network-operator.yaml"]
    assert wave(policy_app) > wave(operator_app)
    files = reference_files("prod")
    assert any(p.startswith("dc1/objects/network-operator/nicclusterpolicy.") for p in files)
    assert "SkipDryRunOnMissingResource=true" in policy_app["spec"]["syncPolicy"]["syncOptions"]


def test_root_application_points_at_the_site_apps_in_the_spec_repository() -> None:
    root = yaml.safe_load(reference_files("prod")["dc1/root.yaml"])
    assert root["spec"]["source"] == {
        "repoURL": "https://github.com/acme/ml-platform.git",
        "targetRevision": "main",
        "path": "generated/prod/kubernetes/dc1/apps",
    }
    assert "finalizers" not in root["metadata"]  # deleting the root never uninstalls the platform
    child = yaml.safe_load(reference_files("prod")["dc1/apps/dc1-objects-core.yaml"])
    assert child["spec"]["source"]["path"] == "generated/prod/kubernetes/dc1/objects/core"


def test_prune_and_self_heal_come_from_the_spec() -> None:
    def manual(data: dict[str, Any]) -> None:
        data["gitops"]["sync"] = {"prune": False, "selfHeal": False}

    rp = variant(manual)
    for path, text in emit_kubernetes(rp).items():
        if "/apps/" in path or path.split("/", 1)[1] == "root.yaml":  # the Applications (objects may end in -root.yaml too)
            assert yaml.safe_load(text)["spec"]["syncPolicy"]["automated"] == {"prune": False, "selfHeal": False}, path
    assert yaml.safe_load(reference_files("prod")["aws/root.yaml"])["spec"]["syncPolicy"]["automated"] == {
        "prune": True,
        "selfHeal": True,
    }


@pytest.mark.parametrize(("env", "site"), CASES)
def test_the_tree_holds_every_object_of_the_one_pure_function(env: str, site: str) -> None:
    """Everything cluster_objects decides is in the tree, except the volumes of file systems created at deploy time."""
    rp = reference(env)
    later = set(deploy_time_tiers(rp, site))
    volumes = {t: {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": f"fs-{t}"}} for t in later}
    full = cluster_objects(rp, site, volumes)
    tree = tree_objects(rp, site)
    owned = pulumi_owned_objects(rp, site, volumes)
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, [*tree, *owned])) == sorted(map(key, full))
    assert all(o["kind"] == "PersistentVolume" for o in owned)
    assert UNKNOWN_DRIVER not in yaml.safe_dump(tree)
    files = reference_files(env)
    objects = [yaml.safe_load(t) for p, t in files.items() if p.startswith(f"{site}/objects/")]
    assert sorted(map(key, objects)) == sorted(map(key, tree))
    assert [o for o in objects if o in tree] == objects  # the files hold the objects unchanged


def test_aws_file_system_claims_are_in_the_tree_and_their_volumes_stay_with_pulumi() -> None:
    rp = reference("prod")
    assert set(deploy_time_tiers(rp, "aws")) == {"datasets", "checkpoints", "home"}
    assert deploy_time_tiers(rp, "dc1") == ()  # on-prem sources are in the spec
    tree = tree_objects(rp, "aws")
    claims = [o for o in tree if o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"] == "datasets"]
    assert claims and all(c["spec"]["volumeName"].startswith("acme-ml-datasets-") for c in claims)
    assert not [o for o in tree if o["kind"] == "PersistentVolume"]
    readme = reference_files("prod")["aws/README.md"]
    assert "Left with Pulumi" in readme and "`datasets`" in readme


def test_a_job_whose_template_changes_is_recreated_not_applied() -> None:
    """Adding a team changes the prepare Jobs' pod template, which Kubernetes never lets an apply change (a Job's
    spec.template is immutable): Argo CD must delete and recreate them (argo-cd docs/user-guide/sync-options.md,
    "Force Sync", v3.4.4), and only when they changed (ApplyOutOfSyncOnly), or the core Application stays degraded."""

    def another_team(data: dict[str, Any]) -> None:
        data["tenancy"]["teams"].append({"name": "vision", "groups": ["oidc:vision"]})

    def jobs(rp: Any) -> dict[str, dict[str, Any]]:
        return {o["metadata"]["name"]: o for o in tree_objects(rp, "aws") if o["kind"] == "Job"}

    before, after = jobs(reference("prod")), jobs(variant(another_team))
    assert before and any(before[n]["spec"]["template"] != after[n]["spec"]["template"] for n in before)  # the change is real
    for job in after.values():
        assert job["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Force=true,Replace=true"
    for path, app in applications("prod").items():
        if "/apps/" in path and "-objects-" in path:
            assert "ApplyOutOfSyncOnly=true" in app["spec"]["syncPolicy"]["syncOptions"], path
    # claims too are recreated, when they move to a new volume (tests/emit/kube/test_storage_day2.py); nothing else
    others = [o for o in tree_objects(reference("prod"), "aws") if o["kind"] not in ("Job", "PersistentVolumeClaim")]
    assert all("argocd.argoproj.io/sync-options" not in o["metadata"].get("annotations", {}) for o in others)


# The CSI drivers a chart alicerce installs brings (aws-fsx-csi-driver 1.17.0 templates/csidriver.yaml), and those the
# cloud layer installs as EKS add-ons before any in-cluster object exists (the EFS CSI driver).
CSI_DRIVER_CHARTS = {"fsx.csi.aws.com": "aws-fsx-csi-driver"}
ADD_ON_CSI_DRIVERS = {"efs.csi.aws.com"}
VOLUMES = {"datasets": {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1"}},
           "checkpoints": {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-2"}},
           "home": {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": "fs-3"}}}  # fmt: skip


def _crd_charts() -> dict[str, str]:
    """API group -> chart that ships its CRDs, from the vendored CRD schemas (tests/data/upstream/<chart>/<v>/crds)."""
    return {crd.name.split("_", 1)[0]: crd.parent.parent.parent.name for crd in UPSTREAM.glob("*/*/crds/*.schema.json")}


def _needed_charts(obj: dict[str, Any], objs: list[dict[str, Any]], namespaces: dict[str, str]) -> set[str]:
    """What must run before an object, read off the objects themselves: the chart of its CRD, the chart whose
    release creates its namespace, and for a pod template the chart of the CSI driver of every volume it mounts."""
    needs = set()
    group = str(obj["apiVersion"]).rpartition("/")[0]
    if group in _crd_charts():
        needs.add(_crd_charts()[group])
    if (namespace := obj["metadata"].get("namespace")) in namespaces:
        needs.add(namespaces[namespace])
    pod = obj.get("spec", {}).get("template", {}).get("spec", {}) if obj["kind"] in ("Job", "Deployment", "StatefulSet") else {}
    for volume in pod.get("volumes", []):
        wanted = (obj["metadata"]["namespace"], volume["persistentVolumeClaim"]["claimName"])
        claim = next(
            o for o in objs if o["kind"] == "PersistentVolumeClaim" and (o["metadata"]["namespace"], o["metadata"]["name"]) == wanted
        )
        volume_obj = next(o for o in objs if o["kind"] == "PersistentVolume" and o["metadata"]["name"] == claim["spec"]["volumeName"])
        driver = volume_obj["spec"].get("csi", {}).get("driver")
        if driver is not None:
            assert driver in CSI_DRIVER_CHARTS or driver in ADD_ON_CSI_DRIVERS, f"{driver}: which chart brings it?"
            needs |= {CSI_DRIVER_CHARTS[driver]} if driver in CSI_DRIVER_CHARTS else set()
    return needs


def renders_service_monitor(values: Mapping[str, Any]) -> bool:
    """Whether a chart's values turn on a ServiceMonitor: a ``serviceMonitor.enabled`` at any depth (kuberay-operator
    1.7.0 metrics.serviceMonitor, gpu-operator dcgmExporter.serviceMonitor, the CloudWatch exporter's), or Kueue's
    enablePrometheus."""
    if values.get("enablePrometheus") is True:
        return True
    monitor = values.get("serviceMonitor")
    if isinstance(monitor, Mapping) and monitor.get("enabled") is True:
        return True
    return any(isinstance(v, Mapping) and renders_service_monitor(v) for v in values.values())


@pytest.mark.parametrize(("env", "site"), CASES)
def test_a_release_that_renders_a_service_monitor_syncs_after_its_crd(env: str, site: str) -> None:
    """Review obsreview20 F1: kuberay-operator's ServiceMonitor synced in kube-prometheus-stack's wave, without its
    CRD on a fresh cluster (Argo CD: no matches for kind ServiceMonitor; Pulumi: no depends_on). Every release whose
    values render one comes after kube-prometheus-stack, in its Application's wave and its declared dependencies."""
    rp = reference(env)
    apps = applications(env)
    releases = {r.key: r for r in operator_releases(rp, site)}
    monitoring = wave(apps[f"{site}/apps/{release_name(site, releases['kube-prometheus-stack'])}.yaml"])
    watched = [r for r in releases.values() if r.key != "kube-prometheus-stack" and renders_service_monitor(r.values)]
    assert "kuberay-operator" in {r.key for r in watched}
    for release in watched:
        assert "kube-prometheus-stack" in release.depends_on, release.key
        assert wave(apps[f"{site}/apps/{release_name(site, release)}.yaml"]) > monitoring, release.key


@pytest.mark.parametrize(("env", "site"), CASES)
def test_every_object_syncs_in_a_wave_after_everything_it_depends_on(env: str, site: str) -> None:
    """Issue 21: prepare-checkpoints (wave 0) mounted FSx while the FSx CSI driver came in wave 1: the Job never
    completed, the wave never got healthy, and Argo CD never applied wave 1. Dependencies are read off the objects
    (CRD groups, namespaces, volumes), not from alicerce's own tables."""
    rp = reference(env)
    delivery = SiteDelivery.of(rp, site)
    by_chart = {r.chart: r.key for r in delivery.releases}
    # the release that creates a namespace is the first to sync into it (a later one there, such as the CloudWatch
    # exporter after kube-prometheus-stack in monitoring, finds it)
    namespaces: dict[str, str] = {}
    for r in sorted(delivery.releases, key=lambda r: delivery.release_waves[r.key]):
        if r.namespace != "kube-system":
            namespaces.setdefault(r.namespace, r.key)
    everything = cluster_objects(rp, site, VOLUMES)  # the Pulumi-owned volumes too, with their drivers
    checked = 0
    for group, objs in delivery.objects.items():
        for obj in objs:
            for chart in _needed_charts(obj, everything, namespaces):
                key = by_chart.get(chart, chart)
                if key in delivery.release_waves:
                    assert delivery.group_waves[group] > delivery.release_waves[key], (obj["kind"], obj["metadata"]["name"], key)
                    checked += 1
    assert checked > 0
    # every Job of the tree mounts only what its wave can mount
    for release in delivery.releases:
        for dependency in release.depends_on:
            assert dependency not in delivery.release_waves or delivery.release_waves[release.key] > delivery.release_waves[dependency]


@pytest.mark.parametrize("env", ["prod", "dev"])
def test_each_namespace_has_one_application_that_creates_it_and_keeps_its_labels(env: str) -> None:
    """Two releases in monitoring (kube-prometheus-stack, then the CloudWatch exporter on AWS): both Applications setting
    managedNamespaceMetadata would both own the namespace's labels; the first to sync into it owns them, alone."""
    owners: dict[str, list[str]] = {}
    for app in applications(env).values():
        spec = app["spec"]
        if "CreateNamespace=true" in spec["syncPolicy"].get("syncOptions", []):
            owners.setdefault(f"{app['metadata']['labels']['alicerce.dev/site']}/{spec['destination']['namespace']}", []).append(
                app["metadata"]["name"]
            )
        else:
            assert "managedNamespaceMetadata" not in spec["syncPolicy"]
    assert all(len(names) == 1 for names in owners.values()), owners
    assert owners["aws/monitoring"] == ["aws-operators-kube-prometheus-stack"]
