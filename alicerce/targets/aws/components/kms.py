"""The platform's customer-managed KMS key of one AWS site (secrets, volumes, file systems, buckets, logs),
with an explicit key policy for every AWS service that uses it (see policies.platform_key_policy)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, named
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models import ParallelFsTier
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.policies import KeyUsers, platform_key_policy
from alicerce.targets.aws.spec import AwsSite

KEY_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+")


def key_users(rp: ResolvedPlatform, site: AwsSite) -> KeyUsers:
    """Every AWS service principal that uses the platform key of ``site``, decided from the resolved platform."""
    tiers = [t for t in rp.storage if site.name in t.implementations]
    fsx = [t for t in tiers if t.implementations[site.name] == "fsx-lustre"]
    logs = [names.control_plane_log_group(rp, site), names.flow_log_group(rp, site)]
    if fsx:
        logs.append(names.fsx_log_group(rp, site))
    by_name = {t.name: t for t in tiers}
    linked = []
    for tier in fsx:
        source = tier.spec.source if isinstance(tier.spec, ParallelFsTier) else None
        if source and source in by_name and by_name[source].implementations.get(site.name) == "s3":
            bucket, created = names.tier_bucket(rp, site, by_name[source])
            if created:  # a bucket alicerce creates is encrypted with this key; an existing one keeps its own
                linked.append(names.bucket_arn(site, bucket))
    return KeyUsers(
        partition=names.partition(site.region),
        account=site.account,
        region=site.region,
        log_groups=tuple(names.log_group_arn(site, g) for g in logs),
        autoscaling_role=names.autoscaling_slr_arn(site),
        fsx_s3_role_pattern=names.fsx_s3_access_slr_pattern(site) if linked else None,
        fsx_buckets=tuple(sorted(linked)),
        trail=names.trail_arn(rp, site) if rp.spec.security.audit.enabled else None,
    )


@dataclass(frozen=True)
class KeyArgs:
    name: str  # alias suffix, e.g. acme-ml-prod-aws
    existing_key: str | None  # security.encryption.kmsKey: use it, create nothing
    users: KeyUsers
    tags: Mapping[str, str]

    @classmethod
    def from_resolved(cls, rp: ResolvedPlatform, site: AwsSite) -> KeyArgs:
        return cls(names.site_name(rp, site), rp.spec.security.encryption.kms_key, key_users(rp, site), rp.tags)


class PlatformKey(Component):
    arn: pulumi.Output[str]
    policy: str  # the key policy this site needs (also what the owner of an existing key must grant)

    def __init__(self, name: str, args: KeyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:kms:PlatformKey", name, opts)
        self.policy = json.dumps(platform_key_policy(args.users), sort_keys=True)
        if args.existing_key is not None:
            self.arn = self._existing_key_arn(args.existing_key)
        else:
            key = aws.kms.Key(
                f"{name}-key",
                description=f"alicerce platform key of {args.name}: Kubernetes secrets, volumes, file systems, buckets, logs",
                enable_key_rotation=True,
                deletion_window_in_days=30,
                policy=self.policy,
                tags=named(args.tags, args.name),
                # everything the platform stores is encrypted with it: Pulumi refuses to delete or replace it
                opts=self.child(protect=True),
            )
            aws.kms.Alias(f"{name}-alias", name=f"alias/{args.name}", target_key_id=key.key_id, opts=self.child())
            self.arn = key.arn
        self.register_outputs({"arn": self.arn})

    def _existing_key_arn(self, key: str) -> pulumi.Output[str]:
        """The key ARN of ``security.encryption.kmsKey``, whatever form it is given in: the one place an alias
        becomes a key. IAM policies, EKS secrets encryption and CloudWatch log groups need the key ARN (an alias
        ARN in a policy's Resource matches no key); KMS DescribeKey takes a key ID, key ARN, alias name or alias
        ARN and returns the key's ARN (KMS API reference, DescribeKey, KeyId)."""
        if KEY_ARN.fullmatch(key):
            return pulumi.Output.from_input(key)
        found = aws.kms.get_key_output(key_id=key, opts=pulumi.InvokeOutputOptions(parent=self))
        return found.arn
