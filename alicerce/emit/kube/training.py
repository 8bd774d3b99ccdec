"""The training runtimes a cluster offers: Kubeflow Trainer ClusterTrainingRuntimes.

The Trainer chart (2.3.0) creates its built-in runtimes only from a post-install hook Job
(charts/kubeflow-trainer/templates/runtimes/installer-job.yaml), which helm.v4.Chart never runs, so
alicerce emits the runtimes itself. The shape follows the Trainer's API and webhook at 2.3.0: one
replicated job named ``node`` with one replica, the ancestor label, and a container named ``node``
(pkg/webhooks/trainingruntime_webhook.go 40-44, 78-101); ``torch`` has no ``numProcPerNode`` any more
(a TrainJob's ``spec.trainer.numProcPerNode``, default one process per GPU). No pod-group policy:
Kueue admits the TrainJob as one workload (its ``trainer.kubeflow.org/trainjob`` integration).

Fabric: ``torch-distributed`` requests no fabric (it runs on any GPU pool). Each GPU pool with an RDMA
fabric gets ``torch-distributed-<pool>``, pinned to the pool, whose ``node`` container requests the
pool's fabric resource (every EFA interface of the node from the EFA device plugin; one unit of the
RDMA shared device plugin, which hands the pod every adapter of the pool) and sets the NCCL/libfabric
environment the fabric needs. Without the device, NCCL finds no EFA or IB device and falls back to TCP
sockets. A TrainJob keeps both: its ``resourcesPerNode`` is merged into the container's resources
(trainer v2.3.0 pkg/runtime/core/trainingruntime.go 199-230, MergeResourceRequirements) and its env
upserted (pkg/runtime/framework/plugins/jobset/builder.go 141-152).
"""

from __future__ import annotations

from typing import Any

from alicerce.emit.ansible.role_vars import RdmaVars
from alicerce.emit.kube.common import MANAGED, POOL_LABEL, fabric_units_per_node, meta, tolerate
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TORCH_RUNTIME = "torch-distributed"
# The runtime's pods run in team namespaces, which enforce the spec's Pod Security level (restricted by
# default): a TrainJob replaces the container's image, command, env and resources, never its security
# context (trainer v2.3.0 trainjob_types.go 284-288), so the template must pass "restricted" itself.
# The upstream image has no USER (it would run as root), hence a fixed non-root id, and a writable HOME for
# the caches PyTorch and Triton keep under it.
RUNTIME_USER = 1000
POD_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": RUNTIME_USER,
    "runAsGroup": RUNTIME_USER,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY_CONTEXT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def fabric_env(pool: ResolvedPool) -> list[dict[str, str]]:
    """The environment NCCL needs on a pool's fabric (none without one).

    EFA: libfabric's EFA provider (aws-ofi-nccl reads FI_PROVIDER), with GPUDirect RDMA where the instance
    supports it (FI_EFA_USE_DEVICE_RDMA; catalog ``gpuDirectRdma``). InfiniBand and RoCE: NCCL's own IB
    transport (NCCL_IB_DISABLE=0); RoCE also carries the lossless traffic class the hosts' rails configure
    (the rdma role's /etc/nccl.conf is on the host, not in the container). NCCL_NET=IB is not forced: an image
    without rdma-core's libibverbs would then fail every run instead of running slower.
    """
    if pool.rdma is None:
        return []
    if pool.rdma.technology == "efa":
        env = [{"name": "FI_PROVIDER", "value": "efa"}]
        if pool.instance is not None and pool.instance.gpuDirectRdma:
            env.append({"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"})
        return env
    env = [{"name": "NCCL_IB_DISABLE", "value": "0"}]
    if pool.rdma.technology == "roce":
        env.append({"name": "NCCL_IB_TC", "value": str(RdmaVars.model_fields["rdma_roce_traffic_class"].default)})
    return env


def _runtime(name: str, pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": meta(name, labels={**MANAGED, "trainer.kubeflow.org/framework": "torch"}),
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "replicas": 1,
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {"template": {"spec": pod_spec}},
                            },
                        }
                    ]
                }
            },
        },
    }


def training_runtimes(rp: ResolvedPlatform, site: ResolvedSite) -> list[dict[str, Any]]:
    """The ClusterTrainingRuntimes of a site (none without the Trainer, or without images for its release)."""
    if not rp.spec.operators.training_operator.enabled:
        return []
    release = rp.trainer_runtimes
    if release is None or TORCH_RUNTIME not in release.images:
        return []  # rule AL255 reports a Trainer release without runtime images
    gpu_pools = [p for p in site.pools if p.gpu is not None]
    container = {
        "name": "node",
        "image": release.images[TORCH_RUNTIME].image,
        "env": [{"name": "HOME", "value": "/tmp"}],
        "securityContext": CONTAINER_SECURITY_CONTEXT,
    }
    pod_spec: dict[str, Any] = {"securityContext": POD_SECURITY_CONTEXT, "containers": [container]}
    if tolerations := tolerate(gpu_pools):
        # Kueue puts GPU pools' taints on their flavors (alicerce.emit.kube.kueue): a trainer pod must tolerate them to be admitted there
        pod_spec["tolerations"] = tolerations
    out = [_runtime(TORCH_RUNTIME, pod_spec)]
    for pool in gpu_pools:
        if pool.rdma is None:
            continue
        units = {pool.rdma.resource: str(fabric_units_per_node(pool) if pool.rdma.technology == "efa" else 1)}
        fabric_container = {
            **container,
            "env": [*container["env"], *fabric_env(pool)],
            "resources": {"requests": units, "limits": dict(units)},  # an extended resource needs both, equal
        }
        fabric_pod: dict[str, Any] = {
            "securityContext": POD_SECURITY_CONTEXT,
            "nodeSelector": {POOL_LABEL: pool.name},
            "containers": [fabric_container],
        }
        if tolerations := tolerate([pool]):
            fabric_pod["tolerations"] = tolerations
        out.append(_runtime(f"{TORCH_RUNTIME}-{pool.name}", fabric_pod))
    return out
