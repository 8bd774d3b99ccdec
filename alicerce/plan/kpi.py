"""The KPI targets an environment's spec and plan imply, named by the recording rules that measure them.

`alicerce plan` prints them, so the figures a platform team reports (alicerce.emit.kube.kpi, costs) come with the
target the spec set or the plan forecast: SLOs as declared, each pool's effective utilisation at the plan's
forecast, each team's spend against its budget, each serving workload's cost per million tokens at the plan's
prices, the checkpoint stall budget. Pure: spec and plan in, targets out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alicerce.catalog.alerts import TTFT, serving_slos
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models.workloads import chain_days, model_chains

# the 30-day records are evaluated once an hour (alicerce.emit.kube.costs hour_mark_rules): an instant query finds
# their sample only in the minutes after it; a reader takes its last value (review obsreview15 F7)
HOURLY = "; recorded hourly: read its last value"


# TrainingCheckpointStall's shortest `for`: its condition reads a 5-minute rate of the wait (the diagnoses' data-wait
# record), so a shorter hold would page on a write the storage plan allows
STALL_ALERT_FLOOR_SECONDS = 60.0


def checkpoint_stall_budget(platform: ResolvedPlatform) -> float:
    """How long GPUs may wait on a checkpoint write, the figure the storage plan sizes a tier's write bandwidth for: the
    stall budget (sizing's checkpointStallBudget x interval) of the shortest interval a training or fine-tuning run
    checkpoints at, its declared one or the catalog's default (review sizreview34 D-3: a run on the default interval,
    sized for 180 s, was left out of a 360 s target read from another run's declared 2 hours)."""
    sizing = platform.catalog.sizing
    default = float(sizing.defaultCheckpointIntervalSeconds.value)
    intervals = [float(w.checkpoint_interval or default) for w in platform.spec.workloads if w.kind in ("training", "fine-tuning")]
    return float(int(sizing.checkpointStallBudget.value * min(intervals, default=default)))


def checkpoint_stall_seconds(platform: ResolvedPlatform) -> float:
    """TrainingCheckpointStall's hold: the stall budget, at least :data:`STALL_ALERT_FLOOR_SECONDS`."""
    return max(STALL_ALERT_FLOOR_SECONDS, checkpoint_stall_budget(platform))


MEANINGFUL_UTILIZATION = 0.01
# the trailing window run:gpu_cost_usd:sum30d sums (alicerce.emit.kube.costs.hour_mark_rules): a run longer than it is
# never whole in the record (and Prometheus keeps about a month: monitoring.retention), so its target is per window
RUN_RECORD_DAYS = 30


@dataclass(frozen=True)
class KpiTarget:
    kpi: str  # the recorded series that measures it
    subject: str  # pool, team, workload or SLO (label value)
    op: str  # "<=" or ">="
    target: float
    unit: str
    source: str  # where the target comes from

    def to_json(self) -> dict[str, Any]:
        return {
            "kpi": self.kpi,
            "subject": self.subject,
            "op": self.op,
            "target": round(self.target, 6),
            "unit": self.unit,
            "source": self.source,
        }


def kpi_targets(
    platform: ResolvedPlatform,
    pools: list[tuple[str, float | None]],
    budgets: dict[str, dict[str, float]],
    per_million: dict[str, float | None],
    per_run: dict[str, tuple[float | None, float | None]] | None = None,
    *,
    stages: dict[str, tuple[float | None, str | None]] | None = None,
) -> list[KpiTarget]:
    """``pools``: (pool, forecast utilisation) of GPU pools; ``budgets``: team -> site -> the share of the monthly
    budget that site watches (alicerce.plan.platform.site_budgets); ``per_million``:
    serving workload -> USD per million tokens at the plan's prices; ``per_run``: training workload -> what one run's
    GPU-hours cost at the pool's billed rate (its showback), what the live run cost records charge, and its wall-clock
    days; ``stages``: workload -> (its planned wall-clock in days, the site of its pool), the lead-time target's terms."""
    out: list[KpiTarget] = []
    for slo in platform.spec.monitoring.slos:
        source = f"monitoring.slos {slo.name}"
        if slo.kind == "inference-latency":
            continue  # with the workloads' latency targets below
        if slo.kind == "availability" and slo.workload:
            out.append(KpiTarget("workload:vllm_request_errors:ratio_rate5m", slo.workload, "<=", 1 - slo.objective / 100, "ratio", source))
        elif slo.kind == "queue-wait" and slo.team:
            out.append(
                KpiTarget(f"team:kueue_admission_wait_seconds:p{95 if slo.objective <= 95 else 99}", slo.team, "<=", slo.limit, "s", source)
            )
        elif slo.kind == "gpu-utilization" and slo.team:
            # the team's own, as its alert reads it (review obsreview27 N5)
            out.append(KpiTarget("team:gpu_effective_utilization:ratio", slo.team, ">=", slo.limit, "ratio", source))
        elif slo.kind == "gpu-utilization":
            out.append(KpiTarget("site:gpu_effective_utilization:ratio", "platform", ">=", slo.limit, "ratio", source))
    for slo_ in serving_slos(platform.spec):
        if slo_.kind != "inference-latency" or slo_.percentile is None:
            continue
        source = f"monitoring.slos {slo_.name}" if not slo_.implied else f"workloads {slo_.workload} latency"
        if slo_.metric == TTFT:  # recorded per workload at p50/p95/p99 (alicerce.emit.kube.kpi.serving_rules)
            series = f"workload:vllm_time_to_first_token_seconds:p{slo_.percentile:g}"
            out.append(KpiTarget(series, slo_.workload, "<=", slo_.threshold, "s", source))
        # one per SLO (a workload may have several: its time to first token and per output token), by the slo label
        budget = slo_.error_budget
        out.append(KpiTarget("slo:sli_error:ratio_rate1h", slo_.name, "<=", budget, "ratio", source + " (error budget)"))
    for pool, utilization in pools:
        if utilization is not None and utilization >= MEANINGFUL_UTILIZATION:  # below, the plan reports the idle pool (PL307/PL308)
            out.append(KpiTarget("pool:gpu_effective_utilization:ratio", pool, ">=", utilization, "ratio", "plan: forecast utilisation"))
    # per site: each site's Prometheus records only its own pods' spend (review obsreview7 G2: one site's sum was held
    # against the whole budget, which it could never reach while the site's budget alert fired)
    for team, sites in sorted(budgets.items()):
        for site, usd in sorted(sites.items()):
            source = "tenancy.teams budget" + ("" if len(sites) == 1 else ": this site's share (its sites' shares add up to it)")
            source += HOURLY
            # the calendar month so far (UTC), the window every budget alert and the guard compare: a trailing 30 days
            # was over "target" for a team that spent its budget from the 20th to the 19th (review obsreview22 F2)
            out.append(KpiTarget("team:gpu_cost_usd:sum_month", f"{team} at {site}", "<=", usd, "USD", source))
    serving = {w.name for w in platform.spec.workloads if w.kind == "inference"}  # what the serving PodMonitors scrape
    for workload, per in sorted(per_million.items()):
        if per is not None and workload in serving:
            out.append(KpiTarget("workload:usd_per_million_tokens:ratio30d", workload, "<=", per, "USD",
                                 "plan: pool price / tokens at the mean rate" + HOURLY))  # fmt: skip
    # a run is recorded by its TrainJob's, Job's or RayJob's name, not the workload's: the target holds for each run of it
    for workload, (whole, days) in sorted((per_run or {}).items()):
        if whole is None:
            continue
        run_usd, source = whole, "plan: one run's GPU-hours at the pool's billed rate"
        if days is not None and days > RUN_RECORD_DAYS:
            # the record holds the trailing 30 days of a longer run: its whole cost was a target the record could never
            # reach, "within target" at twice the plan (review obsreview22 F2); the run's total is `alicerce costs`'
            # monthly rows summed
            run_usd = whole * RUN_RECORD_DAYS / days
            source += f", per {RUN_RECORD_DAYS} days of its {days:.0f}-day wall clock (its whole cost: `alicerce costs`, by month)"
        out.append(KpiTarget("run:gpu_cost_usd:sum30d", f"a run of {workload}", "<=", run_usd, "USD", source + HOURLY))
    out += lead_time_targets(platform, stages or {})
    if any(w.kind == "training" for w in platform.spec.workloads):
        budget, stall = checkpoint_stall_budget(platform), checkpoint_stall_seconds(platform)
        source = "sizing checkpointStallBudget x interval"
        if stall > budget:  # the KPI said 60 s beside a tier sized for 30 (review sizreview33 D-3)
            source += (f" = {budget:g} s, what the storage plan sizes the write bandwidth for; the alert holds "
                       f"{stall:g} s, its shortest")  # fmt: skip
        out.append(KpiTarget("TrainingCheckpointStall", "training", "<=", stall, "s", source))
    return out


def lead_time_targets(platform: ResolvedPlatform, stages: dict[str, tuple[float | None, str | None]]) -> list[KpiTarget]:
    """workload:model_lead_time:seconds per served model with a declared chain: the planned wall-clock of the longest
    path of stages that feed it (WorkloadPlan.wall_clock_days: training's and fine-tuning's at the planned GPUs, data
    preparation's deadline or its day), so a lead time above it is time between the stages (queueing, evaluation,
    hand-offs). A chain whose stages run at another site than the service is measured by no Prometheus (each sees its
    own site): the target says so. No target where a stage has no planned wall-clock (the plan could not size it)."""
    out = []
    workloads = platform.spec.workloads
    days = {name: figure for name, (figure, _) in stages.items()}
    for served, chain in sorted(model_chains(workloads).items()):
        total = chain_days(served, workloads, days)
        if total is None:
            continue
        terms = " + ".join(f"{name} {days[name]:.2f} d" for name in reversed(chain) if days.get(name) is not None)
        source = f"plan: planned wall-clock along the chain ({terms})"
        sites = sorted({site for name in (served, *chain) if (site := stages.get(name, (None, None))[1]) is not None})
        if len(sites) > 1:
            source += f"; its stages run at sites {', '.join(sites)}, and each site's Prometheus sees its own runs only: not recorded"
        out.append(KpiTarget("workload:model_lead_time:seconds", served, "<=", total * 86400, "s", source))
    return out
