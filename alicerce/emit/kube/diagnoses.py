"""Correlated diagnoses: alerts that say why GPUs are not doing useful work, and SLO burn-rate alerts.

Each reads the KPI series of :mod:`alicerce.emit.kube.kpi` and carries a runbook line (its description). Every
one has promtool tests (tests/emit/kube/test_diagnoses.py) with a series that reproduces its pattern and a
near miss that must stay quiet. Thresholds are chosen so that a GPU in a normal state never matches two
diagnoses at once: input-bound needs reads to dominate, a checkpoint stall writes; memory-bound needs kernels
running, communication-bound a busy fabric.

SLO burn rates follow the multi-window, multi-burn-rate alerts of Google's SRE workbook ("Alerting on SLOs"):
over a 30-day budget, page when 2% of it burns in an hour (14.4x over 1h and 5m) or 5% in six hours (6x over
6h and 30m), ticket when 10% burns in three days (1x over 3d and 6h), each once the long window holds ten slow or
failed requests' worth of bad events (the workbook's low-traffic advice: one slow request at night is no burn), or,
where the traffic is too low for ten to fit the budget, what the window holds at its burn rate (two at least). A latency SLI counts
requests slower than the SLO's threshold, read at the largest bucket of the engine's histogram not above it.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from alicerce.catalog.alerts import (
    BORROWING_MISCONFIGURED,
    CHECKPOINT_STALL,
    CLUSTER_QUEUE_INACTIVE,
    COMMUNICATION_BOUND,
    FABRIC_CONGESTED,
    INFERENCE_POD,
    INPUT_BOUND,
    MEMORY_BOUND,
    TPOT,
    TTFT,
    Alert,
    ServingSlo,
    serving_slos,
    slo_burn_fast_alert_name,
    slo_burn_slow_alert_name,
)
from alicerce.emit.kube.costs import BUDGET_EXHAUSTED, FIRST_MARK, HISTORY_START, HOLD_RELEASE_GRACE
from alicerce.emit.kube.kpi import (
    GPU_DRAM,
    GPU_FB,
    GPU_TENSOR,
    GPU_UTIL,
    NODE_DATA_WAIT,
    NODE_IB_UTIL,
    NODE_IB_WAIT,
    NODE_IO_PRESSURE,
    NODE_METADATA_WAIT,
    NODE_READ,
    NODE_WRITE,
    SERVING_WORKLOAD_LABEL,
    api_request_rate,
    histogram_rate,
    kueue_series,
)
from alicerce.emit.kube.kueue import cluster_queue
from alicerce.emit.storage_counters import counted_tiers, fabric_wait_pools
from alicerce.plan.kpi import checkpoint_stall_seconds
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.spec.models import Workload
from alicerce.spec.units import parse_duration

HELD = f'{GPU_UTIL}{{pod!=""}}'
# 1 while a team's ClusterQueue admits (Kueue's status gauge, one per queue and status), 0 while stopped or pending
_ACTIVE = kueue_series("kueue_cluster_queue_status", 'status="active"')
QUEUE_ACTIVE = f'label_replace(max by (cluster_queue) ({_ACTIVE}), "team", "$1", "cluster_queue", "(.+)")'
NODE_HELD = f"avg by (node, pool) ({HELD})"  # mean utilisation of the GPUs pods hold on a node
# PSI: some task of the node waited on IO a quarter of the time. PSI's io state counts tasks asleep with in_iowait set
# (kernel/sched/stats.h psi_dequeue/psi_enqueue, TSK_IOWAIT), i.e. in io_schedule(): a reader waiting on a data page of
# any file system, NFS and Lustre included (mm/filemap.c waits on the folio lock through io_schedule). An NFS RPC for
# metadata (GETATTR, LOOKUP, OPEN) sleeps in plain schedule() (net/sunrpc/sched.c rpc_wait_bit_killable, every stable
# version read), so a metadata-bound loader shows no IO pressure (review obsreview21 F11). Where the tiers' clients
# count their mounts (on-prem Lustre and NFS), they time each call: a node whose calls wait on metadata more than on
# data, one call or more at every moment on average, is metadata-bound. FSx and EFS through CSI drivers and BeeGFS
# report no such time per node (CloudWatch's metadata operations are per file system, with no limit alicerce knows to
# compare them with): the runbook says so
IO_SATURATED = 0.25
METADATA_WAITING = 1.0  # seconds of metadata calls per second on the node: one waiting at every moment
# seconds of read, write and fsync calls per second on the node: one in flight at every moment. A Lustre writer waits
# for its OSC's dirty cache or grant in osc_enter_cache (osc/osc_cache.c, l_wait_event on the cache waiter) and fsync
# for the flushed pages in cl_sync_io_wait (obdclass/cl_io.c, wait_event_idle): neither is io_schedule(), so a
# checkpoint stalled on Lustre raises little IO pressure while its calls wait (review obsreview27 G6). The client's
# llite stats time those calls (alicerce_storage_stats.py LUSTRE_DATA), which is what the stall reads where the tiers'
# clients are counted. FSx for Lustre through its CSI driver has no such per-node time: the runbook says so
DATA_WAITING = 1.0
LINK_BUSY = 0.6  # a port transmitting over 60 % of its line rate
# a port that had data to send and sent none a fifth of the time or more (PortXmitWait): its peer gave it no credits,
# a switch port downstream is congested. A healthy all-reduce at line rate waits a few per cent; a link busy above
# LINK_BUSY is GPUCommunicationBound's (bandwidth), one waiting while it moves little is congestion's
PORT_WAITING = 0.2


def _lnet_first(site: ResolvedSite) -> str:
    """The runbook's first check where the site's Lustre runs LNet over the same InfiniBand HCAs (NIDs @o2ib): a
    checkpoint burst to a few OSS links (incast) makes the clients' ports wait for credits while the step loop blocks,
    which reads as fabric congestion beside TrainingCheckpointStall (review obsreview26 N-A)."""
    o2ib = [t.name for t in site.storage if (m := t.mounts.get(site.name)) is not None and m.kind == "lustre" and "@o2ib" in m.source]
    if not o2ib:
        return ""
    return (
        f" First rule out storage: {', '.join(o2ib)} runs LNet over these HCAs, so a checkpoint burst to a few Lustre "
        "OSS links makes the clients' ports wait too; check TrainingCheckpointStall on the node and the OSS load "
        "(lctl get_param obdfilter.*.stats on the servers) before the switches."
    )


def _checkpoint_for(rp: ResolvedPlatform) -> str:
    return f"{int(checkpoint_stall_seconds(rp))}s"


# How long a team's ClusterQueue stays inactive before KueueClusterQueueInactive: 30 minutes (a Kueue restart or a
# flavor re-created in a sync is over by then) and, for a queue a budget guard may hold, 45 more: the hour the month so
# far, BUDGET_EXHAUSTED, may lag the guard's hold. The guard holds within 15 minutes of the hour mark that takes the
# spend past the share; the hour-mark group records it up to an hour after that mark (Prometheus runs it at an offset
# within the hour, rules/group.go EvalTimestamp), and its readers a minute or two later: a hold is 62 minutes old at
# most when its budget shows. A queue no guard holds has no such lag: serving's, whose stop blocks every replacement
# replica (Kueue admits each serving pod), waited 75 minutes too (review obsreview25 N6)
QUEUE_INACTIVE_FOR = "30m"
GUARDED_QUEUE_INACTIVE_FOR = "75m"
_HOLD_LAG = "45m"  # GUARDED_QUEUE_INACTIVE_FOR - QUEUE_INACTIVE_FOR: a guarded queue inactive that long before `for`
# Kueue's reasons for a ClusterQueue's Active condition False (v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go 37-47,
# pkg/cache/scheduler/clusterqueue.go inactiveReason; vendored in tests/data/upstream/kueue/0.19.2/metrics.json)
INACTIVE_REASONS = ("Stopped", "FlavorNotFound", "AdmissionCheckNotFound", "AdmissionCheckInactive", "TopologyNotFound", "Terminating")


# how far back a guarded queue is looked at for a minute it admitted under this month's truncated history: the longest
# month, at the step of the status gauge's own window (each step reads every sample of the 10 minutes before it)
_TRUNCATED_MONTH = "31d"
_SEEN_STEP = "10m"
# the start of the calendar month (UTC) of the evaluation time: the month's first hour mark (costs.FIRST_MARK) less an hour
_MONTH_START = f"({FIRST_MARK} - 3600)"


def kept_hold(held: list[str]) -> str:
    """The guarded queues ``held`` that may be a hold the budget guard keeps under a truncated month: while the month's
    history is truncated (HISTORY_START, CostHistoryTruncated) the guard keeps a hold it set this month whatever the
    under-counted month says, so the budget record cannot tell its hold (review obsreview25 N5). Only a queue stopped
    without a break since before the truncation began can be one: a queue seen admitting while this month's history was
    already truncated was released, and a new hold under a truncated month needs the under-counted spend past the
    share, which BUDGET_EXHAUSTED reads too (its own mute). Any other stop of such a queue (a ResourceFlavor gone,
    FlavorNotFound) is reported (review obsreview26 G-A). The minute it admitted is the subquery's step time, kept
    when the step falls in this month (the previous month's truncation says nothing of this month's holds)."""
    status = kueue_series("kueue_cluster_queue_status", f'cluster_queue=~"{"|".join(held)}"', 'status="active"')
    admitted = f"(max by (cluster_queue) (max_over_time({status}[{_SEEN_STEP}])) == 1) * 0 + time() and on () max({HISTORY_START})"
    seen = f"max_over_time(({admitted})[{_TRUNCATED_MONTH}:{_SEEN_STEP}]) > {_MONTH_START}"
    truncated = f"max by (cluster_queue) (last_over_time({status}[10m])) and on () max({HISTORY_START})"
    return f"(({truncated}) unless on (cluster_queue) ({seen}))"


def cluster_queue_inactive(rp: ResolvedPlatform, site_name: str, guarded: frozenset[str]) -> list[Alert]:
    """A team's ClusterQueue that admits nothing (Kueue reports it pending or terminating: kueue_cluster_queue_status
    {status="active"} 0, v0.19.2 pkg/metrics/metrics.go 51-67) for QUEUE_INACTIVE_FOR, unless its budget guard holds it
    with the team's budget spent (``guarded``: teams whose BUDGET_EXHAUSTED is recorded). Every other stop left the
    team's jobs pending for days with no alert: a Hold set by hand and forgotten, a guard's hold left behind when the
    budget was removed, a ResourceFlavor or AdmissionCheck the queue names gone (review obsreview24 F1)."""
    site = rp.site(site_name)
    queues = sorted(t.name for t in site.teams if cluster_queue(rp, site, t) is not None) if rp.spec.operators.kueue.enabled else []
    if not queues:
        return []

    # a team's ClusterQueue carries its name (alicerce.emit.kube.kueue.cluster_queue); its last sample within 10
    # minutes, so a failed scrape or a Kueue leader's failover does not restart the wait
    def active(names: list[str]) -> str:
        status = kueue_series("kueue_cluster_queue_status", f'cluster_queue=~"{"|".join(names)}"', 'status="active"')
        return f"max by (cluster_queue) (last_over_time({status}[10m]))"

    held = sorted(guarded & set(queues))
    free = [q for q in queues if q not in held]
    parts = [f"{active(free)} == 0"] if free else []
    # a guarded queue: inactive at every minute's step of the hold's lag before `for` starts counting (the same 75 minutes in
    # all), and not where it may be a hold the guard keeps under a truncated month (kept_hold)
    lag = int(parse_duration(_HOLD_LAG)) // 60  # each minute's step of the lag inactive (a count: data that began
    # within the lag is not yet that long inactive)
    waited = f"sum_over_time(({active(held)} == bool 0)[{_HOLD_LAG}:1m]) >= {lag}"
    parts += [f"{waited} unless on (cluster_queue) {kept_hold(held)}"] if held else []
    expr = f'label_replace({" or ".join(f"({p})" for p in parts)}, "team", "$1", "cluster_queue", "(.+)")'
    if held:
        expr += f" unless on (team) max_over_time({BUDGET_EXHAUSTED}[{HOLD_RELEASE_GRACE}])"
    return [Alert(CLUSTER_QUEUE_INACTIVE, expr, QUEUE_INACTIVE_FOR, "warning",
                  "ClusterQueue {{ $labels.cluster_queue }} admits no workload",
                  "Kueue reports the team's queue inactive, and no budget guard's hold on a spent budget explains it: its "
                  "jobs wait whatever the quota. "
                  "`kubectl get clusterqueue {{ $labels.cluster_queue }} -o jsonpath='{.status.conditions}'`: the Active "
                  f"condition's reason says why ({', '.join(INACTIVE_REASONS)}; Stopped is a stopPolicy Hold or "
                  "HoldAndDrain). A Hold the budget guard set when a budget it no longer watches was spent carries the "
                  "annotation alicerce.dev/budget-hold: set spec.stopPolicy None (not while CostHistoryTruncated fires: the guard "
                  "keeps this month's holds then, and a guarded queue stopped since before the truncation began is not "
                  "reported); re-create a missing ResourceFlavor or "
                  "AdmissionCheck, or remove it from the queue.")]  # fmt: skip


def diagnoses(rp: ResolvedPlatform, site_name: str, guarded: frozenset[str] = frozenset()) -> list[Alert]:
    # Not on an inference server (INFERENCE_POD: a pod the serving PodMonitor scrapes, up or not yet, as /metrics binds
    # once the model is loaded; and the workers of a LeaderWorkerSet group, which serve no metrics, review obsreview6
    # G8): vLLM preallocates most of the memory for its KV cache and decode is memory-bound by nature, so a busy one
    # matched the memory-bound diagnosis every night (review obsreview2 GAP 3); and an inference node pulling an image or
    # a model (write-heavy, IO pressure) while its replicas idle at night matched the checkpoint stall (review obsreview3
    # G21). The input-bound and checkpoint diagnoses read only the GPUs training (non-serving) pods hold
    serving = INFERENCE_POD
    trained = f"({HELD} unless on (namespace, pod) {serving})"
    node_trained = f"avg by (node, pool) ({trained})"
    reads = f"({NODE_IO_PRESSURE} > {IO_SATURATED}) and on (node) ({NODE_READ} >= {NODE_WRITE})"
    metadata = f"({NODE_METADATA_WAIT} >= {METADATA_WAITING}) unless on (node) ({NODE_DATA_WAIT} > {NODE_METADATA_WAIT})"
    waits = f"({reads}) or ({metadata})" if counted_tiers(rp.site(site_name)) else reads
    input_bound = f"({node_trained} < 0.4) and on (node) ({waits})"
    # a stall is a drop: a training pod on the node NOW was busy within the last two hours. A pod starting on a fresh
    # node holds its GPUs at 0% from admission (the device plugin allocates them before the image pull) while
    # containerd writes the unpacked image under IO pressure: write-heavy, idle, and no checkpoint (review obsreview9
    # N1). Per pod, not per node: the job that left the node an hour ago is no history of the one unpacking now
    # (review obsreview10 F1; dcgm-exporter labels each pod's GPUs, a new pod a new series)
    pod_trained = f"avg by (node, namespace, pod) ({trained})"
    was_busy = f"(max_over_time(({pod_trained})[2h:1m]) > 0.3 and on (node, namespace, pod) {pod_trained})"
    # the node waits on its writes: IO pressure, or, where the tiers' clients time their calls, a data call in flight
    # at every moment (a Lustre write or fsync stall, which PSI does not count; the write share tells it from reads)
    pressure = f"({NODE_IO_PRESSURE} > {IO_SATURATED})"
    writing = f"({pressure} or ({NODE_DATA_WAIT} >= {DATA_WAITING}))" if counted_tiers(rp.site(site_name)) else pressure
    stall = f"({node_trained} < 0.1) and on (node) {writing} and on (node) ({NODE_WRITE} > {NODE_READ}) and on (node) {was_busy}"
    # memory-bound: the memory interface busy most cycles while the tensor cores wait, memory near full (a decode-like
    # job). GPU_UTIL and the graphics engine stay near 100% on such a job (a kernel is always running): they cannot
    # tell it from a compute-bound one (review T2), the DRAM and tensor pipes can.
    memory = (
        f'count by (namespace, pod, node) (({GPU_FB} > 0.9) and ({GPU_DRAM}{{pod!=""}} > 0.6) and ({GPU_TENSOR} < 0.2)) > 0 '
        f"unless on (namespace, pod) {serving}"
    )
    # communication-bound reads the fabric's port counters: only pools whose ports' traffic reaches Prometheus
    # (InfiniBand and RoCE through the node exporter, EFA through alicerce's writer of its hw_counters:
    # alicerce.resolve.model.RdmaAttachment.traffic_counters), or it is a diagnosis that can never fire
    counted = sorted(p.name for p in rp.site(site_name).pools if p.gpu is not None and p.rdma is not None and p.rdma.traffic_counters)
    pools = f'pool=~"{"|".join(counted)}"'
    comms = (
        f'(avg by (node, pool) ({GPU_TENSOR}{{pod!="",{pools}}}) < 0.15) and on (node) ({NODE_HELD} > 0.8) '
        f"and on (node) ({NODE_IB_UTIL} > {LINK_BUSY})"
    )
    # communication-bound on a congested fabric: GPUs held, tensor cores idle, a port of the node waiting for credits
    # while it moves less than LINK_BUSY of its line rate (which GPUCommunicationBound covers), read from the collector
    # that owns PortXmitWait (alicerce.emit.storage_counters.fabric_wait_pools). Whatever the GPUs' utilisation: NCCL's
    # kernels spinning on a stalled transfer keep it high, a step loop that waits on the collective outside its kernels
    # lets it fall; a port waits only while its own node sends, so the wait itself says the job is the one stalled
    waited = sorted(set(counted) & set(fabric_wait_pools(rp.site(site_name))))
    congested = (
        f'(avg by (node, pool) ({GPU_TENSOR}{{pod!="",pool=~"{"|".join(waited)}"}}) < 0.15) '
        f"and on (node) ({NODE_IB_WAIT} > {PORT_WAITING}) unless on (node) ({NODE_IB_UTIL} > {LINK_BUSY})"
    )
    # what sits idle in the cohort on each pool: quotas minus all use, borrowed GPUs included (a borrower's usage above
    # its quota is a lender's quota in use); a lender's own quota minus its own usage would count lent GPUs as idle.
    # Only active queues: a stopped one (a budget guard's Hold) neither admits nor lends (Kueue v0.19.2 reports it
    # pending, pkg/metrics/metrics.go CQStatusPending), so its wait is the budget's and its idle quota nobody's
    # (review obsreview2 DEFECT 2); a queue inactive for any other reason is KueueClusterQueueInactive's (obsreview24 F1)
    quota = f"(team_pool:kueue_gpu_quota:sum and on (team) ({QUEUE_ACTIVE} == 1))"
    idle = f"clamp_min({quota} - team_pool:kueue_gpu_usage:sum, 0)"
    cohort = f"clamp_min(sum by (pool) ({quota}) - sum by (pool) (team_pool:kueue_gpu_usage:sum), 0)"
    # per pool (Kueue's flavor), never summed over pools: the pending GPUs carry no flavor (kueue_cluster_queue_resource_
    # pending, v0.19.2 pkg/metrics/metrics.go), and a p5 training job waiting beside idle L40S quota is no borrowing
    # problem (its node affinity and EFA keep it off them), nor do 8 idle p5 and 8 idle L40S hold a 16-GPU job (review
    # obsreview9 G1). A pool counts where the team has used up its own quota: that is where it needs to borrow, and a
    # pool with its own quota idle is not the one its pending job asks for (the job would be admitted there)
    others = f"clamp_min({idle} * 0 + on (pool) group_left () {cohort} - {idle}, 0)"
    wanted = "(team_pool:kueue_gpu_usage:sum >= on (team, pool) team_pool:kueue_gpu_quota:sum)"
    # with two pools used up, the proxy cannot tell which one the pending job asks for (a p5 job pinned to a full
    # train-p5 beside the team's full L40S and serving's idle ones: review obsreview10 F4): it says nothing then
    pending = f"max by (team) (team:kueue_gpus_pending:sum) and on (team) ({QUEUE_ACTIVE} == 1)"
    # ... and the pending GPUs are that pool's only where the team's own idle quota on each of its other pools could
    # hold them (Kueue admits a workload whole on one flavor: one that fits its own quota there would run). A 16-GPU p5
    # job beside 8 p5 of its own left and a full L40S quota could be either's: said nothing of, where serving's idle L40S
    # were blamed for it (review obsreview24 F10)
    elsewhere = f"count by (team) ((({idle}) unless on (team, pool) {wanted}) < on (team) group_left () {pending}) > 0"
    single = f"({wanted} unless on (team) (count by (team) ({wanted}) > 1) unless on (team) ({elsewhere}))"
    others_idle = f"max by (team) ({others} and on (team, pool) {single})"
    borrowing = f"({pending} > 0) and on (team) ({others_idle} >= on (team) {pending})"

    # per namespace holding GPUs on the node: a team's receiver gets its pods' alerts by namespace, and a node-level
    # diagnosis without one reached only the platform team (review obsreview2 GAP 10)
    def held_by(expr: str, held: str = HELD) -> str:
        return f"0 * max by (node, namespace) ({held}) + on (node) group_left (pool) ({expr})"

    input_bound, stall, comms, congested = held_by(input_bound, trained), held_by(stall, trained), held_by(comms), held_by(congested)
    alerts = [
        Alert(INPUT_BOUND, input_bound, "15m", "warning",
              "GPUs on {{ $labels.node }} ({{ $labels.pool }}) wait for input data",
              "GPUs held by pods run under 40% while the node waits on storage: on reads (IO pressure) raise the "
              "dataset tier's throughput, add data-loader workers or prefetch, or stage the dataset on local NVMe; on "
              "metadata (open, stat, lookup of many small files: node:storage_client_metadata_wait_seconds:rate5m, "
              "counted where the tier's client counts its mount, not through FSx or EFS CSI drivers or BeeGFS) pack "
              "small files into shards (WebDataset, TFRecord) and cache the file list."),
        Alert(MEMORY_BOUND, memory, "30m", "warning",
              "Pod {{ $labels.namespace }}/{{ $labels.pod }} is memory-bound: GPU memory busy, tensor cores idle",
              "Over 90% of GPU memory in use, the memory interface busy over 60% of cycles and tensor cores under 20% "
              "active: the job is memory-bound (bandwidth, not compute); batch more tokens per step (larger batches, "
              "fused kernels), quantise weights or the KV cache, or use GPUs with more memory bandwidth."),
        Alert(COMMUNICATION_BOUND, comms, "30m", "warning",
              "GPUs on {{ $labels.node }} ({{ $labels.pool }}) are busy communicating, not computing",
              "Kernels run but tensor cores are under 15% active while the fabric runs above 60% of line rate: "
              "the job is communication-bound and will not scale further; check NCCL rails and GPUDirect RDMA, "
              "overlap communication with compute, or use fewer nodes."),
        Alert(FABRIC_CONGESTED, congested, "30m", "warning",
              "GPUs on {{ $labels.node }} ({{ $labels.pool }}) are communication-bound: the fabric is congested",
              "Tensor cores are under 15% active while a fabric port of the node waits for credits over 20% of the "
              "time yet moves less than 60% of its line rate (PortXmitWait: node:infiniband_transmit_wait:max_ratio): "
              f"the congestion is in the fabric, not the job.{_lnet_first(rp.site(site_name))} Confirm it with "
              "ibdiagnet's congestion report (its xmit_wait per port) before moving jobs: the wait share is an "
              "estimate that reads a port reporting Tick 7 as NVIDIA's Quantum switches count (a tick per 8 bytes of "
              "the port; if the HCA counts per lane the share is 4x low at 4X HDR and NDR), and the 20% threshold has "
              "no published source. Find the port and its switch path (ibdiagnet congestion report, perfquery -x on the "
              "switch ports), check for an oversubscribed or unbalanced leaf-spine path, "
              "a slow or flapping link on the path, adaptive routing and the subnet manager's routing engine, and "
              "other jobs sharing the same switches; place the job's nodes under fewer leaves (topology-aware placement)."),
        Alert(CHECKPOINT_STALL, stall, _checkpoint_for(rp), "warning",
              "Training on {{ $labels.node }} ({{ $labels.pool }}) stalls on checkpoint writes",
              "GPUs idle while the node waits on writes for longer than the checkpoint stall budget: checkpoint "
              "asynchronously or to local NVMe first, or raise the checkpoint tier's throughput (`alicerce plan --explain`). "
              "Read as IO pressure, or where the tier's client times its calls (on-prem Lustre and NFS) as a data call in "
              "flight at every moment (node:storage_client_data_wait_seconds:rate5m): a Lustre writer waiting for grant or "
              "dirty cache, or an fsync, shows no IO pressure, so on FSx for Lustre, which has no per-node timings, such a "
              "stall can stay silent: check the file system's CloudWatch write throughput against its limit."),
        Alert(BORROWING_MISCONFIGURED, borrowing, "30m", "warning",
              "Team {{ $labels.team }} queues while other teams' GPU quota sits idle",
              "Its pending GPUs would fit in the idle quota of its cohort: check the team's borrowingLimit, the "
              "other teams' lendingLimit, and that fair sharing and preemption are on."),
    ]  # fmt: skip
    alerts = [a for a in alerts if (a.name != COMMUNICATION_BOUND or counted) and (a.name != FABRIC_CONGESTED or waited)]
    return alerts + cluster_queue_inactive(rp, site_name, guarded)


def _selector(slo: ServingSlo, team_namespaces: tuple[str, ...]) -> str:
    return f'{SERVING_WORKLOAD_LABEL}="{slo.workload}",namespace=~"{"|".join(team_namespaces)}"'


def le_matcher(bound: float) -> str:
    """A ``le`` matcher for one bucket bound, whichever way the exporter spelt it (vLLM writes 1.0, Go clients 1;
    Prometheus 3 may store either)."""
    spellings = sorted({repr(bound), f"{bound:g}"})
    return "|".join(s.replace(".", "\\\\.") for s in spellings)


def _rates_at(histogram: str, selector: str, bound: float, window: str) -> tuple[str, str]:
    """Per second over ``window``: a histogram's observations at or under one of its bucket bounds, and all of them."""
    at_bound = f'{selector},le=~"{le_matcher(bound)}"'
    good = f"sum({histogram_rate(histogram, 'bucket', at_bound, window)})"
    total = f"sum({histogram_rate(histogram, 'count', selector, window)})"
    return good, total


def share_above(histogram: str, selector: str, bound: float, window: str) -> str:
    """The share of a histogram's observations above one of its bucket bounds over ``window``: exact at a bound."""
    good, total = _rates_at(histogram, selector, bound, window)
    return f"1 - {good} / {total}"


def latency_bad_ratio(slo: ServingSlo, team_namespaces: tuple[str, ...], window: str) -> str:
    """Requests (token intervals) slower than the SLO's threshold, a bound of the histogram (AL360)."""
    return share_above(slo.metric, _selector(slo, team_namespaces), slo.bound, window)


def _server_error_ratio(slo: ServingSlo, team_namespaces: tuple[str, ...], window: str) -> str:
    """API requests the serving pods answered with a server error (alicerce.emit.kube.kpi.SERVER_ERRORS; a streamed
    response that fails after it started went out as 200 and is not one: the limit is said there)."""
    sel = _selector(slo, team_namespaces)
    requests = f"sum({api_request_rate(sel, window)})"
    # no 5xx series before the first server error: the ratio is 0 then, not absent (the SLO's panel read "No data")
    return f"(sum({api_request_rate(sel, window, errors=True)}) or 0 * {requests}) / {requests}"


WINDOWS = ("5m", "30m", "1h", "6h", "3d")
SLI = "slo:sli_error:ratio_rate{}"
EVENTS = "slo:sli_events:rate{}"  # what the SLI counts (requests, or token intervals), per second over the window
SECONDS = {"1h": 3600, "6h": 6 * 3600, "3d": 72 * 3600}
# the fewest slow or failed requests a burn window must hold before it pages or tickets: at night one slow long-prompt
# request in six reads as a 17% error ratio and paged oncall (review obsreview9 G3; the SRE workbook's "Alerting on
# SLOs", low-traffic services: a minimum count of bad events). Ten is no statistical noise, and any real trouble at
# night reaches it within the window (0.1 requests/s for an hour is 360 requests)
MIN_BAD_REQUESTS = 10
# ...but never more than a window holds at the alert's own burn rate, at the last three days' traffic, and never fewer
# than two (one slow request is still no page). At 3 requests an hour the month's whole budget (99.5%) is 10.8 slow
# requests: a floor of ten in every window let a service miss its SLO all month unalerted (review obsreview22 F1). The
# SRE workbook ("Alerting on SLOs", low-traffic services) keeps a count floor only where it stays below what the SLO
# allows; the three-day rate keeps the floor at ten through a busy service's quiet night.
LOW_TRAFFIC_BAD_REQUESTS = 2
FAST_BURN = 14.4  # the page's burn rate over 1 h: 2% of a 30-day budget


def _events(slo: ServingSlo, team_namespaces: tuple[str, ...], window: str) -> str:
    """Per second over ``window``: the requests (or token intervals) the SLI's ratio is a share of."""
    sel = _selector(slo, team_namespaces)
    if slo.kind == "inference-latency":
        return f"sum({histogram_rate(slo.metric, 'count', sel, window)})"
    return f"sum({api_request_rate(sel, window)})"


def _intervals_per_request(slo: ServingSlo, workload: Workload) -> int:
    """The SLI's events a request brings: a time per output token counts token intervals, one per generated token after
    the first; the rest count requests."""
    return max(1, workload.traffic.output_tokens - 1) if slo.metric == TPOT and workload.traffic is not None else 1


def _burn(name: str, budget: float, per_request: int, windows: tuple[str, str], factor: float) -> str:
    """SLO ``name``'s ratio over both ``windows`` (long, short) past ``factor`` x budget, and in the long window at
    least MIN_BAD_REQUESTS requests' worth of bad events (fewer, down to LOW_TRAFFIC_BAD_REQUESTS, where the window
    holds fewer at this burn rate at the three-day traffic): for a time per output token ten requests with the page's share
    of slow intervals each (10 x 299 x 14.4 x 0.01 = 431 for chat-70b), in every window, so one request slow
    throughout (299) never pages or tickets; ten all-slow requests (2,990) let forty users with a fifth of their tokens
    slow for an hour page nobody (review obsreview10 F2)."""
    long, short = windows
    limit = f"{factor * budget:.6g}"
    bad = f'{SLI.format(long)}{{slo="{name}"}} * {EVENTS.format(long)}{{slo="{name}"}} * {SECONDS[long]}'
    floor = _bad_event_floor(name, budget, per_request, SECONDS[long] * factor * budget)
    return f'({SLI.format(long)}{{slo="{name}"}} > {limit} and {SLI.format(short)}{{slo="{name}"}} > {limit} and ({bad}) >= {floor})'


def _bad_event_floor(name: str, budget: float, per_request: int, share_seconds: float) -> str:
    """The fewest bad events a window must hold: what it holds at the three-day traffic (``share_seconds``: the window's
    seconds times the share of bad events the alert stands for), between LOW_TRAFFIC_BAD_REQUESTS and MIN_BAD_REQUESTS
    requests' worth (a time per output token's requests bring ``per_request`` events each)."""
    share = min(1.0, FAST_BURN * budget)

    def requests(count: int) -> int:
        return count if per_request == 1 else math.ceil(count * max(1.0, per_request * share))

    at_limit = f'{EVENTS.format("3d")}{{slo="{name}"}} * {share_seconds:.6g}'
    high = requests(MIN_BAD_REQUESTS)
    # and more than one request slow throughout (a time per output token's intervals), as the high floor is
    low = min(high, max(requests(LOW_TRAFFIC_BAD_REQUESTS), per_request * (LOW_TRAFFIC_BAD_REQUESTS - 1) + 1))
    return f"clamp({at_limit}, {low}, {high})"


LATENCY_TICKET_SECONDS = 300  # the window a latency SLO's percentile is stated over (SLO<Name>)


def latency_ticket(slo: ServingSlo, workload: Workload, team_namespaces: tuple[str, ...]) -> str:
    """The share of the workload's requests slower than the threshold over 5 minutes above what the percentile allows
    (exactly "the p99 is above the threshold"), with at least the slow requests the window holds at that share at the
    three-day traffic, between two and ten as the burn pair's floor: at night 20 requests in 5 minutes make the slowest
    one the p99, and two slow long-prompt requests a few minutes apart ticketed a busy service (review obsreview34
    N-4). A service that always serves that little keeps a floor of two: its p99 is what it serves."""
    ratio = latency_bad_ratio(slo, team_namespaces, "5m")
    good, total = _rates_at(slo.metric, _selector(slo, team_namespaces), slo.bound, "5m")
    slow = f"({total} - {good}) * {LATENCY_TICKET_SECONDS}"
    floor = _bad_event_floor(slo.name, slo.error_budget, _intervals_per_request(slo, workload), LATENCY_TICKET_SECONDS * slo.window_budget)
    return f"({ratio}) > {slo.window_budget:.6g} and on () ({slow} >= on () {floor})"


def slo_burn(rp: ResolvedPlatform, site: ResolvedSite) -> tuple[list[dict[str, Any]], list[Alert]]:
    """Recording rules of each serving SLO's error ratio over the burn-rate windows, and its two alerts: the declared
    ones and those a workload's ``latency:`` targets imply (alicerce.catalog.alerts.serving_slos). Only where the
    workload's team is: another site's Prometheus never scrapes its pods."""
    teams = {t.name: t for t in site.teams}
    workloads = {w.name: w for w in rp.spec.workloads}
    records: list[dict[str, Any]] = []
    alerts: list[Alert] = []
    for slo in serving_slos(rp.spec):
        workload = workloads.get(slo.workload)
        team = teams.get(workload.team) if workload is not None else None
        if workload is None or team is None:
            continue
        ratio = latency_bad_ratio if slo.kind == "inference-latency" else _server_error_ratio
        labels = {"slo": slo.name, "workload": slo.workload}
        records += [{"record": SLI.format(w), "expr": ratio(slo, team.namespaces, w), "labels": labels} for w in WINDOWS]
        records += [{"record": EVENTS.format(w), "expr": _events(slo, team.namespaces, w), "labels": labels} for w in SECONDS]
        budget = slo.error_budget
        burn = functools.partial(_burn, slo.name, budget, _intervals_per_request(slo, workload))

        stated = f"{budget:.3g} of them may be slower"
        if slo.kind == "availability":  # the engine's count: a failure in front of it reaches no engine (obsreview22 F11)
            stated = f"{budget:.3g} of requests may fail, as the serving engine counts them: a gateway's errors are not in it"
        if slo.kind == "inference-latency":  # the objective sets the budget, the percentile the 5-minute alert
            stated = f"{slo.objective:g}% of requests under {slo.threshold * 1000:g} ms over 30 days: {stated}"

        what = "availability" if slo.kind == "availability" else {TTFT: "time to first token", TPOT: "time per output token"}[slo.metric]
        fast = f"{burn(('1h', '5m'), FAST_BURN)} or {burn(('6h', '30m'), 6)}"
        alerts.append(Alert(slo_burn_fast_alert_name(slo.name), fast, "2m", "critical",
                            f"{slo.workload}: {what} SLO {slo.name} burns its 30-day error budget fast",
                            f"SLO {slo.name} ({stated}): at this rate the month's budget is gone within days; "
                            "check the serving pods' queue (vllm:num_requests_waiting), replicas and recent rollouts.",
                            (("team", team.name),)))  # fmt: skip
        alerts.append(Alert(slo_burn_slow_alert_name(slo.name), burn(("3d", "6h"), 1), "1h", "warning",
                            f"{slo.workload}: {what} SLO {slo.name} spends its error budget faster than it earns it",
                            f"SLO {slo.name} ({stated}): over three days errors exceed the budget; plan capacity "
                            "(`alicerce plan`) or relax the SLO.", (("team", team.name),)))  # fmt: skip
    return records, alerts
