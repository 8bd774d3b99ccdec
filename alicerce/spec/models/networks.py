"""Cluster address defaults and RDMA fabrics (EFA on AWS, InfiniBand or RoCE on-prem)."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, StrictBool, StrictInt

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.units import Cidr
from alicerce.targets import FabricSections, add_sections


class Fabric(SpecModel, FabricSections):
    """A high-speed RDMA fabric joining GPU nodes: EFA on AWS, InfiniBand or RoCE on-prem."""

    name: Name = Field(description="Fabric name node pools refer to.")
    kind: Literal["rdma"] = Field(default="rdma", description="Fabric kind.")
    rails: StrictInt = Field(
        default=8,
        ge=1,
        le=32,
        description="On-prem: RDMA adapters (rails) per node, usually one per GPU. On AWS the instance type's EFA count applies.",
    )
    gpu_direct_rdma: StrictBool = Field(default=True, description="GPUDirect RDMA between GPUs and adapters.")
    add_sections(locals(), "fabric")  # each target's transport details, where it has any


class Networks(SpecModel):
    """Cluster address defaults and RDMA fabrics."""

    pod_cidr: Cidr = Field(default=ipaddress.ip_network("100.64.0.0/16"), description="Default pod range of on-prem clusters.")
    service_cidr: Cidr = Field(default=ipaddress.ip_network("172.20.0.0/16"), description="Default Kubernetes service range.")
    fabrics: list[Fabric] = Field(default_factory=list, description="RDMA fabrics.")
