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
