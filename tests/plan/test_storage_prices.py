"""Storage billed by the GB it holds (S3, EFS) is in the month when the tier declares its capacity, and the plan
says which tiers it leaves out and why (PL328). Before, only FSx had a price: a 500 TB data lake cost $0."""

from __future__ import annotations

from typing import Any

import pytest

from alicerce.plan.platform import SizingPlan
from tests.plan.test_platform_plan import by_check, plan_of, reference


def _with(tier: str, **fields: Any) -> dict[str, Any]:
    data = reference()
    next(t for t in data["storage"] if t["name"] == tier).update(fields)
    return data


def _tier(plan: SizingPlan, name: str) -> Any:
    return next(t for t in plan.storage if t.name == name)


def test_a_data_lake_with_a_capacity_is_in_the_month_at_s3s_price() -> None:
    base = plan_of(reference())
    priced = plan_of(_with("data-lake", capacity="500TiB"))
    lake = _tier(priced, "data-lake")
    # 500 TiB = 512,000 GB-months of 2^30 bytes (the S3 FAQ's billing examples; review sizreview8 F9: decimal GB billed
    # 7% more), the first 51,200 at $0.023 and the next 460,800 at $0.022 (S3 Standard, us-east-1) = $11,315.20
    month = 51_200 * 0.023 + 460_800 * 0.022
    assert month == pytest.approx(11_315.20)
    assert lake.stored["usdPerMonth"] == pytest.approx(month) and lake.usd_per_month == pytest.approx(month)
    assert priced.cost_breakdown["storage by the GB"] == pytest.approx(month)
    assert priced.monthly_cost_usd - base.monthly_cost_usd == pytest.approx(month, abs=0.01)
    # past 500 TB the rest pays $0.021
    big = _tier(plan_of(_with("data-lake", capacity="600TiB")), "data-lake")
    assert big.usd_per_month == pytest.approx(month + 102_400 * 0.021)
    assert "data-lake" in by_check(base)["PL328"] and "data-lake" not in by_check(priced)["PL328"]


def test_efs_is_priced_at_the_aws_site_only() -> None:
    # home is EFS at aws and an NFS export at dc1: only the EFS side bills by the GB (dc1's is the site's capex)
    home = _tier(plan_of(_with("home", capacity="2TiB")), "home")
    assert home.stored["site"] == "aws" and home.stored["implementation"] == "efs"
    assert home.usd_per_month == pytest.approx(2048 * 0.30, abs=0.01)


def test_an_unpriced_tier_says_why_and_stays_out_of_the_month() -> None:
    plan = plan_of(reference())
    messages = {f.subject: f.message for f in plan.findings if f.check == "PL328"}
    assert messages["model-registry"] == (
        "not in the month's cost: s3 bills the GB it holds ($0.023/GB-month) and the tier declares no capacity"
    )
    assert _tier(plan, "model-registry").usd_per_month is None and not plan.cost_breakdown["storage by the GB"]
    assert "dc1-lustre" not in messages  # an on-prem file system is the site's capital cost, not billed by the GB


def test_a_checkpoints_tier_holds_two_checkpoints_of_each_run_writing_it() -> None:
    """Review sizreview8 F6: nothing compared a tier's capacity with the checkpoints written to it, and throughput
    sizing never raises it: a 70B checkpoint (70e9 x 14 B = 912.7 GiB) on a 1,200 GiB tier passed, and its second
    save fills it (a run keeps its last checkpoint until the next is whole). llm-pretrain writes its checkpoints to
    dc1-lustre, which also holds its 40 TiB dataset: 41 TiB holds the dataset (AL373) but not 2 x 912.7 GiB beside it;
    PL343 names what they keep and the capacity that holds both, 41.8 TiB; 42 TiB holds it."""
    small = plan_of(_with("dc1-lustre", capacity="41TiB"))
    run = next(w for w in small.workloads if w.name == "llm-pretrain")
    assert run.checkpoint_gib == pytest.approx(70e9 * 14 / 2**30)
    (message,) = [f.message for f in small.findings if f.check == "PL343" and f.subject == "dc1-lustre"]
    assert message.startswith(f"the runs writing checkpoints here keep {2 * run.checkpoint_gib:,.0f} GiB at once")
    assert "beside its 40.0 TiB dataset; it holds 41,984 GiB" in message and "at least 41.8TiB" in message
    roomy = plan_of(_with("dc1-lustre", capacity="42TiB"))
    assert not [f for f in roomy.findings if f.check == "PL343"]


def test_the_checkpoints_fit_the_file_system_generate_deploys() -> None:
    """Review sizreview9 F16: PL343 compared the checkpoints with the file system the plan would size for their write
    rate, not the one generate deploys (dev's datasets FSx, 4,800 GiB). Dev's fine-tune keeps 2 x 1.04 GiB of
    checkpoints there beside its dataset: a 4,799 GiB dataset leaves no room for them, 4,797 GiB does. Dev's
    pretraining run, on no pool there, writes none (review sizreview10 F9: its 2 x 912.7 GiB sized dev's FSx)."""
    data = reference()
    tune = next(w for w in data["workloads"] if w["name"] == "code-assistant-ft")
    assert tune["dataset"]["tier"] == "datasets"
    tune["dataset"]["size"] = "4797GiB"
    quiet = plan_of(data, "dev")
    assert not [f for f in quiet.findings if f.check == "PL343"]
    assert not [f for f in quiet.findings if f.check == "PL310" and f.subject == "datasets"]  # nothing of llm-pretrain's
    assert next(w for w in quiet.workloads if w.name == "llm-pretrain").pool is None
    tune["dataset"]["size"] = "4799GiB"
    (message,) = [f.message for f in plan_of(data, "dev").findings if f.check == "PL343"]
    assert "beside its 4.7 TiB dataset; it holds 4,800 GiB" in message


def test_the_storage_table_names_a_scratch_file_systems_baseline() -> None:
    """Review sizreview33 N-2: a SCRATCH_2 tier read "206,400 GiB at base MB/s/TiB"; it is sized on the type's 200."""
    from alicerce.cli.plan_report import _per_tib

    assert _per_tib({"perUnitStorageThroughput": None, "throughputMBps": 206_400 / 1024 * 200, "storageCapacityGiB": 206_400}) == (
        "the 200 MB/s/TiB baseline"
    )
    assert _per_tib({"perUnitStorageThroughput": 1000, "throughputMBps": 32_812.5, "storageCapacityGiB": 33_600}) == "1000 MB/s/TiB"
