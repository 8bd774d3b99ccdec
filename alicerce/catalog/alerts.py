"""alicerce's GPU alert rules: names, expressions, severities and what to do.

Kept apart from the rule assembly (alicerce.emit.kube.monitoring) so validation can check alert
overrides against these names without resolving anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str

    def rule(self, extra_labels: dict[str, str]) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity, **extra_labels},
            "annotations": {"summary": self.summary, "description": self.description},
        }


def camel(name: str) -> str:
    """``train-p5`` -> ``TrainP5``, for alert names derived from spec names."""
    return "".join(part.capitalize() for part in name.split("-"))


def pool_alert_name(pool: str) -> str:
    return f"GPUsMissing{camel(pool)}"


def slo_alert_name(slo: str) -> str:
    return f"SLO{camel(slo)}"


# XIDs that mean the GPU or its memory must be taken out of service (NVIDIA XID catalog):
# 48 double-bit ECC, 63/64 row remapping events, 74 NVLink error, 79 fell off the bus,
# 94/95 contained/uncontained ECC, 119/120 GSP errors.
CRITICAL_XIDS = (48, 63, 64, 74, 79, 94, 95, 119, 120)


def _xid_match() -> str:
    return " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {x}" for x in CRITICAL_XIDS)


GPU_HEALTH: tuple[Alert, ...] = (
    Alert(
        "GPUCriticalXid",
        f"max by (Hostname, gpu, UUID) ({_xid_match()}) > 0",
        "0m",
        "critical",
        "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported a critical XID",
        "XID {{ $value }}: drain the node and run the node validation role before returning it to service.",
    ),
    Alert(
        "GPUXidError",
        "max by (Hostname, gpu, UUID) (DCGM_FI_DEV_XID_ERRORS) > 0",
        "5m",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reports XID {{ $value }}",
        "A non-zero XID persists; check the driver log (nvidia-smi -q, dmesg) for the cause.",
    ),
    Alert(
        "GPURowRemapFailure",
        "max by (Hostname, gpu, UUID) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
        "0m",
        "critical",
        "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} could not remap a memory row",
        "The GPU has run out of spare rows: replace it (RMA).",
    ),
    Alert(
        "GPUUncorrectableRemappedRows",
        "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0",
        "0m",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} remapped rows after uncorrectable errors",
        "A GPU reset is pending to apply the remap; schedule a drain and reset.",
    ),
    Alert(
        "GPUTemperatureHigh",
        "max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) > 85",
        "10m",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} runs at {{ $value }} C",
        "Sustained temperatures above 85 C throttle clocks; check airflow and fan state.",
    ),
    Alert(
        "GPUPCIeReplays",
        "rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[10m]) > 0.1",
        "15m",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} retries PCIe transfers",
        "A rising PCIe replay rate points at a bad riser, cable or slot.",
    ),
    Alert(
        "DCGMExporterDown",
        'absent(up{job=~".*dcgm.*"} == 1)',
        "10m",
        "critical",
        "No DCGM exporter is scraped",
        "GPU health is blind: the GPU Operator's dcgm-exporter is down or not scraped.",
    ),
)

GPU_EFFICIENCY: tuple[Alert, ...] = (
    Alert(
        "GPUIdleWhileAllocated",
        'avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{pod!=""}) < 5',
        "1h",
        "info",
        "Pod {{ $labels.namespace }}/{{ $labels.pod }} holds GPUs it does not use",
        "GPU utilisation under 5% for an hour: idle notebooks and stuck jobs cost GPU-hours other teams are queueing for.",
    ),
)

STATIC_ALERTS = tuple(a.name for a in (*GPU_HEALTH, *GPU_EFFICIENCY))
