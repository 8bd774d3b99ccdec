"""Cross-field rules: checks that need several fields, the catalog or an environment.

Every rule has an id (``AL2xx``), a short name, a one-line summary, and fixtures under
``alicerce/rules/fixtures/<id>.yaml`` (package data: `alicerce rules ID` shows them) with at
least one passing and one failing case (a test fails when a rule lacks either). A rule yields
:class:`Finding` values with a path into the environment's merged spec; the runner turns the path
into a file position, so an error inside an environment override points at the override's own line.

Rules marked ``waivable`` are policy: a matching, unexpired ``waivers`` entry suppresses them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any, TypeVar

from alicerce.catalog import Catalog
from alicerce.catalog.models import Gpu
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool
from alicerce.spec.models import Environment, NodePool, PlatformSpec, Site, StorageTier
from alicerce.spec.paths import SpecPath
from alicerce.spec.record import field, record

_T = TypeVar("_T")

S = SpecPath(PlatformSpec)
"""The root of every finding's path: ``S.node_pools[i].aws.zone`` (see :mod:`alicerce.spec.paths`)."""


@record
class Finding:
    """A rule violation at ``path`` (in the merged spec of the environment)."""

    path: SpecPath
    message: str
    hint: str | None = None
    value: Any = None
    key: bool = False  # point at the key itself (for things that should not be there)
    resource: str | None = None  # pool/tier/team name, for waivers scoped to resources


@record
class Rule:
    id: str
    name: str
    summary: str
    check: Callable[[RuleContext], Iterable[Finding]]
    waivable: bool = False
    # a warning says what the user should know and does not fail validate (exit 0): shown beside a valid spec's notes
    warning: bool = False


class RuleSet:
    """The rules of one topic module, registered with :meth:`rule` in the order they are written."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []

    def rule(
        self, rule_id: str, name: str, summary: str, *, waivable: bool = False, warning: bool = False
    ) -> Callable[[Callable[[RuleContext], Iterable[Finding]]], Callable[[RuleContext], Iterable[Finding]]]:
        """Add the decorated check to this set under ``rule_id`` (a warning where ``warning``: it fails nothing)."""

        def register(check: Callable[[RuleContext], Iterable[Finding]]) -> Callable[[RuleContext], Iterable[Finding]]:
            self.rules.append(Rule(rule_id, name, summary, check, waivable, warning))
            return check

        return register


@record(frozen=False)
class RuleContext:
    """What a rule sees: one environment's merged spec, the catalog, and lookups."""

    spec: PlatformSpec
    env_name: str
    catalog: Catalog
    resolved: ResolvedPlatform  # the environment's decided facts: rules check them, they decide nothing again
    today: datetime.date = field(default_factory=datetime.date.today)
    rules: Mapping[str, Rule] = field(default_factory=dict)  # every rule by id (waivers are checked against it)
    # facts of the whole document, the same in every environment's spec (overrides cannot change the
    # environments section): one dict shared by the environments of a check, so each is computed once
    shared: dict[str, Any] = field(default_factory=dict)
    # facts of this environment that several rules read, each computed by the first that needs it (see once)
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, key: str, compute: Callable[[], _T]) -> _T:
        """``compute()``, computed once for this environment under ``key``."""
        if key not in self.memo:
            self.memo[key] = compute()
        found: _T = self.memo[key]
        return found

    @property
    def every_site(self) -> frozenset[str]:
        """The site names of every environment, computed once per checked document (validate stays linear
        in the number of environments)."""
        if "every_site" not in self.shared:
            self.shared["every_site"] = frozenset(s.name for env in self.spec.environments.values() for s in env.sites)
        found: frozenset[str] = self.shared["every_site"]
        return found

    @property
    def env(self) -> Environment:
        return self.spec.environments[self.env_name]

    @cached_property
    def sites(self) -> dict[str, Site]:
        return {site.name: site for site in self.env.sites}

    @cached_property
    def pools(self) -> dict[str, NodePool]:
        return {pool.name: pool for pool in self.spec.node_pools}

    @cached_property
    def tiers(self) -> dict[str, StorageTier]:
        return {tier.name: tier for tier in self.spec.storage}

    @cached_property
    def resolved_pools(self) -> dict[int, ResolvedPool]:
        """The resolved pools by their position in nodePools (pools at no site of the environment have none)."""
        return {pool.index: pool for pool in self.resolved.pools}

    def pool_gpu(self, index: int) -> Gpu | None:
        """The catalog GPU of the pool at ``index`` (None for CPU pools and unknown GPUs)."""
        pool = self.resolved_pools.get(index)
        return pool.gpu if pool is not None else None

    def pool_site(self, pool: NodePool) -> Site | None:
        return self.sites.get(pool.site)

    def indexed_pools(self) -> Iterator[tuple[int, NodePool]]:
        return enumerate(self.spec.node_pools)
