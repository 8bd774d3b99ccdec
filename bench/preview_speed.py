"""Benchmark: `alicerce preview` (the Pulumi program under the mock engine), wall-clock.

Targets (issue 3): the reference platform's prod environment under 6 s wall, and a synthetic
environment of about 3,000 resources under 25 s. Both run the real CLI in a subprocess
(`alicerce preview --env ENV SPEC --format json`), so Python start-up and imports are included. The
floor is a cold `alicerce validate` of the same spec (a preview validates first); the ratio to it is
printed. Prints the figures and exits 1 when a target is missed. Not part of `make test`; run it with `make bench`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
ALICERCE = Path(sys.executable).parent / "alicerce"


def synthetic_spec(pools: int, buckets: int) -> dict[str, Any]:
    """The reference platform with many more CPU pools and object tiers in prod (about 2 and 8 resources each)."""
    data: dict[str, Any] = yaml.safe_load((ROOT / "platform.yaml").read_text())
    for i in range(pools):
        data["nodePools"].append(
            {
                "name": f"cpu-{i:04d}",
                "site": "aws",
                "purpose": "data-prep",
                "aws": {"instanceType": "m7i.2xlarge", "additionalInstanceTypes": ["m7i.4xlarge"], "capacityType": "spot"},
                "scaling": {"min": 0, "max": 4},
            }
        )
    for i in range(buckets):
        data["storage"].append({"name": f"bucket-{i:04d}", "class": "object", "purpose": "datasets", "site": "aws", "retention": "90d"})
    return data


def run(spec: Path, env: str) -> tuple[float, int]:
    start = time.perf_counter()
    out = subprocess.run(
        [str(ALICERCE), "preview", "--env", env, str(spec), "--format", "json"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"preview failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return elapsed, len(json.loads(out.stdout)["resources"])


def validate_seconds(spec: Path) -> float:
    """The floor: a preview validates the spec first, so a cold `alicerce validate` of it is the least it can cost."""
    start = time.perf_counter()
    env = {**os.environ, "ALICERCE_NO_CACHE": "1"}
    subprocess.run([str(ALICERCE), "validate", str(spec)], cwd=ROOT, capture_output=True, check=False, env=env)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    failed = False

    times, count = zip(*(run(ROOT / "platform.yaml", "prod") for _ in range(args.runs)), strict=True)
    prod = statistics.median(times)
    floor = statistics.median(validate_seconds(ROOT / "platform.yaml") for _ in range(args.runs))
    ok = prod < 6.0
    failed |= not ok
    print(f"reference prod: {count[0]} resources, median {prod:.2f} s wall over {args.runs} runs (target < 6 s) {'ok' if ok else 'MISSED'}")
    print(f"floor (a cold `alicerce validate` of the same spec): {floor:.2f} s; ratio to the floor {prod / floor:.1f}x")

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "synthetic.yaml"
        spec.write_text(yaml.safe_dump(synthetic_spec(pools=260, buckets=300), sort_keys=False))
        elapsed, n = run(spec, "prod")
    ok = elapsed < 25.0 and n >= 3000
    failed |= not ok
    verdict = "ok" if ok else "MISSED"
    print(f"synthetic prod: {n} resources, {elapsed:.2f} s wall, {n / elapsed:.0f} resources/s (target < 25 s for >= 3,000) {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
