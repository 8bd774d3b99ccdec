"""Benchmark: `alicerce validate platform.yaml` against the floor, whole processes side by side.

The floor is Python start-up plus a libyaml parse of the same file. Each run is a pair, floor then
validate, taken in turn so that both see the same machine load; the ratio is the median of the
pairs' ratios (at least 7 pairs).

- cold: the spec was just edited (each run appends a comment), the way editors, pre-commit and CI
  meet it: the result cache misses, the checked catalog is read back from the cache folder.
- no cache: ``ALICERCE_NO_CACHE=1``, nothing cached at all (the first run after an upgrade).
- unchanged spec: the result cache replays the stored result.

Modules run from their compiled bytecode, as an installed package does (PYTHONDONTWRITEBYTECODE is
dropped for the runs). Targets (issue 25): cold <= 3x the floor and <= 200 ms; unchanged <= 3x.
Prints every ratio and exits 1 when a target is missed. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def seconds(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    return elapsed


def pairs(
    floor: list[str], command: list[str], env: dict[str, str], runs: int, before: Callable[[int], None]
) -> tuple[float, float, float]:
    """Median floor, median command and median per-pair ratio over ``runs`` alternating pairs (after one warm-up pair)."""
    floors, times = [], []
    for i in range(runs + 1):
        before(i)
        f = seconds(floor, env)
        t = seconds(command, env)
        if i:
            floors.append(f)
            times.append(t)
    return statistics.median(floors), statistics.median(times), statistics.median(t / f for f, t in zip(floors, times, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="platform.yaml")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    runs = max(args.runs, 7)
    text = (ROOT / args.spec).read_text(encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "ALICERCE_NO_CACHE")}

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "platform.yaml"
        spec.write_text(text, encoding="utf-8")
        floor = [sys.executable, "-c", f"import yaml; yaml.load(open({str(spec)!r}), Loader=yaml.CSafeLoader)"]
        command = [str(BIN / "alicerce"), "validate", str(spec)]
        cached = {**env, "ALICERCE_CACHE_DIR": str(Path(tmp) / "cache")}

        def edit(i: int) -> None:
            spec.write_text(f"{text}# edit {i}\n", encoding="utf-8")

        def same(_: int) -> None:
            pass

        rows = {
            "cold (spec edited, catalog cached)": pairs(floor, command, cached, runs, edit),
            "no cache at all (ALICERCE_NO_CACHE=1)": pairs(floor, command, {**env, "ALICERCE_NO_CACHE": "1"}, runs, edit),
            "unchanged spec (result cache)": pairs(floor, command, cached, runs, same),
        }
    for name, (f, t, ratio) in rows.items():
        print(f"validate, {name:<38} {t * 1000:7.1f} ms  floor {f * 1000:5.1f} ms  ratio to the floor {ratio:5.1f}x")
    _, cold, cold_ratio = rows["cold (spec edited, catalog cached)"]
    ok = cold_ratio <= 3.0 and cold <= 0.2 and rows["unchanged spec (result cache)"][2] <= 3.0
    print(f"median of {runs} alternating pairs; floor: python start-up + libyaml parse of the same file")
    print("targets: cold <= 3.0x the floor and <= 200 ms; unchanged spec <= 3.0x:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
