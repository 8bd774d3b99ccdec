"""The whole platform spec: every section in one document."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.models.catalog import UserCatalog
from alicerce.spec.models.costs import Costs
from alicerce.spec.models.environments import Environment
from alicerce.spec.models.gitops import GitOps
from alicerce.spec.models.metadata import Metadata, Versions
from alicerce.spec.models.monitoring import Monitoring
from alicerce.spec.models.networks import Networks
from alicerce.spec.models.operators import Operators
from alicerce.spec.models.pools import NodePool
from alicerce.spec.models.security import Security, Waiver
from alicerce.spec.models.storage import StorageTier
from alicerce.spec.models.tenancy import Tenancy
from alicerce.spec.models.workloads import Workload


class PlatformSpec(SpecModel):
    """An ML platform: every environment, site, pool, tier, team and workload, in one file."""

    api_version: Literal["alicerce.dev/v1"] = Field(description="Spec language version.")
    kind: Literal["Platform"] = Field(description="Document kind.")
    metadata: Metadata = Field(description="Ownership and labels.")
    versions: Versions = Field(default_factory=Versions, description="Pinned versions (defaults: the tested bill of materials).")
    environments: dict[Name, Environment] = Field(min_length=1, description="Environments by name.")
    node_pools: list[NodePool] = Field(default_factory=list, description="Node pools.")
    storage: list[StorageTier] = Field(default_factory=list, description="Storage tiers.")
    networks: Networks = Field(default_factory=Networks, description="Address defaults and RDMA fabrics.")
    operators: Operators = Field(default_factory=Operators, description="In-cluster operators.")
    monitoring: Monitoring = Field(default_factory=Monitoring, description="Monitoring, SLOs and alerts.")
    tenancy: Tenancy = Field(default_factory=Tenancy, description="Teams and quotas.")
    security: Security = Field(default_factory=Security, description="Security posture.")
    waivers: list[Waiver] = Field(default_factory=list, description="Time-boxed exceptions to rules.")
    workloads: list[Workload] = Field(default_factory=list, description="The workloads the platform exists for.")
    costs: Costs = Field(default_factory=Costs, description="Cost inputs for the TCO and the growth forecast (catalog defaults otherwise).")
    gitops: GitOps = Field(default_factory=GitOps, description="The repository of the generated trees, for Argo CD and CI.")
    catalog: UserCatalog = Field(
        default_factory=UserCatalog,
        description="GPUs and instance types the built-in catalog lacks, declared with the same facts and their sources.",
    )
