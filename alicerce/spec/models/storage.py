"""Storage tiers by class: parallel file systems, shared NFS, object stores, block and local NVMe."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.text import MountPath
from alicerce.spec.units import ByteSize, Duration, Rate
from alicerce.targets import BlockSections, ObjectSections, ParallelFsSections, SharedNfsSections, add_sections

TierPurpose = Literal["datasets", "checkpoints", "models", "scratch", "logs"]
TeamAccess = Literal["per-team", "read-only"]
TEAM_ACCESS_DESCRIPTION = (
    "How team namespaces reach the file system: per-team (each team mounts its own directory teams/<team>, read-write, "
    "and sees nothing of the others) or read-only (every team mounts the whole file system read-only, e.g. curated datasets)."
)


class _Tier(SpecModel):
    """What every storage tier has: a name and what it holds."""

    name: Name = Field(description="Tier name.")
    purpose: TierPurpose = Field(description="What the tier holds.")


class _SiteTier(_Tier):
    """A tier that lives at one site (or every site of the environment) and keeps data for a while."""

    site: Name | None = Field(default=None, description="Site holding the tier (or use sites).")
    sites: list[Name] | None = Field(
        default=None,
        min_length=1,
        description="Sites holding the tier, where it spans several; those an environment lacks are skipped. With neither "
        "site nor sites, the tier is at the environment's only site (an environment with several sites must say).",
    )
    capacity: ByteSize | None = Field(default=None, gt=0, description="Expected capacity.")
    retention: Duration | None = Field(
        default=None,
        gt=0,
        description="How long data is kept, at least and then no longer. Object tiers on AWS: no object version can be deleted "
        "or overwritten before it ends (S3 Object Lock, governance mode; needs versioning), then the lifecycle expires it. "
        "parallel-fs on AWS: days of automatic FSx backups.",
    )


class ParallelFsTier(_SiteTier, ParallelFsSections):
    """A parallel file system for datasets and checkpoints."""

    class_: Literal["parallel-fs"] = Field(alias="class", description="Storage class.")
    capacity: ByteSize = Field(gt=0, description="Usable capacity.", examples=["48TiB"])
    throughput: Rate | None = Field(default=None, gt=0, description="Aggregate throughput needed.", examples=["12GBps"])
    source: Name | None = Field(
        default=None,
        description="Object tier linked as data repository (import, and export of new and changed files); teams reach the "
        "file system only as their storageAccess grants on that tier allow.",
    )
    mount_path: MountPath = Field(description="Mount path on nodes.", examples=["/mnt/datasets"])
    team_access: TeamAccess = Field(default="per-team", description=TEAM_ACCESS_DESCRIPTION)
    add_sections(locals(), "parallel-fs")  # each target's implementation


class SharedNfsTier(_SiteTier, SharedNfsSections):
    """A shared POSIX file system for home directories, code and small models."""

    class_: Literal["shared-nfs"] = Field(alias="class", description="Storage class.")
    throughput: Rate | None = Field(default=None, gt=0, description="Aggregate throughput needed.")
    mount_path: MountPath = Field(description="Mount path on nodes.")
    team_access: TeamAccess = Field(default="per-team", description=TEAM_ACCESS_DESCRIPTION)
    add_sections(locals(), "shared-nfs")  # each target's implementation


class ObjectTier(_SiteTier, ObjectSections):
    """An object store: data lake, model registry, log archive."""

    class_: Literal["object"] = Field(alias="class", description="Storage class.")
    throughput: Rate | None = Field(default=None, gt=0, description="Aggregate throughput needed.")
    add_sections(locals(), "object")  # each target's implementation


class BlockTier(_SiteTier, BlockSections):
    """Network block storage for databases and stateful services."""

    class_: Literal["block"] = Field(alias="class", description="Storage class.")
    add_sections(locals(), "block")  # each target's implementation


class LocalNvmeTier(_Tier):
    """Node-local NVMe assembled as one RAID0 scratch volume on each node of the named pools."""

    class_: Literal["local-nvme"] = Field(alias="class", description="Storage class.")
    pools: list[Name] = Field(min_length=1, description="Node pools whose local NVMe forms the tier.")
    mount_path: MountPath = Field(description="Mount path on nodes.", examples=["/scratch"])
    filesystem: Literal["xfs", "ext4"] = Field(default="xfs", description="File system on the RAID0 array.")


StorageTier = Annotated[
    ParallelFsTier | SharedNfsTier | ObjectTier | BlockTier | LocalNvmeTier,
    Field(discriminator="class_"),
]
