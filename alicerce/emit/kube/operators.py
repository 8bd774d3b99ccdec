"""The operators each cluster runs: Helm charts pinned to the catalog, with values from the spec.

A :class:`Release` is plain data. Pulumi installs it (``alicerce/emit/pulumi/operators.py``);
it carries everything another installer (an Argo CD Application, say) needs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite
from alicerce.spec.models import MigSharing, TimeSlicing

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIGMAP = "alicerce-mig-parted"
DEVICE_PLUGIN_CONFIGMAP = "alicerce-device-plugin"
MONITORING_NAMESPACE = "monitoring"
KUEUE_NAMESPACE = "kueue-system"


@dataclass(frozen=True)
class Release:
    """One Helm release: which chart, at which pinned version, where, with which values."""

    key: str  # catalog chart key, e.g. "gpu-operator"
    chart: str
    repository: str  # https Helm repository or oci:// registry
    version: str
    namespace: str
    values: dict[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()  # keys of releases whose CRDs this one uses

    @property
    def chart_ref(self) -> str:
        """What `helm` takes as the chart argument: repo-relative name, or a full OCI reference."""
        return f"{self.repository.rstrip('/')}/{self.chart}" if self.repository.startswith("oci://") else self.chart

    @property
    def repo_url(self) -> str | None:
        return None if self.repository.startswith("oci://") else self.repository


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` merged over ``base``: maps merge recursively, anything else is replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def gpu_config_labels(pool: ResolvedPool) -> dict[str, str]:
    """Node labels that select a pool's MIG layout and device-plugin (time-slicing) config."""
    labels: dict[str, str] = {}
    if isinstance(pool.spec.sharing, MigSharing):
        labels[MIG_CONFIG_LABEL] = f"alicerce-{pool.name}"
    if isinstance(pool.spec.sharing, TimeSlicing):
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.name
    return labels


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False)


def duration_text(seconds: float) -> str:
    """Prometheus-style duration: whole days when exact, else hours."""
    return f"{int(seconds // 86400)}d" if seconds % 86400 == 0 else f"{max(1, round(seconds / 3600))}h"


def host_rdma_pools(pools: Iterable[ResolvedPool]) -> list[ResolvedPool]:
    """The pools whose nodes reach their fabric through host RDMA adapters (InfiniBand, RoCE), not EFA."""
    return [p for p in pools if p.rdma is not None and p.rdma.technology != "efa"]


def gpu_operator_values(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """GPU Operator values for one site.

    Where the node image carries the driver and the container toolkit (the EKS AL2023 NVIDIA AMI),
    both are off; elsewhere the operator installs the pinned driver with the resolved kernel modules.
    """
    op = rp.spec.operators.gpu_operator
    pools = [p for p in site.pools if p.gpu is not None]
    on_image = site.capabilities.gpu_stack_on_image
    rdma = any(p.rdma is not None and p.rdma.fabric.gpu_direct_rdma for p in host_rdma_pools(pools))
    driver: dict[str, Any] = {"enabled": not on_image}
    if not on_image:
        modules = {p.kernel_modules for p in pools if p.kernel_modules is not None}
        driver |= {
            "version": rp.versions.driverVersion,
            # one value per cluster: the pools' own choice when they agree, else the operator decides per node
            "kernelModuleType": modules.pop() if len(modules) == 1 else "auto",
            # hosts carry the RDMA stack (MOFED/DOCA) installed by the node playbooks
            "rdma": {"enabled": rdma, "useHostMofed": rdma},
        }
    values: dict[str, Any] = {
        "driver": driver,
        "toolkit": {"enabled": not on_image},
        "mig": {"strategy": op.mig_strategy},
        # honorLabels keeps the namespace/pod of the workload on each GPU series (pod attribution)
        "dcgmExporter": {
            "serviceMonitor": {"enabled": op.dcgm_service_monitor and rp.spec.operators.monitoring.enabled, "honorLabels": True}
        },
    }
    mig = {f"alicerce-{p.name}": p.spec.sharing for p in pools if isinstance(p.spec.sharing, MigSharing)}
    if mig:
        configs: dict[str, Any] = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
        for name, sharing in mig.items():
            configs[name] = [{"devices": "all", "mig-enabled": True, "mig-devices": dict(sorted(sharing.profiles.items()))}]
        values["migManager"] = {
            "enabled": True,
            "config": {
                "create": True,
                "name": MIG_CONFIGMAP,
                "default": "all-disabled",
                "data": {"config.yaml": _dump({"version": "v1", "mig-configs": configs})},
            },
        }
    slicing = {p.name: p.spec.sharing for p in pools if isinstance(p.spec.sharing, TimeSlicing)}
    if slicing:
        data = {"default": _dump({"version": "v1"})}
        for name, ts in slicing.items():
            resources = [{"name": "nvidia.com/gpu", "replicas": ts.replicas}]
            data[name] = _dump({"version": "v1", "sharing": {"timeSlicing": {"resources": resources}}})
        values["devicePlugin"] = {"config": {"create": True, "name": DEVICE_PLUGIN_CONFIGMAP, "default": "default", "data": data}}
    return deep_merge(values, op.values)


def _release(rp: ResolvedPlatform, key: str, namespace: str, values: dict[str, Any], depends_on: tuple[str, ...] = ()) -> Release:
    chart = rp.charts[key]
    return Release(key, chart.chart, chart.repository, chart.version, namespace, values, depends_on)


def tolerate(pools: list[ResolvedPool]) -> list[dict[str, str]]:
    keys = sorted({(t.key, t.effect) for p in pools for t in p.spec.taints})
    return [{"key": k, "operator": "Exists", "effect": e} for k, e in keys]


def operator_releases(rp: ResolvedPlatform, site_name: str) -> list[Release]:
    """The Helm releases one site's cluster runs, in install order (dependencies first)."""
    site = rp.site(site_name)
    ops = rp.spec.operators
    pools = site.pools
    monitoring = ops.monitoring.enabled
    after_monitoring = ("kube-prometheus-stack",) if monitoring else ()
    out: list[Release] = []
    if monitoring:
        prometheus = {
            "retention": duration_text(rp.spec.monitoring.retention),
            # pick up ServiceMonitors, PodMonitors and rules from every namespace, not only the chart's own
            "serviceMonitorSelectorNilUsesHelmValues": False,
            "podMonitorSelectorNilUsesHelmValues": False,
            "ruleSelectorNilUsesHelmValues": False,
        }
        out.append(
            _release(
                rp,
                "kube-prometheus-stack",
                MONITORING_NAMESPACE,
                deep_merge(
                    {
                        "prometheus": {"prometheusSpec": prometheus},
                        # node labels alicerce sets, as kube_node_labels series for the per-pool GPU alerts
                        "kube-state-metrics": {"metricLabelsAllowlist": ["nodes=[alicerce.dev/pool,alicerce.dev/purpose]"]},
                    },
                    ops.monitoring.values,
                ),
            )
        )
    gpu_operator = ops.gpu_operator.enabled and any(p.gpu is not None for p in pools)
    if gpu_operator:
        out.append(_release(rp, "gpu-operator", "gpu-operator", gpu_operator_values(rp, site), after_monitoring))
    if ops.network_operator.enabled and host_rdma_pools(pools):
        # One Node Feature Discovery per cluster: the GPU Operator's where it runs (its worker labels
        # PCI classes 02xx by vendor, so adapters get the pci-15b3 label the Network Operator selects on).
        values = deep_merge({"nfd": {"enabled": not gpu_operator}}, ops.network_operator.values)
        out.append(_release(rp, "network-operator", "nvidia-network-operator", values))
    efa_pools = [p for p in pools if p.efa_interfaces]
    if efa_pools:
        values = {
            "tolerations": tolerate(efa_pools),
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "alicerce.dev/pool", "operator": "In", "values": sorted(p.name for p in efa_pools)}
                                ]
                            }
                        ]
                    }
                }
            },
        }
        out.append(_release(rp, "aws-efa-k8s-device-plugin", "kube-system", values))
    if any(t.implementations.get(site_name) == "fsx-lustre" for t in site.storage):
        out.append(_release(rp, "aws-fsx-csi-driver", "kube-system", {"node": {"tolerateAllTaints": True}}))
    if ops.kueue.enabled:
        values = deep_merge({"enablePrometheus": monitoring, "enableCertManager": False}, ops.kueue.values)
        out.append(_release(rp, "kueue", KUEUE_NAMESPACE, values, after_monitoring))
    if ops.kuberay.enabled:
        out.append(_release(rp, "kuberay-operator", "kuberay-system", deep_merge({}, ops.kuberay.values)))
    if ops.training_operator.enabled:
        out.append(_release(rp, "training-operator", "kubeflow-system", deep_merge({}, ops.training_operator.values)))
    return out


# Namespaces of operators that run privileged host agents (drivers, device plugins, node exporters).
PRIVILEGED_NAMESPACES = frozenset({"gpu-operator", "nvidia-network-operator", MONITORING_NAMESPACE, "kube-system"})


def operator_namespace_labels(namespace: str, kubernetes_version: str) -> dict[str, str]:
    """Labels of the namespace an operator release installs into: privileged Pod Security for host agents."""
    level = "privileged" if namespace in PRIVILEGED_NAMESPACES else "baseline"
    return {
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/enforce-version": f"v{kubernetes_version}",
        "alicerce.dev/managed": "true",
    }
