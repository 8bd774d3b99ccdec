"""The platform's customer-managed KMS key of one AWS site (secrets, volumes, file systems, buckets)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, named
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models import AwsSite


@dataclass(frozen=True)
class KeyArgs:
    name: str  # alias suffix, e.g. acme-ml-prod-aws
    existing_key: str | None  # security.encryption.kmsKey: use it, create nothing
    tags: Mapping[str, str]

    @classmethod
    def from_resolved(cls, rp: ResolvedPlatform, site: AwsSite) -> KeyArgs:
        return cls(f"{rp.name}-{rp.environment}-{site.name}", rp.spec.security.encryption.kms_key, rp.tags)


class PlatformKey(Component):
    arn: pulumi.Output[str]

    def __init__(self, name: str, args: KeyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:kms:PlatformKey", name, opts)
        if args.existing_key is not None:
            self.arn = pulumi.Output.from_input(args.existing_key)
        else:
            key = aws.kms.Key(
                f"{name}-key",
                description=f"alicerce platform key of {args.name}: Kubernetes secrets, volumes, file systems, buckets",
                enable_key_rotation=True,
                deletion_window_in_days=30,
                tags=named(args.tags, args.name),
                opts=self.child(),
            )
            aws.kms.Alias(f"{name}-alias", name=f"alias/{args.name}", target_key_id=key.key_id, opts=self.child())
            self.arn = key.arn
        self.register_outputs({"arn": self.arn})
