"""Which changes to an AWS resource replace it, and what a replacement or a removal destroys.

Facts from ``data/replacements.yaml`` (read from terraform-provider-aws, the provider pulumi-aws is
built from, because neither pulumi_aws nor its Pulumi schema says which inputs force a new resource).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import yaml
from pydantic import Field

from alicerce.catalog.models import CatalogModel, Source


class ReplacingResource(CatalogModel):
    what: str = Field(description="What the resource is, in words.")
    dataLoss: str = Field(description="What a replacement destroys.")
    replaceOn: tuple[str, ...] = Field(description="Inputs whose change replaces the resource (dotted: nested).")
    replaceOnDecrease: tuple[str, ...] = Field(default=(), description="Numeric inputs whose decrease replaces it.")
    source: Source
    rollOn: tuple[str, ...] = Field(default=(), description="Inputs updated in place by replacing every member one by one.")
    rollLoss: str | None = Field(default=None, description="What such a rolling update destroys.")
    rollSource: Source | None = None


class Replacements(CatalogModel):
    schemaVersion: int
    resources: dict[str, ReplacingResource]
    destructive: dict[str, str] = Field(description="Resource type -> what its removal destroys.")


@functools.cache
def load_replacements() -> Replacements:
    text = resources.files("alicerce.catalog").joinpath("data/replacements.yaml").read_text("utf-8")
    return Replacements.model_validate(yaml.safe_load(text))


def _get(inputs: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(inputs, dict):
            return None
        inputs = inputs.get(part)
    return inputs


def replacing_changes(resource_type: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The inputs whose change from ``old`` to ``new`` replaces a resource of ``resource_type`` (sorted)."""
    facts = load_replacements().resources.get(resource_type)
    if facts is None:
        return []
    out = [name for name in facts.replaceOn if _get(old, name) != _get(new, name)]
    for name in facts.replaceOnDecrease:
        before, after = _get(old, name), _get(new, name)
        if isinstance(before, int | float) and isinstance(after, int | float) and after < before:
            out.append(name)
    return sorted(out)


def rolling_changes(resource_type: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The inputs whose change from ``old`` to ``new`` is an update that replaces every member (sorted)."""
    facts = load_replacements().resources.get(resource_type)
    if facts is None:
        return []
    return sorted(name for name in facts.rollOn if _get(old, name) != _get(new, name))
