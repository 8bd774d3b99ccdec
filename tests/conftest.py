"""Shared test helpers: paths, a fixed date, and spec loading."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
TODAY = datetime.date(2026, 12, 2)

# waiver expiry is checked against this date in every test, including CLI subprocesses
os.environ["ALICERCE_TODAY"] = TODAY.isoformat()


@pytest.fixture
def root() -> Path:
    return ROOT
