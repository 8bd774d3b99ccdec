"""The EFA fabric of an AWS site: the security group EFA traffic needs.

EFA (SRD) traffic must be allowed for ALL protocols, inbound and outbound, to and from the
group itself; anything narrower makes NCCL hang or fall back to TCP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from alicerce.emit.pulumi.component import Component, named
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets.aws.spec import AwsSite


@dataclass(frozen=True)
class FabricArgs:
    name: str
    vpc_id: pulumi.Input[str]
    tags: Mapping[str, str]

    @classmethod
    def from_resolved(cls, rp: ResolvedPlatform, site: AwsSite, vpc_id: pulumi.Input[str]) -> FabricArgs:
        return cls(f"{rp.name}-{rp.environment}-{site.name}-efa", vpc_id, rp.tags)


def needs_fabric(rp: ResolvedPlatform, site: AwsSite) -> bool:
    return any(p.efa_interfaces for p in rp.pools if p.site.name == site.name)


class EfaFabric(Component):
    security_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: FabricArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:fabric:EfaFabric", name, opts)
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description="EFA: all traffic within the group",
            tags=named(args.tags, args.name),
            opts=self.child(),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-ingress-self",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="EFA: all protocols from the group itself",
            tags=named(args.tags, f"{args.name}-ingress"),
            opts=self.child(),
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-egress-self",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="EFA: all protocols to the group itself",
            tags=named(args.tags, f"{args.name}-egress"),
            opts=self.child(),
        )
        self.security_group_id = sg.id
        self.register_outputs({"securityGroupId": sg.id})
