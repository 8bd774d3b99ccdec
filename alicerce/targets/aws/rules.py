"""The AWS target's rules: instance types and their GPUs, EFA and zones, reserved capacity, FSx settings."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from alicerce.catalog.fsx import GIB, is_valid_capacity, next_capacity, options
from alicerce.catalog.models import FsxOption, InstanceType
from alicerce.resolve.model import ResolvedTier
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean
from alicerce.spec.models import LocalNvmeTier, ObjectTier, ParallelFsTier, SharedNfsTier
from alicerce.spec.paths import SpecPath
from alicerce.targets.aws import resolve as names
from alicerce.targets.aws.resolve import RESERVED, TRAINING_PURPOSES, fsx_zone
from alicerce.targets.aws.spec import AwsSite

rules = RuleSet()


def pool_instance(ctx: RuleContext, index: int) -> InstanceType | None:
    """The resolved instance type of the pool at ``index`` (None off AWS or when unknown)."""
    pool = ctx.resolved_pools.get(index)
    return pool.instance if pool is not None else None


@rules.rule("AL208", "instance-type-known", "AWS pools use an instance type the catalog knows.")
def instance_known(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        if pool.aws is not None and ctx.catalog.instance(pool.aws.instance_type) is None:
            name = pool.aws.instance_type
            hint = (
                did_you_mean(name, ctx.catalog.instance_names())
                or "see `alicerce catalog instances`, or declare it under catalog.instanceTypes"
            )
            yield Finding(S.node_pools[i].aws.instance_type, f'unknown instance type "{name}"', hint, name)


@rules.rule("AL209", "accelerator-matches-instance", "A pool's accelerator model and count match its instance type.")
def accelerator_matches(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        instance = pool_instance(ctx, i)
        if instance is None:
            continue
        gpu = ctx.pool_gpu(i)
        path = S.node_pools[i].accelerator
        if instance.gpu is None:
            if pool.accelerator is not None:
                yield Finding(
                    path,
                    f"{instance.type} has no GPUs, but the pool declares {pool.accelerator.model}",
                    "remove the accelerator or choose a GPU instance type",
                    pool.accelerator.model,
                )
            continue
        expected = f"{instance.gpu}:{instance.gpus}"
        if pool.accelerator is None:
            yield Finding(
                S.node_pools[i],
                f"{instance.type} has {instance.gpus} x {instance.gpu}, but the pool declares no accelerator",
                f'add accelerator: "{expected}"',
                resource=pool.name,
            )
        elif gpu is not None and (gpu.id != instance.gpu or pool.accelerator.count != instance.gpus):
            declared = f"{gpu.id}:{pool.accelerator.count}"
            yield Finding(path, f"{instance.type} has {expected}, not {declared}", f'write "{expected}"', declared)


@rules.rule("AL211", "efa-capable", "A pool on an RDMA fabric at an AWS site uses an EFA-capable instance type.")
def efa_capable(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        instance = pool_instance(ctx, i)
        if pool.fabric is not None and instance is not None and instance.efa is None:
            capable = sorted(t.type for t in ctx.catalog.instances if t.efa is not None and t.gpu == instance.gpu)
            hint = (
                f"EFA-capable types with the same GPU: {', '.join(capable)}"
                if capable
                else "choose an EFA-capable instance type or drop the fabric"
            )
            yield Finding(S.node_pools[i].fabric, f"{instance.type} has no EFA, so it cannot join fabric {pool.fabric}", hint, pool.fabric)


@rules.rule("AL212", "efa-single-zone", "An EFA pool sits in one availability zone of its site (EFA traffic does not cross zones).")
def efa_single_zone(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        site = ctx.pool_site(pool)
        if not isinstance(site, AwsSite) or pool.aws is None:
            continue
        zone = pool.aws.zone
        if zone is not None and zone not in site.zones:
            yield Finding(
                S.node_pools[i].aws.zone,
                f'zone "{zone}" is not one of site {site.name}\'s zones',
                did_you_mean(zone, site.zones) or f"use one of: {', '.join(site.zones)}",
                zone,
            )
        elif zone is None and pool.fabric is not None and len(site.zones) > 1:
            yield Finding(
                S.node_pools[i].aws,
                f'EFA pool "{pool.name}" must be pinned to one zone; site {site.name} has {len(site.zones)}',
                f'add zone: "{site.zones[0]}" (where your capacity is)',
                resource=pool.name,
            )


@rules.rule(
    "AL213",
    "placement-group-capacity",
    "Reserved capacity goes into a placement group only when it was reserved in that group (placementGroup: {name: ...}).",
)
def placement_group(ctx: RuleContext) -> Iterable[Finding]:
    """EC2 user guide, "Capacity Reservations in cluster placement groups": a reservation made in a cluster
    placement group is used by launches into that group; forcing a new group onto capacity reserved outside
    it fails with InsufficientInstanceCapacity (terraform-aws-eks PR 3730)."""
    for i, pool in ctx.indexed_pools():
        if pool.aws is not None and pool.aws.placement_group is True and pool.aws.capacity_type in RESERVED:
            yield Finding(
                S.node_pools[i].aws.placement_group,
                f"a new placement group with {pool.aws.capacity_type} capacity fails with InsufficientInstanceCapacity",
                "remove placementGroup, or name the group the reservation was created in: placementGroup: {name: <group>}",
                True,
            )


@rules.rule("AL214", "capacity-reservation-id", "Reserved capacity types name their reservation; others do not.")
def reservation_id(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        aws = pool.aws
        if aws is None:
            continue
        if aws.capacity_type in RESERVED and not aws.capacity_reservation_id:
            yield Finding(
                S.node_pools[i].aws.capacity_type,
                f"{aws.capacity_type} needs capacityReservationId",
                "add capacityReservationId: cr-...",
                aws.capacity_type,
            )
        elif aws.capacity_type not in RESERVED and aws.capacity_reservation_id:
            yield Finding(
                S.node_pools[i].aws.capacity_reservation_id,
                f"capacityReservationId is set but capacityType is {aws.capacity_type}",
                "set capacityType: capacity-reservation or capacity-block",
                aws.capacity_reservation_id,
                key=True,
            )
        elif aws.capacity_reservation_id and not aws.capacity_reservation_id.startswith("cr-"):
            yield Finding(
                S.node_pools[i].aws.capacity_reservation_id,
                f'"{aws.capacity_reservation_id}" is not a capacity reservation id',
                "ids look like cr-0123456789abcdef0",
                aws.capacity_reservation_id,
            )


@rules.rule("AL222", "capacity-block-size", "A Capacity Block pool holds no more nodes than one block sells.")
def capacity_block_size(ctx: RuleContext) -> Iterable[Finding]:
    """A pool launches into the one Capacity Block its capacityReservationId names, and a block holds at most
    instancesPerBlock instances (Amazon EC2 User Guide, Find and purchase Capacity Blocks): nodes past it never launch."""
    most = ctx.catalog.prices.capacityBlocks.instancesPerBlock
    for i, pool in ctx.indexed_pools():
        if pool.aws is not None and pool.aws.capacity_type == "capacity-block" and pool.scaling.max > most:
            yield Finding(S.node_pools[i].scaling.max, f"a Capacity Block holds at most {most} instances: scaling.max "
                          f"{pool.scaling.max} cannot launch past {most} into {pool.aws.capacity_reservation_id}",
                          f"split the pool into pools of at most {most} nodes, one block each", pool.scaling.max)  # fmt: skip


@rules.rule("AL231", "fsx-per-unit-throughput", "An FSx per-unit throughput is one its deployment type accepts.")
def fsx_per_unit(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, ParallelFsTier) or tier.aws is None or tier.aws.per_unit_storage_throughput is None:
            continue
        aws = tier.aws
        allowed = [o.perUnit for o in options(ctx.catalog.fsx, aws.deployment_type, aws.storage_type) if o.perUnit]
        path = S.storage[i].aws.per_unit_storage_throughput
        if not allowed:
            yield Finding(
                path,
                f"{aws.deployment_type} takes no perUnitStorageThroughput",
                "scratch file systems have a fixed throughput; remove the setting",
                aws.per_unit_storage_throughput,
                key=True,
            )
        elif aws.per_unit_storage_throughput not in allowed:
            yield Finding(
                path,
                f"{aws.deployment_type} {aws.storage_type} accepts {', '.join(map(str, allowed))} MB/s/TiB, "
                f"not {aws.per_unit_storage_throughput}",
                None,
                aws.per_unit_storage_throughput,
            )


def _steps_text(option: FsxOption) -> str:
    fixed = ", ".join(f"{g:,}" for g in option.fixedGiB)
    return f"{fixed + ' GiB or ' if fixed else ''}multiples of {option.multipleOfGiB:,} GiB"


@rules.rule("AL232", "fsx-capacity-steps", "A pinned FSx capacity is a size AWS accepts for the deployment type.")
def fsx_capacity(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, ParallelFsTier) or tier.aws is None or tier.aws.storage_capacity is None:
            continue
        aws = tier.aws
        path = S.storage[i].aws.storage_capacity
        capacity = aws.storage_capacity
        assert capacity is not None
        gib = capacity / GIB
        fitting = options(ctx.catalog.fsx, aws.deployment_type, aws.storage_type, aws.per_unit_storage_throughput)
        if not fitting:
            continue  # AL230/AL231 report the combination itself
        if gib != int(gib) or not any(is_valid_capacity(o, int(gib)) for o in fitting):
            floor = max(gib, tier.capacity / GIB)
            near = sorted({next_capacity(o, floor) for o in fitting})
            steps = "; ".join(sorted({_steps_text(o) for o in fitting}))
            yield Finding(
                path,
                f"FSx {aws.deployment_type} {aws.storage_type} takes {steps}, not {gib:g} GiB",
                "try " + " or ".join(f"{g}GiB" for g in near),
                f"{gib:g}GiB",
            )
        elif gib < tier.capacity / GIB:
            yield Finding(
                path,
                f"storageCapacity {gib:g} GiB is smaller than the tier's capacity {tier.capacity / GIB:g} GiB",
                "raise storageCapacity or lower capacity",
                f"{gib:g}GiB",
            )


@rules.rule("AL233", "parallel-fs-throughput", "A parallel-fs tier's pinned FSx settings deliver its declared throughput.")
def parallel_fs_throughput(ctx: RuleContext) -> Iterable[Finding]:
    for tier in ctx.resolved.storage:
        spec = tier.spec
        fsx = tier.fsx  # the configuration resolve chose, pinned values kept as written
        if not isinstance(spec, ParallelFsTier) or spec.aws is None or spec.throughput is None or fsx is None:
            continue
        if spec.aws.per_unit_storage_throughput is None and spec.aws.storage_capacity is None:
            continue  # derived: resolve picked capacity and per-unit throughput that meet it
        if fsx.throughput_mbps * 1e6 < spec.throughput:
            yield Finding(
                S.storage[tier.index].throughput,
                f"{fsx.capacity_gib:,} GiB at {fsx.per_unit_throughput or 'baseline'} MB/s/TiB gives "
                f"{fsx.throughput_mbps / 1000:.2f} GB/s, below the {spec.throughput / 1e9:g} GB/s declared",
                "remove the pinned storageCapacity/perUnitStorageThroughput to let alicerce size it, or raise them",
                spec.throughput,
            )


@rules.rule("AL234", "local-nvme-pools", "Pools in a local-nvme tier have instance-store NVMe.")
def local_nvme(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, LocalNvmeTier):
            continue
        for j, name in enumerate(tier.pools):
            pool = ctx.pools.get(name)
            if pool is None or pool.aws is None or not isinstance(ctx.pool_site(pool), AwsSite):
                continue
            instance = ctx.catalog.instance(pool.aws.instance_type)
            if instance is not None and instance.localNvme is None:
                yield Finding(
                    S.storage[i].pools[j],
                    f"{instance.type} (pool {name}) has no instance-store NVMe",
                    "choose an instance type with local NVMe or drop the pool from this tier",
                    name,
                )


@rules.rule("AL241", "zones-in-region", "An AWS site's zones belong to its region and are listed once.")
def zones_in_region(ctx: RuleContext) -> Iterable[Finding]:
    for s, site in enumerate(ctx.env.sites):
        if not isinstance(site, AwsSite):
            continue
        seen: set[str] = set()
        for z, zone in enumerate(site.zones):
            path = S.environments[ctx.env_name].sites[s].zones[z]
            if not re.fullmatch(rf"{re.escape(site.region)}(?:[a-z]|-[a-z]+-\d+[a-z])", zone):
                yield Finding(path, f'zone "{zone}" is not in region {site.region}', f'zones look like "{site.region}a"', zone)
            elif zone in seen:
                yield Finding(path, f'zone "{zone}" is listed twice', None, zone)
            seen.add(zone)


@rules.rule("AL236", "fsx-storage-type", "An FSx deployment type is offered on the storage media the tier names.")
def fsx_storage_type(ctx: RuleContext) -> Iterable[Finding]:
    for tier in ctx.resolved.storage:
        fsx = tier.spec.aws if isinstance(tier.spec, ParallelFsTier) else None
        if fsx is None or "fsx-lustre" not in tier.implementations.values():
            continue
        if not options(ctx.catalog.fsx, fsx.deployment_type, fsx.storage_type):
            yield Finding(
                S.storage[tier.index].aws.storage_type,
                f"FSx {fsx.deployment_type} has no {fsx.storage_type} storage",
                "HDD exists only with PERSISTENT_1",
                fsx.storage_type,
            )


FSX_MAX_BACKUP_DAYS = 90  # FSx API, CreateFileSystemLustreConfiguration.AutomaticBackupRetentionDays: 0-90


@rules.rule("AL290", "spot-diversified", "Spot pools may launch more than one instance type.", waivable=True)
def spot_diversified(ctx: RuleContext) -> Iterable[Finding]:
    """EKS user guide, "Managed node groups", Spot: give a Spot node group several instance types so that it
    draws on several Spot capacity pools (price-capacity-optimized allocation)."""
    for i, pool in ctx.indexed_pools():
        aws = pool.aws
        if aws is not None and aws.capacity_type == "spot" and not [t for t in aws.additional_instance_types if t != aws.instance_type]:
            yield Finding(
                S.node_pools[i].aws.capacity_type,
                f"Spot pool {pool.name} launches only {aws.instance_type}: one Spot capacity pool, interrupted all at once",
                "add additionalInstanceTypes with the same GPUs and at least the same vCPUs and memory",
                aws.capacity_type,
                resource=pool.name,
            )


@rules.rule(
    "AL291",
    "additional-instance-types",
    "Additional instance types are known, match the pool's GPUs and EFA, offer at least its vCPUs and memory, and are not used "
    "with reserved capacity.",
)
def additional_types(ctx: RuleContext) -> Iterable[Finding]:
    """cluster-autoscaler builds a node of a group at zero from its first instance type (cloudprovider/aws
    aws_manager.go buildNodeFromTemplate, MixedInstancesPolicy overrides); a reservation or Capacity Block is
    for one instance type (EKS user guide, Capacity Blocks: the launch template carries the one type)."""
    for i, pool in ctx.indexed_pools():
        aws = pool.aws
        primary = pool_instance(ctx, i)
        if aws is None or not aws.additional_instance_types:
            continue
        path = S.node_pools[i].aws.additional_instance_types
        if aws.capacity_type in RESERVED:
            yield Finding(
                path, f"{aws.capacity_type} capacity is reserved for {aws.instance_type} only", "remove additionalInstanceTypes", key=True
            )
            continue
        for j, name in enumerate(aws.additional_instance_types):
            other = ctx.catalog.instance(name)
            if other is None:
                hint = did_you_mean(name, ctx.catalog.instance_names()) or "see `alicerce catalog instances`"
                yield Finding(path[j], f'unknown instance type "{name}"', hint, name)
                continue
            if primary is None:
                continue
            problems = []
            if (other.gpu, other.gpus) != (primary.gpu, primary.gpus):
                problems.append(f"{other.gpus} x {other.gpu or 'no GPU'} instead of {primary.gpus} x {primary.gpu or 'no GPU'}")
            if other.vcpus < primary.vcpus or other.memoryGiB < primary.memoryGiB:
                problems.append(f"{other.vcpus} vCPUs and {other.memoryGiB:g} GiB, less than {primary.vcpus} and {primary.memoryGiB:g}")
            if pool.fabric is not None and (
                other.efa is None or primary.efa is None or other.efa.maxInterfaces != primary.efa.maxInterfaces
            ):
                problems.append("a different EFA interface count")
            if problems:
                yield Finding(
                    path[j], f"{name} differs from {primary.type}: {'; '.join(problems)}", "list types the pool's nodes can replace", name
                )


def _aws_sites(ctx: RuleContext, tier: ResolvedTier) -> list[AwsSite]:
    """The AWS sites of the environment a resolved tier exists at."""
    return [site for name in tier.sites if isinstance(site := ctx.sites.get(name), AwsSite)]


@rules.rule("AL292", "fsx-backup-retention", "A parallel-fs tier's retention at AWS is a backup period FSx can keep.")
def fsx_backup_retention(ctx: RuleContext) -> Iterable[Finding]:
    """FSx for Lustre user guide, "Working with backups": automatic daily backups exist only for persistent file
    systems not linked to an S3 data repository, kept at most 90 days (API: AutomaticBackupRetentionDays 0-90)."""
    for resolved in ctx.resolved.storage:
        tier = resolved.spec
        if not isinstance(tier, ParallelFsTier) or tier.retention is None or not _aws_sites(ctx, resolved):
            continue
        deployment = tier.aws.deployment_type if tier.aws is not None else "PERSISTENT_2"
        path = S.storage[resolved.index].retention
        days = tier.retention / 86400
        if not deployment.startswith("PERSISTENT"):
            yield Finding(
                path,
                f"{deployment} file systems keep no backups, so retention cannot be honoured",
                "use PERSISTENT_2 or drop retention",
                key=True,
            )
        elif tier.source is not None:
            yield Finding(
                path,
                f"FSx backs up no file system linked to S3 (tier {tier.name} is linked to {tier.source}); its data lives in the bucket",
                "drop retention here and set it on the object tier",
                key=True,
            )
        elif days > FSX_MAX_BACKUP_DAYS:
            yield Finding(
                path, f"FSx keeps automatic backups at most {FSX_MAX_BACKUP_DAYS} days, not {days:g}", f"use {FSX_MAX_BACKUP_DAYS}d or less"
            )


@rules.rule("AL293", "training-in-fsx-zone", "GPU training pools sit in the zone of their site's FSx file systems.", waivable=True)
def training_in_fsx_zone(ctx: RuleContext) -> Iterable[Finding]:
    """An FSx for Lustre file system lives in one subnet and zone (FSx API, CreateFileSystem SubnetIds); reads from
    another zone cross zones (billed per GB each way, EC2 pricing "Data transfer within the same region") and
    are slower."""
    for tier in ctx.resolved.storage:
        for site_name, impl in tier.implementations.items():
            site = ctx.sites.get(site_name)
            if impl != "fsx-lustre" or not isinstance(site, AwsSite):
                continue
            zone = fsx_zone(ctx.resolved, site, tier)
            for pool in ctx.resolved.pools:
                if pool.site.name != site_name or pool.gpu is None or pool.spec.purpose not in TRAINING_PURPOSES or pool.zone == zone:
                    continue
                where = f"zone {pool.zone}" if pool.zone else f"all of {', '.join(site.zones)}"
                yield Finding(
                    S.node_pools[pool.index].aws,
                    f"training pool {pool.name} spans {where}, but FSx tier {tier.name} is in {zone}",
                    f'add zone: "{zone}" (or set the tier\'s aws.zone)',
                    resource=pool.name,
                )


@rules.rule("AL295", "storage-grants", "Teams' storage grants name object tiers that exist at an AWS site.")
def storage_grants(ctx: RuleContext) -> Iterable[Finding]:
    """Grants become IAM policies on S3 (the team's Pod Identity role); only object tiers at AWS sites have them."""
    for t, team in enumerate(ctx.spec.tenancy.teams):
        for g, grant in enumerate(team.storage_access):
            tier = ctx.tiers.get(grant.tier)
            path = S.tenancy.teams[t].storage_access[g].tier
            if tier is None:
                yield Finding(path, f'no storage tier "{grant.tier}"', did_you_mean(grant.tier, list(ctx.tiers)) or None, grant.tier)
            elif not isinstance(tier, ObjectTier):
                yield Finding(
                    path,
                    f"tier {grant.tier} is {tier.class_}: grants are for object tiers (a file system linked to one follows its grants)",
                    None,
                    grant.tier,
                )
            elif not any(_aws_sites(ctx, t) for t in ctx.resolved.storage if t.name == grant.tier):
                yield Finding(
                    path, f"tier {grant.tier} is at no AWS site of environment {ctx.env_name}: nothing enforces the grant", None, grant.tier
                )


@rules.rule("AL296", "reserved-capacity-zone", "Pools on reserved capacity or capacity blocks are pinned to one zone at multi-zone sites.")
def reserved_zone(ctx: RuleContext) -> Iterable[Finding]:
    """A capacity reservation and a Capacity Block live in one zone; the node group must use subnets of that zone
    only (EKS user guide, "Create a managed node group with Capacity Blocks for ML": the subnet of the block's zone)."""
    for i, pool in ctx.indexed_pools():
        site = ctx.pool_site(pool)
        aws = pool.aws
        if isinstance(site, AwsSite) and aws is not None and aws.capacity_type in RESERVED and aws.zone is None and len(site.zones) > 1:
            yield Finding(
                S.node_pools[i].aws,
                f"{aws.capacity_type} pool {pool.name} spans {len(site.zones)} zones; its reservation is in one",
                "add zone: with the reservation's availability zone",
                resource=pool.name,
            )


@rules.rule("AL297", "node-update-settings", "A pool's node roll-out gives maxUnavailable or maxUnavailablePercentage, not both.")
def node_update(ctx: RuleContext) -> Iterable[Finding]:
    """EKS API, NodegroupUpdateConfig: maxUnavailable or maxUnavailablePercentage is required to have a value (one of them)."""
    for i, pool in ctx.indexed_pools():
        update = pool.aws.update if pool.aws is not None else None
        if update is not None and update.max_unavailable is not None and update.max_unavailable_percentage is not None:
            yield Finding(
                S.node_pools[i].aws.update.max_unavailable_percentage,
                "maxUnavailable and maxUnavailablePercentage both set",
                "keep one",
                update.max_unavailable_percentage,
                key=True,
            )


@rules.rule("AL298", "fsx-zone", "A parallel-fs tier's aws.zone is a zone of its AWS site.")
def fsx_zone_known(ctx: RuleContext) -> Iterable[Finding]:
    for resolved in ctx.resolved.storage:
        tier = resolved.spec
        if not isinstance(tier, ParallelFsTier) or tier.aws is None or tier.aws.zone is None:
            continue
        zone = tier.aws.zone
        for site in _aws_sites(ctx, resolved):
            if zone not in site.zones:
                yield Finding(
                    S.storage[resolved.index].aws.zone,
                    f'zone "{zone}" is not one of site {site.name}\'s zones',
                    did_you_mean(zone, site.zones) or f"use one of: {', '.join(site.zones)}",
                    zone,
                )


def _shorten(kind: str, room: int) -> str:
    """How to fit: the name of the pool/tier/team within ``room`` characters, or shorter names around it."""
    if room >= 1:
        return f"shorten the {kind} name to at most {room} characters"
    return "shorten the platform, environment or site name"


@rules.rule("AL299", "aws-name-lengths", "Names alicerce builds for AWS resources fit AWS's length limits.")
def aws_name_lengths(ctx: RuleContext) -> Iterable[Finding]:
    """Each name comes from the function that names the resource (alicerce.targets.aws.resolve), checked against
    the limit AWS enforces: EKS cluster 100 and node group 63 characters (EKS API reference, CreateCluster and
    CreateNodegroup), S3 bucket 63 (S3 user guide, "General purpose bucket naming rules"), IAM role 64 (IAM user
    guide, "IAM and AWS STS quotas"; roles are named by Pulumi after their resource name plus 8 characters)."""
    rp = ctx.resolved
    for here in rp.sites:
        site = here.spec
        if not isinstance(site, AwsSite):
            continue
        cluster = names.site_name(rp, site)
        if len(cluster) > names.CLUSTER_NAME_MAX:
            yield Finding(
                S.metadata.name,
                f"EKS cluster name {cluster} is {len(cluster)} characters; EKS allows {names.CLUSTER_NAME_MAX}",
                "shorten the platform, environment or site name",
                rp.name,
            )
        for pool in names.site_pools(rp, site):
            group = names.node_group_name(cluster, pool.name)
            if len(group) > names.NODE_GROUP_NAME_MAX:
                yield Finding(
                    S.node_pools[pool.index].name,
                    f"node group name {group} is {len(group)} characters; EKS allows {names.NODE_GROUP_NAME_MAX}",
                    _shorten("pool", names.NODE_GROUP_NAME_MAX - (len(group) - len(pool.name))),
                    pool.name,
                )
        logs = names.access_log_bucket(rp, site)
        if any(t.implementations.get(site.name) == "s3" for t in rp.storage) and len(logs) > names.BUCKET_NAME_MAX:
            yield Finding(
                S.metadata.name,
                f"access-log bucket name {logs} is {len(logs)} characters; S3 allows {names.BUCKET_NAME_MAX}",
                "shorten the platform or environment name",
                rp.name,
            )
        for tier in rp.storage:
            if tier.implementations.get(site.name) != "s3":
                continue
            bucket, created = names.tier_bucket(rp, site, tier)
            if created and len(bucket) > names.BUCKET_NAME_MAX:
                yield Finding(
                    S.storage[tier.index].name,
                    f"bucket name {bucket} is {len(bucket)} characters; S3 allows {names.BUCKET_NAME_MAX}",
                    f"{_shorten('tier', names.BUCKET_NAME_MAX - (len(bucket) - len(tier.name)))}, or name an existing bucket in aws.bucket",
                    tier.name,
                )
        component = names.identity_component(site)
        room = names.ROLE_NAME_MAX - names.AUTONAME_SUFFIX
        controllers = [names.workload_role(component, c) for c in (names.CLUSTER_AUTOSCALER_ROLE, names.LOAD_BALANCER_CONTROLLER_ROLE)]
        if (longest := max(controllers, key=len)) and len(longest) > room:
            yield Finding(
                S.environments[ctx.env_name].sites[here.index].name,
                f"IAM role {longest}-xxxxxxx would be {len(longest) + names.AUTONAME_SUFFIX} characters; IAM allows {names.ROLE_NAME_MAX}",
                f"shorten the site name by {len(longest) - room}",
                site.name,
            )
        for team in (t for t in here.teams if t.spec.storage_access):  # teams with grants get a role
            role = names.workload_role(component, f"team-{team.name}")
            if len(role) > room:
                yield Finding(
                    S.tenancy.teams[team.index].name,
                    f"IAM role {role}-xxxxxxx would be {len(role) + names.AUTONAME_SUFFIX} characters; IAM allows {names.ROLE_NAME_MAX}",
                    _shorten("team", room - (len(role) - len(team.name))),
                    team.name,
                )


@rules.rule("AL300", "autoscaler-tag-lengths", "Node-template tags of an AWS pool's Auto Scaling group fit the tag limits.")
def autoscaler_tag_lengths(ctx: RuleContext) -> Iterable[Finding]:
    """cluster-autoscaler reads a label or taint of a pool at zero from the tag
    k8s.io/cluster-autoscaler/node-template/label|taint/<key> (cluster-autoscaler cloudprovider/aws/README.md); an
    Auto Scaling tag key has at most 128 characters and a value 256 (EC2 Auto Scaling API reference, Tag). A
    shortened key would name another label, so a key that does not fit is an error. The labels and taints alicerce
    adds itself have short fixed keys; these are the pool's own."""
    for pool in ctx.resolved.pools:
        if not isinstance(pool.site, AwsSite) or pool.spec.aws is None:
            continue  # no aws section: rule AL210
        here = S.node_pools[pool.index]
        tags = [(here.labels[k], True, names.template_tag("label", k), k, v) for k, v in pool.labels.items()]
        tags += [
            (here.taints[j].key, False, names.template_tag("taint", t.key), t.key, f"{t.value}:{t.effect}")
            for j, t in enumerate(pool.spec.taints)
        ]
        key_max, value_max = names.TAG_KEY_MAX, names.TAG_VALUE_MAX
        for path, at_key, key, name, value in tags:
            if len(key) <= key_max and len(value) <= value_max:
                continue
            yield Finding(
                path,
                f"Auto Scaling tag {key} is {len(key)} characters (value {len(value)}); tags allow {key_max} ({value_max})",
                f"use a key of at most {key_max - (len(key) - len(name))} characters so cluster-autoscaler can scale from zero",
                name,
                key=at_key,
                resource=pool.name,
            )


@rules.rule("AL310", "eks-node-labels", "An AWS pool's labels are ones EKS accepts on a managed node group.")
def eks_node_labels(ctx: RuleContext) -> Iterable[Finding]:
    """EKS API reference, CreateNodegroup labels (UpdateLabelsPayload, docs.aws.amazon.com/eks/latest/APIReference/
    API_UpdateLabelsPayload.html): key and value 1-63 characters, the whole key counted; keys under kubernetes.io/,
    k8s.io/ and eks.amazonaws.com/ are refused ("Label cannot contain reserved prefixes", eksctl-io/eksctl#4006).
    Kubernetes itself allows a 253-character prefix and empty values, so the schema lets these through."""
    for i, pool in ctx.indexed_pools():
        if pool.aws is None or not isinstance(ctx.pool_site(pool), AwsSite):
            continue
        for key, value in pool.labels.items():
            problem = names.eks_label_problem(key, value)
            if problem is not None:
                empty = value == "" and len(key) <= names.EKS_LABEL_MAX and names.eks_reserved(key) is None
                hint = "give the label a value" if empty else "use a key of your own domain of at most 63 characters"
                yield Finding(S.node_pools[i].labels[key], problem, hint, value if empty else key, key=not empty, resource=pool.name)


@rules.rule("AL311", "eks-node-taints", "An AWS pool's taints are ones EKS accepts on a managed node group.")
def eks_node_taints(ctx: RuleContext) -> Iterable[Finding]:
    """EKS API reference, Taint (docs.aws.amazon.com/eks/latest/APIReference/API_Taint.html): key 1-63 characters,
    value 0-63; reserved prefixes as for labels ("Taint cannot contain reserved prefixes [kubernetes.io/, k8s.io/,
    eks.amazonaws.com/]", aws/containers-roadmap#1451)."""
    for i, pool in ctx.indexed_pools():
        if pool.aws is None or not isinstance(ctx.pool_site(pool), AwsSite):
            continue
        for j, taint in enumerate(pool.taints):
            problem = names.eks_label_problem(taint.key, taint.value, taint=True)
            if problem is not None:
                hint = "use a key of your own domain of at most 63 characters"
                yield Finding(S.node_pools[i].taints[j].key, problem, hint, taint.key, resource=pool.name)


@rules.rule("AL312", "eks-two-zones", "An AWS site spans at least two availability zones (EKS needs subnets in two).")
def eks_two_zones(ctx: RuleContext) -> Iterable[Finding]:
    """EKS user guide, "View Amazon EKS networking requirements for VPC and subnets" (docs.aws.amazon.com/eks/latest/
    userguide/network-reqs.html): the cluster's subnets must be in at least two Availability Zones; CreateCluster
    fails otherwise (UnsupportedAvailabilityZoneException / InvalidParameterException)."""
    for s, site in enumerate(ctx.env.sites):
        if isinstance(site, AwsSite) and len(site.zones) < 2:
            yield Finding(
                S.environments[ctx.env_name].sites[s].zones,
                f"site {site.name} lists {len(site.zones)} zone; EKS needs subnets in at least two",
                f"add a second zone, e.g. zones: [{site.zones[0]}, {site.region}b]; pools can still be pinned to one",
                site.zones,
            )


@rules.rule("AL313", "vpc-cidr-size", "An AWS site's VPC range is IPv4 /16 to /28 and leaves subnets of at least /28.")
def vpc_cidr_size(ctx: RuleContext) -> Iterable[Finding]:
    """VPC user guide, "VPC CIDR blocks" (docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html): a VPC's
    primary IPv4 block and every subnet's block are between /16 and /28. alicerce splits the VPC into one private
    subnet a zone plus a spare block cut again into the public subnets (alicerce.targets.aws.resolve.subnet_prefixes)."""
    for s, site in enumerate(ctx.env.sites):
        if not isinstance(site, AwsSite):
            continue
        path = S.environments[ctx.env_name].sites[s].vpc_cidr
        cidr = site.vpc_cidr
        if cidr.version != 4:
            yield Finding(path, f"the VPC's primary range must be IPv4, not {cidr}", "use a private IPv4 /16, e.g. 10.0.0.0/16", str(cidr))
            continue
        low, high = names.VPC_PREFIX_MIN, names.VPC_PREFIX_MAX
        if not low <= cidr.prefixlen <= high:
            yield Finding(path, f"a VPC range is /{low} to /{high}, not /{cidr.prefixlen}", "use a /16 to /20 for an EKS site", str(cidr))
            continue
        private, public = names.subnet_prefixes(cidr.prefixlen, len(site.zones))
        if public > high:
            fits = high - 2 * names.subnet_bits(len(site.zones))
            yield Finding(
                path,
                f"{cidr} split for {len(site.zones)} zone(s) gives /{private} private and /{public} public subnets; "
                f"AWS subnets are /{high} at most",
                f"use a /{fits} or larger range",
                str(cidr),
            )


_EKS_SERVICE_RANGES = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


@rules.rule("AL314", "eks-service-cidr", "An AWS site's service range is a private IPv4 /12 to /24 block.")
def eks_service_cidr(ctx: RuleContext) -> Iterable[Finding]:
    """EKS API reference, KubernetesNetworkConfigRequest serviceIpv4Cidr (docs.aws.amazon.com/eks/latest/APIReference/
    API_KubernetesNetworkConfigRequest.html): within 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, between /24 and
    /12, not overlapping the VPC (rule AL240 checks the overlap)."""
    for s, site in enumerate(ctx.env.sites):
        if not isinstance(site, AwsSite):
            continue
        cidr = site.service_cidr or ctx.spec.networks.service_cidr
        path = S.environments[ctx.env_name].sites[s].service_cidr if site.service_cidr else S.networks.service_cidr
        problem = None
        if cidr.version != 4:
            problem = f"EKS takes an IPv4 service range, not {cidr}"
        elif not any(cidr.subnet_of(net) for net in _EKS_SERVICE_RANGES):  # type: ignore[arg-type]
            problem = f"EKS takes a service range inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, not {cidr}"
        elif not 12 <= cidr.prefixlen <= 24:
            problem = f"EKS takes a service range of /12 to /24, not /{cidr.prefixlen}"
        if problem is not None:
            yield Finding(path, problem, "use a private /16 such as 172.20.0.0/16", str(cidr))


# private (RFC 1918, RFC 4193), shared (RFC 6598), loopback and link-local ranges: never the source of a request
# that reaches the public endpoint (0.0.0.0/0 itself is rule AL272's)
_NOT_INTERNET = tuple(
    ipaddress.ip_network(n)
    for n in (
        *("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16"),
        *("fc00::/7", "fe80::/10", "::1/128"),
    )
)


@rules.rule("AL315", "public-endpoint-cidrs-public", "The public API endpoint's allow-list holds only public ranges.")
def public_endpoint_cidrs(ctx: RuleContext) -> Iterable[Finding]:
    """EKS API reference, VpcConfigRequest publicAccessCidrs (docs.aws.amazon.com/eks/latest/APIReference/
    API_VpcConfigRequest.html) and EKS user guide, "Cluster API server endpoint": private and reserved ranges are
    refused ("The following CIDRs are invalid in publicAccessCidrs"); traffic from the VPC reaches the private
    endpoint instead."""
    access = ctx.spec.security.endpoint_access
    if not access.public or not any(isinstance(site, AwsSite) for site in ctx.env.sites):
        return
    for i, cidr in enumerate(access.public_cidrs):
        inside = next((net for net in _NOT_INTERNET if net.version == cidr.version and cidr.prefixlen and cidr.overlaps(net)), None)
        if inside is not None:
            yield Finding(
                S.security.endpoint_access.public_cidrs[i],
                f"{cidr} is in {inside}, a range no internet client comes from; EKS takes only public ranges for the public endpoint",
                "list the public addresses of your office or VPN egress; private networks use the private endpoint",
                str(cidr),
            )


# EFS API reference, CreateFileSystem ProvisionedThroughputInMibps: required with ThroughputMode provisioned, at least 1
EFS_MIN_PROVISIONED_MIBPS = 1


@rules.rule("AL316", "efs-provisioned-throughput", "An EFS tier in provisioned throughput mode declares the throughput to provision.")
def efs_provisioned_throughput(ctx: RuleContext) -> Iterable[Finding]:
    """EFS API reference, CreateFileSystem (docs.aws.amazon.com/efs/latest/ug/API_CreateFileSystem.html):
    ProvisionedThroughputInMibps is required when ThroughputMode is provisioned; the tier's throughput is that value."""
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, SharedNfsTier) or tier.aws is None or tier.aws.throughput_mode != "provisioned":
            continue
        if tier.throughput is None:
            yield Finding(
                SpecPath(SharedNfsTier, S.storage[i].path).aws.throughput_mode,
                f"EFS provisioned throughput mode needs the throughput to provision; tier {tier.name} declares none",
                "add throughput: (e.g. 500MBps) to the tier, or use throughputMode: elastic",
                "provisioned",
            )
        elif tier.throughput < EFS_MIN_PROVISIONED_MIBPS * 2**20:
            yield Finding(S.storage[i].throughput, "EFS provisions at least 1 MiB/s", "raise throughput to 1MiBps or more", tier.throughput)


@rules.rule("AL317", "fsx-zone-pinned", "An FSx for Lustre tier at an AWS site names its zone, so no pool move can replace it.")
def fsx_zone_pinned(ctx: RuleContext) -> Iterable[Finding]:
    """An FSx for Lustre file system lives in one subnet, and a new subnet replaces it (FSx API, CreateFileSystem
    SubnetIds; terraform-provider-aws lustre_file_system.go subnet_ids ForceNew): every file is lost. A zone derived
    from the training pools would follow a pool moved to another zone and take the file system with it, so the zone
    is written down; moving the file system is then an explicit change of aws.zone that `alicerce diff` reports as
    destructive, and a pool moved away alone is rule AL293's finding."""
    for resolved in ctx.resolved.storage:
        tier = resolved.spec
        if not isinstance(tier, ParallelFsTier) or (tier.aws is not None and tier.aws.zone is not None):
            continue
        for site in _aws_sites(ctx, resolved):
            if resolved.implementations.get(site.name) != "fsx-lustre":
                continue
            zone = fsx_zone(ctx.resolved, site, resolved)
            yield Finding(
                S.storage[resolved.index].aws if tier.aws is not None else S.storage[resolved.index],
                f"FSx tier {tier.name} would take its zone ({zone}) from site {site.name}'s pools: moving a pool to another zone "
                "would replace the file system and lose every file on it",
                f'pin it: aws: {{zone: "{zone}"}}',
                resource=tier.name,
            )
            break


@rules.rule("AL318", "object-retention-versioning", "An object tier with a retention at AWS keeps versioning on (Object Lock needs it).")
def object_retention_versioning(ctx: RuleContext) -> Iterable[Finding]:
    """S3 user guide, "Locking objects with Object Lock": Object Lock (the retention minimum) works only on versioned
    buckets, and versioning cannot be suspended once it is on (PutBucketVersioning refuses)."""
    for resolved in ctx.resolved.storage:
        tier = resolved.spec
        if not isinstance(tier, ObjectTier) or tier.retention is None or tier.aws is None or tier.aws.versioning:
            continue
        if tier.aws.bucket is None and _aws_sites(ctx, resolved):
            yield Finding(
                SpecPath(ObjectTier, S.storage[resolved.index].path).aws.versioning,
                f"tier {tier.name} keeps data for its retention with S3 Object Lock, which needs versioning",
                "remove versioning: false, or drop retention",
                False,
            )
