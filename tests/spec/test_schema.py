"""The JSON Schema: committed and fresh, complete descriptions, and in step with the models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from alicerce.spec.loader import load_file
from alicerce.spec.schema import schema_text
from tests.conftest import ROOT

SCHEMA = ROOT / "schema" / "platform.schema.json"
SPECS = [ROOT / "platform.yaml", *sorted((ROOT / "examples").glob("*.yaml"))]


def test_committed_schema_is_fresh() -> None:
    assert SCHEMA.read_text("utf-8") == schema_text(), "run `make schema` and commit schema/platform.schema.json"


def _properties(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        for name, prop in node.get("properties", {}).items():
            out.append((f"{path}.{name}", prop))
        for key, value in node.items():
            out.extend(_properties(value, f"{path}/{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.extend(_properties(value, f"{path}[{i}]"))
    return out


def test_every_field_has_a_description() -> None:
    schema = json.loads(SCHEMA.read_text("utf-8"))
    undocumented = [path for path, prop in _properties(schema) if "description" not in prop]
    assert undocumented == []


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_every_spec_starts_with_the_schema_modeline(spec: Path) -> None:
    first = spec.read_text("utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    target = (spec.parent / first.split("$schema=", 1)[1]).resolve()
    assert target == SCHEMA


@pytest.mark.parametrize("spec", [s for s in SPECS if s.name != "mistakes.yaml"], ids=lambda p: p.name)
def test_valid_specs_validate_against_the_json_schema_too(spec: Path) -> None:
    """What editors accept and what alicerce accepts agree (shorthands included)."""
    schema = json.loads(SCHEMA.read_text("utf-8"))
    jsonschema.Draft202012Validator(schema).validate(load_file(spec).data)


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"kind": "Cluster"}, "Platform"),
        ({"metadata": {"name": "x", "owner": "o", "costCenter": "c", "extra": 1}}, "extra"),
        ({"nodePools": [{"name": "p", "site": "aws", "purpose": "gaming", "scaling": {"min": 0, "max": 1}}]}, "gaming"),
        ({"storage": [{"class": "tape", "name": "t", "purpose": "logs"}]}, "tape"),
    ],
)
def test_json_schema_rejects_what_alicerce_rejects(patch: dict[str, Any], fragment: str) -> None:
    schema = json.loads(SCHEMA.read_text("utf-8"))
    data = {**load_file(ROOT / "examples" / "minimal.yaml").data, **patch}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(data)
