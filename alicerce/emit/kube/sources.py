"""KPI sources that went missing: an alert per exporter the KPIs and diagnoses read, where the site should have it.

A recording rule over series that are gone records nothing, and a diagnosis over nothing never fires: without these
alerts a dead or unscraped exporter reads on every dashboard as an idle, healthy platform. Each alert compares what
the cluster says should report (kube-state-metrics' nodes and pods, the spec's teams and workloads) with what does,
so a pool scaled to zero or a workload not yet deployed raises nothing. kube-state-metrics itself is the reference of
the others: its own absence is the first alert. DCGM's exporter has DCGMExporterDown (alicerce.catalog.alerts).

Series and labels, at the pinned versions (vendored under tests/data/upstream):
- kube-state-metrics 2.20.0: ``kube_node_labels`` (one per node, ``node``), ``kube_pod_status_phase``;
- node exporter v1.12.1: ``node_pressure_io_waiting_seconds_total`` (pressure collector, every node with PSI: the
  storage KPIs count from it), ``node_infiniband_port_data_transmitted_bytes_total`` (infiniband collector), and through
  its textfile collector the EFA ports' ``alicerce_efa_*`` counters (alicerce.targets.aws files/alicerce_efa_stats.py);
- dcgm-exporter 4.5.3-4.8.2: ``DCGM_FI_DEV_GPU_UTIL`` and the profiling ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``;
- Kueue 0.19.2: ``kueue_pending_workloads`` is set for every ClusterQueue as soon as Kueue knows it, zeros included
  (pkg/cache/queue/manager.go AddClusterQueue -> reportPendingWorkloads);
- serving pods: ``up`` of the PodMonitor's targets, labelled ``alicerce_dev_workload``;
- the cloud's file systems (FSx for Lustre, EFS): the tier KPIs the storage metrics exporter's series feed
  (alicerce.emit.kube.kpi cloud_tier_rules).
"""

from __future__ import annotations

from alicerce.catalog.alerts import (
    CLOUD_STORAGE_METRICS_ABSENT,
    DCGM_PROFILING_ABSENT,
    DCGM_XID_COUNTS_ABSENT,
    EFA_COUNTERS_FILE,
    EFA_COUNTERS_MISSING,
    EFA_COUNTERS_STALE,
    EFA_LINK_RATE_MISSING,
    FABRIC_COUNTERS_ABSENT,
    FABRIC_WAIT_FILE,
    FABRIC_WAIT_UNREAD,
    KUBE_STATE_METRICS_ABSENT,
    KUBERAY_METRICS_ABSENT,
    KUEUE_METRICS_ABSENT,
    KUEUE_PROCESS_START_ABSENT,
    NODE_CORDONED_FOR_DAYS,
    NODE_EXPORTER_ABSENT,
    NODE_EXPORTER_ANSWERS,
    PROMETHEUS_RETENTION_EXCEEDS_VOLUME,
    RAY_SERVE_DEPLOYMENT_DOWN,
    RAY_SERVE_NEVER_HEALTHY,
    RAY_SERVE_STATUS_ABSENT,
    SERVING_ENGINE_METRICS_ABSENT,
    SERVING_LATENCY_UNMEASURED,
    SERVING_METRICS_ABSENT,
    SERVING_NEVER_READY,
    SERVING_WORKLOAD_DOWN,
    SEVERITY_DECIDED,
    SOURCE_ABSENT_FOR,
    XID_COUNT_METRIC,
    Alert,
    cordoned_for_days,
    hosts_in_service,
    in_service,
    retention_exceeds_volume,
    series_names,
    serving_slos,
)
from alicerce.emit.kube.diagnoses import le_matcher
from alicerce.emit.kube.fabric_alerts import PORT as FABRIC_PORT
from alicerce.emit.kube.kpi import (
    EFA_RX,
    IB_PORT_ACTIVE,
    KUEUE_TARGET,
    LIVE_PODS,
    POOL_NODE_LABEL,
    PROCESS_START,
    RAY_CLUSTER_INFO,
    RAY_CLUSTER_LABEL,
    RAY_DEPLOYMENT,
    RAY_DEPLOYMENT_DESIRED,
    RAY_DEPLOYMENT_HEALTHY,
    RAY_DEPLOYMENT_LAST_HEALTHY,
    RAY_DEPLOYMENT_LAST_ZERO,
    RAY_DEPLOYMENT_STATUS,
    RAY_NODE_TYPE_LABEL,
    RAY_STATUS_DOWNSCALING,
    RAY_STATUS_WANTING,
    READY_PODS,
    SERVING_LAST_EMPTY,
    SERVING_LAST_READY,
    SERVING_POD,
    SERVING_READY,
    SERVING_WORKLOAD_LABEL,
    TIER_READ,
    ksm_label,
    kueue_series,
    rail_matcher,  # the rails as FabricPortDown reads them
)
from alicerce.emit.kube.kueue import cluster_queue
from alicerce.emit.storage_counters import cloud_metric_tiers, fabric_wait_pools
from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.namespaces import MONITORING_NAMESPACE

FOR = SOURCE_ABSENT_FOR


def _nodes(pools: list[str]) -> str:
    """The nodes of some pools, one series each with its ``node`` label (kube-state-metrics)."""
    return f'max by (node) (kube_node_labels{{{POOL_NODE_LABEL}=~"{"|".join(sorted(pools))}"}})'


def source_alerts(rp: ResolvedPlatform, site_name: str) -> list[Alert]:
    site = rp.site(site_name)
    pools = [p.name for p in site.pools]
    alerts = [
        Alert(KUBE_STATE_METRICS_ABSENT, "absent(kube_node_labels)", "10m", SEVERITY_DECIDED[KUBE_STATE_METRICS_ABSENT],
              "kube-state-metrics reports no node",
              "Every pool, team and workload KPI joins on kube-state-metrics: it is down or not scraped (check the "
              "kube-prometheus-stack kube-state-metrics pod and its ServiceMonitor); until it is back the KPIs, "
              "budgets and the missing-GPU alerts read nothing."),
        Alert(PROMETHEUS_RETENTION_EXCEEDS_VOLUME, retention_exceeds_volume(MONITORING_NAMESPACE), "1h", "warning",
              "Prometheus {{ $labels.pod }} may keep more than its volume holds",
              "Its size retention ({{ $value | humanize1024 }}B) is above 95% of its volume's capacity: it deletes old "
              "blocks only past that size, so the volume fills first and Prometheus stops ingesting and evaluating "
              "every rule, alerts included. monitoring.storage grew but the claim did not (a StatefulSet never resizes "
              "its claims): grow the claim as `alicerce diff` lists (kubectl patch pvc, on a class that allows "
              "expansion), or set monitoring.storage back to the claim's size. Its margin: the retention is 90% of "
              "monitoring.storage and the file system holds a little less than its claim (ext4 and XFS metadata), so a "
              "growth under about 4% (100 to 103 GiB: a 92.7 GiB retention on a ~98.4 GiB file system) stays below this alert while "
              "compaction's temporary blocks may still fill the volume: grow the claim with every growth of "
              "monitoring.storage, small ones included. It cannot fire on a hostPath volume (the local-path class "
              "kubespray installs), for which the kubelet reports no capacity: there `alicerce diff` and the node's "
              "file system alerts guard."),
    ]  # fmt: skip
    if pools:
        alerts.append(Alert(NODE_CORDONED_FOR_DAYS, f"{_nodes(pools)} and on (node) ({cordoned_for_days()})", "10m", "warning",
                            "Node {{ $labels.node }} has been cordoned for three days",
                            "The missing-exporter and missing-GPU alerts leave cordoned nodes out: a node left cordoned "
                            "after its repair is blind and idle. Uncordon it (kubectl uncordon) or take it out of the pool."))  # fmt: skip
        # a node without PSI reports no pressure either: its storage KPIs and input-bound diagnosis are as blind
        expr = in_service(f"{_nodes(pools)} unless on (node) {NODE_EXPORTER_ANSWERS}")
        alerts.append(Alert(NODE_EXPORTER_ABSENT, expr, FOR, "warning", "Node {{ $labels.node }} reports no node exporter IO pressure",
                            "The node exporter of this node is down or not scraped, or its kernel has no pressure stall "
                            "information (boot with psi=1): its storage and fabric KPIs and the input-bound and checkpoint "
                            "diagnoses are blind there."))  # fmt: skip
    counted = [p.name for p in site.pools if p.rdma is not None and p.rdma.port_counters]
    if counted:
        # only where the exporter answers (else NodeExporterAbsent says it): the collector sees no HCA port counters
        expr = in_service(f"{_nodes(counted)} unless on (node) max by (node) (node_infiniband_port_data_transmitted_bytes_total) "
                          f"and on (node) {NODE_EXPORTER_ANSWERS}")  # fmt: skip
        # A hung adapter blanks the whole node: node exporter v1.12.1's infiniband collector reads every device in one
        # pass (collector/infiniband_linux.go Update -> procfs v0.21.1 sysfs/class_infiniband.go InfiniBandClass) and
        # returns the first error of any counter read that is not ENOENT, EPERM or EOPNOTSUPP (EINVAL too, but only under
        # counters/: parseInfiniBandCounters tests syscall.EINVAL, while the counters_ext/ and hw_counters/ readers test
        # only os.ErrInvalid, which a raw errno never matches). An mlx5 HCA whose firmware stops answering stays in
        # sysfs; its counter reads wait out the command timeout (ETIMEDOUT) and, once the health poll marks it in
        # internal error, fail with ENOLINK (EIO on older kernels; Linux
        # drivers/net/ethernet/mellanox/mlx5/core/cmd.c mlx5_internal_err_ret_value, health.c poll_health)
        alerts.append(Alert(FABRIC_COUNTERS_ABSENT, expr, FOR, "warning",
                            "Node {{ $labels.node }} reports no InfiniBand/RoCE port counters",
                            "The node exporter answers but its infiniband collector reports no adapter port: the "
                            "collector disabled, /sys not mounted into its pod, the HCA driver not loaded, or one adapter "
                            "hung. The collector reads every adapter in one pass and reports none when a single counter "
                            "read fails, so an HCA whose firmware stopped answering, still listed in /sys/class/infiniband, "
                            "blanks the node's healthy ports too. Its marks: node_scrape_collector_success{collector="
                            "\"infiniband\"} is 0 and the exporter's log says \"error obtaining InfiniBand class info\" "
                            "with the file that failed. On the node, dmesg | grep mlx5_core shows \"device's health "
                            "compromised\", a command timeout or a health syndrome for that adapter; drain the node, then "
                            "reset the adapter's firmware with mlxfwreset -d <PCI address> reset (NVIDIA MFT; mstfwreset "
                            "from mstflint) or reboot it, and have the adapter replaced if it hangs again. If the read is "
                            "slower than the scrape's timeout, the whole scrape fails and NodeExporterAbsent fires "
                            "instead. Until then fabric KPIs and the communication-bound diagnosis are blind on this "
                            "node."))  # fmt: skip
    efa = [p.name for p in site.pools if p.rdma is not None and p.rdma.technology == "efa"]
    if efa:
        alerts += efa_counters_alerts(efa)
    if waited := fabric_wait_pools(site):
        rails = {p.name: p.rdma.rail_devices for p in site.pools if p.name in waited and p.rdma is not None}
        alerts.append(fabric_wait_alert(rails))
    if any(p.gpu is not None for p in site.pools) and rp.spec.operators.gpu_operator.enabled:
        # not on a cordoned node: the node validation's burn-in (dcgmi diag) runs there, and a second DCGM instance can
        # hold the profiling counters meanwhile (review obsreview46 N-3)
        expr = hosts_in_service(
            "max by (Hostname) (DCGM_FI_DEV_GPU_UTIL) unless on (Hostname) max by (Hostname) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)"
        )
        alerts.append(Alert(DCGM_PROFILING_ABSENT, expr, FOR, "warning",
                            "GPUs on {{ $labels.Hostname }} report no DCGM profiling metrics",
                            "dcgm-exporter answers without DCGM_FI_PROF_* (its counters file lacks them, or another "
                            "profiler such as Nsight holds the GPU's counters): tensor, DRAM and engine activity, and the "
                            "memory- and communication-bound diagnoses, are blind on this node."))  # fmt: skip
        # the XID alerts read the per-code count alicerce's counters list enables (alicerce.emit.kube.dcgm_counters)
        # keyed on the temperature every GPU reports (a MIG instance reports no DCGM_FI_DEV_GPU_UTIL; obsreview4 G2)
        expr = f"max by (Hostname) (DCGM_FI_DEV_GPU_TEMP) unless on (Hostname) max by (Hostname) ({XID_COUNT_METRIC})"
        alerts.append(Alert(DCGM_XID_COUNTS_ABSENT, expr, FOR, "warning",
                            "GPUs on {{ $labels.Hostname }} report no XID counts",
                            "dcgm-exporter runs without alicerce's counters list (gpu-operator dcgmExporter.config, "
                            "ConfigMap alicerce-dcgm-metrics-<hash>): the XID alerts cannot see an XID on this node's GPUs, nor "
                            "GPUTemperatureHigh a thermal slowdown."))  # fmt: skip
    queues = sorted(t.name for t in site.teams if cluster_queue(rp, site, t) is not None) if rp.spec.operators.kueue.enabled else []
    if queues:
        # one series per missing queue: absent() of an equality matcher carries its label
        selectors = [kueue_series("kueue_pending_workloads", f'cluster_queue="{q}"') for q in queues]
        expr = " or ".join(f"absent({selector})" for selector in selectors)
        alerts.append(Alert(KUEUE_METRICS_ABSENT, expr, FOR, "warning",
                            "Kueue reports no metrics of ClusterQueue {{ $labels.cluster_queue }}",
                            "Kueue's controller is down or not scraped (enablePrometheus, its ServiceMonitor), or the "
                            "ClusterQueue does not exist: the team's queue wait, quota, budget and borrowing KPIs are "
                            "blind."))  # fmt: skip
        # Kueue's counts are dated by its process's start (kpi.kueue_increase): a scrape that drops process_* series (a
        # metricRelabelings or scrape class cutting cardinality) turns them back into increase(), silently (review
        # obsreview14 F4)
        expr = f"max by ({KUEUE_TARGET}) ({kueue_series('kueue_pending_workloads')}) unless on ({KUEUE_TARGET}) {PROCESS_START}"
        alerts.append(Alert(KUEUE_PROCESS_START_ABSENT, expr, FOR, "warning",
                            "Kueue's metrics at {{ $labels.instance }} come without process_start_time_seconds",
                            "Kueue runs outside the kueue-system namespace alicerce installs it in, or something in the "
                            "scrape drops its process_* series: a queue's first admission or finish, and what Kueue counts "
                            "after a restart or failover, read as none (the queue KPIs, SLO<team>QueueStarved, the "
                            "queue-wait SLO); keep process_start_time_seconds for its target."))  # fmt: skip
    if rp.spec.operators.kuberay.enabled:
        # a RayJob's run is the pods of the RayClusters KubeRay's operator says it built (kpi.pod_runs): with the
        # operator's metrics gone (its ServiceMonitor off, metrics.enabled false in the spec's values, the operator
        # down) every RayJob's GPU-hours fall out of the runs, silently. Any RayCluster with pods the operator does
        # not report says so (review obsreview16 F2). Not a pod being deleted: KubeRay deletes a finished RayJob's
        # RayCluster at once and its pods go with it, but one on a lost node keeps its deletion timestamp and its object
        # (the dead kubelet never confirms) until the Node object goes or someone force-deletes it, for hours, and read
        # as the operator down (review obsreview21 F9); kube-state-metrics 2.20.0 kube_pod_deletion_timestamp, as LIVE_PODS
        cluster = ksm_label(RAY_CLUSTER_LABEL)
        reported = f'label_replace(max by (namespace, name) ({RAY_CLUSTER_INFO}), "{cluster}", "$1", "name", "(.+)")'
        pods = f'kube_pod_labels{{{cluster}!=""}} unless on (namespace, pod) kube_pod_deletion_timestamp'
        expr = f"count by (namespace, {cluster}) ({pods}) unless on (namespace, {cluster}) {reported}"
        alerts.append(Alert(KUBERAY_METRICS_ABSENT, expr, FOR, "warning",
                            "KubeRay reports no RayCluster {{ $labels.namespace }}/{{ $labels.label_ray_io_cluster }}, "
                            "which has pods",
                            "The KubeRay operator is down or not scraped (chart values metrics.enabled and "
                            "metrics.serviceMonitor.enabled), or it runs outside what alicerce installed: a RayJob's "
                            "GPU-hours reach no run (cost per run, the costliest runs, alicerce costs) until "
                            "kuberay_cluster_info names its RayCluster; the team's cost still counts them."))  # fmt: skip
    teams = {t.name for t in site.teams}
    serving = sorted(w.name for w in rp.spec.workloads if w.kind == "inference" and w.team in teams)
    if serving:
        names = "|".join(serving)
        # ready, not Running: vLLM binds /metrics only once its engine has loaded the weights (often 10-20 minutes for
        # a 70B model), so a rollout's new pods read as unscraped for as long as they load (review obsreview3 G14);
        # its readiness probe on /health passes at the same moment (README, Run the platform)
        pods = f'count by (namespace, workload) ({SERVING_POD}{{workload=~"{names}"}} * on (namespace, pod) group_left () ({READY_PODS}))'
        # the serving pods scraped, not every target: the PodMonitor scrapes a RayService's workers too (their Ray
        # metrics agents, emit.kube.monitoring), and their targets up would hide a head that serves no metrics (issue 24)
        up = f'max by (namespace, pod) (up{{{SERVING_WORKLOAD_LABEL}=~"{names}"}} == 1)'
        scraped = f'count by (namespace, workload) ({SERVING_POD}{{workload=~"{names}"}} * on (namespace, pod) group_left () {up})'
        # running pods of a serving workload that its PodMonitor does not scrape (no container port named metrics, the
        # engine not answering): its latency, throughput and SLO series miss them, and the SLO reads what is left
        expr = f"{pods} > on (namespace, workload) ({scraped} or 0 * {pods})"
        alerts.append(Alert(SERVING_METRICS_ABSENT, expr, "20m", "warning",
                            "{{ $labels.namespace }}/{{ $labels.workload }}: {{ $value }} ready serving pods, fewer scraped",
                            "Ready serving pods that Prometheus does not scrape: name the engine's metrics port `metrics` "
                            "and label the pods alicerce.dev/workload (README, Run the platform); until then latency, "
                            "throughput and SLO burn rates count only the pods it does scrape."))  # fmt: skip
        alerts.append(_engine_unmeasured(names, up))
        alerts += _latency_unmeasured(rp, set(serving), up)
        # a workload whose pods exist and none is ready serves nobody, and its latency SLIs have no traffic to
        # count: the SLO pages never fire (review obsreview3 G13). It pages when a workload that served in the last
        # 30 days (kpi.SERVING_LAST_READY) stops; one that never became ready (a first rollout, a bad image) is a
        # ticket after 45 minutes. Only live pods count: a workload scaled to zero beside an evicted pod's object is
        # not down (review obsreview5 DEFECT 4), nor while its pods terminate (review obsreview6 G7)
        live = f'{SERVING_POD}{{workload=~"{names}"}} * on (namespace, pod) group_left () ({LIVE_PODS})'
        exists = f"count by (namespace, workload) ({live})"
        # ready since it last had no live pod: a workload scaled up from zero (a night's scale-down, KEDA) loads for
        # 10-20 minutes and is ServingWorkloadNeverReady's if it never gets there (review obsreview6 DEFECT 1)
        served = f"{SERVING_LAST_READY} > on (namespace, workload) ({SERVING_LAST_EMPTY} or 0 * {SERVING_LAST_READY})"
        down = f"{exists} unless on (namespace, workload) {SERVING_READY} and on (namespace, workload) ({served})"
        alerts.append(Alert(SERVING_WORKLOAD_DOWN, down, "5m", "critical",
                            "{{ $labels.namespace }}/{{ $labels.workload }} has no ready replica",
                            "The serving workload answers no request: every pod is pending, crashing or failing its "
                            "readiness probe (kubectl -n {{ $labels.namespace }} get pods -l alicerce.dev/workload="
                            "{{ $labels.workload }}; check events, GPU capacity in its pool and the engine log)."))  # fmt: skip
        # never ready since it last had no live pod, not "never ready in 30 days": a scale-up from zero that never gets
        # there is ServingWorkloadDown's no more (served is false) and read as served before, it raised nothing
        alerts.append(Alert(SERVING_NEVER_READY, f"{exists} unless on (namespace, workload) ({served})", "45m", "warning",
                            "{{ $labels.namespace }}/{{ $labels.workload }} has pods, none ready since it started",
                            "Its pods have not become ready in 45 minutes since its first rollout or its last scale-up "
                            "from zero: the image, the model download, GPU memory or the readiness probe (vLLM answers "
                            "/health once the engine has loaded)."))  # fmt: skip
        if rp.spec.operators.kuberay.enabled:
            alerts += _ray_serve_alerts(names)
    tiers = sorted(cloud_metric_tiers(rp, site))
    if tiers:
        # one series per tier: whatever breaks between CloudWatch and the rule (the exporter down or unscraped, its role
        # denied, the file system untagged or gone) leaves the tier's throughput unrecorded, read as idle. A tier that
        # moved nothing for two weeks is recorded as 0 (kpi.cloud_tier_rules: the exporter finds its file system, and
        # its calls to CloudWatch succeed): no alert for a tier not used yet (review obsreview5 G2)
        expr = " or ".join(f'absent({TIER_READ}{{tier="{t}"}})' for t in tiers)
        alerts.append(Alert(CLOUD_STORAGE_METRICS_ABSENT, expr, "20m", "warning",
                            "No throughput of storage tier {{ $labels.tier }} from CloudWatch",
                            "The tier's file system I/O reaches no KPI: check the cloudwatch-exporter pod in the monitoring "
                            "namespace and its log (an AccessDenied names the IAM role's missing permission; "
                            "yace_cloudwatch_request_errors counts failed CloudWatch calls), its ServiceMonitor target, "
                            "and that the file system carries the alicerce.dev/storage-tier and alicerce.dev/site tags. "
                            "Until then the tier's throughput and operations read as nothing."))  # fmt: skip
    return alerts


def _engine_unmeasured(names: str, up: str) -> Alert:
    """Ready serving pods scraped and answering whose engine serves no vLLM series at all: every SLO, burn rate, token
    and queue KPI of the workload reads nothing, and ServingLatencyUnmeasured, which looks only where vLLM's request
    counter shows traffic, cannot see it either (review obsreview21 F7). vLLM creates its Prometheus stat logger only
    with log stats on (vllm/v1/engine: ``if self.log_stats``), which --disable-log-stats turns off, and its OpenAI
    server's gauges (vllm:num_requests_running, ...) are labelled at start, traffic or not: 30 minutes without one is
    not an idle engine. Not a Ray pod: a RayService's head reports through Ray's metrics agent (ray_vllm_*), whose
    series appear only once a value is recorded, so an idle RayService has none."""
    ray = f'kube_pod_labels{{{ksm_label(RAY_NODE_TYPE_LABEL)}!=""}}'
    ready = f'{SERVING_POD}{{workload=~"{names}"}} * on (namespace, pod) group_left () ({READY_PODS}) and on (namespace, pod) {up}'
    engine = f'max by (namespace, pod) ({{__name__=~"vllm:.+",{SERVING_WORKLOAD_LABEL}=~"{names}"}})'
    expr = f"count by (namespace, workload) (({ready}) unless on (namespace, pod) ({ray} or {engine}))"
    return Alert(SERVING_ENGINE_METRICS_ABSENT, expr, "30m", "warning",
                 "{{ $labels.namespace }}/{{ $labels.workload }}: {{ $value }} ready pods serve no vLLM metrics",
                 "The pods are scraped and their /metrics has no vllm: series: the engine runs with --disable-log-stats "
                 "(or with several API servers, which turn its stats off), or is not vLLM. Its latency SLOs, burn rates, "
                 "token, request and queue KPIs read nothing until it does: remove --disable-log-stats from the "
                 "engine's arguments and check `curl <pod>:<metrics port>/metrics | grep vllm:`.")  # fmt: skip


def _latency_unmeasured(rp: ResolvedPlatform, serving: set[str], up: str) -> list[Alert]:
    """A serving workload that finished requests in the last 30 minutes and whose scraped pods serve no bucket at the
    bound one of its latency SLOs counts at, under any name of the histogram: the SLO and its burn-rate alerts read
    nothing and never fire. A vLLM that renamed the histogram (as it did for time per output token, review obsreview8
    F1), or one configured with other buckets. Per workload and histogram bound, not per pod: a RayService's workers
    are scraped for Ray's own metrics and serve no histogram. Only with traffic: Ray exports a histogram from its first
    observation, so an idle RayService has none (vLLM's own server creates its series at start)."""
    read: dict[str, set[tuple[str, float]]] = {}
    for slo in serving_slos(rp.spec):
        if slo.kind == "inference-latency" and slo.workload in serving:
            read.setdefault(slo.workload, set()).add((slo.metric, slo.bound))
    finished = "|".join(series_names("vllm:request_success_total"))

    def per_workload(selector: str) -> str:
        return f'label_replace({selector}, "workload", "$1", "{SERVING_WORKLOAD_LABEL}", "(.+)")'

    parts = []
    for workload, bounds in sorted(read.items()):
        scraped = f'count by (namespace, workload) ({SERVING_POD}{{workload="{workload}"}} * on (namespace, pod) group_left () {up})'
        requests = f'increase({{__name__=~"{finished}",{SERVING_WORKLOAD_LABEL}="{workload}"}}[30m])'
        busy = f"sum by (namespace, workload) ({per_workload(requests)}) > 0"
        for histogram, bound in sorted(bounds):
            names = "|".join(f"{n}_bucket" for n in series_names(histogram))
            served = f'{{__name__=~"{names}",{SERVING_WORKLOAD_LABEL}="{workload}",le=~"{le_matcher(bound)}"}}'
            measured = f"count by (namespace, workload) ({per_workload(served)})"
            missing = f"({scraped} and on (namespace, workload) ({busy})) unless on (namespace, workload) {measured}"
            parts.append(f'label_replace(label_replace({missing}, "histogram", "{histogram}", "", ""), "le", "{bound:g}", "", "")')
    if not parts:
        return []
    return [Alert(SERVING_LATENCY_UNMEASURED, " or ".join(parts), "30m", "warning",
                  "{{ $labels.namespace }}/{{ $labels.workload }} serves no {{ $labels.histogram }} bucket at {{ $labels.le }} s",
                  "The workload answers requests and none of its scraped pods serves the latency histogram bucket its SLO "
                  "counts slow requests at (under the histogram's current or former names, or Ray Serve's): the SLO and "
                  "its burn-rate alerts cannot fire. Check the engine, its version and its histogram buckets (vLLM's "
                  "OpenAI server serves them on /metrics), or declare the SLO on what the engine measures.")]  # fmt: skip


def fabric_wait_alert(rails: dict[str, tuple[str, ...]]) -> Alert:
    """The InfiniBand ports' transmit wait of these pools' nodes (node_monitoring's collector, which owns PortXmitWait),
    ``rails`` naming each pool's rail devices (empty: every device): a rail port ACTIVE now and not measured on the
    collector's last tick (its up 0: the counter not read, its tick length unknown, or its PMA not indicating
    PortXmitWait), per port with its device and port labels, since the diagnosis reads the node's most waiting port and
    one blind rail of eight hides its congestion (review obsreview26 G-D); a node with no port at all; or a file not
    rewritten for five minutes (it is every second). Only where the node exporter answers (else NodeExporterAbsent says
    it). Without it GPUCommunicationBoundFabricCongested cannot fire on that port.

    The collector writes up 0 for every port it cannot read, a DOWN one too (LID 0: perfquery's PMA query has no
    destination). Whether a port is up is the node exporter's fact (node_infiniband_state_id) and which ports are rails
    the spec's, as FabricPortDown and FabricRailsNeverUp read them: a rail gone down is FabricPortDown's, and a port
    that is not a rail or never came up (the unused second port of a VPI HCA, an uncabled in-band port) is nobody's
    (review obsreview29 D-1)."""
    pools = sorted(rails)
    answers = f"and on (node) {NODE_EXPORTER_ANSWERS}"
    active = f"(max by ({FABRIC_PORT}) (node_infiniband_state_id) == {IB_PORT_ACTIVE})"
    by_devices: dict[str, list[str]] = {}
    for pool in pools:
        by_devices.setdefault(rail_matcher(rails[pool]), []).append(pool)
    unread = " or ".join(
        f"(max by ({FABRIC_PORT}) (alicerce_fabric_port_wait_up{devices} == 0) and on (node) {_nodes(members)})"
        for devices, members in sorted(by_devices.items())
    )
    blind = f"({unread}) and on ({FABRIC_PORT}) {active} {answers}"
    missing = f"{_nodes(pools)} unless on (node) max by (node) (alicerce_fabric_port_wait_up) {answers}"
    stale = f'max by (node) (time() - node_textfile_mtime_seconds{{file=~".*/{FABRIC_WAIT_FILE.replace(".", "[.]")}"}} > 300)'
    return Alert(FABRIC_WAIT_UNREAD, in_service(f"(({blind}) or ({missing}) or ({stale}))"), FOR, "warning",
                 "Node {{ $labels.node }} reports an InfiniBand port's transmit wait unmeasured",
                 "The node exporter answers but the transmit wait of a rail port that is ACTIVE was not measured on the "
                 "collector's last tick (the device and port labels name it; none: no port reported, or the file is over "
                 "five minutes old; a port that is down is FabricPortDown's): "
                 "the fabric congestion diagnosis is blind on it. Either PortXmitWait was not read, or its PMA does not "
                 "indicate PortXmitWait support (the CapMask perfquery prints lacks bit 12, 0x1000), or the tick length "
                 "is unknown (perfquery -c -C <device> -P <port> answers no PortSamplesControl Tick). Check systemctl "
                 "status alicerce-fabric-wait.service, that perfquery (infiniband-diags) answers (perfquery -x -C "
                 "<device> -P <port>), the HCA's firmware, and that the node exporter reads the host's textfile "
                 "directory.")  # fmt: skip


def efa_counters_alerts(pools: list[str]) -> list[Alert]:
    """The EFA ports' counters of these pools' nodes: none at all, or a file no longer rewritten (the writer's timer runs
    every 15 seconds); and the ports' rate the link utilisation divides by. Only where the node exporter answers (else
    NodeExporterAbsent says it)."""
    missing = in_service(f"{_nodes(pools)} unless on (node) max by (node) ({EFA_RX}) and on (node) {NODE_EXPORTER_ANSWERS}")
    stale = in_service(f'time() - node_textfile_mtime_seconds{{file=~".*/{EFA_COUNTERS_FILE.replace(".", "[.]")}"}} > 300')
    # the link utilisation (kpi NODE_IB_UTIL, and so GPUCommunicationBound) divides the writer's bytes by the rate the
    # node exporter's infiniband collector reads from each port. That collector fails whole when one device's read
    # does (node_exporter v1.12.1 collector/infiniband_linux.go Update returns procfs's error; procfs v0.21.1
    # class_infiniband.go InfiniBandClass fails the class on any hw_counters read error but a few, and an EFA device's
    # hw_counters read is an admin command a degraded device can fail): one bad EFA device blanks every port's rate
    # while the writer, which skips a failed file, keeps serving the rest. Where the writer serves nothing,
    # EfaCountersMissing already says the node is blind
    served = f"max by (node) ({EFA_RX})"
    no_rate = in_service(f"{_nodes(pools)} unless on (node) max by (node) (node_infiniband_rate_bytes_per_second) and on (node) {served}")
    return [
        Alert(EFA_COUNTERS_MISSING, missing, FOR, "warning",
              "Node {{ $labels.node }} reports no EFA port counters",
              "The node exporter answers but serves no EFA traffic from this node of an EFA pool: the counters writer "
              "is not installed or fails (systemctl status alicerce-efa-stats.service), the node exporter does not read "
              "the host's textfile directory, or the efa driver is not loaded (ls /sys/class/infiniband). Fabric KPIs "
              "and the communication-bound diagnosis are blind on this node."),
        Alert(EFA_COUNTERS_STALE, stale, "10m", "warning",
              "EFA port counters on {{ $labels.node }} stopped updating",
              "The node's EFA counters are over five minutes old: fabric KPIs read stale traffic. Check systemctl "
              "status alicerce-efa-stats.timer on the node (the EFA pool's launch template installs it)."),
        Alert(EFA_LINK_RATE_MISSING, no_rate, FOR, "warning",
              "Node {{ $labels.node }} serves EFA traffic but no EFA port rate",
              "The node exporter serves the EFA counters but its infiniband collector reports no port: the EFA link "
              "utilisation and the communication-bound diagnosis are blind on this node. If the node's "
              "node_scrape_collector_success of the infiniband collector is 0, the collector fails, most often because "
              "one EFA device's hw_counters cannot be read (the node exporter's log names it; dmesg for efa errors; "
              "drain the node if a device is degraded); with no such series the collector is disabled or /sys is not "
              "mounted into its pod."),
    ]  # fmt: skip


def _ray_serve_alerts(names: str) -> list[Alert]:
    """A RayService's serving alerts from Ray Serve's own count (kpi.RAY_REPLICA_HEALTHY), per deployment of its
    applications: its pods' readiness cannot tell a dead engine from a live one, nor a cold start from an outage. A
    deployment with no healthy replica, but for the DOWNSCALING of a scale to zero, pages when it served since it last was
    at zero (kpi.RAY_AT_ZERO: a crash, a replica moved off a drained node and not running again, a head restart, a
    one-replica version update loading; at zero now, it did not), and is a
    ticket after 45 minutes when it is starting with none (a first deploy, a cold start from zero that never gets
    there), as ServingWorkloadDown and ServingWorkloadNeverReady read a workload's pods. At zero is neither; nor a
    zero-downtime upgrade, while the old cluster's replicas still count."""
    key = RAY_DEPLOYMENT
    low, high = RAY_STATUS_WANTING
    status = f'{RAY_DEPLOYMENT_STATUS}{{workload=~"{names}"}}'
    none = f"unless on ({key}) ({RAY_DEPLOYMENT_HEALTHY} > 0)"
    starting = f"{status} >= {low} <= {high} {none}"
    served = f"{RAY_DEPLOYMENT_LAST_HEALTHY} > on ({key}) ({RAY_DEPLOYMENT_LAST_ZERO} or 0 * {RAY_DEPLOYMENT_LAST_HEALTHY})"
    # any status with none, but the second or two of DOWNSCALING an idle scale to zero takes: one stuck there, its
    # last replica moved off a drained node while it scaled down and the replacement waiting for a GPU node, is down
    # (review obsreview54 G-1)
    zeroing = f"{status} == {RAY_STATUS_DOWNSCALING} and on ({key}) ({RAY_DEPLOYMENT_DESIRED} == 0)"
    down = f"({status} > 0 {none} unless on ({key}) ({zeroing})) and on ({key}) ({served})"
    where = "{{ $labels.namespace }}/{{ $labels.workload }}: Ray Serve deployment {{ $labels.deployment }} of {{ $labels.application }}"
    look = ("serve status on the head (kubectl -n {{ $labels.namespace }} exec <head pod> -- serve status) gives each "
            "replica's state and its last error; check the GPU workers' pods and events, GPU capacity in the pool and the "
            "replica's log (CUDA out of memory, an XID, a model that no longer loads)")  # fmt: skip
    # replica health reported without a status: a Ray before the status gauge, where the two above stay quiet
    reported = f'count by ({key}) ({RAY_DEPLOYMENT_HEALTHY}{{workload=~"{names}"}})'
    return [
        Alert(RAY_SERVE_DEPLOYMENT_DOWN, down, "5m", "critical",
              f"{where} has no healthy replica",
              "The application answers no request through this deployment: every replica failed its health check, "
              f"died or is being replaced, behind a Ray head that stays Ready. {look}. A cold start whose first "
              "request came within a scrape of the last replica's stop reads as this until its replica serves. A "
              "deployment parked at num_replicas 0 reads as down: park it with autoscaling_config min_replicas 0, or "
              "remove it. With RAY_enable_open_telemetry=0 Ray keeps a deleted deployment's last status: one removed "
              "or renamed (Ray Serve LLM names it after the model id) reads as down until the head restarts."),
        Alert(RAY_SERVE_NEVER_HEALTHY, f"{starting} unless on ({key}) ({served})", "45m", "warning",
              f"{where} has had no healthy replica since it was deployed or scaled up from zero",
              f"Its replicas have not passed a health check in 45 minutes: {look}."),
        Alert(RAY_SERVE_STATUS_ABSENT, f"{reported} unless on ({key}) {RAY_DEPLOYMENT_STATUS}", SOURCE_ABSENT_FOR, "warning",
              f"{where}: Ray Serve reports replica health without the deployment's status",
              "The Ray in this RayService's image predates ray_serve_deployment_status (ray-project/ray PR 59244), so "
              "RayServeDeploymentDown and RayServeDeploymentNeverHealthy cannot tell its replicas dead from scaled to "
              "zero and stay quiet: upgrade Ray, or watch serve status."),
    ]  # fmt: skip
