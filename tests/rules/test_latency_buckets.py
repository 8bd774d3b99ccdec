"""AL323 judges a latency target against the buckets vLLM really exports (review sizreview19 F9).

vLLM's inter-token latency histogram (vllm:inter_token_latency_seconds, formerly vllm:time_per_output_token_seconds)
has the bounds of vllm.v1.metrics.buckets INTER_TOKEN_LATENCY_BUCKETS: 0.01, 0.025, 0.05, ... (docs.vllm.ai
api/vllm/v1/metrics/buckets; the same list in vllm/v1/metrics/loggers.py at 005a810bc40f, vendored in
tests/data/upstream/vllm). 20 ms is a bound of the time-to-first-token histogram, not of this one, so a 20 ms TPOT
target cannot be an exact SLO, and the error names the bounds either side.
"""

from __future__ import annotations

from alicerce.catalog.alerts import TPOT, TTFT, VLLM_TPOT_BUCKETS, VLLM_TTFT_BUCKETS
from alicerce.rules.examples import base_document
from alicerce.rules.validate import check
from alicerce.spec.loader import load_text
from tests.conftest import ROOT, TODAY
from tests.emit.kube.upstream import load


def test_the_rule_reads_the_buckets_vllm_exports() -> None:
    former = load("vllm", "005a810bc40f", "metrics.json")["metrics"]
    latest = load("vllm", "latest-2026-12", "metrics.json")["metrics"]
    assert list(VLLM_TPOT_BUCKETS) == former["vllm:time_per_output_token_seconds"]["buckets"] == latest[TPOT]["buckets"]
    assert list(VLLM_TTFT_BUCKETS) == former[TTFT]["buckets"]
    assert 0.02 not in VLLM_TPOT_BUCKETS and 0.02 in VLLM_TTFT_BUCKETS


def test_a_20ms_time_per_output_token_target_names_the_bounds_either_side() -> None:
    text = (ROOT / "platform.yaml").read_text()
    assert "timePerOutputToken: {p99: 50ms}" in text
    errors = check(load_text(text.replace("timePerOutputToken: {p99: 50ms}", "timePerOutputToken: {p99: 20ms}", 1), "p.yaml"))
    (error,) = [e for e in errors.errors if e.rule == "AL323"]
    assert "no bucket at 20 ms (its nearest bounds are 10ms and 25ms)" in error.render()
    # 25 ms is a bound: no finding
    at_bound = check(load_text(text.replace("timePerOutputToken: {p99: 50ms}", "timePerOutputToken: {p99: 25ms}", 1), "p.yaml"))
    assert not [e for e in at_bound.errors if e.rule == "AL323"]
    assert check(base_document(), on=TODAY).errors == []
