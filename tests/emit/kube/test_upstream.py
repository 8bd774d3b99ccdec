"""The operators and objects against the upstream facts at the pinned versions (tests/data/upstream).

- every chart version the catalog pins has vendored facts (a new pin needs its facts first);
- every Helm value alicerce sets exists in its chart with a compatible type;
- no hook is active under alicerce's values that a running release needs, and no hook that a value can switch off;
- the chart defaults alicerce repeats (lists Helm replaces) are the chart's;
- Kueue's Configuration passes the strict schema of its Go types, with fair sharing on;
- every custom resource passes the schema of its CRD at the pinned version.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from alicerce.catalog import load_catalog
from alicerce.emit.bom import bill_of_materials
from alicerce.emit.gitops.argocd import ARGOCD_CHART, argocd_values
from alicerce.emit.kube.objects import CRD_OWNERS, cluster_objects
from alicerce.emit.kube.operators import (
    GPU_OPERATOR_DAEMONSET_TOLERATIONS,
    NFD_WORKER_TOLERATIONS,
    NODE_EXPORTER_CHART_ARGS,
    Release,
    operator_releases,
)
from alicerce.emit.kube.training import ANCESTOR_LABEL
from alicerce.resolve.namespaces import ARGOCD_NAMESPACE
from alicerce.resolve.platform import CHART_VERSION_KEYS
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from alicerce.targets.aws.components.controllers import controller_releases
from alicerce.targets.aws.spec import AwsSite
from tests.conftest import ROOT
from tests.emit.kube.cluster_model import pod_security_violations
from tests.emit.kube.test_objects import CASES, platform
from tests.emit.kube.upstream import UPSTREAM, active_hooks, check_values, crd_schema, effective, evaluate, folder, load, validate_against


def installed(env: str, site: str) -> list[Release]:
    """Every Helm release a site runs, whatever installs it: the operators, the target's own controllers
    (the AWS autoscaler and load balancer controller) and Argo CD where it delivers."""
    rp = platform(env)
    spec = rp.site(site).spec
    releases = operator_releases(rp, site)
    if isinstance(spec, AwsSite):
        releases += controller_releases(rp, spec)
    chart = rp.charts[ARGOCD_CHART]
    releases.append(
        Release(ARGOCD_CHART, chart.chart, chart.repository, chart.version, ARGOCD_NAMESPACE, argocd_values(rp.site(site).pools))
    )
    return releases


# the releases of every shipped environment and site
RELEASES = [(env, site, r) for env, site in CASES for r in installed(env, site)]
# custom resource kind -> (chart, group, plural, version) of the CRD schema it is checked against
CR_SCHEMAS = {
    "ClusterQueue": ("kueue", "kueue.x-k8s.io", "clusterqueues", "v1beta2"),
    "LocalQueue": ("kueue", "kueue.x-k8s.io", "localqueues", "v1beta2"),
    "ResourceFlavor": ("kueue", "kueue.x-k8s.io", "resourceflavors", "v1beta2"),
    "WorkloadPriorityClass": ("kueue", "kueue.x-k8s.io", "workloadpriorityclasses", "v1beta2"),
    "PrometheusRule": ("kube-prometheus-stack", "monitoring.coreos.com", "prometheusrules", "v1"),
    "PodMonitor": ("kube-prometheus-stack", "monitoring.coreos.com", "podmonitors", "v1"),
    "ScrapeConfig": ("kube-prometheus-stack", "monitoring.coreos.com", "scrapeconfigs", "v1alpha1"),
    "NicClusterPolicy": ("network-operator", "mellanox.com", "nicclusterpolicies", "v1alpha1"),
    "ClusterTrainingRuntime": ("kubeflow-trainer", "trainer.kubeflow.org", "clustertrainingruntimes", "v1alpha1"),
}


def chart_folder(release: Release) -> tuple[str, str]:
    return release.chart, release.version


def unvendored(bom: Any) -> list[str]:
    """Charts whose pinned version (in a bill of materials) has no complete facts folder."""
    missing = []
    for key, chart in load_catalog().versions.charts.items():
        version = getattr(bom, CHART_VERSION_KEYS[key]) if key in CHART_VERSION_KEYS else chart.version  # pinned in the catalog alone
        path = folder(chart.chart, version)
        files = {p.name for p in path.glob("*")}
        if not {"SOURCE.yaml", "values.json", "hooks.json", "defaults.json"} <= files:
            missing.append(f"{chart.chart} {version}")
        elif str(yaml.safe_load((path / "SOURCE.yaml").read_text())["version"]) != version:
            missing.append(f"{chart.chart} {version} (SOURCE.yaml names another version)")
    return missing


def test_every_vendored_source_note_is_a_yaml_mapping() -> None:
    """A SOURCE.yaml says where a copy's facts come from; three of them did not parse (a colon and space inside a
    plain scalar), so nothing could read their sources back."""
    notes = sorted(UPSTREAM.glob("*/*/SOURCE.yaml"))
    assert len(notes) > 20
    unreadable = [str(n.relative_to(UPSTREAM)) for n in notes if not isinstance(yaml.safe_load(n.read_text(encoding="utf-8")), dict)]
    assert unreadable == []


def test_every_pinned_chart_version_has_vendored_facts() -> None:
    bom = load_catalog().versions.bom
    assert unvendored(bom) == [], f"vendor their facts under {UPSTREAM} first"
    assert (folder("kueue", bom.kueue) / "config.schema.json").exists()


def test_a_pin_without_facts_fails_the_check() -> None:
    bom = load_catalog().versions.bom.model_copy(update={"kueue": "0.20.0", "gpuOperator": "v26.7.0"})
    assert unvendored(bom) == ["gpu-operator v26.7.0", "kueue 0.20.0"]


@pytest.mark.parametrize(("env", "site", "release"), RELEASES, ids=[f"{e}-{s}-{r.key}" for e, s, r in RELEASES])
def test_every_value_alicerce_sets_exists_in_the_chart(env: str, site: str, release: Release) -> None:
    assert check_values(*chart_folder(release), release.values) == []


def test_the_value_check_catches_what_the_charts_ignore() -> None:
    # the EFA plugin chart has no affinity value (its template builds one from supportedInstanceLabels)
    assert check_values("aws-efa-k8s-device-plugin", "v0.5.30", {"affinity": {"nodeAffinity": {}}}) == [
        "affinity.nodeAffinity: no such value in aws-efa-k8s-device-plugin v0.5.30"
    ]
    assert check_values("gpu-operator", "v26.3.3", {"driver": {"enabled": "yes"}}) == ["driver.enabled: str where the chart has bool"]


@pytest.mark.parametrize(("env", "site", "release"), RELEASES, ids=[f"{e}-{s}-{r.key}" for e, s, r in RELEASES])
def test_nothing_the_release_needs_comes_from_a_hook(env: str, site: str, release: Release) -> None:
    component, version = chart_folder(release)
    merged = effective(component, version, release.values)
    active = active_hooks(component, version, release.values)
    needed = [h["template"] for h in active if evaluate(h["needed_when"], merged)]
    assert needed == [], f"{release.key}: helm.v4.Chart runs no hook, yet these create what the release needs"
    # and every hook a value can switch off is off (only unguarded ones remain, dropped harmlessly)
    assert [h["template"] for h in active if h["when"] != "true"] == []


def test_the_hook_check_fails_on_the_chart_defaults() -> None:
    defaults = load("kube-prometheus-stack", "88.5.3", "defaults.json")
    hooks = active_hooks("kube-prometheus-stack", "88.5.3", {})
    needed = [h["template"].rsplit("/", 1)[1] for h in hooks if evaluate(h["needed_when"], defaults)]
    assert needed == ["job-createSecret.yaml", "job-patchWebhook.yaml"]
    # admissionWebhooks off alone still leaves the operator mounting the Secret only the hook writes (research 1b)
    half = {"prometheusOperator": {"admissionWebhooks": {"enabled": False}}}
    merged = effective("kube-prometheus-stack", "88.5.3", half)
    assert evaluate("or .Values.prometheusOperator.tls.enabled .Values.prometheusOperator.admissionWebhooks.enabled", merged)
    # the Trainer creates its runtimes only in a hook: enabling one would make the release depend on it
    trainer = active_hooks("kubeflow-trainer", "2.3.0", {"runtimes": {"torchDistributed": {"enabled": True}}})
    assert [h["needed_when"] for h in trainer] == ["true", "false"]


def test_list_values_alicerce_extends_start_from_the_chart_defaults() -> None:
    defaults = load("gpu-operator", "v26.3.3", "defaults.json")
    assert list(GPU_OPERATOR_DAEMONSET_TOLERATIONS) == defaults["daemonsets.tolerations"]
    assert list(NFD_WORKER_TOLERATIONS) == defaults["node-feature-discovery.worker.tolerations"]
    monitoring = load("kube-prometheus-stack", "88.5.3", "defaults.json")
    assert list(NODE_EXPORTER_CHART_ARGS) == monitoring["prometheus-node-exporter.extraArgs"]


def _config(env: str, site: str) -> dict[str, Any]:
    release = next(r for r in operator_releases(platform(env), site) if r.key == "kueue")
    config: dict[str, Any] = yaml.safe_load(release.values["managerConfig"]["controllerManagerConfigYaml"])
    return config


@pytest.mark.parametrize(("env", "site"), CASES)
def test_kueue_configuration_passes_the_strict_schema_with_fair_sharing_on(env: str, site: str) -> None:
    config = _config(env, site)
    jsonschema.validate(config, load("kueue", "0.19.2", "config.schema.json"))
    # validation.go 385-396, 407-428: the block turns fair sharing on and needs one of these strategy lists
    assert config["fairSharing"]["preemptionStrategies"] in (
        ["LessThanOrEqualToFinalShare"],
        ["LessThanInitialShare"],
        ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
    )
    assert "trainer.kubeflow.org/trainjob" in config["integrations"]["frameworks"]
    # excludeResourcePrefixes cannot be combined with quotaCheckStrategy (validation.go 117-122)
    assert "quotaCheckStrategy" not in config["resources"]
    training = any(p.spec.purpose == "training" for p in platform(env).site(site).pools)
    assert (config["waitForPodsReady"]["timeout"] == "7200s") is training


def test_the_schema_rejects_a_v1beta1_style_fair_sharing_switch() -> None:
    config = _config("prod", "aws") | {"fairSharing": {"enable": True}}
    with pytest.raises(jsonschema.ValidationError, match="'enable' was unexpected"):
        jsonschema.validate(config, load("kueue", "0.19.2", "config.schema.json"))


@pytest.mark.parametrize(("env", "site"), CASES)
def test_custom_resources_pass_their_crd_schemas(env: str, site: str) -> None:
    rp = platform(env)
    fsx = {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123", "volumeAttributes": {"dnsname": "d", "mountname": "m"}}}
    checked = set()
    for obj in cluster_objects(rp, site, {"datasets": fsx, "checkpoints": fsx}):
        if obj["apiVersion"].rpartition("/")[0] not in CRD_OWNERS:
            continue
        chart, group, plural, version = CR_SCHEMAS[obj["kind"]]  # every custom kind alicerce emits has a vendored schema
        assert obj["apiVersion"] == f"{group}/{version}"
        pinned = rp.charts[next(k for k, c in rp.charts.items() if c.chart == chart)].version
        validate_against(crd_schema(chart, pinned, group, plural, version), obj)
        checked.add(obj["kind"])
    assert {"ClusterQueue", "ResourceFlavor", "WorkloadPriorityClass", "PrometheusRule", "ClusterTrainingRuntime"} <= checked


@pytest.mark.parametrize("name", ["torch-distributed", "torch-distributed-train-p5"])
def test_the_torch_runtime_has_the_shape_the_trainer_webhook_requires(name: str) -> None:
    objs = cluster_objects(platform("prod"), "aws")
    [runtime] = [o for o in objs if o["kind"] == "ClusterTrainingRuntime" and o["metadata"]["name"] == name]
    spec = runtime["spec"]
    assert spec["mlPolicy"] == {"numNodes": 1, "torch": {}}  # torch.numProcPerNode no longer exists at 2.3.0
    [node] = spec["template"]["spec"]["replicatedJobs"]
    # trainingruntime_webhook.go 40-44, 78-101: a replicated job "node", 1 replica, the ancestor label, a container "node"
    assert node["name"] == "node" and node["replicas"] == 1 and node["template"]["metadata"]["labels"] == {ANCESTOR_LABEL: "trainer"}
    [container] = node["template"]["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "node"
    runtimes = load("kubeflow-trainer", "2.3.0", "runtimes.json")["runtimes"]
    upstream = next(r for r in runtimes if r["name"] == "torch-distributed")
    assert container["image"].removeprefix("docker.io/") in upstream["images"]


@pytest.mark.parametrize("site", ["aws", "dc1"])
def test_gpu_operator_values_the_chart_copies_into_its_cluster_policy_pass_the_crd(site: str) -> None:
    """The chart copies dcgmExporter.serviceMonitor and daemonsets.tolerations into its ClusterPolicy verbatim
    (gpu-operator v26.3.3 templates/clusterpolicy.yaml 52-53, 574-575): check them against that CRD's schema."""
    values = next(r for r in operator_releases(platform("prod"), site) if r.key == "gpu-operator").values
    spec = crd_schema("gpu-operator", "v26.3.3", "nvidia.com", "clusterpolicies", "v1")["properties"]["spec"]["properties"]
    validate_against(spec["dcgmExporter"]["properties"]["serviceMonitor"], values["dcgmExporter"]["serviceMonitor"])
    validate_against(spec["daemonsets"]["properties"]["tolerations"], values["daemonsets"]["tolerations"])
    validate_against(spec["driver"], values["driver"])


@pytest.mark.parametrize("level", ["restricted", "baseline"])
def test_the_torch_runtime_runs_under_the_team_namespaces_pod_security(level: str) -> None:
    """A TrainJob's pods come from the runtime's pod template (the TrainJob replaces image, command, env and
    resources, not the security context: trainer v2.3.0 trainjob_types.go 284-288), in a team namespace that
    enforces spec.security.podSecurity (restricted by default): a template the admission controller rejects
    leaves every TrainJob without pods. The image runs as root (no USER), so runAsNonRoot needs a user id."""
    runtimes = [o for site in ("aws", "dc1") for o in cluster_objects(platform("prod"), site) if o["kind"] == "ClusterTrainingRuntime"]
    assert len(runtimes) == 4  # the generic runtime and one per fabric pool, at each site
    for runtime in runtimes:
        [node] = runtime["spec"]["template"]["spec"]["replicatedJobs"]
        pod = node["template"]["spec"]["template"]["spec"]
        assert pod_security_violations(pod, level) == []
        assert pod["securityContext"]["runAsUser"] != 0


@pytest.mark.parametrize("owner", ["operator", "host"])
def test_the_gpu_operator_and_the_bill_of_materials_follow_the_sites_driver_owner(owner: str) -> None:
    """One owner for the driver per site (nodeSoftware.gpuDriver), read by both the operator values and `alicerce
    versions`: with a host driver the GPU Operator must not install one (NVIDIA: driver.enabled=false with a
    pre-installed driver, toolkit.enabled=false with a pre-installed toolkit; gpu-operator v26.3.3 values.yaml 119,
    211); the EKS node image brings both at the aws site whatever dc1 chooses."""
    text = (ROOT / "platform.yaml").read_text()
    declared = "        nodeSoftware: {gpuDriver: host}\n"
    assert declared in text
    text = text.replace(declared, f"        nodeSoftware: {{gpuDriver: {owner}}}\n")
    rp = validated(load_text(text, "platform.yaml"), "prod")
    assert rp.site("dc1").software.gpu_driver == owner
    values = {site: next(r for r in operator_releases(rp, site) if r.key == "gpu-operator").values for site in ("aws", "dc1")}
    assert values["dc1"]["driver"]["enabled"] is (owner == "operator")
    if owner == "operator":  # the operator's driver: the pinned version, open modules, DMA-BUF (no host MOFED/DOCA)
        assert values["dc1"]["driver"]["version"] == rp.versions.driverVersion == "580.173.02"
        assert values["dc1"]["driver"]["kernelModuleType"] == "open"
        assert values["dc1"]["driver"]["rdma"] == {"enabled": False, "useHostMofed": False}
    assert values["aws"]["driver"] == {"enabled": False}
    assert values["dc1"]["toolkit"] == values["aws"]["toolkit"] == {"enabled": False}
    vendored = load("gpu-operator", "v26.3.3", "values.json")
    assert {"driver.enabled", "toolkit.enabled"} <= set(vendored)
    drivers = {p.sites: p.source for p in bill_of_materials(rp) if p.component == "nvidia-driver"}
    assert "node image" in drivers[("aws",)]
    assert drivers[("dc1",)].endswith("alicerce's nvidia_driver role" if owner == "host" else "the GPU Operator's driver container")
