"""The training runtimes a cluster offers: Kubeflow Trainer ClusterTrainingRuntimes.

The Trainer chart (2.3.0) creates its built-in runtimes only from a post-install hook Job
(charts/kubeflow-trainer/templates/runtimes/installer-job.yaml), which helm.v4.Chart never runs, so
alicerce emits the runtimes itself. The shape follows the Trainer's API and webhook at 2.3.0: one
replicated job named ``node`` with one replica, the ancestor label, and a container named ``node``
(pkg/webhooks/trainingruntime_webhook.go 40-44, 78-101); ``torch`` has no ``numProcPerNode`` any more
(a TrainJob's ``spec.trainer.numProcPerNode``, default one process per GPU). No pod-group policy:
Kueue admits the TrainJob as one workload (its ``trainer.kubeflow.org/trainjob`` integration).
"""

from __future__ import annotations

from typing import Any

from alicerce.emit.kube.common import MANAGED, meta, tolerate
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite

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
    return [
        {
            "apiVersion": TRAINER_API,
            "kind": "ClusterTrainingRuntime",
            "metadata": meta(TORCH_RUNTIME, labels={**MANAGED, "trainer.kubeflow.org/framework": "torch"}),
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
    ]
