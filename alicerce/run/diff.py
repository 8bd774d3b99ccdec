"""`alicerce diff`: what a spec change does, in words and numbers, for a pull request.

Two layers are compared for each environment:

- the resolved platform: pools added, removed or resized (GPU capacity in schedulable units),
  quota and priority changes, storage tiers, the in-cluster objects, and the monthly cost of the
  declared capacity from the planner;
- day-2 facts no object diff shows: Prometheus's volume at each site (its claims keep their size when the spec's
  grows) and each team's budget share per site (re-split by any change to the team's quotas or the plan);
- the offline resource plan (the Pulumi program under the mock engine, :mod:`alicerce.run.preview`):
  every resource created, deleted, updated or replaced. A change is a replacement when it touches an
  input that forces a new resource (:mod:`alicerce.catalog.replacements`); replacements and
  deletions of resources that hold data are destructive, with what is lost said.

The plan is what the program declares, not a diff against live state: ``pulumi preview`` remains
the authority for drift. Pure over its inputs but for running the mock engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from alicerce.catalog.replacements import load_replacements, replacing_changes, rolling_changes
from alicerce.emit.gitops.argocd import release_name, tree_objects
from alicerce.emit.kube.operators import Release, alertmanager_values, operator_releases
from alicerce.plan.platform import SizingPlan, plan_platform
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite, ResolvedTeam, ResolvedTier
from alicerce.run.preview import PlannedResource, run_preview
from alicerce.spec.models import MigSharing

NAMESPACE_LOSS = "every object in the namespace (workloads, claims, secrets) is deleted with it"


@dataclass(frozen=True)
class PoolChange:
    pool: str
    site: str
    change: str  # added | removed | resized | changed
    details: tuple[str, ...]
    gpu_units_before: int
    gpu_units_after: int
    gpus_before: int
    gpus_after: int

    @property
    def gpu_units_delta(self) -> int:
        return self.gpu_units_after - self.gpu_units_before


@dataclass(frozen=True)
class QuotaChange:
    team: str
    pool: str
    units_before: int | None  # None: no quota
    units_after: int | None
    borrowing_before: int | None
    borrowing_after: int | None


@dataclass(frozen=True)
class TeamChange:
    team: str
    change: str  # added | removed | renamed | priority | budget
    details: str


@dataclass(frozen=True)
class TierChange:
    tier: str
    change: str  # added | removed | changed
    details: tuple[str, ...]


@dataclass(frozen=True)
class ObjectChange:
    site: str
    kind: str
    namespace: str | None
    name: str
    change: str  # added | removed | changed
    data_loss: str | None = None


@dataclass(frozen=True)
class PrometheusStorageChange:
    """monitoring.storage changed at a site: the claims that exist keep their size, the retention size follows the spec."""

    site: str
    change: str  # grown | shrunk | reclassed (monitoring.storageClass)
    claim_before: str  # the volumeClaimTemplate's request, e.g. 100Gi
    claim_after: str
    retention_size_before: str
    retention_size_after: str
    claims: tuple[str, ...]  # the PersistentVolumeClaims prometheus-operator made, by name
    steps: tuple[str, ...]  # what to do, in order, before the change syncs
    data_loss: str | None = None  # a shrink: the samples past the smaller retention size
    class_before: str | None = None  # the claims' StorageClass (None: the cluster's default class)
    class_after: str | None = None


@dataclass(frozen=True)
class BudgetShareChange:
    """The part of a team's monthly budget one site's Prometheus watches (alicerce:team_budget_usd:monthly there)."""

    team: str
    site: str
    usd_before: float | None  # None: the site watched none of it
    usd_after: float | None
    guarded: bool  # the team's budget guard stops admitting at this site when its month passes the share


@dataclass(frozen=True)
class ResourceChange:
    type: str
    name: str
    action: str  # create | delete | update | replace
    properties: tuple[str, ...]  # inputs that changed (replace: the ones that force it)
    data_loss: str | None = None

    @property
    def destructive(self) -> bool:
        return self.data_loss is not None


@dataclass
class EnvironmentDiff:
    environment: str
    status: str  # changed | added | removed | unchanged
    pools: list[PoolChange] = field(default_factory=list)
    quotas: list[QuotaChange] = field(default_factory=list)
    teams: list[TeamChange] = field(default_factory=list)
    storage: list[TierChange] = field(default_factory=list)
    objects: list[ObjectChange] = field(default_factory=list)
    resources: list[ResourceChange] = field(default_factory=list)
    prometheus_storage: list[PrometheusStorageChange] = field(default_factory=list)
    budget_shares: list[BudgetShareChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what may stop `pulumi up` though the plan is valid
    notes: list[str] = field(default_factory=list)  # what the change does beyond its objects (alert notifications regrouped)
    alerting: list[str] = field(default_factory=list)  # what alerting needs set up by hand, or what it changes (SLO pages)
    cost_before: float | None = None
    cost_after: float | None = None

    @property
    def gpu_units_delta(self) -> int:
        return sum(p.gpu_units_delta for p in self.pools)

    @property
    def cost_delta(self) -> float | None:
        if self.cost_before is None and self.cost_after is None:
            return None
        return (self.cost_after or 0.0) - (self.cost_before or 0.0)

    @property
    def destructive(self) -> list[ResourceChange | ObjectChange | PrometheusStorageChange]:
        return (
            [r for r in self.resources if r.destructive]
            + [o for o in self.objects if o.data_loss]
            + [m for m in self.prometheus_storage if m.data_loss]
        )

    @property
    def empty(self) -> bool:
        resolved = (self.pools, self.quotas, self.teams, self.storage, self.objects, self.resources)
        return not any((*resolved, self.prometheus_storage, self.budget_shares, self.notes, self.alerting)) and not self.cost_delta

    def to_json(self) -> dict[str, Any]:
        def rows(items: Sequence[Any]) -> list[dict[str, Any]]:
            return [asdict(i) for i in items]

        pools = [{**asdict(p), "gpu_units_delta": p.gpu_units_delta} for p in self.pools]
        resources = [{**asdict(r), "destructive": r.destructive} for r in self.resources]
        return {
            "environment": self.environment,
            "status": self.status,
            "gpu_units_delta": self.gpu_units_delta,
            "monthly_cost_usd": {"before": _round(self.cost_before), "after": _round(self.cost_after), "delta": _round(self.cost_delta)},
            "destructive": len(self.destructive),
            "pools": pools,
            "quotas": rows(self.quotas),
            "teams": rows(self.teams),
            "storage": rows(self.storage),
            "objects": rows(self.objects),
            "resources": resources,
            "prometheus_storage": rows(self.prometheus_storage),
            "budget_shares": rows(self.budget_shares),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "alerting": list(self.alerting),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


# -- the resolved platform


def _pool_details(old: ResolvedPool, new: ResolvedPool) -> tuple[str, list[str]]:
    details = []
    resized = False
    a, b = old.spec.scaling, new.spec.scaling
    if (a.min, a.max) != (b.min, b.max):
        details.append(f"nodes {a.min}–{a.max} → {b.min}–{b.max}")
        resized = True
    pairs = {
        "accelerator": (old.gpu.id if old.gpu else None, new.gpu.id if new.gpu else None),
        "GPUs per node": (old.gpus_per_node, new.gpus_per_node),
        "instance type": (old.instance.type if old.instance else None, new.instance.type if new.instance else None),
        "zone": (old.zone, new.zone),
        "fabric": (old.rdma.fabric.name if old.rdma else None, new.rdma.fabric.name if new.rdma else None),
        "GPU units per node": (old.gpu_units.resources if old.gpu_units else None, new.gpu_units.resources if new.gpu_units else None),
        "hosts": (len(old.hosts), len(new.hosts)),
        "taints": (sorted(str(t) for t in old.spec.taints), sorted(str(t) for t in new.spec.taints)),
    }
    changed = False
    for label, (before, after) in pairs.items():
        if before != after:
            details.append(f"{label} {before} → {after}")
            changed = True
    return ("changed" if changed else "resized" if resized else ""), details


def diff_pools(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[PoolChange]:
    before = {p.name: p for p in old.pools} if old else {}
    after = {p.name: p for p in new.pools} if new else {}
    out = []
    for name in [*after, *(n for n in before if n not in after)]:
        a, b = before.get(name), after.get(name)
        if a is None and b is not None:
            out.append(PoolChange(name, b.site.name, "added", (), 0, b.max_gpu_units, 0, b.max_gpus))
        elif b is None and a is not None:
            out.append(PoolChange(name, a.site.name, "removed", (), a.max_gpu_units, 0, a.max_gpus, 0))
        elif a is not None and b is not None:
            change, details = _pool_details(a, b)
            if change:
                out.append(PoolChange(name, b.site.name, change, tuple(details), a.max_gpu_units, b.max_gpu_units, a.max_gpus, b.max_gpus))
    return out


def _budget_text(team: ResolvedTeam) -> str:
    budget = team.spec.budget
    if budget is None:
        return "none"
    stops = ", stops admitting when spent" if budget.on_exhausted == "stopAdmitting" else ""
    return f"${budget.monthly_usd:,.0f} a month, alerts at {', '.join(f'{p}%' for p in budget.alert_at_percent)}{stops}"


def _budget_change(old: ResolvedTeam, new: ResolvedTeam) -> str | None:
    """What changes in a team's budget, and what a guard that goes away leaves behind (budgets.py releases nothing it
    no longer guards)."""
    before, after = _budget_text(old), _budget_text(new)
    if before == after:
        return None
    text = f"{before} → {after}"
    guarded = old.spec.budget is not None and old.spec.budget.on_exhausted == "stopAdmitting"
    if guarded and (new.spec.budget is None or new.spec.budget.on_exhausted != "stopAdmitting"):
        text += (
            f"; the budget guard stops guarding it and releases nothing: if it holds the queue, run kubectl patch "
            f"""clusterqueue {new.name} --type merge -p '{{"spec":{{"stopPolicy":"None"}}}}'"""
        )
    return text


def _renames(before: Mapping[str, ResolvedTeam], after: Mapping[str, ResolvedTeam]) -> dict[str, ResolvedTeam]:
    """Teams added that say they were a removed team (renamedFrom), or take over its namespaces (or, failing that, its
    identity groups): a rename, keyed by the new name. The diff sees only a team removed and one added; their
    namespaces are what the cost rules key the team's spend by (alicerce:namespace_team:info)."""
    removed = [t for name, t in before.items() if name not in after]
    out: dict[str, ResolvedTeam] = {}
    for name, b in after.items():
        if name in before:
            continue
        declared = [a for a in removed if a.name in b.spec.renamed_from]
        shared = [a for a in removed if set(a.namespaces) & set(b.namespaces)]
        same_groups = [a for a in removed if a.spec.groups and set(a.spec.groups) == set(b.spec.groups)]
        if found := [a for a in [*declared, *shared, *same_groups] if a not in out.values()]:
            out[name] = found[0]
    return out


def _rename_text(old: ResolvedTeam, new: ResolvedTeam) -> str:
    """What a rename restarts: every cost record is keyed by the team's name (Prometheus series identity is the label
    set, so the renamed team's series start empty), and its ClusterQueue carries the name (review obsreview24 F2)."""
    shared = sorted(set(old.namespaces) & set(new.namespaces))
    text = f"from `{old.name}`" + (f" (namespaces {', '.join(shared)})" if shared else "")
    if old.name in new.spec.renamed_from:
        # teams[].renamedFrom: the month's records, the budget alerts and the guard count the old name's hours
        text += (
            f"; its month carries over (renamedFrom lists {old.name}): what {old.name} spent this month counts toward "
            f"{new.name}'s budget, and the chargeback (`alicerce costs`) lists {old.name} up to the rename and {new.name} after it"
        )
        if old.spec.budget is not None and old.spec.budget.on_exhausted == "stopAdmitting":
            text += (
                f"; the ClusterQueue {old.name} is deleted and {new.name} created unheld, and the budget guard holds it "
                "on its next run (within 15 minutes) if the month is spent"
            )
        return text + f". Remove renamedFrom after {new.name}'s first whole month"
    text += (
        f"; the spend is recorded by team name, so {new.name}'s month-to-date spend starts at $0 at the rename, and "
        f"the month's chargeback (`alicerce costs`) lists {old.name} up to the rename and {new.name} after it"
    )
    if old.spec.budget is None and new.spec.budget is None:
        return text
    text += f"; what {old.name} spent this month counts toward no budget and {new.name}'s budget alerts start over"
    guarded = old.spec.budget is not None and old.spec.budget.on_exhausted == "stopAdmitting"
    if guarded:
        text += (
            f", and the ClusterQueue {old.name} is deleted and {new.name} created unheld: a queue the budget guard "
            "held this month is released"
        )
    text += (
        f". List {old.name} in {new.name}'s renamedFrom to carry the month over; or rename on the 1st of a month (UTC); "
        f"or lower {new.name}'s monthly budget until the 1st by what "
        f"{old.name} spent this month: the sum over its sites of "
        f"""max(last_over_time(team:gpu_cost_usd:sum_month{{team="{old.name}"}}[1h])) once the rename is applied"""
    )
    if guarded:
        text += (
            f", and if {old.name}'s queue is held, hold the new one by hand and lift it on the 1st (the guard lifts "
            f"""only its own holds): kubectl patch clusterqueue {new.name} --type merge -p '{{"spec":{{"stopPolicy":"Hold"}}}}'"""
        )
    return text


def diff_tenancy(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> tuple[list[QuotaChange], list[TeamChange]]:
    before = {t.name: t for t in old.teams} if old else {}
    after = {t.name: t for t in new.teams} if new else {}
    renamed = _renames(before, after)
    former = {t.name for t in renamed.values()}
    quotas: list[QuotaChange] = []
    teams: list[TeamChange] = []
    for name in [*after, *(n for n in before if n not in after)]:
        a, b = before.get(name), after.get(name)
        if b is not None and name in renamed:
            teams.append(TeamChange(name, "renamed", _rename_text(renamed[name], b)))
        elif a is None and b is not None:
            teams.append(TeamChange(name, "added", f"priority {b.spec.priority}"))
        elif b is None and a is not None and name not in former:
            teams.append(TeamChange(name, "removed", f"namespaces {', '.join(a.namespaces)}"))
        elif a is not None and b is not None and a.spec.priority != b.spec.priority:
            teams.append(TeamChange(name, "priority", f"{a.spec.priority} → {b.spec.priority}"))
        if a is not None and b is not None and (budget := _budget_change(a, b)) is not None:
            teams.append(TeamChange(name, "budget", budget))
        qa = {q.pool: q for q in a.quotas} if a else {}
        qb = {q.pool: q for q in b.quotas} if b else {}
        for pool in [*qb, *(p for p in qa if p not in qb)]:
            x, y = qa.get(pool), qb.get(pool)
            old_units, new_units = (x.units if x else None), (y.units if y else None)
            old_borrow, new_borrow = (x.borrowing_limit if x else None), (y.borrowing_limit if y else None)
            if (old_units, old_borrow) != (new_units, new_borrow):
                quotas.append(QuotaChange(name, pool, old_units, new_units, old_borrow, new_borrow))
    return quotas, teams


def _tier_facts(tier: ResolvedTier) -> dict[str, Any]:
    spec = tier.spec
    facts: dict[str, Any] = {
        "class": spec.class_,
        "sites": list(tier.sites),
        "implementation": dict(tier.implementations),
        "capacity": getattr(spec, "capacity", None),
        "throughput": getattr(spec, "throughput", None),
        "mount path": getattr(spec, "mount_path", None),
    }
    if tier.fsx is not None:
        facts |= {
            "FSx deployment type": tier.fsx.deployment_type,
            "FSx storage type": tier.fsx.storage_type,
            "FSx capacity GiB": tier.fsx.capacity_gib,
            "FSx per-unit throughput": tier.fsx.per_unit_throughput,
        }
    return facts


def diff_storage(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[TierChange]:
    before = {t.name: t for t in old.storage} if old else {}
    after = {t.name: t for t in new.storage} if new else {}
    out = []
    for name in [*after, *(n for n in before if n not in after)]:
        a, b = before.get(name), after.get(name)
        if a is None and b is not None:
            out.append(TierChange(name, "added", (f"{b.spec.class_} at {', '.join(b.sites) or 'no site'}",)))
        elif b is None and a is not None:
            out.append(TierChange(name, "removed", (f"{a.spec.class_} at {', '.join(a.sites) or 'no site'}",)))
        elif a is not None and b is not None:
            fa, fb = _tier_facts(a), _tier_facts(b)
            details = tuple(f"{k} {fa.get(k)} → {fb.get(k)}" for k in [*fb, *(k for k in fa if k not in fb)] if fa.get(k) != fb.get(k))
            if details:
                out.append(TierChange(name, "changed", details))
    return out


def _objects(rp: ResolvedPlatform | None) -> dict[tuple[str, str, str | None, str], dict[str, Any]]:
    if rp is None:
        return {}
    out = {}
    for site in rp.sites:
        for obj in tree_objects(rp, site.name):
            meta = obj["metadata"]
            out[(site.name, str(obj["kind"]), meta.get("namespace"), str(meta["name"]))] = obj
    return out


def diff_objects(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[ObjectChange]:
    """The in-cluster objects (the same ones both deliveries apply) added, removed or changed."""
    before, after = _objects(old), _objects(new)
    out = []
    for key in sorted(set(before) | set(after), key=lambda k: (k[0], k[1], k[2] or "", k[3])):
        site, kind, namespace, name = key
        if key not in before:
            out.append(ObjectChange(site, kind, namespace, name, "added"))
        elif key not in after:
            out.append(ObjectChange(site, kind, namespace, name, "removed", NAMESPACE_LOSS if kind == "Namespace" else None))
        elif before[key] != after[key]:
            out.append(ObjectChange(site, kind, namespace, name, "changed"))
    return out


def claim_moves(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[str]:
    """Claims that move to another volume: a claim's volumeName is immutable, so the claim is deleted and made again.

    Volumes are named after their immutable source (:func:`alicerce.emit.kube.storage.volume_name`): a tier's new
    prefix, export or access point makes a new volume, and each claim on the old one moves to it."""
    before, after = _objects(old), _objects(new)
    out = []
    for key, obj in sorted(after.items(), key=lambda item: (item[0][0], item[0][2] or "", item[0][3])):
        site, kind, namespace, name = key
        if kind != "PersistentVolumeClaim" or key not in before:
            continue
        was, now = before[key]["spec"].get("volumeName"), obj["spec"].get("volumeName")
        if was != now:
            out.append(
                f"claim {namespace}/{name} at {site} moves from volume {was} to {now} (the volume's source changed): "
                "the claim is deleted and created again, and its delete waits for every pod that mounts it, so stop "
                f"them first; {was} is released, not deleted (reclaim policy Retain): its data stays on the file system"
            )
    return out


# Alertmanager's group key is the route's key (its matchers and its parents', dispatch/route.go Route.Key) and the
# values of the route's group_by labels (dispatch/dispatch.go aggrGroup, GroupKey), at v0.34.0; PagerDuty's dedup_key
# is that key's hash (notify/pagerduty/pagerduty.go `DedupKey: key.Hash()`). A reload that changes either regroups the
# alerts firing then: new groups notify again (a PagerDuty receiver opens a second incident for each), and the old
# groups are dropped with the old configuration, their resolve never sent (review obsreview23 F6)
RoutingKey = tuple[str, tuple[str, ...]]


def _route_keys(route: Mapping[str, Any], parent: str, receiver: str, group_by: tuple[str, ...]) -> Iterator[tuple[str, RoutingKey]]:
    """(receiver, (route key, group_by)) of ``route`` and every route under it, children inheriting receiver and
    group_by as Alertmanager's do."""
    matchers = ",".join(sorted(route.get("matchers", [])))
    key = f"{parent}/{{{matchers}}}" if parent else f"{{{matchers}}}"
    receiver = route.get("receiver", receiver)
    group_by = tuple(sorted(route.get("group_by", group_by)))
    yield receiver, (key, group_by)
    for child in route.get("routes", []):
        yield from _route_keys(child, key, receiver, group_by)


def _routing(rp: ResolvedPlatform | None, site: str) -> dict[str, set[RoutingKey]]:
    """Per receiver the spec declares at the site (but heartbeats, whose Watchdog nobody pages on; the chart's null
    receiver at the root notifies nobody), its group keys' shapes."""
    if rp is None or site not in {s.name for s in rp.sites} or not rp.spec.operators.monitoring.enabled:
        return {}
    config = alertmanager_values(rp, rp.site(site)).get("alertmanager", {}).get("config")
    if not config:
        return {}
    notified = {r.name for r in rp.spec.monitoring.receivers if not r.heartbeat}
    out: dict[str, set[RoutingKey]] = {}
    for receiver, key in _route_keys(config["route"], "", config["route"].get("receiver", ""), ()):
        if receiver in notified:
            out.setdefault(receiver, set()).add(key)
    return out


def regrouped_alerts(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[str]:
    """The receivers whose alerts a change regroups (their route matchers or group_by change), with what that does."""
    if old is None or new is None:
        return []
    kinds = {r.name: r.kind for r in new.spec.monitoring.receivers}
    out = []
    for site in sorted({s.name for s in old.sites} & {s.name for s in new.sites}):
        before, after = _routing(old, site), _routing(new, site)
        for receiver in sorted(set(before) & set(after)):
            if before[receiver] == after[receiver]:
                continue
            grouping = {g for _, g in before[receiver]} != {g for _, g in after[receiver]}
            what = "its group_by" if grouping else "its routes' matchers"
            if kinds.get(receiver) == "pagerduty":
                effect = (
                    "each alert firing when the new configuration loads opens a second PagerDuty incident (the dedup key is "
                    "the group key's hash), and Alertmanager never resolves the old one: resolve those by hand"
                )
            else:
                effect = "the alerts firing then are notified again as new groups, and the old groups' resolved notices never come"
            out.append(f"{site}: receiver {receiver} ({kinds[receiver]}) is grouped anew ({what} changed): {effect}")
    return out


def new_alert_secrets(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[str]:
    """The Secret keys the new configuration's Alertmanagers read that the old did not (a site added, a receiver added
    or its Secret renamed): prometheus-operator mounts each receiver's Secret (alertmanagerSpec.secrets), so one missing
    at the sync leaves that site's Alertmanager not starting or its receiver unable to send; and a new heartbeat key is a
    dead man's switch check nobody watches until it is created and wired to the pager. `alicerce plan` lists every key;
    a pull request adding a site said nothing of them (review obsreview25 G5)."""
    from alicerce.plan.alerting import alert_secrets

    if new is None:
        return []
    before = {(s.site, s.secret, s.key) for s in alert_secrets(old)} if old is not None else set()
    out = []
    for s in alert_secrets(new):
        if (s.site, s.secret, s.key) in before:
            continue
        line = (f"{s.site}: create Secret {s.namespace}/{s.secret} with key {s.key} (receiver {s.receiver}, {s.kind}) "
                "before the first sync")  # fmt: skip
        if s.heartbeat:
            line += (f"; create the dead man's switch check whose URL it holds and wire it to the pager: until then nothing "
                     f"notices {s.site}'s Prometheus or Alertmanager going down")  # fmt: skip
        out.append(line)
    return out


def _burn_limits(slo: Any) -> str:
    """The error ratios SLO ``slo``'s alerts fire above (alicerce.emit.kube.diagnoses.slo_burn): the page at 14.4x the
    budget over 1 h and 5 m, or 6x over 6 h and 30 m; the ticket at 1x over 3 days and 6 h."""
    from alicerce.emit.kube.diagnoses import FAST_BURN

    budget = slo.error_budget
    return f"page {FAST_BURN * budget:.3g} (1h) / {6 * budget:.3g} (6h), ticket {budget:.3g} (3d)"


def _slo_target(slo: Any) -> str:
    if slo.kind == "availability":
        return f"{slo.objective:g}% available"
    return f"{slo.objective:g}% under {slo.threshold * 1000:g} ms"


def slo_changes(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[str]:
    """The serving SLOs whose objective, threshold or name a change moves, with what that does to their burn-rate
    alerts: a 5x tighter page threshold pages at the sync for a service inside its old objective, and a rename
    resolves the open pages and starts the new alerts' `for:` anew. The SLO records are recomputed from the raw
    histograms, so no history is lost (review obsreview25 N1)."""
    from alicerce.catalog.alerts import serving_slos, slo_burn_fast_alert_name, slo_burn_slow_alert_name

    if old is None or new is None:
        return []
    before, after = ({s.name: s for s in serving_slos(rp.spec)} for rp in (old, new))
    gone = [s for n, s in before.items() if n not in after]
    out = []
    for name, slo in after.items():
        was = before.get(name)
        if was is None:  # a rename: an SLO of the same workload, kind and histogram gone
            was = next((g for g in gone if (g.workload, g.kind, g.metric) == (slo.workload, slo.kind, slo.metric)), None)
            if was is None:
                continue
            gone.remove(was)
            olds = f"{slo_burn_fast_alert_name(was.name)}/{slo_burn_slow_alert_name(was.name)}"
            news = f"{slo_burn_fast_alert_name(name)}/{slo_burn_slow_alert_name(name)}"
            out.append(f"SLO {was.name} of {slo.workload} renamed {name}: its alerts {olds} become {news}; open pages "
                       "resolve at the sync (PagerDuty gets a resolve) and the new ones start their `for:` anew")  # fmt: skip
        if (was.objective, was.threshold) != (slo.objective, slo.threshold):
            tighter = " (tighter: a service inside its old objective may page at the sync)" if slo.error_budget < was.error_budget else ""
            out.append(f"SLO {name} of {slo.workload}: {_slo_target(was)} → {_slo_target(slo)}; burn-rate alerts fire above "
                       f"error ratio {_burn_limits(was)} → {_burn_limits(slo)}{tighter}")  # fmt: skip
    return out


def pool_layout_changes(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[str]:
    """The GPU pools whose units per node a change moves, with what GPUsMissing<Pool> expects while the nodes change:
    the rules sync before (or after) the node group replaces its nodes, and the page is critical (review obsreview27
    G5: a 4 -> 8 GPU change of type said only "changed PrometheusRule"). A cloud node is held to its own instance
    type's GPUs (alicerce.emit.kube.monitoring._expected_units); an on-prem host to the pool's new layout."""
    from alicerce.catalog.alerts import pool_alert_name
    from alicerce.emit.kube.monitoring import ROLL_SECONDS_PER_NODE, roll_bound_minutes

    if old is None or new is None:
        return []
    before = {p.name: p for p in old.pools}
    out = []
    for pool in new.pools:
        was = before.get(pool.name)
        if was is None or was.gpu_units is None or pool.gpu_units is None or was.gpu_units.resources == pool.gpu_units.resources:
            continue
        units = f"{_units(was.gpu_units.resources)} → {_units(pool.gpu_units.resources)} per node"
        alert = pool_alert_name(pool.name)
        if was.instance is not None and pool.instance is not None and was.instance.type != pool.instance.type:
            # EKS cannot change a managed node group's instance types in place: the group is replaced, the old one
            # deleted first under its fixed name (gpu_node_pool.py), not rolled a few nodes at a time (obsreview29 N-3)
            out.append(f"pool {pool.name} at {pool.site.name}: {units} ({was.instance.type} → {pool.instance.type}): the node group "
                       "is replaced, the old group deleted (its nodes drained) before the new one is created, so the pool "
                       f"has no nodes until the new ones join; {alert} holds each node to its own instance type's GPUs, so "
                       "the new nodes do not page. To keep its work running, add a pool of the new type beside it, move "
                       "the workloads, then remove this one")  # fmt: skip
        elif pool.instance is not None or (was.gpu == pool.gpu and was.gpus_per_node == pool.gpus_per_node):
            hardware = f" on the same {pool.instance.type}" if pool.instance is not None else " on the same hosts"
            bound = roll_bound_minutes(new.site(pool.site.name))
            order = _label_order(was, pool, by_ansible=new.site(pool.site.name).capabilities.nodes_by_ansible)
            out.append(f"pool {pool.name} at {pool.site.name}: {units}{hardware}: {_operator_rolls(was, pool)}; {alert} expects "
                       "the new layout from the sync, but while that roll goes on it waits for it on a Ready node that still "
                       f"offers GPUs, for at most {bound} minutes after the roll began (the site's GPU nodes at their max "
                       f"size x {ROLL_SECONDS_PER_NODE} s); a roll still going then is stuck, and a node it has not reached "
                       "pages critical 15 minutes later (kubectl -n gpu-operator rollout status daemonset: the pod that does not "
                       f"start); a node at 0 or NotReady pages after 15 minutes, roll or not{order}")  # fmt: skip
        else:
            out.append(f"pool {pool.name} at {pool.site.name}: {units}: {alert} expects the new layout on every host of the pool "
                       "from the sync; a host that still offers the old one pages critical after 15 minutes: cordon it (kubectl "
                       "cordon; a cordoned node is not checked) or change its hardware before merging")  # fmt: skip
    return out


def _label_order(was: ResolvedPool, pool: ResolvedPool, *, by_ansible: bool) -> str:
    """The order of a sharing MODE change (review obsreview32 G-1): the label that selects a node's config moves with the
    node's own pipeline, the ConfigMap and the rules with the GitOps sync. The ConfigMaps keep every GPU pool's config
    name, at whole GPUs or MIG disabled when it does not share (alicerce.emit.kube.operators), so neither order stops a
    node; but a node offers the new layout only once both are there, and the rules expect it from the sync."""
    from alicerce.resolve.gpu import DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL

    keys = (MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL)
    added = [k for k in keys if k in pool.labels and k not in was.labels]
    removed = [k for k in keys if k in was.labels and k not in pool.labels]
    if not added and not removed:
        return ""
    apply = (
        "`alicerce apply` (kubespray's node labels, post-cluster.yml)"
        if by_ansible
        else "the node group's labels (`pulumi up` of the site's stack)"
    )
    steps = []
    if added:
        steps.append(f"the nodes gain {' and '.join(added)} with {apply}: apply it before the sync (their config name "
                     "is there at the old layout until then); synced first, they keep the old layout until the apply "
                     "and page 15 minutes after the roll")  # fmt: skip
    if removed:
        steps.append(f"the nodes lose {' and '.join(removed)} with {apply}: sync first (the ConfigMap keeps their config "
                     "name at whole GPUs, MIG disabled), then apply; applied first, they change layout before the rules "
                     "expect it and page after 15 minutes")  # fmt: skip
    return ". A change of sharing mode: " + "; ".join(steps)


def _operator_rolls(was: ResolvedPool, pool: ResolvedPool) -> str:
    """What the GPU Operator does on the nodes when a pool's sharing changes on the same GPUs. Its configs are named after
    their content (alicerce.emit.kube.common.content_name), so the ClusterPolicy names a new ConfigMap and the operator
    rolls the operand's DaemonSet: an edit in place was read by no node (review obsreview29 D-2)."""
    if isinstance(was.spec.sharing, MigSharing) or isinstance(pool.spec.sharing, MigSharing):
        # mig-parted v0.14.2 pkg/mig/reconfigure: it stops the node's GPU clients (device plugin, DCGM, the exporter)
        # and repartitions; a GPU a running pod uses cannot be, and the node's nvidia.com/mig.config.state reads failed
        return ("the GPU Operator restarts the MIG manager on every node, which repartitions the node's GPUs and stops "
                "its device plugin and DCGM meanwhile; a GPU still used by a pod is not repartitioned "
                "(nvidia.com/mig.config.state=failed): drain the pool's GPU pods before the sync")  # fmt: skip
    return ("the GPU Operator rolls the device plugin over the nodes one at a time (its DaemonSets' RollingUpdate, "
            "maxUnavailable 1), each node offering the new count once its plugin restarted")  # fmt: skip


def _units(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{count} {name}" for name, count in sorted(resources.items()))


def monthly_cost(rp: ResolvedPlatform | None) -> float | None:
    """The planner's monthly cost of the declared capacity (read through its JSON view)."""
    return _plan_cost(plan_platform(rp) if rp is not None else None)


def _plan_cost(plan: SizingPlan | None) -> float | None:
    return None if plan is None else float(plan.to_json()["monthly_cost_usd"])


# -- day 2: Prometheus's volume

PROMETHEUS_CHART = "kube-prometheus-stack"
# kube-prometheus-stack 88.5.3 templates/_helpers.tpl "kube-prometheus-stack.fullname": the release name (or
# <release>-<chart> when it does not contain the chart's name, or fullnameOverride) cut to 26 characters, one trailing
# "-" trimmed; "kube-prometheus-stack.prometheus.crname" adds "-prometheus" unless cleanPrometheusOperatorObjectNames
FULLNAME_LIMIT = 26


def _prometheus_release(rp: ResolvedPlatform | None, site: str) -> Release | None:
    if rp is None or site not in {s.name for s in rp.sites}:
        return None
    return next((r for r in operator_releases(rp, site) if r.key == PROMETHEUS_CHART), None)


def prometheus_name(release: Release, site: str) -> str:
    """The Prometheus resource's name as the chart makes it from the release alicerce installs."""
    return _operator_object_name(release, site, "prometheus")


def alertmanager_claims(release: Release, site: str) -> list[str]:
    """The PersistentVolumeClaims of Alertmanager's volume, one per replica: prometheus-operator names the template
    alertmanager-<name>-db and the StatefulSet alertmanager-<name> (pkg/alertmanager/statefulset.go volumeName,
    prefixedName); the chart names the Alertmanager as it does the Prometheus, with -alertmanager."""
    spec = release.values.get("alertmanager", {}).get("alertmanagerSpec", {})
    if "storage" not in spec:
        return []
    name = _operator_object_name(release, site, "alertmanager")
    template = spec["storage"].get("volumeClaimTemplate", {})
    volume = (template.get("metadata") or {}).get("name") or f"alertmanager-{name}-db"
    return [f"{volume}-alertmanager-{name}-{ordinal}" for ordinal in range(int(spec.get("replicas") or 1))]


def _operator_object_name(release: Release, site: str, component: str) -> str:
    """The name kube-prometheus-stack gives its Prometheus or Alertmanager resource: the chart's full name plus the
    component, unless cleanPrometheusOperatorObjectNames (templates/_helpers.tpl prometheus.crname, alertmanager.crname)."""
    values = release.values
    name = release_name(site, release)
    if values.get("fullnameOverride"):
        full = str(values["fullnameOverride"])
    else:
        chart = str(values.get("nameOverride") or release.chart)
        full = name if chart in name else f"{name}-{chart}"
    full = full[:FULLNAME_LIMIT].removesuffix("-")
    return full if values.get("cleanPrometheusOperatorObjectNames") else f"{full}-{component}"


def prometheus_claims(release: Release, site: str) -> list[str]:
    """The PersistentVolumeClaims of Prometheus's volume, as the StatefulSet controller names them:
    <volumeClaimTemplate name>-<StatefulSet>-<ordinal>. prometheus-operator names the template prometheus-<name>-db
    unless storageSpec.volumeClaimTemplate.metadata.name says otherwise, and the StatefulSet prometheus-<name> (shard 0)
    or prometheus-<name>-shard-<n> (prometheus-operator pkg/prometheus: volumeName, prefixedName, shard names)."""
    spec = release.values.get("prometheus", {}).get("prometheusSpec", {})
    name = prometheus_name(release, site)
    template = spec.get("storageSpec", {}).get("volumeClaimTemplate", {})
    volume = (template.get("metadata") or {}).get("name") or f"prometheus-{name}-db"
    replicas, shards = int(spec.get("replicas") or 1), int(spec.get("shards") or 1)
    sets = [f"prometheus-{name}" if shard == 0 else f"prometheus-{name}-shard-{shard}" for shard in range(shards)]
    return [f"{volume}-{statefulset}-{ordinal}" for statefulset in sets for ordinal in range(replicas)]


def _claim_facts(release: Release) -> tuple[str, str, str | None]:
    """The volumeClaimTemplate's request, the retention size and the claim's StorageClass (None: the cluster's default)."""
    spec = release.values["prometheus"]["prometheusSpec"]
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    return str(claim["resources"]["requests"]["storage"]), str(spec.get("retentionSize")), claim.get("storageClassName")


def _gib(quantity: str) -> float:
    for suffix, scale in (("Ti", 1024.0), ("Gi", 1.0), ("Mi", 1 / 1024)):
        if quantity.endswith(suffix):
            return float(quantity.removesuffix(suffix)) * scale
    return float(quantity) / 2**30


def _expansion(site: ResolvedSite, storage_class: str | None) -> bool | None:
    """Whether the claim's StorageClass can grow a claim: True, False, or None when alicerce cannot know."""
    default = site.capabilities.default_storage_class
    if default is not None and storage_class == default["name"]:
        return True  # the class alicerce writes for the site, with allowVolumeExpansion (alicerce.emit.kube.objects)
    if storage_class is None and default is None and site.capabilities.nodes_by_ansible:
        return False  # kubespray's local-path provisioner, the default class alicerce enables there (emit.ansible.kubespray)
    return None


def _grow_steps(site: ResolvedSite, release: Release) -> tuple[str, ...]:
    """What to do at one site before a larger monitoring.storage syncs. A StatefulSet's volumeClaimTemplates never resize
    the claims it made, and prometheus-operator, which recreates the StatefulSet when its template changes (the update
    is refused), leaves them too: prometheus-operator's "Resizing volumes" guide patches each claim by hand."""
    size, retention, storage_class = _claim_facts(release)
    claims, namespace = prometheus_claims(release, site.name), release.namespace
    expand = _expansion(site, storage_class)
    listed = " ".join(claims)
    if expand is False:
        return (
            f"{site.name}'s claims ({listed}) are local-path volumes (kubespray's local-path provisioner, the cluster's "
            "default class): a claim there cannot grow (the API server refuses the patch: rancher/local-path-provisioner#18) "
            "and its size is not enforced either (#107): the volume is a directory on its node's disk, so that disk is what "
            f"fills. Before this merges check that each claim's node has {size} free where the provisioner keeps its "
            f"volumes (kubectl get pv $(kubectl -n {namespace} get pvc {claims[0]} -o jsonpath='{{.spec.volumeName}}') "
            f"-o jsonpath='{{.spec.nodeAffinity}}', then df on that node); if it has not, keep monitoring.storage, since "
            f"retentionSize {retention} lets Prometheus fill it",
        )
    steps = []
    if expand is None:
        shown = storage_class or "the cluster's default class"
        steps.append(
            f"check that {shown} allows expansion (kubectl get storageclass {storage_class or ''} -o "
            "jsonpath='{.allowVolumeExpansion}' prints true): if it does not, no claim can grow; keep monitoring.storage"
        )
    patch = f"""'{{"spec":{{"resources":{{"requests":{{"storage":"{size}"}}}}}}}}'"""
    steps += [
        *(f"before this merges: kubectl -n {namespace} patch pvc {claim} -p {patch}" for claim in claims),
        f"wait until each claim's capacity reads {size} (kubectl -n {namespace} get pvc {listed} -o "
        "custom-columns=NAME:.metadata.name,CAPACITY:.status.capacity.storage)",
        f"then merge: retentionSize {retention} reaches Prometheus only once the disk holds it; prometheus-operator "
        "recreates its StatefulSet for the new template and the claims stay",
    ]
    return tuple(steps)


def _class_name(storage_class: str | None) -> str:
    return storage_class or "the cluster's default class"


def _reclass_steps(site: ResolvedSite, before: Release, after: Release) -> tuple[str, ...]:
    """What a changed monitoring.storageClass does and what to do. A StatefulSet's volumeClaimTemplates cannot be updated
    (the API server refuses it: "updates to statefulset spec for fields other than ... are forbidden"); prometheus-
    operator then deletes the StatefulSet and creates it anew with the new template, and the new pods find the claims
    of the same names and mount them: the volumes stay on the old class, with no error anywhere. The same holds for
    Alertmanager's claims, which use the same class (alicerce.emit.kube.operators)."""
    was, now = _class_name(_claim_facts(before)[2]), _class_name(_claim_facts(after)[2])
    namespace, prometheus = after.namespace, prometheus_claims(after, site.name)
    pods = [claim.split("-db-", 1)[1] for claim in prometheus]
    listed = " ".join(prometheus)
    steps = [
        f"the claims that exist ({listed}) stay on {was}: prometheus-operator recreates the StatefulSet "
        f"for the new template and its pods mount the same claims by name; nothing moves to {now}",
        "to keep the history, keep monitoring.storageClass; to move, the history on these claims is lost (this month's "
        "spend, the budgets and showback count only from the move: CostHistoryTruncated fires) unless you copy the "
        "TSDB first (a VolumeSnapshot restored into a claim of the same name on the new class)",
        f"to move, after the change syncs: kubectl -n {namespace} delete pvc {listed} --wait=false, then kubectl -n "
        f"{namespace} delete pod {' '.join(pods)}: the StatefulSet makes each claim again from the new template",
    ]
    alertmanager = alertmanager_claims(after, site.name)
    if alertmanager:
        steps.append(
            f"Alertmanager's claims ({' '.join(alertmanager)}) stay too; move them the same way, one replica at a time "
            "where there are two, so that the other gossips the silences back to the new one"
        )
    return tuple(steps)


def diff_prometheus_storage(old: ResolvedPlatform | None, new: ResolvedPlatform | None) -> list[PrometheusStorageChange]:
    """monitoring.storage changed at a site that runs Prometheus in both specs.

    The generator keeps retentionSize at 90% of the declared claim (alicerce.emit.kube.operators): it is pure over the
    spec and cannot see the claim that exists. The first sync is safe when the claims grow before the change merges,
    which is the order the steps give; a shrink cannot shrink a claim and deletes history, so it is destructive."""
    if old is None or new is None:
        return []
    out = []
    for site in new.sites:
        before, after = _prometheus_release(old, site.name), _prometheus_release(new, site.name)
        if before is None or after is None:
            continue
        (was, kept_before, class_before), (now, kept_after, class_after) = _claim_facts(before), _claim_facts(after)
        claims = tuple(prometheus_claims(after, site.name))
        if class_before != class_after:
            steps = _reclass_steps(site, before, after)
            out.append(
                PrometheusStorageChange(
                    site.name, "reclassed", was, now, kept_before, kept_after, claims, steps, None, class_before, class_after
                )
            )
        if was == now:
            continue
        if _gib(now) > _gib(was):
            steps = _grow_steps(site, after)
            out.append(PrometheusStorageChange(site.name, "grown", was, now, kept_before, kept_after, claims, steps))
        else:
            loss = (
                f"the claims keep {was} (Kubernetes refuses a smaller request) while retentionSize drops {kept_before} → "
                f"{kept_after}: Prometheus deletes its oldest blocks past {kept_after}, and the month's start with them "
                "when the month is larger (budgets and showback sum it; CostHistoryTruncated)"
            )
            steps = (
                "a claim cannot shrink: keep monitoring.storage, or move Prometheus to new, smaller claims (delete the "
                "StatefulSet's claims and their history starts over)",
            )
            out.append(PrometheusStorageChange(site.name, "shrunk", was, now, kept_before, kept_after, claims, steps, loss))
    return out


# -- day 2: budget shares


def _written(usd: float | None) -> float | None:
    """A share as the budget record writes it (alicerce.emit.kube.monitoring: vector({usd:.6g}))."""
    return None if usd is None else float(f"{usd:.6g}")


def diff_budget_shares(
    old: ResolvedPlatform | None, new: ResolvedPlatform | None, old_plan: SizingPlan | None, new_plan: SizingPlan | None
) -> list[BudgetShareChange]:
    """Each team's per-site budget share that moves. The plan splits a budget over the team's sites by each site's busiest
    month and quota worth (alicerce.plan.platform.site_budgets), so a pool or quota added at one site moves the share
    another site watches, mid-month, though nothing changed there: its alerts and guard read the new share at once."""
    if old is None or new is None or old_plan is None or new_plan is None:
        return []
    guarded = {t.name for t in new.teams if t.spec.budget is not None and t.spec.budget.on_exhausted == "stopAdmitting"}
    out = []
    for team, after in new_plan.site_budgets.items():
        before = old_plan.site_budgets.get(team)
        if before is None:  # a new budget or team: the team rows say so
            continue
        for site in [*after, *(s for s in before if s not in after)]:
            was, now = _written(before.get(site)), _written(after.get(site))
            if was != now:
                out.append(BudgetShareChange(team, site, was, now, team in guarded))
    return out


# -- the resource plan


def _changed_inputs(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


Key = tuple[str, str]  # resource type, name
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
TEMPLATE_VERSION = "launchTemplate.version"


def _new_template_versions(before: Mapping[Key, PlannedResource], after: Mapping[Key, PlannedResource]) -> set[str | None]:
    """Parents (node pools) whose launch template changes. EC2 makes every change a new template version and the
    program points the node group at the latest one; the mock engine answers version 1 every time, so the node
    group's own inputs cannot show it."""
    return {
        b.parent
        for key, b in after.items()
        if key[0] == LAUNCH_TEMPLATE and key in before and _changed_inputs(before[key].inputs, b.inputs)
    }


def diff_resources(old: Sequence[PlannedResource], new: Sequence[PlannedResource]) -> list[ResourceChange]:
    """Every declared resource created, deleted, updated or replaced between two plans (components skipped).

    An update that replaces every member one by one (a node group rolled onto a new launch template version,
    AMI release or Kubernetes version) is destructive too: every node is drained and terminated."""
    facts = load_replacements()
    before = {(r.type, r.name): r for r in old if not r.component}
    after = {(r.type, r.name): r for r in new if not r.component}
    new_templates = _new_template_versions(before, after)
    out = []
    for key in sorted(set(before) | set(after)):
        typ, name = key
        a, b = before.get(key), after.get(key)
        if a is None:
            out.append(ResourceChange(typ, name, "create", ()))
        elif b is None:
            out.append(ResourceChange(typ, name, "delete", (), facts.destructive.get(typ)))
        else:
            changed = _changed_inputs(a.inputs, b.inputs)
            rolling = rolling_changes(typ, a.inputs, b.inputs)
            if typ == NODE_GROUP and b.parent in new_templates:
                changed, rolling = sorted({*changed, TEMPLATE_VERSION}), sorted({*rolling, TEMPLATE_VERSION})
            if not changed:
                continue
            forcing = replacing_changes(typ, a.inputs, b.inputs)
            if forcing:
                loss = facts.resources[typ].dataLoss
                if b.delete_before_replace:  # a fixed name: the old one goes before the new one exists
                    loss = f"{loss}; deleted before its replacement is created, so none of it runs in between"
                out.append(ResourceChange(typ, name, "replace", tuple(forcing), loss))
            elif rolling:
                out.append(ResourceChange(typ, name, "update", tuple(changed), facts.resources[typ].rollLoss))
            else:
                out.append(ResourceChange(typ, name, "update", tuple(changed)))
    return out


def minimum_above_desired(old: Sequence[PlannedResource], new: Sequence[PlannedResource]) -> list[str]:
    """Node groups whose minimum grows. The program leaves a group's desired size to the cluster autoscaler
    (``ignoreChanges`` on ``scalingConfig.desiredSize``), so `pulumi up` sends the new minimum with the current
    desired size, and EKS refuses a minimum above it ("Minimum capacity N can't be greater than desired size M",
    EKS UpdateNodegroupConfig; terraform-aws-modules/terraform-aws-eks#748 and #3306 hit the same)."""
    before = {r.name: r for r in old if r.type == NODE_GROUP}
    out = []
    for r in new:
        if r.type != NODE_GROUP or r.name not in before:
            continue
        was, now = (_scaling(x.inputs, "minSize") for x in (before[r.name], r))
        if was is not None and now is not None and now > was:
            group = r.inputs.get("nodeGroupName", r.name)
            out.append(
                f"node group {group}: minimum {was} → {now}. EKS refuses a minimum above the group's current desired size, "
                f"which Pulumi leaves to the autoscaler; if it runs fewer than {now} nodes, raise it first "
                f"(aws eks update-nodegroup-config --nodegroup-name {group} --scaling-config desiredSize={now}), then pulumi up"
            )
    return out


def _scaling(inputs: Mapping[str, Any], key: str) -> int | None:
    value = (inputs.get("scalingConfig") or {}).get(key)
    return value if isinstance(value, int) else None


def planned(rp: ResolvedPlatform) -> list[PlannedResource]:
    """The offline resource plan of an environment (the Pulumi program under the mock engine)."""
    return run_preview(rp).resources


Planner = Callable[[ResolvedPlatform], Sequence[PlannedResource]]


def diff_environment(
    env: str, old: ResolvedPlatform | None, new: ResolvedPlatform | None, *, plan: Planner | None = planned
) -> EnvironmentDiff:
    """The semantic diff of one environment (``old``/``new`` None: the environment is added/removed).

    ``plan`` computes a resource plan (None: compare the resolved platform only).
    """
    status = "added" if old is None else "removed" if new is None else "changed"
    quotas, teams = diff_tenancy(old, new)
    old_plan, new_plan = (plan_platform(rp) if rp is not None else None for rp in (old, new))
    result = EnvironmentDiff(
        env,
        status,
        pools=diff_pools(old, new),
        quotas=quotas,
        teams=teams,
        storage=diff_storage(old, new),
        objects=diff_objects(old, new),
        prometheus_storage=diff_prometheus_storage(old, new),
        budget_shares=diff_budget_shares(old, new, old_plan, new_plan),
        cost_before=_plan_cost(old_plan),
        cost_after=_plan_cost(new_plan),
    )
    if plan is not None:
        before, after = plan(old) if old is not None else [], plan(new) if new is not None else []
        result.resources = diff_resources(before, after)
        result.warnings = minimum_above_desired(before, after)
    result.warnings += claim_moves(old, new)
    result.notes = regrouped_alerts(old, new)
    result.alerting = new_alert_secrets(old, new) + slo_changes(old, new) + pool_layout_changes(old, new)
    if status == "changed" and result.empty:
        result.status = "unchanged"
    return result


# -- the pull request comment


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:,.0f}"


def _signed(value: float, unit: str = "") -> str:
    return f"{value:+,.0f}{unit}" if value else f"0{unit}"


def _quota(units: int | None, borrowing: int | None) -> str:
    if units is None:
        return "none"
    return f"{units}" + (f" (+{borrowing} borrow)" if borrowing is not None else "")


def _prometheus_storage_lines(changes: Sequence[PrometheusStorageChange]) -> list[str]:
    """A grown volume, loudly: merged first, the new retention size syncs onto the disk that exists and fills it. A new
    storage class, as loudly: it changes nothing that exists, silently."""
    grown = [c for c in changes if c.change == "grown"]
    reclassed = [c for c in changes if c.change == "reclassed"]
    lines = []
    if reclassed:
        lines += ["> [!IMPORTANT]", "> **Prometheus's volume does not follow monitoring.storageClass**", ">"]
        for c in reclassed:
            was, now = _class_name(c.class_before), _class_name(c.class_after)
            lines.append(f"> - {c.site}: monitoring.storageClass {was} → {now} (a StatefulSet's volumeClaimTemplates are immutable):")
            lines += [f">   {n}. {step}" for n, step in enumerate(c.steps, 1)]
        lines.append("")
    if not grown:
        return lines
    lines += ["> [!IMPORTANT]", "> **Grow Prometheus's volume before this merges**", ">"]
    for c in grown:
        lines.append(
            f"> - {c.site}: monitoring.storage {c.claim_before} → {c.claim_after} raises retentionSize {c.retention_size_before} → "
            f"{c.retention_size_after}, but the claims that exist keep {c.claim_before} (a StatefulSet never resizes them):"
        )
        lines += [f">   {n}. {step}" for n, step in enumerate(c.steps, 1)]
    return [*lines, ""]


def _budget_share_lines(changes: Sequence[BudgetShareChange]) -> list[str]:
    lines = []
    for c in changes:
        delta = (c.usd_after or 0.0) - (c.usd_before or 0.0)
        moved = f"{'+' if delta >= 0 else '-'}{_money(abs(delta))}"
        line = (
            f"- team `{c.team}` budget share at {c.site}: {_money(c.usd_before)} → {_money(c.usd_after)} ({moved}) a month, "
            "from the next sync: this month's spend there so far counts against the new share"
        )
        if c.guarded and delta < 0:
            line += f"; if it is already past {_money(c.usd_after)}, {c.site}'s budget guard holds `{c.team}`'s queue at its next run"
        lines.append(line)
    return lines


def render_markdown(diffs: Sequence[EnvironmentDiff], title: str) -> str:
    lines = [f"## alicerce diff: {title}", ""]
    if all(d.status == "unchanged" for d in diffs):
        return "\n".join([*lines, "No change to the resolved platform or the resource plan.", ""])
    lines += ["| environment | status | GPU units at max | monthly cost | destructive changes |", "|---|---|---:|---:|---:|"]
    for d in diffs:
        cost = "—" if d.cost_delta is None else f"{_money(d.cost_before)} → {_money(d.cost_after)} ({_signed(d.cost_delta)})"
        lines.append(f"| {d.environment} | {d.status} | {_signed(d.gpu_units_delta)} | {cost} | {len(d.destructive) or 'none'} |")
    for d in diffs:
        if d.status == "unchanged":
            continue
        lines += ["", f"### {d.environment}", ""]
        if d.destructive:
            lines += ["> [!CAUTION]", "> **Destructive changes: data at risk**", ">"]
            for item in d.destructive:
                if isinstance(item, ResourceChange):
                    why = f" ({'forced by ' if item.action == 'replace' else ''}{', '.join(item.properties)})" if item.properties else ""
                    lines.append(f"> - **{item.action}** `{item.type}` `{item.name}`{why}: {item.data_loss}")
                elif isinstance(item, PrometheusStorageChange):
                    sizes = f"{item.claim_before} → {item.claim_after}"
                    lines.append(f"> - **shrink** Prometheus's volume at {item.site} ({sizes}): {item.data_loss}")
                else:
                    where = f"{item.namespace}/" if item.namespace else ""
                    lines.append(f"> - **remove** {item.kind} `{where}{item.name}` at {item.site}: {item.data_loss}")
            lines.append("")
        if d.warnings:
            lines += ["> [!WARNING]", "> **May stop `pulumi up`**", ">", *(f"> - {w}" for w in d.warnings), ""]
        lines += _prometheus_storage_lines(d.prometheus_storage)
        if d.notes:
            lines += ["> [!IMPORTANT]", "> **Alert notifications regrouped**", ">", *(f"> - {n}" for n in d.notes), ""]
        if d.alerting:
            lines += [
                "> [!IMPORTANT]",
                "> **Alerting: before the sync; pages that change**",
                ">",
                *(f"> - {a}" for a in d.alerting),
                "",
            ]
        if d.pools:
            lines += ["**Pools**", "", "| pool | site | change | GPU units at max | details |", "|---|---|---|---:|---|"]
            for p in d.pools:
                units = f"{p.gpu_units_before} → {p.gpu_units_after} ({_signed(p.gpu_units_delta)})"
                lines.append(f"| {p.pool} | {p.site} | {p.change} | {units} | {'; '.join(p.details)} |")
            lines.append("")
        if d.quotas or d.teams or d.budget_shares:
            lines += ["**Teams and quotas**", ""]
            lines += [f"- team `{t.team}` {t.change}: {t.details}" for t in d.teams]
            for q in d.quotas:
                before, after = _quota(q.units_before, q.borrowing_before), _quota(q.units_after, q.borrowing_after)
                lines.append(f"- `{q.team}` on `{q.pool}`: {before} → {after} GPU units")
            lines += _budget_share_lines(d.budget_shares)
            lines.append("")
        if d.storage:
            lines += ["**Storage**", ""]
            lines += [f"- `{t.tier}` {t.change}: {'; '.join(t.details)}" for t in d.storage]
            lines.append("")
        if d.objects:
            counts: dict[str, int] = {}
            for o in d.objects:
                counts[o.change] = counts.get(o.change, 0) + 1
            lines += [f"**In-cluster objects**: {', '.join(f'{n} {c}' for c, n in sorted(counts.items()))}", ""]
            lines += [
                "<details><summary>objects</summary>",
                "",
                *[f"- {o.change} {o.kind} `{(o.namespace + '/') if o.namespace else ''}{o.name}` at {o.site}" for o in d.objects],
                "",
                "</details>",
                "",
            ]
        if d.resources:
            counts = {}
            for r in d.resources:
                counts[r.action] = counts.get(r.action, 0) + 1
            lines += [
                f"**Resource plan** (offline, under the Pulumi mock engine): {', '.join(f'{n} {a}' for a, n in sorted(counts.items()))}",
                "",
            ]
            lines += [
                "<details><summary>resources</summary>",
                "",
                "| action | type | name | inputs |",
                "|---|---|---|---|",
                *[f"| {r.action} | `{r.type}` | `{r.name}` | {', '.join(r.properties)} |" for r in d.resources],
                "",
                "</details>",
                "",
            ]
    lines.append("_`pulumi preview` stays the authority on live state; this compares what the two specs declare._")
    return "\n".join(lines) + "\n"
