"""Kueue: the manager's Configuration, the pools as ResourceFlavors, a ClusterQueue per team and its LocalQueues.

How Kueue 0.19.2 admits (the sources are the kueue@v0.19.2 files the tests cite line by line):

- A request for a resource no resource group of the ClusterQueue covers is never admitted unless the
  Configuration excludes it (flavorassigner.go 802-813, 1069-1072; workload.go 463-478). So every
  resource a GPU job asks for is covered: cpu, memory, the pools' GPU units and their fabric
  resource (EFA or RDMA, per pool, at a quota that never binds: the spec governs GPUs). Requests
  alicerce does not govern (ephemeral storage, huge pages) are excluded.
- Flavors are tried in order (flavorassigner.go 1089) and every tainted pool's flavor carries the pool's
  taints as ``tolerations``, which Kueue adds to the pods it admits there (podset.go 78-91). A GPU job
  need not tolerate the GPU taint itself: most do not (a plain Job asking for ``nvidia.com/gpu``, or a
  pod that relies on the ExtendedResourceToleration admission plugin, which mutates Pods, never the job
  template Kueue reads). Before, on a site with CPU pools (EKS), GPU flavors carried the taints as
  ``nodeTaints`` and skipped every pod that did not tolerate them (flavorassigner.go 1239-1244): such a
  GPU job was never admitted. A flavor's tolerations also count against its ``nodeTaints``, so the two
  cannot be combined to keep CPU-only pods off GPU pools; CPU pools come first instead, and a CPU-only
  job (GPU quota 0 is no obstacle to it) lands on a GPU pool only once its CPU flavors are full.
- The flavor's ``nodeLabels`` become the pods' nodeSelector (podset.go 78-91): admitted on a pool,
  scheduled on it.
- ``fairSharing.weight`` only counts when the Configuration has a ``fairSharing`` block (v1beta2 has
  no ``enable``; the block's presence turns it on and ``preemptionStrategies`` is required:
  strategy.go 50-52, validation.go 407-428).
- ``waitForPodsReady`` is on by default from 0.19 with a 30-minute timeout (defaults.go 99-117): a
  large GPU job whose nodes scale from zero and pull big images is evicted before it starts. The
  timeout is the longest start-up budget among the site's pool purposes (or the spec's).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from alicerce.emit.kube.common import GPU, POOL_LABEL, TEAM_LABEL, fabric_units_per_node, meta, team_labels
from alicerce.emit.kube.priorities import KUEUE_API, TEAM_WEIGHT
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedQuota, ResolvedSite, ResolvedTeam

CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
LOCAL_QUEUE = "default"  # Kueue's LocalQueue defaulting sends unlabelled jobs to the queue named "default"
# cpu/memory quota where the catalog knows no node size (on-prem hosts): large enough never to bind
UNBOUNDED_CPU = "100k"
UNBOUNDED_MEMORY = "1Pi"
# Resource requests Kueue must not count: alicerce governs neither, and an uncovered one blocks admission.
EXCLUDED_RESOURCE_PREFIXES = ("ephemeral-storage", "hugepages-")
# Seconds from admission until every pod of a workload is Ready, by pool purpose: node provisioning from
# zero (minutes for GPU instances, plus the GPU Operator's validation), multi-GB image pulls on many nodes
# at once, and for training the gang of every node. The Configuration holds one value: the site's longest.
PODS_READY_BUDGET = {
    "training": 7200,
    "fine-tuning": 7200,
    "inference": 3600,
    "batch-inference": 3600,
    "data-prep": 1800,
    "system": 1800,
}
# The chart's default integrations (kueue charts/kueue/values.yaml 165-184), Kubeflow Trainer's TrainJob included.
FRAMEWORKS = (
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "ray.io/raycluster",
    "jobset.x-k8s.io/jobset",
    "workload.codeflare.dev/appwrapper",
    "trainer.kubeflow.org/trainjob",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class Health(_Config):
    health_probe_bind_address: str = ":8081"


class Metrics(_Config):
    bind_address: str = ":8443"
    enable_cluster_queue_resources: bool = True  # nominal quota, usage and weighted share per queue, for dashboards


class Webhook(_Config):
    port: int = 9443


class LeaderElection(_Config):
    leader_elect: bool = True
    resource_name: str = "c1f6bfd2.kueue.x-k8s.io"  # the chart default's lease name


class ClientConnection(_Config):
    qps: int = 300
    burst: int = 500


class Integrations(_Config):
    frameworks: tuple[str, ...] = FRAMEWORKS


class FairSharing(_Config):
    preemption_strategies: tuple[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"], ...] = (
        "LessThanOrEqualToFinalShare",
        "LessThanInitialShare",
    )


class WaitForPodsReady(_Config):
    timeout: str
    block_admission: bool = False
    recovery_timeout: str


class Resources(_Config):
    exclude_resource_prefixes: tuple[str, ...] = EXCLUDED_RESOURCE_PREFIXES


class SelectorRequirement(_Config):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]


class NamespaceSelector(_Config):
    match_expressions: tuple[SelectorRequirement, ...]


# Kueue manages jobs, pods, deployments and statefulsets only in the teams' namespaces (their namespaces carry the
# team label, alicerce.emit.kube.tenancy): without it the pod integration gates every Pod of every namespace but
# kube-system and kueue-system, the platform's own included (kueue@v0.19.2 configuration_types.go
# ManagedJobsNamespaceSelector; its default excludes only those two).
TEAM_NAMESPACES = NamespaceSelector(match_expressions=(SelectorRequirement(key=TEAM_LABEL, operator="Exists"),))


class Configuration(_Config):
    """The subset of config.kueue.x-k8s.io/v1beta2 Configuration alicerce writes (validated in the tests against
    the strict schema read from kueue@v0.19.2 apis/config/v1beta2/configuration_types.go)."""

    api_version: str = Field(default=CONFIG_API)
    kind: str = "Configuration"
    health: Health = Health()
    metrics: Metrics = Metrics()
    webhook: Webhook = Webhook()
    leader_election: LeaderElection = LeaderElection()
    client_connection: ClientConnection = ClientConnection()
    integrations: Integrations = Integrations()
    fair_sharing: FairSharing = FairSharing()
    wait_for_pods_ready: WaitForPodsReady
    resources: Resources = Resources()
    managed_jobs_namespace_selector: NamespaceSelector = TEAM_NAMESPACES


def pods_ready_timeout(rp: ResolvedPlatform, site: ResolvedSite) -> float:
    """Seconds Kueue waits for an admitted workload's pods: the spec's, else the longest budget of the site's purposes."""
    pinned = rp.spec.operators.kueue.pods_ready_timeout
    if pinned is not None:
        return pinned
    return max((PODS_READY_BUDGET[p.spec.purpose] for p in site.pools), default=1800)


def kueue_configuration(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """The whole Configuration document the chart passes to the manager (it replaces the default, no merge)."""
    timeout = f"{int(pods_ready_timeout(rp, site))}s"
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(timeout=timeout, recovery_timeout=timeout))
    return config.model_dump(mode="json", by_alias=True)


def cpu_pools(site: ResolvedSite) -> list[ResolvedPool]:
    """The CPU pools team jobs run on (system pools hold the platform's own components)."""
    return [p for p in site.pools if p.gpu is None and p.spec.purpose != "system"]


def flavor(pool: ResolvedPool) -> dict[str, Any]:
    """A pool's flavor: its label, and its taints as tolerations Kueue injects into what it admits there."""
    spec: dict[str, Any] = {"nodeLabels": {POOL_LABEL: pool.name}}
    if pool.spec.taints:
        spec["tolerations"] = [
            {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
            if t.value
            else {"key": t.key, "operator": "Exists", "effect": t.effect}
            for t in pool.spec.taints
        ]
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": meta(pool.name, labels={POOL_LABEL: pool.name}), "spec": spec}


def _pool_capacity(pool: ResolvedPool) -> tuple[str, str]:
    """cpu and memory of a whole pool at max size, where the catalog knows its node size."""
    if pool.instance is None:
        return UNBOUNDED_CPU, UNBOUNDED_MEMORY
    nodes = max(pool.spec.scaling.max, 1)
    return str(nodes * pool.instance.vcpus), f"{int(nodes * pool.instance.memoryGiB)}Gi"


def _cpu_share(site: ResolvedSite, team: ResolvedTeam, pool: ResolvedPool) -> tuple[str, str]:
    """A team's nominal share of a CPU pool every team queues on: the pool split evenly (the first teams, in the
    site's order, take the remainder), so the nominal quotas of the cohort add up to the pool. Each team still
    borrows what the others leave idle. Before, each queue claimed the whole pool, and Kueue admitted as many
    times the pool as there were teams, the excess pending as unschedulable pods."""
    if pool.instance is None:
        return UNBOUNDED_CPU, UNBOUNDED_MEMORY
    teams = [t.name for t in site.teams]
    count, index = max(len(teams), 1), teams.index(team.name) if team.name in teams else 0
    nodes = max(pool.spec.scaling.max, 1)

    def share(total: int) -> int:
        return total // count + (1 if index < total % count else 0)

    return str(share(nodes * pool.instance.vcpus)), f"{share(int(nodes * pool.instance.memoryGiB))}Gi"


def _fabric_resources(pools: list[ResolvedPool]) -> list[str]:
    return sorted({p.rdma.resource for p in pools if p.rdma is not None})


def cluster_queue(rp: ResolvedPlatform, site: ResolvedSite, team: ResolvedTeam) -> dict[str, Any] | None:
    """A team's ClusterQueue at a site: CPU pools first, then the pools it has GPU quota on; None when it has neither."""
    quotas: list[tuple[ResolvedQuota | None, ResolvedPool]] = [(None, p) for p in cpu_pools(site)]
    quotas += list(site.quotas(team))
    if not quotas:
        return None
    gpu_resources = sorted({r for quota, _ in quotas if quota is not None for r in quota.resources} or {GPU})
    fabric = _fabric_resources([pool for _, pool in quotas])
    flavors = []
    for quota, pool in quotas:
        cpu, memory = _pool_capacity(pool) if quota is not None else _cpu_share(site, team, pool)
        resources: list[dict[str, Any]] = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]
        for resource in gpu_resources:
            entry: dict[str, Any] = {"name": resource, "nominalQuota": str(quota.resources.get(resource, 0) if quota else 0)}
            if quota is not None and quota.borrowing is not None:
                entry["borrowingLimit"] = str(quota.borrowing.get(resource, 0))
            resources.append(entry)
        for resource in fabric:
            # the pool's whole fabric capacity: never binds, but a job asking for EFA/RDMA only fits where it exists
            units = fabric_units_per_node(pool) * max(pool.spec.scaling.max, 1) if pool.rdma and pool.rdma.resource == resource else 0
            resources.append({"name": resource, "nominalQuota": str(units)})
        flavors.append({"name": pool.name, "resources": resources})
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": meta(team.name, labels=team_labels(rp, team)),
        "spec": {
            "cohortName": rp.spec.tenancy.cohort,
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: team.name}},
            "queueingStrategy": "BestEffortFIFO",
            # one resource group: every flavor lists every covered resource, in the same order (clusterqueue_webhook.go 331-341)
            "resourceGroups": [{"coveredResources": ["cpu", "memory", *gpu_resources, *fabric], "flavors": flavors}],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "fairSharing": {"weight": TEAM_WEIGHT[team.spec.priority]},
        },
    }


def local_queue(rp: ResolvedPlatform, team: ResolvedTeam, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": meta(LOCAL_QUEUE, namespace, team_labels(rp, team)),
        "spec": {"clusterQueue": team.name},
    }


def flavors(site: ResolvedSite, queues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ResourceFlavor for every pool a queue names, and for every GPU pool of the site."""
    named = {f["name"] for q in queues for group in q["spec"]["resourceGroups"] for f in group["flavors"]}
    return [flavor(p) for p in site.pools if p.name in named or p.gpu is not None]
