"""Workload identity of an AWS site: IAM roles bound to Kubernetes service accounts with EKS Pod Identity.

- cluster-autoscaler (kube-system/cluster-autoscaler): discover node groups, set their desired size;
- the AWS Load Balancer Controller (kube-system/aws-load-balancer-controller), where the site serves inference;
- the storage metrics exporter (monitoring/cloudwatch-exporter), where the site has FSx or EFS tiers and monitoring:
  read CloudWatch metrics and find the file systems by tag, in the site's region only;
- each team with storage grants: a role for the service account ``team-<name>`` in every team namespace,
  reading (or writing) exactly the object-tier prefixes the spec grants, and using the platform key only
  through S3 for those buckets.

The associations are AWS resources, made in the cloud layer: the Kubernetes layer only creates the
service accounts (alicerce.emit.kube.identity and the charts), so the two layers can run apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, named
from alicerce.emit.storage_counters import cloud_metric_tiers
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.cluster import ClusterArgs, pod_identity_role
from alicerce.targets.aws.components.policies import (
    BucketGrant,
    as_json,
    cloudwatch_metrics_policy,
    cluster_autoscaler_policy,
    load_balancer_controller_policy,
    team_storage_policy,
)
from alicerce.targets.aws.spec import AwsSite


@dataclass(frozen=True)
class TeamIdentity:
    team: str
    namespaces: tuple[str, ...]
    service_account: str
    grants: tuple[BucketGrant, ...]


def team_identities(rp: ResolvedPlatform, site: AwsSite) -> tuple[TeamIdentity, ...]:
    """The teams of a site with object-tier grants there, each with its buckets and prefixes."""
    here = rp.site(site.name)
    tiers = {t.name: t for t in here.storage if t.implementations.get(site.name) == "s3"}
    out = []
    for team in here.teams:
        grants = []
        for grant in team.spec.storage_access:
            tier = tiers.get(grant.tier)
            if tier is None:
                continue  # a tier of another site (or not an object tier: rule AL294 reports it)
            bucket, _ = names.tier_bucket(rp, site, tier)
            grants.append(BucketGrant(names.bucket_arn(site, bucket), grant.prefix or "", grant.access == "read-write"))
        if grants:
            out.append(TeamIdentity(team.name, team.namespaces, team.service_account, tuple(grants)))
    return tuple(out)


def serves_inference(rp: ResolvedPlatform, site: AwsSite) -> bool:
    """The site runs inference endpoints: it gets the AWS Load Balancer Controller."""
    return any(p.spec.purpose == "inference" for p in names.site_pools(rp, site))


@dataclass(frozen=True)
class IdentityArgs:
    cluster: ClusterArgs
    cluster_name: pulumi.Input[str]
    region: str
    teams: tuple[TeamIdentity, ...]
    load_balancer_controller: bool
    kms_key_arn: pulumi.Input[str] | None
    storage_metrics: bool = False  # the site runs the storage metrics exporter (alicerce.emit.kube.cloud_metrics)
    tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_resolved(
        cls,
        rp: ResolvedPlatform,
        site: AwsSite,
        cluster: ClusterArgs,
        cluster_name: pulumi.Input[str],
        kms_key_arn: pulumi.Input[str] | None,
    ) -> IdentityArgs:
        metrics = bool(cloud_metric_tiers(rp, rp.site(site.name)))
        teams = team_identities(rp, site)
        return cls(cluster, cluster_name, site.region, teams, serves_inference(rp, site), kms_key_arn, metrics, rp.tags)


class WorkloadIdentity(Component):
    def __init__(self, name: str, args: IdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:identity:WorkloadIdentity", name, opts)
        self._controller(
            name, args, names.CLUSTER_AUTOSCALER_ROLE, names.CLUSTER_AUTOSCALER_SA, as_json(cluster_autoscaler_policy(args.cluster.name))
        )
        if args.load_balancer_controller:
            policy = as_json(load_balancer_controller_policy(args.cluster.partition))
            self._controller(name, args, names.LOAD_BALANCER_CONTROLLER_ROLE, names.LOAD_BALANCER_CONTROLLER_SA, policy)
        if args.storage_metrics:
            policy = as_json(cloudwatch_metrics_policy(args.region))
            self._controller(name, args, names.STORAGE_METRICS_ROLE, names.STORAGE_METRICS_SA, policy)
        for team in args.teams:
            role = pod_identity_role(
                self,
                names.workload_role(name, f"team-{team.team}"),
                args.cluster,
                (team.namespaces[0], team.service_account),
                namespaces=team.namespaces,
            )
            grants = team.grants
            policy_doc = pulumi.Output.from_input(args.kms_key_arn).apply(
                lambda key, grants=grants: as_json(team_storage_policy(grants, key, args.region))  # type: ignore[misc]
            )
            aws.iam.RolePolicy(f"{name}-team-{team.team}", role=role.id, policy=policy_doc, opts=self.child())
            self._associate(name, args, f"team-{team.team}", role, namespaces=team.namespaces, service_account=team.service_account)
        self.register_outputs({})

    def _controller(self, name: str, args: IdentityArgs, label: str, account: tuple[str, str], policy: str) -> None:
        role = pod_identity_role(self, names.workload_role(name, label), args.cluster, account)
        aws.iam.RolePolicy(f"{name}-{label}", role=role.id, policy=policy, opts=self.child())
        self._associate(name, args, label, role, namespaces=(account[0],), service_account=account[1])

    def _associate(
        self, name: str, args: IdentityArgs, label: str, role: aws.iam.Role, *, namespaces: Sequence[str], service_account: str
    ) -> None:
        for namespace in namespaces:
            aws.eks.PodIdentityAssociation(
                f"{name}-{label}-{namespace}",
                cluster_name=args.cluster_name,
                namespace=namespace,
                service_account=service_account,
                role_arn=role.arn,
                tags=named(args.tags, f"{args.cluster.name}-{label}-{namespace}"),
                opts=self.child(),
            )
