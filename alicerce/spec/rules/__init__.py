"""Cross-field rules: checks that need several fields, the catalog or an environment.

Every rule has an id (``AL2xx``), a short name, a one-line summary, and fixtures under
``tests/data/rules/<id>.yaml`` with at least one passing and one failing case (a test fails when
a rule lacks either). A rule yields :class:`Finding` values with a path into the environment's
merged spec; the runner turns the path into a file position, so an error inside an environment
override points at the override's own line.

Rules marked ``waivable`` are policy: a matching, unexpired ``waivers`` entry suppresses them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from alicerce.catalog import Catalog
from alicerce.spec.errors import Path, SpecError
from alicerce.spec.loader import Pos, locate
from alicerce.spec.models import AwsSite, Environment, NodePool, OnpremSite, PlatformSpec, StorageTier


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule violation at ``path`` (in the merged spec of the environment)."""

    path: Path
    message: str
    hint: str | None = None
    value: Any = None
    key: bool = False  # point at the key itself (for things that should not be there)
    resource: str | None = None  # pool/tier/team name, for waivers scoped to resources


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    summary: str
    check: Callable[[RuleContext], Iterable[Finding]]
    waivable: bool = False


RULES: dict[str, Rule] = {}


def rule(
    rule_id: str, name: str, summary: str, *, waivable: bool = False
) -> Callable[[Callable[[RuleContext], Iterable[Finding]]], Callable[[RuleContext], Iterable[Finding]]]:
    """Register a rule function under an id."""

    def register(check: Callable[[RuleContext], Iterable[Finding]]) -> Callable[[RuleContext], Iterable[Finding]]:
        if rule_id in RULES:
            raise ValueError(f"rule id {rule_id} registered twice")
        RULES[rule_id] = Rule(rule_id, name, summary, check, waivable)
        return check

    return register


@dataclass
class RuleContext:
    """What a rule sees: one environment's merged spec, the catalog, and lookups."""

    spec: PlatformSpec
    env_name: str
    catalog: Catalog
    today: datetime.date = field(default_factory=datetime.date.today)

    @property
    def env(self) -> Environment:
        return self.spec.environments[self.env_name]

    @cached_property
    def sites(self) -> dict[str, AwsSite | OnpremSite]:
        return {site.name: site for site in self.env.sites}

    @cached_property
    def pools(self) -> dict[str, NodePool]:
        return {pool.name: pool for pool in self.spec.node_pools}

    @cached_property
    def tiers(self) -> dict[str, StorageTier]:
        return {tier.name: tier for tier in self.spec.storage}

    def pool_site(self, pool: NodePool) -> AwsSite | OnpremSite | None:
        return self.sites.get(pool.site)

    def indexed_pools(self) -> Iterator[tuple[int, NodePool]]:
        return enumerate(self.spec.node_pools)

    def tier_sites(self, tier: StorageTier) -> list[AwsSite | OnpremSite]:
        """Sites a tier exists at: its own site, or every site of the environment."""
        site_name = getattr(tier, "site", None)
        if site_name is None:
            return list(self.env.sites)
        site = self.sites.get(site_name)
        return [site] if site is not None else []


def _waived(ctx: RuleContext, rule_obj: Rule, finding: Finding) -> bool:
    if not rule_obj.waivable:
        return False
    for waiver in ctx.spec.waivers:
        if waiver.rule != rule_obj.id or waiver.expires < ctx.today:
            continue
        if waiver.environments and ctx.env_name not in waiver.environments:
            continue
        if waiver.resources and finding.resource not in waiver.resources:
            continue
        return True
    return False


def run_rules(ctx: RuleContext, pos: Pos) -> list[SpecError]:
    """Run every rule over one environment; findings become located errors."""
    _load_rule_modules()
    errors: list[SpecError] = []
    for rule_obj in RULES.values():
        for finding in rule_obj.check(ctx):
            if _waived(ctx, rule_obj, finding):
                continue
            span, _ = locate(pos, finding.path, key=finding.key)
            errors.append(SpecError(span, rule_obj.id, finding.path, finding.message, finding.hint, finding.value, ctx.env_name))
    return errors


def _load_rule_modules() -> None:
    from alicerce.spec.rules import (  # noqa: F401 - imported for their registrations
        compute,
        naming,
        network,
        security,
        storage,
        tenancy,
        versions,
    )


def all_rules() -> dict[str, Rule]:
    _load_rule_modules()
    return dict(sorted(RULES.items()))
