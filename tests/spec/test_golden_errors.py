"""Golden error files: each ``tests/data/bad/NAME.yaml`` is checked and its rendered errors must
equal ``NAME.expected`` line for line (file names shown relative to tests/data/bad).

To add a case: write NAME.yaml, run ``python -m tests.spec.test_golden_errors NAME`` to print
what alicerce reports now, check every line by hand, and save it as NAME.expected.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from alicerce.rules.validate import check
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import load_file
from tests.conftest import DATA, TODAY

BAD = DATA / "bad"


def render(path: Path) -> list[str]:
    try:
        checked = check(load_file(path, path.name), on=TODAY)
    except SpecInvalid as exc:
        return [e.render() for e in exc.errors]
    return [e.render() for e in checked.errors]


CASES = sorted(p.stem for p in BAD.glob("*.yaml"))


def test_there_are_golden_cases() -> None:
    assert len(CASES) >= 15
    assert sorted(p.stem for p in BAD.glob("*.expected")) == CASES


@pytest.mark.parametrize("name", CASES)
def test_golden(name: str) -> None:
    expected = (BAD / f"{name}.expected").read_text("utf-8").splitlines()
    assert render(BAD / f"{name}.yaml") == expected


if __name__ == "__main__":  # print the current output for a case, to review before saving it
    for case in sys.argv[1:]:
        print("\n".join(render(BAD / f"{case}.yaml")))
