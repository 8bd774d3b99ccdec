"""Teams, SLOs and workloads: quotas that fit, SLOs and workloads with the fields they need."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from alicerce.resolve.namespaces import RESERVED_NAMESPACES
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean, format_path, one_of
from alicerce.spec.models import PlatformSpec
from alicerce.spec.paths import SpecPath

rules = RuleSet()


@rules.rule("AL260", "quota-capacity", "Team GPU quotas on a pool add up to no more than the pool's GPU units at max size.")
def quota_capacity(ctx: RuleContext) -> Iterable[Finding]:
    pools = {p.name: p for p in ctx.resolved.pools if p.gpu_units is not None}
    totals: dict[str, int] = defaultdict(int)
    last: dict[str, tuple[int, int]] = {}
    for team in ctx.resolved.teams:
        for quota in team.quotas:
            totals[quota.pool] += quota.units
            last[quota.pool] = (team.index, quota.index)
            pool = pools.get(quota.pool)
            if pool is not None and quota.borrowing_limit is not None:
                room = pool.max_gpu_units - quota.units
                if quota.borrowing_limit > room:
                    yield Finding(
                        S.tenancy.teams[team.index].quotas[quota.index].borrowing_limit,
                        f"borrowing {quota.borrowing_limit} GPUs on top of {quota.units} exceeds pool {pool.name}'s {pool.max_gpu_units}",
                        f"lower borrowingLimit to {max(room, 0)}",
                        quota.borrowing_limit,
                    )
    for pool_name, total in totals.items():
        pool = pools.get(pool_name)
        if pool is None or pool.gpu_units is None or total <= pool.max_gpu_units:
            continue
        i, j = last[pool_name]
        yield Finding(
            S.tenancy.teams[i].quotas[j].gpus,
            f"quotas on pool {pool_name} add up to {total} GPUs; at max {pool.spec.scaling.max} nodes it has {pool.max_gpu_units}",
            f"raise the pool's max to {-(-total // max(pool.gpu_units.per_node, 1))} nodes or lower the quotas",
            total,
            resource=pool_name,
        )


@rules.rule(
    "AL264", "workload-pool-quota", "A workload pinned to a GPU pool runs where its team holds quota (Kueue admits it nowhere else)."
)
def workload_pool_quota(ctx: RuleContext) -> Iterable[Finding]:
    # a team's ClusterQueue has a flavor only for the pools of its quotas (alicerce.emit.kube.kueue): a job asking
    # for another pool's nodes matches no flavor and waits for ever (kueue v0.19.2 flavorassigner.go 1246-1253)
    teams = {t.name: t for t in ctx.resolved.teams}
    gpu_pools = {p.name for p in ctx.resolved.pools if p.gpu is not None}
    for i, w in enumerate(ctx.spec.workloads):
        team = teams.get(w.team)
        if w.pool is None or w.pool not in gpu_pools or team is None or not team.quotas:
            continue
        held = sorted(q.pool for q in team.quotas)
        if w.pool not in held:
            yield Finding(
                S.workloads[i].pool,
                f"team {team.name} holds no quota on pool {w.pool}: its queue never admits {w.name} there",
                f"pin a pool of the team's quotas ({', '.join(held)}), or give team {team.name} a quota on {w.pool}",
                w.pool,
                resource=w.name,
            )


@rules.rule("AL261", "slo-fields", "SLOs have the fields their kind needs.")
def slo_fields(ctx: RuleContext) -> Iterable[Finding]:
    workloads = {w.name: w for w in ctx.spec.workloads}
    for i, slo in enumerate(ctx.spec.monitoring.slos):
        path = S.monitoring.slos[i]
        if slo.kind == "inference-latency":
            if slo.workload is None or slo.percentile is None:
                yield Finding(path, "an inference-latency SLO needs workload and percentile", "add workload: and percentile: 99")
            elif slo.workload in workloads and workloads[slo.workload].kind != "inference":
                yield Finding(
                    path.workload, f'workload "{slo.workload}" is {workloads[slo.workload].kind}, not inference', None, slo.workload
                )
        if slo.kind == "queue-wait" and slo.team is None:
            yield Finding(path, "a queue-wait SLO needs the team whose queue it watches", "add team:")
        if slo.kind == "availability":
            if slo.workload is None:
                yield Finding(path, "an availability SLO needs the inference workload whose requests it counts", "add workload:")
            elif slo.workload in workloads and workloads[slo.workload].kind != "inference":
                yield Finding(
                    path.workload, f'workload "{slo.workload}" is {workloads[slo.workload].kind}, not inference', None, slo.workload
                )
            if slo.threshold is not None:
                # it used to be required and did nothing: the SLI is the share of API requests answered 5xx
                yield Finding(
                    path.threshold,
                    "an availability SLO counts requests answered with a server error: a threshold does nothing there",
                    "delete threshold",
                    slo.threshold,
                )
            continue
        if slo.threshold is None:
            yield Finding(path, f"a {slo.kind} SLO needs a threshold", "add threshold: (a duration, or a fraction for gpu-utilization)")
        elif slo.kind == "gpu-utilization" and not 0 < float(slo.threshold) <= 1:
            yield Finding(path.threshold, "a gpu-utilization threshold is a fraction between 0 and 1", "e.g. 0.6", slo.threshold)


# the fast burn-rate alert pages at 14.4x the error budget (alicerce.emit.kube.diagnoses): with a budget of 1/14.4 of
# requests or more, the error ratio it waits for is over 100% and it can never fire
FAST_BURN = 14.4


def serving_slo_path(where: tuple[str | int, ...]) -> SpecPath:
    """The spec path of a serving SLO's declaration (alicerce.catalog.alerts.ServingSlo.where)."""
    path = S
    for part in where:
        path = path[part] if isinstance(part, int) else getattr(path, part)
    return path


@rules.rule("AL360", "slo-measurable", "SLOs can be measured exactly and their burn-rate alerts can fire.")
def slo_measurable(ctx: RuleContext) -> Iterable[Finding]:
    """A histogram says exactly which share of observations was above a threshold only at one of its bucket bounds;
    between two, an alert on it fires while the SLO is met or stays silent while it is missed."""
    from alicerce.catalog.alerts import KUEUE_WAIT_BUCKETS, LATENCY_HISTOGRAMS, TTFT, bucket_bound, nearest_bounds, serving_slos

    for slo in serving_slos(ctx.spec):
        if slo.implied:  # made only at a bound (serving_slos); the percentile (95 or 99) lets its fast burn fire
            continue
        path = serving_slo_path(slo.where)
        budget = slo.error_budget
        if FAST_BURN * budget >= 1:  # the objective sets every serving SLO's budget (ServingSlo.error_budget)
            yield Finding(
                path.objective,
                f"an objective of {slo.objective:g}% leaves an error budget so large that its fast burn-rate alert "
                f"({FAST_BURN:g}x the budget) waits for more than 100% errors: it can never fire",
                f"above {100 * (1 - 1 / FAST_BURN):.2f}, e.g. 99",
                slo.objective,
            )
        if slo.kind == "inference-latency" and bucket_bound(slo.threshold, LATENCY_HISTOGRAMS[TTFT]) is None:
            declared = ctx.spec.monitoring.slos[int(slo.where[2])].threshold
            yield Finding(
                path.threshold,
                f"vLLM's time-to-first-token histogram has no bucket at {slo.threshold * 1000:g} ms: the share of requests "
                "slower than it cannot be measured exactly",
                f"a bucket bound: {nearest_bounds(slo.threshold, LATENCY_HISTOGRAMS[TTFT])}",
                declared,
            )
    for i, declared_slo in enumerate(ctx.spec.monitoring.slos):
        if declared_slo.kind != "queue-wait" or declared_slo.threshold is None:
            continue  # a missing threshold is AL261's
        threshold = float(declared_slo.threshold)
        if bucket_bound(threshold, KUEUE_WAIT_BUCKETS) is None:
            yield Finding(
                S.monitoring.slos[i].threshold,
                f"Kueue's admission-wait histogram has no bucket at {threshold:g} s: the share of jobs that waited longer "
                "cannot be measured exactly",
                f"a bucket bound: {nearest_bounds(threshold, KUEUE_WAIT_BUCKETS)}",
                declared_slo.threshold,
            )


@rules.rule("AL323", "latency-target-measurable", "A workload's latency target is a bound of the histogram that measures it.",
            waivable=True)  # fmt: skip
def latency_target_measurable(ctx: RuleContext) -> Iterable[Finding]:
    """A workload's latency target becomes an SLO (its alert and burn rates) only at a bucket bound of vLLM's histogram
    (AL360's reason); elsewhere it sized the plan and silently got no alert. Waive it to keep a sizing-only target."""
    from alicerce.catalog.alerts import LATENCY_HISTOGRAMS, TTFT, bucket_bound, latency_targets, nearest_bounds

    for target in latency_targets(ctx.spec):
        buckets = LATENCY_HISTOGRAMS[target.metric]
        if target.stated or bucket_bound(target.threshold, buckets) is not None:
            continue
        what = "time-to-first-token" if target.metric == TTFT else "time-per-output-token"
        # the bounds either side in the message itself: a 20 ms TPOT reads like a bucket (vLLM's TTFT histogram has
        # one), but INTER_TOKEN_LATENCY_BUCKETS goes from 10 ms to 25 ms (review sizreview19 F9)
        near = nearest_bounds(target.threshold, buckets)
        yield Finding(
            serving_slo_path(target.where),
            f"vLLM's {what} histogram has no bucket at {target.threshold * 1000:g} ms (its nearest bounds are "
            f"{near.replace(' or ', ' and ')}): this p{target.percentile} target would get no SLO alert, the share of "
            "slower requests cannot be measured exactly",
            f"a bucket bound: {near}" + (f"; or a monitoring.slos entry for {target.workload} at one" if target.metric == TTFT else ""),
            getattr(getattr(ctx.spec.workloads[int(target.where[1])].latency, str(target.where[3])), str(target.where[4])),
            resource=target.workload,
        )


@rules.rule("AL280", "workload-fields", "Workloads carry the fields their kind needs for sizing.")
def workload_fields(ctx: RuleContext) -> Iterable[Finding]:
    for i, w in enumerate(ctx.spec.workloads):
        path = S.workloads[i]
        if w.kind in ("training", "fine-tuning", "inference", "batch-inference") and w.model is None:
            yield Finding(path, f"a {w.kind} workload needs model.parameters", "add model: {parameters: 7B}", resource=w.name)
        if w.kind in ("training", "fine-tuning") and w.tokens is None:
            yield Finding(path, f"a {w.kind} workload needs tokens (the training budget)", "add tokens: 2T", resource=w.name)
        if w.kind == "inference" and w.traffic is None:
            yield Finding(
                path,
                "an inference workload needs traffic (peak load and token counts)",
                "add traffic: {peakRps: 20, inputTokens: 1000, outputTokens: 200}",
                resource=w.name,
            )
        if w.traffic is not None and w.traffic.peak_rps is None and w.traffic.concurrency is None:
            yield Finding(path.traffic, "traffic needs peakRps or concurrency", None)
        if w.kind == "fine-tuning" and w.method is None:
            yield Finding(path, "a fine-tuning workload needs method: full, lora or qlora", "add method: lora", resource=w.name)
        if w.method is not None and w.kind != "fine-tuning":
            yield Finding(path.method, f"method applies to fine-tuning, not {w.kind}", "remove it", w.method, key=True)
        model = w.model
        if model is not None:
            if model.architecture == "moe" and model.active_parameters is None:
                yield Finding(path.model, "a mixture-of-experts model needs activeParameters", "add activeParameters: 13B")
            if model.active_parameters is not None and model.active_parameters > model.parameters:
                yield Finding(path.model.active_parameters, "activeParameters exceeds parameters", None, model.active_parameters)
            if model.architecture == "dense" and model.active_parameters not in (None, model.parameters):
                yield Finding(
                    path.model.active_parameters,
                    "a dense model uses all its parameters per token",
                    "set architecture: moe, or remove activeParameters",
                    model.active_parameters,
                )


def generated_alerts(spec: PlatformSpec) -> list[tuple[str, SpecPath | None, str]]:
    """Every alert alicerce emits for the spec: (alert name, the spec entry it comes from or None for a built-in, what
    makes it). A site's rules repeat a team's budget alerts; each is listed once."""
    from alicerce.catalog.alerts import (
        STATIC_ALERTS,
        STORAGE_ALERTS,
        budget_alert_name,
        budget_blind_alert_name,
        pool_alert_name,
        serving_slos,
        slo_alert_name,
        slo_burn_fast_alert_name,
        slo_burn_slow_alert_name,
        slo_starved_alert_name,
    )

    out: list[tuple[str, SpecPath | None, str]] = [(name, None, "a built-in alert") for name in STATIC_ALERTS]
    out += [(a.name, None, "a built-in alert of sites whose nodes mount a Lustre or NFS tier") for a in STORAGE_ALERTS]
    for i, pool in enumerate(spec.node_pools):
        if pool.accelerator is not None:
            out.append((pool_alert_name(pool.name), S.node_pools[i].name, f"pool {pool.name}'s missing-GPU alert"))
    for i, slo in enumerate(spec.monitoring.slos):
        at = S.monitoring.slos[i].name
        out.append((slo_alert_name(slo.name), at, f"SLO {slo.name}'s alert"))
        if slo.kind == "queue-wait":
            out.append((slo_starved_alert_name(slo.name), at, f"SLO {slo.name}'s starved alert"))
        if slo.kind in ("inference-latency", "availability"):
            out.append((slo_burn_fast_alert_name(slo.name), at, f"SLO {slo.name}'s fast-burn alert"))
            out.append((slo_burn_slow_alert_name(slo.name), at, f"SLO {slo.name}'s slow-burn alert"))
    for serving in serving_slos(spec):
        if serving.implied:
            at = serving_slo_path(serving.where)
            what = f"workload {serving.workload}'s latency target {serving.name}"
            out += [(slo_alert_name(serving.name), at, f"{what}: its alert"),
                    (slo_burn_fast_alert_name(serving.name), at, f"{what}: its fast-burn alert"),
                    (slo_burn_slow_alert_name(serving.name), at, f"{what}: its slow-burn alert")]  # fmt: skip
    for t, team in enumerate(spec.tenancy.teams):
        if team.budget is None:
            continue
        for j, percent in enumerate(team.budget.alert_at_percent):
            if percent not in team.budget.alert_at_percent[:j]:
                at = S.tenancy.teams[t].budget.alert_at_percent[j]
                out.append((budget_alert_name(team.name, percent), at, f"team {team.name}'s budget alert at {percent}%"))
        at = S.tenancy.teams[t].name
        out.append((budget_alert_name(team.name, None), at, f"team {team.name}'s projected-budget alert"))
        if team.budget.on_exhausted == "stopAdmitting":
            out.append((budget_blind_alert_name(team.name), at, f"team {team.name}'s budget guard's missing-spend alert"))
    return out


@rules.rule("AL262", "alert-overrides", "Alert overrides name an alert alicerce emits.")
def alert_overrides(ctx: RuleContext) -> Iterable[Finding]:
    known = [name for name, _, _ in generated_alerts(ctx.spec)]
    for i, override in enumerate(ctx.spec.monitoring.alerts):
        if override.alert not in known:
            yield Finding(
                S.monitoring.alerts[i].alert,
                f'no alert named "{override.alert}"',
                did_you_mean(override.alert, known) or one_of(known),
                override.alert,
            )


@rules.rule("AL361", "alert-names-unique", "No two sources in the spec give their alerts the same name.")
def alert_names_unique(ctx: RuleContext) -> Iterable[Finding]:
    """Alert names are derived from spec names (``ml`` at 180% and ``ml-1`` at 80% both make ``BudgetMl180``; SLO
    ``a-burn-fast`` and SLO ``a``'s fast-burn alert both make ``SLOABurnFast``). Prometheus accepts two rules of one
    name, but a ``monitoring.alerts[]`` override, an Alertmanager route or a silence by alertname then hits both, and
    an operator paged for one cannot tell which fired: refused at the second source, naming the first."""
    first: dict[str, tuple[SpecPath | None, str]] = {}
    for name, at, what in generated_alerts(ctx.spec):
        if name not in first:
            first[name] = (at, what)
            continue
        other_at, other = first[name]
        where = f" ({format_path(other_at.path)})" if other_at is not None else ""
        yield Finding(
            at if at is not None else S.monitoring,
            f"{what} would be named {name}, as {other}{where} already is",
            "rename one of the two: alert names drop the dashes of spec names, and an override, a route or a silence by "
            "alertname would reach both",
            name,
        )


@rules.rule("AL263", "ingress-not-a-team", "The gateway namespaces serving traffic comes from are not team namespaces.")
def ingress_not_a_team(ctx: RuleContext) -> Iterable[Finding]:
    owners = {ns: team.name for team in ctx.resolved.teams for ns in team.namespaces}
    for i, ns in enumerate(ctx.spec.tenancy.ingress.namespaces):
        if ns in owners:
            yield Finding(
                S.tenancy.ingress.namespaces[i],
                f"namespace {ns} belongs to team {owners[ns]}: every pod there would reach the serving namespaces",
                "name the namespace of the gateway or ingress controller itself",
                ns,
            )


@rules.rule("AL265", "team-namespaces-not-reserved", "No team claims a namespace Kubernetes or the platform runs in.")
def team_namespaces_not_reserved(ctx: RuleContext) -> Iterable[Finding]:
    """A team's namespace gets the team's RoleBinding (pods, exec), a restricted Pod Security label and a
    default-deny NetworkPolicy: in kube-system that is cluster-admin by exec into privileged pods and a
    cluster without CNI or DNS; in an operator's namespace, the operator stops."""
    for t, team in enumerate(ctx.spec.tenancy.teams):
        for n, ns in enumerate(team.namespaces):
            if ns in RESERVED_NAMESPACES:
                yield Finding(
                    S.tenancy.teams[t].namespaces[n],
                    f"namespace {ns} is the platform's own: team {team.name} would hold exec in its pods and its "
                    "restricted Pod Security and default-deny policy would stop what runs there",
                    f"name a namespace of the team's own, such as {team.name}-jobs",
                    ns,
                )
        if not team.namespaces and team.name in RESERVED_NAMESPACES:
            yield Finding(
                S.tenancy.teams[t].name,
                f"team {team.name} would get the platform's namespace {team.name} (a team's namespace defaults to its name)",
                "rename the team, or list its own namespaces",
                team.name,
            )


@rules.rule("AL362", "budget-stop-has-queue", "A budget that stops admitting belongs to a team with a Kueue ClusterQueue to hold.")
def budget_stop_has_queue(ctx: RuleContext) -> Iterable[Finding]:
    """The guard holds the team's ClusterQueue (alicerce.emit.kube.budgets): without Kueue there is none, nor for a
    team with no quota at a site without CPU pools."""
    for team in ctx.resolved.teams:
        budget = team.spec.budget
        if budget is None or budget.on_exhausted != "stopAdmitting":
            continue
        at = S.tenancy.teams[team.index].budget.on_exhausted
        if not ctx.spec.operators.kueue.enabled:
            yield Finding(at, f"team {team.name}'s budget would stop its Kueue ClusterQueue, but Kueue is disabled",
                          "enable operators.kueue, or set onExhausted: alert", budget.on_exhausted)  # fmt: skip
        elif not team.quotas and not any(
            team.name in {t.name for t in site.teams} and any(p.gpu is None and p.spec.purpose != "system" for p in site.pools)
            for site in ctx.resolved.sites
        ):
            # a team's ClusterQueue covers its quotas' pools and the site's CPU pools (alicerce.emit.kube.kueue)
            yield Finding(at, f"team {team.name} has no ClusterQueue to hold: no quota on any pool and no CPU pool at its sites",
                          "give the team a quota, or set onExhausted: alert", budget.on_exhausted)  # fmt: skip


@rules.rule("AL226", "renamed-from", "A team's former names are no team's name now and belong to one team.")
def renamed_from(ctx: RuleContext) -> Iterable[Finding]:
    """The month's spend under a former name counts under the team's name now (alicerce.emit.kube.costs.team_hours):
    a name still in use would be counted twice, a name two teams claim would count toward both budgets."""
    current = {t.name for t in ctx.spec.tenancy.teams}
    claimed: dict[str, str] = {}
    for i, team in enumerate(ctx.spec.tenancy.teams):
        for j, name in enumerate(team.renamed_from):
            at = S.tenancy.teams[i].renamed_from[j]
            if name in current:
                what = "its own name" if name == team.name else f"the name of team {name}"
                yield Finding(at, f"team {team.name} lists {what} as a former name: that spend would count twice",
                              "list only names no team has now", name)  # fmt: skip
            elif name in claimed and claimed[name] != team.name:
                yield Finding(at, f"teams {claimed[name]} and {team.name} both list {name} as a former name: its spend would "
                              "count toward both budgets", "keep the former name on the team that took it over", name)  # fmt: skip
            claimed.setdefault(name, team.name)


MONTH_SECONDS = 31 * 86400  # the longest month the budget alerts, the guard and showback sum


@rules.rule("AL363", "budget-measured", "A budget is measured: the monitoring stack records its spend and keeps a whole month of it.")
def budget_measured(ctx: RuleContext) -> Iterable[Finding]:
    """The budget alerts and the guard sum the month's spend from Prometheus's own samples: without Prometheus the guard
    has nothing to sum, and with a retention shorter than the longest month the first days are gone by its end, so
    spend is undercounted, a budget alert stays quiet past its threshold and a held queue is released before the month
    is over (review obsreview6 DEFECT 6: only budgets that stop admitting were checked, yet an alert budget goes silent
    the same way). A budget that only alerts without monitoring is left to plan, which compares it with the plan's cost (PL318)."""
    retention = ctx.spec.monitoring.retention
    for team in ctx.resolved.teams:
        budget = team.spec.budget
        if budget is None:
            continue
        stops = budget.on_exhausted == "stopAdmitting"
        if stops and not ctx.spec.operators.monitoring.enabled:
            yield Finding(
                S.tenancy.teams[team.index].budget.on_exhausted,
                f"team {team.name}'s budget guard reads its spend from Prometheus, which operators.monitoring disables",
                "enable operators.monitoring, or set onExhausted: alert",
                budget.on_exhausted,
            )
        elif ctx.spec.operators.monitoring.enabled and retention < MONTH_SECONDS:
            reader = "budget guard sums" if stops else "budget alerts sum"
            yield Finding(
                S.monitoring.retention,
                f"team {team.name}'s {reader} the month's spend from Prometheus, which keeps {int(retention // 86400)} days: "
                "by a month's end its first days are gone and the spend undercounted",
                "set monitoring.retention to 31d or more (the default)",
                retention,
            )
