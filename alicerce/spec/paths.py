"""Paths into the spec built from the models' own fields, for locating errors.

``SPEC.node_pools[2].aws.zone`` is the path ``("nodePools", 2, "aws", "zone")``: attribute names
are the models' Python field names and each becomes the field's YAML alias. A name that is no
field of the model at that point raises ``AttributeError`` when the path is built, so renaming a
field can never silently point an error at the wrong line (every rule's fixtures build its paths).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from alicerce.spec.errors import Path, PathElement


def _unwrap(annotation: Any) -> tuple[Any, ...]:
    """The alternatives of an annotation, with Annotated, Optional and unions taken apart."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return tuple(t for arg in get_args(annotation) for t in _unwrap(arg) if t is not type(None))
    return (annotation,)


class SpecPath:
    """A path into the spec that only allows the fields its models have."""

    __slots__ = ("_parts", "_types")

    def __init__(self, root: Any, parts: Path = ()) -> None:
        self._types = _unwrap(root)
        self._parts = parts

    @property
    def path(self) -> Path:
        return self._parts

    def __getattr__(self, name: str) -> SpecPath:
        for candidate in self._types:
            if isinstance(candidate, type) and issubclass(candidate, BaseModel) and name in candidate.model_fields:
                field = candidate.model_fields[name]
                return SpecPath(field.annotation, (*self._parts, field.alias or name))
        where = ".".join(str(p) for p in self._parts) or "the spec"
        raise AttributeError(f"{where} has no field {name!r}")

    def __getitem__(self, key: PathElement) -> SpecPath:
        for candidate in self._types:
            args = get_args(candidate)
            if get_origin(candidate) in (list, tuple) and isinstance(key, int) and args:
                return SpecPath(args[0], (*self._parts, key))
            if get_origin(candidate) is dict and len(args) == 2:
                return SpecPath(args[1], (*self._parts, key))
        raise KeyError(f"{'.'.join(str(p) for p in self._parts)} is not a list or map that takes {key!r}")

    def __repr__(self) -> str:
        return f"SpecPath{self._parts!r}"


def spec_root() -> SpecPath:
    """The path of the whole document (import-time cheap: the models are only read when a path is built)."""
    from alicerce.spec.models import PlatformSpec

    return SpecPath(PlatformSpec)
