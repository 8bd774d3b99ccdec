"""The cross-field rules, listed explicitly: one module per topic and one per target, each with its own RuleSet.

:func:`run_rules` runs every rule of :data:`RULE_MODULES` over one environment's merged spec and
turns each finding into an error located in the user's YAML; waived findings are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType, ModuleType

from alicerce.rules import catalog, compute, gitops, naming, network, security, sizing, storage, tenancy, versions
from alicerce.rules.base import Finding, Rule, RuleContext, RuleSet
from alicerce.spec.errors import Path, SpecError
from alicerce.spec.loader import Pos, locate
from alicerce.spec.text import secret_shape
from alicerce.targets import TARGETS, stage_module

# provider-neutral topics, then each registered target's own rules
RULE_MODULES: tuple[ModuleType, ...] = (
    compute,
    naming,
    network,
    security,
    sizing,
    storage,
    tenancy,
    versions,
    gitops,
    catalog,
    *(stage_module(t.rules) for t in TARGETS),
)


def _table(sets: tuple[RuleSet, ...]) -> dict[str, Rule]:
    table: dict[str, Rule] = {}
    for rule_set in sets:
        for rule_obj in rule_set.rules:
            if rule_obj.id in table:
                raise ValueError(f"rule id {rule_obj.id} defined twice")
            table[rule_obj.id] = rule_obj
    return table


RULES = MappingProxyType(_table(tuple(module.rules for module in RULE_MODULES)))
"""Every rule by id, in the order the modules list them."""

WARNING_RULES = frozenset(rule_id for rule_id, rule_obj in RULES.items() if rule_obj.warning)
"""The ids of the rules whose findings are warnings: validate reports them and still exits 0."""


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


def run_rules(ctx: RuleContext, pos: Pos, original: Callable[[Path], Path] | None = None) -> list[SpecError]:
    """Run every rule over one environment; findings become located errors.

    ``original`` maps a path of the spec the rules saw to the document's own, where the rules ran
    on the part of a document that parsed (alicerce.rules.prune).
    """
    errors: list[SpecError] = []
    for rule_obj in ctx.rules.values():
        for finding in rule_obj.check(ctx):
            if _waived(ctx, rule_obj, finding):
                continue
            quoted = (finding.value if isinstance(finding.value, str) else "", finding.message, finding.hint or "")
            if rule_obj.id != "AL276" and any(secret_shape(text) for text in quoted):
                continue  # AL276 reports the secret at its own path without echoing it; this message would quote it
            path = original(finding.path.path) if original else finding.path.path
            span, _ = locate(pos, path, key=finding.key)
            errors.append(SpecError(span, rule_obj.id, path, finding.message, finding.hint, finding.value, ctx.env_name))
    return errors


def all_rules() -> dict[str, Rule]:
    return dict(sorted(RULES.items()))


__all__ = ["RULES", "RULE_MODULES", "WARNING_RULES", "Finding", "Rule", "RuleContext", "all_rules", "run_rules"]
