"""Shorthands people write in specs, parsed into typed values.

Each ``parse_*`` function accepts what a person would write and raises ``ValueError`` with a
message that says what was expected. The ``Annotated`` types below plug them into pydantic and
give the JSON Schema the same accepted forms.
"""

from __future__ import annotations

import decimal
import ipaddress
import itertools
import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, SerializationInfo, WithJsonSchema

_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"

_BYTE_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "PiB": 2**50,
}
_BYTES = re.compile(rf"^{_NUMBER}\s*(?P<unit>[KMGTP]i?B|B)?$")

# bytes per second: B = byte, b = bit; "GBps" and "GB/s" are the same thing.
_RATE = re.compile(rf"^{_NUMBER}\s*(?P<unit>[KMGT]i?[Bb])(?:ps|/s)$")

_COUNT_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_COUNT = re.compile(rf"^{_NUMBER}\s*(?P<unit>[KMBGT]?)$")

_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h|d|w))+$")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w)")


MAX_BYTES = 2**60
"""The largest size a spec may write: 1 EiB, above the largest file systems built (~700 PB of Lustre)."""
MAX_BYTES_PER_SECOND = 10**15
"""The largest rate: 1 PB/s, above the fastest parallel file systems (a few TB/s) and any link."""
MAX_COUNT = 10**21
"""The largest count (parameters, tokens): a zettatoken; each field sets its own, lower, bound."""
MAX_SECONDS = 100 * 365 * 86400
"""The longest duration: a century (retentions and deadlines are days to years)."""


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"a number of {len(str(abs(value)))} digits"
    return repr(value)


def _scaled(number: Decimal, scale: int | Decimal, divisor: int = 1) -> Decimal:
    """``number * scale / divisor``; ``number`` itself where that leaves Decimal's exponent range
    (1e999999999PiB): such a number is over every bound either way."""
    try:
        return number * scale / divisor
    except decimal.Overflow:
        return number


def _bounded(number: Decimal, maximum: int, what: str, largest: str, value: Any) -> Decimal:
    """``number`` if finite, not negative and at most ``maximum``; else a ValueError saying which.

    Checked on the Decimal before any conversion: ``float("9" * 400)`` is inf, ``int(inf)`` and
    ``int(10**400 / 2**30)`` overflow, and ``round(Decimal("1e999999999"))`` builds a billion digits.
    """
    shown = f'"{_short(value)}"' if isinstance(value, str) else _show(value)
    if not number.is_finite():
        raise ValueError(f"{what} must be a finite number, got {shown}")
    if number < 0:
        raise ValueError(f"{what} cannot be negative")
    if number > maximum:
        raise ValueError(f"{what} is at most {largest}, got {shown}")
    return number


def parse_bytes(value: Any) -> int:
    """``48TiB`` -> 52776558133248; plain numbers are bytes."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 48TiB or 500GB")
    if isinstance(value, (int, float)):
        return int(_bounded(Decimal(value), MAX_BYTES, "a size", "1EiB", value))
    if isinstance(value, str):
        match = _BYTES.match(value.strip())
        if match:
            return int(_bounded(_scaled(Decimal(match["num"]), _BYTE_UNITS[match["unit"] or ""]), MAX_BYTES, "a size", "1EiB", value))
    raise ValueError(f"expected a size such as 48TiB, 500GB or 1.2PB, got {_show(value)}")


def parse_rate(value: Any) -> float:
    """``12GBps`` -> 1.2e10 bytes/s; ``400Gbps`` -> 5e10 bytes/s; plain numbers are bytes/s."""
    if isinstance(value, bool):
        raise ValueError("expected a rate such as 12GBps or 400Gbps")
    if isinstance(value, (int, float)):
        return float(_bounded(Decimal(value), MAX_BYTES_PER_SECOND, "a rate", "1PBps", value))
    if isinstance(value, str):
        match = _RATE.match(value.strip())
        if match:
            unit = match["unit"]
            scale = _BYTE_UNITS[unit[:-1] + "B"]
            bits = unit.endswith("b")
            rate = _scaled(Decimal(match["num"]), scale, 8 if bits else 1)
            return float(_bounded(rate, MAX_BYTES_PER_SECOND, "a rate", "1PBps", value))
    raise ValueError(f"expected a rate such as 12GBps (bytes) or 400Gbps (bits), got {_show(value)}")


def parse_count(value: Any) -> int:
    """``70B`` / ``7e10`` / ``70000000000`` -> 70000000000; ``2T`` -> 2e12; ``4M`` -> 4e6."""
    if isinstance(value, bool):
        raise ValueError("expected a count such as 70B, 2T or 7e10")
    if isinstance(value, (int, float)):
        return round(_bounded(Decimal(value), MAX_COUNT, "a count", "10^21", value))
    if isinstance(value, str):
        match = _COUNT.match(value.strip())
        if match:
            return round(_bounded(_scaled(Decimal(match["num"]), _COUNT_SUFFIX[match["unit"]]), MAX_COUNT, "a count", "10^21", value))
    raise ValueError(f"expected a count such as 70B, 2T, 4M or 7e10, got {_show(value)}")


def parse_duration(value: Any) -> float:
    """``30d`` / ``2h30m`` / ``500ms`` -> seconds; plain numbers are seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30d, 2h or 500ms")
    if isinstance(value, (int, float)):
        return float(_bounded(Decimal(value), MAX_SECONDS, "a duration", "100 years", value))
    if isinstance(value, str) and _DURATION.match(value.strip()):
        parts = _DURATION_PART.findall(value)
        exact = max((_scaled(Decimal(n), Decimal(str(_DURATION_UNITS[u]))) for n, u in parts), default=Decimal(0))
        exact = exact if exact > MAX_SECONDS else sum((Decimal(n) * Decimal(str(_DURATION_UNITS[u])) for n, u in parts), Decimal(0))
        _bounded(exact, MAX_SECONDS, "a duration", "100 years", value)
        return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    raise ValueError(f"expected a duration such as 30d, 2h30m or 500ms, got {_show(value)}")


def parse_cidr(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if not isinstance(value, str):
        raise ValueError(f"expected a CIDR such as 10.0.0.0/16, got {_show(value)}")
    try:
        return ipaddress.ip_network(value.strip(), strict=True)
    except ValueError as exc:
        if "host bits set" in str(exc):
            loose = ipaddress.ip_network(value.strip(), strict=False)
            raise ValueError(f"{value} has host bits set; the network is {loose}") from None
        raise ValueError(f"expected a CIDR such as 10.0.0.0/16, got {_show(value)}") from None


_RANGE = re.compile(r"\[(\d+):(\d+)\]")
_HOST_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

MAX_HOSTS_PER_POOL = 10_000
"""The most hosts one pool may list: a SuperPOD-scale pool is a few hundred to a few thousand."""
MAX_HOSTS_PER_SITE = 50_000
"""The most hosts the pools of one site may list together; the generated inventory stays workable."""


def _ranges(pattern: str) -> list[re.Match[str]]:
    """The ``[start:end]`` ranges of a host pattern, checked to be well formed and forward."""
    ranges = list(_RANGE.finditer(pattern))
    if "[" in _RANGE.sub("", pattern) or "]" in _RANGE.sub("", pattern):
        raise ValueError(f'malformed host range in "{pattern}"; write it as gpu-[001:032].example.com')
    for match in ranges:
        if int(match.group(2)) < int(match.group(1)):
            raise ValueError(f"host range [{match.group(1)}:{match.group(2)}] runs backwards")
    return ranges


def count_hosts(pattern: str) -> int:
    """How many hosts ``pattern`` names, from its bracket bounds alone (nothing is expanded).

    Several ranges multiply: ``n-[1:2]-[1:3]`` names 6 hosts.
    """
    count = 1
    for match in _ranges(pattern):
        count *= int(match.group(2)) - int(match.group(1)) + 1
    return count


def expand_hosts(pattern: str) -> list[str]:
    """``gpu-[001:003].dc1`` -> gpu-001.dc1, gpu-002.dc1, gpu-003.dc1 (zero padding kept).

    Several ranges in one pattern expand as a product, left to right. The product is counted
    first: a pattern naming more than :data:`MAX_HOSTS_PER_POOL` hosts is refused unexpanded.
    """
    ranges = _ranges(pattern)
    total = count_hosts(pattern)
    if total > MAX_HOSTS_PER_POOL:
        raise ValueError(f'"{_short(pattern)}" expands to {total:,} hosts, over the {MAX_HOSTS_PER_POOL:,} a pool may have')
    pieces: list[list[str]] = []
    last = 0
    for match in ranges:
        start_text, end_text = match.group(1), match.group(2)
        width = len(start_text) if start_text.startswith("0") else 0
        pieces.append([pattern[last : match.start()]])
        pieces.append([f"{number:0{width}d}" for number in range(int(start_text), int(end_text) + 1)])
        last = match.end()
    pieces.append([pattern[last:]])
    return ["".join(parts) for parts in itertools.product(*pieces)]


def host_pattern_problem(pattern: str) -> str | None:
    """Why the hosts of ``pattern`` are not RFC 1123 host names, or None when they all are.

    Checked on the pattern, before expanding: each range is replaced by its widest number, and
    digits are valid anywhere in a label, so the widest expansion passing means every one does.
    Names must be lowercase too: they become Kubernetes node names.
    """
    try:
        ranges = _ranges(pattern)
    except ValueError:
        return None  # malformed ranges are reported where they are expanded (rule AL220)
    widest = pattern
    for match in reversed(ranges):
        digits = max(len(match.group(1)), len(match.group(2)))
        widest = widest[: match.start()] + "0" * digits + widest[match.end() :]
    # each character as written (a lowercased "À" is "à", which the pattern does not hold: it crashed the sort)
    bad = sorted({c for c in widest if not re.fullmatch(r"[a-z0-9.\-]", c.lower())}, key=widest.index)
    if bad:
        shown = " ".join(f'"{c}"' for c in bad)
        return f'"{_short(pattern)}" is not a host name: {shown} {"is" if len(bad) == 1 else "are"} not allowed'
    if widest != widest.lower():
        return f'"{_short(pattern)}" has uppercase letters; host names become Kubernetes node names, which are lowercase'
    if len(widest) > 253:
        return f'"{_short(pattern)}" makes names of {len(widest)} characters, over 253'
    for label in widest.split("."):
        if not label:
            return f'"{_short(pattern)}" has an empty label (two dots in a row, or a dot at an end)'
        if len(label) > 63:
            return f'"{_short(pattern)}" makes a label of {len(label)} characters, over 63'
        if not _HOST_LABEL.fullmatch(label):
            return f'"{_short(pattern)}" has a label that starts or ends with "-"'
    return None


def _short(text: str, limit: int = 60) -> str:
    """``text``, cut to ``limit`` characters for a message."""
    return text if len(text) <= limit else f"{text[:limit]}..."


# ---------------------------------------------------------------------------------------------
# the other way: base units back to the shorthands people write (`alicerce show` prints these)

HUMAN = {"units": "human"}
"""Serialization context that turns sizes, rates, counts and durations into shorthands: ``model_dump(context=HUMAN)``."""


def _number(value: Decimal) -> str:
    """``Decimal("200.0")`` -> ``200``; ``Decimal("1.50")`` -> ``1.5``."""
    return f"{value.normalize():f}"


def _exact(value: float, units: dict[str, int], suffix: str = "", lossy: bool = True) -> str | None:
    """The shortest ``<n><unit>`` with at most two decimals that is exact (the larger unit on a tie);
    without one, the largest unit rounded to two decimals, or None when not ``lossy``."""
    number = Decimal(str(value))
    exact = []
    for unit, size in units.items():
        scaled = number / size
        if number >= size and (scaled * 100) % 1 == 0:
            exact.append((len(_number(scaled)), -size, f"{_number(scaled)}{unit}{suffix}"))
    if exact:
        return min(exact)[2]
    fitting = [(size, unit) for unit, size in units.items() if number >= size]
    if not lossy or not fitting:
        return None
    size, unit = max(fitting)
    return f"{_number(round(number / size, 2))}{unit}{suffix}"


def format_bytes(value: int) -> str:
    """``214748364800`` -> ``200GiB``; ``500000000000`` -> ``500GB``."""
    return _exact(value, {k: v for k, v in _BYTE_UNITS.items() if k}) or f"{value}B"


def format_rate(value: float) -> str:
    """``1.2e10`` bytes/s -> ``12GBps``."""
    return _exact(value, {k: v for k, v in _BYTE_UNITS.items() if k}, "ps") or f"{_number(Decimal(str(value)))}Bps"


def format_count(value: int) -> str:
    """``70000000000`` -> ``70B``; a count with no exact shorthand stays a plain number."""
    units = {k: v for k, v in _COUNT_SUFFIX.items() if k and k != "G"}
    return _exact(value, units, lossy=False) or str(value)


def format_duration(value: float) -> str:
    """``2592000`` -> ``30d``; ``9000`` -> ``2h30m``; ``0.5`` -> ``500ms``."""
    millis = round(value * 1000)
    if millis == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def _human(plain: Any, human: Any) -> PlainSerializer:
    """Base units by default (JSON, the resolved spec file); shorthands under the ``HUMAN`` context."""

    def serialize(value: Any, info: SerializationInfo) -> Any:
        context = info.context
        return human(value) if isinstance(context, dict) and context.get("units") == "human" else plain(value)

    return PlainSerializer(serialize, return_type=Any)


def _schema(pattern: str, example: str, maximum: int, number: str = "number") -> WithJsonSchema:
    """Text the parser reads, or a plain number up to ``maximum`` (the parser bounds text to the same)."""
    return WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": pattern},
                {"type": number, "minimum": 0, "maximum": maximum},
            ],
            "examples": [example],
        }
    )


ByteSize = Annotated[
    int,
    BeforeValidator(parse_bytes),
    _schema(r"^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\s*([KMGTP]i?B|B)?$", "48TiB", MAX_BYTES),
    _human(int, format_bytes),
]
"""A size in bytes, written as ``48TiB``, ``500GB`` or a plain number of bytes; finite, at most 1EiB."""

Rate = Annotated[
    float,
    BeforeValidator(parse_rate),
    _schema(r"^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\s*[KMGT]i?[Bb](ps|/s)$", "12GBps", MAX_BYTES_PER_SECOND),
    _human(float, format_rate),
]
"""Bytes per second, written as ``12GBps`` (bytes) or ``400Gbps`` (bits); finite, at most 1PBps."""

Count = Annotated[
    int,
    BeforeValidator(parse_count),
    _schema(r"^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\s*[KMBGT]?$", "70B", MAX_COUNT),
    _human(int, format_count),
]
"""A large count, written as ``70B``, ``2T``, ``7e10`` or a plain integer; finite, at most 10^21."""

Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    _schema(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h|d|w))+$", "30d", MAX_SECONDS),
    _human(float, format_duration),
]
"""Seconds, written as ``30d``, ``2h30m``, ``500ms`` or a plain number of seconds; finite, at most 100 years."""

Cidr = Annotated[
    ipaddress.IPv4Network | ipaddress.IPv6Network,
    BeforeValidator(parse_cidr),
    WithJsonSchema({"type": "string", "format": "cidr", "examples": ["10.0.0.0/16"]}),
    PlainSerializer(str),
]
"""An IP network in CIDR notation, host bits clear."""
