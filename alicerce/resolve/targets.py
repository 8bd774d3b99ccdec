"""The resolve step of every registered target, by the spec's ``provider`` value."""

from __future__ import annotations

from alicerce.targets import TARGETS, stage_module
from alicerce.targets.resolver import TargetResolver


def _resolver(module: str) -> TargetResolver:
    resolver = stage_module(module).RESOLVER
    if not isinstance(resolver, TargetResolver):
        raise TypeError(f"{module}.RESOLVER is not a TargetResolver")
    return resolver


RESOLVERS: dict[str, TargetResolver] = {t.name: _resolver(t.resolver) for t in TARGETS}
