"""What every test of the Kubernetes objects and the Prometheus rules shares."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from alicerce.plan import platform as plan_module


@pytest.fixture(autouse=True)
def one_plan_per_platform(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """rule_groups prices a site's pools from the platform's sizing plan (plan_platform: ~0.1 CPU-s on the reference
    platform, nearly all of rule_groups' cost), and a test reads the rules of one platform several times (rules_of,
    each promtool run, the objects): 853 plans over this folder, 613 with one per platform object within a test (~28
    of ~100 CPU-s of planning saved). The platform and the plan are frozen records, and the plan is a function of the
    platform (the catalog and the day are the suite's own); a call naming its catalog or day is planned as asked."""
    original = plan_module.plan_platform
    # keyed by the platform's id, the platform itself held beside its plan, so no other object takes its id meanwhile
    plans: dict[int, tuple[Any, plan_module.SizingPlan]] = {}

    def plan_platform(platform: Any, catalog: Any = None, today: Any = None) -> plan_module.SizingPlan:
        if catalog is not None or today is not None:
            return original(platform, catalog, today)
        held = plans.get(id(platform))
        if held is None or held[0] is not platform:
            held = plans[id(platform)] = (platform, original(platform))
        return held[1]

    monkeypatch.setattr(plan_module, "plan_platform", plan_platform)
    yield
    plans.clear()
