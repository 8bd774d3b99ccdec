"""GPU platform alert rules, SLO rules and a Grafana dashboard, computed from the resolved platform.

Pure: returns plain dicts (a PrometheusRule and a dashboard ConfigMap) that join the other
in-cluster objects of :mod:`alicerce.emit.kube.objects`. Metric names are those of the exporters the
platform installs:

- DCGM exporter default counters (NVIDIA dcgm-exporter ``etc/default-counters.csv``);
- Kueue (``kueue_admission_wait_time_seconds``, ``kueue_pending_workloads``; Kueue metrics reference);
- kube-state-metrics (``kube_node_status_capacity``, ``kube_node_labels``);
- vLLM for inference latency (``vllm:time_to_first_token_seconds``,
  ``vllm:e2e_request_latency_seconds``; vLLM production metrics reference).

Label shapes: dcgm-exporter labels a GPU's series with the ``pod``/``namespace``/``container`` of the
workload holding it, and a GPU nobody holds with none of them. The DCGM ServiceMonitor drops the
exporter pod's own target labels of those names (alicerce.emit.kube.operators), so an idle GPU is
never attributed to the exporter's namespace. Serving pods are scraped through a PodMonitor the
platform creates (teams cannot): pods labelled ``alicerce.dev/workload: <workload>`` with a
container port named ``metrics``. Hosts whose node exporter the host role owns are scraped through a
ScrapeConfig.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from alicerce.catalog.alerts import (
    CUDA_VALIDATION_FAILING,
    CUDA_VALIDATOR,
    DCGM_EXPORTER_DOWN,
    FABRIC_MANAGER_DOWN,
    FABRIC_MANAGER_DOWN_STATES,
    FABRIC_MANAGER_STATUS,
    FABRIC_STATE_UNREADABLE,
    FABRIC_STATE_UNREADABLE_STATES,
    GPU_EFFICIENCY,
    GPU_KEY,
    KUEUE_WAIT_BUCKETS,
    NEW_NODE_GRACE_SECONDS,
    STORAGE_ALERTS,
    TTFT,
    Alert,
    ServingSlo,
    bucket_bound,
    critical_xid_alert,
    gpu_health,
    in_service,
    node_clock_alert,
    pool_alert_name,
    serving_slos,
    settled,
    slo_alert_name,
    slo_bucket,
    slo_starved_alert_name,
)
from alicerce.emit.kube.budgets import budget_guard
from alicerce.emit.kube.common import MANAGED, meta
from alicerce.emit.kube.costs import (
    BUDGET,
    BUDGET_EXHAUSTED,
    HOUR_MARK_INTERVAL,
    budget_alerts,
    budget_held,
    cost_rules,
    exhausted_rule,
    history_rules,
    hour_mark_rules,
)
from alicerce.emit.kube.dashboards import dashboards
from alicerce.emit.kube.diagnoses import diagnoses, latency_ticket, le_matcher, slo_burn
from alicerce.emit.kube.fabric_alerts import fabric_alerts
from alicerce.emit.kube.kpi import (
    GPU_RESOURCE,
    KUEUE_NOT_FOLLOWER,
    MIG_RESOURCES,
    NODE_NOT_READY,
    RESERVED_GPUS,
    Counted,
    kpi_groups,
    ksm_resource,
    kueue_increase,
)
from alicerce.emit.kube.promql import fed
from alicerce.emit.kube.sources import source_alerts
from alicerce.emit.storage_counters import counted_tiers, node_exporter_drops
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite, ResolvedTeam
from alicerce.resolve.namespaces import MONITORING_NAMESPACE
from alicerce.spec.models import AlertOverride, Slo

RULE_NAME = "alicerce-gpu-platform"
DASHBOARD_NAME = "alicerce-gpu-platform"
TTFT_METRIC = "vllm:time_to_first_token_seconds_bucket"
E2E_METRIC = "vllm:e2e_request_latency_seconds_bucket"
POOL_LABEL = "label_alicerce_dev_pool"  # kube_node_labels name of the node label alicerce.dev/pool
# ... and of node.kubernetes.io/instance-type, which the kubelet sets from the cloud provider at registration (a well-known
# label: kubernetes.io/docs/reference/labels-annotations-taints/#nodekubernetesioinstance-type) and never changes for
# the node's life; the platform allowlists it (operators.py metricLabelsAllowlist)
INSTANCE_TYPE_LABEL = "label_node_kubernetes_io_instance_type"
WORKLOAD_LABEL = "alicerce.dev/workload"  # the pod label a serving pod carries, and the target label it becomes
WORKLOAD_TARGET_LABEL = "alicerce_dev_workload"  # prometheus-operator sanitizes podTargetLabels (promcfg.go)
METRICS_PORT = "metrics"
NODE_EXPORTER_PORT = 9100


def _pool_alerts(rp: ResolvedPlatform, site_name: str) -> list[Alert]:
    """A node must offer as many GPU units as its pool's layout (lost GPUs are silent otherwise).

    Allocatable, not capacity: the kubelet's device manager keeps an unhealthy device in the node's
    capacity and removes it from allocatable (kubelet devicemanager GetCapacity), so a GPU the device
    plugin marks unhealthy after an XID shows only here. Time-sliced pools advertise their replicas
    (the device plugin multiplies each healthy GPU); MIG pools under the mixed strategy advertise one resource per
    profile, each checked against its count (a MIG GPU off the bus was silent: review obsreview3 G20, and XID 79 may
    not reach DCGM). A node that reports none of a resource (its device plugin never registered since the kubelet
    started: the driver did not load after a reboot) has no allocatable series and counts as 0. So does a node whose
    Ready condition is not true (review obsreview27 D1): allocatable is written by the kubelet alone, so a node that
    died or became unreachable (Ready=Unknown, tainted unreachable by the node lifecycle controller) keeps its last
    posted count in kube-state-metrics, and its 8 lost GPUs read as offered; the alert's 15 minutes are the hold, longer
    than a reboot, and nothing cordons such a node, so the cordon exclusion still quiets only a repair someone started.
    A cloud pool's node is held to its own instance type's GPUs (:func:`_expected_units`), so a change of type does not
    page on the old nodes.
    """
    alerts = []
    site = rp.site(site_name)
    rolling = operand_roll_young(site)
    for pool in site.pools:
        if pool.gpu is None or pool.gpu_units is None:
            continue
        units = pool.gpu_units.resources
        nodes = f'max by (node) (kube_node_labels{{{POOL_LABEL}="{pool.name}"}})'
        expected = _expected_units(rp, pool.name, pool.gpus_per_node, nodes) if pool.instance is not None else None
        # a node cordoned for repair (or drained by alicerce's driver upgrade) is where the runbook already sent it; a
        # node a scale-up just added advertises nothing until its operator stack is up (review obsreview5 G4)
        short_of = expected or _layout_compare(nodes)
        wanting = " or ".join(f"({in_service(settled(_offered(name, nodes) + short_of(count)))})" for name, count in sorted(units.items()))
        # a Ready node that still offers GPUs while the operand's roll has not reached it yet waits for it (review
        # obsreview30 G-1): any of them, not only the resource it is short of, since under the mixed strategy a new MIG
        # profile is a new resource that a node at its old layout offers none of (review obsreview32 G-2); a node at 0
        # GPUs or NotReady does not
        offers_gpus = f'max by (node) (kube_node_status_allocatable{{resource=~"{GPU_RESOURCE}|{MIG_RESOURCES}"}} > 0)'
        expr = f"({wanting}) unless on (node) ({offers_gpus} unless on (node) ({NODE_NOT_READY}) and on () {rolling})"
        layout = ", ".join(f"{count} {name}" for name, count in sorted(units.items()))
        short = f"its {layout}"
        if pool.instance is not None:
            short = f"what its instance type offers (the pool's layout: {layout} on {pool.instance.type})"
        alerts.append(Alert(pool_alert_name(pool.name), expr, "15m", "critical",
                            f"A node of pool {pool.name} offers {{{{ $value }}}} {{{{ $labels.resource }}}}, short of {short}",
                            "A GPU fell off the bus, failed, or the device plugin is unhealthy: drain the node. At the pool's "
                            "old sharing layout after a change of it, the GPU Operator's roll did not reach the node within "
                            f"{roll_bound_minutes(site)} minutes: kubectl -n gpu-operator rollout status daemonset "
                            f"{ROLLED_OPERANDS[0]} (or {ROLLED_OPERANDS[1]}), then the pod that does not start. At 0 with the "
                            "node NotReady (kubectl get node: the kubelet stopped posting, the server died or is unreachable), "
                            f"every GPU and job on it is lost: {site.capabilities.dead_node_action}."))  # fmt: skip
    return alerts


def _layout_compare(nodes: str) -> Callable[[int], str]:
    """The comparison of an on-prem node with the pool's layout."""
    return lambda count: f"* on (node) group_left () ({nodes} > 0) < {count}"


def _offered(name: str, nodes: str) -> str:
    """Per node of the pool, the units of ``name`` it offers: 0 where it reports none or is not Ready."""
    return (
        f'(max by (node, resource) (kube_node_status_allocatable{{resource="{ksm_resource(name)}"}}) '
        f"unless on (node) ({NODE_NOT_READY}) "
        f'or on (node) label_replace(0 * {nodes}, "resource", "{ksm_resource(name)}", "", "")) '
    )


# The GPU Operator's operands whose DaemonSet a day-2 change of a pool's sharing rolls (the ConfigMap's name is in the
# pod template, alicerce.emit.kube.operators): one DaemonSet each for every GPU node of the site, whatever its pool
# (gpu-operator v26.3.3 assets/state-device-plugin/0500_daemonset.yaml:6 and assets/state-mig-manager/0600_daemonset.yaml:4,
# metadata.name), rolled one node at a time (deployments/gpu-operator/values.yaml:45-52, daemonsets.rollingUpdate
# maxUnavailable "1", which alicerce leaves at its default)
ROLLED_OPERANDS = ("nvidia-device-plugin-daemonset", "nvidia-mig-manager")
# What the roll may take per node, read from the same assets: neither DaemonSet has a readiness probe or sets
# terminationGracePeriodSeconds, so the controller moves to the next node once the new pod runs: the old pod's stop
# (Kubernetes' default 30 s grace at most), then the init containers (toolkit-validation finds toolkit-ready already
# written; config-manager-init reads the node's label) and the start, images already on the node (a sharing change
# changes no image). About 5-40 s (obsreview30's estimate, not measured); 60 s leaves a half of that again for the
# DaemonSet controller's and the kubelet's sync. The MIG manager's roll paces the same way, one node at a time, and a
# node repartitions only once the roll reaches it and its new pod runs (stopping the GPU clients, resetting the GPUs,
# restarting the device plugin): until then it offers its old layout, which under the mixed strategy may be none of
# the new profile's resource, and the roll wait spares it while it offers any GPU resource (review obsreview32 G-2)
ROLL_SECONDS_PER_NODE = 60


def roll_bound_minutes(site: ResolvedSite) -> int:
    """How long a roll over every GPU node the site may have (its GPU pools at their max size) is let take: after it, a
    roll still going is stuck (a node NotReady holds the one unavailable slot, a pod that does not start) and the nodes
    it has not reached page."""
    nodes = sum(p.spec.scaling.max for p in site.pools if p.gpu is not None)
    return max(1, -(-nodes * ROLL_SECONDS_PER_NODE // 60))


def operand_roll_young(site: ResolvedSite) -> str:
    """Non-empty while the device plugin's or the MIG manager's DaemonSet is mid-roll (some of its desired nodes not yet
    running the new pod template; kube-state-metrics 2.20.0 internal/store/daemonset.go: status.updatedNumberScheduled
    and status.desiredNumberScheduled) and was not at some minute of the last :func:`roll_bound_minutes`. A roll that
    started again before the last one ended counts from the first."""
    selector = f'{{daemonset=~"{"|".join(ROLLED_OPERANDS)}"}}'
    behind = (
        f"max by (namespace, daemonset) (kube_daemonset_status_desired_number_scheduled{selector}) "
        f"- max by (namespace, daemonset) (kube_daemonset_status_updated_number_scheduled{selector}) > bool 0"
    )
    return f"(({behind}) == 1 and min_over_time(({behind})[{roll_bound_minutes(site)}m:1m]) == 0)"


def _expected_units(rp: ResolvedPlatform, pool: str, gpus_per_node: int, nodes: str) -> Callable[[int], str]:
    """The comparison of a cloud pool's node with what ITS instance type offers, not the pool's current layout: a change
    of instance type (g6e.12xlarge, 4 GPUs, to g6e.48xlarge, 8) reaches the rules at the GitOps sync while the old nodes
    run until `pulumi up` replaces the node group (a GitOps sync and an apply are not one moment), and each healthy old
    node paged (review obsreview27 G5).
    The node's instance-type label says what it was launched as; the catalog says how many GPUs each type has (every
    type with GPUs: the old type is not in the new spec). A resource's units per GPU are the pool's layout (MIG profiles,
    time-slicing replicas). A node whose type is unknown is held to the pool's layout. Not GPU Feature Discovery's
    nvidia.com/gpu.count: it counts the GPUs the driver sees now, so a node rebooted with a GPU off the bus would expect
    one fewer and stay quiet."""
    by_count: dict[int, list[str]] = {}
    for instance in rp.catalog.instances:
        if instance.gpus:
            by_count.setdefault(instance.gpus, []).append(re.escape(instance.type).replace("\\", "\\\\"))

    def compare(count: int) -> str:
        per_gpu = count // gpus_per_node  # every layout gives each GPU the same units (alicerce.resolve.gpu.gpu_units)
        typed = " or ".join(
            f'{per_gpu * gpus} * max by (node) (kube_node_labels{{{POOL_LABEL}="{pool}",{INSTANCE_TYPE_LABEL}=~"{"|".join(types)}"}})'
            for gpus, types in sorted(by_count.items())
        )
        return f"< on (node) group_left () ({typed} or on (node) {count} * {nodes})"

    return compare


def _fabric_manager_alerts(rp: ResolvedPlatform, site_name: str) -> list[Alert]:
    """Fabric Manager down on a node of a pool whose GPU uses NVSwitch (review obsreview27 G1): every CUDA context there
    fails to start while the node looks healthy to every other alert (Ready, all GPUs allocatable, dcgm-exporter up), and
    the next job lands on it because it is free. Where the GPU reports its fabric state (Hopper and newer, the catalog's
    Gpu.reports_fabric_state) from DCGM field 170; on older NVSwitch GPUs, where that field reads not_supported whatever
    Fabric Manager does (review obsreview28 G-1), from the GPU Operator's CUDA validation (_cuda_validation_alert)."""
    pools = [p for p in rp.site(site_name).pools if p.gpu is not None and p.gpu.interconnect.nvswitch]
    if not pools or not rp.spec.operators.gpu_operator.enabled:
        return []
    reported = [p.name for p in pools if p.gpu is not None and p.gpu.reports_fabric_state]
    older = [p.name for p in pools if p.name not in reported]
    return [*(_fabric_state_alerts(reported) if reported else []), *([_cuda_validation_alert(older)] if older else [])]


def _pool_nodes(pools: list[str]) -> str:
    return f'max by (node) (kube_node_labels{{{POOL_LABEL}=~"{"|".join(pools)}"}})'


def _fabric_state_alerts(pools: list[str]) -> list[Alert]:
    """Per node and state, valued the GPUs in it, past the node-creation grace and ten minutes: at a reboot FM starts
    and trains in about a minute, so in_progress held that long is FM dead at boot; a cordoned node is in repair.
    unrecognized/nvml_too_old (DCGM and the driver disagree on the API, the state is unknown) warn apart: this alert is
    blind there."""
    status = f'max by (node, {GPU_KEY}) (label_replace({FABRIC_MANAGER_STATUS}, "node", "$1", "Hostname", "(.+)"))'

    def in_states(states: dict[str, int]) -> str:
        each = (f'label_replace(count by (node) ({status} == {value}), "state", "{state}", "", "") and on (node) {_pool_nodes(pools)}'
                for state, value in states.items())  # fmt: skip
        return in_service(settled(f"({' or '.join(each)})"))

    return [
        Alert(FABRIC_MANAGER_DOWN, in_states(FABRIC_MANAGER_DOWN_STATES), "10m", "critical",
              "Fabric Manager is {{ $labels.state }} for {{ $value }} GPUs on {{ $labels.node }}",
              "NVSwitch fabric not trained: every CUDA job on this node fails at start (cudaErrorSystemNotReady) though "
              "the node is Ready. in_progress for ten minutes is Fabric Manager dead at boot (a fabric trains in about a "
              "minute). Cordon the node, then check nvidia-fabricmanager (systemctl status, /var/log/fabricmanager.log) "
              "and that its version equals the driver's (nvidia-smi -q: Fabric State); restart it, or reboot the node. "
              "Not seen here: Fabric Manager stopping after the fabric trained, which leaves the state at success."),
        Alert(FABRIC_STATE_UNREADABLE, in_states(FABRIC_STATE_UNREADABLE_STATES), "30m", "warning",
              "DCGM cannot read the fabric state of {{ $value }} GPUs on {{ $labels.node }} ({{ $labels.state }})",
              "DCGM and the GPU driver disagree on the fabric state's API (unrecognized: a driver newer than the "
              "exporter's DCGM knows; nvml_too_old: a driver older than it needs), so GPUFabricManagerDown cannot see "
              "Fabric Manager fail on this node. Align them: the GPU Operator's dcgm-exporter release with the driver "
              "branch (dc1 drivers are the nodes' own, upgraded apart). Meanwhile check nvidia-smi -q (Fabric State) "
              "on the node."),
    ]  # fmt: skip


def _cuda_validation_alert(pools: list[str]) -> Alert:
    """A node of an NVSwitch pool older than Hopper whose GPU Operator validator pod is not Ready (alicerce.catalog.alerts
    CUDA_VALIDATOR): its CUDA validation has not passed there. The hold is the operator stack's own install time
    (NEW_NODE_GRACE_SECONDS): the validator reruns driver, toolkit, CUDA and plugin validation at every boot, as on a new
    node. kube-state-metrics 2.20.0: kube_pod_info's created_by_* name the pod's DaemonSet and node its node,
    kube_pod_status_ready{condition="true"} is 0 while an init container has not completed."""
    validator = f'kube_pod_info{{created_by_kind="DaemonSet",created_by_name="{CUDA_VALIDATOR}"}}'
    not_ready = f'max by (node) ({validator} and on (namespace, pod) (kube_pod_status_ready{{condition="true"}} == 0))'
    return Alert(CUDA_VALIDATION_FAILING, in_service(settled(f"({not_ready} and on (node) {_pool_nodes(pools)})")),
                 f"{NEW_NODE_GRACE_SECONDS // 60}m", "critical",
                 "CUDA validation has not passed on {{ $labels.node }} (NVSwitch GPUs older than Hopper)",
                 "The GPU Operator's CUDA check (nvidia-operator-validator, its cuda-validation step) fails on this node, "
                 "which keeps advertising its GPUs: every CUDA job placed there fails at start. On an A100 NVSwitch server "
                 "the usual cause is Fabric Manager down (error 802, system not yet initialized, in the nvidia-cuda-validator "
                 "pod's log; these GPUs do not report their fabric state, so GPUFabricManagerDown cannot see it). Cordon "
                 "the node, then check nvidia-fabricmanager (systemctl status, /var/log/fabricmanager.log) and that its "
                 "version equals the driver's; restart it, or reboot the node. Not seen here: a Fabric Manager that stops "
                 "after the node validated.")  # fmt: skip


def _slo_alerts(rp: ResolvedPlatform, site: ResolvedSite, guarded: frozenset[str]) -> list[Alert]:
    """The SLOs of the teams at the site: a serving workload's pods and a team's ClusterQueue are scraped where its
    team is (review obsreview8: dc1 carried chat-70b's SLO alerts, which read nothing there). ``guarded``: the teams
    whose queue a budget guard may hold (their BUDGET_EXHAUSTED is recorded)."""
    teams = {t.name: t for t in site.teams}
    workloads = {w.name: w for w in rp.spec.workloads}
    latency = {s.name: s for s in serving_slos(rp.spec) if s.kind == "inference-latency"}
    # declared SLOs in the spec's order, then those the workloads' latency targets imply
    alerts = [
        _latency_alert(latency.pop(slo.name), teams, workloads)
        if slo.kind == "inference-latency" and slo.name in latency
        else _slo_alert(slo, teams, workloads, guarded)
        for slo in rp.spec.monitoring.slos
    ]
    alerts += [_latency_alert(slo, teams, workloads) for slo in latency.values()]
    alerts += [_starved_alert(slo, guarded) for slo in rp.spec.monitoring.slos if slo.kind == "queue-wait" and slo.team in teams]
    return [a for a in alerts if a is not None]


def _late_admissions(selector: str, bound: float, name: str) -> Counted:
    """The share of a queue's admissions in QUEUE_SLO_WINDOW that waited longer than ``bound`` (a bucket bound). Kueue
    creates the histogram's series at their first observation, so the admission that creates them (the first after a
    Kueue restart or failover, the likeliest to have waited long) is counted too (review obsreview12 F7: one 7-hour
    wait alone in the window read 0 / 0). ``name`` keeps its records apart from other SLOs'."""
    wait = "kueue_admission_wait_time_seconds"
    at_bound = f'{selector},le=~"{le_matcher(bound)}"'
    good = kueue_increase(f"{wait}_bucket{{{at_bound}}}", QUEUE_SLO_WINDOW, name=f"{name}_in_time", ratio=True)
    total = kueue_increase(f"{wait}_count{{{selector}}}", QUEUE_SLO_WINDOW, name=f"{name}_admitted", ratio=True)
    return Counted([*good.records, *total.records], f"1 - sum({good.expr}) / sum({total.expr})")


def _record_name(slo: Slo) -> str:
    """An SLO's name as a part of a record name."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", slo.name)


def _starved_alert(slo: Slo, guarded: frozenset[str]) -> Alert:
    """A queue whose workloads are never admitted: kueue_admission_wait_time_seconds observes only admissions
    (kueue v0.19.2 pkg/metrics/metrics.go 1043-1047) and Kueue has no metric of the oldest pending workload, so
    the alert fires when, for the whole SLO threshold, the queue always held pending workloads and admitted none."""
    seconds = int(slo.limit)
    # 1m steps: the queue held them at 90% of those of the window at least; all but one reset the alert for the whole
    # window at any scrape gap (a Kueue leader failover, a Prometheus restart; review obsreview2 GAP 7)
    window, steps = f"{seconds}s", int((seconds // 60 - 1) * 0.9)

    def always(query: str) -> str:
        # ... and at its start: held since the whole threshold ago, not since 90% of it
        since = f"count_over_time({query}[10m:1m] offset {seconds - 600}s) > 0"
        return f"(min_over_time({query}[{window}:1m]) > 0 and on () count_over_time({query}[{window}:1m]) >= {steps} and on () {since})"

    queue = f'cluster_queue="{slo.team}",{KUEUE_NOT_FOLLOWER}'
    pending = f"sum(kueue_pending_workloads{{{queue}}})"
    inadmissible = f'sum(kueue_pending_workloads{{{queue},status="inadmissible"}})'
    # a queue's first admission since Kueue started creates its counter at 1: counted (a plain increase read 0 there)
    counted = kueue_increase(f"kueue_admitted_workloads_total{{{queue}}}", window, name=f"slo_{_record_name(slo)}_starved")
    admitted = f"(sum({counted.expr}) or on () vector(0))"
    # a healthy backlog holds inadmissible workloads too (Kueue parks what does not fit now as inadmissible): starved
    # means nothing was admitted all along, whichever kind of pending it held; not while the budget guard holds the
    # queue (Kueue reports it pending, kueue v0.19.2 pkg/metrics/metrics.go CQStatusPending), whose wait is the
    # budget's (review obsreview2 DEFECT 2). Only the guard's hold, while the team's budget is spent: a queue stopped
    # by hand, left held after its budget went, or inactive for a missing ResourceFlavor or AdmissionCheck starves
    # its team, and muted this alert for as long (review obsreview24 F1)
    expr = f"({always(inadmissible)} or {always(pending)}) and on () {admitted} == 0"
    if slo.team in guarded:
        stopped = f'max(kueue_cluster_queue_status{{{queue},status="active"}}) == 0'
        expr += f" unless on () ({stopped} and on () {budget_held(slo.team)})"
    return Alert(slo_starved_alert_name(slo.name), expr, "0m", "warning",
                 f"Team {slo.team}: workloads have waited {slo.limit / 3600:g} h without being admitted",
                 f"SLO {slo.name}: the queue is starved (inadmissible workloads, or nothing admitted); check the workloads' "
                 "QuotaReserved condition, then quota, borrowing limits and capacity.", (("team", slo.team or ""),),
                 tuple((r["record"], r["expr"]) for r in counted.records))  # fmt: skip


def _latency_alert(slo: ServingSlo, teams: dict[str, ResolvedTeam], workloads: dict[str, Any]) -> Alert | None:
    """The percentile of a latency SLO over 5 minutes above its threshold for 10: what the objective is stated in."""
    workload = workloads.get(slo.workload)
    team = teams.get(workload.team) if workload is not None else None
    if workload is None or team is None or slo.percentile is None:
        return None
    # the share of the workload's requests slower than the threshold (a bucket bound, AL360) over 5 minutes above what
    # the percentile allows: exactly "the p99 is above the threshold", where histogram_quantile would interpolate; with
    # a floor of slow requests like the burn pair's (alicerce.emit.kube.diagnoses.latency_ticket)
    budget = slo.window_budget
    expr = latency_ticket(slo, workload, team.namespaces)
    what = "time to first token" if slo.metric == TTFT else "time per output token"
    # a warning, not a page: ten minutes above the threshold spends a few hundredths of the month's error budget; the
    # burn-rate pair (alicerce.emit.kube.diagnoses) decides when it is worth waking someone (review DEFECT 8)
    return Alert(slo_alert_name(slo.name), expr, "10m", "warning",
                 f"{slo.workload}: p{slo.percentile:g} {what} above {slo.threshold * 1000:g} ms",
                 f"SLO {slo.name}: more than {budget:.3g} of requests slower than {slo.threshold * 1000:g} ms for 10 minutes. "
                 f"The objective is {slo.objective:g}% of the month's requests under it (an error budget of "
                 f"{slo.error_budget:.3g}): the burn-rate alerts page when that budget is at risk.", (("team", team.name),))  # fmt: skip


QUEUE_SLO_WINDOW_SECONDS = 6 * 3600
QUEUE_SLO_WINDOW = "6h"


def _slo_alert(slo: Slo, teams: dict[str, ResolvedTeam], workloads: dict[str, Any], guarded: frozenset[str]) -> Alert | None:
    name = slo_alert_name(slo.name)
    if slo.kind == "queue-wait" and slo.team in teams:
        threshold = slo.limit
        # the share of admissions in 6 hours that waited longer than the threshold (a bound of Kueue's histogram,
        # AL360) above what the objective allows. Six hours, not 30 minutes: a training queue admits a job every 30-60
        # minutes, so a 30-minute window held one admission at a time, read nothing between them, and its `for` never
        # held; 16 jobs in a row each 6 h late raised nothing (review obsreview8 F9)
        allowed = 1 - slo.objective / 100
        bound = bucket_bound(threshold, KUEUE_WAIT_BUCKETS) or slo_bucket(threshold, KUEUE_WAIT_BUCKETS)
        late = _late_admissions(f'cluster_queue="{slo.team}",{KUEUE_NOT_FOLLOWER}', bound, f"slo_{_record_name(slo)}")
        # Kueue observes a wait at admission (v0.19.2 pkg/metrics/metrics.go AdmissionWaitTime): the backlog a budget
        # guard's hold leaves is admitted after the hold, having waited through it. Not while the guard held the queue
        # (stopped with the team's budget spent) within the threshold and the 6 hours of admissions read: those waits
        # are the budget's (obsreview3 H). Any other stop is the team's wait to report (review obsreview24 F1)
        expr = f"({late.expr}) > {allowed:.6g}"
        if slo.team in guarded:
            active = f'max(kueue_cluster_queue_status{{cluster_queue="{slo.team}",status="active",{KUEUE_NOT_FOLLOWER}}})'
            spent = f'{BUDGET_EXHAUSTED}{{team="{slo.team}"}}'
            held = f"count_over_time(({active} == 0 and on () {spent})[{int(threshold) + QUEUE_SLO_WINDOW_SECONDS}s:1m]) > 0"
            expr += f" unless on () ({held})"
        return Alert(name, expr, "30m", "warning",
                     f"Team {slo.team}: over {100 - slo.objective:g}% of jobs waited longer than {threshold / 3600:.3g} h for admission",
                     f"SLO {slo.name}: raise the team's quota or borrowing limit, or add capacity (the budget guard's hold on "
                     "the queue in that time explains long waits, and keeps this quiet; a queue stopped for any other "
                     "reason raises KueueClusterQueueInactive).", (("team", slo.team),),
                     tuple((r["record"], r["expr"]) for r in late.records))  # fmt: skip
    if slo.kind == "gpu-utilization" and slo.team is not None:
        # a team's SLO reads the team's own utilisation (busy over what it holds), at the sites where it is, with its
        # team label (its receiver): it read the site's at both sites, what the other teams did (review obsreview27 N5).
        # A team holding no GPU reads 0 / 0, no sample: nothing it holds is idle
        if slo.team not in teams:
            return None
        threshold = slo.limit
        expr = f'team:gpu_effective_utilization:ratio{{team="{slo.team}"}} < {threshold:g}'
        return Alert(name, expr, "6h", "info", f"Team {slo.team}: GPU utilisation under {threshold:.0%} of the GPUs it holds",
                     f"SLO {slo.name}: the team's jobs hold GPUs they do not keep busy; see the team dashboard's "
                     "effective utilisation and GPUIdleWhileAllocated.", (("team", slo.team),))  # fmt: skip
    if slo.kind == "gpu-utilization":
        threshold = slo.limit
        # the platform's effective utilisation (busy GPU-equivalents / installed GPUs, alicerce.emit.kube.kpi), the
        # KPI `alicerce plan` prints this SLO's target for: a raw average of DCGM_FI_DEV_GPU_UTIL counted a time-sliced
        # GPU again per holder pod and each MIG instance as a GPU (review obsreview22 F12)
        expr = f"site:gpu_effective_utilization:ratio < {threshold:g}"
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
        out.append(Alert(alert.name, alert.expr, for_, severity, alert.summary, alert.description, alert.labels, alert.records,
                         alert.keep_firing_for))  # fmt: skip
    return out


RECORDING_RULES = (
    {"record": "namespace:dcgm_gpu_utilization:avg", "expr": 'avg by (namespace) (DCGM_FI_DEV_GPU_UTIL{namespace!=""})'},
    # distinct GPUs: a time-sliced GPU has one series per process of the namespace's pods
    {
        "record": "namespace:dcgm_gpus_in_use:count",
        "expr": 'count by (namespace) (max by (namespace, Hostname, gpu, UUID) (DCGM_FI_DEV_GPU_UTIL{namespace!=""}))',
    },
    {"record": "namespace:dcgm_fb_used_bytes:sum", "expr": 'sum by (namespace) (DCGM_FI_DEV_FB_USED{namespace!=""}) * 1048576'},
)


def _cost_groups(rp: ResolvedPlatform, site_name: str, group: Callable[[str, list[Alert]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Showback at the plan's GPU-hour prices of the site's pools, and the budget alerts of the site's teams."""
    from alicerce.plan.platform import plan_platform  # the plan prices pools once; emit reads it, never re-derives it

    plan = plan_platform(rp)
    all_prices = {p.name: p.billed_usd_per_gpu_hour for p in plan.pools if p.billed_usd_per_gpu_hour is not None}
    site = rp.site(site_name)
    prices = {p.name: all_prices[p.name] for p in site.pools if p.gpu is not None and p.name in all_prices}
    on_site = {p.name for p in site.pools if p.gpu is not None}
    own = {(w.pool, w.name, w.team): w.billed_usd_per_gpu_hour for w in plan.workloads
           if w.pool in on_site and w.billed_usd_per_gpu_hour is not None}  # fmt: skip
    budgets = {team: sites[site_name] for team, sites in plan.site_budgets.items() if site_name in sites}
    shares = {t.name: budgets[t.name] / t.spec.budget.monthly_usd for t in rp.teams if t.spec.budget is not None and t.name in budgets}
    # a Capacity Reservation's GPUs, billed launched or not (the plan's reserved nodes, PL315's fallback included)
    reserved = {p.name: p.price.reserved_nodes * p.gpus_per_node for p in plan.pools
                if p.name in on_site and p.price is not None and p.price.reserved_nodes}  # fmt: skip
    rules = cost_rules(prices, own, reserved) + [
        {"record": BUDGET, "expr": f"vector({usd:.6g})", "labels": {"team": n}} for n, usd in sorted(budgets.items())
    ]
    # the teams whose guard may hold their queue: what lets the queue alerts tell its hold from any other stop
    stopping = [t.name for t in rp.teams if t.spec.budget is not None and t.spec.budget.on_exhausted == "stopAdmitting"]
    rules += [exhausted_rule(n) for n in sorted(stopping) if n in budgets]
    if shares:  # what CostHistoryTruncated and the budget guard read
        rules += history_rules()
    records = [{**r, "labels": {**r.get("labels", {}), "site": site_name}} for r in rules]
    former = {t.name: t.spec.renamed_from for t in rp.teams if t.spec.renamed_from}
    marks = [{**r, "labels": {"site": site_name}} for r in hour_mark_rules(former)]
    return [
        {"name": "alicerce.cost", "rules": records},
        {"name": "alicerce.cost.hourly", "interval": HOUR_MARK_INTERVAL, "rules": marks},
        group("alicerce.budget", budget_alerts(rp, site_name, shares)),
    ]


def rule_groups(rp: ResolvedPlatform, site_name: str) -> list[dict[str, Any]]:
    """Prometheus rule groups (the ``spec.groups`` of the PrometheusRule, and a promtool rule file)."""
    labels = {"platform": rp.name, "environment": rp.environment, "site": site_name}
    overrides = list(rp.spec.monitoring.alerts)

    def group(name: str, alerts: list[Alert]) -> dict[str, Any]:
        return {"name": name, "rules": [r for a in _apply_overrides(alerts, overrides) for r in a.rules(labels)]}

    gpu_site = any(p.gpu is not None for p in rp.site(site_name).pools)
    exporter = [DCGM_EXPORTER_DOWN] if gpu_site and rp.spec.operators.gpu_operator.enabled else []
    burn_records, burn_alerts = slo_burn(rp, rp.site(site_name))
    costs = _cost_groups(rp, site_name, group)
    # teams whose queue a budget guard may hold: an inactive queue mutes their queue alerts only while that budget is spent
    guarded = frozenset(r["labels"]["team"] for g in costs for r in g["rules"] if r.get("record") == BUDGET_EXHAUSTED)
    groups = [
        group(
            "alicerce.gpu.health",
            [
                critical_xid_alert(rp.site(site_name).capabilities.gpu_fault_action, rp.site(site_name).capabilities.critical_xid_cordon),
                *gpu_health(rp.site(site_name).capabilities),
                *exporter,
                *_pool_alerts(rp, site_name),
                *_fabric_manager_alerts(rp, site_name),
            ],
        ),
        # a KPI source that went missing: without these, its KPIs and diagnoses read as an idle, healthy platform
        group("alicerce.sources", source_alerts(rp, site_name)),
        # a node's clock against Prometheus's (the chart's node-exporter group reports an unsynchronised one)
        group("alicerce.nodes", [node_clock_alert(rp.site(site_name).capabilities.clock_sync_action)]),
        group("alicerce.fabric", fabric_alerts(rp, site_name)),
        group("alicerce.gpu.efficiency", list(GPU_EFFICIENCY)),
        group("alicerce.slo", _slo_alerts(rp, rp.site(site_name), guarded)),
        group("alicerce.storage", list(STORAGE_ALERTS) if counted_tiers(rp.site(site_name)) else []),
        {"name": "alicerce.gpu.recording", "rules": [dict(r) for r in RECORDING_RULES]},
        *kpi_groups(rp, site_name, reservations=any(r.get("record") == RESERVED_GPUS for g in costs for r in g["rules"])),
        # after the KPI groups they read; a diagnosis names its cause and what to do
        group("alicerce.diagnoses", diagnoses(rp, site_name, guarded)),
        {"name": "alicerce.slo.burn-rate", "rules": [{**r, "labels": {**r["labels"], "site": site_name}} for r in burn_records]},
        group("alicerce.slo.burn", burn_alerts),
        *costs,
    ]
    return fed(g for g in groups if g["rules"])


def serving_monitors(rp: ResolvedPlatform, site: ResolvedSite) -> list[dict[str, Any]]:
    """A PodMonitor per inference workload whose team is at the site: teams cannot create PodMonitors, and the
    latency SLOs read the serving pods' metrics."""
    teams = {t.name: t for t in site.teams}
    out = []
    for workload in rp.spec.workloads:
        team = teams.get(workload.team)
        if workload.kind != "inference" or team is None:
            continue
        out.append(
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "PodMonitor",
                "metadata": meta(f"serving-{workload.name}", MONITORING_NAMESPACE, {**MANAGED, "alicerce.dev/team": team.name}),
                "spec": {
                    "namespaceSelector": {"matchNames": list(team.namespaces)},
                    # every pod of the workload, a RayService's workers too (issue 24): KubeRay gives every Ray
                    # container, head and worker, a "metrics" port (ray-operator/controllers/ray/common/pod.go
                    # DefaultHeadPodTemplate and DefaultWorkerPodTemplate, utils DefaultMetricsPort 8080) where each
                    # node's Ray metrics agent exports the metrics of what runs on it, the Serve replicas on the
                    # workers; the serving alerts still count the head only (kpi.SERVING_POD)
                    "selector": {"matchLabels": {WORKLOAD_LABEL: workload.name}},
                    "podTargetLabels": [WORKLOAD_LABEL],
                    "podMetricsEndpoints": [{"port": METRICS_PORT, "path": "/metrics"}],
                },
            }
        )
    return out


def host_node_exporters(site: ResolvedSite) -> list[dict[str, Any]]:
    """Where the host role owns the node exporter, a ScrapeConfig for it on every host alicerce provisions (job
    node-exporter, as kube-prometheus-stack's own rules and dashboards expect)."""
    hosts = sorted(h for p in site.pools for h in p.hosts)
    if site.software.node_exporter != "host" or not hosts:
        return []
    return [
        {
            "apiVersion": "monitoring.coreos.com/v1alpha1",
            "kind": "ScrapeConfig",
            "metadata": meta("host-node-exporter", MONITORING_NAMESPACE, MANAGED),
            # one static config per host, labelled with its node name (kubespray names nodes after the inventory host),
            # as the cluster's node exporter series are (alicerce.emit.kube.operators): the KPI rules join on it
            "spec": {
                "jobName": "node-exporter",
                "staticConfigs": [{"targets": [f"{h}:{NODE_EXPORTER_PORT}"], "labels": {"node": h}} for h in hosts],
                **({"metricRelabelings": drops} if (drops := node_exporter_drops(site)) else {}),
            },
        }
    ]


def monitoring_objects(rp: ResolvedPlatform, site_name: str) -> list[dict[str, Any]]:
    """The PrometheusRule, dashboard, PodMonitors and ScrapeConfigs of a site (none when monitoring is off)."""
    if not rp.spec.operators.monitoring.enabled:
        return []
    site = rp.site(site_name)
    labels = {"app.kubernetes.io/managed-by": "alicerce", "alicerce.dev/platform": rp.name}
    groups = rule_groups(rp, site_name)
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "namespace": MONITORING_NAMESPACE, "labels": labels},
        "spec": {"groups": groups},
    }
    dashboard = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DASHBOARD_NAME, "namespace": MONITORING_NAMESPACE, "labels": {**labels, "grafana_dashboard": "1"}},
        "data": {key: json.dumps(board, indent=1, sort_keys=True) for key, board in dashboards(rp, site, groups).items()},
    }
    return [rule, dashboard, *serving_monitors(rp, site), *host_node_exporters(site), *budget_guard(rp, site, groups)]
