"""Storage tiers of an AWS site: FSx for Lustre (parallel-fs), S3 (object), EFS (shared-nfs).

Sizes come from the resolved FSx configuration (capacity and per-unit throughput decided once, in resolve);
everything is encrypted with the platform key; file systems are reachable only from the nodes. FSx keeps
automatic backups for the tier's retention where FSx can back it up, and logs import/export warnings and
errors to an encrypted /aws/fsx log group.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from alicerce.emit.kube.storage import PER_TEAM, team_path, team_posix_ids
from alicerce.emit.pulumi.component import Component, log_retention_days, named
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models import ObjectTier, ParallelFsTier, SharedNfsTier
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.spec import AwsSite

SecurityGroupRule = type[aws.vpc.SecurityGroupIngressRule] | type[aws.vpc.SecurityGroupEgressRule]
# Lustre clients reach the file servers on TCP 988 and 1018-1023, and the servers each other on the same
# ports (FSx for Lustre user guide, "File system access control with Amazon VPC"; terraform-aws-fsx lustre
# module's self_988 / self_1018_1023 ingress and egress rules).
LUSTRE_PORTS = ((988, 988), (1018, 1023))
NFS_PORT = 2049
# FSx keeps automatic backups for at most 90 days (FSx API, CreateFileSystemLustreConfiguration).
FSX_MAX_BACKUP_DAYS = 90
# What a data repository association carries between the file system and the data lake (FSx API reference,
# AutoImportPolicy / AutoExportPolicy: NEW | CHANGED | DELETED). The lake is the source of truth: its changes,
# deletions included, reach the file system; the file system's new and changed files reach the lake, but a file
# deleted on the file system is never deleted from the lake ("DELETED - Files and directories are automatically
# deleted on the data repository when they are deleted on the file system").
DRA_IMPORT_EVENTS = ("NEW", "CHANGED", "DELETED")
DRA_EXPORT_EVENTS = ("NEW", "CHANGED")
# Each team's EFS access point enforces one POSIX identity (EFS user guide, "Enforcing a user identity using an access
# point"): every NFS request through it acts as that uid/gid (team_posix_ids), whatever user the pod runs as.
# the team's directory: the team's identity reads and writes it, nobody else (EFS creates it with this owner and mode)
EFS_TEAM_DIRECTORY_MODE = "0770"
# FSx logs to CloudWatch: data repository import/export warnings and errors (FSx for Lustre user guide, "Logging").
FSX_LOG_LEVEL = "WARN_ERROR"


@dataclass(frozen=True)
class FsxTier:
    name: str
    deployment_type: str
    storage_type: str
    capacity_gib: int
    per_unit_throughput: int | None
    zone: str
    source_bucket: str | None  # object tier linked as data repository
    backup_days: int = 0  # automatic backups (0: none); only persistent, unlinked file systems keep them

    @property
    def persistent(self) -> bool:
        return self.deployment_type.startswith("PERSISTENT")

    @property
    def backs_up(self) -> bool:
        """FSx takes backups (automatic, user, final) of persistent file systems not linked to S3 (rule AL292)."""
        return self.persistent and self.source_bucket is None


@dataclass(frozen=True)
class BucketTier:
    name: str
    bucket: str
    create: bool  # False: an existing bucket the spec names
    versioning: bool
    expire_days: int | None


@dataclass(frozen=True)
class EfsTier:
    name: str
    throughput_mode: str
    teams: tuple[str, ...] = ()  # teams with a directory of their own (teamAccess per-team): an access point each
    provisioned_mibps: int | None = None  # the tier's throughput in provisioned mode (rule AL316 requires it)


@dataclass(frozen=True)
class StorageLayout:
    fsx: tuple[FsxTier, ...]
    buckets: tuple[BucketTier, ...]
    efs: tuple[EfsTier, ...]
    fsx_log_group: str = ""
    log_retention_days: int = 365
    access_log_bucket: str = ""  # receives the server access logs of every bucket created here
    account: str = ""


def backup_days(tier: ParallelFsTier, deployment_type: str) -> int:
    """Days of automatic backups: the tier's retention, where FSx keeps backups at all (persistent file
    systems not linked to S3: FSx for Lustre user guide, "Working with backups"); rule AL292 reports the rest."""
    if tier.retention is None or not deployment_type.startswith("PERSISTENT") or tier.source is not None:
        return 0
    return min(FSX_MAX_BACKUP_DAYS, max(1, math.ceil(tier.retention / 86400)))


def storage_layout(rp: ResolvedPlatform, site: AwsSite) -> StorageLayout:
    fsx: list[FsxTier] = []
    buckets: list[BucketTier] = []
    efs: list[EfsTier] = []
    buckets_by_tier: dict[str, str] = {}
    for tier in rp.storage:
        impl = tier.implementations.get(site.name)
        spec = tier.spec
        if impl == "s3" and isinstance(spec, ObjectTier):
            name, create = names.tier_bucket(rp, site, tier)
            buckets_by_tier[tier.name] = name
            expire = math.ceil(spec.retention / 86400) if spec.retention else None
            buckets.append(BucketTier(tier.name, name, create, spec.aws.versioning if spec.aws else True, expire))
        elif impl == "efs" and isinstance(spec, SharedNfsTier):
            teams = tuple(sorted(t.name for t in rp.site(site.name).teams)) if spec.team_access == "per-team" else ()
            mode = spec.aws.throughput_mode if spec.aws else "elastic"
            provisioned = math.ceil(spec.throughput / 2**20) if mode == "provisioned" and spec.throughput else None
            efs.append(EfsTier(tier.name, mode, teams, provisioned))
    for tier in rp.storage:
        spec = tier.spec
        if tier.implementations.get(site.name) == "fsx-lustre" and tier.fsx is not None and isinstance(spec, ParallelFsTier):
            plan = tier.fsx
            source = buckets_by_tier.get(spec.source) if spec.source else None
            fsx.append(
                FsxTier(
                    tier.name,
                    plan.deployment_type,
                    plan.storage_type,
                    plan.capacity_gib,
                    plan.per_unit_throughput,
                    names.fsx_zone(rp, site, tier),
                    source,
                    backup_days(spec, plan.deployment_type),
                )
            )
    return StorageLayout(
        tuple(fsx),
        tuple(buckets),
        tuple(efs),
        names.fsx_log_group(rp, site),
        log_retention_days(rp.spec.security.audit.retention),
        names.access_log_bucket(rp, site),
        site.account,
    )


def deny_insecure_transport(principal: Any, action: str, resource: str | list[str]) -> dict[str, Any]:
    """The statement that refuses every request not made over TLS (aws:SecureTransport false)."""
    return {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": principal,
        "Action": action,
        "Resource": resource,
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


# What would undo the Object Lock retention of a locked bucket (the audit trail's log files, a data or model tier's
# objects). GOVERNANCE mode lets any principal holding
# s3:BypassGovernanceRetention delete a locked version or shorten its retention with the
# x-amz-bypass-governance-retention header (S3 user guide, "Managing Object Lock": "Bypassing governance mode"), and an
# administrator's s3:* holds it: the lock stopped nobody it was for (review obsreview23). s3:PutObjectRetention sets
# a version's retention (shortening it needs the bypass too); CloudTrail never sends it, the bucket's default applies.
LOCK_BYPASS_ACTIONS = ("s3:BypassGovernanceRetention", "s3:PutObjectRetention")
# The bucket's default retention is what the log files written next get: lowered to a day, next week's files can be
# deleted the day after. Only the stack's admin principals set it (the spec's retention, at `pulumi up`); a deny with no
# exception would refuse the stack's own change of the retention
LOCK_CONFIGURATION_ACTION = "s3:PutBucketObjectLockConfiguration"


def lock_guard(arn: str, admin_principals: tuple[str, ...]) -> list[dict[str, Any]]:
    """The Deny statements that keep the Object Lock retention of every bucket alicerce locks (the audit trail's, and the
    data and model tiers' with a retention: review of issue 24, their GOVERNANCE lock stopped no administrator either).
    The bypass and a version's retention are denied to everyone; the bucket's default retention to all but the stack's
    admin principals, who apply the spec's retention at `pulumi up`. The break-glass path stays the account's root
    user, whom S3 always lets delete a bucket policy that denies it (S3 API reference, DeleteBucketPolicy), itself a
    management event the trail records."""
    configure: dict[str, Any] = {
        "Sid": "DenyLockConfigurationChange",
        "Effect": "Deny",
        "Principal": "*",
        "Action": LOCK_CONFIGURATION_ACTION,
        "Resource": arn,
    }
    if admin_principals:
        configure["Condition"] = {"ArnNotEquals": {"aws:PrincipalArn": list(admin_principals)}}
    bypass = {"Sid": "DenyRetentionBypass", "Effect": "Deny", "Principal": "*", "Action": list(LOCK_BYPASS_ACTIONS), "Resource": f"{arn}/*"}
    return [bypass, configure]


def tier_bucket_policy(arn: str, *, locked: bool, admin_principals: tuple[str, ...] = ()) -> dict[str, Any]:
    """A data or model tier's bucket policy: TLS only, and where the tier's objects are locked, the lock guard the audit
    bucket has (lock_guard, the one decision for every locked bucket)."""
    statements = [deny_insecure_transport("*", "s3:*", [arn, f"{arn}/*"])]
    if locked:
        statements += lock_guard(arn, admin_principals)
    return {"Version": "2012-10-17", "Statement": statements}


def access_log_policy(arn: str, account: str) -> dict[str, Any]:
    """Only S3's logging service writes, for buckets of this account; nothing reaches it without TLS (S3 user guide,
    "Permissions for log delivery": the logging.s3.amazonaws.com principal with aws:SourceAccount)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "S3ServerAccessLogs",
                "Effect": "Allow",
                "Principal": {"Service": "logging.s3.amazonaws.com"},
                "Action": "s3:PutObject",
                "Resource": f"{arn}/*",
                "Condition": {"StringEquals": {"aws:SourceAccount": account}},
            },
            deny_insecure_transport("*", "s3:*", [arn, f"{arn}/*"]),
        ],
    }


def efs_policy(arn: str, client_role_arn: str) -> dict[str, Any]:
    """The file system's resource policy (EFS user guide, "Using IAM to control file system data access"): only the
    cluster's nodes (their IAM role: the PersistentVolumes mount with ``iam``, so efs-utils signs the mount with it)
    mount and write, only through a mount target, and never without TLS. Nothing is granted to ``*``: an anonymous
    client (one mounting without ``iam``) is refused ("Prevent anonymous access" in the EFS console removes
    ClientMount from the statement for everyone), as is any other AWS principal. Root access stays granted to the
    nodes: alicerce's prepare Job makes the team directories as root."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "MountTargetsOnly",
                "Effect": "Allow",
                "Principal": {"AWS": client_role_arn},
                "Action": ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite", "elasticfilesystem:ClientRootAccess"],
                "Resource": arn,
                "Condition": {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}},
            },
            deny_insecure_transport({"AWS": "*"}, "*", arn),
        ],
    }


def private_bucket(owner: Component, resource: str, bucket: aws.s3.Bucket, *, versioning: bool) -> aws.s3.BucketVersioning:
    """What every bucket alicerce creates has: no public access, no ACLs (the owner owns every object), versioning."""
    aws.s3.BucketPublicAccessBlock(
        resource,
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=owner.child(),
    )
    aws.s3.BucketOwnershipControls(
        resource,
        bucket=bucket.id,
        rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
        opts=owner.child(),
    )
    return aws.s3.BucketVersioning(
        resource,
        bucket=bucket.id,
        versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled" if versioning else "Suspended"),
        opts=owner.child(),
    )


def lock_objects(
    owner: Component, resource: str, bucket: aws.s3.Bucket, days: int, versioning: aws.s3.BucketVersioning
) -> aws.s3.BucketObjectLockConfiguration:
    """Every object version kept at least ``days``: S3 Object Lock default retention (S3 user guide "Locking objects with
    Object Lock"; it needs versioning, so it depends on it). GOVERNANCE, not COMPLIANCE: data can still be removed
    before its retention ends (a court order, a wrong upload, a retention set too long), which COMPLIANCE forbids even
    to the account root. Not by any administrator, though: the bucket policy denies s3:BypassGovernanceRetention to
    everyone (lock_guard), so the path is the account's root user removing that policy first, a management event the
    trail records."""
    return aws.s3.BucketObjectLockConfiguration(
        resource,
        bucket=bucket.id,
        object_lock_enabled="Enabled",
        rule=aws.s3.BucketObjectLockConfigurationRuleArgs(
            default_retention=aws.s3.BucketObjectLockConfigurationRuleDefaultRetentionArgs(mode="GOVERNANCE", days=days)
        ),
        opts=owner.child(depends_on=[versioning]),
    )


def encrypt_bucket(owner: Component, resource: str, bucket: aws.s3.Bucket, kms_key_arn: pulumi.Input[str] | None) -> None:
    """Default encryption of a data bucket: the platform key where there is one (an S3 Bucket Key, so that S3 asks KMS
    once per bucket key rather than per object), else SSE-S3."""
    sse = aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
        sse_algorithm="aws:kms" if kms_key_arn is not None else "AES256", kms_master_key_id=kms_key_arn
    )
    aws.s3.BucketServerSideEncryptionConfiguration(
        resource,
        bucket=bucket.id,
        rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(apply_server_side_encryption_by_default=sse, bucket_key_enabled=True)
        ],
        opts=owner.child(),
    )


@dataclass(frozen=True)
class StorageArgs:
    name: str
    site: str  # the spec's site name: tagged on the file systems, which the storage metrics exporter finds by it
    layout: StorageLayout
    tags: Mapping[str, str]
    vpc_id: pulumi.Input[str]
    subnet_ids: Mapping[str, pulumi.Input[str]]  # zone -> private subnet
    node_security_group_id: pulumi.Input[str]
    kms_key_arn: pulumi.Input[str] | None
    node_role_arn: pulumi.Input[str]  # the nodes' IAM role: the only principal EFS lets mount (efs_policy)
    audited: bool = False  # the site has an audit trail, whose bucket logs its requests to the access-log bucket
    admin_principals: tuple[str, ...] = ()  # IAM role ARNs that may set a locked bucket's default retention (lock_guard)


class Storage(Component):
    endpoints: dict[str, pulumi.Output[str]]
    volumes: dict[str, dict[str, Any]]  # tier -> PersistentVolume source, for alicerce.emit.kube.objects

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:storage:Storage", name, opts)
        self.endpoints = {}
        self.volumes = {}
        log_bucket = self._log_bucket(name, args) if args.audited or any(b.create for b in args.layout.buckets) else None
        self.log_bucket_id: pulumi.Output[str] | None = log_bucket.id if log_bucket is not None else None
        for bucket in args.layout.buckets:
            if bucket.create:
                self._bucket(name, args, bucket, log_bucket)
            self.endpoints[bucket.name] = pulumi.Output.from_input(f"s3://{bucket.bucket}")
        if args.layout.fsx:
            sg, rules = self._security_group(
                f"{name}-lustre", args, "FSx for Lustre: Lustre from the nodes only", LUSTRE_PORTS, self_ports=True
            )
            logs = aws.cloudwatch.LogGroup(
                f"{name}-fsx-logs",
                name=args.layout.fsx_log_group,
                retention_in_days=args.layout.log_retention_days,
                kms_key_id=args.kms_key_arn,
                tags=named(args.tags, f"{args.name}-fsx"),
                opts=self.child(),
            )
            for fsx in args.layout.fsx:
                self.endpoints[fsx.name] = self._lustre(name, args, fsx, sg=sg, rules=rules, logs=logs)
        if args.layout.efs:
            sg, rules = self._security_group(f"{name}-efs", args, "EFS: NFS from the nodes only", ((NFS_PORT, NFS_PORT),), self_ports=False)
            for tier in args.layout.efs:
                self.endpoints[tier.name] = self._efs(name, args, tier, sg, rules)
        self.register_outputs({"endpoints": self.endpoints})

    def _security_group(
        self, name: str, args: StorageArgs, description: str, ports: tuple[tuple[int, int], ...], *, self_ports: bool
    ) -> tuple[aws.ec2.SecurityGroup, list[pulumi.Resource]]:
        """The group and its rules: a file system is created after them (see _lustre)."""
        sg = aws.ec2.SecurityGroup(
            name, vpc_id=args.vpc_id, description=description, tags=named(args.tags, f"{args.name}-{name}"), opts=self.child()
        )
        rules: list[pulumi.Resource] = []
        nodes = args.node_security_group_id
        for low, high in ports:
            tcp = f"TCP {low}-{high}"
            # (rule, resource suffix, group, peer, description, tag suffix)
            table: list[tuple[SecurityGroupRule, str, pulumi.Input[str], pulumi.Input[str], str, str]] = [
                (aws.vpc.SecurityGroupIngressRule, "nodes", sg.id, nodes, f"{tcp} from nodes", f"{low}"),
            ]
            if self_ports:
                table += [
                    # Lustre file servers also talk to each other on these ports
                    (aws.vpc.SecurityGroupIngressRule, "self", sg.id, sg.id, f"{tcp} from self", f"{low}"),
                    # the provider removes a new group's allow-all egress, so the servers' own traffic needs its rule too
                    (
                        aws.vpc.SecurityGroupEgressRule,
                        "self-egress",
                        sg.id,
                        sg.id,
                        f"{tcp} to the file servers themselves",
                        f"{low}-self-egress",
                    ),
                    # and the nodes, Lustre clients, take the file servers' connections on the same ports (FSx for
                    # Lustre user guide, "File system access control with Amazon VPC": the clients' group allows
                    # inbound 988 and 1018-1023 from the file system's group)
                    (aws.vpc.SecurityGroupIngressRule, "to-nodes", nodes, sg.id, f"{tcp} from the Lustre file servers", f"{low}-to-nodes"),
                ]
            for rule, suffix, group, peer, text, tag in table:
                rules.append(
                    rule(
                        f"{name}-{low}-{high}-{suffix}",
                        security_group_id=group,
                        referenced_security_group_id=peer,
                        ip_protocol="tcp",
                        from_port=low,
                        to_port=high,
                        description=text,
                        tags=named(args.tags, f"{args.name}-{name}-{tag}"),
                        opts=self.child(),
                    )
                )
        replies = aws.vpc.SecurityGroupEgressRule(
            f"{name}-egress-nodes",
            security_group_id=sg.id,
            referenced_security_group_id=args.node_security_group_id,
            ip_protocol="-1",
            description="replies to the nodes",
            tags=named(args.tags, f"{args.name}-{name}-egress"),
            opts=self.child(),
        )
        rules.append(replies)
        return sg, rules

    def _lustre(
        self,
        name: str,
        args: StorageArgs,
        tier: FsxTier,
        *,
        sg: aws.ec2.SecurityGroup,
        rules: list[pulumi.Resource],
        logs: aws.cloudwatch.LogGroup,
    ) -> pulumi.Output[str]:
        persistent = tier.persistent
        tags = named(args.tags, f"{args.name}-{tier.name}", **{names.STORAGE_TIER_TAG: tier.name, names.SITE_TAG: args.site})
        dra = tier.deployment_type == "PERSISTENT_2"
        source = f"s3://{tier.source_bucket}" if tier.source_bucket else None
        fs = aws.fsx.LustreFileSystem(
            f"{name}-{tier.name}",
            deployment_type=tier.deployment_type,
            storage_type=tier.storage_type,
            storage_capacity=tier.capacity_gib,
            per_unit_storage_throughput=tier.per_unit_throughput,
            subnet_ids=args.subnet_ids[tier.zone],
            security_group_ids=[sg.id],
            kms_key_id=args.kms_key_arn if persistent else None,  # scratch file systems take no customer key
            file_system_type_version="2.15",
            data_compression_type="LZ4",
            # backups only where FSx keeps them (persistent, not linked to S3); tags copied only to backups that exist
            automatic_backup_retention_days=tier.backup_days if persistent else None,
            copy_tags_to_backups=True if tier.backup_days else None,
            # FSx deletes a file system's automatic backups with it; a final backup is a user backup and stays
            # (FSx API, DeleteFileSystemLustreConfiguration: SkipFinalBackup, default true in the provider). Only
            # where FSx backs the file system up at all (persistent, not linked to S3; rule AL292).
            skip_final_backup=False if tier.backs_up else None,
            final_backup_tags=tags if tier.backs_up else None,
            log_configuration=aws.fsx.LustreFileSystemLogConfigurationArgs(level=FSX_LOG_LEVEL, destination=logs.arn),
            metadata_configuration=aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC") if dra else None,
            import_path=source if source and not dra else None,
            auto_import_policy="NEW_CHANGED_DELETED" if source and not dra else None,
            tags=tags,
            # FSx checks the group's rules when it creates the file system and fails when they "do not permit Lustre
            # LNET network traffic on port 988" (FSx for Lustre user guide, "Creating an FSx for Lustre file system
            # fails", docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html): the rules are separate
            # resources, so they are created first; protected: Pulumi refuses to delete or replace it
            opts=self.child(depends_on=rules, protect=True),
        )
        if source and dra:
            aws.fsx.DataRepositoryAssociation(
                f"{name}-{tier.name}-dra",
                file_system_id=fs.id,
                data_repository_path=source,
                file_system_path="/",
                batch_import_meta_data_on_create=True,
                s3=aws.fsx.DataRepositoryAssociationS3Args(
                    auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=list(DRA_IMPORT_EVENTS)),
                    auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=list(DRA_EXPORT_EVENTS)),
                ),
                tags=tags,
                opts=self.child(),
            )
        self.volumes[tier.name] = {
            "csi": {
                "driver": "fsx.csi.aws.com",
                "volumeHandle": fs.id,
                "volumeAttributes": {"dnsname": fs.dns_name, "mountname": fs.mount_name},
            }
        }
        return pulumi.Output.format("{0}@tcp:/{1}", fs.dns_name, fs.mount_name)

    def _log_bucket(self, name: str, args: StorageArgs) -> aws.s3.Bucket:
        """The bucket S3 delivers server access logs to (S3 user guide, "Enabling Amazon S3 server access logging"):
        SSE-S3, since log delivery cannot use a KMS key; written only by the logging service, for this account's
        buckets; kept for the audit retention."""
        bucket_name = args.layout.access_log_bucket
        tags = named(args.tags, bucket_name, **{"alicerce.dev/purpose": "access-logs"})
        bucket = aws.s3.Bucket(f"{name}-access-logs", bucket=bucket_name, force_destroy=False, tags=tags, opts=self.child(protect=True))
        private_bucket(self, f"{name}-access-logs", bucket, versioning=True)
        sse = aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(sse_algorithm="AES256")
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-access-logs",
            bucket=bucket.id,
            rules=[aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(apply_server_side_encryption_by_default=sse)],
            opts=self.child(),
        )
        days = args.layout.log_retention_days
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-access-logs",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="audit-retention",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(days=days),
                    abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                        days_after_initiation=7
                    ),
                    noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(noncurrent_days=1),
                )
            ],
            opts=self.child(),
        )
        account = args.layout.account
        aws.s3.BucketPolicy(
            f"{name}-access-logs",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(access_log_policy(arn, account))),
            opts=self.child(),
        )
        return bucket

    def _bucket(self, name: str, args: StorageArgs, tier: BucketTier, log_bucket: aws.s3.Bucket | None) -> None:
        tags = named(args.tags, tier.bucket, **{names.STORAGE_TIER_TAG: tier.name})
        bucket = aws.s3.Bucket(f"{name}-{tier.name}", bucket=tier.bucket, force_destroy=False, tags=tags, opts=self.child(protect=True))
        if log_bucket is not None:
            # S3 server access logs: every request on the tier's objects, kept in the site's log bucket
            aws.s3.BucketLogging(
                f"{name}-{tier.name}",
                bucket=bucket.id,
                target_bucket=log_bucket.id,
                target_prefix=f"{tier.bucket}/",
                opts=self.child(),
            )
        versioning = private_bucket(self, f"{name}-{tier.name}", bucket, versioning=tier.versioning)
        encrypt_bucket(self, f"{name}-{tier.name}", bucket, args.kms_key_arn)
        rules = [
            aws.s3.BucketLifecycleConfigurationRuleArgs(
                id="abort-incomplete-uploads",
                status="Enabled",
                filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                    days_after_initiation=7
                ),
            )
        ]
        if tier.expire_days is not None:
            rules.append(
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="retention",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(days=tier.expire_days),
                    noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                        noncurrent_days=min(30, tier.expire_days)
                    ),
                )
            )
        aws.s3.BucketLifecycleConfiguration(f"{name}-{tier.name}", bucket=bucket.id, rules=rules, opts=self.child())
        # with a retention, it is a minimum first: no object version can be deleted or overwritten before it ends
        # (versioning is rule AL318's); then the lifecycle rule above expires it
        days = tier.expire_days if tier.versioning else None
        lock = lock_objects(self, f"{name}-{tier.name}", bucket, days, versioning) if days is not None else None
        locked = lock is not None
        admins = args.admin_principals
        aws.s3.BucketPolicy(
            f"{name}-{tier.name}",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(tier_bucket_policy(arn, locked=locked, admin_principals=admins))),
            # after the lock configuration: the stack's own PutBucketObjectLockConfiguration runs before the deny exists
            opts=self.child(depends_on=[lock] if lock is not None else []),
        )

    def _efs(
        self, name: str, args: StorageArgs, tier: EfsTier, sg: aws.ec2.SecurityGroup, rules: list[pulumi.Resource]
    ) -> pulumi.Output[str]:
        fs = aws.efs.FileSystem(
            f"{name}-{tier.name}",
            encrypted=True,
            kms_key_id=args.kms_key_arn,
            performance_mode="generalPurpose",
            throughput_mode=tier.throughput_mode,
            provisioned_throughput_in_mibps=tier.provisioned_mibps,  # required in provisioned mode (EFS CreateFileSystem)
            lifecycle_policies=[aws.efs.FileSystemLifecyclePolicyArgs(transition_to_ia="AFTER_30_DAYS")],
            tags=named(args.tags, f"{args.name}-{tier.name}", **{names.STORAGE_TIER_TAG: tier.name, names.SITE_TAG: args.site}),
            opts=self.child(protect=True),  # Pulumi refuses to delete or replace it
        )
        aws.efs.FileSystemPolicy(
            f"{name}-{tier.name}-policy",
            file_system_id=fs.id,
            policy=pulumi.Output.all(fs.arn, args.node_role_arn).apply(lambda a: json.dumps(efs_policy(a[0], a[1]))),
            opts=self.child(),
        )
        for zone, subnet in sorted(args.subnet_ids.items()):
            aws.efs.MountTarget(
                f"{name}-{tier.name}-{zone}",
                file_system_id=fs.id,
                subnet_id=subnet,
                security_groups=[sg.id],
                opts=self.child(depends_on=rules),  # reachable on NFS as soon as it exists
            )
        # daily backups by AWS Backup's default plan (EFS user guide, "Automatic backups"; API BackupPolicy: ENABLED)
        aws.efs.BackupPolicy(
            f"{name}-{tier.name}-backup",
            file_system_id=fs.id,
            backup_policy=aws.efs.BackupPolicyBackupPolicyArgs(status="ENABLED"),
            opts=self.child(),
        )
        per_team: dict[str, Any] = {}
        ids = team_posix_ids(tier.teams)
        for team in tier.teams:
            # the team's directory as its own access point: the driver mounts <fs-id>::<access-point-id>
            # (aws-efs-csi-driver, examples/kubernetes/access_points; EFS user guide, "Working with access points")
            point = aws.efs.AccessPoint(
                f"{name}-{tier.name}-{team}",
                file_system_id=fs.id,
                root_directory=aws.efs.AccessPointRootDirectoryArgs(
                    path=f"/{team_path(team)}",
                    creation_info=aws.efs.AccessPointRootDirectoryCreationInfoArgs(
                        owner_uid=ids[team], owner_gid=ids[team], permissions=EFS_TEAM_DIRECTORY_MODE
                    ),
                ),
                posix_user=aws.efs.AccessPointPosixUserArgs(uid=ids[team], gid=ids[team]),
                tags=named(args.tags, f"{args.name}-{tier.name}-{team}", **{names.STORAGE_TIER_TAG: tier.name}),
                opts=self.child(),
            )
            per_team[team] = {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": pulumi.Output.format("{0}::{1}", fs.id, point.id)}}
        self.volumes[tier.name] = {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": fs.id}}
        if per_team:
            self.volumes[tier.name][PER_TEAM] = per_team
        return fs.dns_name
