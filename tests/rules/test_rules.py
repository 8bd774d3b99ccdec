"""Every cross-field rule has passing and failing fixtures, and each behaves as its fixture says.

A fixture file ``alicerce/rules/fixtures/<ID>.yaml`` (package data, shown by `alicerce rules ID`)
holds ``pass`` and ``fail`` lists of cases; each case patches ``_base.yaml`` with the overlay
merge rules (maps merge, named lists merge by name, ``$patch: delete`` removes, null removes a
key). A passing case must leave the spec free of errors; a failing case must raise that rule (and
the error must point into one of the files).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from alicerce.rules import all_rules
from alicerce.rules.examples import base_document, examples, fixture_ids, patched
from alicerce.rules.validate import check
from tests.conftest import TODAY


def _cases() -> list[tuple[str, str, int, str]]:
    return [(e.rule, e.kind, e.index, e.description) for rule_id in fixture_ids() for e in examples(rule_id)]


def test_base_fixture_is_valid() -> None:
    checked = check(base_document(), on=TODAY)
    assert checked.errors == []


def test_every_rule_has_passing_and_failing_fixtures() -> None:
    kinds: dict[str, set[str]] = {}
    for rule_id, kind, _, _ in _cases():
        kinds.setdefault(rule_id, set()).add(kind)
    missing = {rule: {"pass", "fail"} - kinds.get(rule, set()) for rule in all_rules()}
    assert {rule: sorted(m) for rule, m in missing.items() if m} == {}
    assert len(all_rules()) >= 25


def test_fixture_files_name_registered_rules() -> None:
    assert set(fixture_ids()) <= set(all_rules())


@pytest.mark.parametrize(("rule_id", "kind", "index", "description"), _cases())
def test_rule_fixture(rule_id: str, kind: str, index: int, description: str) -> None:
    checked = check(patched(rule_id, kind, index), on=TODAY)  # type: ignore[arg-type]
    rendered = [e.render() for e in checked.errors]
    if kind == "pass":
        assert rendered == [], description
    else:
        hits = [e for e in checked.errors if e.rule == rule_id]
        assert hits, f"{description}: expected {rule_id}, got {rendered}"
        for error in hits:
            assert error.span.line >= 1
            assert Path(error.span.file).name in ("_base.yaml", f"{rule_id}.yaml")


def test_qlora_at_fp8_is_refused_once_on_every_gpu() -> None:
    """Review sizreview25 N3: QLoRA at fp8 was refused on an A100 (AL388, Transformer Engine's words) and accepted as a
    no-op on an H100, so a mixed pool set moved the job; AL330 refuses it on both, and AL388 does not repeat it."""
    for index in (0, 2):  # the H100 pool and the A100 pool (AL264 there too: the fixture team has no quota on it)
        checked = check(patched("AL330", "fail", index), on=TODAY)  # type: ignore[arg-type]
        rules = [e.rule for e in checked.errors]
        assert rules.count("AL330") == 1 and "AL388" not in rules, rules


def test_qlora_fp8_hint_names_lora_only_where_a_gpu_runs_fp8() -> None:
    """Review sizreview26 N7: AL330 told a QLoRA run at fp8 on an A100 pool to set method: lora to run its GEMMs in fp8,
    where `plan` then refuses fp8 on the A100 (PL303). The hint offers lora only where the GPU has fp8 tensor cores."""
    hints = {}
    for index in (0, 2):  # the H100 pool, the A100 pool
        checked = check(patched("AL330", "fail", index), on=TODAY)  # type: ignore[arg-type]
        (error,) = [e for e in checked.errors if e.rule == "AL330"]
        hints[index] = error.render()
    assert "or method: lora to run its GEMMs in fp8" in hints[0]
    assert "or method: lora" not in hints[2] and "none of A100-SXM4-40GB has them" in hints[2], hints[2]
