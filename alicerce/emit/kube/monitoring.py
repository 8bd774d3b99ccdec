"""GPU platform alert rules, SLO rules and a Grafana dashboard, computed from the resolved platform.

Pure: returns plain dicts (a PrometheusRule and a dashboard ConfigMap) that join the other
in-cluster objects of :mod:`alicerce.emit.kube.objects`. Metric names are those of the exporters the
platform installs:

- DCGM exporter default counters (NVIDIA dcgm-exporter ``etc/default-counters.csv``);
- Kueue (``kueue_admission_wait_time_seconds``, ``kueue_pending_workloads``; Kueue metrics reference);
- kube-state-metrics (``kube_node_status_capacity``, ``kube_node_labels``);
- vLLM for inference latency (``vllm:time_to_first_token_seconds``,
  ``vllm:e2e_request_latency_seconds``; vLLM production metrics reference).

With ``honorLabels`` on the DCGM ServiceMonitor, GPU series carry the ``namespace`` and ``pod``
of the workload using the GPU, so utilisation can be attributed to teams.
"""

from __future__ import annotations

import json
from typing import Any

from alicerce.catalog.alerts import GPU_EFFICIENCY, GPU_HEALTH, Alert, pool_alert_name, slo_alert_name
from alicerce.emit.kube.operators import MONITORING_NAMESPACE
from alicerce.resolve.model import ResolvedPlatform, ResolvedTeam
from alicerce.spec.models import AlertOverride, Slo

RULE_NAME = "alicerce-gpu-platform"
DASHBOARD_NAME = "alicerce-gpu-platform"
TTFT_METRIC = "vllm:time_to_first_token_seconds_bucket"
E2E_METRIC = "vllm:e2e_request_latency_seconds_bucket"
POOL_LABEL = "label_alicerce_dev_pool"  # kube_node_labels name of the node label alicerce.dev/pool


def _pool_alerts(rp: ResolvedPlatform, site_name: str) -> list[Alert]:
    """A node must expose as many GPUs as its pool's accelerator count (lost GPUs are silent otherwise)."""
    alerts = []
    for pool in rp.site(site_name).pools:
        if pool.gpu is None:
            continue
        expected = pool.gpus_per_node
        expr = (
            'max by (node) (kube_node_status_capacity{resource="nvidia_com_gpu"}) '
            f'* on (node) group_left () (max by (node) (kube_node_labels{{{POOL_LABEL}="{pool.name}"}}) > 0) < {expected}'
        )
        alerts.append(Alert(pool_alert_name(pool.name), expr, "15m", "critical",
                            f"A node of pool {pool.name} exposes {{{{ $value }}}} of its {expected} GPUs",
                            "A GPU fell off the bus, failed, or the device plugin is unhealthy: drain the node."))  # fmt: skip
    return alerts


def _team_selector(team: ResolvedTeam) -> str:
    return "|".join(team.namespaces)


def _slo_alerts(rp: ResolvedPlatform) -> list[Alert]:
    teams = {t.name: t for t in rp.teams}
    workloads = {w.name: w for w in rp.spec.workloads}
    alerts = (_slo_alert(slo, teams, workloads) for slo in rp.spec.monitoring.slos)
    return [a for a in alerts if a is not None]


def _slo_alert(slo: Slo, teams: dict[str, ResolvedTeam], workloads: dict[str, Any]) -> Alert | None:
    name = slo_alert_name(slo.name)
    threshold = float(slo.threshold)
    if slo.kind == "inference-latency" and slo.workload in workloads and slo.percentile is not None:
        team = teams.get(workloads[slo.workload].team)
        if team is None:
            return None
        quantile = slo.percentile / 100
        selector = f'namespace=~"{_team_selector(team)}"'
        expr = f"histogram_quantile({quantile:g}, sum by (le) (rate({TTFT_METRIC}{{{selector}}}[5m]))) > {threshold:g}"
        return Alert(name, expr, "10m", "critical",
                     f"{slo.workload}: p{slo.percentile:g} time to first token above {threshold * 1000:g} ms",
                     f"SLO {slo.name}: p{slo.percentile:g} under {threshold * 1000:g} ms for {slo.objective:g}% of the time.")  # fmt: skip
    if slo.kind == "queue-wait" and slo.team in teams:
        quantile = slo.objective / 100
        expr = (
            f"histogram_quantile({quantile:g}, sum by (le) "
            f'(rate(kueue_admission_wait_time_seconds_bucket{{cluster_queue="{slo.team}"}}[30m]))) > {threshold:g}'
        )
        return Alert(name, expr, "30m", "warning",
                     f"Team {slo.team}: {slo.objective:g}% of jobs wait longer than {threshold / 3600:g} h for admission",
                     f"SLO {slo.name}: raise the team's quota or borrowing limit, or add capacity.")  # fmt: skip
    if slo.kind == "gpu-utilization":
        expr = f"avg(DCGM_FI_DEV_GPU_UTIL) < {threshold * 100:g}"
        return Alert(name, expr, "6h", "info", f"Platform GPU utilisation under {threshold:.0%}",
                     f"SLO {slo.name}: the platform is bigger than its workloads need; see `alicerce plan`.")  # fmt: skip
    return None


def _apply_overrides(alerts: list[Alert], overrides: list[AlertOverride]) -> list[Alert]:
    by_name = {o.alert: o for o in overrides}
    out: list[Alert] = []
    for alert in alerts:
        override = by_name.get(alert.name)
        if override is None:
            out.append(alert)
            continue
        if not override.enabled:
            continue
        severity = override.severity or alert.severity
        for_ = f"{int(override.for_)}s" if override.for_ is not None else alert.for_
        out.append(Alert(alert.name, alert.expr, for_, severity, alert.summary, alert.description))
    return out


RECORDING_RULES = (
    {"record": "namespace:dcgm_gpu_utilization:avg", "expr": 'avg by (namespace) (DCGM_FI_DEV_GPU_UTIL{namespace!=""})'},
    {"record": "namespace:dcgm_gpus_in_use:count", "expr": 'count by (namespace) (DCGM_FI_DEV_GPU_UTIL{namespace!=""})'},
    {"record": "namespace:dcgm_fb_used_bytes:sum", "expr": 'sum by (namespace) (DCGM_FI_DEV_FB_USED{namespace!=""}) * 1048576'},
)


def rule_groups(rp: ResolvedPlatform, site_name: str) -> list[dict[str, Any]]:
    """Prometheus rule groups (the ``spec.groups`` of the PrometheusRule, and a promtool rule file)."""
    labels = {"platform": rp.name, "environment": rp.environment, "site": site_name}
    overrides = list(rp.spec.monitoring.alerts)

    def group(name: str, alerts: list[Alert]) -> dict[str, Any]:
        return {"name": name, "rules": [a.rule(labels) for a in _apply_overrides(alerts, overrides)]}

    groups = [
        group("alicerce.gpu.health", [*GPU_HEALTH, *_pool_alerts(rp, site_name)]),
        group("alicerce.gpu.efficiency", list(GPU_EFFICIENCY)),
        group("alicerce.slo", _slo_alerts(rp)),
        {"name": "alicerce.gpu.recording", "rules": [dict(r) for r in RECORDING_RULES]},
    ]
    return [g for g in groups if g["rules"]]


def _dashboard(rp: ResolvedPlatform) -> dict[str, Any]:
    def panel(pid: int, title: str, expr: str, unit: str) -> dict[str, Any]:
        x, y = (0 if pid % 2 else 12), (pid - 1) // 2 * 8  # two panels a row
        return {
            "id": pid, "type": "timeseries", "title": title, "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"expr": expr, "refId": "A", "legendFormat": "__auto"}],
        }  # fmt: skip

    panels = [
        panel(1, "GPU utilisation by namespace", "namespace:dcgm_gpu_utilization:avg", "percent"),
        panel(2, "GPUs in use by namespace", "namespace:dcgm_gpus_in_use:count", "short"),
        panel(3, "GPU memory used by namespace", "namespace:dcgm_fb_used_bytes:sum", "bytes"),
        panel(4, "Tensor core activity by node", "avg by (Hostname) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE) * 100", "percent"),
        panel(5, "GPU temperature", "max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)", "celsius"),
        panel(6, "GPU power", "sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)", "watt"),
        panel(7, "Pending workloads by queue", "sum by (cluster_queue) (kueue_pending_workloads)", "short"),
        panel(8, "XID errors", "max by (Hostname, gpu) (DCGM_FI_DEV_XID_ERRORS)", "short"),
    ]
    return {
        "title": f"{rp.name} GPU platform ({rp.environment})",
        "uid": f"alicerce-{rp.name}-{rp.environment}"[:40],
        "schemaVersion": 39,
        "editable": False,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": panels,
        "tags": ["alicerce", "gpu"],
    }


def dashboard(rp: ResolvedPlatform) -> dict[str, Any]:
    """The Grafana dashboard of the platform (what the dashboard ConfigMap carries)."""
    return _dashboard(rp)


def monitoring_objects(rp: ResolvedPlatform, site_name: str) -> list[dict[str, Any]]:
    """The PrometheusRule and the dashboard ConfigMap of a site (none when monitoring is off)."""
    if not rp.spec.operators.monitoring.enabled:
        return []
    labels = {"app.kubernetes.io/managed-by": "alicerce", "alicerce.dev/platform": rp.name}
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "namespace": MONITORING_NAMESPACE, "labels": labels},
        "spec": {"groups": rule_groups(rp, site_name)},
    }
    dashboard = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DASHBOARD_NAME, "namespace": MONITORING_NAMESPACE, "labels": {**labels, "grafana_dashboard": "1"}},
        "data": {"gpu-platform.json": json.dumps(_dashboard(rp), indent=1, sort_keys=True)},
    }
    return [rule, dashboard]
