"""Each rule's fixtures (package data): passing and failing examples, for the tests and `alicerce rules ID`.

``fixtures/<ID>.yaml`` holds ``pass`` and ``fail`` lists of cases, each a ``description`` and a
``patch`` applied to ``fixtures/_base.yaml`` with the overlay merge rules (maps merge, named lists
merge by name, ``$patch: delete`` removes, null removes a key). The tests check every case; the
CLI shows them, as written in the fixture file, to explain a rule.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from alicerce.spec.loader import Document, load_text
from alicerce.spec.overlay import Merger

Kind = Literal["pass", "fail"]
BASE = "_base.yaml"


@dataclass(frozen=True)
class Example:
    rule: str
    kind: Kind
    index: int
    description: str
    snippet: str  # the patch as the fixture file writes it (comments, quotes and flow style kept)


def _read(name: str) -> str:
    return resources.files("alicerce.rules").joinpath("fixtures", name).read_text("utf-8")


def fixture_ids() -> list[str]:
    """The rule ids that have a fixture file."""
    folder = resources.files("alicerce.rules").joinpath("fixtures")
    return sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.startswith("AL"))


@cache
def load_fixture(rule_id: str) -> Document:
    return load_text(_read(f"{rule_id}.yaml"), f"{rule_id}.yaml")


def examples(rule_id: str) -> list[Example]:
    """Every case of the rule's fixture, passing ones first, in file order."""
    try:
        fixture = load_fixture(rule_id)
    except FileNotFoundError:
        return []
    lines = _read(f"{rule_id}.yaml").splitlines()
    starts = sorted(
        [span.line for span in fixture.pos.keys.values()]
        + [
            item.span.line
            for kind in ("pass", "fail")
            if kind in fixture.pos.children
            for item in fixture.pos.children[kind].children.values()
        ]
    )
    out: list[Example] = []
    for kind in ("pass", "fail"):
        for index, case in enumerate(fixture.data.get(kind) or []):
            case_pos = fixture.pos.children[kind].children[index]
            first = case_pos.keys["patch"].line
            end = next((line - 1 for line in starts if line > case_pos.span.line and line > first), len(lines))
            out.append(Example(rule_id, kind, index, str(case.get("description", "")), _snippet(lines, first, end)))
    return out


def _snippet(lines: list[str], first: int, last: int) -> str:
    """The patch's text: the lines after ``patch:`` (or the flow value on its line), dedented."""
    head = lines[first - 1].split("patch:", 1)[1].strip()
    body = [line for line in lines[first:last] if line.strip()]
    text = textwrap.dedent("\n".join(body))
    return f"{head}\n{text}".strip() if head else text


def patched(rule_id: str, kind: Kind, index: int) -> Document:
    """The base spec with one case's patch applied, positions pointing into both files."""
    base = load_text(_read(BASE), BASE)
    fixture = load_fixture(rule_id)
    case_pos = fixture.pos.children[kind].children[index]
    patch: Any = fixture.data[kind][index]["patch"]
    merger = Merger()
    data, pos = merger.merge(base.data, base.pos, patch, case_pos.children["patch"], ())
    if merger.errors:
        raise ValueError(f"{rule_id} {kind}[{index}]: the patch does not apply: {[e.render() for e in merger.errors]}")
    return Document(f"{rule_id}.yaml", data, pos)


def base_document() -> Document:
    return load_text(_read(BASE), BASE)
