"""KPI recording rules: the figures a platform team reports, under stable names, per team, pool, site and workload.

Pure: returns Prometheus rule dicts for :func:`alicerce.emit.kube.monitoring.rule_groups`. Every series a rule
reads is one an exporter the platform installs really produces, with the label shapes it emits (the vendored
facts under tests/data/upstream say where each comes from; a test checks every name):

- dcgm-exporter: ``DCGM_FI_DEV_*``; ``Hostname`` is the node name (the GPU Operator sets NODE_NAME from
  spec.nodeName, gpu-operator v26.3.3 assets/state-dcgm-exporter/0800_daemonset.yaml; dcgm-exporter
  internal/pkg/hostname/hostname.go prefers NODE_NAME); ``pod``/``namespace`` only on GPUs a pod holds.
- kube-state-metrics 2.20.0: node and pod labels (allowlisted), pod phase, container resource requests.
- Kueue 0.19.2 (pkg/metrics/metrics.go): one ClusterQueue per team, named after it; flavors are pools.
- vLLM (vllm/v1/metrics/loggers.py): serving pods carry ``alicerce_dev_workload`` from the PodMonitor.
- node exporter (collector/infiniband_linux.go, diskstats, pressure): ``node`` is set by the scrape
  configuration alicerce writes (a relabeling from the pod's node, or a static label per host).

Names follow Prometheus's ``level:metric:operations`` convention; ratios are 0..1, times in seconds, throughput
in bytes or tokens per second. They are the contract of the dashboards and of `alicerce plan`'s KPI targets:
renaming one is a breaking change (CHANGELOG).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from alicerce.catalog.alerts import CORDONED_NODES, INFERENCE_POD, SOURCE_ABSENT_FOR, TPOT, TTFT, series_names
from alicerce.emit.storage_counters import (
    cloud_metric_tiers,
    counted_tiers,
    efa_counted,
    every_mount_counted,
    fabric_wait_pools,
    rail_port_pools,
)
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.resolve.namespaces import KUEUE_NAMESPACE
from alicerce.spec.models.workloads import model_chains
from alicerce.spec.units import format_duration, parse_duration
from alicerce.targets.base import FileSystemMetrics, StorageMetricsExporter

POOL_NODE_LABEL = "label_alicerce_dev_pool"  # kube_node_labels name of the node label alicerce.dev/pool
WORKLOAD_POD_LABEL = "label_alicerce_dev_workload"  # kube_pod_labels name of the pod label alicerce.dev/workload
SERVING_WORKLOAD_LABEL = "alicerce_dev_workload"  # target label of the serving PodMonitor (podTargetLabels)
# Failed API requests of a serving pod: vLLM's OpenAI-compatible server counts every request it answers by route and
# status class (prometheus-fastapi-instrumentator's defaults, vendored: http_requests_total{handler, method, status},
# status "2xx".."5xx", an exception in the server counted as 5xx; vLLM leaves /metrics, /health and /ping out). The
# engine's own vllm:request_success_total{finished_reason="abort"} is no error source: the V1 engine never counts an
# aborted request there (vllm issues 31503, 55634), so an error ratio over it stayed 0 whatever failed (review
# obsreview3 DEFECT F). A client that gives up is no server error; a 4xx is the client's.
# The limit of this source (observe6 item 3): a streamed response that fails after it started counts as 2xx. The
# instrumentator keeps the status of the response's http.response.start (middleware.py send_wrapper; 500 only when
# the app raises before it), and vLLM's stream generators catch a failure mid-stream (an engine error, a scheduler
# abort with its status_code) and send it as a `data: {"error": ...}` event before `[DONE]` on the 200 already sent
# (vllm/entrypoints/openai serving_chat.py / serving_completion.py, create_streaming_error_response); the engine
# counts no error reason either (request_success_total: stop, length, abort never counted). So the error ratio and
# the availability SLO are a floor for streamed traffic. A dead engine still shows: the server exits, its pods fail
# readiness (ServingWorkloadDown) and requests sent meanwhile fail before a response starts.
# a pod passing its readiness probe (kube-state-metrics 2.20.0 kube_pod_status_ready), and the ready pods per serving
# workload: what the serving-down alerts compare (alicerce.emit.kube.sources)
READY_PODS = 'max by (namespace, pod) (kube_pod_status_ready{condition="true"}) == 1'
# pods that are or may become ready: a Failed (evicted) or Succeeded pod object stays until someone deletes it
# (the ReplicaSet controller replaces it and, scaling down, deletes only active pods), and counts as no replica; nor
# does a pod being deleted, which stays Running through its grace period (a serving engine draining its requests) or,
# on a lost node, for good: a workload scaled to zero read as live and down until its last pod exited (review
# obsreview6 G7). kube-state-metrics 2.20.0 kube_pod_deletion_timestamp is set from the deletion on
# (docs/metrics/workload/pod-metrics.md, internal/store/pod.go).
LIVE_PODS = (
    'max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running|Unknown"}) == 1 '
    "unless on (namespace, pod) kube_pod_deletion_timestamp"
)
SERVING_READY = "workload:serving_ready_pods:count"
# when a serving workload last had a ready pod, and a fabric port was last active (alicerce.emit.kube.sources and
# fabric_alerts: "down after serving" and "a rail that was up" are told from "never up" by these)
SERVING_LAST_READY = "workload:serving_ready:last_timestamp"
# when a serving workload last had no live pod after having served (scaled to zero): a start from zero that is not
# ready yet is no outage (review obsreview6 DEFECT 1)
SERVING_LAST_EMPTY = "workload:serving_no_live_pod:last_timestamp"
# A RayService's pods say whether its Ray cluster runs, not whether its replicas serve: KubeRay's head readiness probe
# checks the raylet and GCS only, and a worker's the Serve proxy, which runs on any node that holds a replica of any
# deployment, an ingress's too, and on no node that holds none (KubeRay v1.7.0 common/pod.go
# initLivenessAndReadinessProbe; kuberay PR 1808). Counting Ray workers' readiness paged on a cold start from zero and
# on an idle worker group, and stayed quiet on a dead engine beside a live ingress (reviews obsreview47 D-1,
# obsreview48 D-1..D-3). Ray Serve's controller, on the head, says it per deployment at every control loop (ray
# python/ray/serve/_private/deployment_state.py, autoscaling_state.py): serve_deployment_replica_healthy is 1 for each
# RUNNING replica whose health check passed (0 once, when it fails or is stopped; a starting replica has none);
# serve_deployment_status the deployment's status as a number (ray-project/ray PR 59244, merged 2025-12-07; its metrics
# test: 1 DEPLOY_FAILED, 2 UNHEALTHY, 3 UPDATING, 4 UPSCALING, 5 DOWNSCALING, 6 HEALTHY); and, for a deployment that
# autoscales, serve_autoscaling_desired_replicas its autoscaler's decision before min_replicas and max_replicas bound
# it (PR 59220). A gauge set on a change only, such as serve_autoscaling_target_replicas, is exported once and then
# dropped by Ray's default OpenTelemetry backend, so it is no level to alert on (review obsreview49 D-1). Ray's metrics
# agent prefixes ray_ (RAY_HTTP_REQUESTS).
RAY_REPLICA_HEALTHY = "ray_serve_deployment_replica_healthy"
RAY_DEPLOYMENT_STATUS_GAUGE = "ray_serve_deployment_status"
RAY_DESIRED_REPLICAS = "ray_serve_autoscaling_desired_replicas"
RAY_STATUS_DOWNSCALING = 5  # the autoscaler or a lower num_replicas takes replicas away: a second or two when idle
RAY_STATUS_HEALTHY = 6  # every replica it is to run runs, it believes; a replica moved off a drained node is not seen
RAY_STATUS_WANTING = (1, 4)  # DEPLOY_FAILED, UNHEALTHY, UPDATING, UPSCALING: replicas to run that do not all run
RAY_DEPLOYMENT = "namespace, workload, application, deployment"
RAY_DEPLOYMENT_HEALTHY = "workload_deployment:ray_serve_healthy_replicas:sum"
# the lowest status its controllers report (a zero-downtime upgrade runs two side by side until the new one serves)
RAY_DEPLOYMENT_STATUS = "workload_deployment:ray_serve_status:min"
RAY_DEPLOYMENT_DESIRED = "workload_deployment:ray_serve_desired_replicas:max"
# at zero by design: HEALTHY with no healthy replica while its autoscaler decides on none. HEALTHY with none alone is
# no zero: a replica moved off a node being drained (a spot reclaim, a node drain) leaves the status HEALTHY while its
# replacement waits for a GPU node, and the autoscaler's decision is then its target, one or more (review obsreview50
# D-1); nor the DOWNSCALING between, a second or two an idle replica takes to stop, which a 30-second scrape rarely
# reads (obsreview51 D-1); nor UPSCALING with none: a deployment already scaling up for lack of GPU nodes whose serving
# replicas are moved off a drained node reads so for as long as the upscale waits (obsreview53 D-1). The cost: a
# request within a scrape of the last replica's stop takes it from DOWNSCALING to UPSCALING unseen, and that cold start
# pages until its replica serves (obsreview52 G-1). A deployment with fixed replicas has no autoscaler and never is at
# zero: one parked at num_replicas 0 reads as down
RAY_AT_ZERO = (
    f"{RAY_DEPLOYMENT_STATUS} == {RAY_STATUS_HEALTHY} unless on ({RAY_DEPLOYMENT}) ({RAY_DEPLOYMENT_HEALTHY} > 0) "
    f"and on ({RAY_DEPLOYMENT}) ({RAY_DEPLOYMENT_DESIRED} == 0)"
)
# when a deployment last had a healthy replica, and last was at zero: one that served since is down without a replica,
# one that did not is starting from zero (as SERVING_LAST_READY and SERVING_LAST_EMPTY tell it for pods)
RAY_DEPLOYMENT_LAST_HEALTHY = "workload_deployment:ray_serve_healthy:last_timestamp"
RAY_DEPLOYMENT_LAST_ZERO = "workload_deployment:ray_serve_at_zero:last_timestamp"
PORT_LAST_ACTIVE = "node_port:infiniband_active:last_timestamp"
# the label of node_infiniband_info PORT_LAST_ACTIVE keeps beside the port (node exporter v1.12.1
# collector/infiniband_linux.go:175-182): its card's ASIC, which with the `port` number is the port's kind, so a rail
# gone is told from a card of another kind added in the same reboot (a BlueField-3 beside ConnectX-7 rails: review
# obsreview37 D-2) and from port 2 of a known card cabled later (obsreview37 G-1). Not the card's PSID (board_id): a
# spare of the rails' model under another part number (an OEM's PSID) put in another slot left the old kind one short
# and read the rail it replaced as lost for 30 days (review obsreview41 G-1); nor firmware_version, which an update
# changes under the same card
PORT_KIND = "hca_type"
# per node and port kind (PORT_KIND and `port`), its fabric ports ACTIVE now and the most it had at once, never more
# than the ports of the kind remembered (the last 30 days): a port gone from a node is down unless the node has as many
# of its kind ACTIVE as it had (alicerce.emit.kube.fabric_alerts FabricPortDown). Counts, not names: a PCI bus renumbered, an adapter moved
# or put back leaves the count whole whatever the names did, where six review rounds of telling names apart each found
# a new false fire or silence (reviews obsreview34 to obsreview39)
KIND_ACTIVE = "node_kind:infiniband_active_ports:count"
KIND_MOST_ACTIVE = "node_kind:infiniband_active_ports:max30d"
# per fabric port gone from its node while the node has as many of its kind ACTIVE (renamed, or a rail lost and made up
# by a card of its kind), the first time that was seen with the node reporting ports and in service: FabricPortsRenamed
# tells of it for a day from then, not from the port's last ACTIVE, so a node powered off, or cordoned for its burn-in,
# for longer than a day after the change is still told once it is back (review obsreview43 G-1)
PORT_RENAMED_SEEN = "node_port:infiniband_renamed:first_timestamp"
# how long they remember: an outage or a rail down for longer is still reported, and a cordon (a drain, a driver
# upgrade), a Prometheus restart or the alert's own resolution in between does not erase it (review obsreview5 DEFECT 2)
REMEMBERED_SECONDS = 30 * 86400
HTTP_REQUESTS = "http_requests_total"
API_REQUESTS = 'handler=~"/v1/.+"'
SERVER_ERRORS = f'{API_REQUESTS},status="5xx"'
# Ray Serve LLM runs no vLLM API server: its HTTP proxy counts the requests (ray_serve_num_http_requests_total, labels
# route, method, application, status_code: Ray's doc/source/serve/monitoring.rst and serve/_private/proxy.py), route
# being the application's route prefix; the proxy's own /-/ routes (health, routes) are no API requests. Without it
# a RayService's availability SLO and error ratio read nothing (review obsreview9)
RAY_HTTP_REQUESTS = "ray_serve_num_http_requests_total"
RAY_API_REQUESTS = 'route!~"/-/.*"'
RAY_SERVER_ERRORS = f'{RAY_API_REQUESTS},status_code=~"5.."'


def api_request_rate(selector: str, window: str, *, errors: bool = False) -> str:
    """Per-second API requests (or those answered with a server error) of a serving workload, counted by whichever
    server fronts it: vLLM's own API server or Ray Serve's proxy (one or the other per pod, so never both)."""
    vllm, ray = (SERVER_ERRORS, RAY_SERVER_ERRORS) if errors else (API_REQUESTS, RAY_API_REQUESTS)
    join = f"{selector}," if selector else ""
    return f"rate({HTTP_REQUESTS}{{{join}{vllm}}}[{window}]) or rate({RAY_HTTP_REQUESTS}{{{join}{ray}}}[{window}])"


GPU_RESOURCE = "nvidia_com_gpu"  # kube-state-metrics sanitizes nvidia.com/gpu
MIG_RESOURCES = "nvidia_com_mig_.+"  # and nvidia.com/mig-<profile>, the mixed strategy's MIG instances


def ksm_resource(name: str) -> str:
    """A resource name as kube-state-metrics labels it: every character a label value of its own metric names cannot
    hold becomes `_` (nvidia.com/mig-1g.10gb -> nvidia_com_mig_1g_10gb)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def ksm_label(name: str) -> str:
    """A Kubernetes label as kube-state-metrics' *_labels series name it (alicerce.dev/workload -> label_alicerce_dev_workload)."""
    return "label_" + ksm_resource(name)


KUEUE_GPU = "nvidia.com/gpu|nvidia.com/mig-.+"  # Kueue reports resource names as they are: GPUs and MIG instances
# every Kueue replica exports its queues' gauges, a follower under replica_role="follower" (v0.19.2 pkg/metrics/metrics.go,
# pkg/util/roletracker): with replicas > 1, or a rolling update's surge pod, a sum over them counts each queue twice
# (review obsreview10 G). The leader reads "leader"; on election it clears its follower gauges and reports them again
# as leader (cmd/kueue/main.go OnElected, ClearGaugeMetricsForRole), so after a failover every queue reads the new
# leader's gauges. Without leader election the label reads "standalone"; a series without it is kept
KUEUE_NOT_FOLLOWER = 'replica_role!="follower"'


def kueue_series(metric: str, *matchers: str) -> str:
    """A Kueue metric as its leader (or single replica) exports it, with the given label matchers."""
    return f"{metric}{{{','.join((*matchers, KUEUE_NOT_FOLLOWER))}}}"


# The labels Prometheus gives a scrape target (kube-prometheus-stack's ServiceMonitor targets: Kueue chart 0.19.2
# templates/prometheus/monitor.yaml has no relabelings): what ties a Kueue counter to its process's start time. All of
# them, so a relabel that changes any of them is a new target (review obsreview14)
KUEUE_TARGET = "job, instance, namespace, pod, service, endpoint, container"
# Kueue's targets' start times only: every target of the Prometheus serves one, and a 7-day window read them all twice
# a minute (review obsreview15 F5). The target's namespace is the Service's, where alicerce installs Kueue
PROCESS_START = f'process_start_time_seconds{{namespace="{KUEUE_NAMESPACE}"}}'
# "present a window ago" is read over this much before it where the target was not scraped then: one failed scrape
# writes stale markers for the whole target, and a series present a minute before read as born in the window (review
# obsreview15 F2)
PRESENCE = "10m"
# The labels Kueue puts on the counters kueue_increase reads (kueue 0.19.2 pkg/metrics/metrics.go; vendored
# metrics.json, which a test holds this to) and a histogram's le: a counter's other labels are its scrape target's, so
# it joins the start-time series with exactly its own target labels, whatever the scrape adds (a first count made
# before a label change was lost when joined on the target list: review obsreview18 F1)
KUEUE_OWN_LABELS = ("cluster_queue", "priority_class", "replica_role", "reason", "underlying_cause", "le")
KUEUE_REPLICA = "alicerce_kueue_replica"  # a working label: which Kueue pod served a series, whatever its target labels
# ... and the bucket's bound as a number: Prometheus 3 ingests the le="20480" Kueue serves as le="20480.0" (Prometheus
# 3.0 migration guide, "le and quantile label values"), a new series of the same bucket (review obsreview19 F4)
KUEUE_BOUND = "alicerce_kueue_le"


def _kueue_replica(series: str) -> str:
    """``series`` labelled with the Kueue pod that served it (KUEUE_REPLICA): its pod, or its instance where the scrape
    gives no pod, so two copies of one series under relabelled target labels match."""
    by_instance = f'label_replace({series}, "{KUEUE_REPLICA}", "$1", "instance", "(.*)")'
    by_pod = f'label_replace({by_instance}, "{KUEUE_REPLICA}", "$1", "pod", "(.+)")'
    bound = f'label_replace({by_pod}, "{KUEUE_BOUND}", "$1", "le", "(.*)")'
    return f'label_replace({bound}, "{KUEUE_BOUND}", "${{1}}.0", "le", "([0-9]+)")'


# The records kueue_increase splits its expression into: parts of one count, not KPIs, so they keep the labels of the
# Kueue series they are matched with (a site label on them alone matched nothing)
COUNT_PART = "kueue_count:"


class Counted(NamedTuple):
    """A Kueue counter's count over a window (:func:`kueue_increase`): its expression, and the records it reads, which
    its group evaluates just before it."""

    records: list[dict[str, Any]]
    expr: str


def kueue_increase(counter: str, window: str, *, name: str, ratio: bool = False) -> Counted:
    """What a Kueue counter counted over ``window``, the counts that create it included. Kueue 0.19.2 creates a queue's
    counter at its first Inc() (pkg/metrics/metrics.go IncrementFinishedWorkloadTotal and its siblings; nothing
    pre-creates it at 0), and each restart or new leader starts it again, so its first sample is already 1 and
    increase() takes it as the baseline: one finished workload a week read 0 (review obsreview12 F1).

    Kueue's metrics registry is controller-runtime's, which exports process_start_time_seconds (controller-runtime
    v0.24.1, Kueue's go.mod pin, pkg/internal/controller/metrics/metrics.go registers client_golang's process
    collector). So, per scrape target:
    - its process started before the window: increase(), plus the first value of a series absent ``window`` ago that
      first appears after its target was already scraped (a queue's first count; a long-running follower elected
      leader counts under replica_role="leader"). A series that appears with its target (new target labels: a
      ServiceMonitor relabelled, review obsreview13 F4; a Prometheus that starts beside a running Kueue) adds nothing
      of the lifetime it cannot date;
    - its process started in the window (the latest start seen in it, so a pod replaced since still counts: review
      obsreview14 F2): all the new process counted, its series as scraped now, or a gone pod's last value; at least
      that, and increase() where that is more (counts before the restart, a reset it saw). A restart in the same pod
      keeps every label, so a counter born again at 1 after a count of 1 was no change to increase() (review
      obsreview13 F1). With ``ratio``, the new process's counts alone where it has any: a histogram's bucket and count
      series then come from the same process (each series' own maximum mixed both and read fast admissions as late:
      review obsreview14 F3).
    Not seen: two restarts in one window (the last process's counts and what increase() saw), a ClusterQueue deleted
    and created again, which clears its counters in the same process (kueue 0.19.2 ClearClusterQueueMetrics):
    increase() alone, as for any counter reset; and with ``ratio``, the admissions before a restart in the window
    (a queue-wait SLO firing on late admissions resolves on the new process's first fast one, and fires again on
    its next late one: review obsreview15 F8); a series created within one step of its target's first scrape reads
    as created with it (a minute up to a 6-hour window; 28 minutes at 7 days, where a queue's first count just after
    a relabel or a fresh Prometheus is left out of the week), and a born series' first value leaves the window up to
    a step early (review obsreview18 F2, F4); a relabel that drops the pod label, rolled back in the window: the copy
    without it is keyed by its instance, and a first count made under either counts twice (review obsreview19 F1)."""
    seconds = int(parse_duration(window))
    target = f"on ({KUEUE_TARGET})"
    # Each part read more than once is a record of its own (``name`` keeps them apart), evaluated once a step: written
    # inline, the expression repeated its subqueries 23 times, 17,000 characters each count
    records: list[dict[str, Any]] = []

    def record(part: str, expr: str) -> str:
        records.append({"record": f"{COUNT_PART}{name}:{part}", "expr": expr})
        return str(records[-1]["record"])

    # the target's latest process start seen in the window, one a target: a label the target list does not name
    # (a scrape config adding cluster=) gave it two series and every join refused many-to-many (review obsreview16 F3)
    started = record("process_started", f"max by ({KUEUE_TARGET}) (last_over_time({PROCESS_START}[{window}]))")
    fresh = f"(time() - {started} < {seconds})"
    grown = record("increase", f"increase({counter}[{window}])")
    step = f"{max(60, seconds // 360)}s"  # sample times at a step of the window's 360th (1 minute up to 6 hours)
    # present a window ago: as scraped then, or, where the target itself was not scraped then (a failed scrape), its
    # last sample in the PRESENCE before if served after the target's earliest start in the window: a series an
    # in-place restart had left stale was absent (reading past its stale marker dropped the new process's first
    # counts: reviews obsreview16 F1, obsreview17 F1)
    ran = f"min by ({KUEUE_TARGET}) (min_over_time({PROCESS_START}[{window}]))"
    before = f"last_over_time(timestamp({counter})[{PRESENCE}:1m] offset {window})"
    then = record("present_before", f"(({counter} offset {window}) or ((last_over_time({counter}[{PRESENCE}] offset {window}) "
                  f"unless {target} {PROCESS_START} offset {window}) and ({before} > {target} group_left () {ran})))")  # fmt: skip
    # born in the window: a series that first appears after its target was already scraped (the start-time series
    # with exactly its target's labels): a queue's first count, a long-running follower elected leader. A series
    # that appears with its target (a label the scrape adds, an upgrade that relabels and rolls at once, a Prometheus
    # first scraping a running Kueue) carries the process's lifetime, not a count (reviews obsreview16 F3,
    # obsreview17 F2-F4); a new pod scraped after the window starts still counts its first admissions
    first = record("first_seen", f"min_over_time(timestamp({counter})[{window}:{step}])")
    scraped = f"min_over_time(timestamp({PROCESS_START})[{window}:{step}])"
    own = f"ignoring ({', '.join(KUEUE_OWN_LABELS)})"
    may_be_born = record("may_be_born", f"(({first} unless {then}) and ({first} > {own} group_left () {scraped}))")
    # a copy present a window ago carries the series on (a bucket Prometheus 3 renamed: review obsreview19 F4)
    contenders = f"(({may_be_born} or ({first} and {then})) unless {target} {fresh})"
    # and the first copy of its Kueue series that may be born: a relabel rolled back in the window shows a queue first
    # counted in between under the restored labels too, after their start series, and counted it twice (review
    # obsreview18 F3). A copy is the same pod (its instance where the scrape gives no pod: a relabel of the instance
    # rolled back is one pod's too) and the same Kueue labels; a copy whose target restarted in the window, or that
    # appeared with its target, carries no count of its own and suppresses none (review obsreview19 F1, F2)
    replica = record("contender", _kueue_replica(contenders))
    copy = ", ".join((KUEUE_REPLICA, KUEUE_BOUND, *(label for label in KUEUE_OWN_LABELS if label != "le")))
    working = f"{KUEUE_REPLICA}, {KUEUE_BOUND}"
    earliest = f"({replica} == on ({copy}) group_left () min by ({copy}) ({replica}))"
    born = record("born", f"((min_over_time({counter}[{window}]) unless {then}) and {may_be_born} and ignoring ({working}) {earliest})")
    # what the new process counted: its series as scraped now (gone until it counts again), or, of a target gone or
    # unscraped now, its last value if that was served after the target's latest start: the old process's last value
    # read as the new one's count (its whole lifetime: review obsreview15 F1). A series that lived between two steps'
    # 5-minute lookbacks is missed
    served = f"(last_over_time(timestamp({counter})[{window}:{step}]) > {target} group_left () {started})"
    # (a gone copy of a series scraped now, a relabel kept or rolled back, is the same count: review obsreview19 F5)
    gone = f"((last_over_time({counter}[{window}]) unless {target} {PROCESS_START}) and {served})"
    now = _kueue_replica(counter)
    gone = f"max without ({working}) ({_kueue_replica(gone)} unless on ({copy}) {now})"
    counted = record("counted", f"(({counter} + 0) or {gone})")
    increased = f"(({grown} and {counter}) or max without ({working}) ({_kueue_replica(grown)} unless on ({copy}) {now}))"
    latest = f"({counted} or {increased})" if ratio else f"(({grown} > {counted}) or {counted} or {increased})"
    older = f"((({grown} + {born}) or {born} or {grown}) unless {target} {fresh})"
    return Counted(records, f"({older} or ({latest} and {target} {fresh}))")


QUANTILES = (0.5, 0.95, 0.99)

# joins: info series whose value is 1 (or a count), to attach team/pool/workload to exporter series
NAMESPACE_TEAM = "alicerce:namespace_team:info"
NODE_POOL = "alicerce:node_pool:info"
POD_WORKLOAD = "alicerce:pod_workload:info"
# the pods of a workload that serve it: all of them, but the workers of a LeaderWorkerSet group, which run the model's
# shards under the leader's API server and answer neither requests nor /metrics (review obsreview5 G9: a ready worker
# read as an unscraped replica, and ready workers beside a crash-looping leader hid ServingWorkloadDown). LWS labels
# every pod of a group with its index in it, the leader's 0 (lws api/leaderworkerset/v1 WorkerIndexLabelKey)
# KubeRay labels the same way every pod of a RayCluster (a RayService's too) with its node type, head or worker
# (KubeRay v1.7.0 ray-operator/controllers/ray/utils/constant.go RayNodeTypeLabelKey; rayv1 HeadNode "head", WorkerNode
# "worker"): the head runs the Serve controller and a proxy, its workers the replicas that hold the GPUs. A head's
# readiness says its Ray cluster runs; whether its replicas serve, Ray Serve says (RAY_REPLICA_HEALTHY)
SERVING_POD = "alicerce:pod_serving:info"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
RAY_NODE_TYPE_LABEL = "ray.io/node-type"
# ... and with its RayCluster's name (utils/constant.go RayClusterLabelKey), and a RayService's with ray.io/serve
# (common/pod.go BuildPod for RayServiceCRD). Which RayCluster a RayJob owns, KubeRay's operator says itself (v1.7.0
# controllers/ray/metrics/ray_cluster_metrics.go collectRayClusterInfo): kuberay_cluster_info{name, namespace, uid,
# owner_kind} for every RayCluster from its creation, owner_kind its ray.io/originated-from-crd label, "RayJob" on the
# cluster a RayJob builds for itself (rayjob_controller.go constructRayClusterForRayJob), "None" on one created by hand
# or that a RayJob's clusterSelector borrows; and kuberay_job_info{name, namespace, uid} for every RayJob (ray_job_
# metrics.go collectRayJobInfo). A RayJob's own cluster is named "<RayJob>-" and five random characters (v1.7.0
# rayjob_controller.go:908 utils.GenerateRayClusterName, k8s.io/apimachinery pkg/util/rand String: its alphabet has
# no vowels), a new one at each retry (spec.backoffLimit) and each re-admission after a Kueue preemption (Retrying and
# Suspending reset Status.RayClusterName): the RayJob's uid stays (reviews obsreview15 F3, F4, obsreview16 F2)
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_CLUSTER_SUFFIX = "-[bcdfghjklmnpqrstvwxz2456789]{5}"
RAY_SERVE_LABEL = "ray.io/serve"
RAY_CLUSTER_INFO = "kuberay_cluster_info"
RAY_JOB_INFO = "kuberay_job_info"
# how long a RayCluster's and a RayJob's last series bridge a gap in the operator's (its restart, a rescheduling, an
# API server brown-out): past KubeRayMetricsAbsent's `for`, so a gap either loses no run hours or has fired the alert
# (it was 10m: a 10-15 minute outage lost run hours silently, review obsreview20 F3). The 5 minutes cover the scrape
# and evaluation intervals between the operator's last sample and the alert's firing
RAY_INFO_KEPT = format_duration(parse_duration(SOURCE_ABSENT_FOR) + 5 * 60)
# Which incarnation of a run a pod belongs to, for a name submitted again (review obsreview13 F2): the Job controller
# labels every pod of a Job with the Job's uid (batch.kubernetes.io/controller-uid, Kubernetes 1.27 and later), and
# JobSet every pod of its Jobs with the JobSet's (jobset.sigs.k8s.io/jobset-uid, JobSet docs "JobSet labels": kept
# across the JobSet's own restarts, which recreate its Jobs); a RayJob's is its uid in kuberay_job_info
JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOBSET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"
POOL_GPUS_PER_NODE = "alicerce:pool_gpus_per_node:count"
# a pool's GPUs billed whether launched or not (a Capacity Reservation's), recorded by the cost group from the plan
# (alicerce.emit.kube.costs.cost_rules) at the sites that have one
RESERVED_GPUS = "alicerce:pool_gpus_reserved:count"
POOL_RESOURCE_GPU_SHARE = "alicerce:pool_resource_gpu_share:ratio"  # the share of a GPU one unit of a resource is
KUEUE_RESOURCE_GPU_SHARE = "alicerce:pool_kueue_resource_gpu_share:ratio"  # the same, with Kueue's resource names
# per GPU, with node, pool and (when held) namespace and pod
GPU_UTIL = "gpu:dcgm_utilization:ratio"
GPU_FB = "gpu:dcgm_memory_used:ratio"
GPU_ACTIVE = "gpu:dcgm_graphics_engine_active:ratio"
GPU_TENSOR = "gpu:dcgm_tensor_active:ratio"
GPU_DRAM = "gpu:dcgm_dram_active:ratio"  # share of cycles the memory interface is busy
GPU_HELD = "gpu:held_share:ratio"  # per pod holding a GPU (or a MIG instance), the share of a GPU it holds
POD_GPUS = "pod:gpus_allocated:sum"
# a node whose Ready condition is not true (false: the kubelet reports it unhealthy; unknown: the kubelet stopped
# posting, a dead or unreachable server)
NODE_NOT_READY = 'kube_node_status_condition{condition="Ready",status="true"} == 0'
# per node (node exporter)
NODE_IB_RX = "node:infiniband_receive_bytes:rate5m"
NODE_IB_TX = "node:infiniband_transmit_bytes:rate5m"
NODE_IB_ERRORS = "node:infiniband_errors:rate5m"
NODE_IB_UTIL = "node:infiniband_link_utilization:ratio"
# the share of time an InfiniBand port had data to send and sent none (PortXmitWait ticks x the tick's length, from
# node_monitoring's collector that owns the counter: files/alicerce_fabric_wait.py), per port and the most of a node's
PORT_IB_WAIT = "node_port:infiniband_transmit_wait:ratio"
NODE_IB_WAIT = "node:infiniband_transmit_wait:max_ratio"
NODE_DISK_READ = "node:disk_read_bytes:rate5m"
NODE_DISK_WRITE = "node:disk_written_bytes:rate5m"
NODE_DISK_IOPS = "node:disk_iops:rate5m"
NODE_IO_PRESSURE = "node:io_pressure_waiting:ratio"
NODE_NET_RX = "node:network_receive_bytes:rate5m"
NODE_NET_TX = "node:network_transmit_bytes:rate5m"
NODE_READ = "node:storage_read_bytes:rate5m"
NODE_WRITE = "node:storage_write_bytes:rate5m"
NODE_CLIENT_READ = "node:storage_client_read_bytes:rate5m"  # shared file systems, by their clients' own counters
# ... and the time their calls took, per second: how many waited at once on average, on metadata and on data
NODE_METADATA_WAIT = "node:storage_client_metadata_wait_seconds:rate5m"
NODE_DATA_WAIT = "node:storage_client_data_wait_seconds:rate5m"
NODE_CLIENT_WRITE = "node:storage_client_written_bytes:rate5m"


def _rule(record: str, expr: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"record": record, "expr": expr}
    if labels:
        out["labels"] = dict(labels)
    return out


def _last_seen(record: str, present: str, by: str) -> dict[str, Any]:
    """A rule recording, per ``by``, the last time ``present`` had a series, for ``REMEMBERED_SECONDS``: its own
    previous value carries it between samples (up to a day without an evaluation), where a ``max_over_time`` over a
    window would read every sample of it at each evaluation and forget at the window's end."""
    now = f"max by ({by}) (0 * ({present}) + time())"
    kept = f"max by ({by}) (last_over_time({record}[1d]) > time() - {REMEMBERED_SECONDS})"
    return _rule(record, f"{now} or {kept}")


def _port_last_seen(present: str) -> dict[str, Any]:
    """PORT_LAST_ACTIVE: per fabric port, the last time ``present`` had it ACTIVE, for ``REMEMBERED_SECONDS``, with its
    kind (PORT_KIND from its device's info series, none where the exporter reports none). A port ACTIVE now carries the
    kind read now, one gone its last one: `topk` keeps a port's newest series only, so a card replaced by another model
    under the same name leaves no second series of the old kind behind (review obsreview39 G-2), which the day's
    `last_over_time` would otherwise bring back."""
    by = "node, device, port"
    # one kind a device: two info series of one device with different labels (two exporters on a node, a PSID
    # cross-flash read within the lookback) would fail the join, and with it this record on the whole site (review
    # obsreview39 N-2); `topk` picks one of them instead
    info = f"topk by (node, device) (1, max by (node, device, {PORT_KIND}) (node_infiniband_info))"
    now = f"max by ({by}) (0 * ({present}) + time())"
    kinded = f"max by ({by}, {PORT_KIND}) ({now} * on (node, device) group_left ({PORT_KIND}) {info} or on ({by}) {now})"
    kept = f"max by ({by}, {PORT_KIND}) (last_over_time({PORT_LAST_ACTIVE}[1d]) > time() - {REMEMBERED_SECONDS})"
    return _rule(PORT_LAST_ACTIVE, f"{kinded} or on ({by}) topk by ({by}) (1, {kept})")


def rail_matcher(rail_devices: tuple[str, ...]) -> str:
    """A PromQL matcher on the node exporter's ``device`` label for these device names ('' for every device)."""
    if not rail_devices:
        return ""
    escaped = "|".join(d.replace(".", "\\\\.") for d in rail_devices)  # a literal dot: \\. in a PromQL string
    return f'{{device=~"{escaped}"}}'


def _nodes_of(pools: list[str]) -> str:
    return f'max by (node) (kube_node_labels{{{POOL_NODE_LABEL}=~"{"|".join(pools)}"}}) > 0'


def _kind_records(site: ResolvedSite) -> list[dict[str, Any]]:
    """KIND_ACTIVE and KIND_MOST_ACTIVE, in that order, after PORT_LAST_ACTIVE (each read after it is written in the
    same evaluation). The count is of the rails as FabricPortDown reads them: where a pool names its railDevices only
    those, one rule per set of names, on that set's pools' nodes. The most is the larger of the count and its own
    previous value (a Prometheus gap under a day keeps it), never more than the ports of the kind PORT_LAST_ACTIVE
    remembers (by their newest kind): a port lost 30 days ago is forgotten and takes its place in the most with it, so
    each lost port is reported for its own 30 days whatever was lost before it (an expiry by when the most was last
    reached silenced a rail lost days ago behind one lost a month ago: review obsreview41 D-1), and a card replaced by
    another model under the same name takes its port out of the old kind's most at once (review obsreview39 G-2).
    Known and accepted: a port that vanished before their first evaluation is not seen (the most starts at the count
    then)."""
    kind = f"node, port, {PORT_KIND}"
    groups: dict[str, list[str]] = {}
    for p in rail_port_pools(site):
        if p.rdma is not None:
            groups.setdefault(rail_matcher(p.rdma.rail_devices), []).append(p.name)
    rules = []
    for matcher, pools in groups.items():
        nodes = _nodes_of(pools)
        active = f"{PORT_LAST_ACTIVE}{matcher} >= time()"  # written this evaluation: ACTIVE now
        rules.append(_rule(KIND_ACTIVE, f"count by ({kind}) ({active}) and on (node) ({nodes})"))
    previous = f"max by ({kind}) (last_over_time({KIND_MOST_ACTIVE}[1d]))"
    # the ports of each kind remembered, under the pools' own matchers as the count is. A node kube-state-metrics does
    # not report in a fabric pool now (it is down, the Node object was deleted and joined again, the node was relabelled
    # out of its pool for a repair) has its most carried too, capped by every port of the kind it remembers (its pool's
    # railDevices are not known then): the count and the pools' cap need its pool, and an absence over a day (`previous`
    # reads a day) restarted the most at the count, silencing a rail lost before it for the rest of its 30 days
    # (reviews obsreview42 G-1, obsreview43 G-2). A node gone for good drops out once its ports are forgotten
    pooled = " or ".join(f"count by ({kind}) ({PORT_LAST_ACTIVE}{m}) and on (node) ({_nodes_of(ps)})" for m, ps in groups.items())
    unreported = f"count by ({kind}) ({PORT_LAST_ACTIVE}) unless on (node) ({_nodes_of([p for ps in groups.values() for p in ps])})"
    remembered = f"{pooled} or {unreported}"
    # the previous most capped by the ports remembered; a kind with nothing remembered is dropped, and one with no
    # previous most (the first evaluation) starts at the count: the ports remembered then may include old names.
    # `previous` is read twice, a day's range each time, per node and kind (Prometheus shares no subexpression)
    mine = f'label_replace(({remembered}) and on ({kind}) {previous}, "remembered", "1", "", "")'
    carried = f"min by ({kind}) (({previous} and on ({kind}) ({remembered})) or {mine})"
    # the larger of the count and the carried most: a label of its own keeps the carried value beside the count
    most = f'{KIND_ACTIVE} or label_replace({carried}, "carried", "1", "", "")'
    return [*rules, _rule(KIND_MOST_ACTIVE, f"max by ({kind}) ({most})")]


def _renamed_seen() -> dict[str, Any]:
    """PORT_RENAMED_SEEN, after the kind records: a port remembered and gone (no state series) gets the time it is
    first seen gone while its node reports ports, is not cordoned and has its kind whole, and keeps it while it stays
    gone. Its own previous value carries it (up to a day without an evaluation)."""
    by, kind = "node, device, port", f"node, port, {PORT_KIND}"
    gone = f"({PORT_LAST_ACTIVE} unless on ({by}) max by ({by}) (node_infiniband_state_id))"
    kept = f"max by ({by}, {PORT_KIND}) (last_over_time({PORT_RENAMED_SEEN}[1d])) and on ({by}) {gone}"
    whole = f"({KIND_ACTIVE} >= on ({kind}) {KIND_MOST_ACTIVE})"
    reporting = "max by (node) (node_infiniband_state_id)"
    seen = f"(0 * {gone} + time()) and on ({kind}) {whole} and on (node) {reporting} unless on (node) {CORDONED_NODES}"
    return _rule(PORT_RENAMED_SEEN, f"{kept} or max by ({by}, {PORT_KIND}) ({seen})")


def any_rate(series: str, matchers: str, window: str) -> str:
    """The per-second rate of a vLLM series under whichever of its names a pod serves (alicerce.catalog.alerts
    series_names: a former name, Ray Serve LLM's). rate() drops the metric name, so a pod that serves two names with
    the same labels (vLLM 0.11: the renamed histogram beside its replacement) is one series to ``or``, counted once."""
    selector = f"{{{matchers}}}" if matchers else ""
    return " or ".join(f"rate({name}{selector}[{window}])" for name in series_names(series))


def histogram_rate(histogram: str, part: str, matchers: str, window: str) -> str:
    """The per-second rate of one series of a histogram (``bucket``, ``count``) under any of its names."""
    names = series_names(histogram)
    selector = f"{{{matchers}}}" if matchers else ""
    return " or ".join(f"rate({name}_{part}{selector}[{window}])" for name in names)


def _as(label: str, source: str, expr: str) -> str:
    """``expr`` with ``source``'s value copied into ``label``."""
    return f'label_replace({expr}, "{label}", "$1", "{source}", "(.+)")'


def join_rules(rp: ResolvedPlatform, site: ResolvedSite) -> list[dict[str, Any]]:
    """What the spec knows and no exporter says: which team owns a namespace, how many GPUs a pool's node has and how
    much of a GPU one unit of each of its resources is (a time-sliced replica, a MIG instance); and the node-to-pool
    and pod-to-workload maps from labels."""
    rules = []
    for team in site.teams:
        for ns in team.namespaces:
            rules.append(_rule(NAMESPACE_TEAM, "vector(1)", {"namespace": ns, "team": team.name, "cost_center": team.cost_center}))
    for pool in site.pools:
        if pool.gpu is None or pool.gpu_units is None:
            continue
        rules.append(_rule(POOL_GPUS_PER_NODE, f"vector({pool.gpus_per_node})", {"pool": pool.name}))
        for resource, share in sorted(pool.gpu_units.gpu_share.items()):
            rules.append(_rule(POOL_RESOURCE_GPU_SHARE, f"vector({share:.6g})", {"pool": pool.name, "resource": ksm_resource(resource)}))
            rules.append(_rule(KUEUE_RESOURCE_GPU_SHARE, f"vector({share:.6g})", {"pool": pool.name, "resource": resource}))
    nodes = _as("pool", POOL_NODE_LABEL, f'kube_node_labels{{{POOL_NODE_LABEL}!=""}}')
    rules += [_rule(NODE_POOL, f"max by (node, pool) ({nodes})"), _rule(POD_WORKLOAD, workload_pods())]
    # a pod outside LWS or KubeRay has neither label
    workers = (f'kube_pod_labels{{{ksm_label(LWS_WORKER_INDEX_LABEL)}!~"|0"}} '
               f'or kube_pod_labels{{{ksm_label(RAY_NODE_TYPE_LABEL)}="worker"}}')  # fmt: skip
    rules.append(_rule(SERVING_POD, f"{POD_WORKLOAD} unless on (namespace, pod) ({workers})"))
    rules.append(_rule(INFERENCE_POD, _inference_pods(rp, site)))
    return rules


def pod_runs() -> str:
    """The run each pod belongs to (labels namespace, pod, run_kind, run, run_uid), for its cost: a Kubeflow TrainJob's
    JobSet (same name as the TrainJob), else the plain Job itself (kube-state-metrics 2.20.0 kube_pod_owner, internal/
    store/pod.go createPodOwnerFamilyGenerator, and kube_job_owner), or a RayJob: the pods of every RayCluster KubeRay
    says the RayJob built (RAY_CLUSTER_INFO owner_kind "RayJob", the RayJob's name its own less the random suffix),
    from each pod's start: the start-up hours before the submitter Job (created only once the whole cluster is Ready)
    are the run's, in every submission mode (review obsreview15 F3). Not a run: a RayService's cluster (owner_kind
    RayService, pods labelled ray.io/serve), a RayCluster of its own, and a RayJob on a cluster its clusterSelector
    borrows from either; their GPUs count under their team only (review obsreview13 F7). Each pod is in one run: a
    RayJob's cluster's pod is the RayJob's even when a Job owns it too (review obsreview20 F5).
    A run is its name and its incarnation (run_uid: the Job's, the JobSet's, the RayJob's uid): one deleted and
    submitted again under the same name is another run (review obsreview13 F2); a Job's retries, a JobSet's restarts
    and a RayJob's retries and Kueue preemptions (a new RayCluster each attempt, the same RayJob) are one run (review
    obsreview16 F2). A pod whose incarnation is unknown yet (kube-state-metrics has not labelled it, the RayJob is
    gone from KubeRay's metrics) keeps its run without one. An expression, not a record: read in the cost group, a
    join record of another group lags a step and billed each run a minute more.
    Limits of the RayJob runs, as KubeRay v1.7.0's series allow (review obsreview20 F4, F6): a cluster's pods are
    billed to the RayJob that built it, by name, and to the incarnation of that name KubeRay reports now
    (kuberay_cluster_info carries the cluster's uid, not its owner's, and kuberay_job_info no cluster). So a RayJob
    deleted and created again under its name bills its old cluster's pods, for as long as they terminate (a grace
    period, a preStop checkpoint upload), or as long as the cluster lives if the RayJob was deleted with
    --cascade=orphan, to the new incarnation's run_uid. And a RayJob whose clusterSelector borrows a cluster another
    RayJob built (kept after its job: shutdownAfterJobFinishes false) is no run of its own: its GPU-hours go to the
    builder's run."""
    jobs = ('label_replace(label_replace(kube_job_owner{owner_kind="JobSet"}, "run", "$1", "owner_name", "(.+)"), '
            '"run_kind", "$1", "owner_kind", "(.+)") '
            'or label_replace(label_replace(kube_job_owner{owner_kind!~"JobSet|RayJob"}, "run", "$1", "job_name", "(.+)"), '
            '"run_kind", "Job", "owner_kind", ".*")')  # fmt: skip
    owned = 'label_replace(kube_pod_owner{owner_kind="Job"}, "job_name", "$1", "owner_name", "(.+)")'
    job_runs = (f"max by (namespace, pod, run_kind, run) ({owned} * on (namespace, job_name) group_left (run_kind, run) "
                f"max by (namespace, job_name, run_kind, run) ({jobs}))")  # fmt: skip
    # the incarnation: a JobSet's uid over its Jobs' own
    uid = "kube_pod_labels"
    for label in (JOB_UID_LABEL, JOBSET_UID_LABEL):
        uid = f'label_replace({uid}, "run_uid", "$1", "{ksm_label(label)}", "(.+)")'
    uids = f"max by (namespace, pod, run_uid) ({uid})"
    job_runs = f"(({job_runs} * on (namespace, pod) group_left (run_uid) {uids}) or on (namespace, pod) {job_runs})"
    # one run a pod, else the cost join is many-to-many and fails for every run of the site: a pod of a RayJob's cluster
    # is the RayJob's even when a Job owns it too (KubeRay v1.7.0 raycluster_controller.go buildRedisCleanupJob: the
    # GCS fault tolerance cleanup Job the RayCluster controls, its pod labelled ray.io/cluster; review obsreview20 F5)
    return f"({_ray_job_runs()} or on (namespace, pod) {job_runs})"


def _ray_job_runs() -> str:
    """pod_runs' RayJob runs. KubeRay's series are read by their own namespace label (the RayCluster's, the RayJob's):
    the operator's ServiceMonitor honours its labels over the target's (operators.kuberay_values), and ``max by``
    drops the target labels it adds (the operator's pod and instance: a new operator pod is the same cluster)."""
    cluster = ksm_label(RAY_CLUSTER_LABEL)
    # the suffix as KubeRay draws it; the last value within RAY_INFO_KEPT: a scrape of the operator that fails (its
    # restart) ends its series at once, and the pods, not these series, say when the run holds GPUs
    info = f'{RAY_CLUSTER_INFO}{{owner_kind="RayJob",name=~".+{RAY_CLUSTER_SUFFIX}"}}'
    owned = _as(cluster, "name", f"max by (namespace, name) (last_over_time({info}[{RAY_INFO_KEPT}]))")
    clusters = f'label_replace(label_replace({owned}, "run", "$1", "name", "(.+){RAY_CLUSTER_SUFFIX}"), "run_kind", "RayJob", "", "")'
    # a RayService's pods never: ray.io/serve says so whatever the operator's series
    pods = f'max by (namespace, pod, {cluster}) (kube_pod_labels{{{cluster}!="",{ksm_label(RAY_SERVE_LABEL)}=""}})'
    runs = (f"max by (namespace, pod, run_kind, run) ({pods} * on (namespace, {cluster}) group_left (run_kind, run) "
            f"max by (namespace, {cluster}, run_kind, run) ({clusters}))")  # fmt: skip
    # the RayJob of that name now, else the last one within RAY_INFO_KEPT; one uid a name (a RayJob deleted and
    # created again while the operator was not scraped leaves two)
    rayjobs = _as("run_uid", "uid", _as("run", "name", RAY_JOB_INFO))
    kept = _as("run_uid", "uid", _as("run", "name", f"last_over_time({RAY_JOB_INFO}[{RAY_INFO_KEPT}])"))
    named = f"max by (namespace, run, run_uid) ({rayjobs}) or on (namespace, run) max by (namespace, run, run_uid) ({kept})"
    uids = f"topk by (namespace, run) (1, {named})"
    return f"(({runs} * on (namespace, run) group_left (run_uid) {uids}) or on (namespace, pod) {runs})"


def _inference_pods(rp: ResolvedPlatform, site: ResolvedSite) -> str:
    """The pods of the site's inference workloads, each once (INFERENCE_POD): those the serving PodMonitor scrapes, and
    those labelled with an inference workload in its team's namespaces (the pods the PodMonitor selects, read from
    kube-state-metrics' labels, where a LeaderWorkerSet's workers show though they serve no metrics). Read from the
    sources, not POD_WORKLOAD: a record of the same group may be a step old."""
    scraped = f'max by (namespace, pod) (up{{{SERVING_WORKLOAD_LABEL}!=""}})'
    terms = [scraped]
    for team in site.teams:
        names = sorted(w.name for w in rp.spec.workloads if w.kind == "inference" and w.team == team.name)
        if names and team.namespaces:
            where = f'{WORKLOAD_POD_LABEL}=~"{"|".join(names)}",namespace=~"{"|".join(team.namespaces)}"'
            terms.append(f"max by (namespace, pod) (kube_pod_labels{{{where}}})")
    return " or ".join(terms)


# one physical GPU, or one MIG instance of it (GPU_I_PROFILE rides along: it is the same for every series of an instance)
DEVICE_KEY = "node, gpu, UUID, GPU_I_ID, GPU_I_PROFILE"


def _per_gpu(metric_expr: str) -> str:
    """A DCGM expression per GPU, keyed by node/gpu/UUID (and namespace/pod where held), with the node's pool."""
    keyed = f"max by ({DEVICE_KEY}, namespace, pod) ({_as('node', 'Hostname', metric_expr)})"
    return f"{keyed} * on (node) group_left (pool) {NODE_POOL}"


def _selected(record: str, *matchers: str) -> str:
    return f"{record}{{{', '.join(matchers)}}}" if matchers else record


def _mig(record: str, *matchers: str) -> str:
    """``record``'s MIG instance series, with the resource their pods ask Kueue and the device plugin for
    (nvidia.com/mig-<GPU_I_PROFILE>): the key of the share of a GPU an instance is."""
    instances = _selected(record, *matchers, 'GPU_I_PROFILE!=""')
    return f'label_replace({instances}, "resource", "nvidia.com/mig-$1", "GPU_I_PROFILE", "(.+)")'


def _gpus(record: str, *matchers: str) -> str:
    """``record``'s activity ratios in GPUs: a whole GPU's (or a time-sliced pod's own) activity is already a share of
    the whole GPU; a MIG instance's is a share of the instance, weighed by the share of a GPU the instance is (the
    share pod:gpus_allocated:sum bills it by, decided once by alicerce.resolve.gpu; review DEFECT 6b)."""
    whole = _selected(record, *matchers, 'GPU_I_PROFILE=""')
    return f"({whole} or {_mig(record, *matchers)} * on (pool, resource) group_left () {KUEUE_RESOURCE_GPU_SHARE})"


def _share(record: str, *matchers: str) -> str:
    """The share of a GPU each series of ``record`` stands for, with the labels _gpus gives it: a pod on a
    time-sliced GPU holds one replica (its pool's share of nvidia.com/gpu), a whole GPU 1, a MIG instance its share."""
    whole = _selected(record, *matchers, 'GPU_I_PROFILE=""')
    shared = f'0 * {whole} + on (pool) group_left () {POOL_RESOURCE_GPU_SHARE}{{resource="{GPU_RESOURCE}"}}'
    instance = f"0 * {_mig(record, *matchers)} + on (pool, resource) group_left () {KUEUE_RESOURCE_GPU_SHARE}"
    return f"({shared} or 0 * {whole} + 1 or {instance})"


def _share_used(record: str, *matchers: str) -> str:
    """Per series, the GPUs busy up to the share held (GPU_HELD): time-slicing does not cap a pod, so one alone on a
    shared GPU can keep all of it busy; it is using its own share fully, not 4 times over."""
    return f"(({_gpus(record, *matchers)} <= {GPU_HELD}) or {GPU_HELD})"


def _memory_used() -> str:
    """Used / (used + free) per GPU, for each pod holding it. With time-sliced pools the GPU Operator's exporter runs with
    KUBERNETES_VIRTUAL_GPUS (alicerce.emit.kube.operators): FB_USED then comes per pod, with a ``pod_uid`` label, beside
    the GPU's own total, and FB_FREE once per pod without one (dcgm-exporter 4.5.3-4.8.2
    internal/pkg/transformation/process_metrics.go isPerProcessMetric): a division series by series matched nothing
    (review T3). So: the GPU's total (the largest FB_USED of the GPU) over total and free, for each holder FB_FREE names."""
    # a MIG instance has its own memory: instances share gpu and UUID and differ by GPU_I_ID (review obsreview3 DEFECT G)
    gpu = "Hostname, gpu, UUID, GPU_I_ID, GPU_I_PROFILE"
    used = f"max by ({gpu}) (DCGM_FI_DEV_FB_USED)"
    ratio = f"{used} / ({used} + max by ({gpu}) (DCGM_FI_DEV_FB_FREE))"
    holders = f"(0 * max by ({gpu}, namespace, pod) (DCGM_FI_DEV_FB_FREE) + 1)"
    return _per_gpu(f"{holders} * on ({gpu}) group_left () ({ratio})")


def _utilisation() -> str:
    """GPU_UTIL per GPU, and per holder: on a GPU a pod holds alone (a whole GPU, a MIG instance) the device's own value,
    on a time-sliced one the holder's own use. With KUBERNETES_VIRTUAL_GPUS on (the cluster's one exporter, as soon as
    one pool time-slices: alicerce.emit.kube.operators) dcgm-exporter 4.5.3-4.8.2 sends every held GPU's GPU_UTIL as the
    device series (no pod) and a per-pod copy built from NVML's per-process samples, "0" for a pod none of whose
    processes it maps (internal/pkg/transformation/kubernetes.go createPerProcessMetrics, buildIdlePodValues; pidmapper.go
    reads /proc/<pid>/cgroup); without the host's PIDs it maps none, and every busy training pod read idle (review
    obsreview21 F3). So a sole holder reads the larger of its copy and the
    device series; without the mode the exporter sends no device series for a held GPU, and the holder's one series
    is the device's value. Only the holder's own series and the device's: the pod that held the GPU a moment ago is
    another job (review obsreview10 F1)."""

    def reported(held: str) -> str:
        # a MIG instance reports no DCGM_FI_DEV_GPU_UTIL (absent, or 0: dcgm-exporter maintainers in NVIDIA/dcgm-exporter
        # issues 105, 216, 430): its graphics engine activity stands for it; MIG series carry GPU_I_ID (render_metrics.go 47)
        return _per_gpu(f'DCGM_FI_DEV_GPU_UTIL{{GPU_I_ID=""{held}}} / 100 or DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_ID!=""{held}}}')

    held, device = reported(',pod!=""'), reported(',pod=""')
    # a pool whose nvidia.com/gpu unit is under a whole GPU time-slices it (alicerce.resolve.gpu decides the share)
    sliced = f'{POOL_RESOURCE_GPU_SHARE}{{resource="{GPU_RESOURCE}"}} < 1'
    as_device = f"(0 * {held} + on ({DEVICE_KEY}, pool) group_left () {device})"
    alone = f"(({as_device} > {held}) or {held}) unless on (pool) ({sliced})"
    return f"{alone} or {reported('')}"


def gpu_rules() -> list[dict[str, Any]]:
    """GPU utilisation, memory and engine activity per GPU, and the allocation of GPUs to pods, in physical GPUs."""
    running = 'max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1'
    # whole GPUs, time-sliced replicas and MIG instances (mixed strategy), each weighted by the share of a GPU it is
    # once per container: during a kube-state-metrics rollout two of its pods (different instance) export the same
    # request, and summing both billed the pod twice (review obsreview2 GAP 4)
    requests = (
        f"max by (namespace, pod, container, node, resource) "
        f'(kube_pod_container_resource_requests{{resource=~"{GPU_RESOURCE}|{MIG_RESOURCES}"}})'
    )
    # a pod being deleted on a node that is not Ready holds nothing: since Kubernetes 1.5 the node controller no longer
    # force-deletes the pods of an unreachable node (kubernetes/kubernetes PR 35235 "Node controller to not force delete
    # pods"; kubernetes/website PR 1757, the nodes page: "scheduled for deletion"), so after
    # taint-based eviction the pod stays Terminating with its last phase (Running) frozen until the Node is deleted or
    # the pod force-deleted, while its Job's replacement runs elsewhere: both were billed, 16 GPUs for 8, for days on
    # an owned node in repair (review obsreview24 F6). A pod terminating gracefully on a Ready node still holds its
    # GPUs and stays billed. kube-state-metrics 2.20.0: kube_pod_deletion_timestamp (internal/store/pod.go:615-636),
    # kube_node_status_condition{condition, status=true|false|unknown}, 1 on the node's current status
    # (docs/metrics/cluster/node-metrics.md:15, internal/store/node.go:507-533); the requests' node label is the pod's
    # spec.nodeName (internal/store/pod.go:258), so no kube_pod_info join is needed.
    stranded = f"{requests} and on (namespace, pod) kube_pod_deletion_timestamp and on (node) ({NODE_NOT_READY})"
    allocated = (
        f"sum by (namespace, pod, node, pool) (({requests} unless ({stranded})) "
        f"* on (namespace, pod) group_left () ({running}) "
        f"* on (node) group_left (pool) {NODE_POOL} * on (pool, resource) group_left () {POOL_RESOURCE_GPU_SHARE})"
    )
    # a MIG instance reports no DCGM_FI_DEV_GPU_UTIL (absent, or 0: dcgm-exporter maintainers in NVIDIA/dcgm-exporter
    # issues 105, 216, 430): its graphics engine activity stands for it; MIG series carry GPU_I_ID (render_metrics.go 47)
    return [
        _rule(GPU_UTIL, _utilisation()),
        _rule(GPU_FB, _memory_used()),
        _rule(GPU_ACTIVE, _per_gpu("DCGM_FI_PROF_GR_ENGINE_ACTIVE")),
        _rule(GPU_TENSOR, _per_gpu("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")),
        _rule(GPU_DRAM, _per_gpu("DCGM_FI_PROF_DRAM_ACTIVE")),
        _rule(GPU_HELD, _share(GPU_UTIL, 'pod!=""')),
        _rule(POD_GPUS, allocated),
    ]


def _by_team(expr: str, how: str = "sum") -> str:
    return f"{how} by (team) ({expr} * on (namespace) group_left (team) {NAMESPACE_TEAM})"


def _by_workload(expr: str, how: str = "sum") -> str:
    return f"{how} by (namespace, workload) ({expr} * on (namespace, pod) group_left (workload) {POD_WORKLOAD})"


def billed_gpus(reservations: bool) -> str:
    """The GPUs a pool is billed for now: its launched GPUs, or its reserved ones while fewer are launched (nodes above
    the reservation are billed while they run); a pool without a reservation its launched ones. ``reservations``:
    whether the site has any (RESERVED_GPUS is then recorded: a rule reading a series no rule records is dropped,
    alicerce.emit.kube.promql.fed). The idle cost (alicerce.emit.kube.costs.idle_gpus) and the allocation ratio divide
    by the same."""
    installed = "pool:gpus_installed:sum"
    if not reservations:
        return installed
    return f"({installed} >= on (pool) {RESERVED_GPUS}) or on (pool) {RESERVED_GPUS} or on (pool) {installed}"


def utilisation_rules(*, reservations: bool = False) -> list[dict[str, Any]]:
    """Utilisation, memory and effective utilisation (busy GPU-equivalents of allocated GPUs / billed GPUs: installed,
    or reserved while fewer are launched) per pool, team and workload. ``reservations``: whether the site records
    RESERVED_GPUS (a pool billed launched or not)."""
    # allocated over billed (billed_gpus): a reserved pool's denominator is what it pays for, its reserved GPUs while
    # fewer are launched. Over the launched GPUs it flipped at the first node of a partly launched reservation: 0% at 0
    # nodes, 100% with 1 busy node of 4 reserved beside $165/h idle (review obsreview31 N-1). A reservation with no node
    # launched holds nothing: 0 of its reserved GPUs (absent, the pool costing $220.16/h vanished from the panel: review
    # obsreview26 N-E). One rule, so one writer: a second rule (in the cost group, then after this one) wrote the zero
    # at the step the last node left, the step this rule's series ended, and the sample was refused ("duplicate sample
    # for timestamp"; reviews of 7b19e584, obsreview31 G-1)
    allocation = "pool:gpus_allocated:sum / pool:gpus_installed:sum"
    # effective utilisation has the same denominator: a reservation's GPUs not launched are paid for and idle, the
    # waste this KPI is there to show (over the launched GPUs one busy node of four reserved read 100%)
    effective = "pool:gpus_busy:sum / pool:gpus_installed:sum"
    site_effective = "sum(pool:gpus_busy:sum) / sum(pool:gpus_installed:sum)"
    if reservations:
        billed = billed_gpus(True)
        allocation = f"pool:gpus_allocated:sum / on (pool) ({billed}) or on (pool) 0 * {RESERVED_GPUS}"
        effective = f"pool:gpus_busy:sum / on (pool) ({billed}) or on (pool) 0 * {RESERVED_GPUS}"
        # a site whose one GPU pool is a reservation with no node launched pays for it all and uses none: 0, not nothing
        site_effective = f"(sum(pool:gpus_busy:sum) or vector(0)) / sum({billed})"
    held = 'pod!=""'
    installed = f"count by (pool) ({NODE_POOL}) * on (pool) {POOL_GPUS_PER_NODE}"
    # Each physical GPU once: with KUBERNETES_VIRTUAL_GPUS (time-sliced pools) dcgm-exporter sends GPU_UTIL for the
    # device (no pod) and again per pod with that pod's own use (4.5.3-4.8.2 internal/pkg/transformation/kubernetes.go
    # Process, createPerProcessMetrics; review DEFECT 10); without per-pod data, one copy of the device's value per pod.
    # The largest series of a device is its own value in every case.
    device = f"max by ({DEVICE_KEY}, pool) ({_gpus(GPU_UTIL)})"

    def devices(record: str) -> str:
        return f"count by (pool) (count by (node, gpu, UUID, pool) ({record}))"

    return [
        _rule("pool:gpu_utilization:avg", f"sum by (pool) ({device}) / {devices(GPU_UTIL)}"),
        # a team's (workload's) GPUs busy over the GPUs it holds, each pod counted by the share of a GPU it holds
        _rule("team:gpu_utilization:avg", f"{_by_team(_share_used(GPU_UTIL, held))} / {_by_team(GPU_HELD)}"),
        _rule("workload:gpu_utilization:avg", f"{_by_workload(_share_used(GPU_UTIL, held))} / {_by_workload(GPU_HELD)}"),
        # the memory ratio comes once per pod holding the GPU, each the whole GPU's: the GPU once (review obsreview3 J)
        _rule("pool:gpu_memory_used:avg", f"sum by (pool) (max by ({DEVICE_KEY}, pool) ({_gpus(GPU_FB)})) / {devices(GPU_FB)}"),
        _rule("team:gpu_memory_used:avg", _by_team(_selected(GPU_FB, held), "avg")),
        _rule("workload:gpu_memory_used:avg", _by_workload(_selected(GPU_FB, held), "avg")),
        _rule("pool:gpus_installed:sum", installed),
        # a pool no pod holds a GPU of holds 0, not nothing: the allocation ratio shows 0% and the idle cost its whole
        # price (absent, a wholly idle pool, the largest idle cost, vanished from both: review obsreview25 G1, N4)
        _rule("pool:gpus_allocated:sum", f"sum by (pool) ({POD_GPUS}) or on (pool) 0 * pool:gpus_installed:sum"),
        # a pool nobody holds a GPU of is 0 busy, not absent: the utilisation SLO and the ratios read it (an idle
        # platform, the SLO's very case, had no ratio and never fired: review obsreview23 F2)
        _rule("pool:gpus_busy:sum", f"sum by (pool) ({_gpus(GPU_UTIL, held)}) or on (pool) 0 * pool:gpus_installed:sum"),
        _rule("pool:gpu_allocation:ratio", allocation),
        _rule("pool:gpu_effective_utilization:ratio", effective),
        _rule("team:gpus_allocated:sum", _by_team(POD_GPUS)),
        _rule("team:gpus_busy:sum", _by_team(_gpus(GPU_UTIL, held))),
        _rule("team:gpu_effective_utilization:ratio", "team:gpus_busy:sum / team:gpus_allocated:sum"),
        _rule("workload:gpus_allocated:sum", _by_workload(POD_GPUS)),
        _rule("site:gpus_installed:sum", "sum(pool:gpus_installed:sum)"),
        _rule("site:gpu_effective_utilization:ratio", site_effective),
    ]


def _team(expr: str) -> str:
    """Kueue's ClusterQueue of a team carries the team's name (alicerce.emit.kube.kueue.cluster_queue)."""
    return _as("team", "cluster_queue", expr)


def queue_rules() -> list[dict[str, Any]]:
    """Queue wait (creation or requeue to admission), admission to pods ready, pending and admitted workloads,
    evictions, and GPU quota against use, per team (and pool where Kueue reports the flavor)."""
    rules: list[dict[str, Any]] = []

    def counted(counter: str, window: str, name: str, *, ratio: bool = False) -> str:
        """kueue_increase's expression, its records ahead of the rule that reads it."""
        count = kueue_increase(counter, window, name=name, ratio=ratio)
        rules.extend(count.records)
        return count.expr

    # the admission that creates a queue's bucket series counts too (kueue_increase; review obsreview13 F5)
    waits = counted(kueue_series("kueue_admission_wait_time_seconds_bucket"), "1h", "admission_wait_bucket_1h", ratio=True)
    until_ready = counted(kueue_series("kueue_admitted_until_ready_wait_time_seconds_bucket"), "1h",
                          "admitted_until_ready_bucket_1h", ratio=True)  # fmt: skip
    for q in QUANTILES[:2]:
        name = f"p{q * 100:g}"
        wait = f"histogram_quantile({q:g}, sum by (cluster_queue, le) ({waits}))"
        ready = f"histogram_quantile({q:g}, sum by (cluster_queue, le) ({until_ready}))"
        rules.append(_rule(f"team:kueue_admission_wait_seconds:{name}", _team(wait)))
        rules.append(_rule(f"team:kueue_admitted_until_ready_seconds:{name}", _team(ready)))

    # in GPUs: a MIG instance or a time-sliced replica counts as its share of a GPU (per flavor, a pool)
    def flavored(metric: str) -> str:
        return _as("pool", "flavor", kueue_series(metric, f'resource=~"{KUEUE_GPU}"'))

    def gpus(metric: str) -> str:
        return f"{flavored(metric)} * on (pool, resource) group_left () {KUEUE_RESOURCE_GPU_SHARE}"

    usage, quota = gpus("kueue_cluster_queue_resource_usage"), gpus("kueue_cluster_queue_nominal_quota")
    # Pending has no flavor (Kueue v0.19.2 pkg/metrics/metrics.go: not assigned yet): a unit counts as the share it
    # has in the flavors the team's queue names for that resource (its quota series, 0 included). Across all pools,
    # a time-sliced replica of nvidia.com/gpu (0.25 on infer-l4) counted as a whole GPU beside infer-l40s (review
    # obsreview3 G23). A queue whose flavors differ keeps the largest; a queue with no quota series, the largest of all
    queue_share = (f"max by (cluster_queue, resource) (0 * {flavored('kueue_cluster_queue_nominal_quota')} "
                   f"+ on (pool, resource) group_left () {KUEUE_RESOURCE_GPU_SHARE})")  # fmt: skip
    units = kueue_series("kueue_cluster_queue_resource_pending", f'resource=~"{KUEUE_GPU}"')
    pending = (f"({units} * on (cluster_queue, resource) group_left () {queue_share} "
               f"or {units} * on (resource) group_left () max by (resource) ({KUEUE_RESOURCE_GPU_SHARE}))")  # fmt: skip
    evicted = counted(kueue_series("kueue_evicted_workloads_total"), "1h", "evicted_1h")
    admitted = counted(kueue_series("kueue_admitted_workloads_total"), "1h", "admitted_1h")
    finished = kueue_series("kueue_finished_workloads_total")
    finished_hour, finished_week = counted(finished, "1h", "finished_1h"), counted(finished, "7d", "finished_7d")
    pending_workloads = kueue_series("kueue_pending_workloads")
    rules += [
        _rule("team:kueue_pending_workloads:sum", _team(f"sum by (cluster_queue, status) ({pending_workloads})")),
        _rule("team:kueue_admitted_workloads:increase1h", _team(f"sum by (cluster_queue) ({admitted})")),
        _rule("team:kueue_evicted_workloads:increase1h", _team(f"sum by (cluster_queue, reason) ({evicted})")),
        _rule("team:kueue_finished_workloads:increase1h", _team(f"sum by (cluster_queue) ({finished_hour})")),
        # experiments completed per period, the throughput a platform team reports: workloads that ran to their end in
        # the last 7 days (Kueue counts succeeded and failed alike; team_kind:job_failure:ratio tells them apart)
        _rule("team:kueue_finished_workloads:increase7d", _team(f"sum by (cluster_queue) ({finished_week})")),
        _rule("team_pool:kueue_gpu_usage:sum", _as("pool", "flavor", _team(f"sum by (cluster_queue, flavor) ({usage})"))),
        _rule("team_pool:kueue_gpu_quota:sum", _as("pool", "flavor", _team(f"sum by (cluster_queue, flavor) ({quota})"))),
        _rule("team:kueue_gpus_pending:sum", _team(f"sum by (cluster_queue) ({pending})")),
    ]
    return rules


E2E = "vllm:e2e_request_latency_seconds"
PROMPT = "vllm:prompt_tokens_total"
GENERATED = "vllm:generation_tokens_total"


def workload_pods() -> str:
    """Each pod labelled with its workload, from kube-state-metrics' series: what POD_WORKLOAD records."""
    labelled = f'kube_pod_labels{{{WORKLOAD_POD_LABEL}!=""}}'
    return f"max by (namespace, pod, workload) ({_as('workload', WORKLOAD_POD_LABEL, labelled)})"


def _live_from_source() -> str:
    """The live pods of each serving workload, from kube-state-metrics' series alone (no recorded join)."""
    return f"count by (namespace, workload) ({workload_pods()} * on (namespace, pod) group_left () ({LIVE_PODS}))"


def serving_rules() -> list[dict[str, Any]]:
    """Inference latency percentiles, throughput, error rate and availability per workload, from vLLM's own metrics."""

    def workload(expr: str) -> str:
        return _as("workload", SERVING_WORKLOAD_LABEL, expr)

    by = f"namespace, {SERVING_WORKLOAD_LABEL}"
    requests = f"sum by ({by}) ({api_request_rate('', '5m')})"
    rules = []
    for q in QUANTILES:
        name = f"p{q * 100:g}"
        for metric, short in ((TTFT, "time_to_first_token"), (TPOT, "inter_token_latency"), (E2E, "e2e_latency")):
            expr = f"histogram_quantile({q:g}, sum by ({by}, le) ({histogram_rate(metric, 'bucket', '', '5m')}))"
            rules.append(_rule(f"workload:vllm_{short}_seconds:{name}", workload(expr)))
    rules += [
        _rule("workload:vllm_requests:rate5m", workload(f"sum by ({by}) ({any_rate('vllm:request_success_total', '', '5m')})")),
        _rule("workload:vllm_generation_tokens:rate5m", workload(f"sum by ({by}) ({any_rate(GENERATED, '', '5m')})")),
        _rule("workload:vllm_prompt_tokens:rate5m", workload(f"sum by ({by}) ({any_rate(PROMPT, '', '5m')})")),
        # prompt and generated: what the plan's cost per million tokens counts (alicerce.plan.platform UnitCost)
        _rule(
            "workload:vllm_tokens:rate5m",
            workload(f"sum by ({by}) ({any_rate(PROMPT, '', '5m')}) + sum by ({by}) ({any_rate(GENERATED, '', '5m')})"),
        ),
        _rule(
            "workload:vllm_request_errors:ratio_rate5m",
            # the engine's server writes a 5xx series only at the first server error: until then 0, not "no data"
            workload(f"(sum by ({by}) ({api_request_rate('', '5m', errors=True)}) or 0 * {requests}) / {requests}"),
        ),
        _rule("workload:vllm_requests_waiting:sum", workload(f"sum by ({by}) ({' or '.join(series_names('vllm:num_requests_waiting'))})")),
        _rule("workload:serving_up:ratio", workload(f'avg by ({by}) (up{{{SERVING_WORKLOAD_LABEL}!=""}})')),
        _rule(SERVING_READY, f"count by (namespace, workload) ({SERVING_POD} * on (namespace, pod) group_left () ({READY_PODS}))"),
        _last_seen(SERVING_LAST_READY, SERVING_READY, "namespace, workload"),
        # Ray Serve's own replicas of each deployment of a RayService's applications, summed over the workload's Ray
        # clusters (a zero-downtime upgrade runs two controllers side by side until the new one serves)
        _rule(RAY_DEPLOYMENT_HEALTHY, f"sum by ({RAY_DEPLOYMENT}) ({workload(RAY_REPLICA_HEALTHY)})"),
        _rule(RAY_DEPLOYMENT_STATUS, f"min by ({RAY_DEPLOYMENT}) ({workload(RAY_DEPLOYMENT_STATUS_GAUGE)})"),
        _rule(RAY_DEPLOYMENT_DESIRED, f"max by ({RAY_DEPLOYMENT}) ({workload(RAY_DESIRED_REPLICAS)})"),
        _last_seen(RAY_DEPLOYMENT_LAST_HEALTHY, f"{RAY_DEPLOYMENT_HEALTHY} > 0", RAY_DEPLOYMENT),
        _last_seen(RAY_DEPLOYMENT_LAST_ZERO, RAY_AT_ZERO, RAY_DEPLOYMENT),
        # only while kube-state-metrics reports pods at all: its own outage is no scale-to-zero. The live pods are read
        # from kube-state-metrics itself here, not through the joins group's record: after a gap (a Prometheus restart,
        # a kube-state-metrics outage) this group may run before that one, whose record is then stale, and a workload
        # that never left read as scaled to zero, silencing its outage (found by promtool's random group order)
        _last_seen(
            SERVING_LAST_EMPTY,
            f"({SERVING_LAST_READY} unless on (namespace, workload) {_live_from_source()}) and on () (count(kube_pod_status_phase) > 0)",
            "namespace, workload",
        ),
    ]
    return rules


# the node's own NICs (eth*, ens*, eno*, enp*): not loopback, pod veths, EKS pod ENIs (eni*) or IPoIB (ib*, counted
# by the port counters)
NIC = 'device=~"eth.*|en[osp].*"'
# Physical disks only: md arrays (the nvme_scratch RAID0) and device-mapper volumes are views of the disks under them,
# and node_exporter v1.12.1 ignores partitions, not stacked devices (collector/diskstats_linux.go 37), so counting both
# counted every byte twice
DISK = 'device!~"md.+|dm-.+"'


def _present_sum(records: tuple[str, ...]) -> str:
    zero = f"0 * sum by (node) ({NODE_IO_PRESSURE})"
    return " + ".join(f"(sum by (node) ({r}) or {zero})" for r in records)


# IB port state ACTIVE (node_exporter's infiniband collector, state_id help text: 1 down, 2 init, 3 armed, 4 active)
IB_PORT_ACTIVE = 4


# The EFA ports' counters (alicerce.targets.aws files/alicerce_efa_stats.py, from the efa driver's hw_counters): bytes
# through the port, and what counts as a fabric error there: packets dropped on receive, RDMA work requests completed
# in error, retransmissions that timed out (SRD gave up on a path), connections to a peer that became impaired (SRD
# limited their rate: amzn-drivers kernel/linux/efa/src/efa_verbs.c EFA_DEFINE_PORT_STATS impaired_remote_conn_events,
# beside retrans_timeout_events since efa driver 2.17.0; an older driver keeps neither and counts 0). Retransmitted
# packets are not errors: SRD recovers them, and a busy fabric always has some. The writer writes these and no more.
EFA_RX = "alicerce_efa_received_bytes_total"
EFA_TX = "alicerce_efa_transmitted_bytes_total"
EFA_ERRORS = (
    "alicerce_efa_receive_drops_total",
    "alicerce_efa_rdma_read_errors_total",
    "alicerce_efa_rdma_write_errors_total",
    "alicerce_efa_retransmit_timeouts_total",
    "alicerce_efa_impaired_remote_connections_total",
)


def _link_utilisation(site: ResolvedSite, tx: str) -> str:
    """Per node, its busiest fabric port's transmit rate over its line rate. Where a pool names its railDevices only
    those: a storage port saturated beside idle rails read as a fabric at its line rate, and GPUCommunicationBound
    fired on an input-bound job (review obsreview45 N-3)."""

    def busiest(sent: str) -> str:
        return f"max by (node) (max by (node, device, port) ({sent}) / max by (node, device, port) (node_infiniband_rate_bytes_per_second))"

    named: dict[str, list[str]] = {}
    for p in rail_port_pools(site):
        if p.rdma is not None and p.rdma.rail_devices:
            named.setdefault(rail_matcher(p.rdma.rail_devices), []).append(p.name)
    if not named:
        return busiest(tx)
    sent = "rate(node_infiniband_port_data_transmitted_bytes_total{}[5m])"
    terms = [f"({busiest(sent.format(m))} and on (node) ({_nodes_of(pools)}))" for m, pools in named.items()]
    every = [p for pools in named.values() for p in pools]
    return " or ".join([*terms, f"({busiest(tx)} unless on (node) ({_nodes_of(every)}))"])


def node_rules(site: ResolvedSite) -> list[dict[str, Any]]:
    """Fabric (InfiniBand/RoCE port counters from the node exporter, EFA port counters from alicerce's writer through its
    textfile collector) and storage (local disks, and IO pressure: tasks waiting on data pages, of Lustre and NFS too,
    not on their metadata RPCs, alicerce.emit.kube.diagnoses.IO_SATURATED) per node and pool."""
    ib = "node_infiniband_port_data_{}_bytes_total"
    # these three stop at their maximum (8 and 16 bits: alicerce.emit.kube.fabric_alerts): a saturated port adds 0 here,
    # which FabricCountersSaturated reports
    errors = " + ".join(f"rate(node_infiniband_{c}[5m])" for c in ("port_errors_received_total", "link_downed_total", "symbol_error_total"))
    rx, tx = f"rate({ib.format('received')}[5m])", f"rate({ib.format('transmitted')}[5m])"
    node_errors = f"sum by (node) ({errors})"
    # the InfiniBand ports alone: what a parallel file system over the fabric can move (storage's approximation below)
    ib_rx, ib_tx = rx, tx
    if efa_counted(site):
        # an EFA device is no HCA with port counters, an HCA no EFA device: the union of the two per device and port.
        # An error counter an older efa driver lacks counts 0 on the node instead of hiding its other errors
        rx, tx = f"{rx} or rate({EFA_RX}[5m])", f"{tx} or rate({EFA_TX}[5m])"
        zero = f"0 * sum by (node) (rate({EFA_TX}[5m]))"
        node_errors += " or (" + " + ".join(f"(sum by (node) (rate({c}[5m])) or {zero})" for c in EFA_ERRORS) + ")"
    # the node exporter reports each EFA port's rate as it does an HCA's (procfs v0.21.1 class_infiniband.go reads
    # ports/N/rate of every /sys/class/infiniband device). Recent efa drivers derive it from the device's link speed
    # (efa_verbs.c efa_link_gbps_to_speed_and_width); older ones report 100 Gb/s whatever the link (IB_SPEED_EDR,
    # IB_WIDTH_4X), which overstates a faster port's utilisation
    link = _link_utilisation(site, tx)
    port_active = f"max by (node, device, port) (node_infiniband_state_id) == {IB_PORT_ACTIVE}"
    rules = [
        _rule(NODE_IB_RX, f"sum by (node) ({rx})"),
        _rule(NODE_IB_TX, f"sum by (node) ({tx})"),
        _rule(NODE_IB_ERRORS, node_errors),
        _rule(NODE_IB_UTIL, link),
        _rule(NODE_DISK_READ, f"sum by (node) (rate(node_disk_read_bytes_total{{{DISK}}}[5m]))"),
        _rule(NODE_DISK_WRITE, f"sum by (node) (rate(node_disk_written_bytes_total{{{DISK}}}[5m]))"),
        _rule(
            NODE_DISK_IOPS,
            f"sum by (node) (rate(node_disk_reads_completed_total{{{DISK}}}[5m]) + rate(node_disk_writes_completed_total{{{DISK}}}[5m]))",
        ),
        _rule(NODE_IO_PRESSURE, "max by (node) (rate(node_pressure_io_waiting_seconds_total[5m]))"),
        _rule(NODE_NET_RX, f"sum by (node) (rate(node_network_receive_bytes_total{{{NIC}}}[5m]))"),
        _rule(NODE_NET_TX, f"sum by (node) (rate(node_network_transmit_bytes_total{{{NIC}}}[5m]))"),
    ]
    if rail_port_pools(site):
        # only where the rail alerts read them. Each evaluation, PORT_LAST_ACTIVE reads a day's range of itself per
        # remembered port (2,880 samples at a 30 s evaluation), the most two such ranges per node and port kind (one to
        # three kinds a node), and PORT_RENAMED_SEEN one per port gone (none on a node that renamed nothing in the last
        # 30 days)
        rules += [_port_last_seen(port_active), *_kind_records(site), _renamed_seen()]
    if every_mount_counted(site):
        # what a node reads and writes: local disks and its shared file systems' client counters. The fabric's ports
        # carry NCCL's collectives and the NICs pod traffic: a training pool all-reducing read as hundreds of GB/s of
        # storage (review obsreview3 DEFECT E)
        read, written = "rate(alicerce_storage_client_read_bytes_total[5m])", "rate(alicerce_storage_client_written_bytes_total[5m])"
        rules += [
            _rule(NODE_CLIENT_READ, f"sum by (node) ({read})"),
            _rule(NODE_CLIENT_WRITE, f"sum by (node) ({written})"),
            _rule(NODE_READ, _present_sum((NODE_DISK_READ, NODE_CLIENT_READ))),
            _rule(NODE_WRITE, _present_sum((NODE_DISK_WRITE, NODE_CLIENT_WRITE))),
        ]
    else:
        # an approximation where no client counts its mounts (FSx and EFS through CSI drivers, BeeGFS): local disks,
        # a parallel file system over InfiniBand, FSx/EFS/NFS over the NICs; a source a node lacks (no HCA) counts 0
        # instead of hiding the node (every node reports IO pressure). The fabric term takes the InfiniBand ports only:
        # an EFA port carries NCCL's collectives, and FSx reaches a node over its ENA NICs, so counting EFA read a
        # training node's all-reduce as storage (review obsreview20 DEFECT F9); an EFA-enabled FSx for Lustre's traffic
        # cannot be told from NCCL's on the port and goes uncounted. Without EFA the fabric records are the InfiniBand
        # ports' already
        fabric_rx, fabric_tx = (ib_rx, ib_tx) if efa_counted(site) else (NODE_IB_RX, NODE_IB_TX)
        rules += [
            _rule(NODE_READ, _present_sum((NODE_DISK_READ, fabric_rx, NODE_NET_RX))),
            _rule(NODE_WRITE, _present_sum((NODE_DISK_WRITE, fabric_tx, NODE_NET_TX))),
        ]
    if fabric_wait_pools(site):
        # never the node exporter's node_infiniband_port_transmit_wait_total: the sysfs counter is 32 bits and stops at
        # all ones (a rate over it reads 0 on the most congested port), and the collector clears it each tick where the
        # port has no 64-bit one. The tick's length is an estimate (vendors count ticks differently): the share is
        # capped at 1
        ticks = "max by (node, device, port) (rate(alicerce_fabric_port_transmit_wait_ticks_total[5m]))"
        length = "max by (node, device, port) (alicerce_fabric_port_tick_seconds)"
        rules += [
            _rule(PORT_IB_WAIT, f"clamp_max({ticks} * on (node, device, port) {length}, 1)"),
            _rule(NODE_IB_WAIT, f"max by (node) ({PORT_IB_WAIT})"),
        ]
    if counted_tiers(site):
        # what IO pressure cannot see: a call waiting on a metadata RPC sleeps outside io_schedule()
        # (alicerce.emit.kube.diagnoses); the clients time their calls (alicerce_storage_stats.py)
        rules += [
            _rule(NODE_METADATA_WAIT, "sum by (node) (rate(alicerce_storage_client_metadata_wait_seconds_total[5m]))"),
            _rule(NODE_DATA_WAIT, "sum by (node) (rate(alicerce_storage_client_data_wait_seconds_total[5m]))"),
        ]
    for record in (NODE_IB_RX, NODE_IB_TX, NODE_IB_ERRORS, NODE_DISK_READ, NODE_DISK_WRITE, NODE_DISK_IOPS, NODE_READ, NODE_WRITE):
        _, metric, op = record.split(":")
        rules.append(_rule(f"pool:{metric}:{op}", f"sum by (pool) ({record} * on (node) group_left (pool) {NODE_POOL})"))
    return rules


TIER_READ = "tier:storage_client_read_bytes:rate5m"
TIER_WRITE = "tier:storage_client_written_bytes:rate5m"
TIER_OPS = "tier:storage_client_ops:rate5m"
TIER_METADATA_OPS = "tier:storage_metadata_ops:rate5m"  # the clients' counts on-prem, the file systems' in the cloud


def storage_tier_rules() -> list[dict[str, Any]]:
    """Client I/O per storage tier, and per pool and tier, from the counters node_monitoring writes on every node that
    mounts a Lustre or NFS tier (alicerce.emit.storage_counters): which tier feeds which pool, and how hard."""
    read, written = "rate(alicerce_storage_client_read_bytes_total[5m])", "rate(alicerce_storage_client_written_bytes_total[5m])"
    ops = "sum by (tier) (rate(alicerce_storage_client_reads_total[5m]) + rate(alicerce_storage_client_writes_total[5m]))"
    return [
        _rule(TIER_READ, f"sum by (tier) ({read})"),
        _rule(TIER_WRITE, f"sum by (tier) ({written})"),
        _rule(TIER_OPS, ops),
        _rule(TIER_METADATA_OPS, "sum by (tier) (rate(alicerce_storage_client_metadata_operations_total[5m]))"),
        _rule("pool_tier:storage_client_read_bytes:rate5m", f"sum by (pool, tier) ({read} * on (node) group_left (pool) {NODE_POOL})"),
        _rule(
            "pool_tier:storage_client_written_bytes:rate5m", f"sum by (pool, tier) ({written} * on (node) group_left (pool) {NODE_POOL})"
        ),
    ]


TIER_IO_LIMIT = "tier:storage_io_limit:ratio"


def cloud_tier_rules(exporter: StorageMetricsExporter, tiers: dict[str, FileSystemMetrics]) -> list[dict[str, Any]]:
    """The same tier KPIs from the cloud's metrics of each tier's file system (FSx for Lustre, EFS on AWS), through the
    storage metrics exporter (alicerce.emit.kube.cloud_metrics), plus what only the cloud reports.

    Semantics against the on-prem counters: each exporter series holds one period's Sum (CloudWatch sums per period; the
    exporter reads a minute every minute, ``delay_seconds`` late), not a counter. Bytes per second = Sum / period: the
    average of the minutes seen in 5 minutes, over the period's seconds, is the same 5-minute mean rate that rate() gives
    on-prem, lagging CloudWatch by two to three minutes. It is the file system's I/O as its servers count it, all its
    clients together: the same names, because a tier's client I/O summed over its clients is what the tier served; there
    is no per-pool split (pool_tier:*), which only the clients know. The tier is the file system's tier tag, which the
    exporter copies onto every series (``tier_label``): the FileSystemId never has to be known offline.

    Only where the cloud says more: metadata operations per second and how close a file system is to its I/O limit
    (EFS General Purpose, 0..1)."""
    label = exporter.tier_label
    period = exporter.period_seconds

    def per_tier(series: list[str]) -> str:
        # avg_over_time drops the name: a file system's reads and writes would then be one series to `or`, which keeps
        # the first; each keeps its name in a label of its own until the sum
        picked = [_as("tier", label, f'label_replace(avg_over_time({s}{{{label}!=""}}[5m]), "series", "{s}", "", "")') for s in series]
        # an exporter pod replaced (a config change rolls it; a drain moves it) leaves the old pod's series in the 5-minute
        # window beside the new one's: both read the same minutes, so one per file system before the sum (review
        # obsreview5 DEFECT 1)
        measured = f"sum by (tier) (max without (instance, pod) ({' or '.join(picked)})) / {period}"
        return f"{measured} or ({idle})"

    sources = list({s.namespace: s for s in tiers.values()}.values())  # one per kind of file system
    # a file system the exporter finds by its tags but CloudWatch lists no metric of (nothing moved in two weeks: a
    # tier not used yet) is idle, not missing (review obsreview5 G2): 0 while the exporter's calls to CloudWatch
    # succeed. A failing call (the role denied) drops every data series too: the tier is then unrecorded and
    # CloudWatchStorageMetricsAbsent says why (alicerce.emit.kube.sources)
    found = " or ".join(_as("tier", label, f'{s.discovered}{{{label}!=""}}') for s in sources)
    idle = f"0 * count by (tier) ({found}) unless on () (sum(increase({exporter.request_errors}[5m])) > 0)"
    rules = [
        _rule(TIER_READ, per_tier([s.read_bytes for s in sources])),
        _rule(TIER_WRITE, per_tier([s.written_bytes for s in sources])),
        _rule(TIER_OPS, per_tier([o for s in sources for o in s.operations])),
        _rule(TIER_METADATA_OPS, per_tier([s.metadata_operations for s in sources])),
    ]
    limits = [s.io_limit_percent for s in sources if s.io_limit_percent is not None]
    if limits:
        picked = " or ".join(_as("tier", label, f'max_over_time({m}{{{label}!=""}}[5m])') for m in limits)
        rules.append(_rule(TIER_IO_LIMIT, f"max by (tier) ({picked}) / 100"))
    return rules


JOB_KIND = "alicerce:job_kind:info"
JOB_KINDS = ("JobSet", "RayJob")  # the owners alicerce's training runtimes use; anything else counts as a Job


def job_rules() -> list[dict[str, Any]]:
    """Run time and failures of batch work, from kube-state-metrics 2.20.0's Job series (docs/metrics/workload/
    job-metrics.md): every Kubeflow TrainJob runs as a JobSet of Jobs, a RayJob's entrypoint as its submitter Job, so
    each Job is counted under its owner's kind (kube_job_owner: JobSet, RayJob; none: a plain Job). A Job's run time is
    its completion time (set only on success) minus its start; a running one's, now minus its start."""
    key = "namespace, job_name"
    owners = "|".join(JOB_KINDS)
    kind = (
        f'label_replace(kube_job_owner{{owner_kind=~"{owners}"}}, "kind", "$1", "owner_kind", "(.+)") '
        f'or label_replace(kube_job_owner{{owner_kind!~"{owners}"}}, "kind", "Job", "owner_kind", ".*")'
    )

    def joined(expr: str) -> str:
        return f"{expr} * on ({key}) group_left (kind) {JOB_KIND} * on (namespace) group_left (team) {NAMESPACE_TEAM}"

    done = f"max by ({key}) (kube_job_status_completion_time) - on ({key}) max by ({key}) (kube_job_status_start_time)"
    active = f"max by ({key}) (kube_job_status_active) > 0"
    running = f"time() - max by ({key}) (kube_job_status_start_time) and on ({key}) ({active})"
    succeeded = f'max by ({key}) (kube_job_complete{{condition="true"}})'
    failed = f'max by ({key}) (kube_job_failed{{condition="true"}})'
    failures = "(team_kind:jobs_failed:sum or team_kind:jobs_succeeded:sum * 0)"
    successes = "(team_kind:jobs_succeeded:sum or team_kind:jobs_failed:sum * 0)"
    rules = [
        _rule(JOB_KIND, f"max by ({key}, kind) ({kind})"),
        _rule("job:kube_job_run_seconds:last", done),
        _rule("job:kube_job_running_seconds:last", running),
        _rule("team_kind:jobs_succeeded:sum", f"sum by (team, kind) ({joined(succeeded)})"),
        _rule("team_kind:jobs_failed:sum", f"sum by (team, kind) ({joined(failed)})"),
        _rule("team_kind:jobs_running:sum", f"sum by (team, kind) ({joined(f'count by ({key}) ({active})')})"),
        # a kind with only failures (or only successes) has no series of the other: count it as 0
        _rule("team_kind:job_failure:ratio", f"{failures} / on (team, kind) ({failures} + on (team, kind) {successes})"),
    ]
    for q in QUANTILES[:2]:
        rules.append(
            _rule(f"team_kind:job_run_seconds:p{q * 100:g}", f"quantile by (team, kind) ({q:g}, {joined('job:kube_job_run_seconds:last')})")
        )
    return rules


# The time from dataset to a deployed model (issue 24). A stage's run is a Job whose pods carry its workload's label
# (alicerce.dev/workload): a Kubeflow TrainJob's Jobs (its JobSet's), a plain Job, a RayJob's submitter Job where its
# pod is labelled. Its start and end are kube-state-metrics 2.20.0's kube_job_status_start_time and
# kube_job_status_completion_time (docs/metrics/workload/job-metrics.md; k8s.io/api batch/v1 types.go JobStatus:
# startTime is set when the Job controller starts it and reset each time it is resumed from suspension, so at Kueue's
# last admission of it, a preempted run's included; completionTime only on success): a failed run fed nothing, and a
# run's queue wait before its last admission is not in the lead time.
STAGE_RUN_START = "job:workload_run_start:timestamp"  # per completed Job of a chain stage: when it started
STAGE_RUN_END = "job:workload_run_end:timestamp"  # ... and when it completed
# A rollout is a new revision of the served workload's pods, not new pods: a node drain, a rescheduling or a deleted
# pod brings pods of the same revision back, and counting any full replacement of the pods as a rollout moved the
# deploy time (and the lead time) at every drain (review obsreview23 F4). The revision is the one its controller
# stamps on each pod it creates from a pod template, which changes only with the template: a Deployment's ReplicaSet
# adds pod-template-hash (k8s.io/api apps/v1 DefaultDeploymentUniqueLabelKey), a StatefulSet (and the leader
# StatefulSet of a LeaderWorkerSet) controller-revision-hash (apps/v1 ControllerRevisionHashLabelKey); a RayService's
# head pods name their RayCluster (ray.io/cluster), a new one at each cluster upgrade; a pod none of them created is
# its own revision (its uid). A template revision also changes with a `kubectl rollout restart` or an engine image
# bump that keeps the model: a team that labels its serving pods with the model's revision (alicerce.dev/model-revision,
# any value that changes with the model only) has that label read first, and those are no rollout. kube-state-metrics
# keeps the three through its allowlist (alicerce.emit.kube.operators)
MODEL_REVISION_LABEL = "alicerce.dev/model-revision"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
CONTROLLER_REVISION_LABEL = "controller-revision-hash"
REVISION_LABELS = (MODEL_REVISION_LABEL, POD_TEMPLATE_HASH_LABEL, CONTROLLER_REVISION_LABEL, RAY_CLUSTER_LABEL)
# when each revision of a served workload with a chain first served (the earliest readiness of its ready pods), and
# the workload's rollout: the oldest of the revisions ready now, so a rolling update moves it once no pod of the older
# revision is ready
SERVING_REVISION_PODS = "alicerce:pod_serving_revision:info"  # per ready serving pod: its workload and revision
SERVING_READY_SINCE = "workload_revision:serving_ready_since:timestamp"
SERVING_ROLLOUT = "workload:serving_rollout:timestamp"
CHAIN_STAGE_START = "workload_stage:model_chain_start:timestamp"  # per served workload and stage of its chain
LEAD_TIME = "workload:model_lead_time:seconds"
# How long a completed run is remembered after its Job is gone (a TTL, a clean-up): the stages of a chain may run
# months apart, and a stage run once a year (runsPerQuarter 0.25) still fed the rollout that follows its next consumer
RUN_REMEMBERED_SECONDS = 400 * 86400


def _remembered(record: str, current: str, by: str, seconds: int) -> str:
    """``current``, else ``record``'s own last value within a day, until that value (a timestamp) is ``seconds`` old."""
    return f"{current} or max by ({by}) (last_over_time({record}[1d]) > time() - {seconds})"


def _pod_revisions() -> str:
    """Each pod's revision (labels namespace, pod, uid, revision): the first of REVISION_LABELS it carries, else its uid."""
    labels = [ksm_label(name) for name in REVISION_LABELS]
    parts = []
    for i, label in enumerate(labels):
        matchers = ",".join([*(f'{earlier}=""' for earlier in labels[:i]), f'{label}!=""'])
        parts.append(_as("revision", label, f"kube_pod_labels{{{matchers}}}"))
    unlabelled = ",".join(f'{label}=""' for label in labels)
    parts.append(_as("revision", "uid", f"kube_pod_labels{{{unlabelled}}}"))
    return f"max by (namespace, pod, uid, revision) ({' or '.join(parts)})"


def _revision_pods(workloads: list[str]) -> str:
    """SERVING_REVISION_PODS's expression: the ready serving pods of ``workloads`` with their revisions."""
    ready_uids = 'max by (namespace, pod, uid) (kube_pod_status_ready{condition="true"}) == 1'
    serving = f'max by (namespace, pod, workload) ({SERVING_POD}{{workload=~"{"|".join(workloads)}"}})'
    return (f"max by (namespace, pod, uid, workload, revision) ({_pod_revisions()} * on (namespace, pod, uid) group_left () "
            f"({ready_uids}) * on (namespace, pod) group_left (workload) {serving})")  # fmt: skip


def _revision_since() -> str:
    """SERVING_READY_SINCE's expression: per served workload and revision with a ready serving pod now, its own value
    of the last day (a revision ready again within a day, after a drain that left none ready, keeps its time), else
    the earliest readiness of its ready pods (kube-state-metrics 2.20.0 kube_pod_status_ready_time, the Ready
    condition's lastTransitionTime: internal/store/pod.go createPodStatusReadyTimeFamilyGenerator), else now. The
    ready time is the object's, not Prometheus's: after an outage of Prometheus (or of its rule evaluation) longer
    than the day, the pods that served through it still say when they became ready, where the evaluation time
    re-stamped the deploy at the first evaluation after the gap (review obsreview23 F4)."""
    key = "namespace, workload, revision"
    revisions = f"count by ({key}) ({SERVING_REVISION_PODS})"
    kept = f"max by ({key}) (last_over_time({SERVING_READY_SINCE}[1d])) and on ({key}) {revisions}"
    ready_time = (f"min by ({key}) (max by (namespace, pod, uid) (kube_pod_status_ready_time) "
                  f"* on (namespace, pod, uid) group_left (workload, revision) {SERVING_REVISION_PODS})")  # fmt: skip
    return f"{kept} or {ready_time} or (0 * {revisions} + time())"


def lead_time_rules(rp: ResolvedPlatform, site: ResolvedSite) -> list[dict[str, Any]]:
    """workload:model_lead_time:seconds per inference workload whose inputs declare where its model comes from: the time
    from the start of the run of the chain's first stage that fed it to when the pods serving now began serving.
    Walking the chain back from the rollout, each stage's run is its latest completed run that ended before the run of
    the stage it feeds started (before the rollout, for the served model's own stage): a rollout before the training
    ended served an older model, and a run still going fed nothing yet. A chain one of whose stages never completed a
    run that fits has no lead time (no series, not 0). Several first stages (a chain that joins): the earliest start.
    Limits: a stage runs as Jobs whose pods carry the workload label (a Deployment, a RayJob whose submitter pod is
    unlabelled, a run on a laptop are not seen); a JobSet's Jobs are each a run (they start and end together); a
    rollout is a new model revision label or, without one, a new pod-template revision, so there a `kubectl rollout
    restart` or an engine image bump without a new model counts as one, and a model swapped in place (a RayService's
    serve config, a model path re-pointed under the same pod template) does not; a revision with no ready pod for over
    a day (scaled to zero, or drained and back after a Prometheus outage) starts again at its pods' readiness; a
    service scaled to zero has no rollout, so no lead time, until it serves again; and each site's Prometheus sees
    its own pods only, so a chain whose stages run at another site records nothing here (`alicerce plan` says so
    beside the target)."""
    teams = {t.name for t in site.teams}
    team_of = {w.name: w.team for w in rp.spec.workloads}
    served = {name: stages for name, stages in model_chains(rp.spec.workloads).items() if team_of[name] in teams}
    if not served:
        return []
    stages = sorted({stage for chain in served.values() for stage in chain})
    names = "|".join(stages)
    # a run is its Job's uid (the controller-uid label the Job controller puts on its pods, which kube-state-metrics'
    # allowlist keeps): kube-state-metrics' Job series carry only the name, and a Job re-created under its name (a
    # fixed-name data-prep Job re-run, `kubectl replace --force`) overwrote the run that fed the served model (review
    # obsreview23 F3). The pods' map is the many side: a new Job's pods beside the old one's terminating ones is two
    # runs of one name for a moment, not a failed match
    run = _as("run_uid", ksm_label(JOB_UID_LABEL), f'kube_pod_labels{{{WORKLOAD_POD_LABEL}=~"{names}"}}')
    labelled = _as("workload", WORKLOAD_POD_LABEL, run)
    owned = 'label_replace(kube_pod_owner{owner_kind="Job"}, "job_name", "$1", "owner_name", "(.+)")'
    key = "namespace, job_name"
    by = f"{key}, workload, run_uid"
    job_pods = f"max by (namespace, pod, workload, run_uid) ({labelled})"
    link = f"max by ({by}) ({owned} * on (namespace, pod) group_left (workload, run_uid) {job_pods})"
    ended = f"{link} * on ({key}) group_left () max by ({key}) (kube_job_status_completion_time)"
    started = f"({link} * on ({key}) group_left () max by ({key}) (kube_job_status_start_time)) and on ({by}) ({ended})"
    rules = [
        _rule(STAGE_RUN_END, _remembered(STAGE_RUN_END, f"({ended})", by, RUN_REMEMBERED_SECONDS)),
        _rule(STAGE_RUN_START, _remembered(STAGE_RUN_START, f"({started})", by, RUN_REMEMBERED_SECONDS)),
        _rule(SERVING_REVISION_PODS, _revision_pods(sorted(served))),
        _rule(SERVING_READY_SINCE, _revision_since()),
        _rule(SERVING_ROLLOUT, f"min by (namespace, workload) ({SERVING_READY_SINCE})"),
    ]
    inputs = {w.name: tuple(w.inputs) for w in rp.spec.workloads}
    for workload, chain in sorted(served.items()):
        mine = f'{CHAIN_STAGE_START}{{workload="{workload}"}}'
        rules.append(
            _rule(CHAIN_STAGE_START, f'max({SERVING_ROLLOUT}{{workload="{workload}"}})', {"workload": workload, "stage": workload})
        )
        for stage in chain:
            consumers = "|".join(c for c in (workload, *chain) if stage in inputs.get(c, ()))
            before = f'min({CHAIN_STAGE_START}{{workload="{workload}",stage=~"{consumers}"}})'
            latest = f'topk(1, {STAGE_RUN_END}{{workload="{stage}"}} <= on () group_left () {before})'
            start = f'max({STAGE_RUN_START}{{workload="{stage}"}} and on ({key}, run_uid) {latest})'
            rules.append(_rule(CHAIN_STAGE_START, start, {"workload": workload, "stage": stage}))
        every = f"(count({mine}) == {len(chain) + 1})"
        lead = f'max({CHAIN_STAGE_START}{{workload="{workload}",stage="{workload}"}}) - min({mine}) and on () {every}'
        rules.append(_rule(LEAD_TIME, lead, {"workload": workload}))
    return rules


def _tier_rules(rp: ResolvedPlatform, site: ResolvedSite) -> list[dict[str, Any]]:
    """A site's tier KPIs: from its nodes' client counters, or from the cloud's metrics of its file systems."""
    cloud = cloud_metric_tiers(rp, site)
    exporter = site.capabilities.storage_metrics
    rules = storage_tier_rules() if counted_tiers(site) else []
    return rules + (cloud_tier_rules(exporter, cloud) if cloud and exporter is not None else [])


def kpi_groups(rp: ResolvedPlatform, site_name: str, *, reservations: bool = False) -> list[dict[str, Any]]:
    """The KPI rule groups of a site; every recorded series carries the site's name. ``reservations``: whether the
    site's cost rules record RESERVED_GPUS."""
    site = rp.site(site_name)

    def group(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
        sited = [r if r["record"].startswith(COUNT_PART) else {**r, "labels": {**r.get("labels", {}), "site": site_name}} for r in rules]
        return {"name": name, "rules": sited}

    return [
        group("alicerce.kpi.joins", join_rules(rp, site)),
        group("alicerce.kpi.gpu", gpu_rules() + utilisation_rules(reservations=reservations)),
        group("alicerce.kpi.queue", queue_rules()),
        group("alicerce.kpi.jobs", job_rules()),
        group("alicerce.kpi.serving", serving_rules()),
        group("alicerce.kpi.lead_time", lead_time_rules(rp, site)),
        group("alicerce.kpi.node", node_rules(site)),
        group("alicerce.kpi.storage", _tier_rules(rp, site)),
    ]
