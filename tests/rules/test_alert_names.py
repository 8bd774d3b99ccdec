"""AL361 (issue 24): the alerts whose names validate compares are the alerts alicerce emits."""

from __future__ import annotations

import pytest

from alicerce.emit.kube.monitoring import rule_groups
from alicerce.rules.tenancy import generated_alerts
from tests.emit.gitops.helpers import reference


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_every_emitted_alert_is_one_validate_knows(env: str) -> None:
    """The collision check (AL361) and the override check (AL262) see every alert the rule files carry: an alert
    left out of generated_alerts could collide unseen."""
    rp = reference(env)
    known = {name for name, _, _ in generated_alerts(rp.spec)}
    emitted = {r["alert"] for site in rp.sites for g in rule_groups(rp, site.name) for r in g["rules"] if "alert" in r}
    assert emitted
    assert emitted - known == set()
