"""Environments and the sites each one runs at (one per target: an AWS region, an on-prem data center)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union

from pydantic import Field

from alicerce.spec.base import SpecModel
from alicerce.targets import TARGETS

if TYPE_CHECKING:
    from alicerce.targets import AnySite

    Site: TypeAlias = AnySite  # mypy's view (the shipped targets' sites)
else:
    # one site model per registered target, told apart by `provider:`
    Site = Annotated[Union[tuple(t.site for t in TARGETS)], Field(discriminator="provider")]  # noqa: UP007


class Environment(SpecModel):
    """One deployment of the platform (dev, staging, prod, ...)."""

    tier: Literal["development", "staging", "production"] = Field(
        description="How strictly production rules apply (encryption, private endpoints)."
    )
    sites: list[Site] = Field(min_length=1, description="Where this environment runs; an AWS region, an on-prem site, or both.")
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Changes to the base spec for this environment. Maps merge deeply, lists of named items merge by "
            "name (an item with `$patch: delete` removes it), an explicit null removes a key."
        ),
    )
