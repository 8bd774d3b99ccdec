"""Fuzzing the whole front end: any text or any structure gives either a valid spec or located
errors, never a crash, and never an error without a position in the file."""

from __future__ import annotations

import re
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alicerce.rules.validate import check
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import load_text
from tests.conftest import ROOT, TODAY

BASE_TEXT = (ROOT / "alicerce/rules/fixtures/_base.yaml").read_text()
BASE_LINES = BASE_TEXT.splitlines(keepends=True)


def outcome(text: str) -> None:
    try:
        errors = check(load_text(text, "fuzz.yaml"), on=TODAY).errors
    except SpecInvalid as exc:
        errors = exc.errors
        assert errors
    lines = len(re.findall("\r\n|\r|\n|\x85|\u2028|\u2029", text)) + 2  # YAML's line breaks
    for error in errors:
        assert error.span.file == "fuzz.yaml"
        assert 1 <= error.span.line <= lines, error.render()
        assert error.span.column >= 1
        assert error.render().startswith("fuzz.yaml:")


yaml_chars = st.text(alphabet=string.printable + "äé€\u2028", max_size=300)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_chars)
def test_arbitrary_text(text: str) -> None:
    outcome(text)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**12), st.floats(allow_nan=False), st.text(max_size=12))
keys = st.sampled_from(["name", "site", "purpose", "scaling", "min", "max", "aws", "instanceType", "accelerator", "class", "pools", "x"])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4), max_leaves=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(BASE_LINES) - 1), values)
def test_mutated_reference_lines(index: int, value: object) -> None:
    """Replace one value of a valid spec by a random structure (kept on the same key)."""
    import json

    line = BASE_LINES[index]
    if ":" not in line or line.strip().startswith("#"):
        return
    head = line.split(":", 1)[0]
    mutated = [*BASE_LINES[:index], f"{head}: {json.dumps(value)}\n", *BASE_LINES[index + 1 :]]
    outcome("".join(mutated))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(BASE_LINES) - 1), st.integers(0, len(BASE_LINES) - 1))
def test_deleted_and_duplicated_lines(drop: int, copy: int) -> None:
    lines = list(BASE_LINES)
    lines.insert(copy, lines[copy])
    del lines[drop]
    outcome("".join(lines))
