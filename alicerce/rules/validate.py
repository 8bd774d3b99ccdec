"""The validation pipeline: schema, then each environment's overlay, its resolved facts, then cross-field rules.

Each environment is resolved once (:func:`alicerce.resolve.platform.resolve_spec`, total on any
schema-valid spec) and the rules check those facts; :func:`validated` hands the same resolved
platform to the commands that go on to plan or emit.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from alicerce.catalog import Catalog, load_catalog
from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.platform import resolve_spec
from alicerce.rules import RULES, RuleContext, run_rules
from alicerce.spec.errors import SpecError, SpecInvalid, did_you_mean, sorted_unique
from alicerce.spec.loader import Document, Pos, node_at
from alicerce.spec.models import PlatformSpec
from alicerce.spec.overlay import apply_overrides
from alicerce.spec.schema_errors import convert


@dataclass(frozen=True)
class EnvironmentSpec:
    """One environment's merged spec and the positions its values came from."""

    name: str
    spec: PlatformSpec
    data: dict[str, Any]
    pos: Pos
    resolved: ResolvedPlatform


@dataclass(frozen=True)
class Checked:
    """The result of checking a document: the base spec, the merged environments, every error."""

    base: PlatformSpec | None
    environments: dict[str, EnvironmentSpec]
    errors: list[SpecError]

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


def merge_environment(document: Document, base: PlatformSpec, env: str) -> tuple[dict[str, Any], Pos, list[SpecError]]:
    """The base document with ``env``'s overrides applied (data, positions, overlay errors)."""
    overrides = base.environments[env].overrides
    if not overrides:
        return document.data, document.pos, []
    path = ("environments", env, "overrides")
    overrides_pos = node_at(document.pos, path)
    assert overrides_pos is not None
    raw_overrides = document.data["environments"][env]["overrides"]
    return apply_overrides(document.data, document.pos, raw_overrides, overrides_pos, path)


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
    if base is None:
        return Checked(None, {}, sorted_unique(errors))
    names = list(base.environments)
    chosen = names if environments is None else environments
    for env in chosen:
        if env not in base.environments:
            hint = did_you_mean(env, names) or f"environments: {', '.join(names)}"
            raise SpecInvalid([SpecError(document.pos.span, "AL012", ("environments",), f'no environment "{env}"', hint, env)])
    merged: dict[str, EnvironmentSpec] = {}
    for env in chosen:
        data, pos, overlay_errors = merge_environment(document, base, env)
        errors.extend(e.__class__(e.span, e.rule, e.path, e.message, e.hint, e.value, env) for e in overlay_errors)
        spec, schema_errors = (base, []) if data is document.data else _schema(document, data, pos, env)
        errors.extend(schema_errors)
        if spec is None:
            continue
        resolved = resolve_spec(spec, env, catalog)
        merged[env] = EnvironmentSpec(env, spec, data, pos, resolved)
        errors.extend(run_rules(RuleContext(spec, env, catalog, resolved, date, RULES), pos))
    return Checked(base, merged, sorted_unique(errors, chosen))


def load_and_check(path: str, environments: list[str] | None = None, *, display: str | None = None) -> Checked:
    from alicerce.spec.loader import load_file

    return check(load_file(path, display), environments)


def validated(document: Document, env: str, catalog: Catalog | None = None) -> ResolvedPlatform:
    """Environment ``env`` of a loaded document, checked and resolved; raises :class:`SpecInvalid` on errors."""
    checked = check(document, [env], catalog=catalog)
    if checked.errors:
        raise SpecInvalid(checked.errors)
    return checked.environments[env].resolved
