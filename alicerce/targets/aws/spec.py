"""The AWS target's sections of the spec: the site (an account and region), the pool details
(instance type, capacity), the storage implementations (FSx for Lustre, EFS, S3, EBS) and the
EKS add-on names.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.units import ByteSize, Cidr

EksAddon = Literal["vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent", "aws-ebs-csi-driver", "aws-efs-csi-driver"]


class AwsSite(SpecModel):
    """An AWS region in one account, holding one EKS cluster."""

    ROUTED: ClassVar[tuple[tuple[str, str], ...]] = (("VPC", "vpc_cidr"),)  # (label, field) of its routed address ranges

    name: Name = Field(description="Site name that node pools and storage tiers refer to.", examples=["aws"])
    provider: Literal["aws"] = Field(description="Target kind.")
    account: str = Field(description="AWS account id (12 digits, quoted).", examples=["123456789012"])
    region: str = Field(description="AWS region.", examples=["us-east-1"])
    zones: list[str] = Field(min_length=1, description="Availability zones used, in order.", examples=[["us-east-1a"]])
    vpc_cidr: Cidr = Field(description="VPC address range.")
    service_cidr: Cidr | None = Field(default=None, description="Kubernetes service range (defaults to networks.serviceCidr).")
    delivery: Literal["pulumi", "argocd"] = Field(
        default="pulumi",
        description="How the in-cluster layer reaches this site's cluster: pulumi applies the operators and objects itself; "
        "argocd installs a pinned Argo CD that syncs the generated kubernetes/<site>/ tree from gitops.repository.",
    )


class AwsPool(SpecModel):
    """How a pool is built on AWS."""

    instance_type: str = Field(description="EC2 instance type.", examples=["p5.48xlarge"])
    capacity_type: Literal["on-demand", "spot", "capacity-reservation", "capacity-block"] = Field(
        default="on-demand", description="How the capacity is bought."
    )
    capacity_reservation_id: str | None = Field(
        default=None, description="ODCR or Capacity Block id (cr-...), for reserved capacity types."
    )
    placement_group: StrictBool | None = Field(
        default=None,
        description="Cluster placement group. Default: on for EFA pools, unless capacity is reserved or a block.",
    )
    zone: str | None = Field(
        default=None,
        description="Pin the pool to one zone; required for EFA pools at multi-zone sites (EFA traffic does not cross zones).",
    )
    root_volume: ByteSize = Field(default=200 * 2**30, description="Root volume size.")


class AwsFsx(SpecModel):
    implementation: Literal["fsx-lustre"] = Field(default="fsx-lustre", description="FSx for Lustre.")
    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = Field(
        default="PERSISTENT_2", description="FSx for Lustre deployment type."
    )
    per_unit_storage_throughput: StrictInt | None = Field(
        default=None, description="MB/s per TiB; derived from capacity and throughput when omitted."
    )
    storage_type: Literal["SSD", "HDD"] = Field(default="SSD", description="Storage media (HDD only with PERSISTENT_1).")
    storage_capacity: ByteSize | None = Field(
        default=None, description="Exact FSx capacity; derived from capacity and throughput when omitted.", examples=["50400GiB"]
    )


class AwsEfs(SpecModel):
    implementation: Literal["efs"] = Field(default="efs", description="Amazon EFS.")
    throughput_mode: Literal["elastic", "bursting", "provisioned"] = Field(default="elastic", description="EFS throughput mode.")


class AwsS3(SpecModel):
    implementation: Literal["s3"] = Field(default="s3", description="Amazon S3.")
    bucket: str | None = Field(default=None, description="Existing bucket to use; a new one is created when omitted.")
    versioning: StrictBool = Field(default=True, description="Object versioning.")


class AwsEbs(SpecModel):
    implementation: Literal["ebs"] = Field(default="ebs", description="Amazon EBS through the EBS CSI driver.")
    volume_type: Literal["gp3", "io2"] = Field(default="gp3", description="EBS volume type.")
