"""The GitHub Actions the generated workflows use, each pinned to the commit of a release tag."""

from __future__ import annotations

import functools
from importlib import resources

import yaml
from pydantic import Field

from alicerce.catalog.models import CatalogModel, Source


class ActionPin(CatalogModel):
    tag: str = Field(description="Release tag the commit was read from (kept as a comment after the pin).")
    sha: str = Field(pattern=r"^[0-9a-f]{40}$", description="Commit the tag points at.")
    source: Source


class Actions(CatalogModel):
    schemaVersion: int
    actions: dict[str, ActionPin]


@functools.cache
def load_actions() -> Actions:
    text = resources.files("alicerce.catalog").joinpath("data/actions.yaml").read_text("utf-8")
    return Actions.model_validate(yaml.safe_load(text))


def uses(action: str) -> str:
    """``owner/repo[/path]@<sha>`` of a pinned action (KeyError for one the catalog does not pin)."""
    return f"{action}@{load_actions().actions[action].sha}"
