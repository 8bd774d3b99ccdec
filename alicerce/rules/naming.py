"""Names and references: unique, DNS-safe, and every reference resolves."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean, one_of
from alicerce.spec.models import DNS_LABEL, LocalNvmeTier, ObjectTier, ParallelFsTier
from alicerce.spec.paths import SpecPath
from alicerce.spec.text import INVISIBLE, char_name, confusable, escaped

rules = RuleSet()

_DNS = re.compile(DNS_LABEL)


def _named_lists(ctx: RuleContext) -> Iterator[tuple[str, SpecPath, list[str]]]:
    spec = ctx.spec
    yield "site", S.environments[ctx.env_name].sites, [s.name for s in ctx.env.sites]
    yield "node pool", S.node_pools, [p.name for p in spec.node_pools]
    yield "storage tier", S.storage, [t.name for t in spec.storage]
    yield "fabric", S.networks.fabrics, [f.name for f in spec.networks.fabrics]
    yield "team", S.tenancy.teams, [t.name for t in spec.tenancy.teams]
    yield "workload", S.workloads, [w.name for w in spec.workloads]
    yield "SLO", S.monitoring.slos, [s.name for s in spec.monitoring.slos]


@rules.rule("AL200", "unique-names", "Names are unique within their kind, and namespaces across teams.")
def unique_names(ctx: RuleContext) -> Iterable[Finding]:
    for kind, base, names in _named_lists(ctx):
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                yield Finding(
                    base[i].name,
                    f'{kind} "{name}" is defined twice',
                    f"the first is at index {seen[name]}; names must be unique",
                    name,
                )
            else:
                seen[name] = i
    owner: dict[str, str] = {}
    for i, team in enumerate(ctx.spec.tenancy.teams):
        for j, namespace in enumerate(team.namespaces or [team.name]):
            if namespace in owner and owner[namespace] != team.name:
                path = S.tenancy.teams[i].namespaces[j] if team.namespaces else S.tenancy.teams[i].name
                yield Finding(
                    path,
                    f'namespace "{namespace}" already belongs to team "{owner[namespace]}"',
                    "a namespace belongs to one team",
                    namespace,
                )
            owner.setdefault(namespace, team.name)


def all_names(ctx: RuleContext) -> Iterator[tuple[SpecPath, str]]:
    """Every name AL201 checks, with its path (AL277 leaves these to AL201, which names a bad character too)."""
    yield S.metadata.name, ctx.spec.metadata.name
    yield S.tenancy.cohort, ctx.spec.tenancy.cohort
    # this environment's own name: a document checked whole names each once (the key of
    # every other environment is checked with that environment, keeping validate linear in them)
    yield S.environments[ctx.env_name], ctx.env_name
    for kind, base, names in _named_lists(ctx):
        del kind
        for i, name in enumerate(names):
            yield base[i].name, name
    for i, team in enumerate(ctx.spec.tenancy.teams):
        for j, namespace in enumerate(team.namespaces):
            yield S.tenancy.teams[i].namespaces[j], namespace
    for i, namespace in enumerate(ctx.spec.tenancy.ingress.namespaces):  # they land in NetworkPolicy selectors
        yield S.tenancy.ingress.namespaces[i], namespace


@rules.rule("AL201", "dns-names", "Names are DNS-1123 labels: lowercase letters, digits and '-', at most 63.")
def dns_names(ctx: RuleContext) -> Iterable[Finding]:
    for path, name in all_names(ctx):
        if len(name) <= 63 and _DNS.fullmatch(name):
            continue
        # a look-alike letter (Cyrillic 'а') or an invisible one is named with its code point: the name looks right
        odd = next(((i, c) for i, c in enumerate(name) if not c.isascii() or INVISIBLE.match(c)), None)
        folded = "".join(confusable(c) if not c.isascii() else c for c in name)
        fixed = re.sub(r"[^a-z0-9-]+", "-", folded.lower())[:63].strip("-") or "name"
        which = f": character {char_name(odd[1])} at position {odd[0] + 1} is not allowed" if odd else ""
        yield Finding(
            path,
            f'"{escaped(name)}" is not a valid name{which} (lowercase letters, digits and "-", at most 63)',
            f'try "{fixed}"',
            name,
            key=path.path[0] == "environments",
        )


def _reference(kind: str, path: SpecPath, name: str, known: Iterable[str]) -> Finding:
    choices = list(known)
    hint = did_you_mean(name, choices) or (one_of(choices) if choices else f"no {kind} is defined")
    return Finding(path, f'no {kind} named "{name}"', hint, name)


@rules.rule("AL202", "site-reference", "Node pools and storage tiers name a site of every environment they are used in.")
def site_reference(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.site not in ctx.sites:
            finding = _reference(f"site in environment {ctx.env_name}", S.node_pools[i].site, pool.site, ctx.sites)
            joined = f"{finding.hint} To" if str(finding.hint).endswith(("?", ".")) else f"{finding.hint}; to"
            hint = f'{joined} keep the pool out of {ctx.env_name}, delete it in its overrides with "$patch: delete"'
            yield Finding(finding.path, finding.message, hint, pool.site, resource=pool.name)
    for i, tier in enumerate(ctx.spec.storage):
        site = getattr(tier, "site", None)
        if site is not None and site not in ctx.sites:
            yield _reference(f"site in environment {ctx.env_name}", S.storage[i].site, site, ctx.sites)
        for j, name in enumerate(getattr(tier, "sites", None) or []):
            if name not in ctx.every_site:  # a site of another environment is fine: the tier is just not here
                yield _reference("site in any environment", S.storage[i].sites[j], name, sorted(ctx.every_site))


@rules.rule("AL203", "fabric-reference", "A node pool's fabric is defined under networks.fabrics.")
def fabric_reference(ctx: RuleContext) -> Iterable[Finding]:
    fabrics = [f.name for f in ctx.spec.networks.fabrics]
    for i, pool in ctx.indexed_pools():
        if pool.fabric is not None and pool.fabric not in fabrics:
            yield _reference("fabric", S.node_pools[i].fabric, pool.fabric, fabrics)


@rules.rule("AL204", "tier-source-reference", "A parallel-fs tier's source is an object tier (its data repository).")
def tier_source(ctx: RuleContext) -> Iterable[Finding]:
    objects = [t.name for t in ctx.spec.storage if isinstance(t, ObjectTier)]
    for i, tier in enumerate(ctx.spec.storage):
        if isinstance(tier, ParallelFsTier) and tier.source is not None and tier.source not in objects:
            other = ctx.tiers.get(tier.source)
            if other is not None:
                yield Finding(
                    S.storage[i].source,
                    f'tier "{tier.source}" is {other.class_}, not object storage',
                    "a data repository link imports from and exports to an object tier",
                    tier.source,
                )
            else:
                yield _reference("object tier", S.storage[i].source, tier.source, objects)
        if isinstance(tier, LocalNvmeTier):
            for j, pool in enumerate(tier.pools):
                if pool not in ctx.pools:
                    yield _reference("node pool", S.storage[i].pools[j], pool, ctx.pools)


@rules.rule("AL205", "team-pool-reference", "Every team quota names an existing node pool with GPUs.")
def team_pool(ctx: RuleContext) -> Iterable[Finding]:
    for i, team in enumerate(ctx.spec.tenancy.teams):
        for j, quota in enumerate(team.quotas):
            pool = ctx.pools.get(quota.pool)
            path = S.tenancy.teams[i].quotas[j].pool
            if pool is None:
                yield _reference("node pool", path, quota.pool, ctx.pools)
            elif pool.accelerator is None:
                yield Finding(
                    path,
                    f'pool "{quota.pool}" has no GPUs to give a GPU quota from',
                    "quota a GPU pool, or give the pool an accelerator",
                    quota.pool,
                )


@rules.rule("AL206", "workload-references", "Workloads, SLOs and datasets name existing teams, pools, workloads and tiers.")
def workload_references(ctx: RuleContext) -> Iterable[Finding]:
    teams = [t.name for t in ctx.spec.tenancy.teams]
    workloads = [w.name for w in ctx.spec.workloads]
    for i, workload in enumerate(ctx.spec.workloads):
        if workload.team not in teams:
            yield _reference("team", S.workloads[i].team, workload.team, teams)
        if workload.pool is not None and workload.pool not in ctx.pools:
            yield _reference("node pool", S.workloads[i].pool, workload.pool, ctx.pools)
        if workload.dataset is not None and workload.dataset.tier is not None and workload.dataset.tier not in ctx.tiers:
            yield _reference("storage tier", S.workloads[i].dataset.tier, workload.dataset.tier, ctx.tiers)
    for i, slo in enumerate(ctx.spec.monitoring.slos):
        if slo.workload is not None and slo.workload not in workloads:
            yield _reference("workload", S.monitoring.slos[i].workload, slo.workload, workloads)
        if slo.team is not None and slo.team not in teams:
            yield _reference("team", S.monitoring.slos[i].team, slo.team, teams)
