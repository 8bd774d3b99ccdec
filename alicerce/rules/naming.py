"""Names and references: unique, DNS-safe, and every reference resolves."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean, one_of
from alicerce.spec.models import DNS_LABEL, LocalNvmeTier, ObjectTier, ParallelFsTier
from alicerce.spec.models.workloads import FEEDS
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
    for i, receiver in enumerate(ctx.spec.monitoring.receivers):
        # the Secret Alertmanager mounts (alertmanagerSpec.secrets) and the file path its config reads the credential from
        if receiver.secret is not None:
            yield S.monitoring.receivers[i].secret.name, receiver.secret.name


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


@rules.rule("AL223", "input-reference", "A workload's inputs name other workloads of the spec, each once.")
def input_reference(ctx: RuleContext) -> Iterable[Finding]:
    workloads = [w.name for w in ctx.spec.workloads]
    for i, workload in enumerate(ctx.spec.workloads):
        seen: set[str] = set()
        for j, name in enumerate(workload.inputs):
            path = S.workloads[i].inputs[j]
            if name not in workloads:
                yield _reference("workload", path, name, [w for w in workloads if w != workload.name])
            elif name in seen:
                yield Finding(path, f'"{name}" is listed twice', "list each input once", name, resource=workload.name)
            seen.add(name)


@rules.rule("AL224", "input-cycle", "Workload inputs form no cycle: a chain runs from its data to its served model.")
def input_cycle(ctx: RuleContext) -> Iterable[Finding]:
    """Each cycle once, at the input that closes it as the workloads are listed: a stage that (through others) consumes
    its own output has no first stage to measure a lead time from, and no planned wall-clock to sum."""
    inputs = {w.name: [n for n in w.inputs if n != w.name] for w in ctx.spec.workloads}
    index = {w.name: i for i, w in enumerate(ctx.spec.workloads)}
    for i, workload in enumerate(ctx.spec.workloads):
        for j, name in enumerate(workload.inputs):
            if name == workload.name:
                yield Finding(S.workloads[i].inputs[j], f"workload {name} lists itself as its input",
                              "remove it; a workload that refines its own output is one stage", name, resource=name)  # fmt: skip
    reported: set[frozenset[str]] = set()
    for start in inputs:
        for cycle in _cycles_from(start, inputs):
            members = frozenset(cycle)
            if members in reported or cycle[0] != min(cycle, key=index.__getitem__):
                continue
            reported.add(members)
            first, consumed = cycle[0], cycle[1]
            j = ctx.spec.workloads[index[first]].inputs.index(consumed)
            flow = " -> ".join([first, *cycle[:0:-1], first])  # each workload's output feeding the next
            yield Finding(S.workloads[index[first]].inputs[j], f"workload inputs form a cycle: {flow}",
                          "remove the input that does not feed this workload's output", consumed, resource=first)  # fmt: skip


def _cycles_from(start: str, inputs: dict[str, list[str]]) -> Iterator[list[str]]:
    """The simple cycles through ``start`` along inputs: [start, its input, that one's input, ...] back to start."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    while stack:
        node, path = stack.pop()
        for name in inputs.get(node, []):
            if name == start:
                yield path
            elif name not in path and name in inputs:
                stack.append((name, [*path, name]))


@rules.rule("AL225", "input-kind", "A workload's inputs are of kinds whose output it reads (no service feeds training).")
def input_kind(ctx: RuleContext) -> Iterable[Finding]:
    kinds = {w.name: w.kind for w in ctx.spec.workloads}
    for i, workload in enumerate(ctx.spec.workloads):
        for j, name in enumerate(workload.inputs):
            kind = kinds.get(name)
            if kind is None or name == workload.name or workload.kind in FEEDS[kind]:
                continue  # unknown names and self-references: AL223, AL224
            feeds = FEEDS[kind]
            what = f"feeds only {', '.join(feeds)} workloads" if feeds else "answers requests and writes nothing another workload reads"
            yield Finding(S.workloads[i].inputs[j], f"{name} is {_article(kind)} {kind} workload, which {what}: not {workload.kind}",
                          _input_hint(workload.kind), name, resource=workload.name)  # fmt: skip


def _input_hint(kind: str) -> str:
    """The kinds a ``kind`` workload may consume."""
    sources = [k for k, feeds in FEEDS.items() if kind in feeds]
    return (
        f"{_article(kind)} {kind} workload's inputs are {', '.join(sources)} workloads"
        if sources
        else f"{_article(kind)} {kind} workload consumes no workload"
    )


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"
