"""Pydantic validation errors turned into located :class:`SpecError` values."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from alicerce.spec.errors import Path, SpecError, did_you_mean, one_of
from alicerce.spec.loader import Pos, locate, node_at
from alicerce.spec.text import SECRET_HINT, secret_shape

_QUOTED = re.compile(r"'([^']*)'")


# plain words for pydantic's type errors
_EXPECTED = {
    "string_type": "expected text",
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "dict_type": "expected a mapping of keys",
    "model_type": "expected a mapping of keys",
    "model_attributes_type": "expected a mapping of keys",
    "date_from_datetime_parsing": "expected a date such as 2027-06-30",
    "date_parsing": "expected a date such as 2027-06-30",
    "date_type": "expected a date such as 2027-06-30",
}


def _discriminator(ctx: dict[str, Any]) -> str:
    """The YAML key of a union's discriminator (pydantic lists the field name and its alias)."""
    names = _QUOTED.findall(str(ctx.get("discriminator", "")))
    return names[-1] if names else str(ctx.get("discriminator", ""))


def _step(node: Any, element: Any) -> tuple[Any] | None:
    """The child of ``node`` at ``element`` (wrapped, since it may be None), if it exists."""
    if isinstance(node, dict) and isinstance(element, str) and element in node:
        return (node[element],)
    if isinstance(node, list) and isinstance(element, int) and 0 <= element < len(node):
        return (node[element],)
    return None


def data_path(loc: tuple[Any, ...], data: Any) -> tuple[Path, bool]:
    """Map a pydantic ``loc`` onto the user's data; returns (path, reached_the_end).

    Pydantic adds steps that are not in the data: the tag of a discriminated union, validator
    names, ``[key]`` for dict keys. They are skipped by walking the data alongside.
    """
    path: list[str | int] = []
    node = data
    for i, element in enumerate(loc):
        last = i == len(loc) - 1
        step = _step(node, element)
        if step is not None:
            path.append(element)
            node = step[0]
        elif last and isinstance(element, str) and not element.startswith("["):
            path.append(element)  # a missing key
            return tuple(path), False
        # else: a pydantic-only step; skip it
    return tuple(path), True


def _unwrap(tp: Any) -> list[Any]:
    """The concrete types behind Annotated / Optional / Union."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        out: list[Any] = []
        for arg in get_args(tp):
            if arg is not type(None):
                out.extend(_unwrap(arg))
        return out
    return [tp]


def _pick_model(candidates: list[Any], value: Any) -> type[BaseModel] | None:
    models = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
    if len(models) <= 1 or not isinstance(value, dict):
        return models[0] if models else None
    for model in models:
        for field in model.model_fields.values():
            alias = field.alias or ""
            literal = [a for a in _unwrap(field.annotation) if get_origin(a) is typing.Literal]
            if alias in value and literal and value[alias] in get_args(literal[0]):
                return model
    return None


def model_at(root: type[BaseModel], data: Any, path: Path) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``path``, when it can be told."""
    current: Any = root
    value = data
    for element in path:
        model = _pick_model(_unwrap(current), value)
        if model is not None and isinstance(element, str):
            field = next((f for f in model.model_fields.values() if f.alias == element), None)
            if field is None:
                return None
            current = field.annotation
        else:
            containers = [c for c in _unwrap(current) if get_origin(c) in (list, dict, tuple)]
            if not containers:
                return None
            args = get_args(containers[0])
            current = args[-1] if get_origin(containers[0]) is dict else args[0]
        try:
            value = value[element]
        except (KeyError, IndexError, TypeError):
            value = None
    return _pick_model(_unwrap(current), value)


def keys_of(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 60 else f'"{value[:40]}..." ({len(value):,} characters)'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


MAX_REPORTED = 200


def convert(exc: ValidationError, root: type[BaseModel], data: Any, pos: Pos, environment: str | None) -> list[SpecError]:
    """Pydantic's errors as located SpecErrors: the first MAX_REPORTED by position, then a count.

    Hints (edit distances) are computed only for the errors reported, so a file with thousands
    of mistakes is still answered at once.
    """
    located = []
    for err in exc.errors(include_url=False):
        path, complete = data_path(tuple(err["loc"]), data)
        located.append((locate(pos, path)[0], err, path, complete))
    located.sort(key=lambda item: item[0])
    out = _convert(located[:MAX_REPORTED], root, data, pos, environment)
    if len(located) > MAX_REPORTED:
        span, _, path, _ = located[MAX_REPORTED]
        out.append(SpecError(span, "AL013", path, f"{len(located) - MAX_REPORTED} more errors not shown",
                             "fix the ones above first; they often cause the rest", None, environment))  # fmt: skip
    return out


def _convert(
    located: list[tuple[Any, Any, Path, bool]], root: type[BaseModel], data: Any, pos: Pos, environment: str | None
) -> list[SpecError]:
    out: list[SpecError] = []
    for _, err, error_path, complete in located:
        kind = err["type"]
        path = error_path
        value = err.get("input")
        ctx = err.get("ctx") or {}
        hint: str | None = None
        if kind == "missing" or not complete:
            span, _ = locate(pos, path[:-1])
            rule, message = "AL101", f'missing required key "{path[-1]}"'
            value = None
        elif kind == "extra_forbidden":
            span, _ = locate(pos, path, key=True)
            rule, message = "AL100", f'unknown key "{path[-1]}"'
            model = model_at(root, data, path[:-1])
            if model is not None:
                keys = keys_of(model)
                hint = did_you_mean(str(path[-1]), keys) or one_of(keys)
        elif kind in ("literal_error", "enum"):
            on_key = "[key]" in err["loc"]  # a map whose keys are a closed set
            span, _ = locate(pos, path, key=on_key)
            choices = _QUOTED.findall(str(ctx.get("expected", "")))
            rule, message = "AL102", f"{'key ' if on_key else ''}{_describe(value)} is not allowed here"
            hint = (did_you_mean(str(value), choices) if isinstance(value, str) else None) or one_of(choices)
        elif kind == "union_tag_invalid":
            discriminator = _discriminator(ctx)
            span, _ = locate(pos, (*path, discriminator))
            choices = _QUOTED.findall(str(ctx.get("expected_tags", "")))
            tag = ctx.get("tag")
            rule, message = "AL102", f'{discriminator} "{tag}" is not allowed here'
            path = (*path, discriminator)
            hint = did_you_mean(str(tag), choices) or one_of(choices)
            value = tag
        elif kind == "union_tag_not_found":
            discriminator = _discriminator(ctx)
            span, _ = locate(pos, path)
            rule, message = "AL101", f'missing required key "{discriminator}"'
            path = (*path, discriminator)
            value = None
        elif kind == "value_error":
            span, _ = locate(pos, path, key="[key]" in err["loc"])  # a bad label key points at the key
            rule = "AL104"
            message = str(ctx.get("error", err["msg"])).removeprefix("Value error, ")
        else:
            span, _ = locate(pos, path)
            rule = "AL103"
            message = _EXPECTED.get(kind) or err["msg"][0].lower() + err["msg"][1:]
            node = node_at(pos, path)
            if not isinstance(value, (dict, list)) and ", got" not in message:
                message += f", got {node.raw if node is not None and node.raw is not None else _describe(value)}"
            if kind == "string_type" and node is not None and node.raw is not None:
                hint = f'quote it to keep it as text: "{node.raw}"'
        if isinstance(value, str) and (kind := secret_shape(value)) is not None:
            # a pasted key never reaches a report or a log, not even its first characters
            message, hint, value = f"this value looks like {kind}; a spec never holds a secret", SECRET_HINT, "<redacted>"
        out.append(SpecError(span, rule, path, message, hint, value, environment))
    return _drop_missing_explained_by_typos(out)


def _drop_missing_explained_by_typos(errors: list[SpecError]) -> list[SpecError]:
    """``instanceTyp`` is both an unknown key and a missing ``instanceType``: report it once."""
    suggested = {(e.path[:-1], e.hint.split('"')[1]) for e in errors if e.rule == "AL100" and e.hint and e.hint.startswith("did you mean")}
    return [e for e in errors if not (e.rule == "AL101" and (e.path[:-1], e.path[-1]) in suggested)]
