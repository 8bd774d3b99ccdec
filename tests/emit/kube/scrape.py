"""What Prometheus stores for a scraped sample: the exporter's labels merged with the target's.

The rules written down from Prometheus's configuration reference (docs/configuration/configuration.md,
``scrape_config``): target labels come from service discovery and ``relabel_configs`` (applied in
order; ``labeldrop`` removes every label whose name fully matches the regex); then, for a label the
sample already has, ``honor_labels: true`` keeps the sample's value, ``false`` renames the sample's
to ``exported_<name>`` and stores the target's. prometheus-operator turns a ServiceMonitor endpoint
into that scrape config with the target labels ``namespace``, ``service``, ``pod``, ``container``,
``endpoint`` and ``job`` set first and the endpoint's ``relabelings`` appended after them
(prometheus-operator v0.93.0 pkg/prometheus/promcfg.go generateServiceMonitorConfig; kube-prometheus-stack
88.5.3 ships v0.93.1).
"""

from __future__ import annotations

import json
import re
from typing import Any

from alicerce.emit.kube.operators import kuberay_values
from tests.emit.kube.upstream import load

DCGM = ("dcgm-exporter", "4.5.3-4.8.2")


def dcgm_target(node_ip: str = "10.30.1.1", pod: str = "nvidia-dcgm-exporter-7x2kq") -> dict[str, str]:
    """The target labels of one dcgm-exporter pod scraped through the GPU Operator's ServiceMonitor."""
    return {
        "namespace": "gpu-operator",
        "service": "nvidia-dcgm-exporter",
        "pod": pod,
        "container": "nvidia-dcgm-exporter",
        "endpoint": "gpu-metrics",
        "job": "nvidia-dcgm-exporter",  # jobLabel: app (the Service's app label)
        "instance": f"{node_ip}:9400",
    }


def dcgm_series(hostname: str, gpu: int, holder: tuple[str, str, str] | None = None) -> dict[str, str]:
    """The labels dcgm-exporter puts on one GPU's series: its device labels, the driver version label, and the
    workload's pod/namespace/container only when a pod holds the GPU."""
    facts = load(*DCGM, "labels.json")
    values = {
        "gpu": str(gpu),
        "UUID": f"GPU-{hostname}-{gpu}",
        "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": hostname,
    }
    assert list(values) == facts["device_labels"]
    labels = {**values, **dict.fromkeys(facts["label_counters_become_labels"], "580.173.02")}
    if holder is not None:
        labels |= dict(zip(facts["pod_attributes"], holder, strict=True))
    return labels


def stored(exposed: dict[str, str], target: dict[str, str], relabelings: list[dict[str, Any]], honor_labels: bool) -> dict[str, str]:
    labels = dict(target)
    for rule in relabelings:
        assert rule["action"] == "labeldrop", rule
        pattern = re.compile(f"^(?:{rule['regex']})$")
        labels = {k: v for k, v in labels.items() if not pattern.match(k)}
    out = dict(exposed)
    for name, value in labels.items():
        if name in out and not honor_labels:
            out[f"exported_{name}"] = out[name]
            out[name] = value
        elif name not in out:
            out[name] = value
    return out


def series(metric: str, labels: dict[str, str]) -> str:
    """A promtool input series name."""
    collected = load(*DCGM, "counters.json")
    assert metric in collected["counters"] or metric in collected["optional"] or not metric.startswith("DCGM_"), metric
    return metric + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items())) + "}"


# the KubeRay operator's target, as prometheus-operator labels it; its series are stored under the ServiceMonitor
# alicerce configures (honorLabels: the series' own namespace is the RayCluster's or RayJob's)
KUBERAY_TARGET = {"namespace": "kuberay-system", "service": "kuberay-operator", "pod": "kuberay-operator-7d9f5",
                  "container": "kuberay-operator", "endpoint": "http", "job": "kuberay-operator", "instance": "10.0.0.9:8080"}  # fmt: skip


def kuberay_scraped(metric: str, exposed: dict[str, str]) -> str:
    """A KubeRay operator series as Prometheus stores it under alicerce's ServiceMonitor of the operator."""
    monitor = kuberay_values(monitoring=True)["metrics"]["serviceMonitor"]
    return series(metric, stored(exposed, KUBERAY_TARGET, [], monitor["honorLabels"]))
