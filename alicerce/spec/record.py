"""``@record``: a dataclass whose methods are shared functions instead of generated code.

``dataclasses.dataclass`` writes the source of ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``
and, when frozen, ``__setattr__`` and ``__delattr__`` for every class and compiles each one: about
0.8 ms a frozen class, which over the 40-odd classes a cold ``alicerce validate`` imports cost more
than the rest of its imports together; and importing ``dataclasses`` loads ``inspect`` (with ``ast``,
``dis`` and ``tokenize``). A record collects its fields itself and takes these methods from closures
over the field list, made without compiling anything or importing ``dataclasses``.

They behave as the generated ones do: keyword or positional arguments in field order (keyword only
with ``kw_only=True``), defaults and ``default_factory`` (:func:`field`), ``__post_init__``, equality
with an instance of the very same class, ordering with ``order=True``, a hash of the compared fields
when frozen (none when mutable), the repr of the fields with ``repr=True``, and
:class:`dataclasses.FrozenInstanceError` on assignment when frozen. ``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` work on records: their ``__dataclass_fields__`` are made
when first read (importing ``dataclasses`` then). Slots and ``InitVar`` are not offered. The tests
compare records with dataclasses.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

_C = TypeVar("_C", bound=type)
_T = TypeVar("_T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """What :func:`field` declares for one field (``dataclasses.Field``'s options)."""

    __slots__ = ("compare", "default", "default_factory", "hash", "init", "kw_only", "name", "repr", "type")

    def __init__(
        self, *, default: Any, default_factory: Any, init: bool, repr: bool, hash: bool | None, compare: bool, kw_only: Any
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.default, self.default_factory, self.init, self.repr = default, default_factory, init, repr
        self.hash, self.compare, self.kw_only = hash, compare, kw_only
        self.name = ""
        self.type: Any = None


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    kw_only: bool | Any = MISSING,
) -> Any:
    """A field's options, as ``dataclasses.field`` takes them."""
    return Field(default=default, default_factory=default_factory, init=init, repr=repr, hash=hash, compare=compare, kw_only=kw_only)


def _record_fields(cls: type) -> dict[str, Field]:
    """The fields of a record class (its own or, for a plain subclass, its record base's)."""
    found: dict[str, Field] = getattr(cls, "__record_fields__")  # noqa: B009 - set by record, unknown to type checkers
    return found


def _class_var(annotation: Any) -> bool:
    if isinstance(annotation, str):
        head = annotation.partition("[")[0].strip()
        return head in ("ClassVar", "typing.ClassVar", "t.ClassVar")
    return annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar


def _fields(cls: type, kw_only: bool) -> dict[str, Field]:
    """The fields of ``cls``: its bases' (records), then its own annotations in order, as dataclasses collects them."""
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        own = base.__dict__.get("__record_fields__")
        if own is not None:
            fields.update(own)
        elif "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"{cls.__qualname__}: a record cannot subclass the dataclass {base.__qualname__}")
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063 - inspect is what a record spares
        if _class_var(annotation):
            continue
        if isinstance(annotation, str) and "InitVar" in annotation:
            raise TypeError(f"{cls.__qualname__}.{name}: a record has no InitVar")
        declared = cls.__dict__.get(name, MISSING)
        loaded = sys.modules.get("dataclasses")
        if loaded is not None and isinstance(declared, loaded.Field):  # dataclasses.field(...): the same options
            declared = field(
                default=declared.default if declared.default is not loaded.MISSING else MISSING,
                default_factory=declared.default_factory if declared.default_factory is not loaded.MISSING else MISSING,
                init=declared.init,
                repr=declared.repr,
                hash=declared.hash,
                compare=declared.compare,
                kw_only=declared.kw_only if declared.kw_only is not loaded.MISSING else MISSING,
            )
        spec = declared if isinstance(declared, Field) else field(default=declared)
        if spec.default is not MISSING and type(spec.default).__hash__ is None:  # dataclasses' test of a mutable default
            raise ValueError(f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory")
        spec.name, spec.type = name, annotation
        if spec.kw_only is MISSING:
            spec.kw_only = kw_only
        if isinstance(declared, Field):  # the class attribute holds the default, as dataclasses leaves it
            if spec.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        fields[name] = spec
    return fields


def _init(cls: type, fields: tuple[Field, ...]) -> Callable[..., None]:
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
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default
    unset = tuple(f for f in fields if not f.init)  # set from their defaults, as dataclasses does

    in_order = all(not f.kw_only for f in params)  # the positional parameters are the fields in their order

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - the method's own name
        values = self.__dict__
        if in_order and not kwargs and len(args) <= len(positional):  # the common call, made quick: Pos(span)
            values.update(zip(positional, args, strict=False))
            rest = plan[len(args) :]
        else:
            if len(args) > len(positional):
                raise TypeError(f"{qualname}.__init__() takes {len(positional) + 1} positional arguments but {len(args) + 1} were given")
            for name, value in zip(positional, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
                kwargs[name] = value
            if not names.issuperset(kwargs):
                unexpected = next(k for k in kwargs if k not in names)
                raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {unexpected!r}")
            rest = plan
        for name, default, factory in rest:
            if name in kwargs:
                values[name] = kwargs[name]
            elif default is not MISSING:
                values[name] = default
            elif factory is not MISSING:
                values[name] = factory()
            else:
                raise TypeError(f"{qualname}.__init__() missing 1 required argument: {name!r}")
        for f in unset:
            if f.default is not MISSING:
                values[f.name] = f.default
            elif f.default_factory is not MISSING:
                values[f.name] = f.default_factory()
        if post_init:
            self.__post_init__()

    return __init__


def _frozen_error(message: str) -> Exception:
    from dataclasses import FrozenInstanceError  # loaded only when someone assigns to a frozen record

    return FrozenInstanceError(message)


def _methods(cls: type, fields: tuple[Field, ...], frozen: bool, order: bool) -> dict[str, Any]:
    shown = tuple(f.name for f in fields if f.repr)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    field_names = frozenset(f.name for f in fields)
    owner: Any = cls

    def values(self: Any) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in compared)

    def __repr__(self: Any) -> str:  # noqa: N807
        shown_values = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({shown_values})"

    def __eq__(self: Any, other: object) -> bool:  # noqa: N807
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    def __hash__(self: Any) -> int:  # noqa: N807
        return hash(tuple(getattr(self, name) for name in hashed))

    def __setattr__(self: Any, name: str, value: Any) -> None:  # noqa: N807
        if type(self) is owner or name in field_names:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:  # noqa: N807
        if type(self) is owner or name in field_names:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    def comparison(compare: Callable[[tuple[Any, ...], tuple[Any, ...]], bool]) -> Callable[[Any, Any], Any]:
        def method(self: Any, other: Any) -> Any:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return compare(values(self), values(other))

        return method

    methods: dict[str, Any] = {"__repr__": __repr__, "__eq__": __eq__}
    if order:
        methods["__lt__"] = comparison(lambda a, b: a < b)
        methods["__le__"] = comparison(lambda a, b: a <= b)
        methods["__gt__"] = comparison(lambda a, b: a > b)
        methods["__ge__"] = comparison(lambda a, b: a >= b)
    own_hash = cls.__dict__.get("__hash__", MISSING)
    explicit_hash = not (own_hash is MISSING or (own_hash is None and "__eq__" in cls.__dict__))
    if not explicit_hash:
        methods["__hash__"] = __hash__ if frozen else None
    if frozen:
        methods["__setattr__"] = __setattr__
        methods["__delattr__"] = __delattr__
    return methods


class _DataclassFields:
    """``__dataclass_fields__`` of a record, made on first read as ``dataclasses`` makes them (``fields``,
    ``replace``, ``asdict`` and ``is_dataclass`` read it): the one place a record loads ``dataclasses``."""

    def __get__(self, instance: Any, owner: type) -> dict[str, Any]:
        import dataclasses

        made: dict[str, Any] = {}
        for spec in _record_fields(owner).values():
            f: Any = dataclasses.field(
                default=dataclasses.MISSING if spec.default is MISSING else spec.default,
                default_factory=dataclasses.MISSING if spec.default_factory is MISSING else spec.default_factory,
                init=spec.init,
                repr=spec.repr,
                hash=spec.hash,
                compare=spec.compare,
                kw_only=spec.kw_only,
            )
            f.name, f.type = spec.name, spec.type
            f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # what dataclasses marks a field with
            made[spec.name] = f
        type.__setattr__(owner, "__dataclass_fields__", made)
        return made


def _build(cls: _C, frozen: bool, kw_only: bool, order: bool) -> _C:
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__qualname__}: a record has no slots")
    own = _fields(cls, kw_only)
    fields = tuple(own.values())
    type.__setattr__(cls, "__record_fields__", own)
    type.__setattr__(cls, "__dataclass_fields__", _DataclassFields())
    type.__setattr__(cls, "__match_args__", tuple(f.name for f in fields if f.init and not f.kw_only))
    methods = _methods(cls, fields, frozen, order)
    methods["__init__"] = _init(cls, fields)
    for name, method in methods.items():
        if name in cls.__dict__ and name in ("__init__", "__repr__", "__eq__"):
            continue  # a method the class defines itself stays, as dataclasses leaves it
        if name in cls.__dict__ and name not in ("__hash__",):
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        if method is not None:
            method.__qualname__ = f"{cls.__qualname__}.{name}"
        type.__setattr__(cls, name, method)
    if not cls.__dict__.get("__doc__"):
        type.__setattr__(cls, "__doc__", f"{cls.__name__}({', '.join(f.name for f in fields if f.init)})")
    return cls


@overload
def record(cls: _C, /) -> _C: ...


@overload
def record(*, frozen: bool = True, kw_only: bool = False, order: bool = False) -> Callable[[_C], _C]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: _C | None = None, /, *, frozen: bool = True, kw_only: bool = False, order: bool = False) -> _C | Callable[[_C], _C]:
    """Make ``cls`` a dataclass with shared methods: frozen unless ``frozen=False``, built by keyword only with
    ``kw_only=True``, ordered by its compared fields with ``order=True``."""
    if cls is not None:
        return _build(cls, frozen, kw_only, order)
    return lambda klass: _build(klass, frozen, kw_only, order)


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace`` without loading ``dataclasses``)."""
    for spec in _record_fields(type(obj)).values():
        if not spec.init:
            if spec.name in changes:
                raise ValueError(f"field {spec.name} is declared with init=False, it cannot be specified with replace()")
            continue
        changes.setdefault(spec.name, getattr(obj, spec.name))
    return type(obj)(**changes)
