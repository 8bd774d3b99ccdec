"""One scenario per promise, checked over alicerce's objects with the admission, scheduling and network rules
of tests/emit/kube/cluster_model.py (each written from the controllers' source, cited there).

The monitoring promises (an idle GPU raises no alert, a lost GPU does) are promtool tests with the
exporters' label shapes: tests/emit/kube/test_monitoring.py::test_gpu_alerts_fire_on_their_faults_and_clear.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from alicerce.emit.gitops.argocd import argocd_values
from alicerce.emit.kube.common import fabric_units_per_node
from alicerce.emit.kube.objects import cluster_objects
from alicerce.emit.kube.operators import CONTROLLER_PLACEMENT, operator_releases
from alicerce.emit.kube.tenancy import INLINE_STORAGE_VOLUMES
from alicerce.plan.platform import plan_platform
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file, load_text
from tests.conftest import ROOT
from tests.emit.kube.cluster_model import (
    RESTRICTED_VOLUMES,
    Admission,
    Endpoint,
    Job,
    Node,
    admission_denials,
    admit,
    feasible,
    node_of,
    pod_security_violations,
    quantity,
    reachable,
)
from tests.emit.kube.test_objects import platform

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# a p5 training pod as NCCL-over-EFA jobs ask for it (AWS's EFA examples also request huge pages)
EFA_POD = {"cpu": "96", "memory": "1000Gi", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5120Mi"}
FSX = {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123", "volumeAttributes": {"dnsname": "fs.example", "mountname": "abc"}}}
EFS = {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": "fs-0456"}}


def world(env: str, site: str) -> tuple[ResolvedPlatform, list[dict[str, Any]], dict[str, Any]]:
    rp = platform(env)
    objs = cluster_objects(rp, site, {"datasets": FSX, "checkpoints": FSX, "home": EFS})
    release = next(r for r in operator_releases(rp, site) if r.key == "kueue")
    return rp, objs, yaml.safe_load(release.values["managerConfig"]["controllerManagerConfigYaml"])


def nodes(rp: ResolvedPlatform, site: str) -> list[Any]:
    return [node_of(p, fabric_units_per_node(p)) for p in rp.site(site).pools]


def test_a_multi_node_efa_training_job_of_research_is_admitted_on_train_p5_only() -> None:
    rp, objs, config = world("prod", "aws")
    job = Job("research", count=4, requests=EFA_POD, tolerations=[GPU_TOLERATION])
    admission = admit(objs, config, job)
    assert isinstance(admission, Admission), admission
    assert admission.flavor == "train-p5"
    assert feasible(nodes(rp, "aws"), EFA_POD, admission) == ["train-p5"]
    # 12 nodes' worth of research's 96-GPU quota: a 13-node job waits (borrowing left out of the model)
    assert not isinstance(admit(objs, config, Job("research", count=13, requests=EFA_POD, tolerations=[GPU_TOLERATION])), Admission)


def test_the_same_job_without_the_gpu_toleration_is_admitted_with_it_injected() -> None:
    """Issue 21: GPU jobs without an explicit toleration were never admitted on EKS (the GPU flavors carried the taint
    as nodeTaints, K flavorassigner.go 1239-1244). Now the flavor's tolerations are injected (K podset.go 78-91)."""
    rp, objs, config = world("prod", "aws")
    admission = admit(objs, config, Job("research", count=4, requests=EFA_POD))
    assert isinstance(admission, Admission), admission
    assert admission.flavor == "train-p5"
    assert feasible(nodes(rp, "aws"), EFA_POD, admission) == ["train-p5"]


def test_an_rdma_job_on_dc1_is_admitted_on_the_infiniband_pool() -> None:
    rp, objs, config = world("prod", "dc1")
    pod = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "rdma/ib": "1"}
    admission = admit(objs, config, Job("research", count=8, requests=pod, tolerations=[GPU_TOLERATION]))
    assert isinstance(admission, Admission) and admission.flavor == "onprem-h100"
    assert feasible(nodes(rp, "dc1"), pod, admission) == ["onprem-h100"]
    # no CPU pool at dc1: a CPU-only pod (a Ray head) runs on the GPU nodes, with the toleration injected
    head = {"cpu": "4", "memory": "16Gi"}
    admission = admit(objs, config, Job("research", count=1, requests=head))
    assert isinstance(admission, Admission) and admission.flavor == "onprem-h100"
    assert feasible(nodes(rp, "dc1"), head, admission) == ["onprem-h100"]
    # EFA does not exist on dc1: a job asking for it is told so instead of waiting silently
    reason = admit(objs, config, Job("research", count=1, requests=EFA_POD, tolerations=[GPU_TOLERATION]))
    assert reason == "resource vpc.amazonaws.com/efa unavailable in ClusterQueue"


def test_a_cpu_data_prep_job_lands_on_data_prep_first() -> None:
    rp, objs, config = world("prod", "aws")
    pod = {"cpu": "16", "memory": "64Gi", "ephemeral-storage": "100Gi"}
    admission = admit(objs, config, Job("research", count=10, requests=pod))
    assert isinstance(admission, Admission) and admission.flavor == "data-prep"
    assert feasible(nodes(rp, "aws"), pod, admission) == ["data-prep"]
    # the price of injected tolerations (a flavor's tolerations also count against its nodeTaints, K flavorassigner.go
    # 1239): a CPU job larger than the team's data-prep share overflows onto the team's own GPU pool quota; one larger
    # than both waits
    overflow = admit(objs, config, Job("research", count=100, requests=pod))
    assert isinstance(overflow, Admission) and overflow.flavor == "train-p5"
    reason = admit(objs, config, Job("research", count=200, requests=pod))
    assert not isinstance(reason, Admission) and "insufficient quota" in str(reason)


def test_an_inference_deployment_of_serving_lands_on_its_gpu_pool() -> None:
    rp, objs, config = world("prod", "aws")
    pod = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
    admission = admit(objs, config, Job("serving-canary", count=2, requests=pod, tolerations=[GPU_TOLERATION]))
    assert isinstance(admission, Admission) and admission.flavor == "infer-l40s"
    assert feasible(nodes(rp, "aws"), pod, admission) == ["infer-l40s"]


def _pod(namespace: str, last: int) -> Endpoint:
    return Endpoint(namespace, f"10.128.0.{last}")


@pytest.mark.parametrize(("env", "site"), [("prod", "aws"), ("prod", "dc1")])
def test_a_team_cannot_reach_another_team_but_reaches_its_own_namespaces_dns_and_api(env: str, site: str) -> None:
    rp, objs, _ = world(env, site)
    teams = rp.site(site).teams
    for team in teams:
        for other in teams:
            for ns in team.namespaces:
                for port in (80, 443, 8000, 29500):
                    got = reachable(objs, _pod(ns, 1), _pod(other.namespaces[0], 2), port)
                    assert got is (team.name == other.name), (ns, other.name, port)
    dns = Endpoint("kube-system", "10.128.9.9", (("k8s-app", "kube-dns"),))
    assert reachable(objs, _pod("research", 1), dns, 53, "UDP")
    assert reachable(objs, Endpoint("monitoring", "10.128.8.8"), _pod("research", 1), 8000)  # Prometheus scrapes
    if site == "dc1":  # in-cluster clients reach the API servers on the control-plane hosts, and NodeLocal DNSCache
        assert reachable(objs, _pod("research", 1), Endpoint(None, "10.30.0.11"), 6443)
        assert reachable(objs, _pod("research", 1), Endpoint(None, "169.254.25.10"), 53, "UDP")
    else:  # the EKS Pod Identity agent hands out AWS credentials
        assert reachable(objs, _pod("research", 1), Endpoint(None, "169.254.170.23"), 80)
        assert not reachable(objs, _pod("research", 1), Endpoint(None, "169.254.169.254"), 80)  # not the instance metadata


def test_serving_is_reachable_from_the_gateway_and_canary_reaches_serving() -> None:
    _, objs, _ = world("prod", "aws")
    gateway = Endpoint("envoy-gateway-system", "10.128.7.7")
    assert reachable(objs, gateway, _pod("serving", 1), 8000)
    assert not reachable(objs, gateway, _pod("research", 1), 8000)  # only serving teams accept the gateway
    assert reachable(objs, _pod("serving-canary", 1), _pod("serving", 2), 8000)


def _volumes_of(objs: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    return [o["spec"] for o in objs if o["kind"] == "PersistentVolume" and o["spec"]["claimRef"]["namespace"] == namespace]


def _where(spec: dict[str, Any]) -> str:
    if "hostPath" in spec:
        return str(spec["hostPath"]["path"])
    if "nfs" in spec:
        return str(spec["nfs"]["path"])
    csi = spec["csi"]
    return str(csi.get("volumeAttributes", {}).get("mountname") or csi["volumeHandle"])


@pytest.mark.parametrize("site", ["aws", "dc1"])
def test_a_team_mounts_only_its_own_directory_or_read_only_data(site: str) -> None:
    rp, objs, _ = world("prod", site)
    teams = rp.site(site).teams
    for team in teams:
        for ns in team.namespaces:
            volumes = _volumes_of(objs, ns)
            assert volumes
            for spec in volumes:
                where = _where(spec)
                others = [t.name for t in teams if t.name != team.name and f"teams/{t.name}" in where]
                assert not others, (ns, where)
                # every claim a team can bind names its own namespace (claimRef): no claim of another team binds it
                read_only = spec["accessModes"] == ["ReadOnlyMany"]
                assert read_only or where.endswith(f"teams/{team.name}"), (ns, where)
                if read_only and "hostPath" not in spec:
                    assert next(iter(v for k, v in spec.items() if k in ("csi", "nfs")))["readOnly"] is True
    if site == "dc1":  # Lustre: the team's directory below the node's mount, only on the pools that mount it
        [lustre] = [s for s in _volumes_of(objs, "research") if "hostPath" in s]
        assert lustre["hostPath"] == {"path": "/lustre/teams/research", "type": "Directory"}
        terms = lustre["nodeAffinity"]["required"]["nodeSelectorTerms"]
        pools = ["dc1-system", "onprem-h100"]  # every dc1 pool's hosts mount it (the system pool runs prepare-dc1-lustre)
        assert terms == [{"matchExpressions": [{"key": "alicerce.dev/pool", "operator": "In", "values": pools}]}]
    else:  # the read-only datasets are read-only for every pod, whatever its volumeMounts say
        policy = next(o for o in objs if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == "alicerce-read-only-claims")
        assert "['datasets']" in policy["spec"]["validations"][0]["expression"]


def test_team_directories_are_made_only_on_a_mounted_file_system() -> None:
    _, objs, _ = world("prod", "dc1")
    [job] = [o for o in objs if o["kind"] == "Job" and o["metadata"]["name"] == "prepare-dc1-lustre"]
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert script.index("/proc/mounts") < script.index("mkdir")  # checks the type first
    assert '" lustre "' in script and "/fs/teams/research" in script and "/fs/teams/applied-ml" in script


def _team_pod(namespace: str, volumes: list[dict[str, Any]]) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "volumeMounts": [{"name": v["name"], "mountPath": f"/{v['name']}"} for v in volumes]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "reader", "namespace": namespace},
        "spec": {"containers": [container], "volumes": volumes},
    }


@pytest.mark.parametrize(("example", "env", "site", "team", "level"), [("onprem-superpod", "prod", "dc2", "alignment", "baseline")])
def test_a_team_cannot_mount_a_shared_file_system_past_its_claims(example: str, env: str, site: str, team: str, level: str) -> None:
    """Below restricted, Pod Security lets a pod name an NFS export inline (baseline forbids only hostPath among
    volume sources: pod-security-admission policy/check_hostPathVolumes.go; restricted's allow-list is
    check_restrictedVolumes.go), so a team could mount the root of the shared home file system and read every
    other team's directory: the team's claim must stay its only way in."""
    rp = validated(load_file(ROOT / "examples" / f"{example}.yaml", f"{example}.yaml"), env)
    assert rp.spec.security.pod_security == level
    objs = cluster_objects(rp, site)
    home = next(t for t in rp.site(site).storage if t.name == "home")
    assert home.spec.team_access == "per-team"
    root = {"name": "home", "nfs": {"server": home.spec.onprem.server, "path": home.spec.onprem.export}}
    inline = _team_pod(team, [root])
    assert pod_security_violations(inline["spec"], level) == []  # the namespace's own level lets it through
    assert admission_denials(objs, team, inline), "a team pod mounted the root of a shared file system"
    lustre_root = _team_pod(team, [{"name": "lustre", "hostPath": {"path": "/lustre"}}])
    assert pod_security_violations(lustre_root["spec"], level) or admission_denials(objs, team, lustre_root)
    claim = _team_pod(team, [{"name": "home", "persistentVolumeClaim": {"claimName": "home"}}])
    assert pod_security_violations(claim["spec"], level) == [] and admission_denials(objs, team, claim) == []


def test_the_team_volumes_policy_names_every_inline_storage_source_of_the_pinned_kubernetes() -> None:
    """The API server type-checks the policy's CEL against the pod schema: a field Kubernetes 1.35 does not have
    would break the policy (and, failing closed, every pod); a source it has and the policy misses stays open."""
    definitions = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.35.0-local-strict" / "_definitions.json"
    volume = json.loads(definitions.read_text())["$defs"]["io.k8s.api.core.v1.Volume"]["properties"]
    sources = set(volume) - {"name"}
    assert set(INLINE_STORAGE_VOLUMES) <= sources
    assert sources - set(INLINE_STORAGE_VOLUMES) == RESTRICTED_VOLUMES | {"image"}


def test_the_admission_policies_deny_what_they_promise_when_their_cel_runs() -> None:
    """The reference's policies evaluated, not read: a writable mount of the read-only datasets, and a team naming
    another kind's or another team's priorities, are denied; the ordinary forms pass."""
    _, objs, _ = world("prod", "aws")
    writable = _team_pod("research", [{"name": "d", "persistentVolumeClaim": {"claimName": "datasets"}}])
    read_only = _team_pod("research", [{"name": "d", "persistentVolumeClaim": {"claimName": "datasets", "readOnly": True}}])
    assert admission_denials(objs, "research", writable) and admission_denials(objs, "research", read_only) == []
    pod = _team_pod("research", [])
    assert admission_denials(objs, "research", pod) == []
    assert admission_denials(objs, "research", pod | {"spec": {**pod["spec"], "priorityClassName": "alicerce-inference"}})
    assert admission_denials(objs, "research", pod | {"spec": {**pod["spec"], "priorityClassName": "alicerce-training"}}) == []
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"kueue.x-k8s.io/priority-class": ""}}}
    for name, denied in (("alicerce-serving-inference", True), ("alicerce-research-training", False)):
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = name
        assert bool(admission_denials(objs, "research", job, group="batch", resource="jobs")) is denied, name


@pytest.mark.parametrize("env", ["prod", "dev"])
def test_every_declared_workload_is_admitted_on_the_pool_the_plan_puts_it_on(env: str) -> None:
    """The plan places each workload on a pool; Kueue must then admit it there through its team's queue. One pod of
    the workload's shape (a node's GPUs of the pool, its taints tolerated, its pool selected; CPU only for data
    preparation) in the team's namespace: a pool the team holds no quota on has no flavor in its ClusterQueue, and
    the workload would wait for ever (K flavorassigner.go 1246-1253: a flavor whose nodeLabels the pod's selector
    contradicts is skipped)."""
    rp = platform(env)
    plan = plan_platform(rp)
    teams = {t.name: t for t in rp.teams}
    placed = [(w, rp.pool(w.pool)) for w in plan.workloads if w.pool is not None]
    assert placed
    for w, pool in placed:
        site = pool.spec.site
        _, objs, config = world(env, site)
        requests = {"cpu": "4", "memory": "16Gi"}
        if pool.gpu_units is not None:
            requests |= {r: str(n) for r, n in pool.gpu_units.resources.items()}
        tolerations = [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in pool.spec.taints]
        job = Job(teams[w.team].namespaces[0], 1, requests, tolerations, {"alicerce.dev/pool": pool.name})
        admission = admit(objs, config, job)
        assert isinstance(admission, Admission) and admission.flavor == pool.name, (w.name, pool.name, admission)


@pytest.mark.parametrize("site", ["aws", "dc1"])
def test_the_kuberay_operator_reaches_the_ray_heads_of_team_namespaces(site: str) -> None:
    """KubeRay's controllers call each Ray head from the operator pod: the RayJob controller polls the job through
    the head Service's "dashboard" port (kuberay v1.7.0 ray-operator/controllers/ray/rayjob_controller.go 218, 301;
    default 8265, utils/constant.go 107), the RayService controller the dashboard and the head's Serve proxy
    (rayservice_controller.go 2014, 2092; default 8000). Under a team's default-deny ingress no RayJob would
    ever finish and no RayService would become ready."""
    rp, objs, _ = world("prod", site)
    assert rp.spec.operators.kuberay.enabled
    operator = Endpoint("kuberay-system", "10.128.6.6", (("app.kubernetes.io/name", "kuberay-operator"),))
    head = Endpoint("research", "10.128.0.5", (("ray.io/node-type", "head"), ("ray.io/cluster", "rc")))
    worker = Endpoint("research", "10.128.0.6", (("ray.io/node-type", "worker"), ("ray.io/cluster", "rc")))
    assert reachable(objs, operator, head, 8265) and reachable(objs, operator, head, 8000)
    assert not reachable(objs, operator, worker, 8265)  # the heads only
    assert not reachable(objs, operator, head, 6379)  # and only the ports the operator calls
    other = next(t for t in rp.site(site).teams if t.name != "research")
    assert not reachable(objs, _pod(other.namespaces[0], 3), head, 8265)  # no other team through that door


# Where each chart's controller pods (Deployments, StatefulSets; not the DaemonSets that serve every node) take
# their nodeSelector and tolerations: alicerce's table, whose paths test_upstream checks against each chart's
# vendored values, and the AWS controllers (their values' root). What this test adds is the scheduling itself.
CONTROLLER_PODS = {**CONTROLLER_PLACEMENT, "cluster-autoscaler": ("",), "aws-load-balancer-controller": ("",)}
# kubespray taints every control-plane node (kubespray v2.31.0 roles/kubernetes/control-plane: node-role taint)
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "value": "", "effect": "NoSchedule"}


def _placement(values: dict[str, Any], path: str) -> Admission:
    at: Any = values
    for part in [p for p in path.split(".") if p]:
        at = at.get(part, {})
    return Admission("", dict(at.get("nodeSelector", {})), list(at.get("tolerations", [])))


def _controller_pods(rp: ResolvedPlatform, site: str) -> list[tuple[str, Admission]]:
    from alicerce.targets.aws.components.controllers import controller_releases
    from alicerce.targets.aws.spec import AwsSite

    releases = operator_releases(rp, site)
    if isinstance(rp.site(site).spec, AwsSite):
        releases += controller_releases(rp, rp.site(site).spec)
    # every release runs a controller this test places, but the EFA device plugin (a DaemonSet and nothing else)
    assert {r.key for r in releases} - set(CONTROLLER_PODS) <= {"aws-efa-k8s-device-plugin"}
    pods = [(f"{r.key}:{path or '.'}", _placement(r.values, path)) for r in releases for path in CONTROLLER_PODS.get(r.key, ())]
    # Argo CD (where the site delivers with it): every component falls back to global.nodeSelector/tolerations
    # (argo-cd chart 10.1.1 templates, `<component>.nodeSelector | default .Values.global.nodeSelector`)
    pods.append(("argo-cd:global", _placement(argocd_values(rp.site(site).pools), "global")))
    objs = cluster_objects(rp, site, {"datasets": FSX, "checkpoints": FSX, "home": EFS})
    for job in (o for o in objs if o["kind"] == "Job"):
        spec = job["spec"]["template"]["spec"]
        pods.append((job["metadata"]["name"], Admission("", spec.get("nodeSelector", {}), spec.get("tolerations", []))))
    return pods


@pytest.mark.parametrize(("env", "site"), [("prod", "aws"), ("prod", "dc1"), ("dev", "aws")])
def test_every_platform_controller_and_job_schedules_on_the_system_pool_only(env: str, site: str) -> None:
    """Issue 21: at dc1 every node is tainted (the control plane by kubespray, the GPU nodes by nvidia.com/gpu),
    so a controller without placement stays Pending; at AWS it may land on an untainted Spot data-prep node."""
    rp = platform(env)
    world_nodes = nodes(rp, site)
    if rp.site(site).capabilities.nodes_by_ansible:
        world_nodes.append(
            Node("control-plane", {"node-role.kubernetes.io/control-plane": ""}, [CONTROL_PLANE], {"cpu": 64, "memory": 2.0**40})
        )
    system = sorted(p.name for p in rp.site(site).pools if p.spec.purpose == "system")
    assert system, f"{env}/{site} has no system pool (AL320)"
    pods = _controller_pods(rp, site)
    assert any(name.startswith("kueue:") for name, _ in pods)
    wrong = {name: where for name, admission in pods if (where := feasible(world_nodes, {}, admission)) != system}
    assert wrong == {}, f"should run on {system} only"


def test_a_system_pool_taint_is_tolerated_by_every_platform_controller() -> None:
    text = (ROOT / "platform.yaml").read_text()
    system = '    purpose: system\n    onprem:\n      hosts: ["svc-[1:2].dc1.acme.example"]\n'
    assert system in text
    tainted = text.replace(system, system + "    taints: [{key: dedicated, value: system, effect: NoSchedule}]\n")
    rp = validated(load_text(tainted, "platform.yaml"), "prod")
    pods = _controller_pods(rp, "dc1")
    assert len(pods) > 5
    untolerated = [name for name, admission in pods if not any(t["key"] == "dedicated" for t in admission.tolerations)]
    assert untolerated == []


@pytest.mark.parametrize(("env", "site"), [("prod", "aws"), ("prod", "dc1")])
def test_kueue_manages_jobs_in_team_namespaces_only(env: str, site: str) -> None:
    """Issue 21: Kueue's default managedJobsNamespaceSelector leaves out only kube-system and kueue-system, so its pod
    integration gated the platform's own pods (monitoring, alicerce-system) too."""
    from tests.emit.kube.cluster_model import _selects

    rp, objs, config = world(env, site)
    selector = config["managedJobsNamespaceSelector"]
    namespaces = {o["metadata"]["name"]: o["metadata"].get("labels", {}) for o in objs if o["kind"] == "Namespace"}
    teams = {ns for team in rp.site(site).teams for ns in team.namespaces}
    assert teams and set(namespaces) - teams
    assert {name for name, labels in namespaces.items() if _selects(selector, labels)} == teams


def test_time_sliced_gpus_are_attributed_to_the_pods_that_share_them() -> None:
    """Issue 21: dcgm-exporter maps a time-sliced GPU to its pods only with KUBERNETES_VIRTUAL_GPUS=true."""
    rp = platform("prod")
    values = next(r for r in operator_releases(rp, "aws") if r.key == "gpu-operator").values
    assert {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"} in values["dcgmExporter"]["env"]
    dc1 = next(r for r in operator_releases(rp, "dc1") if r.key == "gpu-operator").values  # no time-sliced pool there
    assert "env" not in dc1["dcgmExporter"]
    # review obsreview21 F3: the mode maps processes to pods through the host's /proc, so it needs the host's PIDs
    assert values["dcgmExporter"]["hostPID"] is True
    assert "hostPID" not in dc1["dcgmExporter"]


def test_the_exporter_host_pid_value_is_the_pinned_charts() -> None:
    """Review obsreview21 F3: hostPID is a value of the pinned gpu-operator chart and a ClusterPolicy field, so the
    GPU Operator sets it on the exporter's DaemonSet (a misspelt key would be dropped without a word)."""
    values = json.loads((ROOT / "tests/data/upstream/gpu-operator/v26.3.3/values.json").read_text())
    assert values["dcgmExporter.hostPID"] == "bool"
    crd = json.loads((ROOT / "tests/data/upstream/gpu-operator/v26.3.3/crds/nvidia.com_clusterpolicies_v1.schema.json").read_text())
    assert crd["properties"]["spec"]["properties"]["dcgmExporter"]["properties"]["hostPID"] == {"type": "boolean"}


@pytest.mark.parametrize(("env", "site"), [("prod", "aws"), ("dev", "aws")])
def test_the_teams_nominal_shares_of_a_cpu_pool_add_up_to_the_pool(env: str, site: str) -> None:
    """Issue 21: each team's queue claimed the whole data-prep pool, so Kueue admitted three times the pool."""
    rp, objs, _ = world(env, site)
    pool = rp.pool("data-prep")
    assert pool.instance is not None
    nodes = pool.spec.scaling.max
    totals: dict[str, float] = {"cpu": 0.0, "memory": 0.0}
    for queue in (o for o in objs if o["kind"] == "ClusterQueue"):
        [flavor] = [f for g in queue["spec"]["resourceGroups"] for f in g["flavors"] if f["name"] == "data-prep"]
        for resource in flavor["resources"]:
            if resource["name"] in totals:
                totals[resource["name"]] += quantity(resource["nominalQuota"])
    assert totals["cpu"] == nodes * pool.instance.vcpus
    assert totals["memory"] == pytest.approx(nodes * pool.instance.memoryGiB * 2**30, rel=0.01)


def test_a_team_cannot_queue_a_workload_at_another_priority_through_its_pod_template() -> None:
    """Issue 21: Kueue takes a workload's priority from its pod template's PriorityClass when no priority label names
    one; the policy checked only Pods, so a Job (or JobSet, RayJob) naming system-node-critical queued above all."""
    _, objs, _ = world("prod", "aws")
    own, foreign = "alicerce-training", "system-node-critical"

    def pod(priority: str) -> dict[str, Any]:
        return {"containers": [{"name": "c", "image": "x"}], "priorityClassName": priority}

    def cases(priority: str) -> list[tuple[dict[str, Any], str, str]]:
        return [
            ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
              "spec": {"template": {"spec": pod(priority)}}}, "batch", "jobs"),
            (
                {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "s"},
                 "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": pod(priority)}}}}]}},
                "jobset.x-k8s.io", "jobsets",
            ),
            (
                {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"},
                 "spec": {"submissionMode": "HTTPMode", "rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": []}}},
                                             "workerGroupSpecs": [{"template": {"spec": pod(priority)}}]}}},
                "ray.io", "rayjobs",
            ),
        ]  # fmt: skip

    for obj, group, resource in cases(foreign):
        assert admission_denials(objs, "research", obj, group=group, resource=resource), obj["kind"]
    for obj, group, resource in cases(own):
        assert admission_denials(objs, "research", obj, group=group, resource=resource) == [], obj["kind"]
    # a Job without a pod template priority, as most are, passes
    plain = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": []}}}}
    assert admission_denials(objs, "research", plain, group="batch", resource="jobs") == []


def _rayjob(**spec: Any) -> dict[str, Any]:
    head = {"containers": [{"name": "ray-head", "image": "docker.io/rayproject/ray:2.49.0"}]}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r", "namespace": "research"},
        "spec": {"entrypoint": "python train.py", "rayClusterSpec": {"headGroupSpec": {"template": {"spec": head}}}, **spec},
    }


def test_a_rayjob_whose_submitter_pod_restricted_would_reject_is_refused_at_creation() -> None:
    """Issue 21: under "restricted", KubeRay v1.7.0's default submitter pod (K8sJobMode without a
    submitterPodTemplate: common/job.go GetSubmitterTemplate, GetDefaultSubmitterContainer) and the SidecarMode head
    (the same container appended, rayjob_controller.go 1025-1031) carry no securityContext: Pod Security rejects the
    pod, and the RayJob waits forever. The policy refuses such a RayJob with the fix; the fixed shapes validate
    against the pinned RayJob CRD and their submitter pod passes restricted."""
    from tests.emit.kube.upstream import crd_schema, validate_against

    _, objs, _ = world("prod", "aws")
    schema = crd_schema("kuberay-operator", "1.7.0", "ray.io", "rayjobs", "v1")
    # the submitter pod KubeRay makes by default, as GetDefaultSubmitterContainer writes it
    default_pod = {"containers": [{"name": "ray-job-submitter", "image": "docker.io/rayproject/ray:2.49.0"}], "restartPolicy": "Never"}
    assert pod_security_violations(default_pod, "restricted")
    submitter = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "ray-job-submitter",
                "image": "docker.io/rayproject/ray:2.49.0",
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
    }
    assert pod_security_violations(submitter, "restricted") == []
    refused = [_rayjob(), _rayjob(submissionMode="K8sJobMode"), _rayjob(submissionMode="SidecarMode")]
    allowed = [
        _rayjob(submitterPodTemplate={"spec": submitter}),
        _rayjob(submissionMode="K8sJobMode", submitterPodTemplate={"spec": submitter}),
        _rayjob(submissionMode="HTTPMode"),
        _rayjob(submissionMode="InteractiveMode"),
    ]
    for obj in [*refused, *allowed]:
        validate_against(schema, obj)
    for obj in refused:
        [message] = admission_denials(objs, "research", obj, group="ray.io", resource="rayjobs")
        assert "submitterPodTemplate" in message and "HTTPMode" in message
    for obj in allowed:
        assert admission_denials(objs, "research", obj, group="ray.io", resource="rayjobs") == []
    # the operator's updates (its finalizer) of a RayJob made before the policy still pass, so it can be deleted
    for obj in refused:
        assert admission_denials(objs, "research", obj, group="ray.io", resource="rayjobs", operation="UPDATE") == []


def test_no_rayjob_policy_where_the_namespaces_are_not_restricted() -> None:
    """Baseline admits KubeRay's default submitter pod: no policy there."""
    text = (ROOT / "platform.yaml").read_text()
    assert "  podSecurity: restricted\n" in text
    for level, expected in (("restricted", True), ("baseline", False)):
        rp = validated(load_text(text.replace("  podSecurity: restricted\n", f"  podSecurity: {level}\n"), "platform.yaml"), "prod")
        names = {o["metadata"]["name"] for o in cluster_objects(rp, "aws") if o["kind"] == "ValidatingAdmissionPolicy"}
        assert ("alicerce-rayjob-submitter" in names) is expected


FABRIC_POOLS = [("aws", "train-p5", "vpc.amazonaws.com/efa", 32), ("dc1", "onprem-h100", "rdma/ib", 1)]


@pytest.mark.parametrize(("site", "pool", "fabric", "units"), FABRIC_POOLS)
def test_the_fabric_runtime_requests_the_pools_fabric_and_is_admitted_there(site: str, pool: str, fabric: str, units: int) -> None:
    """Issue 21: the shipped runtime requested no EFA (AWS) or RDMA (on-prem) device, so NCCL found none and fell back
    to TCP. Each fabric pool has its own runtime: the device (every EFA interface, checked against the catalog; one
    unit of the RDMA shared device plugin), the fabric's env, pinned to the pool; Kueue admits a TrainJob of it
    (its ClusterQueue covers the fabric resource) without a toleration of its own, and only that pool fits it."""
    from alicerce.emit.kube.training import TORCH_RUNTIME

    rp, objs, config = world("prod", site)
    runtimes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ClusterTrainingRuntime"}
    generic = runtimes[TORCH_RUNTIME]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert "resources" not in generic["containers"][0]  # runs on any GPU pool
    [node] = runtimes[f"{TORCH_RUNTIME}-{pool}"]["spec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    resolved = next(p for p in rp.site(site).pools if p.name == pool)
    assert resolved.rdma is not None and resolved.rdma.resource == fabric
    if fabric.startswith("vpc.amazonaws.com"):
        assert resolved.instance is not None and units == resolved.instance.efa.maxInterfaces
    assert container["resources"] == {"requests": {fabric: str(units)}, "limits": {fabric: str(units)}}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env.get("FI_PROVIDER") == "efa" if site == "aws" else env.get("NCCL_IB_DISABLE") == "0"
    assert pod["nodeSelector"] == {"alicerce.dev/pool": pool}
    # a TrainJob's resourcesPerNode is merged over the runtime's (trainer v2.3.0 trainingruntime.go 199-230)
    gpus = str(resolved.gpus_per_node)
    requests = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": gpus, **container["resources"]["requests"]}
    admission = admit(objs, config, Job(rp.site(site).teams[0].name if site == "dc1" else "research", count=2, requests=requests))
    assert isinstance(admission, Admission) and admission.flavor == pool, admission
    assert feasible(nodes(rp, site), requests, admission) == [pool]
