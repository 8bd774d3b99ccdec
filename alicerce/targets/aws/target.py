"""The AWS target, declared once: its spec sections and where its later stages live."""

from __future__ import annotations

from alicerce.targets.aws.spec import AwsEbs, AwsEfs, AwsFsx, AwsPool, AwsS3, AwsSite
from alicerce.targets.base import CloudAccount, ManagedAddons, Section, Target


def _admin_principals(site: AwsSite) -> tuple[str, ...]:
    # a placeholder the user replaces (the scaffold says so): the account's conventional platform-admins role
    return (f"arn:aws:iam::{site.account}:role/platform-admins",)


def _region(site: AwsSite) -> str:
    return site.region


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
    # CI assumes each environment's role through GitHub's OIDC provider (no long-lived keys)
    cloud=CloudAccount(
        region=_region,
        admin_principals=_admin_principals,
        credentials_action="aws-actions/configure-aws-credentials",
        credentials_inputs={"role-to-assume": "${{ vars.AWS_ROLE_ARN }}", "aws-region": "{region}", "role-session-name": "{session}"},
        # EKS access entries: the cluster bootstraps no creator access
        admin_principal_kind="IAM role",
        admin_principal_example="arn:aws:iam::<account>:role/<deployer>",
    ),
    # the EKS managed add-ons: components/cluster.py BOOT_ADDONS and WORKLOAD_ADDONS, and the EFS CSI driver where a
    # tier uses EFS; declared here so `alicerce versions` lists them without importing Pulumi
    addons=ManagedAddons(
        kind="eks-addon",
        always=("vpc-cni", "kube-proxy", "eks-pod-identity-agent", "coredns", "aws-ebs-csi-driver", "eks-node-monitoring-agent"),
        by_storage={"efs": "aws-efs-csi-driver"},
    ),
)
