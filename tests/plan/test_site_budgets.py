"""How a team's budget is split over the sites whose Prometheus each watch a part of it (review obsreview10 F3, F4)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from alicerce.plan.growth import LONGEST_MONTH_HOURS, busy_gpu_hours, peak_month_gpu_hours
from alicerce.plan.platform import SizingPlan, peak_site_spend, plan_platform, quota_worth
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT, TODAY

BUDGET = "budget: {monthlyUsd: 900000, onExhausted: stopAdmitting}"
FT = "  - name: code-assistant-ft\n    kind: fine-tuning\n    team: applied-ml\n"


def research_at_both_sites(budget: int | None = None) -> tuple[ResolvedPlatform, SizingPlan]:
    """The reference platform with its fine-tuning run research's, on train-p5 at aws, three runs a quarter: research
    then plans a month at dc1 (its pretraining run) and one at aws."""
    text = (ROOT / "platform.yaml").read_text()
    assert FT in text and BUDGET in text
    text = text.replace(FT, FT.replace("applied-ml", "research") + "    pool: train-p5\n    runsPerQuarter: 3\n")
    text = text.replace("    tokens: 2B\n    deadline: 2d\n", "    tokens: 100B\n    deadline: 30d\n")
    if budget is not None:
        text = text.replace(BUDGET, f"budget: {{monthlyUsd: {budget}, onExhausted: stopAdmitting}}")
    rp = validated(load_text(text, "platform.yaml"), "prod")
    return rp, plan_platform(rp, today=TODAY)


def peaks(rp: ResolvedPlatform, plan: SizingPlan) -> dict[str, float]:
    resolved = {p.name: p for p in rp.pools}
    return peak_site_spend(list(plan.workloads), list(plan.pools), resolved, 730)["research"]


def test_busiest_months_that_add_up_past_the_budget_split_it_pro_rata_and_say_so() -> None:
    """Review obsreview10 F3: dc1's and aws's busiest months, added up, passed the budget while each alone was under
    it; the split then fell back to what the quota is worth at each site and dc1 watched less than its own run's month,
    so its guard held the run the plan scheduled, and nothing said so. Now each site keeps a share pro rata to its
    busiest month, and PL334 names the month total and the budget that holds it."""
    rp, plan = research_at_both_sites()
    month = peaks(rp, plan)
    assert month["aws"] > 0 and month["dc1"] > 0
    total = month["aws"] + month["dc1"]
    budget = round((max(month.values()) + total) / 2)  # over each site's month, under both together
    rp, plan = research_at_both_sites(budget)
    watched = plan.site_budgets["research"]
    assert sum(watched.values()) == pytest.approx(budget)
    for site in ("aws", "dc1"):
        assert watched[site] == pytest.approx(month[site] * budget / total)
    # the quota-worth split gave dc1 less than this (its quota is worth less an hour than aws's p5 GPUs)
    worth = {"aws": 96 * 6.88, "dc1": 192 * next(p.billed_usd_per_gpu_hour for p in plan.pools if p.name == "onprem-h100")}
    assert watched["dc1"] > budget * worth["dc1"] / sum(worth.values())  # type: ignore[operator]
    [finding] = [f for f in plan.findings if f.check == "PL334"]
    assert finding.subject == "research" and f"add up to ${total:,.0f}, over its ${budget:,.0f} budget" in finding.message
    assert f"raise tenancy.teams[0].budget.monthlyUsd to {math.ceil(total):,}" in finding.message
    assert "budget guard holds the queue" in finding.message
    # a budget that holds both months: each site watches at least its own, and nothing is said
    rp, plan = research_at_both_sites(round(total) + 1000)
    watched = plan.site_budgets["research"]
    assert watched["aws"] >= month["aws"] and watched["dc1"] >= month["dc1"]
    assert sum(watched.values()) == pytest.approx(round(total) + 1000)
    assert not [f for f in plan.findings if f.check == "PL334"]


def test_a_site_the_team_plans_nothing_at_watches_nothing_once_the_budget_is_spoken_for() -> None:
    """The reference research team plans only its dc1 run; a budget under that run's month leaves aws none of it: any
    spend there alerts (and PL334 says so) rather than a share taken from the run."""
    text = (ROOT / "platform.yaml").read_text().replace(BUDGET, "budget: {monthlyUsd: 300000, onExhausted: stopAdmitting}")
    plan = plan_platform(validated(load_text(text, "platform.yaml"), "prod"), today=TODAY)
    assert plan.site_budgets["research"] == {"aws": 0.0, "dc1": pytest.approx(300_000)}
    [finding] = [f.message for f in plan.findings if f.check == "PL334"]
    assert finding.startswith("its busiest month ($381,") and "$0 at aws" in finding and "at 79% of it" in finding
    assert "the guard holds the queue at the first dollar" in finding


def test_a_quarters_runs_back_to_back_fill_the_month() -> None:
    """Review obsreview10 F4: three 20-day runs a quarter, admitted one after another, cover a 31-day month (the end
    of one, the next, the start of the third); the busiest month held 480 GPU-hours a GPU, not 744. One run a quarter
    still fills only its own days, and half a run a quarter (one every two quarters) a whole run's."""
    plan = research_at_both_sites()[1]
    run = next(w for w in plan.workloads if w.name == "llm-pretrain")
    twenty = replace(run, wall_clock_days=20.0, runs_per_quarter=3)
    assert peak_month_gpu_hours(twenty, 8, 730) == 8 * LONGEST_MONTH_HOURS
    assert peak_month_gpu_hours(replace(twenty, runs_per_quarter=1), 8, 730) == 8 * 480
    assert peak_month_gpu_hours(replace(twenty, runs_per_quarter=0.5), 8, 730) == 8 * 480
    assert peak_month_gpu_hours(replace(twenty, wall_clock_days=5.0, runs_per_quarter=6), 8, 730) == 8 * 720
    # review obsreview11 F3: four 30-day runs a quarter overlap (120 days in 91.25): two in flight hold their GPUs at
    # once, up to two 31-day months of them, never less than the average month (4 x 720 / 3 = 960 h a GPU)
    overlapping = replace(twenty, wall_clock_days=30.0, runs_per_quarter=4)
    assert peak_month_gpu_hours(overlapping, 64, 730) == 64 * 2 * LONGEST_MONTH_HOURS
    assert peak_month_gpu_hours(overlapping, 64, 730) > busy_gpu_hours(overlapping, 64, 730)


def test_a_site_with_no_share_keeps_its_zero_and_is_watched() -> None:
    """Review obsreview11 F1: with the budget under the plan's months nothing changed, but a site the split gave no
    share (no planned month, no priced quota) was dropped: no budget record, alert nor guard there, so GPUs the team
    borrows at that site through its cohort were spent past the budget unseen. research with no nominal p5 quota, only
    a borrowing limit: aws keeps $0 (one alert and the guard at the first dollar), dc1 all $900,000, PL334 silent."""
    text = (ROOT / "platform.yaml").read_text()
    quota = "        - {pool: train-p5, gpus: 96, borrowingLimit: 32}\n"
    assert quota in text
    borrow_only = text.replace(quota, quota.replace("gpus: 96", "gpus: 0"))
    plan = plan_platform(validated(load_text(borrow_only, "platform.yaml"), "prod"), today=TODAY)
    assert plan.site_budgets["research"] == {"aws": 0.0, "dc1": pytest.approx(900_000)}
    assert not [f for f in plan.findings if f.check == "PL334"]


def test_a_budget_that_barely_holds_the_months_says_what_it_leaves_each_site() -> None:
    """Review sizreview7 F3: a budget a few dollars over the sites' busiest months left each site cents beyond its
    month, so a notebook on research's aws quota alerted (and the guard held the queue) within minutes, and nothing
    said so. PL335 names the dollars left and the hour of quota they fall short of; a budget that leaves each site a
    day of its quota says nothing."""
    rp, plan = research_at_both_sites()
    month = peaks(rp, plan)
    total = month["aws"] + month["dc1"]
    rp, plan = research_at_both_sites(math.ceil(total) + 5)
    found = [f for f in plan.findings if f.check == "PL335"]
    assert {f.subject for f in found} == {"research"} and len(found) == 2
    aws = next(f.message for f in found if " at aws " in f.message)
    spare = plan.site_budgets["research"]["aws"] - month["aws"]
    assert 0 < spare < 5 and f"leaves ${spare:,.2f} at aws" in aws
    assert f"quota at aws at full use (${96 * 6.88:,.2f})" in aws and "guard holds the queue" in aws
    assert not [f for f in plan.findings if f.check == "PL334"]
    research = next(t for t in rp.teams if t.name == "research")
    hour = sum(quota_worth(rp, list(plan.pools), research).values())
    rp, plan = research_at_both_sites(math.ceil(total + 24 * hour))
    assert not [f for f in plan.findings if f.check == "PL335"]


def test_a_run_of_some_hours_a_day_fills_those_hours_of_its_busiest_month() -> None:
    """Review sizreview9 F5: a 58-day run at 12 hours a day holds its GPUs at most 31 x 12 hours of a 31-day month;
    the busiest month capped it at 744 hours, which took research's month at dc1 1.9x high and PL334 asked for a budget
    the run never spends. Without a schedule, a month holds its hours a day of each day too."""
    plan = research_at_both_sites()[1]
    run = replace(next(w for w in plan.workloads if w.name == "llm-pretrain"), wall_clock_days=58.0, runs_per_quarter=1,
                  hours_per_day=12.0)  # fmt: skip
    assert peak_month_gpu_hours(run, 8, 730) == 8 * 31 * 12
    assert busy_gpu_hours(replace(run, runs_per_quarter=None), 8, 730) == 8 * 730 / 2


def test_a_budget_that_stops_admitting_on_a_team_that_serves_warns() -> None:
    """Review obsreview22 F13: the guard holds the team's whole ClusterQueue, and Kueue admits each pod of a
    Deployment as a workload of its own: a held team that serves admits no replacement replica (a rollout, a lost
    node, a scale-up) until the next month. The reference platform's serving team budgets with alerts only: quiet;
    the same team with stopAdmitting: PL345, naming its service and the spec path to change."""
    assert not [f for f in plan_platform(research_at_both_sites()[0], today=TODAY).findings if f.check == "PL345"]
    text = (ROOT / "platform.yaml").read_text()
    serving = "      costCenter: CC-4413\n"
    assert serving in text
    text = text.replace(serving, serving + "      budget: {monthlyUsd: 200000, onExhausted: stopAdmitting}\n")
    rp = validated(load_text(text, "platform.yaml"), "prod")
    found = [f for f in plan_platform(rp, today=TODAY).findings if f.check == "PL345"]
    assert [f.subject for f in found] == ["serving"]
    index = next(t.index for t in rp.teams if t.name == "serving")
    assert "chat-70b" in found[0].message and f"tenancy.teams[{index}].budget.onExhausted: alert" in found[0].message
    text = text.replace("budget: {monthlyUsd: 200000, onExhausted: stopAdmitting}", "budget: {monthlyUsd: 200000}")
    assert not [f for f in plan_platform(validated(load_text(text, "platform.yaml"), "prod"), today=TODAY).findings if f.check == "PL345"]


def test_a_run_wider_than_its_pool_keeps_no_budget_for_gpus_the_site_lacks() -> None:
    """Review sizreview34 D-1: llm-pretrain at 12 hours a day is sized at 448 GPUs for its deadline (PL304) on
    onprem-h100's 256. Its busiest month at dc1 counted all 448 and kept $381k of research's budget there, where the
    pool holds 256 GPUs 12 hours a day at most: the site's planned month is capped as the pool's utilisation is."""
    text = (ROOT / "platform.yaml").read_text().replace("    runsPerQuarter: 1 ", "    hoursPerDay: 12\n    runsPerQuarter: 1 ", 1)
    rp = validated(load_text(text, "platform.yaml"), "prod")
    plan = plan_platform(rp, today=TODAY)
    pretrain = next(w for w in plan.workloads if w.name == "llm-pretrain")
    pool = next(p for p in plan.pools if p.name == "onprem-h100")
    assert pretrain.gpus is not None and pretrain.gpus > 256 == pool.declared_max * pool.gpus_per_node
    price = pool.billed_usd_per_gpu_hour
    assert price is not None
    spend = peak_site_spend(list(plan.workloads), list(plan.pools), {p.name: p for p in rp.pools}, 730)
    assert spend["research"]["dc1"] == pytest.approx(256 * LONGEST_MONTH_HOURS * 12 / 24 * price)


SECOND_RUN = """  - name: llm-pretrain-b
    kind: training
    team: research
    pool: onprem-h100
    model: {parameters: 70B, layers: 80, hiddenSize: 8192}
    tokens: 1T
    sequenceLength: 8192
    globalBatchTokens: 16M
    deadline: 60d
    accelerator: H100-SXM5-80GB
    dataset: {size: 40TiB, bytesPerToken: 4, tier: dc1-lustre}
    runsPerQuarter: 1
"""


def test_a_pools_runs_together_keep_no_more_budget_than_the_pool_holds() -> None:
    """Review sizreview35 D-E: each run was capped at its pool, not the pool's runs together: a second 224-GPU run on
    onprem-h100 (256 GPUs) kept research $826k of its $900k at dc1, where the pool holds $443k in a 31-day month, and
    left aws $74k. The pool's runs share its GPUs the month round, so dc1 keeps what the pool can spend."""
    text = (ROOT / "platform.yaml").read_text().replace("  - name: code-assistant-ft\n", SECOND_RUN + "  - name: code-assistant-ft\n", 1)
    rp = validated(load_text(text, "platform.yaml"), "prod")
    plan = plan_platform(rp, today=TODAY)
    pool = next(p for p in plan.pools if p.name == "onprem-h100")
    assert pool.peak_gpus > 256 and pool.billed_usd_per_gpu_hour is not None
    spend = peak_site_spend(list(plan.workloads), list(plan.pools), {p.name: p for p in rp.pools}, 730)
    assert spend["research"]["dc1"] == pytest.approx(256 * LONGEST_MONTH_HOURS * pool.billed_usd_per_gpu_hour)
