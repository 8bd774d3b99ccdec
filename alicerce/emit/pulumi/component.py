"""Small helpers every component uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi


class Component(pulumi.ComponentResource):
    """A ComponentResource whose children also wait for what the component was told to wait for.

    Pulumi does not pass a component's ``depends_on`` down to its children; node groups, add-ons
    and charts must really wait (for the cluster, the nodes, the CRDs), so children get it here.
    """

    def __init__(self, type_token: str, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(type_token, name, None, opts)
        deps = opts.depends_on if opts is not None else None
        self._after: list[pulumi.Resource] = list(deps) if isinstance(deps, list) else []

    def child(self, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options for a child: parented here (providers inherited), after the component's dependencies."""
        depends = [*self._after, *kwargs.pop("depends_on", [])]
        return pulumi.ResourceOptions(parent=self, depends_on=depends or None, **kwargs)


def named(tags: Mapping[str, str], name: str, **extra: str) -> dict[str, str]:
    """The resolved tags plus the console ``Name`` and any resource-specific tags."""
    return {**tags, **extra, "Name": name}


# CloudWatch Logs accepts only these retention periods (days).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)


def log_retention_days(seconds: float) -> int:
    """The shortest retention CloudWatch accepts that keeps logs at least ``seconds``."""
    days = seconds / 86400
    return next((d for d in LOG_RETENTION_DAYS if d >= days), LOG_RETENTION_DAYS[-1])
