"""One number for the GPUs of a shared pool: the quota rule, the ResourceQuota, Kueue and the planner agree.

A MIG pool (2 x p4de.24xlarge, 8 A100-80GB each, 2 x 3g.40gb per GPU under the mixed strategy)
offers 2 x 8 x 2 = 32 nvidia.com/mig-3g.40gb units; the time-sliced infer-l4 pool of platform.yaml
(16 x g6.xlarge, 1 L4 each, 4 replicas) offers 16 x 1 x 4 = 64 nvidia.com/gpu units.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from alicerce.emit.kube.objects import cluster_objects
from alicerce.plan.platform import plan_platform
from alicerce.rules.validate import check, validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT

MIG_POOL = {
    "name": "infer-mig",
    "site": "aws",
    "purpose": "inference",
    "accelerator": "A100-SXM4-80GB:8",
    "sharing": {"mode": "mig", "profiles": {"3g.40gb": 2}},
    "aws": {"instanceType": "p4de.24xlarge"},
    "scaling": {"min": 0, "max": 2},
    "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
}
UNITS = {"infer-mig": ("nvidia.com/mig-3g.40gb", 32), "infer-l4": ("nvidia.com/gpu", 64)}


def spec(mig_quota: int, l4_quota: int) -> str:
    data: dict[str, Any] = copy.deepcopy(yaml.safe_load((ROOT / "platform.yaml").read_text()))
    data["nodePools"].append(MIG_POOL)
    serving = next(t for t in data["tenancy"]["teams"] if t["name"] == "serving")
    serving["quotas"] = [{"pool": "infer-mig", "gpus": mig_quota}, {"pool": "infer-l4", "gpus": l4_quota}]
    return yaml.safe_dump(data, sort_keys=False)


def test_the_resolved_units_are_the_pools_capacity() -> None:
    rp = validated(load_text(spec(32, 64), "units.yaml"), "prod")
    for pool, (resource, units) in UNITS.items():
        assert rp.pool(pool).max_gpu_units == units
        assert rp.pool(pool).gpu_units is not None and set(rp.pool(pool).gpu_units.resources) == {resource}


@pytest.mark.parametrize("pool", sorted(UNITS))
def test_the_quota_rule_allows_exactly_the_units(pool: str) -> None:
    full = {"infer-mig": 32, "infer-l4": 64}
    assert not [e for e in check(load_text(spec(**_quotas(full)), "ok.yaml"), ["prod"]).errors if e.rule == "AL260"]
    over = {**full, pool: full[pool] + 1}
    errors = [e for e in check(load_text(spec(**_quotas(over)), "over.yaml"), ["prod"]).errors if e.rule == "AL260"]
    assert len(errors) == 1 and f"it has {UNITS[pool][1]}" in errors[0].message


def _quotas(by_pool: dict[str, int]) -> dict[str, int]:
    return {"mig_quota": by_pool["infer-mig"], "l4_quota": by_pool["infer-l4"]}


def test_resource_quota_kueue_and_plan_count_the_same_units() -> None:
    rp = validated(load_text(spec(32, 64), "units.yaml"), "prod")
    objs = cluster_objects(rp, "aws")
    hard = next(o for o in objs if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "serving")["spec"]["hard"]
    queue = next(o for o in objs if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "serving")
    flavors = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in queue["spec"]["resourceGroups"][0]["flavors"]}
    plan = {p.name: p for p in plan_platform(rp).pools}
    for pool, (resource, units) in UNITS.items():
        # the team holds the whole pool, so it can borrow nothing more: its cap is the pool's units
        assert hard[f"requests.{resource}"] == str(units)
        assert flavors[pool][resource] == str(units)
        assert plan[pool].gpu_units == units
