"""The platform spec language: ``apiVersion: alicerce.dev/v1``, ``kind: Platform``, one module per section.

Target-specific sections (an AWS site, an on-prem pool's hosts, FSx or Lustre details) live with
their target under :mod:`alicerce.targets` and are re-exported here, so a consumer reads every
spec model from one place.
"""

from alicerce.spec.base import DNS_LABEL, Labels, Name, Precision, Purpose, SpecModel, WorkloadKind
from alicerce.spec.models.catalog import UserCatalog
from alicerce.spec.models.costs import CloudPoolCosts, Costs, OnpremPoolCosts, OnpremSiteCosts
from alicerce.spec.models.environments import Environment, Site
from alicerce.spec.models.gitops import ArgoCdSync, GitOps
from alicerce.spec.models.metadata import Metadata, Versions
from alicerce.spec.models.monitoring import AlertOverride, AlertReceiver, Monitoring, SecretKey, Slo
from alicerce.spec.models.networks import Fabric, Networks
from alicerce.spec.models.operators import GpuOperator, Kueue, Operator, Operators
from alicerce.spec.models.platform import PlatformSpec
from alicerce.spec.models.pools import (
    Accelerator,
    AcceleratorSpec,
    MigSharing,
    NodePool,
    NoSharing,
    Scaling,
    Sharing,
    Taint,
    TimeSlicing,
)
from alicerce.spec.models.security import Audit, Encryption, EndpointAccess, IdentityProvider, Security, Waiver
from alicerce.spec.models.storage import BlockTier, LocalNvmeTier, ObjectTier, ParallelFsTier, SharedNfsTier, StorageTier
from alicerce.spec.models.tenancy import Budget, Ingress, Quota, StorageGrant, Team, Tenancy
from alicerce.spec.models.workloads import (
    Adapter,
    Dataset,
    Experts,
    Growth,
    Latency,
    LatencyTarget,
    LatentAttention,
    Model,
    SlidingWindowAttention,
    Traffic,
    Workload,
)

__all__ = [
    "DNS_LABEL",
    "Accelerator",
    "AcceleratorSpec",
    "Adapter",
    "AlertOverride",
    "AlertReceiver",
    "ArgoCdSync",
    "Audit",
    "BlockTier",
    "Budget",
    "CloudPoolCosts",
    "Costs",
    "Dataset",
    "Encryption",
    "EndpointAccess",
    "Environment",
    "Experts",
    "Fabric",
    "GitOps",
    "GpuOperator",
    "Growth",
    "IdentityProvider",
    "Ingress",
    "Kueue",
    "Labels",
    "Latency",
    "LatencyTarget",
    "LatentAttention",
    "LocalNvmeTier",
    "Metadata",
    "MigSharing",
    "Model",
    "Monitoring",
    "Name",
    "Networks",
    "NoSharing",
    "NodePool",
    "ObjectTier",
    "OnpremPoolCosts",
    "OnpremSiteCosts",
    "Operator",
    "Operators",
    "ParallelFsTier",
    "PlatformSpec",
    "Precision",
    "Purpose",
    "Quota",
    "Scaling",
    "SecretKey",
    "Security",
    "SharedNfsTier",
    "Sharing",
    "Site",
    "SlidingWindowAttention",
    "Slo",
    "SpecModel",
    "StorageGrant",
    "StorageTier",
    "Taint",
    "Team",
    "Tenancy",
    "TimeSlicing",
    "Traffic",
    "UserCatalog",
    "Versions",
    "Waiver",
    "Workload",
    "WorkloadKind",
]  # fmt: skip
