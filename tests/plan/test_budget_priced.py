"""PL326 (review obsreview2 DEFECT 9): a team budget over GPU pools the plan cannot price is measured at $0 there."""

from __future__ import annotations

from alicerce.plan.findings import CHECKS, Severity
from alicerce.plan.platform import plan_platform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT, TODAY

LLM = "      quotas: [{pool: train, gpus: 64}]\n"


def findings(quotas: str, budget: str = "{monthlyUsd: 200000, onExhausted: stopAdmitting}") -> list[str]:
    """examples/aws-only.yaml (its Capacity Block pool `train`, p5en.48xlarge in us-west-2, has no price: PL311) with a
    budget on team llm (and the month of retention its guard needs, AL363)."""
    text = (ROOT / "examples" / "aws-only.yaml").read_text()
    assert LLM in text
    apps = "quotas: [{pool: infer, gpus: 24}, "  # infer's 24 GPUs: room for llm's 4 there
    text = (
        text.replace(apps, "quotas: [{pool: infer, gpus: 20}, ")
        .replace(LLM, f"{quotas}      budget: {budget}\n")
        .replace("\nmonitoring:\n", "\nmonitoring:\n  retention: 31d\n", 1)
    )
    rp = validated(load_text(text, "aws-only.yaml"), "prod")
    plan = plan_platform(rp, today=TODAY)
    assert next(p for p in plan.pools if p.name == "train").billed_usd_per_gpu_hour is None
    return [f.message for f in plan.findings if f.check == "PL326" and f.subject == "llm"]


def test_a_budget_only_on_an_unpriced_pool_is_an_error_that_says_it_never_acts() -> None:
    assert CHECKS["PL326"].severity == Severity.ERROR and CHECKS["PL326"].waivable
    assert findings(LLM) == [
        "tenancy.teams[0].budget: its GPU quota is only on 'train', which has no price (PL311): its spend reads $0, so the "
        "budget never alerts nor stops its queue; give 'train' a price (costs.cloud[] usdPerHour for a cloud pool, "
        "costs.onprem for an owned one) or drop the budget"
    ]


def test_a_budget_partly_on_an_unpriced_pool_undercounts_and_a_priced_one_is_quiet() -> None:
    partly = findings("      quotas: [{pool: train, gpus: 56}, {pool: infer, gpus: 4}]\n", "{monthlyUsd: 200000}")
    assert partly == [
        "tenancy.teams[0].budget: its GPUs on 'train', which has no price (PL311), count $0 against the budget; give "
        "'train' a price (costs.cloud[] usdPerHour for a cloud pool, costs.onprem for an owned one) or drop the budget"
    ]
    assert findings("      quotas: [{pool: infer, gpus: 4}]\n") == []
