"""Environment overlays: the documented merge rules, precedence, and errors at the override's line."""

from __future__ import annotations

from alicerce.catalog import load_catalog
from alicerce.rules.validate import check, validated
from alicerce.spec.loader import load_text
from alicerce.spec.overlay import Merger, apply_overrides
from tests.conftest import ROOT, TODAY


def merge(base: str, over: str) -> tuple[object, list[str]]:
    b, o = load_text(base, "base.yaml"), load_text(over, "over.yaml")
    merger = Merger()
    data, _ = merger.merge(b.data, b.pos, o.data, o.pos, ())
    return data, [e.render() for e in merger.errors]


def test_maps_merge_deeply() -> None:
    assert merge("a: {x: 1, y: {p: 1, q: 2}}\n", "a: {y: {q: 3}, z: 4}\n") == ({"a": {"x": 1, "y": {"p": 1, "q": 3}, "z": 4}}, [])


def test_explicit_null_removes_a_key() -> None:
    assert merge("a: {x: 1, y: 2}\n", "a: {y: null}\n")[0] == {"a": {"x": 1}}


def test_named_lists_merge_by_name_keep_order_and_append() -> None:
    base = "l: [{name: a, v: 1}, {name: b, v: 2}]\n"
    over = "l: [{name: b, v: 3}, {name: c, v: 4}]\n"
    assert merge(base, over)[0] == {"l": [{"name": "a", "v": 1}, {"name": "b", "v": 3}, {"name": "c", "v": 4}]}


def test_patch_delete_removes_a_named_item() -> None:
    base = "l: [{name: a}, {name: b}]\n"
    assert merge(base, "l: [{name: a, $patch: delete}]\n")[0] == {"l": [{"name": "b"}]}


def test_deleting_an_unknown_name_is_an_error_at_the_override() -> None:
    _, errors = merge("l: [{name: alpha}]\n", "l:\n  - {name: alpah, $patch: delete}\n")
    assert errors == [
        'over.yaml:2:12: error[AL122]: l[0].name: "alpah" is not in the base list, so it cannot be deleted (did you mean "alpha"?)'
    ]


def test_unknown_patch_directive() -> None:
    _, errors = merge("l: [{name: a}]\n", "l: [{name: a, $patch: replace}]\n")
    assert "AL121" in errors[0]


def test_plain_lists_and_scalars_are_replaced() -> None:
    assert merge("a: [1, 2]\nb: 1\n", "a: [3]\nb: 2\n")[0] == {"a": [3], "b": 2}


def test_merge_does_not_mutate_the_base() -> None:
    b, o = load_text("a: {x: [{name: n, v: 1}]}\n", "b"), load_text("a: {x: [{name: n, v: 2}]}\n", "o")
    Merger().merge(b.data, b.pos, o.data, o.pos, ())
    assert b.data == {"a": {"x": [{"name": "n", "v": 1}]}}


def test_overrides_cannot_change_identity() -> None:
    b, o = load_text("kind: Platform\n", "b"), load_text("kind: Other\nenvironments: {}\n", "o")
    _, _, errors, _ = apply_overrides(b.data, b.pos, o.data, o.pos, ("environments", "dev", "overrides"))
    assert [e.rule for e in errors] == ["AL120", "AL120"]


def test_precedence_catalog_then_base_then_environment() -> None:
    text = (ROOT / "alicerce/rules/fixtures/_base.yaml").read_text()
    bom = load_catalog().versions.bom
    # catalog default
    doc = load_text(text, "p.yaml")
    assert validated(doc, "prod").versions.kubernetes == bom.kubernetes
    # base spec pins over the catalog; the environment override pins over the base
    older = load_catalog().versions.kubernetes[0]
    pinned = text.replace("environments:\n", f'versions:\n  driverBranch: "{bom.driverBranch}"\nenvironments:\n', 1)
    pinned = pinned.replace(
        "  prod:\n    tier: production\n",
        f'  prod:\n    tier: production\n    overrides:\n      versions: {{driverBranch: "{bom.driverBranch}", kueue: null}}\n',
        1,
    )
    doc = load_text(pinned, "p.yaml")
    prod = validated(doc, "prod")
    assert prod.versions.driverBranch == bom.driverBranch
    assert prod.versions.kueue == bom.kueue  # null removes the pin: back to the catalog
    assert older  # the matrix lists more than one release


def test_an_error_inside_an_override_points_at_the_override_line() -> None:
    text = (ROOT / "alicerce/rules/fixtures/_base.yaml").read_text()
    text = text.replace(
        "        - name: scratch\n          pools: [train]\n",
        "        - name: scratch\n          pools: [train]\n          mountPath: relative/path\n",
        1,
    )
    doc = load_text(text, "p.yaml")
    errors = check(doc, on=TODAY).errors
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "relative/path" in t)
    assert [(e.rule, e.span.line, e.environment) for e in errors] == [("AL235", line, "dev")]


def test_delete_then_re_add_in_one_override_replaces_the_item() -> None:
    base = "l: [{name: a, v: 1, w: 1}]\n"
    data, errors = merge(base, "l: [{name: a, $patch: delete}, {name: a, v: 2}]\n")
    assert (data, errors) == ({"l": [{"name": "a", "v": 2}]}, [])
