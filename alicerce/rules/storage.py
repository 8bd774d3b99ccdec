"""Storage tiers: each exists on its target, FSx settings are ones AWS accepts, mounts are sane."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.models import (
    LocalNvmeTier,
)
from alicerce.spec.text import escaped, mount_point_problem

rules = RuleSet()


@rules.rule("AL230", "storage-target", "Every tier has an implementation at each site it exists on.")
def storage_target(ctx: RuleContext) -> Iterable[Finding]:
    for tier in ctx.resolved.storage:
        if isinstance(tier.spec, LocalNvmeTier):
            continue
        for name in tier.sites:
            if name in tier.implementations:
                continue
            caps = ctx.resolved.site(name).capabilities
            choices = caps.storage_choices.get(tier.spec.class_, "...")
            yield Finding(
                S.storage[tier.index],
                f'tier "{tier.name}" ({tier.spec.class_}) has no {caps.label} implementation for site {name}',
                f"add {caps.pool_section}: {{implementation: ...}} ({choices}), or set site: to a site that has one",
                resource=tier.name,
            )


@rules.rule("AL235", "mount-paths", "Mount paths are absolute, normalised, outside system directories and unique across tiers.")
def mount_paths(ctx: RuleContext) -> Iterable[Finding]:
    seen: dict[str, str] = {}
    for i, tier in enumerate(ctx.spec.storage):
        path = getattr(tier, "mount_path", None)
        if path is None:
            continue
        where = S.storage[i].mount_path
        if not path.startswith("/") or "//" in path or path.rstrip("/") in ("", "/"):
            yield Finding(where, f'"{escaped(path)}" is not an absolute mount path', "write it like /mnt/datasets", path)
        elif (problem := mount_point_problem(path)) is not None:
            # /scratch/../etc is /etc: a mount there hides the node's configuration (and the kubelet's, under /var/lib)
            yield Finding(where, problem, None, path)  # the problem says what to write instead
        elif path.rstrip("/") in seen:
            yield Finding(where, f'{path} is already the mount path of tier "{seen[path.rstrip("/")]}"', None, path)
        else:
            seen[path.rstrip("/")] = tier.name


@rules.rule("AL237", "tier-sites-explicit", "A storage tier says which site or sites hold it where the environment has several.")
def tier_sites_explicit(ctx: RuleContext) -> Iterable[Finding]:
    names = [s.name for s in ctx.env.sites]
    for i, tier in enumerate(ctx.spec.storage):
        if isinstance(tier, LocalNvmeTier):
            continue
        if tier.site is not None and tier.sites is not None:
            yield Finding(S.storage[i].sites, "set site or sites, not both", f"sites: [{tier.site}, ...]", key=True, resource=tier.name)
        elif tier.site is None and tier.sites is None and len(names) > 1:
            yield Finding(
                S.storage[i],
                f'tier "{tier.name}" names no site, and environment {ctx.env_name} has {len(names)}: {", ".join(names)}',
                f"add site: {names[0]}, or sites: [{', '.join(names)}]; a new site must never gain a tier silently",
                resource=tier.name,
            )
