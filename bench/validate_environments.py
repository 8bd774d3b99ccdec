"""Benchmark: `validate` time against the number of environments (issue 22, defect 7).

Each environment's spec holds every environment's section, so a check that reads the whole spec
per environment is quadratic: 2,000 environments once took 150 s. This builds the reference spec
with N copies of its prod environment (its sites, no overrides) and times a full in-process
check for growing N; time per environment should stay flat. Exits 1 when the time per
environment at the largest N is over twice that at the smallest. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def spec_with_environments(count: int, reference: str | None = None) -> str:
    """The reference spec with ``count`` more environments, each a copy of prod's sites."""
    text = reference if reference is not None else (ROOT / "platform.yaml").read_text("utf-8")
    start = text.index("  prod:\n")
    end = text.index("\nnodePools:")
    prod = text[start:end] + "\n"
    copies = "".join(re.sub(r"^  prod:\n", f"  prod-{i:05d}:\n", prod) for i in range(count))
    return text[:start] + copies + text[start:]


def seconds(count: int) -> float:
    from alicerce.rules.validate import check
    from alicerce.spec.loader import load_text

    document = load_text(spec_with_environments(count), "platform.yaml")
    started = time.perf_counter()
    check(document, on=datetime.date(2026, 12, 2))
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[150, 300, 600, 1200])
    args = parser.parse_args()
    seconds(1)  # imports, catalog and model build out of the figures
    per_env = []
    for count in args.counts:
        took = seconds(count)
        per_env.append(took / count)
        print(f"{count:6d} environments: {took:7.2f} s  ({took / count * 1000:6.2f} ms per environment)")
    ok = per_env[-1] <= 2 * per_env[0]
    print("target: time per environment flat (at most 2x from the smallest to the largest N):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
