"""Reading the vendored upstream facts (tests/data/upstream): chart values, hooks, defaults, CRD schemas.

Also a small evaluator for the hook guards as hooks.json writes them: Helm's prefix syntax with
``and``, ``or``, ``not``, ``eq``, parentheses, ``.Values.<path>`` over paths from the chart root,
string literals, ``true``/``false``, and ``.Capabilities.APIVersions.Has "<group/version/Kind>"``.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from tests.conftest import DATA

UPSTREAM = DATA / "upstream"
# API versions the pinned Kubernetes (1.35) serves that hook guards ask about: PodSecurityPolicy went in 1.25
REMOVED_APIS = {"policy/v1beta1/PodSecurityPolicy"}


def folder(component: str, version: str) -> Path:
    return UPSTREAM / component / version


@cache
def load(component: str, version: str, name: str) -> Any:
    return json.loads((folder(component, version) / name).read_text())


def flatten(values: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf value paths of a values tree, keys with dots escaped as Helm's --set does; maps and lists are leaves
    only when empty or a list."""
    out: dict[str, Any] = {}
    if not prefix and values == {}:
        return out
    if isinstance(values, dict) and values:
        for key, value in values.items():
            path = f"{prefix}.{key.replace('.', chr(92) + '.')}" if prefix else key.replace(".", "\\.")
            out |= flatten(value, path)
    else:
        out[prefix] = values
    return out


PY_TYPES = {"map": dict, "list": list, "string": str, "int": int, "float": (int, float), "bool": bool}


def check_values(component: str, version: str, values: dict[str, Any]) -> list[str]:
    """Every value path alicerce sets exists in the chart with a compatible type (or under a free-form map)."""
    known: dict[str, str] = load(component, version, "values.json")
    # maps whose keys the chart passes through verbatim (command-line flags, ConfigMap data), per freeform.json
    freeform = set(load(component, version, "freeform.json")) if (folder(component, version) / "freeform.json").exists() else set()
    problems = []
    for path, value in flatten(values).items():
        if path in known:
            expected = known[path]
            if (expected != "null" and not isinstance(value, PY_TYPES[expected])) or (expected == "int" and isinstance(value, bool)):
                problems.append(f"{path}: {type(value).__name__} where the chart has {expected}")
            continue
        parents = [path.rsplit(".", n)[0] for n in range(1, path.count(".") + 1)]
        parent = next((p for p in parents if p in known), None)
        if parent is None or known[parent] not in ("map", "null"):
            problems.append(f"{path}: no such value in {component} {version}")
        elif known[parent] == "map" and parent not in freeform and any(k.startswith(parent + ".") for k in known):
            problems.append(f"{path}: {parent} is a map with fixed keys, {path.removeprefix(parent + '.')} is not one")
    return problems


def _tokens(text: str) -> list[str]:
    return re.findall(r'\(|\)|"[^"]*"|[^\s()]+', text)


def evaluate(expression: str, values: dict[str, Any]) -> Any:
    """Evaluate one guard against a flat path -> value map (missing paths are nil, as in Helm)."""
    tokens = _tokens(expression)
    position = 0

    def atom() -> Any:
        nonlocal position
        token = tokens[position]
        position += 1
        if token == "(":
            result = call()
            assert tokens[position] == ")", expression
            position += 1
            return result
        if token.startswith('"'):
            return token[1:-1]
        if token in ("true", "false"):
            return token == "true"
        if token.startswith(".Values."):
            return values.get(token.removeprefix(".Values."))
        if token == ".Capabilities.APIVersions.Has":
            api = atom()
            return api not in REMOVED_APIS
        position -= 1
        return call()

    def call() -> Any:
        nonlocal position
        head = tokens[position]
        if head in ("and", "or", "not", "eq"):
            position += 1
            args = []
            while position < len(tokens) and tokens[position] != ")":
                args.append(atom())
            if head == "and":
                return all(args)
            if head == "or":
                return any(args)
            if head == "not":
                return not args[0]
            return args[0] == args[1]
        return atom()

    result = call()
    assert position == len(tokens), f"trailing tokens in {expression!r}"
    return result


def effective(component: str, version: str, values: dict[str, Any]) -> dict[str, Any]:
    """The chart defaults hook guards read, overridden by alicerce's values (flat paths, escaped as in values.json)."""
    return {**load(component, version, "defaults.json"), **flatten(values)}


def active_hooks(component: str, version: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    merged = effective(component, version, values)
    return [h for h in load(component, version, "hooks.json")["hooks"] if evaluate(h["when"], merged)]


def crd_schema(component: str, version: str, group: str, plural: str, api_version: str) -> dict[str, Any]:
    schema: dict[str, Any] = load(component, version, f"crds/{group}_{plural}_{api_version}.schema.json")
    return schema


def validate_against(schema: dict[str, Any], obj: Any) -> None:
    """Validate without checking the schema itself: CRD patterns are Go regexps (e.g. a mid-pattern ``(?i)``) that
    Python's re rejects; only the patterns of fields an object sets are compiled."""
    import jsonschema

    jsonschema.Draft202012Validator(schema).validate(obj)
