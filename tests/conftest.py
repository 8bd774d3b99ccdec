"""Shared test helpers: paths, a fixed date, and spec loading."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
TODAY = datetime.date(2026, 12, 2)

# waiver expiry is checked against this date in every test, including CLI subprocesses
os.environ["ALICERCE_TODAY"] = TODAY.isoformat()
# the validate result cache of the tests lives and dies with the test run
os.environ["ALICERCE_CACHE_DIR"] = tempfile.mkdtemp(prefix="alicerce-test-cache-")


@pytest.fixture
def root() -> Path:
    return ROOT


ALICERCE = Path(sys.executable).with_name("alicerce")


def alicerce(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the installed `alicerce` script as a user would (a subprocess), with extra environment."""
    merged = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run([str(ALICERCE), *args], cwd=cwd, capture_output=True, text=True, env=merged, check=False, timeout=timeout)
