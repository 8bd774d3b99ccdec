"""Benchmark: planning 200 workloads must take under 1 s (issues: workload-driven sizing; issue 15).

Builds the reference platform with 200 synthetic workloads (a mix of training, fine-tuning,
inference, batch inference and data prep; every other one growing 20% a quarter) and times
`plan_platform` over it, best of 5 runs: placement over every eligible pool, the throughput model
and the roofline, prices and the owned pools' TCO, showback, and the 8-quarter growth forecast.
The floor is loading and validating the same spec (what planning starts from); the ratio to it is
printed.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from alicerce.plan.platform import plan_platform  # noqa: E402
from alicerce.rules.validate import validated  # noqa: E402
from alicerce.spec.loader import load_text  # noqa: E402

KINDS = [
    {"kind": "training", "model": {"parameters": "13B"}, "tokens": "500B", "deadline": "20d"},
    {"kind": "fine-tuning", "method": "lora", "model": {"parameters": "8B"}, "tokens": "1B"},
    {"kind": "inference", "model": {"parameters": "8B"}, "precision": "fp8",
     "traffic": {"peakRps": 5, "inputTokens": 800, "outputTokens": 200}},
    {"kind": "batch-inference", "model": {"parameters": "7B"}, "hoursPerDay": 6},
    {"kind": "data-prep", "dataset": {"size": "2TiB"}},
]  # fmt: skip


def synthetic(count: int) -> str:
    spec = yaml.safe_load((ROOT / "platform.yaml").read_text())
    teams = [t["name"] for t in spec["tenancy"]["teams"]]
    spec["workloads"] = [
        {"name": f"w{i:03d}", "team": teams[i % len(teams)], **KINDS[i % len(KINDS)], **({"growth": {"perQuarter": 0.2}} if i % 2 else {})}
        for i in range(count)
    ]
    spec["monitoring"]["slos"] = []
    return yaml.safe_dump(spec, sort_keys=False)


def main() -> int:
    text = synthetic(200)
    platform = validated(load_text(text, "synthetic.yaml"), "prod")
    floors, times = [], []
    for _ in range(5):  # alternating: the floor, then the plan
        start = time.perf_counter()
        validated(load_text(text, "synthetic.yaml"), "prod")
        floors.append(time.perf_counter() - start)
        start = time.perf_counter()
        plan = plan_platform(platform)
        times.append(time.perf_counter() - start)
    best = min(times)
    floor = statistics.median(floors)
    print(f"plan_platform over {len(plan.workloads)} workloads: best {best * 1000:.0f} ms, median {statistics.median(times) * 1000:.0f} ms")
    ratio = statistics.median(times) / floor
    print(f"floor (loading and validating the same spec): {floor * 1000:.0f} ms; ratio to the floor {ratio:.1f}x")
    ok = best < 1.0
    print("target: < 1000 ms:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
