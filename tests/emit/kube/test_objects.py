"""The pure function behind the in-cluster layer: tenancy, queues and priorities, valid manifests."""

from __future__ import annotations

from functools import cache
from typing import Any

import kubernetes_validate
import pytest

from alicerce.catalog import load_catalog
from alicerce.emit.kube.objects import CRD_OWNERS, KUEUE_API, cluster_objects
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT


@cache
def platform(env: str) -> ResolvedPlatform:
    return validated(load_file(ROOT / "platform.yaml", "platform.yaml"), env)


def find(objs: list[dict[str, Any]], kind: str, name: str | None = None, namespace: str | None = None) -> list[dict[str, Any]]:
    return [
        o
        for o in objs
        if o["kind"] == kind
        and (name is None or o["metadata"]["name"] == name)
        and (namespace is None or o["metadata"].get("namespace") == namespace)
    ]


CASES = [("prod", "aws"), ("prod", "dc1"), ("dev", "aws")]
# GPU cap of each team namespace of prod at the aws site: nominal quota plus what it may borrow, by hand
# from platform.yaml: train-p5 holds 16 x 8 = 128 GPUs, infer-l40s 12 x 4 = 48, infer-l4 16 x 1 x 4 replicas = 64
PROD_AWS_GPU_CAPS = {
    "research": 96 + 32,  # train-p5, borrowing limited to 32
    "applied-ml": (32 + 96) + (8 + 40),  # train-p5 and infer-l40s, no borrowing limit: up to the pools' size
    "serving": (32 + 16) + (48 + 16),  # infer-l40s and time-sliced infer-l4
}


@pytest.mark.parametrize(("env", "site"), CASES)
def test_every_team_namespace_has_gpu_quota_default_deny_and_queue(env: str, site: str) -> None:
    rp = platform(env)
    objs = cluster_objects(rp, site)
    namespaces = {o["metadata"]["name"]: o for o in find(objs, "Namespace")}
    teams = [t for t in rp.site(site).teams if rp.site(site).quotas(t)]
    assert teams
    for team in teams:
        for ns in team.namespaces:
            labels = namespaces[ns]["metadata"]["labels"]
            assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
            assert labels["alicerce.dev/team"] == team.name and labels["alicerce.dev/cost-center"] == team.cost_center
            quota = find(objs, "ResourceQuota", namespace=ns)[0]
            cap = int(quota["spec"]["hard"]["requests.nvidia.com/gpu"])
            assert cap >= sum(q.units for q, _ in rp.site(site).quotas(team))
            if (env, site) == ("prod", "aws"):
                assert cap == PROD_AWS_GPU_CAPS[team.name], team.name
            deny = find(objs, "NetworkPolicy", "default-deny", ns)[0]["spec"]
            assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
            allows = {p["metadata"]["name"] for p in find(objs, "NetworkPolicy", namespace=ns)}
            assert {"allow-same-team", "allow-dns", "allow-metrics-scraping"} <= allows
            queue = find(objs, "LocalQueue", namespace=ns)[0]
            assert queue["apiVersion"] == KUEUE_API and queue["spec"]["clusterQueue"] == team.name
            binding = find(objs, "RoleBinding", namespace=ns)[0]
            assert [s["name"] for s in binding["subjects"]] == team.spec.groups
            assert binding["roleRef"]["name"] == "alicerce-team"  # not the built-in edit
            [limits] = find(objs, "LimitRange", namespace=ns)[0]["spec"]["limits"]
            assert "default" not in limits and "max" not in limits  # requests only: a bigger request is never rejected


@pytest.mark.parametrize(("env", "site"), CASES)
def test_cluster_queue_quotas_equal_the_spec(env: str, site: str) -> None:
    rp = platform(env)
    objs = cluster_objects(rp, site)
    site_pools = {p.name for p in rp.pools if p.site.name == site}
    for team in rp.teams:
        expected = {q.pool: (q.gpus, q.borrowing_limit) for q in team.spec.quotas if q.pool in site_pools}
        queues = find(objs, "ClusterQueue", team.name)
        if not expected:
            assert not queues
            continue
        spec = queues[0]["spec"]
        assert spec["cohortName"] == rp.spec.tenancy.cohort
        assert spec["namespaceSelector"] == {"matchLabels": {"alicerce.dev/team": team.name}}
        got = {}
        cpu_flavors = [p.name for p in rp.site(site).pools if p.gpu is None and p.spec.purpose != "system"]
        names = [f["name"] for f in spec["resourceGroups"][0]["flavors"]]
        assert names[: len(cpu_flavors)] == cpu_flavors  # CPU pools first: CPU-only jobs take them before any GPU pool
        for flavor in spec["resourceGroups"][0]["flavors"]:
            gpu = next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")
            assert find(objs, "ResourceFlavor", flavor["name"])  # every flavor a queue names exists
            if flavor["name"] in cpu_flavors:
                assert gpu["nominalQuota"] == "0"
                continue
            got[flavor["name"]] = (int(gpu["nominalQuota"]), int(gpu["borrowingLimit"]) if "borrowingLimit" in gpu else None)
        assert got == expected
    research = find(objs, "ClusterQueue", "research")
    if env == "prod" and site == "aws":
        assert research[0]["spec"]["resourceGroups"][0]["flavors"][1]["resources"][2] == {
            "name": "nvidia.com/gpu",
            "nominalQuota": "96",
            "borrowingLimit": "32",
        }


def test_priority_classes_rank_inference_over_training_over_batch() -> None:
    objs = cluster_objects(platform("prod"), "aws")
    value = {o["metadata"]["name"]: o["value"] for o in find(objs, "PriorityClass")}
    assert value["alicerce-inference"] > value["alicerce-training"] > value["alicerce-batch"]
    # team priority orders each kind's work: a critical team's inference above a normal team's, both below no kind above
    workload = {o["metadata"]["name"]: o["value"] for o in find(objs, "WorkloadPriorityClass")}
    assert workload["alicerce-serving-inference"] > workload["alicerce-applied-ml-inference"] > value["alicerce-inference"]
    assert workload["alicerce-research-training"] > workload["alicerce-applied-ml-training"] < value["alicerce-inference"]
    assert "alicerce-research-inference" not in workload  # research has no inference pool


@pytest.mark.parametrize("site", ["aws", "dc1"])
def test_resource_flavors_follow_pools_and_carry_their_taints_as_tolerations(site: str) -> None:
    """Issue 21: on both targets a tainted pool's flavor injects the toleration (Kueue podset.go 78-91); with the
    taint as nodeTaints instead, a GPU job without its own toleration skipped the flavor (flavorassigner.go 1239-1244)."""
    objs = cluster_objects(platform("prod"), site)
    flavors = {o["metadata"]["name"]: o["spec"] for o in find(objs, "ResourceFlavor")}
    gpu = "train-p5" if site == "aws" else "onprem-h100"
    assert flavors[gpu]["nodeLabels"] == {"alicerce.dev/pool": gpu}
    assert flavors[gpu]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert all("nodeTaints" not in f for f in flavors.values())
    if site == "aws":
        assert set(flavors) == {"data-prep", "train-p5", "infer-l40s", "infer-l4"}
        assert flavors["data-prep"] == {"nodeLabels": {"alicerce.dev/pool": "data-prep"}}


def test_kueue_api_version_is_the_one_the_pinned_release_serves() -> None:
    rp = platform("prod")
    release = next(r for r in load_catalog().versions.kueue if r.version == rp.versions.kueue)
    assert f"kueue.x-k8s.io/{release.apiVersion}" == KUEUE_API


def test_objects_are_deterministic_plain_data() -> None:
    import json

    a = json.dumps(cluster_objects(platform("prod"), "aws"))
    assert a == json.dumps(cluster_objects(platform("prod"), "aws"))


@pytest.mark.parametrize(("env", "site"), CASES)
def test_manifests_validate_against_the_kubernetes_schemas(env: str, site: str) -> None:
    rp = platform(env)
    version = rp.versions.kubernetes
    supported = {".".join(v.split(".")[:2]) for v in kubernetes_validate.utils.all_versions()}
    # the resolved version, or the newest the offline schemas know
    target = f"{version}.0" if version in supported else kubernetes_validate.latest_version()
    checked = 0
    for obj in cluster_objects(rp, site):
        if obj["apiVersion"].rpartition("/")[0] in CRD_OWNERS:
            continue  # CRD kinds are not in the Kubernetes schemas: Kueue's shape is asserted above, rules by promtool
        kubernetes_validate.validate(obj, target, strict=True)
        checked += 1
    assert checked >= 10


def test_team_namespaces_get_claims_on_shared_file_systems_and_on_the_lake_only_if_granted() -> None:
    rp = platform("prod")
    fsx = {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123", "volumeAttributes": {"dnsname": "d", "mountname": "m"}}}
    objs = cluster_objects(rp, "aws", {"datasets": fsx, "checkpoints": fsx})
    claims = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs if o["kind"] == "PersistentVolumeClaim"}
    volumes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "PersistentVolume"}
    # datasets is linked to the data lake: serving (and its canary namespace) has no grant on the lake, research has
    assert ("research", "datasets") in claims and ("serving-canary", "datasets") not in claims
    assert ("serving-canary", "checkpoints") in claims and ("research", "checkpoints") in claims  # not linked: every team
    for (namespace, name), claim in claims.items():
        volume = volumes[claim["spec"]["volumeName"]]
        assert volume["spec"]["claimRef"] == {"namespace": namespace, "name": name}  # pre-bound, one volume per claim
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    datasets = volumes[claims[("research", "datasets")]["spec"]["volumeName"]]
    assert datasets["spec"]["csi"]["volumeHandle"] == "fs-0123" and datasets["spec"]["mountOptions"] == ["flock"]
    assert datasets["spec"]["capacity"]["storage"] == "50400Gi"  # the FSx size resolve decided
    # without deploy-time sources, FSx tiers get no claims (there is nothing yet to point at)
    assert not [o for o in cluster_objects(rp, "aws") if o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"] == "datasets"]


def test_efs_volumes_mount_with_iam_so_the_file_system_policy_admits_them() -> None:
    """Issue 21: the EFS file system policy grants mount and write to the nodes' IAM role only (no anonymous client);
    efs-utils presents that role only with the ``iam`` mount option, which needs ``tls`` (EFS user guide, "Mounting
    with IAM authorization")."""
    objs = cluster_objects(platform("prod"), "aws", {"home": {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": "fs-0456"}}})
    efs = [o["spec"] for o in objs if o["kind"] == "PersistentVolume" and o["spec"].get("csi", {}).get("driver") == "efs.csi.aws.com"]
    assert efs
    assert all(v["mountOptions"] == ["tls", "iam"] for v in efs)


def test_on_prem_shared_file_systems_come_from_the_spec() -> None:
    objs = cluster_objects(platform("prod"), "dc1")
    volumes = {o["metadata"]["labels"]["alicerce.dev/storage-tier"]: o["spec"] for o in objs if o["kind"] == "PersistentVolume"}
    assert volumes["home"]["nfs"] == {"server": "nfs.dc1.acme.example", "path": "/export/home"}
    # the same options the nodes mount it with (alicerce.resolve decides them once for both)
    assert volumes["home"]["mountOptions"] == ["vers=4.1", "hard", "noatime", "nconnect=8", "nosuid", "nodev"]
    assert volumes["dc1-lustre"]["hostPath"] == {"path": "/lustre", "type": "Directory"}  # mounted by the parallel_fs_client role


def test_teams_cannot_undo_their_guard_rails() -> None:
    objs = cluster_objects(platform("prod"), "aws")
    roles = {o["metadata"]["name"]: o for o in find(objs, "ClusterRole")}
    selector = roles["alicerce-team"]["aggregationRule"]["clusterRoleSelectors"]
    assert selector == [{"matchLabels": {"alicerce.dev/aggregate-to-team": "true"}}]  # not aggregate-to-edit, which writes policies
    parts = [r for r in roles.values() if r["metadata"].get("labels", {}).get("alicerce.dev/aggregate-to-team") == "true"]
    writes = {"create", "update", "patch", "delete", "deletecollection", "*"}
    guarded = {"networkpolicies", "resourcequotas", "limitranges", "roles", "rolebindings", "namespaces", "priorityclasses"}
    for rule in (rule for role in parts for rule in role["rules"]):
        assert "*" not in rule["resources"] and "*" not in rule["apiGroups"]
        if set(rule["verbs"]) & writes:
            assert not set(rule["resources"]) & guarded, rule


def test_each_team_may_name_only_its_own_priorities() -> None:
    objs = cluster_objects(platform("prod"), "aws")
    policies = {o["metadata"]["name"]: o for o in find(objs, "ValidatingAdmissionPolicy")}
    bindings = {o["metadata"]["name"]: o for o in find(objs, "ValidatingAdmissionPolicyBinding")}
    research = policies["alicerce-priorities-research"]["spec"]
    pods, templates, jobs = (v["expression"] for v in research["validations"])
    assert "['alicerce-training', 'alicerce-batch']" in pods  # research runs training and batch work, no inference
    assert "object.spec.template.spec.priorityClassName in ['alicerce-training', 'alicerce-batch']" in templates  # Kueue reads these
    assert "['alicerce-research-training', 'alicerce-research-batch']" in jobs
    assert bindings["alicerce-priorities-research"]["spec"]["matchResources"] == {
        "namespaceSelector": {"matchLabels": {"alicerce.dev/team": "research"}}
    }
    assert bindings["alicerce-priorities-research"]["spec"]["validationActions"] == ["Deny"]
    resources = {r for rule in research["matchConstraints"]["resourceRules"] for r in rule["resources"]}
    assert {"pods", "jobs", "trainjobs", "deployments", "rayjobs"} <= resources


def test_the_dc1_home_job_makes_each_team_directory_as_the_team_not_as_root() -> None:
    """Issue 21: an NFS export squashes root (exports(5) root_squash is the default), so the prepare Job's root was
    nobody and could make nothing in the export. Each team's directory is made by a container running as the team's
    POSIX identity (the one its EFS access point enforces on AWS), under restricted Pod Security; a missing or
    read-only teams/ directory fails with the command the NFS administrator runs."""
    from alicerce.emit.kube.storage import team_posix_ids
    from tests.emit.kube.cluster_model import pod_security_violations

    rp = platform("prod")
    [job] = find(cluster_objects(rp, "dc1"), "Job", "prepare-home")
    pod = job["spec"]["template"]["spec"]
    teams = [t.name for t in rp.site("dc1").teams]
    ids = team_posix_ids(tuple(teams))
    assert sorted(c["name"] for c in pod["containers"]) == sorted(f"prepare-{t}" for t in teams)
    for container in pod["containers"]:
        team = container["name"].removeprefix("prepare-")
        context = container["securityContext"]
        assert context["runAsUser"] == context["runAsGroup"] == ids[team] >= 20000
        script = container["command"][-1]
        assert f"mkdir /fs/teams/{team} " in script and "install -d -m 1777 <export>/teams" in script
    assert pod_security_violations(pod, "restricted") == []
    # file systems that do not squash root keep one root container (the Lustre export of dc1 is host-mounted)
    [lustre] = find(cluster_objects(rp, "dc1"), "Job", "prepare-dc1-lustre")
    assert [c["securityContext"]["runAsUser"] for c in lustre["spec"]["template"]["spec"]["containers"]] == [0]


def test_the_dc1_home_job_script_needs_only_a_writable_teams_directory(tmp_path: Any) -> None:
    """The team container's script, run as a non-root user against a stand-in export (its /proc/mounts line says nfs4)."""
    import subprocess

    [job] = find(cluster_objects(platform("prod"), "dc1"), "Job", "prepare-home")
    container = job["spec"]["template"]["spec"]["containers"][0]
    team = container["name"].removeprefix("prepare-")
    export, mounts = tmp_path / "export", tmp_path / "mounts"
    export.mkdir()
    mounts.write_text(f"nfs.dc1.acme.example:/export/home {export} nfs4 rw,relatime 0 0\n")
    script = container["command"][-1].replace("/proc/mounts", str(mounts)).replace("/fs", str(export))

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False, timeout=30)

    missing = run()
    assert missing.returncode == 1 and "install -d -m 1777 <export>/teams" in missing.stderr
    (export / "teams").mkdir(mode=0o1777)
    (export / "teams").chmod(0o1777)
    done = run()
    assert done.returncode == 0, done.stderr
    assert (export / "teams" / team).is_dir() and (export / "teams" / team).stat().st_mode & 0o7777 == 0o1777
    # a directory that exists (an administrator made it, or another id) is left alone: chmod by a non-owner fails
    (export / "teams" / team).chmod(0o770)
    again = run()
    assert again.returncode == 0, again.stderr
    assert (export / "teams" / team).stat().st_mode & 0o7777 == 0o770
    mounts.write_text(f"/dev/sda1 {export} ext4 rw 0 0\n")  # the node's own disk: nothing is made
    assert run().returncode == 1
