"""Benchmark: every kind of hostile or broken spec is rejected, with a located error, in under 1 s.

Each case is written to a temporary file and checked in-process (load + validate) the way
`alicerce validate` does it; the time includes reading the file. The floor is checking the valid
reference spec the same way: each case prints its ratio to it (a hostile file should cost no more
than an ordinary one). Exits 1 when a case is slower than 1 s or is not rejected.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from alicerce.rules.validate import check  # noqa: E402
from alicerce.spec.errors import SpecError, SpecInvalid  # noqa: E402
from alicerce.spec.loader import MAX_BYTES, load_file  # noqa: E402


def billion_laughs() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    return ("\n".join(lines) + "\n").encode()


REFERENCE = (ROOT / "platform.yaml").read_bytes()
CASES: dict[str, bytes] = {
    "syntax error": b"apiVersion: alicerce.dev/v1\nkind: Platform\nmetadata: {name: x\n",
    "duplicate keys": REFERENCE + b"\nkind: Platform\n",
    "unknown keys and wrong types (reference, mangled)": REFERENCE.replace(b"instanceType", b"instanceTyp").replace(
        b"max: 16", b"max: many"
    ),
    "empty file": b"",
    "non-UTF-8 bytes": b"apiVersion: alicerce.dev/v1\nkind: Pl\xe4tform\n",
    "python tag": b"a: !!python/object/apply:os.system ['true']\n",
    "billion laughs": billion_laughs(),
    "deep nesting (100k brackets)": b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "deep nesting (block maps)": "".join(f"{'  ' * i}k{i}:\n" for i in range(2000)).encode(),
    "file over 10 MiB": b"# " + b"x" * (MAX_BYTES + 10) + b"\n",
    "100k keys (over the value cap)": b"".join(b"k%d: 1\n" % i for i in range(100_000)),
    "20k unknown keys (under the value cap)": b"".join(b"k%d: 1\n" % i for i in range(20_000)),
    "9.9 MiB of comments": b"# " + b"x" * (MAX_BYTES - 100_000) + b"\n",
    "9.9 MiB single string": b"a: '" + b"x" * (MAX_BYTES - 100_000) + b"'\n",
}


def timed_check(path: Path) -> tuple[float, list[SpecError]]:
    start = time.perf_counter()
    try:
        errors = check(load_file(path, "spec.yaml")).errors
    except SpecInvalid as exc:
        errors = exc.errors
    return time.perf_counter() - start, errors


def main() -> int:
    worst = 0.0
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.yaml"
        # the floor: checking the valid reference spec the same way (warm), median of 5
        path.write_bytes(REFERENCE)
        timed_check(path)
        floor = statistics.median(timed_check(path)[0] for _ in range(5))
        for name, content in CASES.items():
            path.write_bytes(content)
            elapsed, errors = timed_check(path)
            worst = max(worst, elapsed)
            first = errors[0].render() if errors else "NOT REJECTED"
            ok = ok and bool(errors) and elapsed < 1.0
            print(f"{elapsed * 1000:7.1f} ms  {elapsed / floor:5.1f}x  {name:<50} {first[:100]}")
    print(f"floor (checking the valid reference spec in-process): {floor * 1000:.1f} ms")
    print(f"slowest: {worst * 1000:.0f} ms, ratio to the floor {worst / floor:.1f}x")
    print("target: < 1000 ms each, every case rejected:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
