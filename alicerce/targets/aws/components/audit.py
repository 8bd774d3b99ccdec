"""The audit trail of an AWS site: CloudTrail management events and S3 data events on the data and model buckets,
delivered to an encrypted, versioned bucket that keeps every log file for the audit retention (Object Lock) and then
expires it.

The bucket policy is CloudTrail's documented one (CloudTrail user guide, "Amazon S3 bucket policy for
CloudTrail"): GetBucketAcl and PutObject under AWSLogs/<account>/ for cloudtrail.amazonaws.com, bound to this
trail by aws:SourceArn, objects owned by the bucket owner. The platform key lets CloudTrail encrypt for this
trail only (policies.platform_key_policy, CloudTrailLogs). The Object Lock retention (GOVERNANCE) holds against every
principal: the policy denies s3:BypassGovernanceRetention and s3:PutObjectRetention to everyone on the log files, and
s3:PutBucketObjectLockConfiguration (the default retention of the log files written next) to everyone but the stack's
admin principals, who apply the spec's retention (trail_bucket_policy). EKS control-plane audit logs are the cluster's
(cluster.LOG_TYPES); on-prem, kubespray's kube-apiserver audit policy (alicerce.emit.ansible.kubespray).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, named
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models import ObjectTier
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.storage import deny_insecure_transport, encrypt_bucket, lock_guard, lock_objects, private_bucket
from alicerce.targets.aws.spec import AwsSite

# object tiers whose object-level reads and writes are audited (who read which training data, who wrote a model)
AUDITED_PURPOSES = ("datasets", "models")


@dataclass(frozen=True)
class AuditArgs:
    bucket: str
    trail: str
    trail_arn: str
    account: str
    data_buckets: tuple[str, ...]  # ARNs of the buckets whose object events are recorded
    retention_days: int
    tags: Mapping[str, str]
    kms_key_arn: pulumi.Input[str] | None
    access_log_bucket: pulumi.Input[str] | None  # the site's S3 access-log bucket, where there is one
    admin_principals: tuple[str, ...] = ()  # IAM role ARNs that may set the bucket's default retention (the deployer)

    @classmethod
    def from_resolved(
        cls,
        rp: ResolvedPlatform,
        site: AwsSite,
        kms_key_arn: pulumi.Input[str] | None,
        access_log_bucket: pulumi.Input[str] | None,
        admin_principals: tuple[str, ...] = (),
    ) -> AuditArgs:
        buckets = []
        for tier in rp.storage:
            if tier.implementations.get(site.name) == "s3" and isinstance(tier.spec, ObjectTier) and tier.spec.purpose in AUDITED_PURPOSES:
                buckets.append(names.bucket_arn(site, names.tier_bucket(rp, site, tier)[0]))
        days = max(1, -(-int(rp.spec.security.audit.retention) // 86400))
        return cls(
            names.audit_bucket(rp, site), names.trail_name(rp, site), names.trail_arn(rp, site), site.account,
            tuple(sorted(buckets)), days, rp.tags, kms_key_arn, access_log_bucket, tuple(sorted(admin_principals)),
        )  # fmt: skip


def trail_bucket_policy(arn: str, account: str, trail_arn: str, admin_principals: tuple[str, ...] = ()) -> dict[str, Any]:
    source = {"aws:SourceArn": trail_arn}
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "CloudTrailAclCheck",
                "Effect": "Allow",
                "Principal": {"Service": "cloudtrail.amazonaws.com"},
                "Action": "s3:GetBucketAcl",
                "Resource": arn,
                "Condition": {"StringEquals": source},
            },
            {
                "Sid": "CloudTrailWrite",
                "Effect": "Allow",
                "Principal": {"Service": "cloudtrail.amazonaws.com"},
                "Action": "s3:PutObject",
                "Resource": f"{arn}/AWSLogs/{account}/*",
                "Condition": {"StringEquals": {**source, "s3:x-amz-acl": "bucket-owner-full-control"}},
            },
            deny_insecure_transport("*", "s3:*", [arn, f"{arn}/*"]),
            *lock_guard(arn, admin_principals),
        ],
    }


def event_selectors(data_buckets: tuple[str, ...]) -> list[aws.cloudtrail.TrailAdvancedEventSelectorArgs]:
    """Every management event, and the object-level events (GetObject, PutObject, DeleteObject...) of the audited
    buckets (CloudTrail user guide, "Logging data events": advanced event selectors on resources.ARN)."""
    field = aws.cloudtrail.TrailAdvancedEventSelectorFieldSelectorArgs
    selectors = [
        aws.cloudtrail.TrailAdvancedEventSelectorArgs(
            name="management", field_selectors=[field(field="eventCategory", equals=["Management"])]
        )
    ]
    if data_buckets:
        selectors.append(
            aws.cloudtrail.TrailAdvancedEventSelectorArgs(
                name="data-and-model-objects",
                field_selectors=[
                    field(field="eventCategory", equals=["Data"]),
                    field(field="resources.type", equals=["AWS::S3::Object"]),
                    field(field="resources.ARN", starts_withs=[f"{b}/" for b in data_buckets]),
                ],
            )
        )
    return selectors


class AuditTrail(Component):
    trail_arn: pulumi.Output[str]

    def __init__(self, name: str, args: AuditArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:audit:AuditTrail", name, opts)
        tags = named(args.tags, args.bucket, **{"alicerce.dev/purpose": "audit"})
        # the audit record outlives a stack removal: Pulumi refuses to delete it
        bucket = aws.s3.Bucket(f"{name}-bucket", bucket=args.bucket, force_destroy=False, tags=tags, opts=self.child(protect=True))
        versioning = private_bucket(self, f"{name}-bucket", bucket, versioning=True)
        encrypt_bucket(self, f"{name}-bucket", bucket, args.kms_key_arn)
        # the retention is a minimum before it is an expiry, as for the object tiers (storage.py): without it anyone
        # with s3:DeleteObjectVersion (an admin, the deployer, a stolen role) removed log files and their versions at
        # once, and log-file validation only said afterwards that they were gone (review obsreview22 F9). Object Lock
        # applies to an existing bucket once versioning is on (pulumi-aws 7.51.1 s3.BucketObjectLockConfiguration, "new
        # and existing buckets"); governance as the tiers, the spec setting no audit lock mode. The bucket is not a
        # server access log destination, which Object Lock would forbid (it sends its own to the log bucket)
        lock = lock_objects(self, f"{name}-bucket", bucket, args.retention_days, versioning)
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-bucket",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="audit-retention",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(days=args.retention_days),
                    noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                        noncurrent_days=args.retention_days
                    ),
                    abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                        days_after_initiation=7
                    ),
                )
            ],
            opts=self.child(),
        )
        if args.access_log_bucket is not None:
            # who read the audit record: its own requests go to the site's access-log bucket like every other bucket's
            aws.s3.BucketLogging(
                f"{name}-bucket", bucket=bucket.id, target_bucket=args.access_log_bucket, target_prefix=f"{args.bucket}/", opts=self.child()
            )
        policy = aws.s3.BucketPolicy(
            f"{name}-bucket",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(trail_bucket_policy(arn, args.account, args.trail_arn, args.admin_principals))),
            # after the lock configuration: the policy denies setting it to all but the admin principals
            opts=self.child(depends_on=[lock]),
        )
        # CloudTrail checks the bucket policy when the trail is created: the policy first
        trail = aws.cloudtrail.Trail(
            f"{name}-trail",
            name=args.trail,
            s3_bucket_name=bucket.id,
            kms_key_id=args.kms_key_arn,
            is_multi_region_trail=True,
            include_global_service_events=True,
            enable_log_file_validation=True,
            advanced_event_selectors=event_selectors(args.data_buckets),
            tags=named(args.tags, args.trail),
            opts=self.child(depends_on=[policy]),
        )
        self.trail_arn = trail.arn
        self.register_outputs({"trailArn": trail.arn})
