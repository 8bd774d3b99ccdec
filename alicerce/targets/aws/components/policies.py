"""Every IAM and key policy document of an AWS site, as pure functions returning plain JSON-ready dicts.

The components serialise these; the tests run each through parliament (duo-labs' IAM linter) and
check them against the facts they come from. Sources are named beside each document.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Statement = dict[str, Any]
Document = dict[str, Any]

KEY_USE = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]


def document(*statements: Statement) -> Document:
    return {"Version": "2012-10-17", "Statement": list(statements)}


# ---------------------------------------------------------------- the platform key


@dataclass(frozen=True)
class KeyUsers:
    """Who besides IAM principals uses the platform key of one site (everything in it is known before deploy)."""

    partition: str
    account: str
    region: str
    log_groups: tuple[str, ...]  # ARNs of the log groups encrypted with the key
    autoscaling_role: str  # ARN of AWSServiceRoleForAutoScaling
    fsx_s3_role_pattern: str | None  # ARN pattern of FSx's S3 access roles; None: no FSx tier reads an encrypted bucket
    fsx_buckets: tuple[str, ...]  # ARNs of the SSE-KMS buckets FSx file systems are linked to
    trail: str | None = None  # ARN of the site's CloudTrail trail, which encrypts its log files with the key


def platform_key_policy(users: KeyUsers) -> Document:
    """The key policy of the platform key.

    - AccountRoot: the account may use and manage the key through IAM (what KMS applies when a key has
      no policy; KMS developer guide, "Default key policy"). EKS secrets encryption, EFS, FSx file
      system encryption and S3 SSE-KMS act with the caller's IAM permissions and need nothing more.
    - CloudWatchLogs: Logs encrypts the control-plane, flow-log and FSx log groups with the key, only
      for those log groups (CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs using
      AWS KMS": the kms:EncryptionContext:aws:logs:arn condition).
    - AutoScaling*: the EC2 Auto Scaling service-linked role launches every node with an encrypted
      root volume, so it needs key use and grants for AWS resources (EC2 Auto Scaling user guide,
      "Required AWS KMS key policy for use with encrypted volumes").
    - FsxS3Access: FSx reads and writes an SSE-KMS data lake through its S3 access role, via S3,
      with the bucket ARN as encryption context when bucket keys are on (FSx for Lustre user guide,
      "Working with server-side encrypted Amazon S3 buckets").

    The service-linked roles are named in conditions on aws:PrincipalArn under Principal "*", never in
    Principal: KMS rejects a policy naming a role that does not exist yet ("invalid principals"), and
    AWSServiceRoleForAutoScaling only exists after an account's first Auto Scaling group, while FSx's
    role is created with each file system (its name ends in the file-system id). Conditions are not
    checked for existence, and kms:CallerAccount plus the exact role ARN keep the grant as narrow as
    naming the role would (the same form AWS-managed keys use: Principal "*" with kms:CallerAccount).
    """
    statements: list[Statement] = [
        {
            "Sid": "AccountRoot",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{users.partition}:iam::{users.account}:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
        {
            "Sid": "CloudWatchLogs",
            "Effect": "Allow",
            "Principal": {"Service": f"logs.{users.region}.amazonaws.com"},
            "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            "Resource": "*",
            "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": list(users.log_groups)}},
        },
    ]
    autoscaling = {"StringEquals": {"kms:CallerAccount": users.account}, "ArnEquals": {"aws:PrincipalArn": users.autoscaling_role}}
    statements += [
        {
            "Sid": "AutoScalingVolumes",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": KEY_USE,
            "Resource": "*",
            "Condition": autoscaling,
        },
        {
            "Sid": "AutoScalingVolumeGrants",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": "kms:CreateGrant",
            "Resource": "*",
            "Condition": {**autoscaling, "Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
    ]
    if users.fsx_s3_role_pattern is not None and users.fsx_buckets:
        contexts = sorted({*users.fsx_buckets, *(f"{b}/*" for b in users.fsx_buckets)})
        statements.append(
            {
                "Sid": "FsxS3Access",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": KEY_USE,
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:CallerAccount": users.account, "kms:ViaService": f"s3.{users.region}.amazonaws.com"},
                    "ArnLike": {"aws:PrincipalArn": users.fsx_s3_role_pattern},
                    "StringLike": {"kms:EncryptionContext:aws:s3:arn": contexts},
                },
            }
        )
    if users.trail is not None:
        # CloudTrail user guide, "Configure AWS KMS key policies for CloudTrail": GenerateDataKey* for trails of this
        # account (encryption context), DescribeKey; both only for this trail (aws:SourceArn)
        source = {"aws:SourceArn": users.trail}
        context = {"kms:EncryptionContext:aws:cloudtrail:arn": f"arn:{users.partition}:cloudtrail:*:{users.account}:trail/*"}
        statements += [
            {
                "Sid": "CloudTrailLogs",
                "Effect": "Allow",
                "Principal": {"Service": "cloudtrail.amazonaws.com"},
                "Action": "kms:GenerateDataKey*",
                "Resource": "*",
                "Condition": {"StringEquals": source, "StringLike": context},
            },
            {
                "Sid": "CloudTrailDescribeKey",
                "Effect": "Allow",
                "Principal": {"Service": "cloudtrail.amazonaws.com"},
                "Action": "kms:DescribeKey",
                "Resource": "*",
                "Condition": {"StringEquals": source},
            },
        ]
    return document(*statements)


# ---------------------------------------------------------------- trust policies


def service_trust(service: str, *, tag_session: bool = False) -> Document:
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else ["sts:AssumeRole"]
    return document({"Effect": "Allow", "Principal": {"Service": service}, "Action": actions})


def flow_logs_trust(partition: str, region: str, account: str) -> Document:
    """VPC Flow Logs may assume the role only for this account's flow logs: "We recommend that you use the
    aws:SourceAccount and aws:SourceArn condition keys to protect yourself against the confused deputy problem"
    (VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs"; the flow log's id is unknown before
    it exists, so the ARN ends in a wildcard as the page allows)."""
    statement = service_trust("vpc-flow-logs.amazonaws.com")["Statement"][0]
    condition = {
        "StringEquals": {"aws:SourceAccount": account},
        "ArnLike": {"aws:SourceArn": f"arn:{partition}:ec2:{region}:{account}:vpc-flow-log/*"},
    }
    return document({**statement, "Condition": condition})


def pod_identity_trust(cluster_arn: str, namespaces: Sequence[str], service_account: str) -> Document:
    """Trust for EKS Pod Identity, limited to one service account of one cluster.

    EKS Pod Identity assumes the role with session tags naming the cluster, namespace and service
    account; the trust policy conditions on them so that no other cluster, namespace or service
    account in the account can use the role (EKS user guide, "Create IAM role with trust policy
    required by EKS Pod Identity", and "Enable or disable session tags" for the tag names).
    """
    return document(
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-arn": cluster_arn,
                    "aws:RequestTag/kubernetes-namespace": sorted(namespaces) if len(namespaces) > 1 else namespaces[0],
                    "aws:RequestTag/kubernetes-service-account": service_account,
                }
            },
        }
    )


# ---------------------------------------------------------------- controllers


def cluster_autoscaler_policy(cluster: str) -> Document:
    """cluster-autoscaler with ASG auto-discovery (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md
    @ cluster-autoscaler-1.35.0, "Full Cluster Autoscaler Features Policy"), the write actions limited to the Auto
    Scaling groups EKS tags for this cluster's auto-discovery (EKS user guide, managed node groups: "automatically
    tagged for auto-discovery by the Kubernetes Cluster Autoscaler"), as the README recommends."""
    return document(
        {
            "Sid": "Discover",
            "Effect": "Allow",
            "Action": [
                "autoscaling:DescribeAutoScalingGroups",
                "autoscaling:DescribeAutoScalingInstances",
                "autoscaling:DescribeLaunchConfigurations",
                "autoscaling:DescribeScalingActivities",
                "autoscaling:DescribeTags",
                "ec2:DescribeImages",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplateVersions",
                "ec2:GetInstanceTypesFromInstanceRequirements",
                "eks:DescribeNodegroup",
            ],
            "Resource": "*",
        },
        {
            "Sid": "ScaleThisClustersGroups",
            "Effect": "Allow",
            "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
            "Resource": "*",
            "Condition": {"Null": {f"autoscaling:ResourceTag/k8s.io/cluster-autoscaler/{cluster}": "false"}},
        },
    )


LBC_TAG = "elbv2.k8s.aws/cluster"
# The AWS Load Balancer Controller's policy (kubernetes-sigs/aws-load-balancer-controller docs/install/iam_policy.json
# @ v3.5.0, 11eb202c): (actions, resources as ARN suffixes after "arn:<partition>:", condition). Vendored facts:
# tests/data/upstream/aws-load-balancer-controller/v3.5.0/iam_policy.json.
_LBC: tuple[tuple[tuple[str, ...], tuple[str, ...], dict[str, Any] | None], ...] = (
    (("iam:CreateServiceLinkedRole",), ("*",), {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}),
    (
        (
            "ec2:DescribeAccountAttributes",
            "ec2:DescribeAddresses",
            "ec2:DescribeAvailabilityZones",
            "ec2:DescribeCoipPools",
            "ec2:DescribeInstances",
            "ec2:DescribeInternetGateways",
            "ec2:DescribeIpamPools",
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeRouteTables",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSubnets",
            "ec2:DescribeTags",
            "ec2:DescribeVpcPeeringConnections",
            "ec2:DescribeVpcs",
            "ec2:GetCoipPoolUsage",
            "ec2:GetSecurityGroupsForVpc",
            "elasticloadbalancing:DescribeCapacityReservation",
            "elasticloadbalancing:DescribeListenerAttributes",
            "elasticloadbalancing:DescribeListenerCertificates",
            "elasticloadbalancing:DescribeListeners",
            "elasticloadbalancing:DescribeLoadBalancerAttributes",
            "elasticloadbalancing:DescribeLoadBalancers",
            "elasticloadbalancing:DescribeRules",
            "elasticloadbalancing:DescribeSSLPolicies",
            "elasticloadbalancing:DescribeTags",
            "elasticloadbalancing:DescribeTargetGroupAttributes",
            "elasticloadbalancing:DescribeTargetGroups",
            "elasticloadbalancing:DescribeTargetHealth",
            "elasticloadbalancing:DescribeTrustStores",
        ),
        ("*",),
        None,
    ),
    (
        (
            "acm:DescribeCertificate",
            "acm:ListCertificates",
            "cognito-idp:DescribeUserPoolClient",
            "iam:GetServerCertificate",
            "iam:ListServerCertificates",
            "shield:CreateProtection",
            "shield:DeleteProtection",
            "shield:DescribeProtection",
            "shield:GetSubscriptionState",
            "waf-regional:AssociateWebACL",
            "waf-regional:DisassociateWebACL",
            "waf-regional:GetWebACL",
            "waf-regional:GetWebACLForResource",
            "wafv2:AssociateWebACL",
            "wafv2:DisassociateWebACL",
            "wafv2:GetWebACL",
            "wafv2:GetWebACLForResource",
        ),
        ("*",),
        None,
    ),
    (("ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"), ("*",), None),
    (("ec2:CreateSecurityGroup",), ("*",), None),
    (
        ("ec2:CreateTags",),
        ("ec2:*:*:security-group/*",),
        {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, "Null": {f"aws:RequestTag/{LBC_TAG}": "false"}},
    ),
    (
        ("ec2:CreateTags", "ec2:DeleteTags"),
        ("ec2:*:*:security-group/*",),
        {"Null": {f"aws:RequestTag/{LBC_TAG}": "true", f"aws:ResourceTag/{LBC_TAG}": "false"}},
    ),
    (
        ("ec2:AuthorizeSecurityGroupIngress", "ec2:DeleteSecurityGroup", "ec2:RevokeSecurityGroupIngress"),
        ("*",),
        {"Null": {f"aws:ResourceTag/{LBC_TAG}": "false"}},
    ),
    (
        ("elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"),
        ("*",),
        {"Null": {f"aws:RequestTag/{LBC_TAG}": "false"}},
    ),
    (
        (
            "elasticloadbalancing:CreateListener",
            "elasticloadbalancing:CreateRule",
            "elasticloadbalancing:DeleteListener",
            "elasticloadbalancing:DeleteRule",
        ),
        ("*",),
        None,
    ),
    (
        ("elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"),
        (
            "elasticloadbalancing:*:*:targetgroup/*/*",
            "elasticloadbalancing:*:*:loadbalancer/net/*/*",
            "elasticloadbalancing:*:*:loadbalancer/app/*/*",
        ),
        {"Null": {f"aws:RequestTag/{LBC_TAG}": "true", f"aws:ResourceTag/{LBC_TAG}": "false"}},
    ),
    (
        ("elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"),
        (
            "elasticloadbalancing:*:*:listener/net/*/*/*",
            "elasticloadbalancing:*:*:listener/app/*/*/*",
            "elasticloadbalancing:*:*:listener-rule/net/*/*/*",
            "elasticloadbalancing:*:*:listener-rule/app/*/*/*",
        ),
        None,
    ),
    (
        (
            "elasticloadbalancing:DeleteLoadBalancer",
            "elasticloadbalancing:DeleteTargetGroup",
            "elasticloadbalancing:ModifyCapacityReservation",
            "elasticloadbalancing:ModifyIpPools",
            "elasticloadbalancing:ModifyListenerAttributes",
            "elasticloadbalancing:ModifyLoadBalancerAttributes",
            "elasticloadbalancing:ModifyTargetGroup",
            "elasticloadbalancing:ModifyTargetGroupAttributes",
            "elasticloadbalancing:SetIpAddressType",
            "elasticloadbalancing:SetSecurityGroups",
            "elasticloadbalancing:SetSubnets",
        ),
        ("*",),
        {"Null": {f"aws:ResourceTag/{LBC_TAG}": "false"}},
    ),
    (
        ("elasticloadbalancing:AddTags",),
        (
            "elasticloadbalancing:*:*:targetgroup/*/*",
            "elasticloadbalancing:*:*:loadbalancer/net/*/*",
            "elasticloadbalancing:*:*:loadbalancer/app/*/*",
        ),
        {
            "StringEquals": {"elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]},
            "Null": {f"aws:RequestTag/{LBC_TAG}": "false"},
        },
    ),
    (
        ("elasticloadbalancing:DeregisterTargets", "elasticloadbalancing:RegisterTargets"),
        ("elasticloadbalancing:*:*:targetgroup/*/*",),
        None,
    ),
    (
        (
            "elasticloadbalancing:AddListenerCertificates",
            "elasticloadbalancing:ModifyListener",
            "elasticloadbalancing:ModifyRule",
            "elasticloadbalancing:RemoveListenerCertificates",
            "elasticloadbalancing:SetRulePriorities",
            "elasticloadbalancing:SetWebAcl",
        ),
        ("*",),
        None,
    ),
)


def load_balancer_controller_policy(partition: str) -> Document:
    """The AWS Load Balancer Controller's IAM policy at the pinned release, in the site's partition."""
    statements = []
    for actions, resources, condition in _LBC:
        arns = ["*" if r == "*" else f"arn:{partition}:{r}" for r in resources]
        statement: Statement = {"Effect": "Allow", "Action": list(actions), "Resource": arns[0] if len(arns) == 1 else arns}
        if condition is not None:
            statement["Condition"] = condition
        statements.append(statement)
    return document(*statements)


def ebs_csi_key_policy(key_arn: str) -> Document:
    """What the EBS CSI controller needs on the platform key to create encrypted volumes for claims
    (the key use and grant statements terraform-aws-eks-pod-identity's aws_ebs_csi.tf gives for aws_ebs_csi_kms_arns)."""
    return document(
        {
            "Sid": "GrantsForVolumes",
            "Effect": "Allow",
            "Action": ["kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"],
            "Resource": key_arn,
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
        {"Sid": "KeyUse", "Effect": "Allow", "Action": KEY_USE, "Resource": key_arn},
    )


def cluster_key_policy(key_arn: str) -> Document:
    """EKS envelope encryption of Kubernetes secrets (EKS user guide, "Encrypt Kubernetes secrets with KMS")."""
    return document({"Effect": "Allow", "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"], "Resource": key_arn})


def flow_logs_policy(log_group_arn: str) -> Document:
    """VPC Flow Logs delivery to one log group (VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs")."""
    return document(
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            "Resource": f"{log_group_arn}:*",
        }
    )


def session_manager_policy() -> Document:
    """What the SSM agent on a node needs for Session Manager and nothing else: register the instance and open
    its control and data channels (the actions of AWS's managed policy AWSCloud9SSMInstanceProfile; Systems
    Manager user guide, "Create a custom IAM role for Session Manager"). AmazonSSMManagedInstanceCore would also
    let every node read any SSM parameter and run documents' commands; these actions take no resource ARN."""
    actions = [
        "ssm:UpdateInstanceInformation",
        "ssmmessages:CreateControlChannel",
        "ssmmessages:CreateDataChannel",
        "ssmmessages:OpenControlChannel",
        "ssmmessages:OpenDataChannel",
    ]
    return document({"Effect": "Allow", "Action": actions, "Resource": "*"})


# The storage metrics exporter's reads (YACE v0.67.0 README "Authentication", the bare minimum of discovery jobs, less
# cloudwatch:GetMetricStatistics, which only its static jobs and a feature flag use; FSx and EFS need no service-specific
# action: their file systems are found by tag). None of these actions has a resource type or a condition key of its own
# (Service Authorization Reference: CloudWatch, Resource Groups Tagging API), so the Resource is "*"; the region is the
# one thing left to narrow. iam:ListAccountAliases is left out: without it the exporter only omits its optional
# account_alias label (pkg/job/scraper.go logs a warning).
CLOUDWATCH_METRICS_ACTIONS = ("cloudwatch:GetMetricData", "cloudwatch:ListMetrics", "tag:GetResources")


def cloudwatch_metrics_policy(region: str) -> Document:
    """Read the site's region's CloudWatch metrics and find resources by tag: nothing else."""
    return document(
        {
            "Sid": "ReadMetricsOfTaggedFileSystems",
            "Effect": "Allow",
            "Action": list(CLOUDWATCH_METRICS_ACTIONS),
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        }
    )


# ---------------------------------------------------------------- team workload identity


@dataclass(frozen=True)
class BucketGrant:
    bucket_arn: str
    prefix: str  # "" for the whole bucket
    write: bool


def team_storage_policy(grants: Iterable[BucketGrant], key_arn: str | None, region: str) -> Document:
    """A team's access to the object tiers the spec grants it, and nothing else.

    Read: list (under the prefix) and get. Read-write: also put, delete and multipart uploads. The
    platform key: decrypt (and, to write, generate data keys) only through S3 in the region and only
    for the granted buckets (kms:ViaService and the aws:s3:arn encryption context; S3 user guide,
    "Using server-side encryption with AWS KMS keys", bucket keys).
    """
    by_bucket: dict[str, list[BucketGrant]] = {}
    for grant in grants:
        by_bucket.setdefault(grant.bucket_arn, []).append(grant)
    statements: list[Statement] = []
    for n, (bucket, items) in enumerate(sorted(by_bucket.items())):
        prefixes = sorted({g.prefix for g in items})
        statements.append({"Sid": f"Locate{n}", "Effect": "Allow", "Action": "s3:GetBucketLocation", "Resource": bucket})
        listing: Statement = {"Sid": f"List{n}", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": bucket}
        if "" not in prefixes:
            listing["Condition"] = {"StringLike": {"s3:prefix": sorted({*prefixes, *(f"{p}*" for p in prefixes)})}}
        statements.append(listing)
        reads = sorted({f"{bucket}/{g.prefix}*" for g in items})
        statements.append({"Sid": f"Read{n}", "Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectVersion"], "Resource": reads})
        writes = sorted({f"{bucket}/{g.prefix}*" for g in items if g.write})
        if writes:
            statements.append(
                {
                    "Sid": f"Write{n}",
                    "Effect": "Allow",
                    "Action": ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
                    "Resource": writes,
                }
            )
    if key_arn is not None and by_bucket:
        actions = ["kms:Decrypt"]
        if any(g.write for items in by_bucket.values() for g in items):
            actions.append("kms:GenerateDataKey")
        contexts = sorted({*by_bucket, *(f"{b}/*" for b in by_bucket)})
        statements.append(
            {
                "Sid": "PlatformKeyThroughS3",
                "Effect": "Allow",
                "Action": actions,
                "Resource": key_arn,
                "Condition": {
                    "StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"},
                    "StringLike": {"kms:EncryptionContext:aws:s3:arn": contexts},
                },
            }
        )
    return document(*statements)


def as_json(doc: Mapping[str, Any]) -> str:
    import json

    return json.dumps(doc, sort_keys=True)
