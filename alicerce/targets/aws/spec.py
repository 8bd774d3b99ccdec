"""The AWS target's sections of the spec: the site (an account and region), the pool details
(instance type, capacity), the storage implementations (FSx for Lustre, EFS, S3, EBS) and the
EKS add-on names.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.text import AwsAccount, AwsName
from alicerce.spec.units import ByteSize, Cidr

EksAddon = Literal[
    "vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent", "aws-ebs-csi-driver", "aws-efs-csi-driver", "eks-node-monitoring-agent"
]


class AwsSite(SpecModel):
    """An AWS region in one account, holding one EKS cluster."""

    ROUTED: ClassVar[tuple[tuple[str, str], ...]] = (("VPC", "vpc_cidr"),)  # (label, field) of its routed address ranges

    name: Name = Field(description="Site name that node pools and storage tiers refer to.", examples=["aws"])
    provider: Literal["aws"] = Field(description="Target kind.")
    account: AwsAccount = Field(description="AWS account id (12 digits, quoted).", examples=["123456789012"])
    region: AwsName = Field(description="AWS region.", examples=["us-east-1"])
    zones: list[AwsName] = Field(min_length=1, description="Availability zones used, in order.", examples=[["us-east-1a"]])
    vpc_cidr: Cidr = Field(description="VPC address range.")
    service_cidr: Cidr | None = Field(default=None, description="Kubernetes service range (defaults to networks.serviceCidr).")
    delivery: Literal["pulumi", "argocd"] = Field(
        default="pulumi",
        description="How the in-cluster layer reaches this site's cluster: pulumi applies the operators and objects itself; "
        "argocd installs a pinned Argo CD that syncs the generated kubernetes/<site>/ tree from gitops.repository.",
    )


class ExistingPlacementGroup(SpecModel):
    """A cluster placement group that already exists (for instance the one a capacity reservation was created in)."""

    name: AwsName = Field(min_length=1, max_length=255, description="Name of the existing placement group.", examples=["p5-cpg"])


class AwsNodeUpdate(SpecModel):
    """How EKS replaces a pool's nodes when their AMI or Kubernetes version changes (the node group's updateConfig)."""

    max_unavailable: StrictInt | None = Field(
        default=None, ge=1, le=100, description="Nodes replaced at once (or give maxUnavailablePercentage). Default: 1."
    )
    max_unavailable_percentage: StrictInt | None = Field(
        default=None, ge=1, le=100, description="Share of nodes replaced at once, in percent (or give maxUnavailable)."
    )
    strategy: Literal["default", "minimal"] | None = Field(
        default=None,
        description="default launches replacements before terminating (needs spare capacity); minimal terminates first. "
        "Default: minimal for reserved capacity and capacity blocks (no spare reserved capacity to surge into), default otherwise.",
    )


class AwsPool(SpecModel):
    """How a pool is built on AWS."""

    instance_type: AwsName = Field(description="EC2 instance type.", examples=["p5.48xlarge"])
    additional_instance_types: list[AwsName] = Field(
        default_factory=list,
        description="More instance types the node group may launch (Spot diversification): same GPU model and count as "
        "instanceType, and at least its vCPUs and memory (the autoscaler builds new nodes from instanceType).",
        examples=[["m6i.16xlarge", "m7a.16xlarge"]],
    )
    capacity_type: Literal["on-demand", "spot", "capacity-reservation", "capacity-block"] = Field(
        default="on-demand", description="How the capacity is bought."
    )
    capacity_reservation_id: AwsName | None = Field(
        default=None, description="ODCR or Capacity Block id (cr-...), for reserved capacity types."
    )
    placement_group: StrictBool | ExistingPlacementGroup | None = Field(
        default=None,
        description="Cluster placement group: true creates one, {name: ...} uses an existing one (the group a capacity "
        "reservation was created in). Default: a new one for EFA pools, none for reserved capacity or capacity blocks.",
    )
    zone: AwsName | None = Field(
        default=None,
        description="Pin the pool to one zone; required for EFA pools and reserved capacity at multi-zone sites "
        "(EFA traffic does not cross zones; a reservation lives in one zone).",
    )
    root_volume: ByteSize = Field(
        default=200 * 2**30, ge=2**30, le=64 * 2**40, description="Root volume size (1GiB to 64TiB, the EBS limit)."
    )
    update: AwsNodeUpdate = Field(default_factory=AwsNodeUpdate, description="How node replacements roll (EKS updateConfig).")


class AwsFsx(SpecModel):
    implementation: Literal["fsx-lustre"] = Field(default="fsx-lustre", description="FSx for Lustre.")
    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = Field(
        default="PERSISTENT_2", description="FSx for Lustre deployment type."
    )
    per_unit_storage_throughput: StrictInt | None = Field(
        default=None, ge=1, le=10_000, description="MB/s per TiB; derived from capacity and throughput when omitted."
    )
    storage_type: Literal["SSD", "HDD"] = Field(default="SSD", description="Storage media (HDD only with PERSISTENT_1).")
    storage_capacity: ByteSize | None = Field(
        default=None, gt=0, description="Exact FSx capacity; derived from capacity and throughput when omitted.", examples=["50400GiB"]
    )
    zone: AwsName | None = Field(
        default=None,
        description="Zone of the file system (FSx for Lustre lives in one). Default: the zone of the site's zone-pinned "
        "training pools, else the site's first zone.",
    )


class AwsEfs(SpecModel):
    implementation: Literal["efs"] = Field(default="efs", description="Amazon EFS.")
    throughput_mode: Literal["elastic", "bursting", "provisioned"] = Field(default="elastic", description="EFS throughput mode.")


class AwsS3(SpecModel):
    implementation: Literal["s3"] = Field(default="s3", description="Amazon S3.")
    bucket: AwsName | None = Field(default=None, description="Existing bucket to use; a new one is created when omitted.")
    versioning: StrictBool = Field(default=True, description="Object versioning.")


class AwsEbs(SpecModel):
    implementation: Literal["ebs"] = Field(default="ebs", description="Amazon EBS through the EBS CSI driver.")
    volume_type: Literal["gp3", "io2"] = Field(default="gp3", description="EBS volume type.")
