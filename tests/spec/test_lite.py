"""The lite check (alicerce.spec.lite) never vouches for a spec the real check refuses, and builds the same objects.

A cold `alicerce validate` checks a spec with the models imported against alicerce.spec.lite instead of
pydantic, and answers only when that check finds nothing; anything else goes to the real check. So the
property that matters: wherever the lite check finds no error and does not give up, the real check finds
none either, and the spec, the resolved platform and the notes it built are the same, field by field
(types and the fields a user set included). It is checked here over the reference spec, every example,
every golden bad spec, every passing and failing case of every rule's fixture, and a deterministic
mutation corpus (each value of the fixtures' base spec replaced by values of other types and shapes).

Objects are compared by a digest of their canonical form. The lite side runs in a subprocess (it takes
pydantic's place in sys.modules, which this process holds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alicerce.rules.examples import examples, fixture_ids, patched
from alicerce.rules.validate import alias_notes, check
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import Document, load_file, load_text
from tests.conftest import DATA, ROOT, TODAY, alicerce

# The canonical form of a built object: every model's class, fields (with their Python types) and the fields a
# user set; dataclasses by their fields. The same text runs in both processes.
CANONICAL = """
import dataclasses, hashlib, json
LASTING = {}  # the canonical form of objects that live as long as the process (the catalog), kept across digests
KEPT = []
def remember(obj):
    # every resolved platform holds catalog objects (GPUs, instance types): read once per process, not once per
    # digest (~60% of a generated corpus spec's digest); kept alive, so that no other object takes their ids
    KEPT.append(obj)
    canonical(obj, LASTING)
def canonical(obj, memo=None):
    memo = dict(LASTING) if memo is None else memo
    if id(obj) in memo:  # a shared object (the catalog GPU of every pool) is read once
        return memo[id(obj)]
    if hasattr(obj, "__pydantic_fields_set__"):
        out = {"model": type(obj).__module__ + "." + type(obj).__qualname__,
               "fields": {k: canonical(v, memo) for k, v in obj.__dict__.items()},
               "set": sorted(obj.__pydantic_fields_set__)}
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"dataclass": type(obj).__qualname__,
               "fields": {f.name: canonical(getattr(obj, f.name), memo) for f in dataclasses.fields(obj)}}
    elif isinstance(obj, dict):
        out = {"dict": [[canonical(k, memo), canonical(v, memo)] for k, v in obj.items()]}
    elif isinstance(obj, (list, tuple)):
        out = [type(obj).__name__, [canonical(v, memo) for v in obj]]
    elif isinstance(obj, (set, frozenset)):
        out = [type(obj).__name__, sorted(repr(canonical(v, memo)) for v in obj)]
    else:
        return [type(obj).__name__, repr(obj)]
    memo[id(obj)] = out
    return out
def digest(obj):
    return hashlib.sha256(json.dumps(canonical(obj)).encode()).hexdigest()
"""
namespace: dict[str, Any] = {}
exec(CANONICAL, namespace)  # the test's own text, shared with the subprocess
canonical = namespace["canonical"]
digest = namespace["digest"]
remember = namespace["remember"]

PROBE = (
    CANONICAL
    + """
import datetime, json, sys
from alicerce.spec.lite import GiveUp, installed
cases = json.load(sys.stdin)
out = []
with installed():
    from alicerce.rules.examples import patched
    from alicerce.rules.validate import alias_notes, check
    from alicerce.spec.errors import SpecInvalid
    from alicerce.spec.loader import load_file, load_text
    from alicerce.catalog import load_catalog
    catalog = load_catalog()
    remember(catalog)
    on = datetime.date.fromisoformat(sys.argv[1])
    for case in cases:
        try:
            if case["kind"] == "file":
                document = load_file(case["path"], case["name"])
            elif case["kind"] == "text":
                document = load_text(case["text"], case["name"])
            else:
                document = patched(case["rule"], case["case"], case["index"])
            checked = check(document, on=on)
        except GiveUp as exc:
            out.append({"gave_up": str(exc)[:200]})
            continue
        except SpecInvalid as exc:
            out.append({"errors": [e.render() for e in exc.errors]})
            continue
        envs = checked.environments
        if checked.errors:  # a refused spec's objects are never compared (see digested)
            out.append({"errors": [e.render() for e in checked.errors], "environments": list(envs)})
            continue
        out.append({
            "errors": [],
            "notes": [n.render_note() for n in alias_notes(checked)] if not checked.errors else [],
            "environments": list(envs),
            "specs": {name: digest(env.spec) for name, env in envs.items()},
            "resolved": {name: digest(env.resolved) for name, env in envs.items()},
        })
    from alicerce.catalog import _parse_catalog, _parse_sizing
    out.append({"catalog": digest(catalog), "sizing": digest(catalog.sizing),
                "parsed": [digest(_parse_catalog()), digest(_parse_sizing())]})
sys.stdout.write(json.dumps(out))
"""
)


def lite(cases: list[dict[str, Any]], cache: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "ALICERCE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("ALICERCE_NO_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, TODAY.isoformat()],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def real(document: Document) -> dict[str, Any]:
    """What the real check finds; the digests of the objects it built only where it found no error.

    digested: objects are compared only where both checks found no error (a lite answer with no error against a real
    one with errors is a failure on the errors alone), so neither side digests a refused spec's objects: that was ~20
    of the generated corpus's ~60 CPU-s (457 of its 606 checked specs have errors)."""
    try:
        checked = check(document, on=TODAY)
    except SpecInvalid as exc:
        return {"errors": [e.render() for e in exc.errors]}
    envs = checked.environments
    if checked.errors:  # a refused spec's objects are never compared (see digested)
        return {"errors": [e.render() for e in checked.errors], "environments": list(envs)}
    return {
        "errors": [],
        "notes": [n.render_note() for n in alias_notes(checked)],
        "environments": list(envs),
        "specs": {name: digest(env.spec) for name, env in envs.items()},
        "resolved": {name: digest(env.resolved) for name, env in envs.items()},
    }


MUTATIONS = ('"8"', "8", "1.5", "null", "[]", "{bogus: 1}", "true", '"1e3"', '"30d"', "-1")


def mutated_texts() -> list[tuple[str, str]]:
    """Each value line of the fixtures' base spec replaced by a mutation (taken in turn), every third key renamed."""
    text = (ROOT / "alicerce/rules/fixtures/_base.yaml").read_text("utf-8")
    lines = text.splitlines(keepends=True)
    out = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if ":" not in line or stripped.startswith("#"):
            continue
        head = line.split(":", 1)[0]
        value = MUTATIONS[index % len(MUTATIONS)]
        out.append((f"mutant-{index}-{value}", "".join([*lines[:index], f"{head}: {value}\n", *lines[index + 1 :]])))
        if index % 3 == 0:
            renamed = line.replace(head.strip().lstrip("- "), "bogusKey", 1)
            out.append((f"mutant-{index}-key", "".join([*lines[:index], renamed, *lines[index + 1 :]])))
    return out


def corpus(kind: str) -> list[tuple[dict[str, Any], Document | None, str]]:
    """(the case for the probe, the document for this process, its name): the shipped and golden specs, or the
    generated ones (every rule fixture's cases and the mutants)."""
    cases: list[tuple[dict[str, Any], Document | None, str]] = []
    if kind == "shipped":
        files = [ROOT / "platform.yaml", *sorted((ROOT / "examples").glob("*.yaml")), *sorted((DATA / "bad").glob("**/*.yaml"))]
        for path in files:
            name = str(path.relative_to(ROOT))
            try:
                document: Document | None = load_file(path, name)
            except SpecInvalid:
                document = None
            cases.append(({"kind": "file", "path": str(path), "name": name}, document, name))
        return cases
    for rule in fixture_ids():
        for example in examples(rule):
            case = {"kind": "fixture", "rule": rule, "case": example.kind, "index": example.index}
            cases.append((case, patched(rule, example.kind, example.index), f"{rule} {example.kind}[{example.index}]"))
    for name, text in mutated_texts():
        try:
            document = load_text(text, name)
        except SpecInvalid:
            document = None
        cases.append(({"kind": "text", "text": text, "name": name}, document, name))
    return cases


# the real path writes the checked catalog's cache entries, which the lite one only reads
WARM = """
import sys
from alicerce.rules.validate import check
from alicerce.spec.loader import load_file
from alicerce.spec.errors import SpecInvalid
for path in sys.argv[1:]:
    try:
        check(load_file(path, path))
    except SpecInvalid:
        pass
"""


# the generated corpus (~620 specs, a minute of CPU) runs with the slow tests (CI, `make test`), not in `make check`
@pytest.fixture(scope="module", params=["shipped", pytest.param("generated", marks=pytest.mark.slow)])
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    cache = tmp_path_factory.mktemp("cache")
    shipped = [str(ROOT / "platform.yaml"), *map(str, sorted((ROOT / "examples").glob("*.yaml")))]
    env = {**os.environ, "ALICERCE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("ALICERCE_NO_CACHE", None)
    subprocess.run([sys.executable, "-c", WARM, *shipped], env=env, cwd=ROOT, check=True, capture_output=True, timeout=600)
    items = corpus(request.param)
    results = lite([case for case, _, _ in items], cache)
    from alicerce.catalog import load_catalog

    remember(load_catalog())
    assert len(results) == len(items) + 1
    rows = [
        (name, result, real(document) if document is not None else None)
        for (_, document, name), result in zip(items, results[:-1], strict=True)
    ]
    rows.append(("catalog", results[-1], None))
    return rows


def served(result: dict[str, Any]) -> bool:
    return "gave_up" not in result and "catalog" not in result and not result.get("errors")


def test_the_lite_check_never_vouches_for_what_the_real_check_refuses(outcomes: list[Any]) -> None:
    wrong = []
    for name, lite_result, real_result in outcomes:
        if not served(lite_result):
            continue
        if real_result is None or real_result.get("errors"):
            wrong.append(f"{name}: lite found no error, the real check: {real_result and real_result['errors'][:3]}")
        elif lite_result != real_result:
            keys = [k for k in real_result if lite_result.get(k) != real_result[k]]
            wrong.append(f"{name}: lite built other objects or notes ({', '.join(keys)})")
    assert wrong == []


def test_the_lite_check_serves_every_valid_shipped_spec(outcomes: list[Any]) -> None:
    """The point of it: the reference and the examples that are valid are answered without pydantic, and so are most
    valid generated specs (so that the generated corpus exercises it)."""
    valid = [name for name, _, real_result in outcomes if real_result is not None and not real_result.get("errors")]
    shipped = [name for name in valid if name == "platform.yaml" or name.startswith("examples/")]
    if any(name.startswith("tests/data/bad/") for name, _, _ in outcomes):
        assert "platform.yaml" in shipped
        assert [name for name, result, _ in outcomes if name in shipped and not served(result)] == []
    else:
        assert sum(served(result) for name, result, _ in outcomes if name in valid) >= 0.8 * len(valid)


def test_the_lite_catalog_read_back_is_the_real_one(outcomes: list[Any]) -> None:
    from alicerce.catalog import load_catalog

    lite_result = outcomes[-1][1]
    catalog = load_catalog()
    assert lite_result["catalog"] == digest(catalog)
    assert lite_result["sizing"] == digest(catalog.sizing)


def test_the_catalog_parsed_by_the_lite_models_is_the_real_one(outcomes: list[Any]) -> None:
    """Without a cache folder (ALICERCE_NO_CACHE=1) the lite path parses the catalog's data files itself."""
    from alicerce.catalog import _parse_catalog, _parse_sizing

    assert outcomes[-1][1]["parsed"] == [digest(_parse_catalog()), digest(_parse_sizing())]


ALICERCE = Path(sys.executable).with_name("alicerce")


def validate(*args: str, real: bool = False) -> tuple[str, str, int]:
    """`alicerce validate` as a cold process (where the lite check answers), or with ``real`` on the real path alone:
    in the test process (pydantic is loaded there, and ALICERCE_LITE=0 says so), as the installed script would."""
    environ = {"PYTHONPATH": str(ROOT), "ALICERCE_NO_CACHE": "1", "COLUMNS": "200"}  # no replay: each run checks
    if real:
        done = alicerce("validate", *args, cwd=ROOT, env={**environ, "ALICERCE_LITE": "0"})
    else:
        done = subprocess.run(
            [str(ALICERCE), "validate", *args], capture_output=True, text=True, env={**os.environ, **environ}, cwd=ROOT, check=False
        )
    return done.stdout, done.stderr, done.returncode


@pytest.mark.parametrize(
    "args",
    [
        ["platform.yaml"],
        ["platform.yaml", "--format", "json"],
        ["platform.yaml", "--format", "sarif"],
        ["platform.yaml", "--env", "prod"],
        *[[f"examples/{p.name}"] for p in sorted((ROOT / "examples").glob("*.yaml"))],
        ["examples/mistakes.yaml", "--format", "json"],
        ["tests/data/bad/bad-units.yaml"],
    ],
)
def test_validate_prints_the_same_with_and_without_the_lite_check(args: list[str]) -> None:
    """The command's whole output and exit code, valid or not, the same as on the real path alone."""
    assert validate(*args) == validate(*args, real=True)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab_Z19x\u00e9", max_size=10))
def test_the_lite_aliases_are_pydantics(name: str) -> None:
    """to_camel spells pydantic's regular expressions out with string methods; any snake_case-ish name gets the
    same alias (the generated corpus meets the models' own field names only)."""
    from pydantic.alias_generators import to_camel as pydantic_to_camel

    from alicerce.spec.lite import to_camel

    assert to_camel(name) == pydantic_to_camel(name)
