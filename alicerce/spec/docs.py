"""The spec reference, one Markdown page per section, written from the models' own descriptions.

``alicerce docs --output docs/spec`` writes ``README.md`` (the sections) and ``<section>.md`` for
each top-level key; ``alicerce docs SECTION`` prints one page. Every field, its type, whether it
is required, its default and its description come from the JSON Schema the models generate (the
same text editors show as hover help), so the reference can never disagree with the validator;
a test fails when the committed pages are stale.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from alicerce.spec.schema import schema_text

SCHEMA_LINK = "../../schema/platform.schema.json"


@functools.cache
def _schema() -> dict[str, Any]:  # read-only: callers never change it
    schema: dict[str, Any] = json.loads(schema_text())
    return schema


def sections() -> list[str]:
    """The top-level keys of a spec, in the order the models declare them."""
    return list(_schema()["properties"])


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    return str(ref).rsplit("/", 1)[-1] if ref else None


def _type(node: dict[str, Any], link: bool = True) -> str:
    """A short human type: `NodePool`, list of `Taint`, map of text, one of "a", "b", a size such as 48TiB."""
    name = _ref_name(node)
    if name:
        return f"[{name}](#{name.lower()})" if link else name
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            kinds = [k for k in (_type(option, link) for option in node[key] if option.get("type") != "null") if k]
            nullable = any(option.get("type") == "null" for option in node[key])
            shorthand = node.get("examples")
            if shorthand and all(option.get("type") in ("string", "number", "integer") for option in node[key]):
                return f"shorthand such as `{shorthand[0]}`, or a number"
            text = " or ".join(dict.fromkeys(kinds))
            return f"{text} or null" if nullable and text else text
    kind = node.get("type")
    if kind == "array":
        return f"list of {_type(node.get('items', {}), link)}"
    if kind == "object":
        values = node.get("additionalProperties")
        return f"map of {_type(values, link)}" if isinstance(values, dict) else "map"
    names = {"string": "text", "integer": "integer", "number": "number", "boolean": "true or false", "null": "null"}
    text = names.get(str(kind), str(kind or "any"))
    if kind == "string" and "pattern" in node and "examples" in node:
        text += f" such as `{node['examples'][0]}`"
    return text


def _models(node: Any, defs: dict[str, Any], found: list[str]) -> None:
    """Every model reachable from ``node``, in the order a reader meets them."""
    if isinstance(node, dict):
        name = _ref_name(node)
        if name and name not in found:
            found.append(name)
            _models(defs[name], defs, found)
        for key, value in node.items():
            if key != "$ref":
                _models(value, defs, found)
    elif isinstance(node, list):
        for value in node:
            _models(value, defs, found)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _fields(model: dict[str, Any]) -> list[str]:
    required = set(model.get("required", []))
    rows = ["| key | type | required | default | description |", "|---|---|---|---|---|"]
    for key, prop in model.get("properties", {}).items():
        default = "" if "default" not in prop else f"`{json.dumps(prop['default'])}`"
        needed = "yes" if key in required else ""
        rows.append(f"| `{key}` | {_cell(_type(prop))} | {needed} | {_cell(default)} | {_cell(prop.get('description', ''))} |")
    return rows


def page(section: str) -> str:
    """The Markdown reference of one top-level section."""
    schema = _schema()
    defs = schema["$defs"]
    prop = schema["properties"][section]
    lines = [
        f"# `{section}`",
        "",
        "<!-- Written by `alicerce docs --output docs/spec` from the models' descriptions; do not edit. -->",
        "",
        _cell(prop.get("description", "")),
        "",
        f"Type: {_type(prop)}{'' if section not in schema.get('required', []) else ' (required)'}."
        + (f" Default: `{json.dumps(prop['default'])}`." if "default" in prop else ""),
    ]
    found: list[str] = []
    _models(prop, defs, found)
    for name in found:
        model = defs[name]
        lines += ["", f"## {name}", ""]
        if model.get("description"):
            lines += [_cell(model["description"]), ""]
        if "properties" in model:
            lines += _fields(model)
        elif any(key in model for key in ("oneOf", "anyOf")):
            lines.append(f"One of: {_type(model)}.")
        discriminator = model.get("discriminator")
        if discriminator:
            lines.append(f"Chosen by `{discriminator['propertyName']}`.")
    return "\n".join(lines).rstrip() + "\n"


def index() -> str:
    schema = _schema()
    lines = [
        "# The platform spec, section by section",
        "",
        "<!-- Written by `alicerce docs --output docs/spec` from the models' descriptions; do not edit. -->",
        "",
        "A spec is one YAML file with these top-level keys. Each page lists every field with its type,",
        "default and description, the same text editors show from",
        f"[`schema/platform.schema.json`]({SCHEMA_LINK}).",
        "",
        "| section | required | what it holds |",
        "|---|---|---|",
    ]
    required = set(schema.get("required", []))
    for name, prop in schema["properties"].items():
        lines.append(f"| [`{name}`]({name}.md) | {'yes' if name in required else ''} | {_cell(prop.get('description', ''))} |")
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Every page by file name: README.md and one per section."""
    return {"README.md": index(), **{f"{name}.md": page(name) for name in sections()}}
