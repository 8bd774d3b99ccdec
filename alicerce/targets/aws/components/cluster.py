"""The EKS cluster of an AWS site: pinned version on standard support, KMS-encrypted secrets, every
control-plane log, private endpoint reachable from the runners the stack names, explicit admin access
entries, workload identity (Pod Identity agent, an OIDC provider for the teams), pinned
core add-ons (the VPC CNI enforcing NetworkPolicies with its own role), and the node role."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, log_retention_days, named
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models import IdentityProvider
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.policies import (
    as_json,
    cluster_key_policy,
    ebs_csi_key_policy,
    pod_identity_trust,
    service_trust,
    session_manager_policy,
)
from alicerce.targets.aws.spec import AwsSite

# Every control-plane log type EKS offers.
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# Add-ons nodes need to become Ready: installed with the cluster, before any node group.
BOOT_ADDONS = ("eks-pod-identity-agent", "vpc-cni", "kube-proxy")
# Add-ons that run as Deployments and so need nodes: installed after the node groups. The node monitoring agent
# (a DaemonSet) reports GPU, kernel, network and storage faults as node conditions; without it EKS node auto-repair,
# which every node group turns on, only sees nodes that stop reporting Ready (EKS user guide, "Detect node health
# issues and enable automatic node repair": the agent is required to detect and repair these issues).
WORKLOAD_ADDONS = ("coredns", "aws-ebs-csi-driver", "eks-node-monitoring-agent")
# The node role: join the cluster, pull images (and be reachable by Session Manager: policies.session_manager_policy,
# not AmazonSSMManagedInstanceCore). The VPC CNI's EC2 permissions are NOT here: aws-node gets them through its
# own pod-identity role (EKS user guide, "Configure Amazon VPC CNI plugin to use IRSA/Pod Identity": the node
# role keeps them only when the CNI has no role of its own).
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",
)
# EKS access policies are not IAM policies: their ARNs live under arn:aws:eks::aws:cluster-access-policy/
# (EKS user guide, "Review access policy permissions").
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# enableNetworkPolicy turns on the VPC CNI's network policy agent (EKS user guide, "Limit Pod traffic with
# Kubernetes network policies"; the add-on's configuration schema takes the string "true").
VPC_CNI_CONFIGURATION = {"enableNetworkPolicy": "true"}
KUBERNETES_API_PORT = 443


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
    partition: str = "aws"
    arn: str = ""  # the cluster's ARN, known before it exists (trust policies name it)
    log_group: str = ""
    admin_principals: tuple[str, ...] = ()  # IAM role ARNs granted cluster admin through access entries
    api_access_cidrs: tuple[str, ...] = ()  # networks (a peered or VPN-connected runner) allowed to the private endpoint
    other_api_servers: tuple[tuple[str, int], ...] = ()  # (site, port): other clusters the runner applies objects to
    identity_provider: IdentityProvider | None = None
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
        api_access_cidrs: tuple[str, ...] = (),
    ) -> ClusterArgs:
        access = rp.spec.security.endpoint_access
        return cls(
            name=names.site_name(rp, site),
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
            partition=names.partition(site.region),
            arn=names.cluster_arn(rp, site),
            log_group=names.control_plane_log_group(rp, site),
            admin_principals=admin_principals,
            api_access_cidrs=api_access_cidrs,
            other_api_servers=names.other_api_servers(rp, site),
            identity_provider=rp.spec.security.identity_provider,
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
    certificate_authority: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    node_security_group_id: pulumi.Output[str]
    api_clients_security_group_id: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]
    boot_addons: list[aws.eks.Addon]
    admin_access: list[pulumi.Resource]  # the access entries the Kubernetes layer authenticates through

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:cluster:EksCluster", name, opts)
        tags = args.tags
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=as_json(service_trust("eks.amazonaws.com", tag_session=True)),
            tags=named(tags, f"{args.name}-cluster"),
            opts=self.child(),
        )
        attach = aws.iam.RolePolicyAttachment(
            f"{name}-role-policy",
            role=role.name,
            policy_arn=f"arn:{args.partition}:iam::aws:policy/AmazonEKSClusterPolicy",
            opts=self.child(),
        )
        depends: list[pulumi.Resource] = [attach]
        if args.kms_key_arn is not None:
            depends.append(
                aws.iam.RolePolicy(
                    f"{name}-role-kms",
                    role=role.id,
                    policy=pulumi.Output.from_input(args.kms_key_arn).apply(lambda arn: as_json(cluster_key_policy(arn))),
                    opts=self.child(),
                )
            )
        # created first so that retention (and encryption) are ours, not the "never expire" group EKS would create;
        # the key policy lets CloudWatch Logs use the key for this group (policies.platform_key_policy). It holds the
        # API server's audit trail: protected like the trail's bucket, so a renamed cluster or a stack change cannot
        # delete the history with the group (review obsreview27 N4)
        depends.append(
            aws.cloudwatch.LogGroup(
                f"{name}-logs",
                name=args.log_group,
                retention_in_days=args.log_retention_days,
                kms_key_id=args.kms_key_arn,
                tags=named(tags, f"{args.name}-control-plane"),
                opts=self.child(protect=True),
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
            # admins are explicit access entries: bootstrapping the creator as well would clash with an entry for the
            # same principal (ResourceInUseException) and tie admin rights to whoever ran the first `pulumi up`
            access_config=aws.eks.ClusterAccessConfigArgs(authentication_mode="API", bootstrap_cluster_creator_admin_permissions=False),
            # STANDARD: upgrade at the end of standard support instead of paying for extended support (EKS default)
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type="STANDARD"),
            kubernetes_network_config=aws.eks.ClusterKubernetesNetworkConfigArgs(service_ipv4_cidr=args.service_cidr, ip_family="ipv4"),
            bootstrap_self_managed_addons=False,
            # the cluster holds every Kubernetes object (claims, secrets): EKS refuses DeleteCluster while deletion
            # protection is on (EKS API, CreateCluster deletionProtection), and Pulumi refuses to delete or replace it
            deletion_protection=True,
            tags=named(tags, args.name),
            opts=self.child(depends_on=depends, protect=True),
        )
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.certificate_authority = cluster.certificate_authority.data
        self.cluster_security_group_id = cluster.vpc_config.cluster_security_group_id
        self._api_access(name, args)

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
            f"{name}-node-role",
            assume_role_policy=as_json(service_trust("ec2.amazonaws.com")),
            tags=named(tags, f"{args.name}-nodes"),
            opts=self.child(),
        )
        for policy in NODE_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{policy}", role=node_role.name, policy_arn=f"arn:{args.partition}:iam::aws:policy/{policy}", opts=self.child()
            )
        aws.iam.RolePolicy(f"{name}-node-session-manager", role=node_role.id, policy=as_json(session_manager_policy()), opts=self.child())
        self.node_role_arn = node_role.arn

        # workload identity is EKS Pod Identity only (every role here trusts pods.eks.amazonaws.com): no IAM OIDC
        # provider for IRSA, which nothing would use and which would let any role trusting the issuer be assumed
        if (idp := args.identity_provider) is not None:
            aws.eks.IdentityProviderConfig(
                f"{name}-idp",
                cluster_name=cluster.name,
                oidc=aws.eks.IdentityProviderConfigOidcArgs(
                    identity_provider_config_name="teams",
                    issuer_url=idp.issuer_url,
                    client_id=idp.client_id,
                    groups_claim=idp.groups_claim,
                    groups_prefix=idp.prefix,
                    username_claim=idp.username_claim,
                    username_prefix=idp.prefix,
                ),
                tags=named(tags, f"{args.name}-teams"),
                opts=self.child(),
            )
        self.admin_access = []
        for i, principal in enumerate(args.admin_principals):
            entry = aws.eks.AccessEntry(
                f"{name}-admin-{i}",
                cluster_name=cluster.name,
                principal_arn=principal,
                type="STANDARD",
                tags=named(tags, f"{args.name}-admin-{i}"),
                opts=self.child(),
            )
            association = aws.eks.AccessPolicyAssociation(
                f"{name}-admin-{i}",
                cluster_name=cluster.name,
                principal_arn=entry.principal_arn,
                policy_arn=f"arn:{args.partition}:eks::aws:cluster-access-policy/{ADMIN_POLICY}",
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                opts=self.child(),
            )
            self.admin_access += [entry, association]
        agent = _addon(self, name, cluster.name, args, "eks-pod-identity-agent")
        cni_role = pod_identity_role(
            self, f"{name}-vpc-cni", args, names.VPC_CNI_SA, f"arn:{args.partition}:iam::aws:policy/AmazonEKS_CNI_Policy"
        )
        cni = _addon(
            self,
            name,
            cluster.name,
            args,
            "vpc-cni",
            pod_identity=[aws.eks.AddonPodIdentityAssociationArgs(role_arn=cni_role.arn, service_account=names.VPC_CNI_SA[1])],
            configuration=VPC_CNI_CONFIGURATION,
            after=[agent],  # aws-node fetches its credentials from the agent
        )
        self.boot_addons = [agent, cni, _addon(self, name, cluster.name, args, "kube-proxy")]

        self.kubeconfig = kubeconfig(args.name, cluster.endpoint, cluster.certificate_authority.data, args.region)
        self.register_outputs({"clusterName": cluster.name, "endpoint": cluster.endpoint, "nodeRoleArn": node_role.arn})

    def _api_access(self, name: str, args: ClusterArgs) -> None:
        """Who may reach the private API endpoint: the runner security group this stack creates (attach it to a
        CI runner or a bastion inside the VPC) and the networks the stack config allows (EKS user guide, "Cluster
        API server endpoint": with public access off, the cluster security group must allow 443 from the client)."""
        tags = args.tags
        clients = aws.ec2.SecurityGroup(
            f"{name}-api-clients",
            vpc_id=args.vpc_id,
            description=f"Runners of the Kubernetes layer of {args.name}: HTTPS to the API server and AWS APIs",
            tags=named(tags, f"{args.name}-api-clients"),
            opts=self.child(),
        )
        egress = [
            ("https", "tcp", 443, "HTTPS: the API server, AWS endpoints, chart repositories, the Pulumi backend"),
            ("dns", "udp", 53, "DNS (the VPC resolver)"),
        ]
        # the runner also applies the Kubernetes layer of the environment's other sites (an on-prem API server
        # listens where its controlPlaneEndpoint says: kubespray's kube_apiserver_port 6443 by default)
        egress += [
            (f"{other}-api", "tcp", port, f"Kubernetes API of site {other} (its controlPlaneEndpoint)")
            for other, port in args.other_api_servers
            if port != 443
        ]
        for label, protocol, port, description in egress:
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-api-clients-{label}",
                security_group_id=clients.id,
                cidr_ipv4="0.0.0.0/0",
                ip_protocol=protocol,
                from_port=port,
                to_port=port,
                description=description,
                tags=named(tags, f"{args.name}-api-clients-{label}"),
                opts=self.child(),
            )
        self.api_clients_security_group_id = clients.id
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-api-from-clients",
            security_group_id=self.cluster_security_group_id,
            referenced_security_group_id=clients.id,
            ip_protocol="tcp",
            from_port=KUBERNETES_API_PORT,
            to_port=KUBERNETES_API_PORT,
            description="Kubernetes API from the runner security group",
            tags=named(tags, f"{args.name}-api-from-clients"),
            opts=self.child(),
        )
        for i, cidr in enumerate(args.api_access_cidrs):
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-api-from-{i}",
                security_group_id=self.cluster_security_group_id,
                cidr_ipv4=cidr,
                ip_protocol="tcp",
                from_port=KUBERNETES_API_PORT,
                to_port=KUBERNETES_API_PORT,
                description=f"Kubernetes API from {cidr} (alicerce:apiAccessCidrs)",
                tags=named(tags, f"{args.name}-api-from-{i}"),
                opts=self.child(),
            )


def pod_identity_role(
    parent: Component,
    name: str,
    args: ClusterArgs,
    service_account: tuple[str, str],
    *managed: str,
    namespaces: tuple[str, ...] = (),
) -> aws.iam.Role:
    """An IAM role only ``service_account`` (namespace, name) of this cluster can assume through EKS Pod Identity."""
    namespace, account = service_account
    role = aws.iam.Role(
        name,
        assume_role_policy=as_json(pod_identity_trust(args.arn, namespaces or (namespace,), account)),
        tags=named(args.tags, f"{args.name}-{account}"),
        opts=parent.child(),
    )
    for i, policy in enumerate(managed):
        aws.iam.RolePolicyAttachment(f"{name}-{i}" if len(managed) > 1 else name, role=role.name, policy_arn=policy, opts=parent.child())
    return role


def _addon(
    parent: Component,
    name: str,
    cluster_name: pulumi.Input[str],
    args: ClusterArgs,
    addon: str,
    *,
    pod_identity: Sequence[aws.eks.AddonPodIdentityAssociationArgs] | None = None,
    configuration: Mapping[str, str] | None = None,
    after: Sequence[pulumi.Resource] = (),
) -> aws.eks.Addon:
    version: pulumi.Input[str] = (
        args.addon_versions.get(addon)
        # through the site's provider (its region and account), as every resource of the component
        or aws.eks.get_addon_version_output(
            addon_name=addon, kubernetes_version=args.version, most_recent=False, opts=pulumi.InvokeOutputOptions(parent=parent)
        ).version
    )
    return aws.eks.Addon(
        f"{name}-{addon}",
        cluster_name=cluster_name,
        addon_name=addon,
        addon_version=version,
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="PRESERVE",
        configuration_values=json.dumps(dict(configuration), sort_keys=True) if configuration else None,
        tags=named(args.tags, f"{args.name}-{addon}"),
        pod_identity_associations=pod_identity,
        opts=parent.child(depends_on=list(after)),
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
        partition = args.cluster.partition
        ebs_role = pod_identity_role(
            self,
            f"{name}-ebs-csi",
            args.cluster,
            names.EBS_CSI_SA,
            f"arn:{partition}:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
        )
        if args.cluster.kms_key_arn is not None:
            # volumes for claims are encrypted with the platform key (the default StorageClass names it)
            aws.iam.RolePolicy(
                f"{name}-ebs-csi-kms",
                role=ebs_role.id,
                policy=pulumi.Output.from_input(args.cluster.kms_key_arn).apply(lambda arn: as_json(ebs_csi_key_policy(arn))),
                opts=self.child(),
            )
        ebs = [aws.eks.AddonPodIdentityAssociationArgs(role_arn=ebs_role.arn, service_account=names.EBS_CSI_SA[1])]
        for addon in WORKLOAD_ADDONS:
            _addon(self, name, args.cluster_name, args.cluster, addon, pod_identity=ebs if addon == "aws-ebs-csi-driver" else None)
        if args.efs:
            efs_role = pod_identity_role(
                self,
                f"{name}-efs-csi",
                args.cluster,
                names.EFS_CSI_SA,
                f"arn:{partition}:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy",
            )
            efs = [aws.eks.AddonPodIdentityAssociationArgs(role_arn=efs_role.arn, service_account=names.EFS_CSI_SA[1])]
            _addon(self, name, args.cluster_name, args.cluster, "aws-efs-csi-driver", pod_identity=efs)
        self.register_outputs({})
