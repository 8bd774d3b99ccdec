"""The YAML loader: positions, the YAML 1.2 core schema, and every guard against hostile input."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from alicerce.spec import loader
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import load_file, load_text, locate


def errors_of(text: str) -> list[str]:
    with pytest.raises(SpecInvalid) as info:
        load_text(text, "spec.yaml")
    return [e.render() for e in info.value.errors]


def test_positions_of_keys_and_values_are_one_based() -> None:
    doc = load_text("a:\n  b: [1, 2]\n  c: x\n", "f.yaml")
    assert locate(doc.pos, ("a", "b", 1)) == (loader.Span("f.yaml", 2, 10), 3)
    assert locate(doc.pos, ("a", "c"), key=True)[0] == loader.Span("f.yaml", 3, 3)
    # a path that goes past the document stops at its deepest existing node
    assert locate(doc.pos, ("a", "missing", "deeper")) == (loader.Span("f.yaml", 2, 3), 1)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("NO", "NO"),  # YAML 1.1 booleans stay strings
        ("true", True),
        ("False", False),
        ("2026-12-02", "2026-12-02"),  # no implicit timestamps
        ("0755", 755),
        ("0o755", 493),
        ("0x1F", 31),
        ("7e10", 7e10),
        ("1.30", 1.3),
        ("~", None),
        ("", None),
        ("null", None),
        ("'1.30'", "1.30"),
        ('"true"', "true"),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    assert load_text(f"k: {text}\n", "f").data["k"] == value


def test_special_floats() -> None:
    data = load_text("a: .inf\nb: -.Inf\nc: .nan\n", "f").data
    assert data["a"] == math.inf and data["b"] == -math.inf and math.isnan(data["c"])


def test_raw_text_of_numbers_is_kept_for_hints() -> None:
    doc = load_text("kubernetes: 1.30\n", "f")
    assert doc.pos.children["kubernetes"].raw == "1.30"


def test_anchors_aliases_and_merge_keys() -> None:
    doc = load_text("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n", "f")
    assert doc.data["use"] == {"x": 1, "y": 3}
    # merged keys point where they were written (the anchor), explicit keys at their own line
    assert locate(doc.pos, ("use", "x"))[0].line == 1
    assert locate(doc.pos, ("use", "y"))[0].line == 4


def test_duplicate_keys_point_at_the_second_and_name_the_first() -> None:
    assert errors_of("a: 1\nb: 2\na: 3\n") == ['spec.yaml:3:1: error[AL002]: a: duplicate key "a" (first defined at line 1)']


@pytest.mark.parametrize("tag", ["!!python/object:os.system", "!!python/name:os.system", "!Ref", "!!binary"])
def test_tags_are_refused_not_executed(tag: str) -> None:
    (line,) = errors_of(f"a: {tag} x\n")
    assert "error[AL003]" in line and line.startswith("spec.yaml:1:4:")


def test_core_tags_are_accepted_when_they_fit() -> None:
    assert load_text("a: !!str 12\nb: !!int 3\n", "f").data == {"a": "12", "b": 3}
    assert "AL003" in errors_of("a: !!int abc\n")[0]


def test_billion_laughs_is_refused_fast() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    (line,) = errors_of("\n".join(lines) + "\n")
    assert "error[AL004]" in line


def test_deep_nesting_is_refused() -> None:
    text = "a: " + "[" * 40 + "]" * 40 + "\n"
    (line,) = errors_of(text)
    assert "error[AL005]" in line


def test_pathological_nesting_does_not_crash_the_parser() -> None:
    (line,) = errors_of("a: " + "[" * 100_000 + "\n")
    assert "error[AL001]" in line or "error[AL005]" in line


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "~\n"])
def test_empty_documents(text: str) -> None:
    assert [e.split(": error")[1] for e in errors_of(text)] == [
        '[AL008]: the file is empty (start with "apiVersion: alicerce.dev/v1" and "kind: Platform")'
    ]


def test_two_documents() -> None:
    (line,) = errors_of("a: 1\n---\nb: 2\n")
    assert line.startswith("spec.yaml:2:1: error[AL009]")


def test_top_level_must_be_a_mapping() -> None:
    assert "AL010" in errors_of("- a\n- b\n")[0]


def test_syntax_errors_are_located_with_hints() -> None:
    (line,) = errors_of("a:\n\tb: 1\n")
    assert line.startswith("spec.yaml:2:1: error[AL001]") and "tabs" in line
    (line,) = errors_of("a: b: c\n")
    assert line.startswith("spec.yaml:1:5: error[AL001]")


def test_complex_keys_are_refused() -> None:
    assert "AL011" in errors_of("? [a, b]\n: 1\n")[0]


def test_byte_order_mark_is_accepted() -> None:
    assert load_text("\ufeffa: 1\n", "f").data == {"a": 1}


def test_non_utf8_bytes_are_located(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(SpecInvalid) as info:
        load_file(path, "bad.yaml")
    assert info.value.errors[0].render() == "bad.yaml:2:7: error[AL007]: byte 0xe9 is not valid UTF-8 (save the file as UTF-8)"


def test_files_over_10_mib_are_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(loader.MAX_BYTES + 1)
    with pytest.raises(SpecInvalid) as info:
        load_file(path, "huge.yaml")
    assert info.value.errors[0].rule == "AL006"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalid) as info:
        load_file(tmp_path / "nope.yaml", "nope.yaml")
    assert info.value.errors[0].rule == "AL000"


def test_a_flood_of_mistakes_is_reported_capped_with_a_count() -> None:
    from alicerce.rules.validate import check
    from alicerce.spec.schema_errors import MAX_REPORTED

    text = "".join(f"k{i}: 1\n" for i in range(5_000))
    errors = check(load_text(text, "flood.yaml")).errors
    assert len(errors) == MAX_REPORTED + 1
    assert errors[-1].rule == "AL013" and errors[-1].message.endswith("more errors not shown")
