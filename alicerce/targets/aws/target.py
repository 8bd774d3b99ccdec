"""The AWS target, declared once: its spec sections and where its later stages live."""

from __future__ import annotations

from alicerce.targets.aws.spec import AwsEbs, AwsEfs, AwsFsx, AwsPool, AwsS3, AwsSite
from alicerce.targets.base import Section, Target

TARGET = Target(
    name="aws",
    label="AWS",
    site=AwsSite,
    sections={
        "pool": Section(AwsPool, "AWS details; required when the site is on AWS."),
        "parallel-fs": Section(AwsFsx, "AWS implementation (FSx for Lustre)."),
        "shared-nfs": Section(AwsEfs, "AWS implementation (EFS)."),
        "object": Section(AwsS3, "AWS implementation (S3)."),
        "block": Section(AwsEbs, "AWS implementation (EBS)."),
    },
    resolver="alicerce.targets.aws.resolve",
    rules="alicerce.targets.aws.rules",
    build="alicerce.targets.aws.build",
    capacity="rented",  # instances by the hour: plan prices them from the catalog
    deploy=("pulumi",),  # the cloud layer (VPC, EKS, node groups, storage) is the environment's Pulumi stack
    starter="aws",  # templates/starters/aws.yaml: `alicerce init --target aws`
)
