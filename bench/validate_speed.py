"""Benchmark: `alicerce validate platform.yaml` against the floor.

Targets (issue: foundation): under 0.5 s wall on a 2-core machine, and within 3x of the floor,
where the floor is Python start-up plus a libyaml parse of the same file. Prints the medians and
exits 1 when a target is missed. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def median_seconds(command: list[str], runs: int) -> float:
    subprocess.run(command, cwd=ROOT, capture_output=True, check=False)  # warm the OS file cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="platform.yaml")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()

    floor_code = f"import yaml; yaml.load(open({args.spec!r}), Loader=yaml.CSafeLoader)"
    floor = median_seconds([sys.executable, "-c", floor_code], args.runs)
    validate = median_seconds([str(BIN / "alicerce"), "validate", args.spec], args.runs)
    ratio = validate / floor
    print(f"floor (python + libyaml parse): {floor * 1000:7.1f} ms")
    print(f"alicerce validate {args.spec}: {validate * 1000:7.1f} ms  ({ratio:.1f}x the floor)")
    ok = validate < 0.5 and ratio <= 3.0
    print("targets: < 500 ms and <= 3.0x the floor:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
