"""``@record``: a dataclass whose methods are shared functions instead of generated code.

``dataclasses.dataclass`` writes the source of ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``
and, when frozen, ``__setattr__`` and ``__delattr__`` for every class and compiles each one: about
0.8 ms a frozen class, which over the 40-odd classes a cold ``alicerce validate`` imports cost more
than the rest of its imports together. A record lets ``dataclasses`` collect its fields (so
``dataclasses.fields``, ``replace``, ``asdict`` and pickling work as on any dataclass; 0.06 ms) and
takes these methods from closures over the field list, made without compiling anything.

They behave as the generated ones do: keyword or positional arguments in field order (keyword only
with ``kw_only=True``), defaults and ``default_factory``, ``__post_init__``, equality with an instance
of the very same class, a hash of the compared fields when frozen (none when mutable), the repr of
the fields with ``repr=True``, and :class:`dataclasses.FrozenInstanceError` on assignment when frozen.
``dataclasses`` itself records the class as a plain dataclass (its ``__dataclass_params__`` say not
frozen): a real frozen dataclass cannot subclass a record; a record can. Slots and ordering are not
offered: those few classes stay real dataclasses. The tests compare records with dataclasses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

_C = TypeVar("_C", bound=type)
_MISSING: Any = dataclasses.MISSING


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    params = [f for f in fields if f.init]
    positional = tuple(f.name for f in params if not f.kw_only)
    names = frozenset(f.name for f in params)
    plan: tuple[tuple[str, Any, Any], ...] = tuple((f.name, f.default, f.default_factory) for f in params)
    post_init = hasattr(cls, "__post_init__")
    qualname = cls.__qualname__
    seen_default = False
    for f in params:  # what dataclasses' generated __init__ refuses to compile
        if f.kw_only:
            continue
        has_default = f.default is not _MISSING or f.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - the method's own name
        if args:
            if len(args) > len(positional):
                raise TypeError(f"{qualname}.__init__() takes {len(positional) + 1} positional arguments but {len(args) + 1} were given")
            for name, value in zip(positional, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
                kwargs[name] = value
        if not names.issuperset(kwargs):
            unexpected = next(k for k in kwargs if k not in names)
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {unexpected!r}")
        values = self.__dict__
        for name, default, factory in plan:
            if name in kwargs:
                values[name] = kwargs[name]
            elif default is not _MISSING:
                values[name] = default
            elif factory is not _MISSING:
                values[name] = factory()
            else:
                raise TypeError(f"{qualname}.__init__() missing 1 required argument: {name!r}")
        if post_init:
            self.__post_init__()

    return __init__


def _methods(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> dict[str, Any]:
    shown = tuple(f.name for f in fields if f.repr)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    field_names = frozenset(f.name for f in fields)
    owner: Any = cls

    def __repr__(self: Any) -> str:  # noqa: N807
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({values})"

    def __eq__(self: Any, other: object) -> bool:  # noqa: N807
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, name) for name in compared) == tuple(getattr(other, name) for name in compared)

    def __hash__(self: Any) -> int:  # noqa: N807
        return hash(tuple(getattr(self, name) for name in hashed))

    def __setattr__(self: Any, name: str, value: Any) -> None:  # noqa: N807
        if type(self) is owner or name in field_names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:  # noqa: N807
        if type(self) is owner or name in field_names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    methods: dict[str, Any] = {"__repr__": __repr__, "__eq__": __eq__}
    own_hash = cls.__dict__.get("__hash__", _MISSING)
    explicit_hash = not (own_hash is _MISSING or (own_hash is None and "__eq__" in cls.__dict__))
    if not explicit_hash:
        methods["__hash__"] = __hash__ if frozen else None
    if frozen:
        methods["__setattr__"] = __setattr__
        methods["__delattr__"] = __delattr__
    return methods


def _build(cls: _C, frozen: bool, kw_only: bool) -> _C:
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__qualname__}: a record has no slots (use dataclasses.dataclass(slots=True))")
    undocumented = not cls.__dict__.get("__doc__")
    if undocumented:  # dataclasses would document it by its signature, which without __init__ takes a tokenizer
        cls.__doc__ = cls.__name__
    dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=kw_only)(cls)
    fields = dataclasses.fields(cls)
    if undocumented:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fields if f.init)})"
    methods = _methods(cls, fields, frozen)
    methods["__init__"] = _init(cls, fields)
    for name, method in methods.items():
        if name in ("__init__", "__repr__", "__eq__") and name in cls.__dict__:
            continue  # a method the class defines itself stays, as dataclasses leaves it
        if name in ("__setattr__", "__delattr__") and name in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        if method is not None and hasattr(method, "__qualname__"):
            method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)
    return cls


@overload
def record(cls: _C, /) -> _C: ...


@overload
def record(*, frozen: bool = True, kw_only: bool = False) -> Callable[[_C], _C]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: _C | None = None, /, *, frozen: bool = True, kw_only: bool = False) -> _C | Callable[[_C], _C]:
    """Make ``cls`` a dataclass with shared methods: frozen unless ``frozen=False``, built by keyword only with
    ``kw_only=True``."""
    if cls is not None:
        return _build(cls, frozen, kw_only)
    return lambda klass: _build(klass, frozen, kw_only)
