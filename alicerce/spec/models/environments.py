"""Environments and the sites each one runs at (one per target: an AWS region, an on-prem data center)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from alicerce.spec.base import SpecModel
from alicerce.targets.aws.spec import AwsSite
from alicerce.targets.onprem.spec import (
    OnpremSite,
)

Site = Annotated[AwsSite | OnpremSite, Field(discriminator="provider")]


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
