"""The in-cluster operators, each switchable and tunable."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from alicerce.spec.base import SpecModel
from alicerce.spec.units import Duration


class Operator(SpecModel):
    """An in-cluster operator installed from its pinned Helm chart."""

    enabled: StrictBool = Field(default=True, description="Install it.")
    values: dict[str, Any] = Field(default_factory=dict, description="Helm values merged over alicerce's own.")


class GpuOperator(Operator):
    kernel_module_type: Literal["auto", "open", "proprietary"] = Field(
        default="auto", description="NVIDIA kernel modules to use (driver.kernelModuleType)."
    )
    mig_strategy: Literal["single", "mixed"] = Field(default="mixed", description="How MIG devices are advertised.")
    dcgm_service_monitor: StrictBool = Field(default=True, description="Scrape DCGM exporter through a ServiceMonitor.")


class Kueue(Operator):
    pods_ready_timeout: Duration | None = Field(
        default=None,
        gt=0,
        description="How long an admitted workload may wait for all its pods to be ready before Kueue evicts and requeues it "
        "(waitForPodsReady.timeout). Default: the longest start-up budget of the site's pool purposes (2h with training pools).",
        examples=["2h"],
    )


class Operators(SpecModel):
    """Which operators run in every cluster, each switchable and tunable."""

    gpu_operator: GpuOperator = Field(default_factory=GpuOperator, description="NVIDIA GPU Operator.")
    network_operator: Operator = Field(default_factory=Operator, description="NVIDIA Network Operator (on-prem RDMA).")
    kueue: Kueue = Field(default_factory=Kueue, description="Kueue job queueing and quotas.")
    kuberay: Operator = Field(default_factory=Operator, description="KubeRay operator.")
    training_operator: Operator = Field(default_factory=Operator, description="Kubeflow training operator.")
    monitoring: Operator = Field(default_factory=Operator, description="kube-prometheus-stack.")
