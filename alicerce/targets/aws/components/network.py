"""The VPC of an AWS site: public and private subnets per zone, NAT, endpoints, flow logs."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, log_retention_days, named
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.components.policies import as_json, flow_logs_policy, flow_logs_trust
from alicerce.targets.aws.spec import AwsSite

# Interface endpoints, so that what runs in the private subnets reaches AWS without NAT (EKS user guide,
# "Deploy private clusters with limited internet access", endpoint table): ec2 (VPC CNI, nodes), ecr.api
# and ecr.dkr (images), sts (IRSA), logs, eks-auth ("required for EKS Pod Identity in private clusters"),
# eks (cluster-autoscaler's DescribeNodegroup, its README), autoscaling (cluster-autoscaler),
# elasticloadbalancing (the load balancer controller), ssm, ssmmessages and ec2messages (Session Manager
# on the nodes, whose role carries AmazonSSMManagedInstanceCore).
INTERFACE_ENDPOINTS = (
    "autoscaling",
    "ec2",
    "ec2messages",
    "ecr.api",
    "ecr.dkr",
    "eks",
    "eks-auth",
    "elasticloadbalancing",
    "logs",
    "ssm",
    "ssmmessages",
    "sts",
)


@dataclass(frozen=True)
class NetworkArgs:
    name: str  # physical name prefix, e.g. acme-ml-prod-aws
    region: str
    cidr: str
    zones: tuple[str, ...]
    nat_per_zone: bool  # production: one NAT per zone, so a zone outage does not cut the others off
    flow_log_retention_days: int
    tags: Mapping[str, str]
    flow_log_group: str = ""
    kms_key_arn: pulumi.Input[str] | None = None  # encrypts the flow-log group
    account: str = ""
    partition: str = "aws"

    @classmethod
    def from_resolved(cls, rp: ResolvedPlatform, site: AwsSite, kms_key_arn: pulumi.Input[str] | None = None) -> NetworkArgs:
        return cls(
            name=names.site_name(rp, site),
            region=site.region,
            cidr=str(site.vpc_cidr),
            zones=tuple(site.zones),
            nat_per_zone=rp.tier == "production",
            flow_log_retention_days=log_retention_days(rp.spec.security.audit.retention),
            tags=rp.tags,
            flow_log_group=names.flow_log_group(rp, site),
            kms_key_arn=kms_key_arn,
            account=site.account,
            partition=names.partition(site.region),
        )


@dataclass(frozen=True)
class SubnetLayout:
    zone: str
    private: str
    public: str


def subnet_layout(cidr: str, zones: tuple[str, ...]) -> list[SubnetLayout]:
    """Large private subnets for nodes and pods (the VPC CNI gives pods VPC addresses), small public ones.

    The VPC splits into 2^k blocks with k the fewest bits that leave one block spare; zone i gets
    private block i, and the spare last block splits again into the public subnets.
    """
    net = ipaddress.IPv4Network(cidr)  # a VPC's primary range is IPv4
    bits = names.subnet_bits(len(zones))  # rule AL313 checks the resulting sizes against the /28 limit
    blocks = list(net.subnets(prefixlen_diff=bits))
    public = list(blocks[-1].subnets(prefixlen_diff=bits))
    return [SubnetLayout(zone, str(blocks[i]), str(public[i])) for i, zone in enumerate(zones)]


class Network(Component):
    vpc_id: pulumi.Output[str]
    private_subnet_ids: dict[str, pulumi.Output[str]]
    public_subnet_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:network:Network", name, opts)
        tags = args.tags
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=named(tags, args.name),
            opts=self.child(),
        )
        # the VPC's default group, managed with no rules: anything launched without a group of its own gets no
        # traffic in or out (VPC user guide, "Default security groups for your VPCs"; CIS AWS Foundations 5.4)
        aws.ec2.DefaultSecurityGroup(f"{name}-default-sg", vpc_id=vpc.id, tags=named(tags, f"{args.name}-default"), opts=self.child())
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=named(tags, args.name), opts=self.child())
        # routes are resources of their own, never inline: a route table with inline routes owns all of them and
        # removes any route added by hand or by another stack (a peering, a VPN) at the next `pulumi up`
        # (terraform-provider-aws docs, aws_route_table: "cannot use a Route Table with in-line routes in
        # conjunction with any Route resources")
        public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=vpc.id, tags=named(tags, f"{args.name}-public"), opts=self.child())
        aws.ec2.Route(
            f"{name}-public-default", route_table_id=public_rt.id, destination_cidr_block="0.0.0.0/0", gateway_id=igw.id, opts=self.child()
        )
        self.private_subnet_ids = {}
        self.public_subnet_ids = {}
        private_rts: list[aws.ec2.RouteTable] = []
        nat: aws.ec2.NatGateway | None = None
        for plan in subnet_layout(args.cidr, args.zones):
            z = plan.zone
            public = aws.ec2.Subnet(
                f"{name}-public-{z}",
                vpc_id=vpc.id,
                cidr_block=plan.public,
                availability_zone=z,
                map_public_ip_on_launch=False,
                tags=named(tags, f"{args.name}-public-{z}", **{"kubernetes.io/role/elb": "1"}),
                opts=self.child(),
            )
            private = aws.ec2.Subnet(
                f"{name}-private-{z}",
                vpc_id=vpc.id,
                cidr_block=plan.private,
                availability_zone=z,
                tags=named(tags, f"{args.name}-private-{z}", **{"kubernetes.io/role/internal-elb": "1"}),
                opts=self.child(),
            )
            self.public_subnet_ids[z] = public.id
            self.private_subnet_ids[z] = private.id
            aws.ec2.RouteTableAssociation(f"{name}-public-{z}", subnet_id=public.id, route_table_id=public_rt.id, opts=self.child())
            if nat is None or args.nat_per_zone:
                eip = aws.ec2.Eip(f"{name}-nat-{z}", domain="vpc", tags=named(tags, f"{args.name}-nat-{z}"), opts=self.child())
                nat = aws.ec2.NatGateway(
                    f"{name}-nat-{z}",
                    allocation_id=eip.id,
                    subnet_id=public.id,
                    tags=named(tags, f"{args.name}-nat-{z}"),
                    opts=self.child(depends_on=[igw]),
                )
            rt = aws.ec2.RouteTable(
                f"{name}-private-rt-{z}", vpc_id=vpc.id, tags=named(tags, f"{args.name}-private-{z}"), opts=self.child()
            )
            aws.ec2.Route(
                f"{name}-private-default-{z}",
                route_table_id=rt.id,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=nat.id,
                opts=self.child(),
            )
            private_rts.append(rt)
            aws.ec2.RouteTableAssociation(f"{name}-private-{z}", subnet_id=private.id, route_table_id=rt.id, opts=self.child())

        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.id for rt in private_rts],
            tags=named(tags, f"{args.name}-s3"),
            opts=self.child(),
        )
        endpoint_sg = aws.ec2.SecurityGroup(
            f"{name}-endpoints",
            vpc_id=vpc.id,
            description="HTTPS from the VPC to interface endpoints",
            tags=named(tags, f"{args.name}-endpoints"),
            opts=self.child(),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-endpoints-https",
            security_group_id=endpoint_sg.id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            cidr_ipv4=args.cidr,
            description="HTTPS from the VPC",
            tags=named(tags, f"{args.name}-endpoints-https"),
            opts=self.child(),
        )
        private_ids = list(self.private_subnet_ids.values())
        for service in INTERFACE_ENDPOINTS:
            aws.ec2.VpcEndpoint(
                f"{name}-{service.replace('.', '-')}",
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{args.region}.{service}",
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=private_ids,
                security_group_ids=[endpoint_sg.id],
                tags=named(tags, f"{args.name}-{service}"),
                opts=self.child(),
            )

        log_group = aws.cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name=args.flow_log_group,
            retention_in_days=args.flow_log_retention_days,
            kms_key_id=args.kms_key_arn,
            tags=named(tags, f"{args.name}-flow-logs"),
            opts=self.child(),
        )
        role = aws.iam.Role(
            f"{name}-flow-logs",
            assume_role_policy=as_json(flow_logs_trust(args.partition, args.region, args.account)),
            tags=named(tags, f"{args.name}-flow-logs"),
            opts=self.child(),
        )
        aws.iam.RolePolicy(
            f"{name}-flow-logs",
            role=role.id,
            policy=log_group.arn.apply(lambda arn: as_json(flow_logs_policy(arn))),
            opts=self.child(),
        )
        aws.ec2.FlowLog(
            f"{name}-flow-logs",
            vpc_id=vpc.id,
            traffic_type="ALL",
            log_destination_type="cloud-watch-logs",
            log_destination=log_group.arn,
            iam_role_arn=role.arn,
            max_aggregation_interval=60,
            tags=named(tags, f"{args.name}-flow-logs"),
            opts=self.child(),
        )
        self.vpc_id = vpc.id
        self.vpc_name = args.name
        self.register_outputs({"vpcId": vpc.id, "privateSubnetIds": self.private_subnet_ids, "publicSubnetIds": self.public_subnet_ids})
