"""One record per operator: the facts every stage needs about it, declared once.

An operator is joined across the stages by its spec switch (``operators.<switch>``: enabled, values), its
version pin (``versions.<version>``), its catalog chart key (the Helm release), its namespace, the API
groups of its CRDs and webhooks (objects of those groups wait for it) and whether it runs privileged host
agents. The tables the stages read (``CHART_VERSION_KEYS``, ``CRD_OWNERS``, the privileged and reserved
namespaces, the spec's own chart values) derive from :data:`OPERATORS`; adding an operator is one record
here plus its own code (its values and its policies).
"""

from __future__ import annotations

from alicerce.resolve.namespaces import (
    GPU_OPERATOR_NAMESPACE,
    KUBERAY_NAMESPACE,
    KUEUE_NAMESPACE,
    MONITORING_NAMESPACE,
    NETWORK_OPERATOR_NAMESPACE,
    TRAINER_NAMESPACE,
)
from alicerce.spec.record import record


@record
class OperatorRecord:
    """One operator as every stage sees it."""

    switch: str  # its field under the spec's `operators:` (python name): enabled, values
    chart: str  # its catalog chart key, the name of its Helm release
    version: str  # its field under `versions:`, the bill of materials pin of its chart
    namespace: str  # where it runs
    crd_groups: tuple[str, ...] = ()  # API groups of its CRDs and webhooks: objects of these are applied after it
    privileged: bool = False  # runs privileged host agents (drivers, device plugins, node exporters)


OPERATORS: tuple[OperatorRecord, ...] = (
    OperatorRecord("gpu_operator", "gpu-operator", "gpuOperator", GPU_OPERATOR_NAMESPACE, ("nvidia.com",), privileged=True),
    OperatorRecord(
        "network_operator", "network-operator", "networkOperator", NETWORK_OPERATOR_NAMESPACE, ("mellanox.com",), privileged=True
    ),
    OperatorRecord("kueue", "kueue", "kueue", KUEUE_NAMESPACE, ("kueue.x-k8s.io",)),
    # its RayCluster and RayJob objects are the teams' own: alicerce emits none that would wait for its CRDs
    OperatorRecord("kuberay", "kuberay-operator", "kuberay", KUBERAY_NAMESPACE),
    OperatorRecord("training_operator", "training-operator", "trainingOperator", TRAINER_NAMESPACE, ("trainer.kubeflow.org",)),
    # node exporter DaemonSet (host network and PID namespace)
    OperatorRecord(
        "monitoring", "kube-prometheus-stack", "kubePrometheusStack", MONITORING_NAMESPACE, ("monitoring.coreos.com",), privileged=True
    ),
)

OPERATOR_CHART_VERSION_KEYS = {o.chart: o.version for o in OPERATORS}
"""catalog chart key -> the bill-of-materials field that pins it, for every operator."""

OPERATOR_CRD_OWNERS = {group: o.chart for o in OPERATORS for group in o.crd_groups}
"""API group -> the chart whose CRDs (or webhook) its objects need first."""

PRIVILEGED_OPERATOR_NAMESPACES = frozenset(o.namespace for o in OPERATORS if o.privileged)
"""Namespaces of operators that run privileged host agents."""


def operator(chart: str) -> OperatorRecord | None:
    """The operator whose chart is ``chart`` (None for a chart no operator owns: a target's or Argo CD's)."""
    return next((o for o in OPERATORS if o.chart == chart), None)
