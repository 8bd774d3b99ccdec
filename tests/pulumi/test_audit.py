"""The AWS audit trail (issue 24 item 6): CloudTrail records management events and the object events of the data and
model buckets into an encrypted, versioned, retained bucket that only this trail writes, with a key it may use."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.pulumi.conftest import covers

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ACCOUNT = "222222222222"
TRAIL = f"arn:aws:cloudtrail:us-east-1:{ACCOUNT}:trail/acme-ml-prod-aws-audit"


def inputs(result: Any, name: str) -> dict[str, Any]:
    found: dict[str, Any] = result.named(name).inputs
    return found


@covers("aws:cloudtrail/trail:Trail", "alicerce:audit:AuditTrail")
def test_cloudtrail_records_management_and_data_and_model_object_events(prod: Any) -> None:
    _, result = prod
    trail = inputs(result, "aws-audit-trail")
    assert trail["name"] == "acme-ml-prod-aws-audit" and trail["isMultiRegionTrail"] and trail["enableLogFileValidation"]
    assert trail["includeGlobalServiceEvents"] and trail["kmsKeyId"]
    management, data = trail["advancedEventSelectors"]
    assert management["fieldSelectors"] == [{"field": "eventCategory", "equals": ["Management"]}]
    fields = {f["field"]: f for f in data["fieldSelectors"]}
    assert fields["eventCategory"]["equals"] == ["Data"] and fields["resources.type"]["equals"] == ["AWS::S3::Object"]
    # data-lake (datasets) and model-registry (models): every object read and write of both
    assert sorted(fields["resources.ARN"]["startsWiths"]) == [
        f"arn:aws:s3:::acme-ml-prod-data-lake-{ACCOUNT}/",
        f"arn:aws:s3:::acme-ml-prod-model-registry-{ACCOUNT}/",
    ]
    assert "aws-audit-bucket" in result.named("aws-audit-trail").depends_on  # the bucket policy exists first


def test_the_audit_bucket_is_encrypted_versioned_retained_and_written_only_by_the_trail(prod: Any) -> None:
    rp, result = prod
    days = -(-int(rp.spec.security.audit.retention) // 86400)
    assert days == 365
    bucket = [r for r in result.of_type("aws:s3/bucket:Bucket") if r.name == "aws-audit-bucket"]
    assert bucket and bucket[0].inputs["bucket"] == f"acme-ml-prod-audit-{ACCOUNT}"
    sse = next(
        r
        for r in result.of_type("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
        if r.name == "aws-audit-bucket"
    )
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    versioning = next(r for r in result.of_type("aws:s3/bucketVersioning:BucketVersioning") if r.name == "aws-audit-bucket")
    assert versioning.inputs["versioningConfiguration"]["status"] == "Enabled"
    lifecycle = next(
        r for r in result.of_type("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration") if r.name == "aws-audit-bucket"
    )
    assert lifecycle.inputs["rules"][0]["expiration"]["days"] == days
    # kept for the retention before it expires: no log file or version deleted before then (review obsreview22 F9)
    lock = next(
        r for r in result.of_type("aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration") if r.name == "aws-audit-bucket"
    )
    assert lock.inputs["objectLockEnabled"] == "Enabled" and lock.inputs["rule"]["defaultRetention"] == {"mode": "GOVERNANCE", "days": days}
    assert "aws-audit-bucket" in lock.depends_on  # after versioning is on
    policy = json.loads(
        next(r for r in result.of_type("aws:s3/bucketPolicy:BucketPolicy") if r.name == "aws-audit-bucket").inputs["policy"]
    )
    statements = {s["Sid"]: s for s in policy["Statement"]}
    write = statements["CloudTrailWrite"]
    assert write["Principal"] == {"Service": "cloudtrail.amazonaws.com"} and write["Action"] == "s3:PutObject"
    assert write["Resource"].endswith(f"/AWSLogs/{ACCOUNT}/*")
    assert write["Condition"]["StringEquals"] == {"aws:SourceArn": TRAIL, "s3:x-amz-acl": "bucket-owner-full-control"}
    assert statements["CloudTrailAclCheck"]["Condition"]["StringEquals"] == {"aws:SourceArn": TRAIL}
    assert statements["DenyInsecureTransport"]["Effect"] == "Deny"
    logging = next(r for r in result.of_type("aws:s3/bucketLogging:BucketLogging") if r.name == "aws-audit-bucket")
    assert logging.inputs["targetPrefix"] == f"acme-ml-prod-audit-{ACCOUNT}/"


def test_no_one_bypasses_the_audit_log_retention(prod: Any) -> None:
    """Review obsreview23: with Object Lock in GOVERNANCE mode, anyone holding s3:BypassGovernanceRetention (an
    administrator's s3:*) deletes a locked log file version or shortens its retention (S3 user guide, "Managing Object
    Lock", bypassing governance mode). The bucket policy denies that, and setting a version's retention, to every
    principal on every log file; and the bucket's default retention (the next log files') to all but the stack's admin
    principals, after which the lock configuration is set."""
    _, result = prod
    policy = next(r for r in result.of_type("aws:s3/bucketPolicy:BucketPolicy") if r.name == "aws-audit-bucket")
    statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
    bucket = f"arn:aws:s3:::acme-ml-prod-audit-{ACCOUNT}"
    bypass = statements["DenyRetentionBypass"]
    assert bypass["Effect"] == "Deny" and bypass["Principal"] == "*" and "Condition" not in bypass
    assert sorted(bypass["Action"]) == ["s3:BypassGovernanceRetention", "s3:PutObjectRetention"]
    assert bypass["Resource"] == f"{bucket}/*"
    configure = statements["DenyLockConfigurationChange"]
    assert configure["Effect"] == "Deny" and configure["Principal"] == "*"
    assert configure["Action"] == "s3:PutBucketObjectLockConfiguration" and configure["Resource"] == bucket
    assert "Condition" not in configure  # this preview's stack settings name no admin principal: nobody sets it
    assert "aws-audit-bucket" in policy.depends_on  # the lock configuration (and bucket) first


def test_the_lock_guard_names_real_actions_and_denies_everyone_without_admins() -> None:
    """parliament (IAM's action and condition-key database) knows every action and key of the guard; the stack's
    admin principals (who apply the spec's retention at `pulumi up`) are the only exception to the lock configuration's
    deny, and with none it is denied to everyone."""
    from alicerce.targets.aws.components.audit import trail_bucket_policy
    from tests.targets.aws.lint import findings

    arn = "arn:aws:s3:::audit-bucket"
    admins = ("arn:aws:iam::111111111111:role/platform-admins",)
    guarded = {s["Sid"]: s for s in trail_bucket_policy(arn, ACCOUNT, TRAIL, admins)["Statement"]}
    assert findings({"Version": "2012-10-17", "Statement": list(guarded.values())}) == []
    assert guarded["DenyLockConfigurationChange"]["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": list(admins)}}
    assert "Condition" not in guarded["DenyRetentionBypass"]
    statements = {s["Sid"]: s for s in trail_bucket_policy(arn, ACCOUNT, TRAIL)["Statement"]}
    assert "Condition" not in statements["DenyLockConfigurationChange"]
    # parliament does flag a name it does not know: the check above is not vacuous
    wrong = {"Version": "2012-10-17", "Statement": [{**statements["DenyRetentionBypass"], "Action": "s3:BypassGovernanceRetentions"}]}
    assert [f.issue for f in findings(wrong)] == ["UNKNOWN_ACTION"]


def test_every_locked_bucket_has_the_audit_buckets_lock_guard(prod: Any) -> None:
    """Issue 24 (obsreview24 follow-up): the data and model tiers' buckets with a retention are locked in GOVERNANCE mode
    too, and their policy held only the TLS deny: an administrator's s3:* (which holds s3:BypassGovernanceRetention)
    deleted a locked dataset or model version before its retention. Every bucket with an Object Lock configuration now
    carries the same guard as the audit bucket, from the one function (lock_guard), set after the lock; a bucket
    without a lock carries none."""
    from alicerce.targets.aws.components.storage import lock_guard
    from tests.targets.aws.lint import findings

    _, result = prod
    locks = {r.name for r in result.of_type("aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration")}
    # the data lake has a retention (730d), the reference's model registry none: it is not locked and gets no guard
    assert {"aws-audit-bucket", "aws-storage-data-lake"} <= locks and "aws-storage-model-registry" not in locks, locks
    buckets = {r.name: r.inputs["bucket"] for r in result.of_type("aws:s3/bucket:Bucket")}
    for policy in result.of_type("aws:s3/bucketPolicy:BucketPolicy"):
        document = json.loads(policy.inputs["policy"])
        statements = {s["Sid"]: s for s in document["Statement"]}
        guard = {s["Sid"]: s for s in lock_guard(f"arn:aws:s3:::{buckets[policy.name]}", ())}
        if policy.name in locks:
            assert {sid: statements.get(sid) for sid in guard} == guard, policy.name
            assert policy.name in policy.depends_on, policy.name  # after the lock configuration
            assert findings(document) == [], policy.name
        else:
            assert not set(guard) & set(statements), policy.name


def test_a_locked_tier_bucket_lets_only_the_admin_principals_change_its_default_retention() -> None:
    from alicerce.targets.aws.components.storage import tier_bucket_policy
    from tests.targets.aws.lint import findings

    arn = "arn:aws:s3:::data-lake"
    admins = ("arn:aws:iam::111111111111:role/platform-admins",)
    locked = tier_bucket_policy(arn, locked=True, admin_principals=admins)
    statements = {s["Sid"]: s for s in locked["Statement"]}
    assert findings(locked) == []
    assert statements["DenyLockConfigurationChange"]["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": list(admins)}}
    bypass = statements["DenyRetentionBypass"]
    assert bypass["Principal"] == "*" and "Condition" not in bypass and bypass["Resource"] == f"{arn}/*"
    assert sorted(bypass["Action"]) == ["s3:BypassGovernanceRetention", "s3:PutObjectRetention"]
    assert [s["Sid"] for s in tier_bucket_policy(arn, locked=False)["Statement"]] == ["DenyInsecureTransport"]


def test_the_platform_key_lets_only_this_trail_encrypt(prod: Any) -> None:
    _, result = prod
    key = json.loads(inputs(result, "aws-kms-key")["policy"])
    statements = {s["Sid"]: s for s in key["Statement"]}
    logs = statements["CloudTrailLogs"]
    assert logs["Principal"] == {"Service": "cloudtrail.amazonaws.com"} and logs["Action"] == "kms:GenerateDataKey*"
    assert logs["Condition"]["StringEquals"] == {"aws:SourceArn": TRAIL}
    assert logs["Condition"]["StringLike"] == {"kms:EncryptionContext:aws:cloudtrail:arn": f"arn:aws:cloudtrail:*:{ACCOUNT}:trail/*"}
    assert statements["CloudTrailDescribeKey"]["Condition"]["StringEquals"] == {"aws:SourceArn": TRAIL}


def test_no_trail_without_audit(tmp_path: Any) -> None:
    from alicerce.targets.aws.components.kms import key_users
    from tests.pulumi.conftest import reference, resolved

    data = reference()
    data["security"]["audit"] = {"enabled": False}
    rp = resolved(data, "prod", tmp_path)
    assert key_users(rp, rp.site("aws").spec).trail is None  # type: ignore[arg-type]
