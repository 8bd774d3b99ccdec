"""Every IAM and key policy document the program declares passes parliament, over every shipped spec's preview.

parliament (duo-labs) lints IAM policies against AWS's action, resource and condition-key database. A
finding fails the test unless it is listed below for its kind of document with the reason it is wrong
there; each listed false positive must still occur somewhere, so a stale exception fails too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from alicerce.targets.aws.components import policies
from tests.targets.aws.conftest import SHIPPED, shipped_preview
from tests.targets.aws.lint import KEY_POLICY_FALSE_POSITIVES, Finding, findings

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TRUST_FALSE_POSITIVES = {
    # a role's trust policy has no Resource (IAM rejects one there); parliament reads it as an identity policy
    "MALFORMED": "Statement contains neither Resource nor NotResource",
}
IAM_FALSE_POSITIVES = {
    # Describe*/List* actions have no resource-level permissions, and tag-conditioned writes name no ARN
    # (cluster-autoscaler README; the load balancer controller's policy manages load balancers it creates and
    # tags at run time); parliament credits neither a missing resource type nor a tag condition.
    "RESOURCE_STAR": "actions without resource-level permissions, or scoped by tag conditions",
    # parliament 1.6.4's IAM database predates elasticloadbalancing:ModifyIpPools and the
    # elasticloadbalancing:CreateAction condition key of the load balancer controller's policy (v3.5.0)
    "UNKNOWN_ACTION": "elasticloadbalancing:ModifyIpPools",
    "UNKNOWN_CONDITION_FOR_ACTION": "elasticloadbalancing:CreateAction",
}


def documents() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(kind, where, document) of every policy in every shipped preview: key, trust or iam."""
    for spec, env in SHIPPED:
        _, result = shipped_preview(spec, env)
        for r in result.resources:
            where = f"{spec}:{env}:{r.name}"
            if r.type == "aws:kms/key:Key":
                yield "key", where, json.loads(r.inputs["policy"])
            elif r.type == "aws:iam/role:Role":
                yield "trust", where, json.loads(r.inputs["assumeRolePolicy"])
            elif r.type in ("aws:iam/rolePolicy:RolePolicy", "aws:s3/bucketPolicy:BucketPolicy"):
                yield "iam", where, json.loads(r.inputs["policy"])


def _allowed(kind: str, finding: Finding) -> bool:
    if kind == "key":
        return finding.issue in KEY_POLICY_FALSE_POSITIVES
    if kind == "trust":
        return finding.issue in TRUST_FALSE_POSITIVES and TRUST_FALSE_POSITIVES[finding.issue] in finding.detail
    if finding.issue == "RESOURCE_STAR":
        return finding.severity == "LOW"
    return finding.issue in IAM_FALSE_POSITIVES and IAM_FALSE_POSITIVES[finding.issue] in finding.detail


def test_every_policy_passes_parliament() -> None:
    seen: set[tuple[str, str]] = set()
    bad = []
    count = 0
    for kind, where, doc in documents():
        count += 1
        for finding in findings(doc):
            if _allowed(kind, finding):
                seen.add((kind, finding.issue))
            else:
                bad.append(f"{where}: {finding.severity} {finding.issue} {finding.detail[:200]}")
    assert count > 40
    assert bad == []
    listed = {("key", i) for i in KEY_POLICY_FALSE_POSITIVES} | {("trust", i) for i in TRUST_FALSE_POSITIVES}
    listed |= {("iam", i) for i in IAM_FALSE_POSITIVES}
    assert listed <= seen, f"false positives no longer seen (drop them): {sorted(listed - seen)}"


def test_parliament_catches_what_it_should() -> None:
    """The linter is live: a wrong resource type and an unknown action are findings we do not excuse."""
    bad = policies.document(
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": "arn:aws:s3:::bucket"},
        {"Effect": "Allow", "Action": "s3:GetObjectz", "Resource": "arn:aws:s3:::bucket/*"},
    )
    issues = {f.issue for f in findings(bad)}
    assert {"RESOURCE_MISMATCH", "UNKNOWN_ACTION"} <= issues
    assert not all(_allowed("iam", f) for f in findings(bad))


def test_load_balancer_controller_policy_matches_the_pinned_release() -> None:
    """The controller's policy equals the facts vendored from its iam_policy.json at the pinned chart's app version."""
    from alicerce.catalog import load_catalog
    from tests.conftest import ROOT

    version = load_catalog().versions.bom.awsLoadBalancerController
    facts = ROOT / "tests/data/upstream/aws-load-balancer-controller" / f"v{version}" / "iam_policy.json"
    assert facts.exists(), f"no vendored policy facts for the pinned controller {version}"
    expected = json.loads(facts.read_text())["statements"]
    ours = policies.load_balancer_controller_policy("aws")["Statement"]

    def normal(statement: dict[str, Any]) -> dict[str, Any]:
        resources = statement["Resource"]
        return {
            "actions": sorted([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]),
            "resources": sorted([resources] if isinstance(resources, str) else resources),
            "condition": statement.get("Condition"),
        }

    assert [normal(s) for s in ours] == expected
