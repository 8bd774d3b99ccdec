"""The EKS cluster of an AWS site: pinned version, KMS-encrypted secrets, every control-plane log,
private endpoint, access entries and workload identity, pinned core add-ons, and the node role."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, log_retention_days, named
from alicerce.emit.pulumi.stack import OidcIdentity
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models import AwsSite

# Every control-plane log type EKS offers.
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# Add-ons nodes need to become Ready: installed with the cluster, before any node group.
BOOT_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
# Add-ons that run as Deployments and so need nodes: installed after the node groups.
WORKLOAD_ADDONS = ("coredns", "aws-ebs-csi-driver")
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
ADMIN_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterAdminPolicy"


def _assume(service: str, actions: Sequence[str] = ("sts:AssumeRole",)) -> str:
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@dataclass(frozen=True)
class ClusterArgs:
    name: str
    region: str
    version: str
    service_cidr: str
    endpoint_private: bool
    endpoint_public: bool
    public_cidrs: tuple[str, ...]
    log_retention_days: int
    tags: Mapping[str, str]
    vpc_id: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]
    kms_key_arn: pulumi.Input[str] | None  # None: secrets encryption off (only outside production)
    admin_principals: tuple[str, ...] = ()  # IAM role ARNs granted cluster admin through access entries
    oidc: OidcIdentity | None = None
    addon_versions: Mapping[str, str] = field(default_factory=dict)  # pins; others: AWS's default for the version at deploy

    @classmethod
    def from_resolved(
        cls,
        rp: ResolvedPlatform,
        site: AwsSite,
        *,
        vpc_id: pulumi.Input[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        kms_key_arn: pulumi.Input[str] | None,
        admin_principals: tuple[str, ...] = (),
        oidc: OidcIdentity | None = None,
    ) -> ClusterArgs:
        access = rp.spec.security.endpoint_access
        return cls(
            name=f"{rp.name}-{rp.environment}-{site.name}",
            region=site.region,
            version=rp.versions.kubernetes,
            service_cidr=str(site.service_cidr),
            endpoint_private=access.private or rp.tier == "production",
            endpoint_public=access.public,
            public_cidrs=tuple(str(c) for c in access.public_cidrs),
            log_retention_days=log_retention_days(rp.spec.security.audit.retention),
            tags=rp.tags,
            vpc_id=vpc_id,
            subnet_ids=subnet_ids,
            kms_key_arn=kms_key_arn if rp.spec.security.encryption.at_rest else None,
            admin_principals=admin_principals,
            oidc=oidc,
            addon_versions=rp.eks_addons,
        )


def kubeconfig(name: str, endpoint: pulumi.Input[str], ca_data: pulumi.Input[str], region: str) -> pulumi.Output[str]:
    """A kubeconfig that authenticates with `aws eks get-token` (a secret output)."""

    def render(args: list[str]) -> str:
        url, ca = args
        user = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "aws",
                "args": ["eks", "get-token", "--cluster-name", name, "--region", region],
            }
        }
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": name, "cluster": {"server": url, "certificate-authority-data": ca}}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
                "current-context": name,
                "users": [{"name": name, "user": user}],
            },
            sort_keys=True,
        )

    return pulumi.Output.secret(pulumi.Output.all(endpoint, ca_data).apply(render))


class EksCluster(Component):
    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    node_security_group_id: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:cluster:EksCluster", name, opts)
        tags = args.tags
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=_assume("eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")),
            tags=named(tags, f"{args.name}-cluster"),
            opts=self.child(),
        )
        attach = aws.iam.RolePolicyAttachment(
            f"{name}-role-policy", role=role.name, policy_arn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy", opts=self.child()
        )
        depends: list[pulumi.Resource] = [attach]
        if args.kms_key_arn is not None:
            depends.append(
                aws.iam.RolePolicy(
                    f"{name}-role-kms",
                    role=role.id,
                    policy=pulumi.Output.from_input(args.kms_key_arn).apply(
                        lambda arn: json.dumps(
                            {
                                "Version": "2012-10-17",
                                "Statement": [
                                    {
                                        "Effect": "Allow",
                                        "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"],
                                        "Resource": arn,
                                    }
                                ],
                            }
                        )
                    ),
                    opts=self.child(),
                )
            )
        # created first so that retention is ours, not the "never expire" group EKS would create
        depends.append(
            aws.cloudwatch.LogGroup(
                f"{name}-logs",
                name=f"/aws/eks/{args.name}/cluster",
                retention_in_days=args.log_retention_days,
                kms_key_id=args.kms_key_arn,
                tags=named(tags, f"{args.name}-control-plane"),
                opts=self.child(),
            )
        )
        cluster = aws.eks.Cluster(
            f"{name}-eks",
            name=args.name,
            version=args.version,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=list(args.subnet_ids),
                endpoint_private_access=args.endpoint_private,
                endpoint_public_access=args.endpoint_public,
                public_access_cidrs=list(args.public_cidrs) if args.endpoint_public else None,
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=args.kms_key_arn), resources=["secrets"]
            )
            if args.kms_key_arn is not None
            else None,
            enabled_cluster_log_types=list(LOG_TYPES),
            access_config=aws.eks.ClusterAccessConfigArgs(authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True),
            kubernetes_network_config=aws.eks.ClusterKubernetesNetworkConfigArgs(service_ipv4_cidr=args.service_cidr, ip_family="ipv4"),
            bootstrap_self_managed_addons=False,
            tags=named(tags, args.name),
            opts=self.child(depends_on=depends),
        )
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.cluster_security_group_id = cluster.vpc_config.cluster_security_group_id

        node_sg = aws.ec2.SecurityGroup(
            f"{name}-nodes",
            vpc_id=args.vpc_id,
            description=f"Nodes of {args.name}",
            tags=named(tags, f"{args.name}-nodes"),
            opts=self.child(),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nodes-self",
            security_group_id=node_sg.id,
            referenced_security_group_id=node_sg.id,
            ip_protocol="-1",
            description="node to node",
            tags=named(tags, f"{args.name}-nodes-self"),
            opts=self.child(),
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-nodes-egress",
            security_group_id=node_sg.id,
            cidr_ipv4="0.0.0.0/0",
            ip_protocol="-1",
            description="nodes reach anything (through NAT or endpoints)",
            tags=named(tags, f"{args.name}-nodes-egress"),
            opts=self.child(),
        )
        self.node_security_group_id = node_sg.id

        node_role = aws.iam.Role(
            f"{name}-node-role", assume_role_policy=_assume("ec2.amazonaws.com"), tags=named(tags, f"{args.name}-nodes"), opts=self.child()
        )
        for policy in NODE_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{policy}", role=node_role.name, policy_arn=f"arn:aws:iam::aws:policy/{policy}", opts=self.child()
            )
        self.node_role_arn = node_role.arn

        # workload identity: IRSA issuer for charts that use it, and the Pod Identity agent add-on
        aws.iam.OpenIdConnectProvider(
            f"{name}-oidc",
            url=cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer),  # type: ignore[index]
            client_id_lists=["sts.amazonaws.com"],
            tags=named(tags, f"{args.name}-irsa"),
            opts=self.child(),
        )
        if args.oidc is not None:
            aws.eks.IdentityProviderConfig(
                f"{name}-idp",
                cluster_name=cluster.name,
                oidc=aws.eks.IdentityProviderConfigOidcArgs(
                    identity_provider_config_name="teams",
                    issuer_url=args.oidc.issuer_url,
                    client_id=args.oidc.client_id,
                    groups_claim="groups",
                    groups_prefix=args.oidc.groups_prefix,
                    username_claim="email",
                    username_prefix=args.oidc.groups_prefix,
                ),
                tags=named(tags, f"{args.name}-teams"),
                opts=self.child(),
            )
        for i, principal in enumerate(args.admin_principals):
            entry = aws.eks.AccessEntry(
                f"{name}-admin-{i}",
                cluster_name=cluster.name,
                principal_arn=principal,
                type="STANDARD",
                tags=named(tags, f"{args.name}-admin-{i}"),
                opts=self.child(),
            )
            aws.eks.AccessPolicyAssociation(
                f"{name}-admin-{i}",
                cluster_name=cluster.name,
                principal_arn=entry.principal_arn,
                policy_arn=ADMIN_POLICY,
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                opts=self.child(),
            )
        for addon in BOOT_ADDONS:
            _addon(self, name, cluster.name, args, addon)

        self.kubeconfig = kubeconfig(args.name, cluster.endpoint, cluster.certificate_authority.data, args.region)
        self.register_outputs({"clusterName": cluster.name, "endpoint": cluster.endpoint, "nodeRoleArn": node_role.arn})


def _addon(
    parent: Component,
    name: str,
    cluster_name: pulumi.Input[str],
    args: ClusterArgs,
    addon: str,
    *,
    pod_identity: Sequence[aws.eks.AddonPodIdentityAssociationArgs] | None = None,
) -> aws.eks.Addon:
    version: pulumi.Input[str] = (
        args.addon_versions.get(addon)
        or aws.eks.get_addon_version_output(addon_name=addon, kubernetes_version=args.version, most_recent=False).version
    )
    return aws.eks.Addon(
        f"{name}-{addon}",
        cluster_name=cluster_name,
        addon_name=addon,
        addon_version=version,
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="PRESERVE",
        tags=named(args.tags, f"{args.name}-{addon}"),
        pod_identity_associations=pod_identity,
        opts=parent.child(),
    )


@dataclass(frozen=True)
class AddonsArgs:
    cluster: ClusterArgs
    cluster_name: pulumi.Input[str]
    efs: bool = False  # the site has EFS tiers: install the EFS CSI driver too


class EksAddons(Component):
    """Core add-ons that run as Deployments (CoreDNS, EBS CSI): created once node groups exist."""

    def __init__(self, name: str, args: AddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:cluster:EksAddons", name, opts)
        ebs = self._csi_identity(name, args, "ebs", "AmazonEBSCSIDriverPolicy")
        for addon in WORKLOAD_ADDONS:
            _addon(self, name, args.cluster_name, args.cluster, addon, pod_identity=ebs if addon == "aws-ebs-csi-driver" else None)
        if args.efs:
            efs = self._csi_identity(name, args, "efs", "AmazonEFSCSIDriverPolicy")
            _addon(self, name, args.cluster_name, args.cluster, "aws-efs-csi-driver", pod_identity=efs)
        self.register_outputs({})

    def _csi_identity(self, name: str, args: AddonsArgs, driver: str, policy: str) -> list[aws.eks.AddonPodIdentityAssociationArgs]:
        """An IAM role for a CSI driver's controller, bound to its service account by pod identity."""
        role = aws.iam.Role(
            f"{name}-{driver}-csi",
            assume_role_policy=_assume("pods.eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")),
            tags=named(args.cluster.tags, f"{args.cluster.name}-{driver}-csi"),
            opts=self.child(),
        )
        aws.iam.RolePolicyAttachment(
            f"{name}-{driver}-csi", role=role.name, policy_arn=f"arn:aws:iam::aws:policy/service-role/{policy}", opts=self.child()
        )
        return [aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=f"{driver}-csi-controller-sa")]
