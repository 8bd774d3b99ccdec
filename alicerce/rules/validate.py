"""The validation pipeline: schema, then each environment's overlay, its resolved facts, then cross-field rules.

Each environment is resolved once (:func:`alicerce.resolve.platform.resolve_spec`, total on any
schema-valid spec) and the rules check those facts; :func:`validated` hands the same resolved
platform to the commands that go on to plan or emit.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

from pydantic import ValidationError

from alicerce.catalog import Catalog, load_catalog
from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.platform import resolve_spec
from alicerce.rules import RULES, WARNING_RULES, RuleContext, run_rules
from alicerce.rules.prune import Pruned, prune
from alicerce.spec.errors import SpecError, SpecInvalid, did_you_mean, sorted_unique
from alicerce.spec.loader import Document, Pos, locate, node_at
from alicerce.spec.models import PlatformSpec
from alicerce.spec.overlay import AddedItem, apply_overrides
from alicerce.spec.record import field, record
from alicerce.spec.schema_errors import convert


@record
class EnvironmentSpec:
    """One environment's merged spec and the positions its values came from."""

    name: str
    spec: PlatformSpec
    data: dict[str, Any]
    pos: Pos
    resolved: ResolvedPlatform


@record
class Checked:
    """The result of checking a document: the base spec, the merged environments, every error, and the findings of the
    warning rules (Rule.warning), which fail nothing."""

    base: PlatformSpec | None
    environments: dict[str, EnvironmentSpec]
    errors: list[SpecError]
    warnings: list[SpecError] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors


def today() -> datetime.date:
    """The date waivers are checked against; ``ALICERCE_TODAY=YYYY-MM-DD`` pins it for reproducible runs."""
    pinned = os.environ.get("ALICERCE_TODAY")
    return datetime.date.fromisoformat(pinned) if pinned else datetime.date.today()


def _schema(document: Document, data: Any, pos: Pos, env: str | None) -> tuple[PlatformSpec | None, list[SpecError]]:
    try:
        return PlatformSpec.model_validate(data), []
    except ValidationError as exc:
        return None, convert(exc, PlatformSpec, data, pos, env)


def _merged_schema(
    document: Document, base: PlatformSpec | None, data: dict[str, Any], pos: Pos, env: str
) -> tuple[PlatformSpec | None, list[SpecError]]:
    """The schema check of one environment's merged data.

    Overrides cannot change the environments section (overlay.FORBIDDEN), so where the base parsed,
    its environments are taken as they are and only this environment's own section is validated
    again: validating every environment's section for each environment made validate quadratic in
    their number.
    """
    if base is None:
        return _schema(document, data, pos, env)
    own = {**data, "environments": {env: data["environments"][env]}}
    spec, errors = _schema(document, own, pos, env)
    return (spec.model_copy(update={"environments": base.environments}) if spec is not None else None), errors


def _partial(data: Any, pos: Pos, env: str | None) -> Pruned | None:
    """What of ``data`` parsed, for the cross-field rules to check despite its schema errors."""
    try:
        PlatformSpec.model_validate(data)
    except ValidationError as exc:
        return prune(data, lambda error, work: [e.path for e in convert(error, PlatformSpec, work, pos, env)], exc)
    return None


def merge_environment(document: Document, base: PlatformSpec, env: str) -> tuple[dict[str, Any], Pos, list[SpecError], list[AddedItem]]:
    """The base document with ``env``'s overrides applied (data, positions, overlay errors, items added)."""
    overrides = base.environments[env].overrides
    if not overrides:
        return document.data, document.pos, [], []
    path = ("environments", env, "overrides")
    overrides_pos = node_at(document.pos, path)
    assert overrides_pos is not None
    raw_overrides = document.data["environments"][env]["overrides"]
    return apply_overrides(document.data, document.pos, raw_overrides, overrides_pos, path)


# what each named list holds, for messages about its items
ITEM_KINDS = {"nodePools": "node pool", "storage": "storage tier", "teams": "team", "fabrics": "fabric", "workloads": "workload"}


def _misspelt_overrides(schema_errors: list[SpecError], added: list[AddedItem], env: str) -> list[SpecError]:
    """An override item that matches no base item by name, is incomplete as a new item, and is close to a
    base name is a typo of that name: say so, instead of listing the fields a new item would need."""
    out = list(schema_errors)
    for item in added:
        inside = [e for e in out if e.path[: len(item.path)] == item.path]
        # only missing keys: an item meant to change a base item names just what it changes
        if not inside or any(e.rule != "AL101" for e in inside):
            continue
        close = did_you_mean(item.name, item.known)
        if not close:
            continue
        kind = ITEM_KINDS.get(str(item.path[-2]), "item")
        missing = sorted({str(e.path[len(item.path)]) for e in inside if len(e.path) > len(item.path)})
        as_new = f" As a new {kind} it would also need: {', '.join(missing)}" if missing else ""
        out = [e for e in out if e not in inside]
        out.append(
            SpecError(
                item.name_span, "AL123", (*item.path, "name"), f'no base {kind} named "{item.name}"', f"{close}{as_new}", item.name, env
            )
        )
    return out


def check(
    document: Document,
    environments: list[str] | None = None,
    *,
    catalog: Catalog | None = None,
    on: datetime.date | None = None,
) -> Checked:
    """Every error in the document, for the chosen environments (all when None)."""
    catalog = catalog or load_catalog()
    date = on or today()
    base, errors = _schema(document, document.data, document.pos, None)
    # with schema errors in the base, the environments are read from the part that parsed
    partial = _partial(document.data, document.pos, None) if base is None else None
    known = base if base is not None else (partial.spec if partial is not None else None)
    if known is None:
        return Checked(None, {}, sorted_unique(errors))
    names = list(known.environments)
    chosen = names if environments is None else environments
    for env in chosen:
        if env not in known.environments:
            hint = did_you_mean(env, names) or f"environments: {', '.join(names)}"
            raise SpecInvalid([SpecError(document.pos.span, "AL012", ("environments",), f'no environment "{env}"', hint, env)])
    merged: dict[str, EnvironmentSpec] = {}
    shared: dict[str, Any] = {}  # document-wide facts the rules compute once for every environment
    for env in chosen:
        data, pos, overlay_errors, added = merge_environment(document, known, env)
        errors.extend(e.__class__(e.span, e.rule, e.path, e.message, e.hint, e.value, env) for e in overlay_errors)
        spec, schema_errors = (base, []) if data is document.data and base is not None else _merged_schema(document, base, data, pos, env)
        schema_errors = _misspelt_overrides(schema_errors, added, env)
        errors.extend(schema_errors)
        if spec is None:
            errors.extend(_rules_on_what_parsed(data, pos, env, catalog, date))
            continue
        resolved = resolve_spec(spec, env, catalog)
        merged[env] = EnvironmentSpec(env, spec, data, pos, resolved)
        errors.extend(run_rules(RuleContext(spec, env, resolved.catalog, resolved, date, RULES, shared), pos))
    # an error names the environments it was found in unless every environment of the spec has it (a
    # base error): the same error reads the same whether one environment or all were checked
    found = sorted_unique(errors, names)
    warned = [e for e in found if e.rule in WARNING_RULES]
    return Checked(base, merged, [e for e in found if e.rule not in WARNING_RULES], warned)


def _rules_on_what_parsed(data: Any, pos: Pos, env: str, catalog: Catalog, date: datetime.date) -> list[SpecError]:
    """The cross-field errors of an environment with schema errors, from the part of it that parsed."""
    pruned = _partial(data, pos, env)
    if pruned is None or env not in pruned.spec.environments:
        return []
    resolved = resolve_spec(pruned.spec, env, catalog)
    found = run_rules(RuleContext(pruned.spec, env, resolved.catalog, resolved, date, RULES), pos, pruned.original)
    # "no pool named X" where X was cut for its own schema errors, or "no receiver pages" where the pager was, would
    # only repeat them
    shortened = pruned.shortened
    return [e for e in found if not (isinstance(e.value, str) and e.value in pruned.cut_names) and e.path not in shortened]


def load_and_check(path: str, environments: list[str] | None = None, *, display: str | None = None) -> Checked:
    from alicerce.spec.loader import load_file

    return check(load_file(path, display), environments)


def alias_notes(checked: Checked) -> list[SpecError]:
    """Notes, not errors: each pool whose accelerator names its GPU by an alias (`H100`, `H100-80GB`) resolves to
    one part, which a user who meant another (the PCIe card) would not see; the note names the part."""
    notes = []
    for env in checked.environments.values():
        for pool in env.resolved.pools:
            accelerator = pool.spec.accelerator
            if accelerator is None or pool.gpu is None or accelerator.model.lower() == pool.gpu.id.lower():
                continue
            path = ("nodePools", pool.index, "accelerator")
            span, _ = locate(env.pos, path)
            message = f'"{accelerator.model}" is an alias of {pool.gpu.id}'
            hint = f"write {pool.gpu.id}:{accelerator.count}, or the id of the part you meant from `alicerce catalog gpus`"
            notes.append(SpecError(span, "", path, message, hint, accelerator.model, env.name))
    return sorted_unique(notes, list(checked.environments))


def validated(document: Document, env: str, catalog: Catalog | None = None) -> ResolvedPlatform:
    """Environment ``env`` of a loaded document, checked and resolved; raises :class:`SpecInvalid` on errors."""
    return validated_environment(document, env, catalog).resolved


def validated_environment(document: Document, env: str, catalog: Catalog | None = None) -> EnvironmentSpec:
    """Environment ``env`` checked, with the positions its merged values came from (what `plan` locates the findings
    about a declared field with: review sizreview22 G4); raises :class:`SpecInvalid` on errors."""
    checked = check(document, [env], catalog=catalog)
    if checked.errors:
        raise SpecInvalid(checked.errors)
    return checked.environments[env]
