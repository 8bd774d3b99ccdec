"""The counters dcgm-exporter collects on every GPU node: alicerce owns the list (the GPU Operator mounts it).

Without a list of its own the GPU Operator runs dcgm-exporter with the image's ``dcp-metrics-included.csv``
(gpu-operator v26.3.3 assets/state-dcgm-exporter/0800_daemonset.yaml, DCGM_EXPORTER_COLLECTORS). That list holds
only ``DCGM_FI_DEV_XID_ERRORS``, the LAST XID a GPU reported: a second XID of the same code (a second contained ECC
error, XID 94, kills a second job; two in a day mean RMA) leaves the series unchanged, and no alert can see it
(NVIDIA/dcgm-exporter#190, review obsreview3 DEFECT C). dcgm-exporter counts XIDs per code in a sliding window only
when its list names ``DCGM_EXP_XID_ERRORS_COUNT`` (4.5.3-4.8.2 internal/pkg/collector/xid_collector.go: one series
per GPU and code, label ``xid``, over ``--xid-count-window-size``, 5 minutes by default, pkg/cmd/app.go). So the
list alicerce mounts is the image's own, field for field and type for type (vendored and compared by a test), plus
that counter and ``DCGM_FI_DEV_ROW_REMAP_PENDING`` (DCGM field 396, whether a row remap waits for the GPU's reset,
which the image's list leaves out; dcgm-exporter resolves any DCGM field a list names) and ``DCGM_EXP_CLOCK_EVENTS_COUNT``
(clock slowdowns per reason in the same 5-minute window, internal/pkg/collector/clock_events_collector.go: the thermal
ones are GPUTemperatureHigh, review obsreview21 F8) and ``DCGM_FI_DEV_FABRIC_MANAGER_STATUS`` (DCGM field 170, whether
Fabric Manager trained the GPU's NVSwitch fabric: GPUFabricManagerDown, review obsreview27 G1). The chart creates the
ConfigMap from ``dcgmExporter.config`` and the operator mounts it as ``/etc/dcgm-exporter/dcgm-metrics.csv``
(deployments/gpu-operator/templates/dcgm_exporter_config.yaml, controllers/object_controls.go 1882-1902).

The exporter reads the list once, at start, and the operator mounts it with a subPath, which the kubelet never
refreshes: a change to the ConfigMap's content reached no running exporter (review observe5 item 1). So the name
carries a hash of the content: a new list is a new ConfigMap, the ClusterPolicy (clusterpolicy.yaml 570-573) names it,
the operator rewrites the DaemonSet's pod template (the metrics-config volume's ConfigMap) and the DaemonSet rolls
its pods; the old ConfigMap is no longer rendered by the chart, and the delivery prunes it (Argo CD's automated prune,
Pulumi's helm.v4.Chart deleting what the chart no longer renders).
"""

from __future__ import annotations

from alicerce.catalog.alerts import (
    CLOCK_EVENTS_METRIC,
    CLOCK_EVENTS_WINDOW_MINUTES,
    FABRIC_MANAGER_STATUS,
    REMAP_PENDING,
    XID_COUNT_METRIC,
    XID_COUNT_WINDOW_MINUTES,
)
from alicerce.emit.kube.common import content_name

DCGM_METRICS_CONFIGMAP = "alicerce-dcgm-metrics"  # the name's stem; counters_configmap() adds the content's hash

# (DCGM field, Prometheus type, what it measures): the image's list at 4.5.3-4.8.2, then the XID count
COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock (MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock (MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Energy used since boot (mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilisation (%)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory copy utilisation (%)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilisation (%)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilisation (%)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "The last XID the GPU reported."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Frame buffer free (MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Frame buffer used (MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Frame buffer reserved (MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "NVLink bandwidth counter over all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU licence status."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for uncorrectable errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether row remapping failed."),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver version."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Share of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Share of cycles the tensor pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Share of cycles the memory interface is busy."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "PCIe bytes sent per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "PCIe bytes received per second."),
    (XID_COUNT_METRIC, "counter", f"XIDs per code reported in the last {XID_COUNT_WINDOW_MINUTES} minutes."),
    (REMAP_PENDING, "gauge", "Whether a row remap waits for a GPU reset."),
    (CLOCK_EVENTS_METRIC, "counter", f"Clock events per reason reported in the last {CLOCK_EVENTS_WINDOW_MINUTES} minutes."),
    (FABRIC_MANAGER_STATUS, "gauge", "Fabric Manager state for the GPU (dcgmFabricManagerStatus_t)."),
)


def counters_csv() -> str:
    """The list in dcgm-exporter's format: one ``FIELD, type, help`` line each."""
    return "".join(f"{name}, {kind}, {help_}\n" for name, kind, help_ in COUNTERS)


def counters_configmap(csv: str | None = None) -> str:
    """The ConfigMap's name for the list ``csv`` (the current one by default): the stem and 10 hex digits of the
    content's SHA-256, so a change of the list changes what the ClusterPolicy references and rolls the exporter."""
    return content_name(DCGM_METRICS_CONFIGMAP, counters_csv() if csv is None else csv)
