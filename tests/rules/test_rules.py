"""Every cross-field rule has passing and failing fixtures, and each behaves as its fixture says.

A fixture file ``tests/data/rules/<ID>.yaml`` holds ``pass`` and ``fail`` lists of cases; each
case patches ``_base.yaml`` with the overlay merge rules (maps merge, named lists merge by name,
``$patch: delete`` removes, null removes a key). A passing case must leave the spec free of
errors; a failing case must raise that rule (and the error must point into one of the files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from alicerce.rules import all_rules
from alicerce.rules.validate import check
from alicerce.spec.loader import Document, load_file
from alicerce.spec.overlay import Merger
from tests.conftest import DATA, TODAY

RULES_DIR = DATA / "rules"
BASE = RULES_DIR / "_base.yaml"


def _cases() -> list[tuple[str, str, int, str]]:
    out = []
    for path in sorted(RULES_DIR.glob("AL*.yaml")):
        doc = load_file(path)
        for kind in ("pass", "fail"):
            for i, case in enumerate(doc.data.get(kind, [])):
                out.append((path.stem, kind, i, case.get("description", "")))
    return out


def _patched(rule_id: str, kind: str, index: int) -> Document:
    base = load_file(BASE, "_base.yaml")
    fixture = load_file(RULES_DIR / f"{rule_id}.yaml", f"{rule_id}.yaml")
    case_pos = fixture.pos.children[kind].children[index]
    patch: Any = fixture.data[kind][index]["patch"]
    merger = Merger()
    data, pos = merger.merge(base.data, base.pos, patch, case_pos.children["patch"], ())
    assert not merger.errors, [e.render() for e in merger.errors]
    return Document(f"{rule_id}.yaml", data, pos)


def test_base_fixture_is_valid() -> None:
    checked = check(load_file(BASE), on=TODAY)
    assert checked.errors == []


def test_every_rule_has_passing_and_failing_fixtures() -> None:
    kinds: dict[str, set[str]] = {}
    for rule_id, kind, _, _ in _cases():
        kinds.setdefault(rule_id, set()).add(kind)
    missing = {rule: {"pass", "fail"} - kinds.get(rule, set()) for rule in all_rules()}
    assert {rule: sorted(m) for rule, m in missing.items() if m} == {}
    assert len(all_rules()) >= 25


def test_fixture_files_name_registered_rules() -> None:
    assert {p.stem for p in RULES_DIR.glob("AL*.yaml")} <= set(all_rules())


@pytest.mark.parametrize(("rule_id", "kind", "index", "description"), _cases())
def test_rule_fixture(rule_id: str, kind: str, index: int, description: str) -> None:
    checked = check(_patched(rule_id, kind, index), on=TODAY)
    rendered = [e.render() for e in checked.errors]
    if kind == "pass":
        assert rendered == [], description
    else:
        hits = [e for e in checked.errors if e.rule == rule_id]
        assert hits, f"{description}: expected {rule_id}, got {rendered}"
        for error in hits:
            assert error.span.line >= 1
            assert Path(error.span.file).name in ("_base.yaml", f"{rule_id}.yaml")
