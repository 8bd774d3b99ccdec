"""validate is linear in the number of environments (issue 22, defect 7: 2,000 took 150 s).

Each environment's spec holds every environment's section, so any check that reads the whole
spec per environment grows with the square of their number. The work is counted, not timed:
every Python function call made by a full check, at 20, 40 and 80 environments. Linear work
adds the same amount for each environment; quadratic work adds four times more from 40 to 80
than from 20 to 40 (bench/validate_environments.py times it).
"""

from __future__ import annotations

import re
import sys
from types import FrameType
from typing import Any

from alicerce.rules.validate import check
from alicerce.spec.loader import load_text
from tests.conftest import ROOT, TODAY

REFERENCE = (ROOT / "platform.yaml").read_text("utf-8")


def with_environments(count: int) -> str:
    """The reference spec with ``count`` more environments, each a copy of prod's sites."""
    start, end = REFERENCE.index("  prod:\n"), REFERENCE.index("\nnodePools:")
    prod = REFERENCE[start:end] + "\n"
    copies = "".join(re.sub(r"^  prod:\n", f"  prod-{i:03d}:\n", prod) for i in range(count))
    return REFERENCE[:start] + copies + REFERENCE[start:]


def calls(count: int) -> int:
    """Python function calls made by checking the spec with ``count`` more environments."""
    document = load_text(with_environments(count), "platform.yaml")
    made = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal made
        if event == "call":
            made += 1

    sys.setprofile(profile)
    try:
        checked = check(document, on=TODAY)
    finally:
        sys.setprofile(None)
    assert checked.valid, [e.render() for e in checked.errors[:3]]
    assert len(checked.environments) == count + 2
    return made


def test_validate_work_grows_linearly_with_environments() -> None:
    calls(1)  # caches (catalog, models) out of the count
    small, medium, large = calls(20), calls(40), calls(80)
    first, second = medium - small, large - medium  # the work of 20, then of 40 more environments
    assert first > 0
    # linear: second == 2 * first; quadratic: second == 4 * first
    assert second <= 2.5 * first, f"20->40 environments: {first:,} calls; 40->80: {second:,} ({second / first:.1f}x)"
