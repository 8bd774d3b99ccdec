"""PL347: an on-prem audit trail kept on the API servers' hosts alone, rotated by count, holds fewer days than the
declared retention (review obsreview25 G6)."""

from __future__ import annotations

from alicerce.plan.platform import plan_platform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT, TODAY

AUDIT = "audit: {enabled: true, retention: 365d}"


def _pl346(audit: str) -> list[str]:
    text = (ROOT / "platform.yaml").read_text()
    assert AUDIT in text
    rp = validated(load_text(text.replace(AUDIT, audit), "platform.yaml"), "prod")
    return [f"{f.subject}: {f.message}" for f in plan_platform(rp, today=TODAY).findings if f.check == "PL347"]


def test_a_year_of_audit_on_the_hosts_alone_is_named_with_the_days_they_hold() -> None:
    """dc1: 37 nodes (32 GPU, 2 system, 3 control plane) renew their Leases every 10 s: 37 x 8,640 x 1 KB = 312 MB a
    day at the least, over 3 API servers keeping 100 x 100 MB each: 3 x 10,000 MB / 312 MB = 96 days, not 365. The
    AWS site (CloudWatch Logs) is not named; a webhook, or a retention the files hold, is quiet."""
    (found,) = _pl346(AUDIT)
    assert found.startswith("dc1: audit logs stay on the 3 API servers' hosts")
    assert "at most 96 days at 37 nodes' Lease renewals alone (312 MB a day" in found and "365-day" in found
    assert "security.audit.webhook" in found
    assert _pl346("audit: {enabled: true, retention: 365d, webhook: https://audit.acme.example/k8s}") == []
    assert _pl346("audit: {enabled: true, retention: 90d}") == []
