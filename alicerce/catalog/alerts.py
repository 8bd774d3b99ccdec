"""alicerce's GPU alert rules: names, expressions, severities and what to do.

Kept apart from the rule assembly (alicerce.emit.kube.monitoring) so validation can check alert
overrides against these names without resolving anything.
"""

from __future__ import annotations

from typing import Any, Protocol

from alicerce.spec.record import record


@record
class Alert:
    name: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str
    # labels of the alert itself: ``team`` on what belongs to one team (its SLOs), so a team's receiver gets it
    labels: tuple[tuple[str, str], ...] = ()
    # (record, expr) of the parts its expression reads more than once, which its group records just before it
    records: tuple[tuple[str, str], ...] = ()
    # how long it keeps firing once its expression stops matching ('' for not at all): for an alert gated on a
    # source being up, so a restart of that source neither resolves it nor starts its `for` again
    keep_firing_for: str = ""

    def rules(self, extra_labels: dict[str, str]) -> list[dict[str, Any]]:
        """Its records, then the alert itself."""
        return [*({"record": name, "expr": expr} for name, expr in self.records), self.rule(extra_labels)]

    def rule(self, extra_labels: dict[str, str]) -> dict[str, Any]:
        kept = {"keep_firing_for": self.keep_firing_for} if self.keep_firing_for else {}
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            **kept,
            "labels": {"severity": self.severity, **dict(self.labels), **extra_labels},
            "annotations": {"summary": self.summary, "description": self.description},
        }


def camel(name: str) -> str:
    """``train-p5`` -> ``TrainP5``, for alert names derived from spec names."""
    return "".join(part.capitalize() for part in name.split("-"))


def pool_alert_name(pool: str) -> str:
    return f"GPUsMissing{camel(pool)}"


def slo_alert_name(slo: str) -> str:
    return f"SLO{camel(slo)}"


def slo_burn_fast_alert_name(slo: str) -> str:
    """The page of an inference SLO's multi-window burn rate (2% of the budget in 1 h, or 5% in 6 h)."""
    return f"SLO{camel(slo)}BurnFast"


def slo_burn_slow_alert_name(slo: str) -> str:
    """The ticket of an inference SLO's burn rate (10% of the budget in 3 days)."""
    return f"SLO{camel(slo)}BurnSlow"


def budget_alert_name(team: str, percent: int | None) -> str:
    """A team's budget alert at one of its thresholds (``BudgetResearch80``), or on its projected month (``None``)."""
    return f"Budget{camel(team)}{percent if percent is not None else 'Projected'}"


def budget_blind_alert_name(team: str) -> str:
    """The alert of a team whose budget stops admitting when its spend series is gone: the guard cannot count."""
    return f"Budget{camel(team)}SpendMissing"


# The buckets of vLLM's time-to-first-token histogram (vllm/v1/metrics/loggers.py PrometheusStatLogger,
# vllm:time_to_first_token_seconds; vendored in tests/data/upstream/vllm): a latency SLI can only count requests
# at one of these bounds.
VLLM_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                     20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip


# The buckets of Kueue's admission wait histogram (kueue v0.19.2 pkg/metrics/metrics.go 541-548,
# generateExponentialBuckets(16) at 976-978: 1, then 2.5 doubling 15 times).
KUEUE_WAIT_BUCKETS = (1.0, *(2.5 * 2**k for k in range(15)))


def bucket_bound(threshold: float, buckets: tuple[float, ...]) -> float | None:
    """The bucket bound equal to ``threshold``, or None. Only at a bound does a histogram say exactly which share of
    observations was above the threshold: between two, the share is an interpolation (histogram_quantile's), and an
    SLO alert on it fires while the SLO is met or stays silent while it is missed."""
    return next((b for b in buckets if abs(b - threshold) <= 1e-9 * max(b, 1.0)), None)


def nearest_bounds(threshold: float, buckets: tuple[float, ...]) -> str:
    """The bounds either side of a threshold, for a hint: ``750ms or 1s``."""

    def text(b: float) -> str:
        return f"{b * 1000:g}ms" if b < 1 else f"{b:g}s"

    below = [b for b in buckets if b < threshold]
    above = [b for b in buckets if b > threshold]
    return " or ".join(text(b) for b in (below[-1:] + above[:1]))


def slo_bucket(threshold: float, buckets: tuple[float, ...] = VLLM_TTFT_BUCKETS) -> float:
    """The largest bucket bound not above the threshold (a request between it and the threshold counts as slow:
    the SLI errs on the strict side), or the smallest bound when the threshold is below all of them."""
    below = [b for b in buckets if b <= threshold * (1 + 1e-9)]
    return below[-1] if below else buckets[0]


# The buckets of vLLM's inter-token latency histogram, one observation per engine step that streams output
# (vllm.v1.metrics.buckets INTER_TOKEN_LATENCY_BUCKETS; the same under its former name, vendored in
# tests/data/upstream/vllm): what a time-per-output-token target is measured on.
VLLM_TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
TTFT = "vllm:time_to_first_token_seconds"
TPOT = "vllm:inter_token_latency_seconds"
LATENCY_HISTOGRAMS = {TTFT: VLLM_TTFT_BUCKETS, TPOT: VLLM_TPOT_BUCKETS}
# Names a histogram had in engine versions teams still run (alicerce pins no vLLM: teams deploy their own). vLLM
# renamed its time-per-output-token histogram to inter_token_latency (same observations and buckets): deprecated in
# 0.11 (vllm-project/vllm pull 24110), hidden in 0.12 (pull 29330), removed (pull 32661). An SLI reads both names,
# so pods on 0.10 and on today's vLLM are measured alike, in one fleet during an upgrade too.
FORMER_NAMES = {TPOT: ("vllm:time_per_output_token_seconds",)}


def series_names(metric: str) -> tuple[str, ...]:
    """Every name a vLLM series is served under: its own, its former names, and the same through Ray Serve LLM (a
    RayService). There vLLM's RayPrometheusStatLogger reports through Ray's metrics agent, which prefixes ``ray_``;
    recent vLLM first replaces ':' with '_' for OpenTelemetry (vllm/v1/metrics/ray_wrappers.py
    _get_sanitized_opentelemetry_name: ``ray_vllm_time_to_first_token_seconds``), older ones did not (Ray's Serve LLM
    dashboard read ``ray_vllm:time_to_first_token_seconds``). A pod serves one of them; an expression reads them all."""
    if not metric.startswith("vllm:"):
        return (metric,)
    names = (metric, *FORMER_NAMES.get(metric, ()))
    ray = tuple(f"ray_{n}" for n in names) + tuple(f"ray_{n.replace(':', '_')}" for n in names)
    return names + ray


@record
class ServingSlo:
    """An SLO of a serving workload, declared in ``monitoring.slos`` or implied by the workload's own ``latency:``
    targets (a p99 under 800 ms is the SLO "99% of requests under 800 ms" over the 30-day budget window).

    ``where`` is the path of what declared it, in the models' field names (alicerce.spec.paths), for errors."""

    name: str
    kind: str  # inference-latency | availability
    workload: str
    objective: float  # percent of the 30-day window's requests (token intervals) that must meet it
    threshold: float  # seconds (latency); unused for availability
    percentile: float | None
    metric: str  # the vLLM histogram a latency SLI reads (and its FORMER_NAMES)
    where: tuple[str | int, ...]

    @property
    def buckets(self) -> tuple[float, ...]:
        return LATENCY_HISTOGRAMS[self.metric]

    @property
    def bound(self) -> float:
        """The bucket bound the SLI counts slow requests at: the threshold itself (AL360, AL323), or the bound below."""
        return bucket_bound(self.threshold, self.buckets) or slo_bucket(self.threshold, self.buckets)

    @property
    def error_budget(self) -> float:
        """The share of the 30-day window's requests (token intervals) allowed to miss, which the burn-rate alerts
        spend: 1 - objective (review obsreview8 F4: a latency SLO's budget was its percentile's, and its objective
        changed no rule). A latency SLI counts each request slower than the threshold as an error, so "objective 99.5"
        is "99.5% of the month's requests under the threshold"; the percentile is what the short-window alert holds
        any five minutes to (window_budget). A latency target of a workload states one percentile: its objective."""
        return 1 - self.objective / 100

    @property
    def window_budget(self) -> float:
        """The share of requests slower than the threshold that a latency SLO's percentile allows in any five minutes:
        a p99 under 800 ms allows 1% slower than 800 ms (SLO<Name>, alicerce.emit.kube.monitoring)."""
        return 1 - (self.percentile if self.percentile is not None else self.objective) / 100

    @property
    def implied(self) -> bool:
        return self.where[0] == "workloads"


def serving_slos(spec: Any) -> list[ServingSlo]:
    """Every serving SLO of the spec: the declared inference-latency and availability SLOs, then one per workload
    latency target (``latency.timeToFirstToken.p99``, ``timePerOutputToken.p95`` ...) that no declared SLO already
    states (same workload, histogram and percentile). Without them an inference workload's declared latency target
    had no SLI, no burn-rate alert and an empty SLO panel."""
    out: list[ServingSlo] = []
    for i, slo in enumerate(spec.monitoring.slos):
        if slo.kind not in ("inference-latency", "availability") or slo.workload is None:
            continue
        if slo.kind == "inference-latency" and slo.percentile is None:
            continue
        threshold = float(slo.threshold) if slo.threshold is not None else 0.0  # none for availability (AL261)
        out.append(ServingSlo(slo.name, slo.kind, slo.workload, slo.objective, threshold, slo.percentile, TTFT,
                              ("monitoring", "slos", i)))  # fmt: skip
    for target in latency_targets(spec):
        if target.stated or bucket_bound(target.threshold, LATENCY_HISTOGRAMS[target.metric]) is None:
            continue  # stated by a declared SLO; or not measurable exactly (AL323): the plan still sizes for it
        name = f"{target.workload}-{target.short}-p{target.percentile}"
        out.append(ServingSlo(name, "inference-latency", target.workload, float(target.percentile), target.threshold,
                              float(target.percentile), target.metric, target.where))  # fmt: skip
    return out


@record
class LatencyTarget:
    """A latency target of an inference workload (``latency.timeToFirstToken.p99: 800ms``): it sizes the plan, and
    becomes an SLO unless a declared one already states it (same workload, histogram and percentile)."""

    workload: str
    short: str  # ttft | tpot
    metric: str  # the vLLM histogram that measures it
    percentile: int
    threshold: float  # seconds
    stated: bool
    where: tuple[str | int, ...]


def latency_targets(spec: Any) -> list[LatencyTarget]:
    declared = {(s.workload, float(s.percentile)) for s in spec.monitoring.slos
                if s.kind == "inference-latency" and s.workload is not None and s.percentile is not None}  # fmt: skip
    out = []
    for i, workload in enumerate(spec.workloads):
        latency = workload.latency
        if workload.kind != "inference" or latency is None:
            continue
        for field, short, metric in (("time_to_first_token", "ttft", TTFT), ("time_per_output_token", "tpot", TPOT)):
            target = getattr(latency, field)
            if target is None:
                continue
            for percentile in (95, 99):
                threshold = getattr(target, f"p{percentile}")
                if threshold is None:
                    continue
                stated = metric == TTFT and (workload.name, float(percentile)) in declared  # declared SLOs read TTFT
                where = ("workloads", i, "latency", field, f"p{percentile}")
                out.append(LatencyTarget(workload.name, short, metric, percentile, float(threshold), stated, where))
    return out


# correlated diagnoses (alicerce.emit.kube.diagnoses): why GPUs do not do useful work
INPUT_BOUND = "GPUInputBound"
MEMORY_BOUND = "GPUMemoryBound"
COMMUNICATION_BOUND = "GPUCommunicationBound"
# communication-bound on a congested fabric: the node's ports wait for credits instead of filling their line rate
FABRIC_CONGESTED = "GPUCommunicationBoundFabricCongested"
CHECKPOINT_STALL = "TrainingCheckpointStall"
BORROWING_MISCONFIGURED = "KueueBorrowingMisconfigured"
# a team's ClusterQueue that admits nothing, for a reason other than its budget guard's hold (review obsreview24 F1)
CLUSTER_QUEUE_INACTIVE = "KueueClusterQueueInactive"
DIAGNOSES = (
    INPUT_BOUND,
    MEMORY_BOUND,
    COMMUNICATION_BOUND,
    FABRIC_CONGESTED,
    CHECKPOINT_STALL,
    BORROWING_MISCONFIGURED,
    CLUSTER_QUEUE_INACTIVE,
)


def slo_starved_alert_name(slo: str) -> str:
    """The second alert of a queue-wait SLO: workloads that are never admitted (the wait histogram never sees them)."""
    return f"SLO{camel(slo)}Starved"


# XIDs that mean the GPU or its memory must be taken out of service (NVIDIA XID catalog):
# 48 double-bit ECC, 64 a row remap or page retirement that failed to be recorded, 74 NVLink error, 79 fell off the bus,
# 94/95 contained/uncontained ECC, 119/120 GSP errors,
# not 63 (review obsreview6 G5): the row remapper RECORDED a remap (page retirement on older GPUs) that takes effect at
# the next GPU reset; the GPU keeps serving its jobs meanwhile (NVIDIA GPU memory error management, docs.nvidia.com
# deploy/a100-gpu-mem-error-mgmt error-recovery-and-response-flags: with the row-remapping pending flag set "unaffected
# applications can continue running", new work can start; NVML nvmlDeviceGetRemappedRows: a pending remap does not
# affect future work; deploy/dynamic-page-retirement visibility: 63 a page retired, 64 a retirement failed).
# A ticket: GPUXidError, and GPURowRemapPending for the reset it needs; the
# uncorrectable error behind it pages as its own XID (48/94/95), a remap that fails as 64 and GPURowRemapFailure.
# 154 GPU recovery action changed (review obsreview5 G10): the driver's summary that a GPU now needs a reset, a node
# reboot or a P2P drain, whichever XID caused it (140 and the NVLink ones among those listed nowhere else); the
# catalog's resolution for it is "follow its suggestion", above restarting the application. The pinned 580 branch
# emits it: open-gpu-kernel-modules 580.142 (and since 570.124.06) src/nvidia/src/kernel/gpu/gpu.c
# _gpuRefreshRecoveryActionInLock logs it on every change of the action once one was known (not on the first one at
# start-up), so a change back to none comes only after one that paged; the count per code carries no action, which
# the driver log and `nvidia-smi -q` (GPU Recovery Action) give.
CRITICAL_XIDS = (48, 64, 74, 79, 94, 95, 119, 120, 154)
CRITICAL_XID_CODES = "|".join(str(x) for x in CRITICAL_XIDS)  # a regex of the codes GPUCriticalXid pages on


# the series of every GPU DCGM exporter reports carry these labels (dcgm-exporter render_metrics.go 47)
GPU_KEY = "Hostname, gpu, UUID"
# XIDs per GPU and code in dcgm-exporter's window (alicerce.emit.kube.dcgm_counters: the counters list alicerce
# mounts enables it). The last-XID gauge DCGM_FI_DEV_XID_ERRORS it replaces stayed the same through a second XID of
# the same code, so a second XID 94 on a GPU raised nothing (dcgm-exporter#190, review obsreview3 DEFECT C); a count
# per code is above 0 for the window after each XID, so each one fires, and the alert clears when the window passes.
# One series per GPU and code: the exporter's series of a GPU changes its labels when a pod takes or releases the
# GPU (pod and namespace come and go), and the XID that kills a job arrives as its pod goes (review T6). A GPU with
# no XID in the window reports one series without the xid label.
XID_COUNT_METRIC = "DCGM_EXP_XID_ERRORS_COUNT"
XID_COUNT_WINDOW_MINUTES = 5  # dcgm-exporter's default --xid-count-window-size (4.5.3-4.8.2 pkg/cmd/app.go)


def xid_count(codes: str = ".+", *, but: str | None = None, offset: str = "") -> str:
    """XIDs reported per GPU and code in the exporter's window, for the codes matching ``codes`` and not ``but``
    (``offset``: as they were that long ago)."""
    unless = f',xid!~"{but}"' if but else ""
    at = f" offset {offset}" if offset else ""
    return f'max by ({GPU_KEY}, xid) ({XID_COUNT_METRIC}{{xid=~"{codes}"{unless}}}{at}) > 0'


# XIDs a CUDA process causes itself, by being killed or by faulting, on a healthy GPU (review obsreview8 F7): every
# Kueue preemption, OOM kill, pod deleted past its grace period or buggy kernel raises them, per GPU it held. NVIDIA's
# Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, catalog of driver R610; resolution
# bucket as immediate / investigatory action):
#   13 ROBUST_CHANNEL_GR_EXCEPTION, graphics engine exception: RESTART_APP / WORKFLOW_XID_13 (the app's kernel)
#   31 ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, MMU fault: RESTART_APP / WORKFLOW_XID_31 (a bad address in the app)
#   43 ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR, the app's channel reset after its fault: IGNORE / CONTACT_SUPPORT
#   45 ROBUST_CHANNEL_PREEMPTIVE_REMOVAL, channels torn down as a process is killed: WORKFLOW_XID_45, i.e. IGNORE
#      beside another XID (follow that one) and RESTART_FM when alone (a Fabric Manager fault on NVSwitch systems)
# None of them is a ticket per event. A GPU that raises one for every job it runs is the hardware (or a workload
# that restarts on it into the same fault, a crash loop): GPUApplicationXidRecurring tickets a code that starts
# XID_APP_RECURRENCE_EVENTS distinct times on ONE GPU within XID_APP_RECURRENCE_WINDOW. An event is the start of
# the code's count (it was not there a minute before); the exporter's 5-minute window merges the XIDs of one kill
# (one preempted 8-GPU pod: one 43 and one 45 event per GPU). Five in 24 hours: a healthy GPU of a training pool runs
# jobs of hours, so even a platform that preempts borrowed quota several times a day kills a job on one GPU a few
# times at most; five jobs dying on the same GPU the same way is past what preemption explains.
# XID 45 does not count toward the recurrence (review obsreview21 F4): beside another XID the catalog says to follow
# that one (which counts itself), and alone it is a process killed with its CUDA context live, which is routine: a
# sweep with early stopping (Ray Tune ASHA, Katib) kills each unpromising trial, a user interrupts a notebook's kernel,
# Kueue preempts borrowed quota, several times a day on one healthy GPU; five lone 45s ticketed it as failing. The
# catalog's other reading of a lone 45, a Fabric Manager fault on NVSwitch systems (RESTART_FM), cannot be told from a
# kill by the XID alone, and a fault that stops the fabric fails every new job on the node rather than killing one
# now and then: the recurrence was never that alert, and the runbook no longer says it is
APPLICATION_XIDS = (13, 31, 43, 45)
APPLICATION_XID_CODES = "|".join(str(x) for x in APPLICATION_XIDS)
XID_KILLED = 45
RECURRING_XID_CODES = "|".join(str(x) for x in APPLICATION_XIDS if x != XID_KILLED)
XID_APP_RECURRENCE_EVENTS = 5
XID_APP_RECURRENCE_WINDOW = "24h"
XID_EVENT_STEP = "1m"  # the subquery step: an XID count lasts the exporter's 5-minute window, so none is missed


def xid_events(codes: str) -> str:
    """Distinct XID events per GPU and code over the recurrence window: minutes where the code's count started or rose.

    The count is the XIDs of the code in the exporter's last 5 minutes (dcgm-exporter 4.5.3-4.8.2 expcollector.go: the
    DCGM samples since now - window, one per XID), so a new fault raises it whether or not an older one is still in the
    window. Counting only its appearances read a workload restarted in-process (torchrun --max-restarts, Ray Train's
    retries, a serving engine's supervisor) faulting every 4 minutes as ONE event, the count never absent: 30 faults in
    two hours, no ticket (review obsreview27 G4); its rises count each of them. Minutes, not XIDs: the XIDs one fault
    logs together (one per channel or engine it hit) are one event, and a count held level (faults exactly a window
    apart, each replacing the last as it ages out) stays one, as the suite's 20-minute case has it."""
    return f"count_over_time({xid_started(codes)}[{XID_APP_RECURRENCE_WINDOW}:{XID_EVENT_STEP}])"


def xid_started(codes: str) -> str:
    """Per GPU and code, at the minute its count in the exporter's window started or rose: an XID event."""
    now, before = xid_count(codes), xid_count(codes, offset=XID_EVENT_STEP)
    return f"(({now} unless {before}) or ({now}) > ({before}))"


# dcgm-exporter's clock event count (4.5.3-4.8.2 internal/pkg/collector/clock_events_collector.go): per GPU and reason
# (label clock_event, DCGM's DCGM_FI_DEV_CLOCKS_EVENT_REASONS bits: sw_thermal 0x20, hw_thermal 0x40, power_cap,
# hw_slowdown, ...), the samples that carried it since now - --clock-events-count-window-size (5 minutes by default,
# pkg/cmd/app.go:257-262), through the same windowed counter as the XID count (expcollector.go: a GPU with none gets one
# series valued 0 without the label). Collected only when the counters list names it (collector_factory.go:94,167):
# alicerce's list does (alicerce.emit.kube.dcgm_counters)
CLOCK_EVENTS_METRIC = "DCGM_EXP_CLOCK_EVENTS_COUNT"
CLOCK_EVENTS_WINDOW_MINUTES = 5  # dcgm-exporter's default --clock-events-count-window-size, which alicerce leaves
THERMAL_CLOCK_EVENTS = "sw_thermal|hw_thermal"
# The hardware clocking a GPU down for power, not heat (review obsreview27 G2), DCGM v4.5.3 dcgmlib/dcgm_fields.h
# 114-151 (NVML's reasons): HW_POWER_BRAKE 0x80 "External Power Brake Assertion being triggered (e.g. by the system
# power supply)"; HW_SLOWDOWN 0x8 clocks cut by a factor of 2 or more for temperature, the power brake, or power draw
# above the fast-trigger protection, and "may be also reported during PState or clock change" (label values
# hw_power_brake, hw_slowdown: dcgm-exporter clock_events_collector.go clockEventToString, vendored counters.json).
# So only the brake counts from one sample: HW slowdown counts where it
# held at least half of the window's samples (dcgm-exporter samples the reasons every --collect-interval, 30 s by
# default, pkg/cmd/app.go:138-142, which alicerce leaves: 10 in 5 minutes)
POWER_BRAKE_CLOCK_EVENT = "hw_power_brake"
HW_SLOWDOWN_CLOCK_EVENT = "hw_slowdown"
DCGM_COLLECT_INTERVAL_SECONDS = 30
HW_SLOWDOWN_SAMPLES = CLOCK_EVENTS_WINDOW_MINUTES * 60 // DCGM_COLLECT_INTERVAL_SECONDS // 2
GPU_HARDWARE_SLOWDOWN = "GPUHardwareSlowdown"


def hardware_slowdown() -> str:
    """Per GPU host, the GPUs the hardware slows for power (braked, or HW slowdown most of the window) without a thermal
    reason at the same time, which GPUTemperatureHigh reports with its own runbook."""

    def reason(event: str) -> str:
        return f'max by ({GPU_KEY}) ({CLOCK_EVENTS_METRIC}{{clock_event=~"{event}"}})'

    slowed = f"({reason(POWER_BRAKE_CLOCK_EVENT)} > 0 or {reason(HW_SLOWDOWN_CLOCK_EVENT)} >= {HW_SLOWDOWN_SAMPLES})"
    return f"count by (Hostname) ({slowed} unless on ({GPU_KEY}) {reason(THERMAL_CLOCK_EVENTS)} > 0)"


# A row remap recorded and waiting for the GPU's reset to take effect (DCGM field 396; alicerce's counters list adds
# it): after an uncorrectable error, or enough correctable ones on a row; the GPU keeps its full memory only once a
# reset applies it. NVML reports no remapped rows on a GPU with MIG instances active, so a MIG GPU stays silent here
REMAP_PENDING = "DCGM_FI_DEV_ROW_REMAP_PENDING"
XID_ROW_REMAP = 63  # a row remap recorded, applied at the GPU's next reset (NVIDIA's Xid catalog)

# Whether NVIDIA Fabric Manager has trained the NVSwitch fabric for a GPU (DCGM field 170; alicerce's counters list adds
# it, review obsreview27 G1). On an NVSwitch server CUDA fails to start on every GPU until it has, so the node stays
# Ready with all its GPUs allocatable and every job placed there dies at start. Values: dcgmFabricManagerStatus_t of
# DCGM v4.5.3 (the DCGM of dcgm-exporter 4.5.3-4.8.2) dcgmlib/dcgm_structs.h 4197-4207, mapped from NVML's fabric state
# by dcgmlib/src/DcgmCacheManager.cpp GetFMStatusFromStruct: not_supported 0 (a GPU without an NVSwitch fabric; NVML
# reports fabric state on Hopper and newer, so an A100 reads 0 too), not_started 1, in_progress 2 (training, at boot),
# success 3, failure 4 (training completed with an error: FM and driver at different versions among the causes),
# unrecognized 5 and nvml_too_old 6 (DCGM and the driver disagree on the API: the state is unknown, not failed).
# in_progress held past the alert's `for` is Fabric Manager dead at boot: the fabric stays "In Progress" for good
# (NVIDIA/NVSentinel issue 889, 20 days unnoticed; DCGM 4.5's own health watch warns on it), where a boot trains in about
# a minute (review obsreview45 D-1)
FABRIC_MANAGER_STATUS = "DCGM_FI_DEV_FABRIC_MANAGER_STATUS"
FABRIC_MANAGER_DOWN_STATES = {"not_started": 1, "in_progress": 2, "failure": 4}
FABRIC_MANAGER_DOWN = "GPUFabricManagerDown"
# unrecognized and nvml_too_old: DCGM cannot read the fabric state, so GPUFabricManagerDown is blind on those GPUs; a
# warning, not a page: Fabric Manager itself may be fine (review obsreview45 G-1)
FABRIC_STATE_UNREADABLE_STATES = {"unrecognized": 5, "nvml_too_old": 6}
FABRIC_STATE_UNREADABLE = "GPUFabricStateUnreadable"
# The same fault on a GPU older than alicerce.catalog.models.FABRIC_STATE_REPORTED_FROM (an A100 HGX), where field 170
# reads not_supported whatever Fabric Manager does (review obsreview28 G-1), is read from the GPU Operator's validator:
# its DaemonSet's cuda-validation init container runs a CUDA vectorAdd pod on the node and fails until it completes, so
# the validator pod stays not Ready (gpu-operator v26.3.3 assets/state-operator-validation/0500_daemonset.yaml,
# cmd/nvidia-validator/main.go CUDA.runWorkload, validator/manifests/cuda-workload-validation.yaml; vendored in
# tests/data/upstream/gpu-operator/v26.3.3/validator.json). CUDA cannot start on an NVSwitch server whose fabric Fabric
# Manager has not trained (cudaErrorSystemNotReady, 802); the device plugin waits only for the toolkit (its
# toolkit-validation init container), so the node keeps advertising its GPUs. The validator runs when its pod starts
# (a boot, a driver or operator upgrade): a Fabric Manager that stops after the node validated is not seen here.
CUDA_VALIDATOR = "nvidia-operator-validator"
CUDA_VALIDATION_FAILING = "GPUCudaValidationFailing"

# A cordoned node is out of service on purpose: drained for repair or RMA, or kept cordoned by alicerce's own driver
# upgrade until post-cluster.yml uncordons it (roles/kubernetes_node/tasks/drain.yml). Its exporters going quiet then is
# expected; an alert that an exporter is missing there paged oncall every repeat interval for the whole repair (review
# obsreview3 DEFECT A). kube-state-metrics 2.20.0: kube_node_spec_unschedulable{node} is 1 while spec.unschedulable.
CORDONED_NODES = "(max by (node) (kube_node_spec_unschedulable) == 1)"


# A critical XID needs the GPU reset or the node drained (NVIDIA's Xid catalog); the count leaves the exporter's 5-minute
# window whether or not anyone did, and the page resolved itself (PagerDuty closes an incident on the resolve, which
# alicerce's receivers send) before the drain its runbook asks for (review obsreview27 N1). So it keeps firing after the
# window until the node is cordoned (what the runbook's drain does first), for at most CRITICAL_XID_HELD: keep_firing_for
# of hours instead would go on paging through the repair itself, and could not tell a GPU already drained from one
# nobody looked at. A node cordoned since the XID is quiet, and stays quiet once uncordoned after its repair
CRITICAL_XID_HELD = "24h"
CRITICAL_XID_HELD_SECONDS = 24 * 3600


def _as_hostname(nodes: str) -> str:
    """kube-state-metrics' ``node`` label as dcgm-exporter's ``Hostname`` (the node's name under the GPU Operator)."""
    return f'label_replace({nodes}, "Hostname", "$1", "node", "(.+)")'


def hosts_in_service(expr: str) -> str:
    """in_service for an expression over dcgm-exporter's ``Hostname``."""
    return f"{expr} unless on (Hostname) {_as_hostname(CORDONED_NODES)}"


# kube-state-metrics as GPUCriticalXid reads it: each node's last sample within KSM_BRIDGE, not the instant's. A failed
# scrape of kube-state-metrics (its pod OOM-killed, restarting, or evicted from a drained system node: an eviction
# deletes the pod before the Deployment creates the next) stale-marks every one of its series at once, and read per
# evaluation every cordoned node was in service for the gap, its XID in the exporter's window a critical page, and
# every hold lost the node's `exists` and resolved (review obsreview34 D-1); at the step after the gap each cordon
# read as started anew (review obsreview32 N-2). A range skips the stale markers; five minutes, Prometheus' own
# lookback for a series without them, is ten scrapes at the Prometheus Operator's default 30 s interval (which alicerce
# leaves). A node deleted is read as there that much longer: its held page resolves five minutes later
KSM_BRIDGE = "5m"


def _ksm_bridged(metric: str, offset: str = "") -> str:
    at = f" offset {offset}" if offset else ""
    return f"max by (node) (last_over_time({metric}[{KSM_BRIDGE}]{at}))"


CORDONED_NODES_BRIDGED = f"({_ksm_bridged('kube_node_spec_unschedulable')} == 1)"
CORDONED_HOSTS_BRIDGED = _as_hostname(CORDONED_NODES_BRIDGED)
# kube-state-metrics answered within KSM_BRIDGE: beyond it no node's cordon is known, and the raw branch would page every
# node in repair; a new XID then waits for it (KubeStateMetricsAbsent pages after 10 minutes), and the hold pages it,
# valued 0, once it answers (the idiom of the serving records, alicerce.emit.kube.kpi)
KSM_ANSWERING = f"(count(last_over_time(kube_node_spec_unschedulable[{KSM_BRIDGE}])) > 0)"


# An XID first seen this long after its node's cordon started came from the repair (its validation), not before it: EKS
# cordons a node at the node monitoring agent's detection, which reads DCGM directly, while dcgm-exporter's count trails
# it by up to a collect interval (30 s), a scrape and a subquery step, so the XID the cordon is for can first show up
# a minute or two into the cordon; a node repaired for it and uncordoned must stay quiet (review obsreview30 N-1)
XID_AFTER_CORDON_SECONDS = 600

# When each node last booted, per node (node_exporter v1.12.1 collector/stat_linux.go:54-57,99: /proc/stat's btime,
# seconds since the epoch, a gauge without labels, from the stat collector that is on by default; the `node` label comes
# from the relabeling alicerce gives the kube-prometheus-stack chart's ServiceMonitor, or the host's ScrapeConfig
# on-prem). A reboot resets every GPU, so an XID that started before the node's last boot is not the GPU's state now.
# The last sample in the hold's window, not the instant's: a node exporter restarting (a DaemonSet roll, an OOM kill)
# leaves the series stale for a step, and read as "boot unknown" that re-armed the hold on a node repaired by a reboot:
# a critical page for the one step (review obsreview33 D-1); a range skips the stale marker. The last, not the largest:
# btime is the clock's now less the uptime, so a clock ahead at boot (an RTC ahead, before chrony or timesyncd steps it)
# reads a later boot until the step, and the largest kept it for 24 h: an XID the repair's validation reproduced within
# the skew of the boot was read as before it, and the node went back into service unfixed, silent (review obsreview34
# N-1). Where a node has several series (its exporter's pod label changed at a roll), the latest of their last samples
NODE_BOOT_TIME = f"max by (node) (last_over_time(node_boot_time_seconds[{CRITICAL_XID_HELD}]))"
# btime is the node's own clock, the XID's step Prometheus'; a node whose clock runs behind reads an earlier boot. No XID
# is counted this soon after a boot (the driver loads, the GPU Operator's validator runs, dcgm-exporter starts and is
# scraped before any count), so an XID within it of the boot is taken as before it: a clock up to this far behind does
# not hold a repaired node (review obsreview33 N-1: 4 minutes behind held it for 24 h). Beyond it, the clocks: chrony on
# every host (kubespray's on-prem, the AMI's on EKS), and NodeClockOffset reports a node more than a second off
BOOT_CLOCK_MARGIN_SECONDS = 120


# The hold's 24-hour subqueries, each recorded once by the alert's group just before it: Prometheus shares no
# subexpression within a query, and inline each was evaluated two to four times an evaluation (6,089 characters)
LAST_CRITICAL_XID = "gpu:critical_xid_last:timestamp"
LAST_CRITICAL_XID_IN_CORDON = "gpu:critical_xid_started_in_cordon_last:timestamp"
LAST_CORDON = "node:cordoned_last:timestamp"
LAST_CORDON_START = "node:cordon_started_last:timestamp"
# Each node's last known cordon: while kube-state-metrics last said "cordoned", the last time it did, carried by the
# record's own previous value (the way alicerce.emit.kube.kpi's last-seen records carry theirs) through an outage of
# any length up to CRITICAL_XID_HELD, and dropped once the node is seen uncordoned after it. A cordon start is a cordon
# with none known before: read through the 5-minute bridge alone, a kube-state-metrics outage longer than it re-marked
# every cordon in force as starting when it answered again, and the XID the repair's validation had reproduced read as
# the one the cordon was for: a node uncordoned with it unfixed stayed silent for the hold's 24 hours (review obsreview35
# N-1, obsreview36 N-1)
LAST_KNOWN_CORDON = "node:cordon_known_last:timestamp"
# When each node was last seen uncordoned (kube-state-metrics' bridged reading 0). The carry above reads its own samples
# through a range, which skips the stale marker the record gets at an uncordon: compared with this alone, once the
# uncordoned reading left the bridge (a kube-state-metrics outage, the node deleted) the old cordon came back for the rest
# of the 24 hours, and a node re-cordoned meanwhile had no cordon start: the XID that cordon was for read as reproduced in
# the repair, and the node uncordoned repaired paged (review obsreview38 D-1). A cordon is carried only while its last
# known time is newer than this one
LAST_SEEN_UNCORDONED = "node:uncordoned_seen_last:timestamp"
# The cordon known before this evaluation (LAST_KNOWN_CORDON's carry: its time), or 0 for a node kube-state-metrics
# reports with no cordon known (none at the record's first evaluation for a node already cordoned then); written every
# evaluation, so the 24-hour subqueries read it as an instant. Read as `LAST_KNOWN_CORDON offset 1m` instead (an
# instant 5-minute lookback), a Prometheus down for more than 5 minutes (a WAL replay, an OOM kill, a reschedule) had
# no cordon known after the gap and re-marked every cordon in force (review obsreview38 D-2). This record's first
# sample after the gap is the carry of the samples before it, and a step with none (before that first evaluation,
# while the scrape already reads the cordon) marks no start
KNOWN_CORDON_BEFORE = "node:cordon_known_before:timestamp"
# NODE_BOOT_TIME, read by both holds: a 24-hour range, recorded to be read once an evaluation
LAST_BOOT = "node:node_boot_time_seconds:last24h"


def critical_xid_records(codes: str) -> tuple[tuple[str, str], ...]:
    """The (record, expr) parts critical_xid_until_cordoned reads: when each node was last seen uncordoned, the cordon
    known before this evaluation and the last known cordon (these three first, in that order: each reads the ones
    before it at this evaluation, one writer each), when each GPU last counted a critical XID (per code), when one last
    started on a cordoned node, when each node was last cordoned, when its last cordon started and when it last
    booted."""
    window = f"[{CRITICAL_XID_HELD}:{XID_EVENT_STEP}]"
    bridged = _ksm_bridged("kube_node_spec_unschedulable")
    seen_uncordoned = f"max by (node) (0 * ({bridged} == 0) + time())"
    # the cordon known at the last evaluation, unless seen uncordoned since (this one included: the record above is
    # written first) or older than the hold; the carry reads its own last sample twice: a few nodes, one per cordon
    carried = f"max by (node) (last_over_time({LAST_KNOWN_CORDON}[{CRITICAL_XID_HELD}]))"
    uncordoned_since = f"(max by (node) (last_over_time({LAST_SEEN_UNCORDONED}[{CRITICAL_XID_HELD}])) >= on (node) {carried})"
    # 0: none known, unless the raw bridge says cordoned a step ago (a cordon older than the record: its first evaluation)
    bridged_before = _ksm_bridged("kube_node_spec_unschedulable", XID_EVENT_STEP)
    none_known = f"(0 * {bridged} unless on (node) ({bridged_before} == 1))"
    known_before = f"(({carried} > time() - {CRITICAL_XID_HELD_SECONDS}) unless on (node) {uncordoned_since}) or {none_known}"
    known = f"max by (node) (0 * {CORDONED_NODES_BRIDGED} + time()) or ({KNOWN_CORDON_BEFORE} > 0)"
    # A cordon starts at a step where the node is cordoned and was known in service just before: none known at the last
    # evaluation (0), or, where the record has no sample (the steps before it was first deployed), the raw bridge's
    # uncordoned the step before. A node without either (the record's writer down longer than the bridge, or
    # kube-state-metrics away, or a cordon older than the record) starts no cordon there. A cordon made during a KSM
    # outage starts at KSM's return, an upper bound (the series carries no time): an XID up to 10 min after it reads as the
    # cordon's own, an inherent limit while KubeStateMetricsAbsent pages (obsreview40 N-5)
    cordon_start = f"({CORDONED_NODES_BRIDGED} and on (node) ({KNOWN_CORDON_BEFORE} == 0 or {bridged_before} == 0))"
    # An XID started in a cordon: one known then, kube-state-metrics away or not (review obsreview38 D-3), or the
    # bridge's own reading (the steps before the record was first deployed). An uncordon, a new XID and a re-cordon all
    # inside one KSM outage read as D-3's case (the XID reproduced in the old cordon) and page: paging is the safe side
    # of two histories Prometheus cannot tell apart, and the runbook's re-cordon clears it (obsreview40 N-1)
    in_cordon = _as_hostname(f"({LAST_KNOWN_CORDON} or {CORDONED_NODES_BRIDGED})")
    return (
        (LAST_SEEN_UNCORDONED, seen_uncordoned),
        (KNOWN_CORDON_BEFORE, known_before),
        (LAST_KNOWN_CORDON, known),
        (LAST_CRITICAL_XID, f"max_over_time(timestamp({xid_count(codes)}){window})"),
        (LAST_CRITICAL_XID_IN_CORDON, f"max_over_time(timestamp({xid_started(codes)} and on (Hostname) {in_cordon}){window})"),
        (LAST_CORDON, _as_hostname(f"max_over_time(timestamp({CORDONED_NODES_BRIDGED}){window})")),
        (LAST_CORDON_START, _as_hostname(f"max_over_time(timestamp({cordon_start}){window})")),
        (LAST_BOOT, _as_hostname(NODE_BOOT_TIME)),
    )


def critical_xid_until_cordoned(codes: str) -> str:
    """Per GPU and code: the XIDs in the exporter's window on a node in service, or (valued 0) one in the last
    CRITICAL_XID_HELD on a node not cordoned since (kube-state-metrics' node, dcgm-exporter's Hostname). An XID on a
    node already cordoned is a ticket (GPUXidError): the node is being repaired, and its validation (dcgmi diag, the
    node validation role) reproducing the XID is what the technician looks for, not a page (review obsreview29 N-1).
    Reads the records of critical_xid_records(codes)."""
    last_xid = LAST_CRITICAL_XID
    last_cordon = LAST_CORDON
    not_since = f"(({last_xid} > on (Hostname) group_left () {last_cordon}) or ({last_xid} unless on (Hostname) {last_cordon}))"
    # only while the node exists: one the autoscaler removed (cluster-autoscaler and Karpenter taint a node they remove,
    # they do not cordon it) cannot be cordoned, and its page would hold for the whole CRITICAL_XID_HELD (review
    # obsreview28 D-1); kube-state-metrics 2.20.0 serves kube_node_spec_unschedulable{node} (0 or 1) while the Node
    # object exists
    exists = _as_hostname(_ksm_bridged("kube_node_spec_unschedulable"))
    # and while it is the same Node object: a host deleted without a cordon (kubectl delete node before an RMA) that
    # re-joins under its fixed name after the repair, or an EKS node given a freed private IP (its name), is a new
    # object created after the XID (kube-state-metrics 2.20.0 kube_node_created{node}: its creation time, seconds since
    # the epoch), and held the old GPU's page (review obsreview29 N-2)
    created = _as_hostname(_ksm_bridged("kube_node_created"))

    def held(since: str) -> str:
        return f"(({since} and on (Hostname) {exists}) unless ({since} <= on (Hostname) group_left () {created}))"

    # An XID that started while the node was cordoned for repair is a ticket (GPUXidError); if the node is then
    # uncordoned without a new cordon since (and the XID came XID_AFTER_CORDON_SECONDS or more into the cordon), the
    # fault goes back into service unfixed, and the hold above cannot see it (the last cordon sample is after the XID):
    # held too, once the node is uncordoned, until it is cordoned again (review obsreview30 N-1). The XID's start, not
    # its presence: the count of an XID just before a cordon lasts the exporter's window into it, and a node drained
    # for that XID and uncordoned repaired must stay quiet.
    last_in_cordon = LAST_CRITICAL_XID_IN_CORDON
    last_cordon_start = LAST_CORDON_START
    # Nor an XID from before the node's last boot (review obsreview32 D-1): the cordon evicts nothing, so a job that
    # restarts in place (a Job pod with restartPolicy OnFailure, torchrun --max-restarts) raises the XID again well
    # into the cordon, and the repair's reboot (EKS node auto repair's, or alicerce's drain and reboot) is what fixed
    # it; a node whose boot time is unknown (its node exporter down) keeps the hold
    # (a boot time of 0 where none is known; the comparison keeps the XID's timestamp, which held() reads)
    booted = f"({LAST_BOOT} or on (Hostname) 0 * {exists})"
    uncordoned_unfixed = (
        f"(((({last_in_cordon} > on (Hostname) group_left () ({last_cordon_start} + {XID_AFTER_CORDON_SECONDS})) "
        f"or ({last_in_cordon} unless on (Hostname) {last_cordon_start})) unless on (Hostname) {CORDONED_HOSTS_BRIDGED}) "
        f"> on (Hostname) group_left () ({booted} + {BOOT_CLOCK_MARGIN_SECONDS}))"
    )
    raw = f"(({xid_count(codes)} unless on (Hostname) {CORDONED_HOSTS_BRIDGED}) and on () {KSM_ANSWERING})"
    return f"{raw} or 0 * {held(not_since)} or 0 * {held(uncordoned_unfixed)}"


# Who is woken at 3am for what (review observe4 G15), decided here for the monitoring blind spots and the RMA alert:
# a page (critical) is for what loses work or users now and needs a person before morning; a ticket (warning) for
# what can wait for working hours.
# - DCGMExporterDown: one node's GPU health is blind. Its jobs keep running, and a GPU failing there still shows as
#   failed jobs (job failure KPIs) and, if it falls off the bus, as GPUsMissing<Pool>: a ticket. The same holds for
#   NodeExporterAbsent (warning, alicerce.emit.kube.sources). Where either is missing because the whole node died or
#   became unreachable, GPUsMissing<Pool> pages on its own: it counts a NotReady node as offering 0 (review obsreview27
#   D1: it read the kubelet's last allocatable, which a dead node keeps, so only these two tickets fired).
# - KubeStateMetricsAbsent: the whole site's KPIs, budgets and pages that join on kube-state-metrics are blind,
#   ServingWorkloadDown and GPUsMissing<Pool> (both critical) among them, for as long as it lasts: a page.
# - GPURowRemapFailure: the GPU is out of spare rows and needs an RMA; the uncorrectable errors that hurt jobs page on
#   their own (GPUCriticalXid 48/94/95, and 64 when a remap fails to be recorded): a ticket. XID 63, a remap recorded
#   for the next reset, hurts no job and is a ticket too (GPUXidError; review obsreview6 G5).
SEVERITY_DECIDED = {"DCGMExporterDown": "warning", "KubeStateMetricsAbsent": "critical", "GPURowRemapFailure": "warning"}

CRITICAL_XID = "GPUCriticalXid"


def critical_xid_alert(fault_action: str, cordon_means: str) -> Alert:
    """The page for a critical XID. ``fault_action``: what the on-call does with the failed GPU's node at the site, in
    its target's words (alicerce.targets.base.Capabilities.gpu_fault_action: a validation role on owned hosts, the
    cloud's node repair where it has one; review obsreview29 N-5). ``cordon_means``: what the cordon that ends the page
    says at the site (Capabilities.critical_xid_cordon: at EKS its own cordon, before the repair; review obsreview31
    N-2)."""
    return Alert(
        CRITICAL_XID,
        critical_xid_until_cordoned(CRITICAL_XID_CODES),
        "0m",
        "critical",
        "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported a critical XID",
        f"XID {{{{ $labels.xid }}}} ({{{{ $value }}}} in the last {XID_COUNT_WINDOW_MINUTES} minutes): {fault_action}. The "
        f"page holds until the node is cordoned (for {CRITICAL_XID_HELD} at most). {cordon_means}. XID 154 says the "
        "GPU's recovery action changed, in either direction: read it (nvidia-smi -q, GPU Recovery Action) before acting; "
        "None after a repair means the GPU needs nothing more and the page can be silenced.",
        records=critical_xid_records(CRITICAL_XID_CODES),
    )


class GpuFaultWords(Protocol):
    """What the on-call does about a GPU fault, in its target's words (alicerce.targets.base.Capabilities): a validation
    role, an RMA and a PDU on owned hosts; terminating the instance at a cloud (review obsreview31 N-4)."""

    @property
    def gpu_suspect_action(self) -> str: ...
    @property
    def gpu_replace_action(self) -> str: ...
    @property
    def power_fault_action(self) -> str: ...


def gpu_health(words: GpuFaultWords) -> tuple[Alert, ...]:
    """The GPU health alerts of a site, each runbook in its target's words."""
    return (
        Alert(
            "GPUXidError",
            # one XID, one alert: a code GPUCriticalXid pages on is not a ticket as well (review obsreview6 G5), and one
            # a killed or crashing process raises is a ticket only when it recurs (GPUApplicationXidRecurring). Nor XID 63
            # (a row remap recorded) where the GPU reports the remap pending: GPURowRemapPending says it, with its runbook
            # (review obsreview21 F5); a GPU with MIG active reports no remap state (NVML), so its 63 stays a ticket here
            # A critical XID on a node cordoned for repair is this ticket, not GPUCriticalXid's page (review obsreview29 N-1)
            f"({xid_count(but=f'{CRITICAL_XID_CODES}|{APPLICATION_XID_CODES}')} unless on ({GPU_KEY}, xid) "
            f"({xid_count(str(XID_ROW_REMAP))} and on ({GPU_KEY}) max by ({GPU_KEY}) ({REMAP_PENDING}) > 0)) "
            f"or ({xid_count(CRITICAL_XID_CODES)} and on (Hostname) {CORDONED_HOSTS_BRIDGED})",
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $labels.xid }}",
            f"A GPU reported an XID in the last {XID_COUNT_WINDOW_MINUTES} minutes; check the driver log (nvidia-smi -q, dmesg) "
            "for the cause. On a node cordoned for repair a critical XID is reported here, not paged: the repair's "
            "validation reproduced it, so the GPU is not fixed yet: uncordoned before a reboot or a new cordon, the "
            "node pages (GPUCriticalXid).",
        ),
        Alert(
            "GPUApplicationXidRecurring",
            f"{xid_events(RECURRING_XID_CODES)} >= {XID_APP_RECURRENCE_EVENTS}",
            "0m",
            "warning",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.Hostname }}}} reported XID {{{{ $labels.xid }}}} {{{{ $value }}}} times in "
            f"{XID_APP_RECURRENCE_WINDOW}",
            f"XID {{{{ $labels.xid }}}} is one a killed or faulting CUDA process raises (preemption, OOM kill, a bad kernel), "
            f"but it was raised by {{{{ $value }}}} separate faults on this GPU in the last {XID_APP_RECURRENCE_WINDOW} (each "
            "minute it appeared or its count rose; a workload restarting into the same fault counts each time). XID 45 (a "
            "process killed: early-stopped trials, preemption) never counts. Check whether the jobs that failed on it crash "
            "the same way everywhere (the workload) or run elsewhere: then the GPU is suspect, "
            f"{words.gpu_suspect_action}.",
        ),
        Alert(
            "GPURowRemapFailure",
            f"max by ({GPU_KEY}) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
            "0m",
            SEVERITY_DECIDED["GPURowRemapFailure"],
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} could not remap a memory row",
            f"The GPU has run out of spare rows: {words.gpu_replace_action}.",
        ),
        Alert(
            "GPURowRemapPending",
            # while the remap waits for the reset, whichever pod holds the GPU: it read the remapped-row count rising, and
            # resolved an hour later whether or not the GPU was reset (review obsreview12 F9)
            f"max by ({GPU_KEY}) ({REMAP_PENDING}) > 0",
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has a memory row remap pending a GPU reset",
            "A GPU reset is pending to apply the remap; schedule a drain and reset.",
        ),
        Alert(
            "GPUTemperatureHigh",
            # the GPU's own report that heat slows it, not a temperature: where it slows down is the model's (a fixed 85 C
            # ticketed a passively cooled L4 running warm and under its limit, and missed an H100 throttling below it,
            # review obsreview21 F8). Present for 10 minutes: thermal slowdown in every 5-minute window of them
            f'max by ({GPU_KEY}, clock_event) ({CLOCK_EVENTS_METRIC}{{clock_event=~"{THERMAL_CLOCK_EVENTS}"}}) > 0',
            "10m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} slows its clocks for heat ({{ $labels.clock_event }})",
            "The GPU has lowered its clocks to stay under its slowdown temperature for 10 minutes or more (sw_thermal: the "
            "driver's limit; hw_thermal: the hardware's, clocks halved or worse): its jobs run slower. Check airflow, fans, "
            "inlet temperature and the GPU temperature panel; a single GPU among cool neighbours points at its heatsink.",
        ),
        Alert(
            GPU_HARDWARE_SLOWDOWN,
            # per host: a power supply or PDU fault brakes every GPU of the node at once, one ticket for them
            hardware_slowdown(),
            "10m",
            "warning",
            "{{ $value }} GPUs on {{ $labels.Hostname }} are clocked down by the hardware for power, not heat",
            "The GPUs report the external power brake (hw_power_brake) or HW slowdown (clocks halved or worse) without a "
            "thermal reason for 10 minutes or more: every job spanning the node runs at its pace. "
            f"{words.power_fault_action}; see the GPU power panel.",
        ),
        Alert(
            "GPUPCIeReplays",
            # the device's counter, not each holder's copy: dcgm-exporter labels a GPU's series with the pod holding it (one
            # copy per pod sharing a time-sliced GPU), so read per series one bad riser raised an alert per pod, and its rate
            # and `for` started again at each new holder: silent under jobs shorter than 16 minutes (review obsreview12 F2)
            f"rate((max by ({GPU_KEY}) (DCGM_FI_DEV_PCIE_REPLAY_COUNTER))[10m:1m]) > 0.1",
            "15m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} retries PCIe transfers",
            "A rising PCIe replay rate points at a bad riser, cable or slot.",
        ),
    )


GPU_HEALTH_NAMES = ("GPUXidError", "GPUApplicationXidRecurring", "GPURowRemapFailure", "GPURowRemapPending",
                    "GPUTemperatureHigh", GPU_HARDWARE_SLOWDOWN, "GPUPCIeReplays")  # fmt: skip

# The node exporter answers on a node: the pressure collector reports on every node with PSI (NodeExporterAbsent is
# the alert for a node where it does not); alerts about one of its collectors or textfiles only hold where it answers.
NODE_EXPORTER_ANSWERS = "max by (node) (node_pressure_io_waiting_seconds_total)"


def in_service(expr: str) -> str:
    """An expression over ``node`` series, without the nodes taken out of service (cordoned)."""
    return f"{expr} unless on (node) {CORDONED_NODES}"


# A node's clock against Prometheus's (issue 24). GPUCriticalXid compares a node's boot time, read on its own clock, with
# Prometheus's time (BOOT_CLOCK_MARGIN_SECONDS), and cost windows, DCGM and NCCL logs are read across nodes. The node
# exporter's time collector (on by default) reads the node's clock when the scrape arrives, and Prometheus stamps the
# sample with its own clock at the scrape's start (node_exporter v1.12.1 collector/time.go): their difference is the
# node's clock against Prometheus's, plus the scrape's latency (milliseconds in a cluster; the time collector runs as
# the request starts, whatever a slow collector does after). Positive: the node is ahead.
NODE_CLOCK_OFFSET = "NodeClockOffset"
NODE_CLOCK_OFFSET_SECONDS = 1
# kube-prometheus-stack's own clock alerts (88.5.3 node-exporter group, both on by default and selecting the job both
# node exporter owners give, vendored in tests/data/upstream/kube-prometheus-stack/88.5.3/node-clock.json):
# NodeClockNotSynchronising, the kernel's unsynchronised flag with the error bound at its 16-second cap, which chrony
# keeps with rtcsync (kubespray's chrony.conf.j2 renders it): the chart owns that alert, and alicerce gives it the site's
# runbook (alicerce.emit.kube.operators). NodeClockSkewDetected reads the kernel PLL's offset, which chrony never drives
# (it stays 0: prometheus/node_exporter issue 2445, pendulum-project/ntpd-rs issue 2202), so it cannot see a chrony
# node's offset, on-prem (kubespray's chrony) or on EKS (the AMI's chronyd): NodeClockOffset measures it instead.
CHART_CLOCK_UNSYNCHRONISED = "NodeClockNotSynchronising"


def node_clock_offset() -> str:
    """Per node in service, its clock against Prometheus's beyond NODE_CLOCK_OFFSET_SECONDS either way, but not where
    the chart's NodeClockNotSynchronising holds (its condition, node-clock.json): one alert a fault. A node just booted
    reads unsynchronised with the kernel's 16-second error bound until chrony has stepped its clock."""
    offset = "max by (node) (node_time_seconds - timestamp(node_time_seconds))"
    limit = NODE_CLOCK_OFFSET_SECONDS
    unsynchronised = "max by (node) ((min_over_time(node_timex_sync_status[5m]) == 0) and (node_timex_maxerror_seconds >= 16))"
    return in_service(f"(({offset} > {limit}) or ({offset} < -{limit})) unless on (node) {unsynchronised}")


def node_clock_alert(clock_sync_action: str) -> Alert:
    """The ticket for a node whose clock is off Prometheus's; ``clock_sync_action``: who keeps the site's clocks and what
    the on-call checks, in its target's words (alicerce.targets.base.Capabilities.clock_sync_action)."""
    return Alert(
        NODE_CLOCK_OFFSET,
        node_clock_offset(),
        "10m",
        "warning",
        "The clock of {{ $labels.node }} is {{ $value | humanize }}s off Prometheus's",
        f"The node's clock differs from Prometheus's by more than {NODE_CLOCK_OFFSET_SECONDS}s (positive: ahead) for 10 "
        "minutes, and its kernel does not report it unsynchronised (NodeClockNotSynchronising): it follows a wrong time "
        "server, or Prometheus's own node is the one off (then every node reads about the same offset, and the node "
        "Prometheus runs on none). A node that lost its servers drifts by milliseconds an hour and is reported by "
        "NodeClockNotSynchronising once its kernel's error bound reaches 16 s (hours later). "
        f"GPUCriticalXid reads a node's boot on its clock (more than {BOOT_CLOCK_MARGIN_SECONDS // 60} minutes behind "
        "holds a repaired node's page), and cost windows and DCGM and NCCL logs are compared across nodes. "
        f"{clock_sync_action}.",
    )


def chart_clock_unsynchronised_description(clock_sync_action: str) -> str:
    """The runbook alicerce gives the chart's NodeClockNotSynchronising (kube-prometheus-stack 88.5.3
    defaultRules.additionalRuleAnnotations replaces its description)."""
    return (
        "The kernel of {{ $labels.node }} reads its clock as unsynchronised and its error bound has reached 16 seconds: "
        "no time daemon has set it for hours, or ever since the node booted (a site whose time servers it cannot "
        f"reach). Its clock runs free. {clock_sync_action}."
    )


# The GPU Operator's exporter runs one pod per GPU node (job from its Service's app label, gpu-operator v26.3.3
# assets/state-dcgm-exporter/0500_service_monitor.yaml). Per node: a GPU node older than the grace whose GPUs report
# nothing (Hostname is the node name under the GPU Operator, vendored dcgm-exporter labels.json). Counting nodes
# against healthy targets cluster-wide stayed true while any node of a staggered scale-up was still installing its
# driver stack, so it paged on an ordinary scale-up, and it could not name the blind node (review obsreview2 DEFECT 3).
# With no GPU node (pools scaled to zero) nothing fires.
DCGM_JOB = "nvidia-dcgm-exporter"
# a new GPU node's operator stack (driver, toolkit, validator, device plugin, MIG manager, then the exporter) takes
# minutes before its GPUs are advertised and reported
NEW_NODE_GRACE_SECONDS = 900


def settled(expr: str) -> str:
    """An expression over ``node`` series, without the nodes created within the grace (still installing)."""
    return f"{expr} and on (node) (time() - max by (node) (kube_node_created) > {NEW_NODE_GRACE_SECONDS})"


DCGM_EXPORTER_DOWN = Alert(
    "DCGMExporterDown",
    in_service(
        settled(
            'max by (node) (kube_node_labels{label_alicerce_dev_accelerator!=""}) '
            'unless on (node) max by (node) (label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "Hostname", "(.+)"))'
        )
    ),
    "10m",
    SEVERITY_DECIDED["DCGMExporterDown"],
    "GPU node {{ $labels.node }} reports no DCGM metrics",
    "GPU health is blind on this node: the GPU Operator's dcgm-exporter is down, not scheduled or not scraped there "
    "(kubectl -n gpu-operator get pods -o wide).",
)

# The pods that hold GPUs to serve (alicerce.emit.kube.kpi.join_rules records it): those the serving PodMonitor
# scrapes, and every pod labelled with an inference workload in its team's namespaces, the workers of a
# LeaderWorkerSet group among them. The workers answer no /metrics (the leader's API server does), so "scraped" alone
# read a multi-node model's workers as training: idle at night they raised GPUIdleWhileAllocated, decoding they matched
# the memory-bound diagnosis, and the input and checkpoint diagnoses read them as training (review obsreview6 G8)
INFERENCE_POD = "alicerce:pod_inference:info"

HELD_UTIL = 'gpu:dcgm_utilization:ratio{pod!=""}'  # the utilisation KPI of each GPU a pod holds (alicerce.emit.kube.kpi)
IDLE_GPUS = f"count by (namespace, pod) ({HELD_UTIL} < 0.05)"

GPU_EFFICIENCY: tuple[Alert, ...] = (
    Alert(
        "GPUIdleWhileAllocated",
        # the utilisation KPI (alicerce.emit.kube.kpi), not DCGM_FI_DEV_GPU_UTIL: a MIG instance reports none (or 0), so
        # every busy MIG pod read as idle; the KPI takes its graphics engine activity instead (review obsreview2 DEFECT 6)
        # Not an inference server (INFERENCE_POD: its leader and its workers): the replicas kept at the minimum idle
        # every quiet night by design; those above it scale away (review obsreview2 GAP 8: every serving replica's
        # Slack message each night)
        # Counted per GPU, not averaged over the pod's: a pod holding 8 GPUs whose code uses one (a single-process
        # script in an 8-GPU request, a launcher that started one rank) averaged 12.5% at one GPU flat out, and one
        # busy GPU over 40% hid seven idle ones (review obsreview21 F1). Half its GPUs or more idle: the value is their
        # count; a job whose ranks take turns (a pipeline's bubble) keeps most of them above 5% over the hour's samples
        f"{IDLE_GPUS} >= on (namespace, pod) (0.5 * count by (namespace, pod) ({HELD_UTIL})) unless on (namespace, pod) {INFERENCE_POD}",
        "1h",
        "info",
        "Pod {{ $labels.namespace }}/{{ $labels.pod }} leaves {{ $value }} of the GPUs it holds idle",
        "GPU utilisation under 5% for an hour on at least half the GPUs the pod holds: idle notebooks, stuck jobs and "
        "jobs that use fewer GPUs than they request cost GPU-hours other teams are queueing for.",
    ),
)

# The storage tiers' client counters (node_monitoring's textfile collector, alicerce.emit.storage_counters): a tier a
# node should mount but cannot read, and counters that stopped moving (the timer died, or the file is left behind).
# node_textfile_mtime_seconds{file} is the full path of each file read (node_exporter v1.12.1 collector/textfile.go).
STORAGE_COUNTERS_FILE = "alicerce_storage.prom"
STORAGE_ALERTS: tuple[Alert, ...] = (
    Alert(
        "StorageTierUnreadable",
        # not on a cordoned node: taken out for its client or HCA repair, it warned every repeat interval (the other
        # per-node source alerts leave it out alike; review obsreview5 G7). NodeCordonedForDays covers one forgotten
        in_service("alicerce_storage_client_up == 0"),
        "10m",
        "warning",
        "Tier {{ $labels.tier }} is not readable at {{ $labels.mountpoint }} on {{ $labels.node }}",
        "The node does not have the tier mounted where the spec mounts it, or its client counters cannot be read: jobs "
        "there that read it fail or hang. Check the mount (findmnt), the client (lctl ping to the MGS, or nfsstat -m) and "
        "the parallel_fs_client role's last run on the node.",
    ),
    # every node of such a site mounts its tiers (alicerce.emit.storage_counters): one that never wrote its counters
    # (the collector failing from its first run, the timer never installed) has no series for the two alerts around it
    Alert(
        "StorageCountersMissing",
        # where the node exporter answers: a node whose exporter is down has no series at all, and the timer's runbook
        # would send the operator to the wrong place (NodeExporterAbsent names it; review obsreview3 DEFECT B)
        in_service(
            "max by (node, pool) (alicerce:node_pool:info) unless on (node) max by (node) (alicerce_storage_client_up) "
            f"and on (node) {NODE_EXPORTER_ANSWERS}"
        ),
        "30m",
        "warning",
        "No storage counters from {{ $labels.node }} ({{ $labels.pool }})",
        "The node should report the client I/O of every tier it mounts and reports none: the storage KPIs leave it out "
        "and a tier it cannot read goes unnoticed. Check systemctl status alicerce-storage-stats.service on the node "
        "and the node_monitoring role's last run.",
    ),
    Alert(
        "StorageCountersStale",
        in_service(f'time() - node_textfile_mtime_seconds{{file=~".*/{STORAGE_COUNTERS_FILE.replace(".", "[.]")}"}} > 300'),
        "10m",
        "warning",
        "Storage counters on {{ $labels.node }} stopped updating",
        "The tiers' client I/O per node is over five minutes old: the storage KPIs and the input-bound diagnosis read "
        "stale numbers. Check systemctl status alicerce-storage-stats.timer on the node (node_monitoring role).",
    ),
)

# A KPI whose source is gone reads as "fine" (a rule over no series records nothing; a diagnosis over nothing never
# fires): one alert per source the KPIs read, where the site should have it (alicerce.emit.kube.sources)
KUBE_STATE_METRICS_ABSENT = "KubeStateMetricsAbsent"
NODE_EXPORTER_ABSENT = "NodeExporterAbsent"
FABRIC_COUNTERS_ABSENT = "FabricCountersAbsent"
DCGM_PROFILING_ABSENT = "DCGMProfilingAbsent"
DCGM_XID_COUNTS_ABSENT = "DCGMXidCountsAbsent"
KUEUE_METRICS_ABSENT = "KueueMetricsAbsent"
KUEUE_PROCESS_START_ABSENT = "KueueProcessStartAbsent"  # Kueue's counts of a restart or a new queue cannot be dated
# how long a source alert (alicerce.emit.kube.sources) waits: longer than a node exporter's or an exporter pod's
# restart; a KPI blind for 15 minutes is worth a ticket
SOURCE_ABSENT_FOR = "15m"
KUBERAY_METRICS_ABSENT = "KubeRayMetricsAbsent"  # a RayCluster with pods the KubeRay operator does not report: no run
SERVING_METRICS_ABSENT = "ServingMetricsAbsent"
SERVING_LATENCY_UNMEASURED = "ServingLatencyUnmeasured"  # scraped, but no latency histogram an SLO of it reads
SERVING_ENGINE_METRICS_ABSENT = "ServingEngineMetricsAbsent"  # scraped and ready, but no vLLM series at all
CLOUD_STORAGE_METRICS_ABSENT = "CloudWatchStorageMetricsAbsent"  # a cloud tier whose file system's I/O nobody exports
# the EFA ports' counters (the EFA pools' writer, alicerce.targets.aws files/alicerce_efa_stats.py): a node of an EFA
# pool that reports none, or whose file stopped being rewritten. node_textfile_mtime_seconds{file} is the full path of
# each file the textfile collector read (node_exporter v1.12.1 collector/textfile.go)
EFA_COUNTERS_MISSING = "EfaCountersMissing"
EFA_COUNTERS_STALE = "EfaCountersStale"
EFA_COUNTERS_FILE = "alicerce_efa.prom"
# an EFA node whose EFA counters are served and whose ports' rate is not: the link utilisation of EFA pools divides
# the writer's bytes by the node exporter's infiniband collector's rate, which fails whole when one device's read does
# (review obsreview20 F7)
EFA_LINK_RATE_MISSING = "EfaLinkRateMissing"
# the InfiniBand ports' transmit wait (node_monitoring files/alicerce_fabric_wait.py, rewritten every second): a node of
# a pool where it runs with a port not measured on its last tick (per port), or whose file stopped being rewritten
FABRIC_WAIT_UNREAD = "FabricWaitCountersMissing"
FABRIC_WAIT_FILE = "alicerce_fabric_wait.prom"
SOURCE_ALERTS = (KUBE_STATE_METRICS_ABSENT, NODE_EXPORTER_ABSENT, FABRIC_COUNTERS_ABSENT, DCGM_PROFILING_ABSENT,
                 DCGM_XID_COUNTS_ABSENT, KUEUE_METRICS_ABSENT, KUEUE_PROCESS_START_ABSENT, KUBERAY_METRICS_ABSENT,
                 SERVING_METRICS_ABSENT, SERVING_LATENCY_UNMEASURED, SERVING_ENGINE_METRICS_ABSENT,
                 CLOUD_STORAGE_METRICS_ABSENT, EFA_COUNTERS_MISSING, EFA_COUNTERS_STALE, EFA_LINK_RATE_MISSING,
                 FABRIC_WAIT_UNREAD)  # fmt: skip
# a serving workload with pods and no ready one (alicerce.emit.kube.sources): down after serving, or never ready
SERVING_WORKLOAD_DOWN = "ServingWorkloadDown"
SERVING_NEVER_READY = "ServingWorkloadNeverReady"
# a deployment of a RayService's Ray Serve application with replicas to run and none healthy, from Ray Serve's
# controller (alicerce.emit.kube.kpi RAY_REPLICA_HEALTHY): down after serving, or never healthy; and a Ray that reports
# replica health without the deployment status the two read (a release before the status gauge), where both are blind
RAY_SERVE_DEPLOYMENT_DOWN = "RayServeDeploymentDown"
RAY_SERVE_NEVER_HEALTHY = "RayServeDeploymentNeverHealthy"
RAY_SERVE_STATUS_ABSENT = "RayServeDeploymentStatusAbsent"
SERVING_ALERTS = (SERVING_WORKLOAD_DOWN, SERVING_NEVER_READY, RAY_SERVE_DEPLOYMENT_DOWN, RAY_SERVE_NEVER_HEALTHY, RAY_SERVE_STATUS_ABSENT)
# a fabric rail that stopped (alicerce.emit.kube.fabric_alerts): a port no longer active, a link that keeps going down
FABRIC_PORT_DOWN = "FabricPortDown"
FABRIC_LINK_FLAPPING = "FabricLinkFlapping"
FABRIC_RAILS_NEVER_UP = "FabricRailsNeverUp"
FABRIC_COUNTERS_SATURATED = "FabricCountersSaturated"  # a port's error counter stopped at its maximum: flaps go unseen
FABRIC_ERRORS_RISING = "FabricErrorsRising"  # a port that keeps counting errors while its link stays up (a bad cable)
FABRIC_PORTS_RENAMED = "FabricPortsRenamed"  # ports gone while as many of their kind are ACTIVE: renamed, or a rail masked
FABRIC_ALERTS = (FABRIC_PORT_DOWN, FABRIC_LINK_FLAPPING, FABRIC_RAILS_NEVER_UP, FABRIC_COUNTERS_SATURATED, FABRIC_ERRORS_RISING,
                 FABRIC_PORTS_RENAMED)  # fmt: skip
# What a rack or power outage, a switch or a file system server going down raises on every node it touches at once:
# Alertmanager groups these per alert (and per pool and tier where an alert carries those labels: Alertmanager
# v0.34.0 dispatch.go groups by the listed labels an alert has; most of these carry neither, so they group per alert
# and site, each site having its own Alertmanager), never per node: 16 nodes of a rack are one notification (one
# PagerDuty incident) listing them, not 16 (review observe4 G16, obsreview6 G2). Per-GPU health (XIDs) stays per node
# and GPU host.
NODE_OUTAGE_ALERTS = ("DCGMExporterDown", NODE_EXPORTER_ABSENT, FABRIC_COUNTERS_ABSENT, DCGM_PROFILING_ABSENT,
                      DCGM_XID_COUNTS_ABSENT, "StorageTierUnreadable", "StorageCountersMissing", "StorageCountersStale",
                      EFA_COUNTERS_MISSING, EFA_COUNTERS_STALE, EFA_LINK_RATE_MISSING, FABRIC_WAIT_UNREAD,
                      FABRIC_PORT_DOWN, FABRIC_LINK_FLAPPING, FABRIC_RAILS_NEVER_UP, FABRIC_COUNTERS_SATURATED,
                      FABRIC_MANAGER_DOWN, CUDA_VALIDATION_FAILING, GPU_HARDWARE_SLOWDOWN, FABRIC_ERRORS_RISING,
                      NODE_CLOCK_OFFSET, FABRIC_PORTS_RENAMED, FABRIC_STATE_UNREADABLE)  # fmt: skip
# (GPU_HARDWARE_SLOWDOWN: a rack's power feed brakes all its nodes; FABRIC_ERRORS_RISING: a failing leaf switch or its
# optics err on the port of every node cabled to it; NODE_CLOCK_OFFSET: a wrong time server, or Prometheus's own clock,
# puts every node off at once; FABRIC_PORTS_RENAMED: a BIOS update rolled over a pool renumbers every node's PCI buses;
# FABRIC_MANAGER_DOWN, CUDA_VALIDATION_FAILING: a driver update that leaves
# Fabric Manager behind fails every node of the pool it rolls to. The site's GPUsMissing<Pool> join them in
# alicerce.emit.kube.operators: since a NotReady node counts as lost, a rack outage pages it on each node, review
# obsreview27 D1)
# Which Prometheus an alert came from: each site's Prometheus adds these to every alert it sends (its external labels,
# alicerce.emit.kube.operators), and every route groups by them. Alertmanager's group key is the route's path plus the
# group_by labels' values (v0.34.0 dispatch/dispatch.go GroupKey, dispatch/route.go Key), and PagerDuty's dedup_key that
# key's hash (notify/pagerduty/pagerduty.go `DedupKey: key.Hash()`): two sites' identical route trees gave an alert
# name at both one PagerDuty alert, and one site's resolve closed the other's open page (review obsreview22 F3).
ALERT_SCOPE_LABELS = ("environment", "site")
# One training job's diagnosis raised on each of its nodes (alicerce.emit.kube.diagnoses labels them node, pool and the
# namespace holding the GPUs): llm-pretrain on 28 nodes stalling on Lustre reads is one cause and 28 alerts, which the
# root route's per-node groups sent as 28 notifications, again every repeat_interval (review obsreview24 F7). They
# group with the outage alerts, per alert, pool and namespace; each alert keeps its node in its summary (Alertmanager
# v0.34.0's default templates: PagerDuty's details, email and webhook list every alert of the group; Slack's gives the
# count, so alicerce's Slack receivers list them: SLACK_TEXT). GPUMemoryBound is per pod and carries no pool: a job's
# pods memory-bound on N nodes group per alert and namespace (issue 24: it was left per node, N notifications).
JOB_DIAGNOSES = (INPUT_BOUND, MEMORY_BOUND, COMMUNICATION_BOUND, FABRIC_CONGESTED, CHECKPOINT_STALL)
# The text of a Slack notification (Alertmanager slack_config ``text``, a Go text/template over the notification's data:
# notify/slack/slack.go expands it with template.Data, whose Alerts.Firing and Alerts.Resolved are methods of
# template/template.go Alerts). Alertmanager v0.34.0's default slack.default.text is empty (template/default.tmpl):
# a group of 28 GPUInputBound alerts read "[FIRING:28] GPUInputBound ..." and named no node. One line per firing
# alert, its summary and the node or pod it is on, then the ones resolved. ``or`` gives its first non-empty argument
# (text/template); a label the alert lacks reads empty (Labels is a map[string]string). The node or pod is added only
# where the summary does not already name it (the job diagnoses' summaries do: "GPUs on gpu-001 ... (node gpu-001)",
# review obsreview26 N-D): ``match`` is regexp.MatchString (Alertmanager template/template.go DefaultFuncs, Prometheus's
# template funcs alike), a search; node and pod names are DNS names, whose only regexp character '.' matches itself too.
SLACK_TEXT = (
    "{{ range .Alerts.Firing }}• {{ or .Annotations.summary .Labels.alertname }}"
    "{{ if .Labels.node }}{{ if match .Labels.node .Annotations.summary }}{{ else }} (node {{ .Labels.node }}){{ end }}{{ end }}"
    "{{ if .Labels.pod }}{{ if match .Labels.pod .Annotations.summary }}{{ else }} (pod {{ .Labels.namespace }}/{{ .Labels.pod }})"
    "{{ end }}{{ end }}\n{{ end }}"
    "{{ if .Alerts.Resolved }}Resolved:{{ range .Alerts.Resolved }} {{ or .Labels.node .Labels.pod .Labels.alertname }}{{ end }}{{ end }}"
)
GROUPED_ACROSS_NODES = (*NODE_OUTAGE_ALERTS, *JOB_DIAGNOSES)
# namespace: two teams' jobs on one pool are two notifications (each team's receiver matches its own namespaces). The
# outage alerts carry either none (node- and Hostname-level aggregations) or their exporter's, the same on every node,
# so the namespace splits none of their groups
NODE_OUTAGE_GROUP_BY = (*ALERT_SCOPE_LABELS, "alertname", "namespace", "pool", "tier")
# Alertmanager replicas in production: two, each on its own system node (hard pod anti-affinity on the hostname), so
# a drained or replaced system node leaves one that still holds the silences and the notification log. prometheus-
# operator makes the replicas one cluster: each pod gets a --cluster.peer for every replica of the StatefulSet and
# they gossip silences and the notification log (prometheus-operator pkg/alertmanager/statefulset.go, the peers
# loop over spec.replicas); each replica claims its own volume from the volumeClaimTemplate. Prometheus sends every
# alert to each replica (its alerting endpoints are the Service's endpoints), and the gossiped notification log keeps
# the pair from notifying twice (Alertmanager README "High Availability").
ALERTMANAGER_HA_REPLICAS = 2


def alertmanager_replicas(tier: str, system_nodes: int) -> int:
    """How many Alertmanager replicas a site runs: two in production where the system pools keep at least two nodes
    (their ``scaling.min``), else one. A second replica with nowhere to go but the first one's node would stay Pending
    under the hard anti-affinity; rule AL326 reports the production site that has too few."""
    if tier == "production" and system_nodes >= ALERTMANAGER_HA_REPLICAS:
        return ALERTMANAGER_HA_REPLICAS
    return 1


# Prometheus lacks the samples the month's spend starts with: retention deleted them, or its TSDB began again (alicerce.emit.kube.costs)
COST_HISTORY_TRUNCATED = "CostHistoryTruncated"
# Prometheus's size retention set above the volume it writes to (review obsreview24 F8's day 2: monitoring.storage grown
# before the claims were): size retention deletes blocks only past the limit (prometheus v3.14.0 tsdb/db.go
# BeyondSizeRetention counts the WAL, the head chunks and the blocks against prometheus_tsdb_retention_limit_bytes), so
# a limit the disk cannot hold never acts and the TSDB fills its volume: ingestion, rule evaluation and every alert stop
PROMETHEUS_RETENTION_EXCEEDS_VOLUME = "PrometheusRetentionExceedsVolume"
# the share of the volume's capacity the limit may take: alicerce sets 90% of the declared claim
# (alicerce.emit.kube.operators), which the kubelet reports as a little less (the file system's own metadata: a 100Gi
# ext4 volume reads about 98.3GiB), so 90/98.3 = 92%; a compaction writes its merged block before deleting the
# blocks it merges, which the remaining 5% of the disk must hold
RETENTION_VOLUME_SHARE = 0.95


def retention_exceeds_volume(namespace: str) -> str:
    """Each Prometheus whose size retention is above RETENTION_VOLUME_SHARE of its volume. The retention limit is the
    Prometheus pod's own gauge (prometheus v3.14.0 tsdb/db.go: prometheus_tsdb_retention_limit_bytes, the
    --storage.tsdb.retention.size prometheus-operator passes from retentionSize; 0 when none); the volume's capacity is
    the kubelet's (kubernetes pkg/kubelet/metrics/collectors/volume_stats.go kubelet_volume_stats_capacity_bytes, by
    namespace and persistentvolumeclaim), joined to the pod through the claim's name, which the StatefulSet controller
    makes <template>-<pod> and prometheus-operator's template is prometheus-<name>-db (alicerce.run.diff
    prometheus_claims)."""
    claim = f'kubelet_volume_stats_capacity_bytes{{namespace="{namespace}",persistentvolumeclaim=~"prometheus-.+-db-prometheus-.+"}}'
    capacity = f'max by (namespace, pod) (label_replace({claim}, "pod", "$1", "persistentvolumeclaim", "prometheus-.+-db-(prometheus-.+)"))'
    limit = f'max by (namespace, pod) (prometheus_tsdb_retention_limit_bytes{{namespace="{namespace}"}})'
    return f"{limit} > on (namespace, pod) ({RETENTION_VOLUME_SHARE:g} * {capacity})"


# a node left cordoned for days: the exporter and GPU alerts leave cordoned nodes out (in_service), so one forgotten
# after a repair would hide its faults for good (review obsreview4 G6)
NODE_CORDONED_FOR_DAYS = "NodeCordonedForDays"
CORDONED_FOR_HOURS = 72


def cordoned_for_days() -> str:
    """The nodes cordoned at nearly every 10-minute step of the last ``CORDONED_FOR_HOURS``, whatever gaps the scrape or
    Prometheus had: a `for` of 72 hours starts again after any gap longer than the 5-minute lookback (a kube-state-metrics
    pod rescheduled, Prometheus restarted), so the alert never fired on a node forgotten for weeks (review obsreview5 G6)."""
    flag = "(max by (node) (kube_node_spec_unschedulable) == bool 1)"
    steps = CORDONED_FOR_HOURS * 6
    window = f"[{CORDONED_FOR_HOURS}h:10m]"
    return (f"{CORDONED_NODES} and on (node) min_over_time({flag}{window}) == 1 "
            f"and on (node) count_over_time({flag}{window}) > {int(steps * 0.9)}")  # fmt: skip


STATIC_ALERTS = (CRITICAL_XID, *GPU_HEALTH_NAMES, *(a.name for a in (DCGM_EXPORTER_DOWN, *GPU_EFFICIENCY)), *DIAGNOSES,
                 *SOURCE_ALERTS, *SERVING_ALERTS, *FABRIC_ALERTS, FABRIC_MANAGER_DOWN, FABRIC_STATE_UNREADABLE, CUDA_VALIDATION_FAILING,
                 NODE_CORDONED_FOR_DAYS, COST_HISTORY_TRUNCATED, PROMETHEUS_RETENTION_EXCEEDS_VOLUME, NODE_CLOCK_OFFSET)  # fmt: skip
