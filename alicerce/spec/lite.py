"""A stand-in for the part of pydantic the spec, catalog and target models use, for a cold `validate`.

Importing pydantic alone costs more than twice a libyaml parse of a whole spec, and building the
models' validators more again, so a cold `alicerce validate` could not come near its floor. With
:func:`installed`, the same model modules are imported against this module instead: their classes
are plain Python objects and :meth:`BaseModel.model_validate` checks data with a small, strict
interpreter of their annotations. The rules, resolve and the catalog then run unchanged on them.

The interpreter is sound by refusal rather than complete: it accepts only input whose outcome it
knows pydantic's to be (exact types, the constraints and validators the models declare) and raises
:class:`GiveUp` on anything else, invalid or merely unusual (an integer written as ``"8"``, an
unknown key, a union it cannot tell apart). The caller then drops everything imported here and
runs the real pydantic path, which reports errors exactly as before. A test holds the objects built
here equal, field by field, to pydantic's for every example, golden and mutated spec.
"""

from __future__ import annotations

import contextlib
import datetime
import enum
import ipaddress
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from importlib.machinery import PathFinder
from itertools import pairwise
from typing import Any, Literal, Union, get_args, get_origin

NO_DEFAULT: Any = object()


class GiveUp(BaseException):
    """The lite check cannot vouch for this input (invalid, or outside what it interprets).

    A BaseException, so that no ``except Exception`` in the code that runs over the models swallows it.
    """


# --- the declarations the models make -------------------------------------------------------------

_DOC_ONLY = frozenset({"description", "examples", "title", "json_schema_extra", "deprecated", "repr"})
_CONSTRAINTS = frozenset({"ge", "gt", "le", "lt", "min_length", "max_length", "pattern"})


class FieldInfo:
    """What ``Field(...)`` declares: a default, an alias, constraints, a discriminator."""

    def __init__(self, default: Any = NO_DEFAULT, **kwargs: Any) -> None:
        self.default = NO_DEFAULT if default is Ellipsis else default  # Field(...) is required
        self.default_factory: Callable[[], Any] | None = kwargs.pop("default_factory", None)
        self.alias: str | None = kwargs.pop("alias", None)
        self.discriminator: str | None = kwargs.pop("discriminator", None)
        self.constraints = {k: kwargs.pop(k) for k in list(kwargs) if k in _CONSTRAINTS and kwargs[k] is not None}
        self.unknown = sorted(k for k in kwargs if k not in _DOC_ONLY)  # anything else: the model is not interpreted here
        self.annotation: Any = None


def Field(default: Any = NO_DEFAULT, **kwargs: Any) -> Any:  # noqa: N802 - pydantic's name
    return FieldInfo(default, **kwargs)


class _Marker:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


class BeforeValidator(_Marker):
    pass


class AfterValidator(_Marker):
    pass


class WithJsonSchema(_Marker):  # the schema only: nothing to check
    pass


class PlainSerializer(_Marker):
    pass


class StringConstraints(_Marker):
    pass


class Strict(_Marker):
    pass


StrictInt = typing.Annotated[int, Strict()]
StrictBool = typing.Annotated[bool, Strict()]
StrictStr = typing.Annotated[str, Strict()]


class SerializationInfo:
    def __init__(self, context: Any, mode: str) -> None:
        self.context = context
        self.mode = mode


class ValidationError(ValueError):
    """Never raised here (the lite check gives up instead); defined for the ``except`` clauses that name it."""


def ConfigDict(**kwargs: Any) -> dict[str, Any]:  # noqa: N802 - pydantic's name
    return dict(kwargs)


class _FieldValidator:
    def __init__(self, function: Any, fields: tuple[str, ...], mode: str) -> None:
        self.function = function
        self.fields = fields
        self.mode = mode


def field_validator(*fields: str, mode: str = "after", **kwargs: Any) -> Callable[[Any], Any]:
    def wrap(function: Any) -> Any:
        validator = _FieldValidator(function, fields, mode)
        validator.unknown = sorted(kwargs)  # type: ignore[attr-defined]
        return validator

    return wrap


_ALNUM = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_DIGIT_OR_UPPER = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def to_camel(name: str) -> str:
    """The YAML key of a snake_case field, as pydantic's ``alias_generators.to_camel`` makes it (a test compares
    every field's alias): names without underscores or digits followed by a lowercase letter stay as they are.

    pydantic's regular expressions spelt out with string methods: a cold `validate` names every field once, and
    running three expressions per field was a tenth of its model check."""
    plain = name[:1].islower() and name.isascii() and name.isalnum()  # [a-z]+[A-Za-z0-9]*
    if plain and not any(a.isdigit() and b.islower() for a, b in pairwise(name)):  # and no \d[a-z]
        return name
    titled = name.title()
    # an underscore between a letter or digit and a digit or capital goes: ([0-9A-Za-z])_(?=[0-9A-Z])
    last = len(titled) - 1
    kept = [
        ch
        for i, ch in enumerate(titled)
        if not (ch == "_" and 0 < i < last and titled[i - 1] in _ALNUM and titled[i + 1] in _DIGIT_OR_UPPER)
    ]
    # the first capital after any leading underscores is lowered: ^(_*[A-Z])
    lead = 0
    while lead < len(kept) and kept[lead] == "_":
        lead += 1
    if lead < len(kept) and "A" <= kept[lead] <= "Z":
        kept[lead] = kept[lead].lower()
    return "".join(kept)


_CAMEL: dict[str, str] = {}


def _camel(name: str) -> str:
    if name not in _CAMEL:
        _CAMEL[name] = to_camel(name)
    return _CAMEL[name]


def _version() -> str:
    """pydantic's version, read from its installed source without importing it (the catalog cache is keyed by it)."""
    spec = PathFinder.find_spec("pydantic")
    if spec is None or not spec.submodule_search_locations:
        raise GiveUp("pydantic is not installed")
    for folder in spec.submodule_search_locations:
        try:
            with open(f"{folder}/version.py", encoding="utf-8") as handle:
                found = re.search(r"^VERSION = ['\"]([^'\"]+)['\"]", handle.read(), re.MULTILINE)
        except OSError:
            continue
        if found:
            return found.group(1)
    raise GiveUp("pydantic's version is unknown")


# --- the model base ------------------------------------------------------------------------------


class _Field:
    __slots__ = ("alias", "base", "default", "factory", "metadata", "name", "type")

    def __init__(self, name: str, alias: str, tp: Any, default: Any, factory: Callable[[], Any] | None) -> None:
        self.name, self.alias, self.type, self.default, self.factory = name, alias, tp, default, factory
        self.base: Any = None
        self.metadata: tuple[Any, ...] = ()  # where the Field declares constraints: the annotation's metadata and it

    def check(self, value: Any, shape: _Model) -> Any:
        return _annotated(self.base, self.metadata, value, shape) if self.metadata else _check(self.type, value, shape)


class _Model:
    """The interpreted shape of one model class."""

    def __init__(self, cls: type[BaseModel]) -> None:
        config: dict[str, Any] = {}
        for base in reversed(cls.__mro__):
            config.update(base.__dict__.get("model_config", {}))
        known = {"extra", "frozen", "alias_generator", "validate_by_alias", "validate_by_name", "populate_by_name", "defer_build"}
        known |= {"serialize_by_alias", "use_enum_values", "allow_inf_nan"}
        if set(config) - known or config.get("extra", "ignore") != "forbid":
            raise GiveUp(f"{cls.__name__}: configuration not interpreted")
        self.allow_inf_nan = bool(config.get("allow_inf_nan", True))
        self.use_enum_values = bool(config.get("use_enum_values", False))
        generator = config.get("alias_generator")
        by_alias = config.get("validate_by_alias", True)
        by_name = config.get("validate_by_name", config.get("populate_by_name", False))
        hints = _hints(cls)
        self.fields: dict[str, _Field] = {}
        self.keys: dict[str, _Field] = {}  # the input keys accepted, each for its field
        self.validators: dict[str, list[_FieldValidator]] = {}
        for klass in reversed(cls.__mro__):
            for value in klass.__dict__.values():
                if isinstance(value, _FieldValidator):
                    if value.unknown or value.mode not in ("after", "before"):  # type: ignore[attr-defined]
                        raise GiveUp(f"{cls.__name__}: validator not interpreted")
                    for name in value.fields:
                        self.validators.setdefault(name, []).append(value)
        for name, tp in hints.items():
            if name.startswith("_") or get_origin(tp) is typing.ClassVar or name == "model_config":
                continue
            declared = _class_default(cls, name)
            info = declared if isinstance(declared, FieldInfo) else FieldInfo(declared)
            if info.unknown:
                raise GiveUp(f"{cls.__name__}.{name}: Field({', '.join(info.unknown)}) not interpreted")
            alias = info.alias or (_camel(name) if generator is to_camel else generator(name) if generator else name)
            field = _Field(name, alias, tp, info.default, info.default_factory)
            if info.constraints or info.discriminator:  # the Field's own constraints apply after the type's metadata
                field.metadata = (*get_args(tp)[1:], info) if get_origin(tp) is typing.Annotated else (info,)
                field.base = _strip(tp)
            self.fields[name] = field
            if by_alias:
                self.keys[alias] = field
            if by_name:
                self.keys.setdefault(name, field)
        self.names = tuple(self.fields)
        self.infos: dict[str, FieldInfo] | None = None  # model_fields, made on first use


_EVALUATED: dict[tuple[str, str], Any] = {}
_COMPILED: dict[str, Any] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The field annotations of ``cls`` and its bases, evaluated (``typing.get_type_hints``, with each distinct
    text of a module evaluated once: most models repeat a few)."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(klass.__module__)
        namespace = vars(module) if module is not None else {}
        # a class's own annotations, as inspect.get_annotations reads them (importing inspect costs a cold validate 5 ms)
        own = klass.__dict__.get("__annotations__")  # noqa: RUF063
        for name, annotation in (own if isinstance(own, dict) else {}).items():
            if not isinstance(annotation, str):
                hints[name] = annotation
                continue
            key = (klass.__module__, annotation)
            if key not in _EVALUATED:
                if annotation.isidentifier() and annotation in namespace:  # a plain name: what eval would find
                    _EVALUATED[key] = namespace[annotation]
                else:
                    if annotation not in _COMPILED:  # the same text recurs across modules ("Name | None")
                        _COMPILED[annotation] = compile(annotation, "<annotation>", "eval")
                    _EVALUATED[key] = eval(_COMPILED[annotation], namespace)  # the models' own annotations
            hints[name] = _EVALUATED[key]
    return hints


def _class_default(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__.get("__lite_defaults__", {}):
            return klass.__dict__["__lite_defaults__"][name]
    return NO_DEFAULT


class _Meta(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> _Meta:
        annotations = namespace.get("__annotations__", {})
        # a field's default leaves the class body, as pydantic takes it (class attributes stay methods and constants)
        fields = [k for k, v in annotations.items() if not k.startswith("_") and not _class_var(v)]
        defaults = {key: namespace.pop(key) for key in fields if key in namespace}
        namespace["__lite_defaults__"] = defaults
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    @property
    def model_fields(cls) -> dict[str, FieldInfo]:
        shape = _shape(cls)  # type: ignore[arg-type]
        if shape.infos is None:
            shape.infos = {}
            for name, field in shape.fields.items():
                info = shape.infos[name] = FieldInfo(field.default, alias=field.alias)
                info.annotation = _strip(field.type)
        return shape.infos


def _class_var(annotation: Any) -> bool:
    if isinstance(annotation, str):  # (typing\.)?ClassVar\b, without a regular expression (it runs on every field)
        rest = annotation.removeprefix("typing.")
        return rest.startswith("ClassVar") and not (rest[8:9].isalnum() or rest[8:9] == "_")
    return annotation is typing.ClassVar or get_origin(annotation) is typing.ClassVar


_SHAPES: dict[type, _Model] = {}


def _shape(cls: type[BaseModel]) -> _Model:
    shape = _SHAPES.get(cls)
    if shape is None:
        shape = _SHAPES[cls] = _Model(cls)
    return shape


_PARTS: dict[int, tuple[Any, Any, tuple[Any, ...]]] = {}


def _parts(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """``get_origin(tp)`` and ``get_args(tp)``, remembered by identity (the interpreter asks for them at every value; the
    entry holds ``tp``, so its id is not reused while it is kept)."""
    entry = _PARTS.get(id(tp))
    if entry is None or entry[0] is not tp:
        entry = _PARTS[id(tp)] = (tp, get_origin(tp), get_args(tp))
    return entry[1], entry[2]


def _strip(tp: Any) -> Any:
    """The annotation without its Annotated metadata, as pydantic's ``FieldInfo.annotation`` holds it."""
    return get_args(tp)[0] if get_origin(tp) is typing.Annotated else tp


class BaseModel(metaclass=_Meta):
    """A model whose instances hold already checked values (see :func:`model_validate`)."""

    __slots__ = ("__dict__", "__pydantic_fields_set__")
    __pydantic_fields_set__: set[str]  # the fields the input named (pydantic's name: rules read model_fields_set)

    def __init__(self, **data: Any) -> None:
        built = type(self).model_validate(data)
        object.__setattr__(self, "__dict__", built.__dict__)
        object.__setattr__(self, "__pydantic_fields_set__", built.__pydantic_fields_set__)

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        if isinstance(data, cls):
            return data
        if type(data) is not dict:
            raise GiveUp(f"{cls.__name__}: not a mapping")
        shape = _shape(cls)
        values: dict[str, Any] = {}
        given: set[str] = set()
        for key, raw in data.items():
            field = shape.keys.get(key) if isinstance(key, str) else None
            if field is None or field.name in given:
                raise GiveUp(f"{cls.__name__}: key {key!r}")
            given.add(field.name)
            value = raw
            for validator in shape.validators.get(field.name, ()):
                if validator.mode == "before":
                    value = _call(validator.function.__get__(None, cls), value)
            value = field.check(value, shape)
            for validator in shape.validators.get(field.name, ()):
                if validator.mode == "after":
                    value = _call(validator.function.__get__(None, cls), value)
            values[field.name] = value
        for name, field in shape.fields.items():
            if name in given:
                continue
            if field.factory is not None:
                values[name] = field.factory()
            elif field.default is not NO_DEFAULT:
                values[name] = field.default
            else:
                raise GiveUp(f"{cls.__name__}: {field.alias} missing")
        instance = cls.__new__(cls)
        object.__setattr__(instance, "__dict__", {name: values[name] for name in shape.names})
        object.__setattr__(instance, "__pydantic_fields_set__", given)
        return instance

    @property
    def model_fields_set(self) -> set[str]:
        return self.__pydantic_fields_set__

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    def __getstate__(self) -> dict[str, Any]:
        return {
            "__dict__": self.__dict__,
            "__pydantic_extra__": None,
            "__pydantic_fields_set__": self.__pydantic_fields_set__,
            "__pydantic_private__": None,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A model pickled by pydantic (the catalog cache) read back as this class."""
        if state.get("__pydantic_extra__") or state.get("__pydantic_private__"):
            raise GiveUp("pickled model with extra or private values")
        object.__setattr__(self, "__dict__", state["__dict__"])
        object.__setattr__(self, "__pydantic_fields_set__", set(state["__pydantic_fields_set__"]))

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        if deep:
            raise GiveUp("deep model_copy")
        copy = type(self).__new__(type(self))
        object.__setattr__(copy, "__dict__", {**self.__dict__, **(update or {})})
        object.__setattr__(copy, "__pydantic_fields_set__", self.__pydantic_fields_set__ | set(update or ()))
        return copy

    def model_dump(
        self,
        *,
        mode: str = "python",
        by_alias: bool | None = None,
        exclude_unset: bool = False,
        exclude_none: bool = False,
        exclude: set[str] | None = None,
        context: Any = None,
    ) -> dict[str, Any]:
        options = _Dump(mode, bool(by_alias), exclude_unset, exclude_none, context)
        return options.model(self, exclude or set())


def _call(function: Callable[..., Any], value: Any) -> Any:
    try:
        return function(value)
    except (ValueError, AssertionError) as exc:
        raise GiveUp(str(exc)) from None


# --- checking a value against an annotation ------------------------------------------------------

_NONE = type(None)


def _check(tp: Any, value: Any, shape: _Model) -> Any:
    if type(tp) is _Meta:  # the common cases first: a model, a plain class (str, int, ...)
        return typing.cast("type[BaseModel]", tp).model_validate(value)
    if type(tp) is type and tp is not _NONE:
        return _scalar(tp, value, shape)
    origin, args = _parts(tp)
    if origin is typing.Annotated:
        return _annotated(args[0], args[1:], value, shape)
    if tp is Any:
        return value
    if tp is _NONE or tp is None:
        if value is None:
            return None
        raise GiveUp("not null")
    if origin in (Union, types.UnionType):
        return _union(args, value, shape, None)
    if origin is Literal:
        for choice in args:
            if type(choice) is type(value) and choice == value:
                return choice
        raise GiveUp(f"{value!r} is no choice of {args}")
    if origin is list:
        if type(value) is not list:
            raise GiveUp("not a list")
        (item,) = args or (Any,)
        return [_check(item, v, shape) for v in value]
    if origin is tuple:
        if type(value) is not list or not args:
            raise GiveUp("tuple not interpreted")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_check(args[0], v, shape) for v in value)
        if Ellipsis in args or len(value) != len(args):  # a fixed tuple takes exactly its items (the storage price tiers)
            raise GiveUp("tuple not interpreted")
        return tuple(_check(a, v, shape) for a, v in zip(args, value, strict=True))
    if origin is dict:
        if type(value) is not dict:
            raise GiveUp("not a mapping")
        key_type, value_type = args or (Any, Any)
        return {_check(key_type, k, shape): _check(value_type, v, shape) for k, v in value.items()}
    if origin is not None:
        raise GiveUp(f"{tp} not interpreted")
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp.model_validate(value)
    return _scalar(tp, value, shape)


def _scalar(tp: Any, value: Any, shape: _Model) -> Any:
    if tp is str:
        if type(value) is str:
            return value
    elif tp is bool:
        if type(value) is bool:
            return value
    elif tp is int:
        if type(value) is int:
            return value
    elif tp is float:
        if type(value) is int:
            return float(value)  # pydantic's float takes an integer (and returns a float)
        if type(value) is float:
            if not shape.allow_inf_nan and not math.isfinite(value):
                raise GiveUp("not finite")
            return value
    elif tp is datetime.date:
        if type(value) is datetime.date:  # libyaml reads a catalog file's dates as dates
            return value
        if type(value) is str and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            try:
                return datetime.date.fromisoformat(value)
            except ValueError:
                raise GiveUp("not a date") from None
    elif tp in (ipaddress.IPv4Network, ipaddress.IPv6Network):
        if type(value) is tp:
            return value
    elif tp is ipaddress.IPv4Address:
        if type(value) is tp:
            return value
        if type(value) is str:  # pydantic's lax mode: the address the text parses to
            try:
                return ipaddress.IPv4Address(value)
            except ValueError:
                raise GiveUp("not an IPv4 address") from None
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        raise GiveUp("enums not interpreted")
    else:
        raise GiveUp(f"{tp} not interpreted")
    raise GiveUp(f"{value!r} is not {tp.__name__}")


def _annotated(base: Any, metadata: tuple[Any, ...], value: Any, shape: _Model) -> Any:
    """Before validators (the last declared first), the type, then constraints and after validators in their order."""
    discriminator = None
    for item in metadata:
        if isinstance(item, FieldInfo):
            if item.unknown:
                raise GiveUp("Field not interpreted")
            discriminator = item.discriminator or discriminator
        elif isinstance(item, StringConstraints):
            if set(item.kwargs) - {"max_length", "min_length", "pattern"}:
                raise GiveUp("StringConstraints not interpreted")
        elif not isinstance(item, (WithJsonSchema, PlainSerializer, Strict, BeforeValidator, AfterValidator)):
            raise GiveUp(f"{item!r} not interpreted")
    for item in reversed(metadata):
        if isinstance(item, BeforeValidator):
            value = _call(item.args[0], value)
    if discriminator is not None:
        if get_origin(base) not in (Union, types.UnionType):
            raise GiveUp("discriminator off a union")
        value = _union(get_args(base), value, shape, discriminator)
    else:
        value = _check(base, value, shape)
    for item in metadata:
        if isinstance(item, FieldInfo):
            _constrain(value, item.constraints)
        elif isinstance(item, StringConstraints):
            _constrain(value, {k: v for k, v in item.kwargs.items() if v is not None})
        elif isinstance(item, AfterValidator):
            value = _call(item.args[0], value)
    return value


def _constrain(value: Any, constraints: dict[str, Any]) -> None:
    for name, bound in constraints.items():
        if name in ("min_length", "max_length"):
            if not isinstance(value, (str, list, tuple, dict)):
                raise GiveUp("length of a value without one")
            ok = len(value) >= bound if name == "min_length" else len(value) <= bound
        elif name == "pattern":
            if not str(bound).startswith("^"):  # pydantic searches with Rust's regex, or matches with Python's: the same when anchored
                raise GiveUp("unanchored pattern")
            ok = isinstance(value, str) and re.search(bound, value) is not None
        else:
            if type(value) not in (int, float):
                raise GiveUp("bound on a value that is no number")
            ok = {"ge": value >= bound, "gt": value > bound, "le": value <= bound, "lt": value < bound}[name]
        if not ok:
            raise GiveUp(f"{name} {bound}")


def _union(members: tuple[Any, ...], value: Any, shape: _Model, discriminator: str | None) -> Any:
    others = [m for m in members if m is not _NONE and m is not None]
    if value is None and len(others) < len(members):
        return None
    if discriminator is not None:
        return _tagged(others, value, shape, discriminator)
    if len(others) == 1:
        return _check(others[0], value, shape)
    # pydantic's smart mode validates the members and takes the best fit. Here: every member either takes the
    # value or surely refuses it, and the members that take it agree on the value (so the choice cannot matter)
    plain = (str, bool, int, ipaddress.IPv4Network, ipaddress.IPv6Network)
    if all(m in plain for m in others) and not (int in others and float in others) and type(value) in others:
        return value  # an exact instance of one plain class among plain classes
    taken: list[Any] = []
    for member in others:
        try:
            taken.append(_check(member, value, shape))
        except GiveUp:
            if not _refuses(member, value):
                raise
    if taken and all(type(v) is type(taken[0]) and v == taken[0] for v in taken):
        return taken[0]
    raise GiveUp(f"union {others} of {value!r} not interpreted")


def _refuses(member: Any, value: Any) -> bool:
    """Whether pydantic surely refuses ``value`` for the plain number type ``member`` (text that is no number)."""
    if member not in (int, float) or type(value) is not str:
        return False
    try:
        float(value)  # accepts every text pydantic reads as a number, and more
    except ValueError:
        return True
    return False


def _tagged(members: list[Any], value: Any, shape: _Model, discriminator: str) -> Any:
    for member in members:
        model = _strip(member)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise GiveUp("tagged union of a non-model")
        if isinstance(value, model):
            return value
    if type(value) is not dict:
        raise GiveUp("tagged union of a non-mapping")
    for member in members:
        model = _strip(member)
        field = _shape(model).fields.get(discriminator)
        if field is None or get_origin(field.type) is not Literal:
            raise GiveUp("discriminator not interpreted")
        tag = value.get(field.alias, NO_DEFAULT)
        if type(tag) is str and tag in get_args(field.type):
            return _check(member, value, shape)
    raise GiveUp("no member of the tagged union matches")


# --- dumping, as model_dump does for the modes and options the rules use -------------------------


class _Dump:
    def __init__(self, mode: str, by_alias: bool, exclude_unset: bool, exclude_none: bool, context: Any) -> None:
        if mode not in ("python", "json"):
            raise GiveUp(f"model_dump(mode={mode!r})")
        self.json = mode == "json"
        self.by_alias, self.exclude_unset, self.exclude_none, self.context = by_alias, exclude_unset, exclude_none, context

    def model(self, model: BaseModel, exclude: set[str]) -> dict[str, Any]:
        shape = _shape(type(model))
        out: dict[str, Any] = {}
        for name, field in shape.fields.items():
            if name in exclude or (self.exclude_unset and name not in model.__pydantic_fields_set__):
                continue
            value = model.__dict__[name]
            if self.exclude_none and value is None:
                continue
            out[field.alias if self.by_alias else name] = self.value(field.type, value)
        return out

    def value(self, tp: Any, value: Any) -> Any:
        origin, args = _parts(tp)
        if origin is typing.Annotated:
            base, *metadata = args
            for item in reversed(metadata):
                if isinstance(item, PlainSerializer):
                    if item.kwargs.get("when_used", "always") != "always":
                        raise GiveUp("serializer not interpreted")
                    function = item.args[0]
                    if function is str:
                        return str(value)
                    return function(value, SerializationInfo(self.context, "json" if self.json else "python"))
            return self.value(base, value)
        if value is None:
            return None
        if isinstance(value, BaseModel):
            return self.model(value, set())
        if origin in (Union, types.UnionType):
            others = [m for m in args if m is not _NONE]
            return self.value(others[0] if len(others) == 1 else Any, value)
        if origin in (list, tuple) or isinstance(value, (list, tuple)):
            item = args[0] if args else Any
            items = [self.value(item, v) for v in value]
            return items if self.json or isinstance(value, list) else tuple(items)
        if origin is dict or isinstance(value, dict):
            item = args[1] if len(args) == 2 else Any
            if self.json and not all(type(k) is str for k in value):
                raise GiveUp("a key that JSON writes as text")  # pydantic turns it into a string
            return {k: self.value(item, v) for k, v in value.items()}
        if isinstance(value, (bool, int, float, str)):
            if self.json and isinstance(value, float) and not math.isfinite(value):
                raise GiveUp("non-finite float in JSON")
            return value
        if isinstance(value, (datetime.date, ipaddress.IPv4Network, ipaddress.IPv6Network, ipaddress.IPv4Address)):
            return (value.isoformat() if isinstance(value, datetime.date) else str(value)) if self.json else value
        raise GiveUp(f"dump of {type(value).__name__} not interpreted")


# --- installing it in place of pydantic ----------------------------------------------------------


def _modules() -> dict[str, types.ModuleType]:
    root = types.ModuleType("pydantic", "alicerce's lite stand-in for pydantic (alicerce.spec.lite)")
    names = ["AfterValidator", "BaseModel", "BeforeValidator", "ConfigDict", "Field", "PlainSerializer", "SerializationInfo"]
    names += ["StrictBool", "StrictInt", "StrictStr", "StringConstraints", "ValidationError", "WithJsonSchema", "field_validator"]
    for name in names:
        setattr(root, name, globals()[name])
    root.__getattr__ = lambda name: _version() if name == "VERSION" else _missing(name)  # type: ignore[method-assign]
    root.__path__ = []  # a package, for its submodules below
    root.LITE = True  # type: ignore[attr-defined]
    generators = types.ModuleType("pydantic.alias_generators")
    generators.to_camel = to_camel  # type: ignore[attr-defined]
    fields = types.ModuleType("pydantic.fields")
    fields.FieldInfo = FieldInfo  # type: ignore[attr-defined]
    return {"pydantic": root, "pydantic.alias_generators": generators, "pydantic.fields": fields}


def _missing(name: str) -> Any:
    raise GiveUp(f"pydantic.{name} is not in the lite stand-in")


KEPT = sys.stdlib_module_names | {"yaml", "_yaml", "cython_runtime"}
"""Modules imported in the block that stay loaded after it: the standard library and libyaml's bindings hold no
model (and a Cython module cannot be loaded twice). Every other one is dropped: alicerce's, the stand-in, and a
target plugin's modules, whose classes were built on the stand-in."""
LOADED: list[str] = []
"""The modules the last :func:`installed` block imported (and dropped after it), for the tests of what a cold
`validate` loads."""


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """pydantic's place in ``sys.modules`` taken by this module while the block runs; afterwards every module
    imported meanwhile that could hold a lite class (see :data:`KEPT`) is dropped, so that the real path imports
    them again against the real pydantic."""
    if any(name == "pydantic" or name.startswith("pydantic.") for name in sys.modules):
        raise GiveUp("pydantic is already loaded")
    before = set(sys.modules) | {__name__}
    sys.modules.update(_modules())
    _SHAPES.clear()
    _EVALUATED.clear()
    _PARTS.clear()
    try:
        yield
    finally:
        _SHAPES.clear()
        _EVALUATED.clear()
        _PARTS.clear()
        LOADED[:] = sorted(n for n in sys.modules if n not in before)
        for name in LOADED:
            if name.partition(".")[0] not in KEPT and not name.startswith("_cython"):
                del sys.modules[name]
