"""Shorthand parsers: what people write, and what they get."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alicerce.spec.units import expand_hosts, parse_bytes, parse_cidr, parse_count, parse_duration, parse_rate


@pytest.mark.parametrize(
    ("text", "value"),
    [("48TiB", 48 * 2**40), ("500GB", 500 * 10**9), ("1.5PiB", int(1.5 * 2**50)), ("1200GiB", 1200 * 2**30), (1024, 1024), ("100B", 100)],
)
def test_bytes(text: object, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("12GBps", 12e9), ("12GB/s", 12e9), ("400Gbps", 50e9), ("500MBps", 500e6), ("1GiBps", 2**30)],
)
def test_rates_bytes_and_bits(text: str, value: float) -> None:
    assert parse_rate(text) == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("70B", 70 * 10**9),
        ("7e10", 70 * 10**9),
        (7e10, 70 * 10**9),
        (70000000000, 70 * 10**9),
        ("2T", 2 * 10**12),
        ("4M", 4 * 10**6),
        ("1.5K", 1500),
    ],
)
def test_counts(text: object, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize(("text", "value"), [("30d", 30 * 86400), ("2h30m", 9000), ("500ms", 0.5), ("1w", 604800), (90, 90)])
def test_durations(text: object, value: float) -> None:
    assert parse_duration(text) == pytest.approx(value)


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        (parse_bytes, "48TBs"),
        (parse_bytes, "-1"),
        (parse_bytes, True),
        (parse_rate, "fast"),
        (parse_rate, "12GB"),
        (parse_count, "lots"),
        (parse_count, -5),
        (parse_duration, "30 days"),
        (parse_duration, "1y"),
    ],
)
def test_rejections_say_what_was_expected(parser: object, text: object) -> None:
    with pytest.raises(ValueError, match=r"expected|negative"):
        parser(text)  # type: ignore[operator]


def test_cidr_with_host_bits_names_the_network() -> None:
    with pytest.raises(ValueError, match=r"the network is 10\.0\.0\.0/16"):
        parse_cidr("10.0.1.0/16")


def test_host_ranges_keep_padding_and_expand_products() -> None:
    assert expand_hosts("gpu-[001:003].dc1") == ["gpu-001.dc1", "gpu-002.dc1", "gpu-003.dc1"]
    assert expand_hosts("r[1:2]-n[1:2]") == ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]
    assert expand_hosts("single.example.com") == ["single.example.com"]
    for bad in ("gpu-[3:1]", "gpu-[1:2", "gpu-[a:b]", "gpu-[1]-x]"):
        with pytest.raises(ValueError, match=r"host range"):
            expand_hosts(bad)
    with pytest.raises(ValueError, match=r"expands to 100,000 hosts, over the 10,000 a pool may have"):
        expand_hosts("gpu-[0:99999]")


@given(st.integers(min_value=0, max_value=10**18))
def test_bytes_round_trip_plain_numbers(value: int) -> None:
    assert parse_bytes(value) == value
    assert parse_bytes(str(value)) == value


@given(st.integers(min_value=0, max_value=9999), st.integers(min_value=0, max_value=200))
def test_host_range_sizes(start: int, length: int) -> None:
    end = min(start + length, start + 9999)
    hosts = expand_hosts(f"n[{start}:{end}]")
    assert len(hosts) == end - start + 1
    assert len(set(hosts)) == len(hosts)
