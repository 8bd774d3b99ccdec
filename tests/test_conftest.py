"""tests/conftest.py names tests and fixtures that exist: a rename must not quietly move a test into `make check`."""

from __future__ import annotations

import ast

from tests.conftest import ROOT, SHARED_FIXTURES, SHARED_GROUPS, SLOW_FIXTURES, SLOW_TESTS


def defined(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def test_every_slow_entry_names_an_existing_module_or_test() -> None:
    missing = []
    for entry in SLOW_TESTS:
        path, _, name = entry.partition("::")
        if not (ROOT / path).is_file() or (name and name not in defined(path)):
            missing.append(entry)
    assert missing == []


def test_every_shared_path_and_fixture_exists() -> None:
    assert [prefix for prefix in SHARED_GROUPS if not (ROOT / prefix).exists()] == []
    fixtures = set().union(*(defined(p.relative_to(ROOT).as_posix()) for p in (ROOT / "tests").rglob("*.py")))
    assert sorted((set(SHARED_FIXTURES) | SLOW_FIXTURES) - fixtures) == []
