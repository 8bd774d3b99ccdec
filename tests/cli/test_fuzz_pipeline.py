"""The numeric and string fuzz of issue 22 (defect 5): no spec value ends in a traceback.

A security review replaced 1,565 values of the reference spec by extremes and found 105
tracebacks of five kinds. This walks the reference spec's tree, picks one leaf (any number or
text, wherever it sits), replaces it by an extreme or hostile value (0, -1, huge and 400-digit
integers, 1e400, .inf, .nan, empty and very long text, values of the wrong type) and runs the
commands a user runs, in-process, through the CLI's own boundary (:func:`alicerce.cli.run`,
whose ``user_errors`` decorator turns user mistakes into exit 2). Every run must exit 0 or 2:
any other exception escapes ``run`` and fails the test with its traceback.

Bounded time: a fixed number of examples and, under CI (``CI=true``), derandomized so that a
failure is the same on every run. ``ALICERCE_FUZZ_EXAMPLES`` scales the examples up for a
longer hunt.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alicerce.cli import build_app, run
from tests.conftest import ROOT

REFERENCE: dict[str, Any] = yaml.safe_load((ROOT / "platform.yaml").read_text("utf-8"))
Leaf = tuple[str | int, ...]


def leaves(node: Any, path: Leaf = ()) -> list[Leaf]:
    """The path of every number, text, boolean or null in the tree (mapping keys are not leaves)."""
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in leaves(value, (*path, key))]
    if isinstance(node, list):
        return [leaf for index, value in enumerate(node) for leaf in leaves(value, (*path, index))]
    return [path]


LEAVES = leaves(REFERENCE)

HOSTILE: list[Any] = [
    0,
    -1,
    1,
    2**31,
    2**63,
    2**64 + 1,
    -(2**63),
    10**400,
    -(10**400),
    float("inf"),
    float("-inf"),
    float("nan"),
    1e-300,
    -0.0,
    1e308,
    "1e400",
    "1e400B",
    "1e400GBps",
    "1e400d",
    "9" * 400,
    "9" * 400 + "TiB",
    "0B",
    "0GBps",
    "0s",
    "-1",
    ".inf",
    "",
    " ",
    "x" * 5000,
    "\u00e9" * 300,
    "$(id)",
    "{{ 7 * 7 }}",
    "a\nb",
    True,
    False,
    None,
    [],
    {},
    [1, 2],
    {"a": 1},
]
values = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)


def mutate(path: Leaf, value: Any) -> str:
    """The reference spec with the leaf at ``path`` replaced by ``value``, as YAML text."""
    tree = yaml.safe_load(yaml.safe_dump(REFERENCE))  # a deep copy
    node = tree
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, width=10_000)


def environment(path: Leaf) -> str:
    """The environment a leaf affects most: its own under environments, else prod (every section)."""
    return str(path[1]) if path[0] == "environments" and len(path) > 1 else "prod"


def cli(*args: str) -> int:
    """Exit code of one in-process CLI run; anything but a user error escapes as an exception."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = run(build_app(), list(args))
    assert code in (0, 2), f"alicerce {' '.join(args)} exited {code}"
    return code


EXAMPLES = int(os.environ.get("ALICERCE_FUZZ_EXAMPLES", "0"))
CI = os.environ.get("CI", "").lower() == "true"


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=EXAMPLES or examples,
        deadline=None,
        derandomize=CI,
        database=None,  # a fixed budget of examples: no replay database growing between runs
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "platform.yaml"
    path.write_text(text, "utf-8")
    return path


def test_the_unmutated_tree_is_the_valid_reference(tmp_path: Path) -> None:
    """The fuzz starts from a valid spec: a YAML round trip of the reference changes nothing."""
    spec = spec_file(tmp_path, yaml.safe_dump(REFERENCE, sort_keys=False, allow_unicode=True, width=10_000))
    assert cli("validate", str(spec)) == 0
    assert len(LEAVES) > 200


@fuzz_settings(60)
@given(path=st.sampled_from(LEAVES), value=values)
def test_validate_show_and_plan_never_crash(path: Leaf, value: Any, tmp_path: Path) -> None:
    spec = spec_file(tmp_path, mutate(path, value))
    env = environment(path)
    if cli("validate", str(spec), "--env", env) == 0:
        cli("show", str(spec), "--env", env, "--format", "json")
        assert cli("plan", str(spec), "--env", env, "--format", "json") in (0, 2)


@fuzz_settings(6)
@given(path=st.sampled_from(LEAVES), value=values)
def test_generate_never_crashes(path: Leaf, value: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    spec = spec_file(folder, mutate(path, value))
    code = cli("generate", str(spec), "--env", environment(path), "--out", str(folder / "out"))
    assert code == 2 or (folder / "out" / ".alicerce" / "manifest.json").is_file()
