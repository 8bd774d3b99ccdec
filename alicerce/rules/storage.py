"""Storage tiers: each exists on its target, FSx settings are ones AWS accepts, mounts are sane."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.catalog.fsx import options
from alicerce.rules.base import Finding, RuleContext, RuleSet
from alicerce.spec.models import (
    AwsSite,
    BlockTier,
    LocalNvmeTier,
    ObjectTier,
    OnpremSite,
    ParallelFsTier,
    SharedNfsTier,
)

rules = RuleSet()


@rules.rule("AL230", "storage-target", "Every tier has an implementation at each site it exists on.")
def storage_target(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if isinstance(tier, LocalNvmeTier):
            continue
        for site in ctx.tier_sites(tier):
            if isinstance(site, OnpremSite) and tier.onprem is None:
                kinds = {
                    ParallelFsTier: "lustre, beegfs or weka",
                    SharedNfsTier: "nfs",
                    ObjectTier: "minio or ceph-rgw",
                    BlockTier: "ceph-rbd or local-path",
                }[type(tier)]
                yield Finding(
                    ("storage", i),
                    f'tier "{tier.name}" ({tier.class_}) has no on-prem implementation for site {site.name}',
                    f"add onprem: {{implementation: ...}} ({kinds}), or set site: to an AWS site",
                    resource=tier.name,
                )
            fsx = tier.aws if isinstance(site, AwsSite) and isinstance(tier, ParallelFsTier) else None
            if fsx is not None and not options(ctx.catalog.fsx, fsx.deployment_type, fsx.storage_type):
                yield Finding(
                    ("storage", i, "aws", "storageType"),
                    f"FSx {fsx.deployment_type} has no {fsx.storage_type} storage",
                    "HDD exists only with PERSISTENT_1",
                    fsx.storage_type,
                )


@rules.rule("AL235", "mount-paths", "Mount paths are absolute and unique across tiers.")
def mount_paths(ctx: RuleContext) -> Iterable[Finding]:
    seen: dict[str, str] = {}
    for i, tier in enumerate(ctx.spec.storage):
        path = getattr(tier, "mount_path", None)
        if path is None:
            continue
        where = ("storage", i, "mountPath")
        if not path.startswith("/") or "//" in path or path.rstrip("/") in ("", "/"):
            yield Finding(where, f'"{path}" is not an absolute mount path', "write it like /mnt/datasets", path)
        elif path.rstrip("/") in seen:
            yield Finding(where, f'{path} is already the mount path of tier "{seen[path.rstrip("/")]}"', None, path)
        else:
            seen[path.rstrip("/")] = tier.name
