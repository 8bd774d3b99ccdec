"""FSx for Lustre sizing: valid steps, throughput met, cheapest option chosen."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alicerce.catalog import load_catalog
from alicerce.catalog.fsx import GIB, choose_fsx, is_valid_capacity, options

FSX = load_catalog().fsx


def test_reference_datasets_tier() -> None:
    plan = choose_fsx(FSX, "PERSISTENT_2", "SSD", 48 * 2**40, 12e9)
    assert plan is not None
    assert (plan.capacity_gib, plan.per_unit_throughput) == (50400, 250)
    assert plan.throughput_mbps >= 12000


def test_scratch_types_take_no_per_unit_value() -> None:
    plan = choose_fsx(FSX, "SCRATCH_2", "SSD", 100 * GIB, None)
    assert plan is not None and plan.per_unit_throughput is None and plan.capacity_gib == 1200


def test_hdd_only_with_persistent_1() -> None:
    assert choose_fsx(FSX, "PERSISTENT_2", "HDD", 10 * GIB, None) is None
    assert choose_fsx(FSX, "PERSISTENT_1", "HDD", 7000 * GIB, None, per_unit=12).capacity_gib == 12000  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("deployment", "gib", "ok"),
    [
        ("SCRATCH_1", 3600, True),
        ("SCRATCH_1", 4800, False),
        ("PERSISTENT_2", 1200, True),
        ("PERSISTENT_2", 3600, False),
        ("PERSISTENT_2", 4800, True),
    ],
)
def test_capacity_steps(deployment: str, gib: int, ok: bool) -> None:
    assert any(is_valid_capacity(o, gib) for o in options(FSX, deployment, "SSD")) is ok


@given(
    st.sampled_from(["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]),
    st.integers(min_value=1, max_value=2**50),
    st.one_of(st.none(), st.floats(min_value=1e6, max_value=1e12)),
)
def test_plans_hold_the_data_meet_the_throughput_and_use_valid_sizes(deployment: str, size: int, rate: float | None) -> None:
    plan = choose_fsx(FSX, deployment, "SSD", size, rate)
    assert plan is not None
    assert plan.capacity_gib * GIB >= size
    assert rate is None or plan.throughput_mbps * 1e6 >= rate * 0.999999
    assert any(is_valid_capacity(o, plan.capacity_gib) for o in options(FSX, deployment, "SSD", plan.per_unit_throughput))
