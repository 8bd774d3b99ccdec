"""The registration of every target: the one list the stages derive theirs from.

The shipped targets are listed below; another package adds one with an entry point in the group
``alicerce.targets`` naming its :class:`~alicerce.targets.base.Target` (``fake = "pkg.target:TARGET"``).
From :data:`TARGETS` come the spec's ``Site`` union and the target sections of pools, tiers and
fabrics (and so the JSON Schema), ``RESOLVERS``, ``RULE_MODULES``, ``BUILDERS``, plan's owned
capacity, and the deploy steps of CI, the README and ``init``.

Only declarations are imported here (each target's ``target`` and ``spec`` modules): the later
stages load theirs by module name (:func:`stage_module`).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import Field

from alicerce.targets.aws.target import TARGET as AWS
from alicerce.targets.base import SectionPlace, Target, entry_points, load_entry_point
from alicerce.targets.onprem.target import TARGET as ONPREM

SHIPPED: tuple[Target, ...] = (AWS, ONPREM)
ENTRY_POINTS = "alicerce.targets"


def _plugins() -> tuple[Target, ...]:
    found = []
    for name, value in entry_points(ENTRY_POINTS):
        target = load_entry_point(value)
        if not isinstance(target, Target):
            raise TypeError(f"entry point {name} ({value}) of {ENTRY_POINTS} is not an alicerce Target")
        found.append(target)
    return tuple(found)


def _registered(targets: tuple[Target, ...]) -> tuple[Target, ...]:
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        raise ValueError(f"targets registered twice: {sorted(n for n in set(names) if names.count(n) > 1)}")
    return targets


TARGETS: tuple[Target, ...] = _registered((*SHIPPED, *_plugins()))
"""Every target, the shipped ones first (their order is the order of sections in the spec and its schema)."""


def target(name: str) -> Target:
    """The target whose `provider:` value is ``name``."""
    return next(t for t in TARGETS if t.name == name)


def stage_module(name: str) -> ModuleType:
    """A target's later-stage module (its resolve, rules or build), loaded when that stage runs."""
    return importlib.import_module(name)


def add_sections(namespace: dict[str, Any], place: SectionPlace) -> None:
    """Adds each target's section of ``place`` to a spec model's class body, where the call stands.

    Called as ``add_sections(locals(), "pool")`` inside the class: the fields keep their place in the
    model (and so in the JSON Schema and the resolved spec). Each is optional, named after its target.
    """
    annotations = namespace.setdefault("__annotations__", {})
    for t in TARGETS:
        section = t.sections.get(place)
        if section is not None:
            annotations[t.name] = section.model | None
            namespace[t.name] = Field(default=None, description=section.description)


if TYPE_CHECKING:
    # mypy's view of what the runtime derives from TARGETS: the shipped targets' sites and sections (a plugin's
    # code narrows to its own models); tests/targets/test_seam.py holds these equal to the derived ones
    from alicerce.targets.aws.spec import AwsEbs, AwsEfs, AwsFsx, AwsPool, AwsS3, AwsSite
    from alicerce.targets.onprem.spec import (
        OnpremBlock,
        OnpremFabric,
        OnpremNfs,
        OnpremObject,
        OnpremParallelFs,
        OnpremPool,
        OnpremSite,
    )

    AnySite: TypeAlias = AwsSite | OnpremSite

    class PoolSections:
        aws: AwsPool | None
        onprem: OnpremPool | None

    class ParallelFsSections:
        aws: AwsFsx | None
        onprem: OnpremParallelFs | None

    class SharedNfsSections:
        aws: AwsEfs | None
        onprem: OnpremNfs | None

    class ObjectSections:
        aws: AwsS3 | None
        onprem: OnpremObject | None

    class BlockSections:
        aws: AwsEbs | None
        onprem: OnpremBlock | None

    class FabricSections:
        onprem: OnpremFabric | None

else:
    # at run time the sections are fields added by add_sections: these bases add nothing
    class PoolSections:
        pass

    ParallelFsSections = SharedNfsSections = ObjectSections = BlockSections = FabricSections = PoolSections


__all__ = ["ENTRY_POINTS", "SHIPPED", "TARGETS", "add_sections", "stage_module", "target"]
