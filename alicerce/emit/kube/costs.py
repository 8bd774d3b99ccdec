"""Showback and budgets from the plan's prices and live usage: recording rules and the alerts that act on budgets.

The price of a GPU-hour of each pool is the plan's (``alicerce plan``: the node price on the cloud, an owned pool's
month over its installed GPU-hours on-prem, PoolPlan.billed_usd_per_gpu_hour), written into a static series; the live side is what
pods hold (``pod:gpus_allocated:sum``, in physical GPUs). Allocated GPUs are what a team pays for, whether busy or
not: the cost of a used GPU-hour is that spend over the busy GPU-hours. Budgets are monthly; spend is compared over
the calendar month so far (UTC, as the budget guard and `alicerce costs` count it) and as the month the trailing
week's pace would cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from alicerce.catalog.alerts import COST_HISTORY_TRUNCATED, INFERENCE_POD, Alert, budget_alert_name, budget_blind_alert_name
from alicerce.emit.kube.kpi import (
    GPU_UTIL,
    NAMESPACE_TEAM,
    POD_GPUS,
    POD_WORKLOAD,
    READY_PODS,
    RESERVED_GPUS,
    SERVING_WORKLOAD_LABEL,
    billed_gpus,
    pod_runs,
    workload_pods,
)
from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.namespaces import MONITORING_NAMESPACE

PRICE = "alicerce:pool_usd_per_gpu_hour:price"
# a workload's own price of a GPU-hour where the plan gives it one (Capacity Blocks: the blocks its own schedule buys
# over the GPU-hours its pods hold), by pool, workload and team: its pods are charged it, every other pod its pool's
WORKLOAD_PRICE = "alicerce:workload_usd_per_gpu_hour:price"
TEAM_COST = "team:gpu_cost_usd:rate1h"  # USD per hour the team's running pods cost now
IDLE_COST = "pool:gpu_idle_cost_usd:rate1h"  # USD per hour the pool's installed GPUs that no pod holds cost now
# GPUs a pool pays for whether launched or not, from the plan: an On-Demand Capacity Reservation's reserved nodes
# (billed at their rate used or not: the catalog's source, prices.yaml capacityReservations, EC2 User Guide "Capacity
# Reservation pricing and billing"). The launched nodes alone showed a reservation scaled to 0 as no cost at all
# (review obsreview25 G2)


def idle_gpus(reservations: bool) -> str:
    """The GPUs a pool is billed for now (alicerce.emit.kube.kpi.billed_gpus, the allocation ratio's denominator too)
    that no pod holds. A reservation with no node launched has no allocation series (pool:gpus_allocated:sum follows
    the launched GPUs), so all of it is idle."""
    billed = billed_gpus(reservations)
    return f"clamp_min(({billed}) - on (pool) pool:gpus_allocated:sum, 0) or on (pool) ({billed})"


TEAM_30D = "team:gpu_cost_usd:sum30d"
# what the team's pods cost over the trailing 7 days (hour marks): the pace the month's projection extrapolates
TEAM_7D = "team:gpu_cost_usd:sum7d"
PACE_HOURS = 7 * 24
# the hour marks of those 7 days this Prometheus recorded a spend in (TEAM_HOUR, a team's 0 included): a Prometheus
# under a week old divides the week's spend by the hours it saw, not by 168. Counted on the spend record itself, whose
# name upgrades keep: counting a record newer than the spend (MEASURED_HOUR) divided an upgraded platform's week of
# spend by the hours since the upgrade, 7x the pace on its first day (review obsreview26 D1)
PACE_RECORDED = "site:cost_hours_recorded:count7d"
# the fewest hours the pace is taken over: a Prometheus a few hours old extrapolated one job's hours to the month
PACE_MIN_HOURS = 24
# USD the team's pods cost in this clock hour (UTC) so far, minute by minute. The name is that of the trailing-hour
# record it replaced, kept so the month of an upgrade still reads its earlier hours: an old sample at hh:59 is the
# trailing hour that ends then, that clock hour to within a minute
TEAM_HOUR = "team:gpu_cost_usd:sum1h"
WORKLOAD_HOUR = "workload:gpu_cost_usd:sum1h"
ALLOCATED_HOUR = "team:gpu_hours_allocated:sum1h"  # GPU-hours the team's pods held in this clock hour so far
USED_HOUR = "team:gpu_hours_used:sum1h"  # and kept busy
RUN_HOUR = "run:gpu_cost_usd:sum1h"  # USD a training run's pods cost in this clock hour so far
RUN_30D = "run:gpu_cost_usd:sum30d"  # what each run cost over the trailing 30 days: a run's cost, once it ended
TOKENS_HOUR = "workload:vllm_tokens:sum1h"  # tokens (prompt and generated) served in this clock hour so far
# the part of this clock hour so far (0 to 1) in which the cost sources answered: kube-state-metrics, whose pods' GPU
# requests every spend and GPU-hour record integrates. While it is down the spend series are absent and its minutes
# cost 0, so an hour without it is an hour `alicerce costs` does not hold (review obsreview24 F3)
MEASURED_HOUR = "site:cost_sources_answered_hours:sum1h"
# the same for the figures other sources feed (review obsreview25 G3): dcgm-exporter, whose utilisation the GPU-hours
# used integrate (a minute it is down while pods hold GPUs counts 0 used, and the cost of a used GPU-hour inflates),
# and the serving scrape, whose token counters the tokens served integrate. A minute with nothing to measure (no GPU
# held; no inference pod) counts as answered
USED_MEASURED_HOUR = "site:gpu_use_sources_answered_hours:sum1h"
TOKENS_MEASURED_HOUR = "site:serving_sources_answered_hours:sum1h"
# Each a minute's share (0 to 1) of what the source measures, not "any of it answered" (review obsreview26 G-B):
# dcgm-exporter runs as the GPU Operator's DaemonSet, one pod per GPU node, and the failure that loses GPU-hours used
# is one node's pod down (OOM-killed, evicted, an upgrade rolling node by node) while the others answer; the serving
# scrape is one target per pod. The GPUs pods hold on nodes with a DCGM series over all the GPUs pods hold (a MIG
# instance or time-sliced replica weighed by its share, as POD_GPUS bills it); 1 with no GPU held
GPU_USE_ANSWERED = f"(sum({POD_GPUS} and on (node) {GPU_UTIL}) / (sum({POD_GPUS}) > 0)) or absent({POD_GPUS}) or vector(0)"
# the ready pods the serving PodMonitor scrapes whose scrape answered, over all of them (a pod loading its model is not
# ready and serves nothing: nothing to measure); 0 where ready inference pods have no serving target at all (the
# PodMonitor gone), 1 with nothing ready to serve
_SERVED = f'max by (namespace, pod) (up{{{SERVING_WORKLOAD_LABEL}!=""}}) and on (namespace, pod) ({READY_PODS})'
_UNSCRAPED = f'0 * count({INFERENCE_POD} and on (namespace, pod) ({READY_PODS})) unless on () count(up{{{SERVING_WORKLOAD_LABEL}!=""}})'
TOKENS_ANSWERED = f"((count(({_SERVED}) == 1) or vector(0)) / count({_SERVED})) or ({_UNSCRAPED}) or vector(1)"
TEAM_MONTH = "team:gpu_cost_usd:sum_month"  # USD since the calendar month (UTC) began: what budgets compare
BUDGET = "alicerce:team_budget_usd:monthly"  # the share of a team's monthly budget the site watches
# a Prometheus's oldest sample, recorded only while it is past the start of the month the spend counts (history_rules)
HISTORY_START = "alicerce:cost_history_start:seconds"


def hour_total(hourly: str) -> str:
    """What the clock hour that ends at the evaluation time cost: the last sample of the hour-to-date record ``hourly``
    (_hourly) in that hour. The range ends a millisecond before the mark, whose own sample is the next hour's first
    minute (Prometheus timestamps are whole milliseconds; 3 opens ranges on the left, so exactly the hour's samples;
    2 also takes a sample at the very millisecond before the hour, read only for an hour with no sample of its own).
    Summed at the hour marks, each hour counts once with all it recorded: a Prometheus down over a mark (a restart,
    an upgrade) loses the minutes it was down, where reading a trailing hour's record at the mark lost the whole hour
    whose mark fell in the gap (review obsreview10 F5)."""
    return f"last_over_time({hourly}[1h] offset 1ms)"


def month_to_date(hourly: str) -> str:
    """The sum of ``hourly`` (an hour's total at each mark: hour_total) at the hour marks of the current calendar month
    (UTC), the window the budget guard and `alicerce costs` count, so budget alerts, the guard and finance tell one
    story (review obsreview2 DEFECT 5: the alerts read a trailing 30 days). PromQL has no range that starts at the
    month: inside the subquery ``month()`` is the month of each mark, outside it the month of now, so one term per month
    keeps the marks of the current one. A mark counts for the hour it ends (a second earlier): midnight of the first
    ends the previous month's last hour, while the month kept outside is the month of now. So at 00:00 on the 1st the
    record is the new month's (nothing yet), and until its first mark (01:00) every term is empty: the month so far then
    costs 0 for each series ``hourly`` has now. The record was last month's total at midnight and absent after it, so
    its readers (``last_over_time`` over 75 minutes) kept last month's total until ~01:15 while the guard had already
    released the queue (review observe4 DEFECT L, obsreview5 DEFECT 3). The old month's last hour is in no record: no
    budget alert of that month could read it before the month was over.

    The month of now inside the subquery is read with the ``@ end()`` modifier (the evaluation's own time at every
    step; Prometheus evaluates such a step-invariant term once): one subquery of 744 hourly steps where a term per month
    made twelve."""
    mark = "month(vector(time() - 1))"
    now = "month(last_over_time(vector(time())[1m:1m] @ end()))"
    return f"sum_over_time(({hourly} and on () {mark} == on () {now})[31d:1h]) or 0 * {hourly}"


# the hours to the end of the calendar month (UTC), now included
HOURS_LEFT = "((days_in_month() - day_of_month() + 1) * 24 - hour() - minute() / 60)"

# The month so far and the trailing 30 days change only at the hour marks, and one evaluation reads 720 to 744 hourly
# steps of each series: their own group, once an hour (an hour's cost counts at most an hour late). A platform that
# runs thousands of Jobs a month read that many subqueries every minute in the group whose hour integrals the budget
# reads (review obsreview13 F6). Their readers take the last value within SETTLED (settled)
HOUR_MARK_INTERVAL = "1h"
TOKENS_30D = "workload:usd_per_million_tokens:ratio30d"


def team_hours(former: Mapping[str, Sequence[str]]) -> str:
    """Each team's hour totals (hour_total of TEAM_HOUR), the hours recorded under a name a team had earlier
    (``former``: team -> teams[].renamedFrom) counted under the name it has now. Series identity is the label set, so
    without it a rename restarted the team's month at $0 and a team past its budget was under it again (review
    obsreview24 F2). A team's names are summed before the team label is set (two series of one label set are an
    error in one vector), and the former names' own series are left out: each hour counts once, under one name."""
    hours = hour_total(TEAM_HOUR)
    if not former:
        return hours
    carried = [
        f'label_replace(sum without (team) ({hour_total(f"{TEAM_HOUR}{{team=~{_names(team, *names)}}}")}), "team", "{team}", "", "")'
        for team, names in sorted(former.items())
    ]
    left_out = _names(*sorted(n for names in former.values() for n in names))
    # without (): drops the name alone, so the rest match the carried teams' label sets in `or`
    rest = f"sum without () ({hour_total(f'{TEAM_HOUR}{{team!~{left_out}}}')})"
    return "(" + " or ".join([*carried, rest]) + ")"


def _names(*names: str) -> str:
    """A PromQL regex matching exactly these team names (Prometheus anchors it; names are DNS labels: no metacharacter)."""
    return '"' + "|".join(names) + '"'


def hour_mark_rules(former: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    teams = team_hours(former)
    return [
        {"record": TEAM_MONTH, "expr": month_to_date(teams)},
        # trailing 30 days: the hours' costs summed at the hour marks (whatever the evaluation time, each hour once)
        {"record": TEAM_30D, "expr": f"sum_over_time({teams}[30d:1h])"},
        {"record": TEAM_7D, "expr": f"sum_over_time({teams}[{PACE_HOURS}h:1h])"},
        {"record": PACE_RECORDED, "expr": f"count_over_time(max({hour_total(TEAM_HOUR)})[{PACE_HOURS}h:1h])"},
        # cost per training run from the live metrics, beside the plan's estimate: each run's hours (issue 24 item 3;
        # review obsreview12 F5: only the plan said what a run cost)
        {"record": RUN_30D, "expr": f"sum_over_time({hour_total(RUN_HOUR)}[30d:1h])"},
        # over the trailing 30 days, the hours' costs over the hours' tokens: what the plan's cost per million tokens
        # at the mean rate (traffic.meanRps) is held against; the hourly ratio is higher every off-peak hour by
        # construction (review sizreview5 F4)
        {
            "record": TOKENS_30D,
            "expr": f"sum_over_time({hour_total(WORKLOAD_HOUR)}[30d:1h]) / on (namespace, workload) group_left () "
            f"(sum_over_time({hour_total(TOKENS_HOUR)}[30d:1h]) > 0) * 1e6",
        },
    ]


# How far back the hour-mark group's readers look for its last sample: an hour and the longest the group's first
# evaluation can come late. Prometheus runs it at an offset within the hour from a hash of the group (rules/group.go
# EvalTimestamp), so renaming the group, an upgrade or a restart that misses its slot moves that offset by up to an
# hour: with 75 minutes the month read empty for up to 45 minutes, and the budget alerts resolved and fired again
# (review obsreview15 F6)
SETTLED = "135m"


def settled(series: str) -> str:
    """A record of the hour-mark group as its readers take it: its last sample within SETTLED."""
    return f"last_over_time({series}[{SETTLED}])"


def month_spent(selector: str) -> str:
    """The month so far as its readers take it: the last sample of the hourly record within SETTLED, unless it was
    recorded in a previous month. Prometheus runs an hourly group at an offset within the hour (rules/group.go
    EvalTimestamp: hash of the group modulo its interval), e.g. at hh:37: from 00:00 on the 1st to that evaluation the
    newest sample was last month's total, and the budget alerts and the team dashboard read it into the new month
    (review obsreview8 F5). The sample's own time comes from timestamp() of the series, read each minute of the
    window."""
    series = f"{TEAM_MONTH}{{{selector}}}"
    recorded_this_month = f"month(last_over_time(timestamp({series})[{SETTLED}:1m])) == on () group_left () month()"
    return f"({settled(series)} and {recorded_this_month})"


# Present (1) while the team's month so far is at or past the share of its budget the site watches: what makes the
# budget guard hold its ClusterQueue (budget_guard.decide: past the share, or at it when the share is above $0). The
# only inactive queue that is no fault: the queue alerts mute on it, and on nothing else (review obsreview24 F1). The
# month so far is recorded once an hour (hour_mark_rules), so this follows a guard's hold by up to an hour
BUDGET_EXHAUSTED = "team:gpu_budget_exhausted:bool"
# how long after the month's turn a guard's hold still counts as the budget's: the guard releases the queue at its first
# run of the new month (every 15 minutes, alicerce.emit.kube.budgets.SCHEDULE), while the month so far starts at 0
HOLD_RELEASE_GRACE = "30m"


def exhausted_rule(team: str) -> dict[str, Any]:
    """The record of BUDGET_EXHAUSTED for ``team`` (a team whose budget stops admitting, with a share here)."""
    spent, budget = month_spent(f'team="{team}"'), f'{BUDGET}{{team="{team}"}}'
    expr = f"({spent} > on (team) {budget} or {spent} >= on (team) ({budget} > 0)) * 0 + 1"
    return {"record": BUDGET_EXHAUSTED, "expr": expr, "labels": {"team": team}}


def budget_held(team: str) -> str:
    """Present while ``team``'s budget is spent, or was within HOLD_RELEASE_GRACE: its guard's hold is legitimate."""
    return f'max_over_time({BUDGET_EXHAUSTED}{{team="{team}"}}[{HOLD_RELEASE_GRACE}])'


# the clock hour (UTC) of a subquery's step, and of the evaluation the subquery runs in (as month_to_date reads months)
STEP_HOUR = "hour(vector(time()))"
EVALUATION_HOUR = "hour(last_over_time(vector(time())[1m:1m] @ end()))"


def _hourly(record: str, rate: str) -> list[dict[str, Any]]:
    """``record``: the integral of ``rate`` (per hour) over the clock hour so far, read each minute (a minute without
    the series costs 0); its last sample in an hour is what the hour cost (hour_total). Each minute's step counts in
    the hour it falls in, so every minute is in exactly one hour."""
    this_hour = f"(({rate}) and on () {STEP_HOUR} == on () {EVALUATION_HOUR})"
    return [{"record": record, "expr": f"sum_over_time({this_hour}[1h:1m]) / 60"}]


def cost_rules(
    prices: dict[str, float],
    workload_prices: dict[tuple[str, str, str], float] | None = None,
    reserved_gpus: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """``prices``: pool -> USD per GPU-hour at the site, from the plan. ``workload_prices``: (pool, workload, team) ->
    the workload's own USD per GPU-hour where the plan prices it apart from its pool (WorkloadPlan.billed_usd_per_gpu_hour:
    on Capacity Blocks each workload pays the blocks its own schedule buys, and one average per pool showed a $1,888
    run back at $3,001 and a $944 one at $387: review sizreview19 F3). Cost centers come with the namespace -> team
    info series (alicerce.emit.kube.kpi.join_rules). ``reserved_gpus``: pool -> GPUs billed whether launched or not
    (RESERVED_GPUS)."""
    rules: list[dict[str, Any]] = [
        {"record": PRICE, "expr": f"vector({usd:.6g})", "labels": {"pool": pool}} for pool, usd in sorted(prices.items())
    ]
    reserved = {pool: gpus for pool, gpus in (reserved_gpus or {}).items() if pool in prices and gpus > 0}
    rules += [{"record": RESERVED_GPUS, "expr": f"vector({gpus})", "labels": {"pool": pool}} for pool, gpus in sorted(reserved.items())]
    rules += [
        {"record": WORKLOAD_PRICE, "expr": f"vector({usd:.6g})", "labels": {"pool": pool, "workload": workload, "team": team}}
        for (pool, workload, team), usd in sorted((workload_prices or {}).items())
    ]
    priced = f"{POD_GPUS} * on (pool) group_left () {PRICE}"
    if workload_prices:
        # a pod of a workload priced apart, on that workload's pool and in a namespace of its team (another team's pod
        # labelled with its name keeps its pool's price), at the workload's price; every other pod at its pool's. The
        # pod's workload is read from kube-state-metrics itself: the join record of another group lags a step, and a
        # new pod's first minute would take its pool's price
        pods = (f"{POD_GPUS} * on (namespace, pod) group_left (workload) {workload_pods()} "
                f"* on (namespace) group_left (team) {NAMESPACE_TEAM}")  # fmt: skip
        own = f"sum without (workload, team) (({pods}) * on (pool, workload, team) group_left () {WORKLOAD_PRICE})"
        priced = f"{own} or {priced}"
    rules += [
        {"record": "pod:gpu_cost_usd:rate1h", "expr": priced},
        # a team of the site that runs nothing costs 0, recorded as such while kube-state-metrics answers: so the spend
        # series is absent only when its sources are (the budget guard then keeps the queue as it is and says so)
        {
            "record": TEAM_COST,
            "expr": f"sum by (team) (pod:gpu_cost_usd:rate1h * on (namespace) group_left (team) {NAMESPACE_TEAM}) "
            f"or 0 * max by (team) ({NAMESPACE_TEAM}) and on () (count(kube_node_labels) > 0)",
        },
        {
            "record": "cost_center:gpu_cost_usd:rate1h",
            "expr": f"sum by (cost_center) (pod:gpu_cost_usd:rate1h * on (namespace) group_left (cost_center) {NAMESPACE_TEAM})",
        },
        {"record": "pool:gpu_cost_usd:rate1h", "expr": "sum by (pool) (pod:gpu_cost_usd:rate1h)"},
        # what the installed GPUs nobody holds cost: a reservation's or an owned pool's idle hours, autoscaled nodes
        # that stay up empty. No team pays it (showback bills allocations), so it is the platform team's own lever
        # (review obsreview24 N1)
        {
            "record": IDLE_COST,
            "expr": f"({idle_gpus(bool(reserved))}) * on (pool) group_left () {PRICE}",
        },
        # the records the hour integrals below read come first: a group's rules run in order, so an integral above
        # its rate read the previous minute's and lost each hour's last minute (the run cost test found it)
        {
            # a run's pods, by team and cost centre: what a TrainJob (its JobSet), a plain Job or a RayJob costs while
            # it runs, each incarnation of a name apart (run_uid)
            "record": "run:gpu_cost_usd:rate1h",
            "expr": f"sum by (namespace, run_kind, run, run_uid) (pod:gpu_cost_usd:rate1h * on (namespace, pod) "
            f"group_left (run_kind, run, run_uid) {pod_runs()}) * on (namespace) group_left (team, cost_center) {NAMESPACE_TEAM}",
        },
        {
            "record": "workload:gpu_cost_usd:rate1h",
            "expr": f"sum by (namespace, workload) (pod:gpu_cost_usd:rate1h * on (namespace, pod) group_left (workload) {POD_WORKLOAD})",
        },
        # what the clock hour has cost so far: the rate read every minute of it (a minute without the series costs 0).
        # A total reads each hour's last sample at the mark that ends it (hour_total), each hour once: reading the rate
        # itself there billed only what ran at the mark (a job from :05 to :55 cost nothing; review obsreview2 DEFECT 1)
        *_hourly(TEAM_HOUR, TEAM_COST),
        *_hourly(WORKLOAD_HOUR, "workload:gpu_cost_usd:rate1h"),
        *_hourly(RUN_HOUR, "run:gpu_cost_usd:rate1h"),
        *_hourly(ALLOCATED_HOUR, "team:gpus_allocated:sum"),
        *_hourly(USED_HOUR, "team:gpus_busy:sum"),
        # tokens per second, read every minute: x 60 s x 60 (the per-hour rate _hourly divides by 60)
        *_hourly(TOKENS_HOUR, "workload:vllm_tokens:rate5m * 3600"),
        # 1 a minute while kube-state-metrics answers (the spend series' own guard, TEAM_COST), 0 otherwise: recorded
        # every hour the rules run, so an hour of 0 is one the sources were down for, not one nobody recorded
        *_hourly(MEASURED_HOUR, "(count(kube_node_labels) > bool 0) or vector(0)"),
        *_hourly(USED_MEASURED_HOUR, GPU_USE_ANSWERED),
        *_hourly(TOKENS_MEASURED_HOUR, TOKENS_ANSWERED),
        # cost of a used GPU-hour: what the team pays for allocated GPUs over the GPU-hours they were busy
        # none busy: no figure (not +Inf: review obsreview8 F8); what the idle GPUs cost stays in team:gpu_cost_usd:rate1h
        {"record": "team:usd_per_used_gpu_hour:ratio", "expr": f"{TEAM_COST} / (team:gpus_busy:sum > 0)"},
        # serving: USD per million tokens (prompt and generated, as the plan counts them) at the current rate
        {
            "record": "workload:usd_per_million_tokens:ratio",
            # an idle replica (no tokens) has no cost per token: without the guard it recorded +Inf, which every panel
            # and average over it then showed (review obsreview7 N3); its cost is workload:gpu_cost_usd:rate1h
            "expr": "workload:gpu_cost_usd:rate1h / on (namespace, workload) group_left () "
            "((workload:vllm_tokens:rate5m > 0) * 3600) * 1e6",
        },
    ]
    return rules


def _spend_alerts(name: str, budget_usd: float, usd: float, percents: list[int], team: str) -> list[Alert]:
    """The thresholds of the ``usd`` this site watches of the team's ``budget_usd``, and the month's projection."""
    out = []
    # the share this site watches: the team's sites' shares add up to its budget (plan.site_budgets)
    where = f" (this site's share of its ${budget_usd:,.0f} budget)" if usd < budget_usd else ""
    for percent in percents:
        limit = usd * percent / 100
        out.append(Alert(budget_alert_name(name, percent), f"{month_spent(team)} > {limit:.6g}", "1h",
                         "warning",  # a budget is a conversation, not a page
                         f"Team {name} has spent {percent}% of its ${usd:,.0f} monthly GPU budget{where}",
                         "This month's GPU spend at the plan's prices (team:gpu_cost_usd:sum_month) is past it. Ask the "
                         "team to stop idle work (GPUIdleWhileAllocated) or raise the budget; see `alicerce plan`."))  # fmt: skip
    # the month so far plus the trailing week's average rate over the hours the calendar month has left (UTC, as the
    # budgets count): "the rate for 720 hours" was quiet on the 20th with 95% spent and fired on the 31st with nothing
    # spent (review obsreview3 DEFECT I). The pace is a week's, not the current rate: training is bursty (a run at full
    # quota, then evaluation, then nothing), and the current rate x every hour left called one 8-hour job on the 2nd,
    # 1.7% of the share, "on course to overrun" (review obsreview22 F4). A week spans the month's start (the 1st reads
    # last month's pace, not one job's) and a steady overspend moves it within days. The week's spend is divided by the
    # hours of it this Prometheus recorded (PACE_RECORDED), a day at least: one under a week old (a new platform, a
    # volume lost) divided a day's spend by 168 hours and read a seventh of the pace, so an overspend from the 1st
    # fired on the 7th instead of the 2nd (obsreview notes); the day's floor keeps one job in its first hours from
    # being extrapolated to the month. Without the record (the hour-mark group not yet run): 168 hours, as before
    so_far = f"({month_spent(team)} or 0 * {TEAM_COST}{{{team}}})"
    hours = f"(clamp_min({settled(PACE_RECORDED)}, {PACE_MIN_HOURS}) or on () vector({PACE_HOURS}))"
    pace = f"({settled(f'{TEAM_7D}{{{team}}}')} or 0 * {TEAM_COST}{{{team}}}) / on () group_left () {hours}"
    projected = f"{so_far} + {pace} * on () group_left () {HOURS_LEFT}"
    out.append(Alert(budget_alert_name(name, None), f"{projected} > {usd:.6g}", "6h", "warning",
                     f"Team {name} is on course to overrun its ${usd:,.0f} monthly GPU budget{where}",
                     "This month's spend so far and the trailing 7 days' average spend rate (team:gpu_cost_usd:sum7d over "
                     "the hours of them Prometheus recorded, a day at least) "
                     "over the hours the month has left cost more than the budget: check what the team's pods hold "
                     "(team:gpus_allocated:sum) against what they use (team:gpus_busy:sum)."))  # fmt: skip
    return out


def _nothing_left(name: str, budget_usd: float, percent: int | None, team: str) -> Alert:
    """A site whose share is $0 (the plan puts the team's months and priced quota at its other sites, or they take the
    whole budget: PL334): any spend here is over it, said once (under the highest threshold's name), where thresholds
    of $0 said "100% of its $0 budget" as often as they were declared. A budget with no thresholds (``alertAtPercent:
    []``: the projection only) names it as its projection (``percent`` None): at a $0 share any spend is on course to
    overrun it (generate crashed on max() of no thresholds; review obsreview22 F5)."""
    return Alert(budget_alert_name(name, percent), f"{month_spent(team)} > 0", "1h", "warning",
                 f"Team {name} spends GPU money at this site, where its ${budget_usd:,.0f} budget leaves none",
                 "The plan gives this site $0 of the team's budget (`alicerce plan`: its planned months and priced quota are "
                 "at its other sites, or take all of it: PL334), so GPUs it borrows here are spent past the budget: move the "
                 "work to those sites, or give it quota here or a larger budget.")  # fmt: skip


def budget_alerts(rp: ResolvedPlatform, site_name: str, shares: dict[str, float]) -> list[Alert]:
    """An alert at each of a team's budget thresholds on its GPU spend this calendar month, and one when the month so far
    and the trailing week's pace would overrun the budget by its end; ``shares``: team -> the part of its budget spent at this
    site."""
    out = []
    by_name = {t.name: t for t in rp.teams}
    for name, share in sorted(shares.items()):
        budget = by_name[name].spec.budget
        if budget is None:
            continue
        usd = budget.monthly_usd * share
        team = f'team="{name}"'
        out += (
            _spend_alerts(name, budget.monthly_usd, usd, sorted(set(budget.alert_at_percent)), team)
            if usd
            else [_nothing_left(name, budget.monthly_usd, max(budget.alert_at_percent, default=None), team)]
        )
        if budget.on_exhausted == "stopAdmitting":
            # the guard reads this series; without it it holds nothing and releases nothing (budget_guard.run)
            out.append(Alert(budget_blind_alert_name(name), f'absent({TEAM_COST}{{team="{name}"}})', "30m", "warning",
                             f"Team {name}'s GPU spend is not recorded: its budget guard cannot stop or release its queue",
                             "team:gpu_cost_usd:rate1h is absent (kube-state-metrics down or not scraped, or the cost rules "
                             "not loaded): the budget guard keeps the team's ClusterQueue as it is and its runs fail until "
                             "the spend is back (KubeStateMetricsAbsent; the guard's log in the monitoring namespace)."))  # fmt: skip
    if out:
        out.append(history_alert())
    return out


# the month's first hour mark (01:00 UTC on the 1st): the month so far reads the records of the hour before it
FIRST_MARK = "(time() - time() % 3600 - scalar((day_of_month() - 1) * 86400 + hour() * 3600) + 3600)"
# how long after its namespace a Prometheus of a new platform may take to write its first sample (the chart's install,
# the volume's provisioning, the image pull): a TSDB that starts later than that is one that lost its history
FIRST_SAMPLE_GRACE_SECONDS = 3600


def history_rules() -> list[dict[str, Any]]:
    """The oldest sample of each Prometheus (prometheus_tsdb_lowest_timestamp_seconds, whatever made it so: tsdb/db.go
    at v3.14.0, the image kube-prometheus-stack 88.5.3 runs), recorded while it is past the month's first hour mark
    and the TSDB lost samples it had. Two ways to lose them (review observe4 G18, obsreview6 DEFECT 6, obsreview8 F3):
    retention deleted the oldest blocks, by size (``retentionSize``, 90% of the volume) whatever their age or by time
    (prometheus_tsdb_size_retentions_total, prometheus_tsdb_time_retentions_total); or the TSDB began again after
    the platform did: its volume lost or its claim re-created, a new replica, a StatefulSet re-created by a sync. No
    counter says the second; the platform's age does. A Prometheus installed mid-month also starts mid-month, but
    its namespace is as new as its TSDB, while one whose history was lost starts long after its namespace
    (kube_namespace_created, kube-state-metrics v2.20.0 internal/store/namespace.go: the namespace's creation time).
    Nodes tell no such age: a managed node group's upgrade replaces every node. Re-creating the monitoring namespace
    itself reads as a new platform (nothing in the cluster remembers the old one)."""
    lowest = "prometheus_tsdb_lowest_timestamp_seconds"
    deleted = "(increase(prometheus_tsdb_size_retentions_total[31d]) > 0 or increase(prometheus_tsdb_time_retentions_total[31d]) > 0)"
    installed = f'max(kube_namespace_created{{namespace="{MONITORING_NAMESPACE}"}}) + {FIRST_SAMPLE_GRACE_SECONDS}'
    restarted = f"{lowest} > on () group_left () ({installed})"
    return [{"record": HISTORY_START, "expr": f"{lowest} > {FIRST_MARK} and on (namespace, pod) ({deleted} or {restarted})"}]


def history_alert() -> Alert:
    """Once the month's first hours are gone, the month so far, the budget alerts and the guard under-count with no
    error (history_rules); the guard keeps a hold it set this month meanwhile (budget_guard.decide)."""
    return Alert(COST_HISTORY_TRUNCATED, HISTORY_START, "30m", "warning",
                 "Prometheus {{ $labels.pod }} lacks the start of this month's samples",
                 "Retention deleted them (by size or by time), or the TSDB started again after the platform did (its "
                 "volume lost or re-created, a new replica). This month's GPU spend and the budget alerts count only "
                 "from the oldest sample kept: they under-count until the next month, and the budget guard keeps the "
                 "holds it set this month: a team's ClusterQueue stopped since before the truncation began is not "
                 "reported by KueueClusterQueueInactive (a kept hold looks the same; `kubectl get clusterqueue -o "
                 "jsonpath='{.items[*].status.conditions}'` shows each Active condition's reason). Keep a month: "
                 "monitoring.retention of 31d or more, a monitoring.storage that "
                 "holds that many days of samples (its claims do not grow with it: grow them before that change "
                 "syncs, as `alicerce diff` lists), and a volume that outlives the pod.")  # fmt: skip
