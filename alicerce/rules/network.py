"""Addressing and fabrics: disjoint networks, zones in their region, fabrics with a transport."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator

from alicerce.rules.base import Finding, RuleContext, RuleSet
from alicerce.spec.errors import Path
from alicerce.spec.models import AwsSite, OnpremSite

rules = RuleSet()

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _networks(ctx: RuleContext) -> Iterator[tuple[str, Path, Network, bool]]:
    """(label, path, network, routed) for every range an environment uses."""
    defaults = ctx.spec.networks
    for s, site in enumerate(ctx.env.sites):
        base: Path = ("environments", ctx.env_name, "sites", s)
        service = site.service_cidr or defaults.service_cidr
        service_path = (*base, "serviceCidr") if site.service_cidr else ("networks", "serviceCidr")
        if isinstance(site, AwsSite):
            yield f"{site.name} VPC", (*base, "vpcCidr"), site.vpc_cidr, True
        else:
            for h, host in enumerate(site.host_cidrs):
                yield f"{site.name} hosts", (*base, "hostCidrs", h), host, True
            pod = site.pod_cidr or defaults.pod_cidr
            yield f"{site.name} pods", (*base, "podCidr") if site.pod_cidr else ("networks", "podCidr"), pod, True
        yield f"{site.name} services", service_path, service, False
    for f, fabric in enumerate(defaults.fabrics):
        if fabric.onprem is not None and fabric.onprem.ipoib_cidr is not None:
            yield f"fabric {fabric.name} IPoIB", ("networks", "fabrics", f, "onprem", "ipoibCidr"), fabric.onprem.ipoib_cidr, True


@rules.rule("AL240", "cidr-overlap", "VPC, host, pod, IPoIB and service ranges of an environment do not overlap.")
def cidr_overlap(ctx: RuleContext) -> Iterable[Finding]:
    seen: list[tuple[str, Network, bool]] = []
    reported: set[tuple[str, str]] = set()
    for label, path, network, routed in _networks(ctx):
        for other_label, other, other_routed in seen:
            if not (routed or other_routed):
                continue  # two clusters may reuse one private service range
            if network.version == other.version and network.overlaps(other):
                if (label, other_label) in reported:
                    continue
                reported.add((label, other_label))
                yield Finding(
                    path,
                    f"{label} {network} overlaps {other_label} {other}",
                    "give each range its own address space; overlapping ranges break routing between sites",
                    str(network),
                )
        seen.append((label, network, routed))


@rules.rule("AL241", "zones-in-region", "An AWS site's zones belong to its region and are listed once.")
def zones_in_region(ctx: RuleContext) -> Iterable[Finding]:
    for s, site in enumerate(ctx.env.sites):
        if not isinstance(site, AwsSite):
            continue
        seen: set[str] = set()
        for z, zone in enumerate(site.zones):
            path = ("environments", ctx.env_name, "sites", s, "zones", z)
            if not re.fullmatch(rf"{re.escape(site.region)}(?:[a-z]|-[a-z]+-\d+[a-z])", zone):
                yield Finding(path, f'zone "{zone}" is not in region {site.region}', f'zones look like "{site.region}a"', zone)
            elif zone in seen:
                yield Finding(path, f'zone "{zone}" is listed twice', None, zone)
            seen.add(zone)


@rules.rule("AL242", "fabric-target", "A fabric used at an on-prem site says whether it is InfiniBand or RoCE.")
def fabric_target(ctx: RuleContext) -> Iterable[Finding]:
    fabrics = {f.name: (i, f) for i, f in enumerate(ctx.spec.networks.fabrics)}
    for i, pool in ctx.indexed_pools():
        if pool.fabric is None or pool.fabric not in fabrics:
            continue
        f, fabric = fabrics[pool.fabric]
        if isinstance(ctx.pool_site(pool), OnpremSite) and fabric.onprem is None:
            yield Finding(
                ("networks", "fabrics", f),
                f'fabric "{fabric.name}" is used by on-prem pool "{pool.name}" but has no onprem section',
                "add onprem: {technology: infiniband} (or roce)",
                resource=fabric.name,
            )
        if pool.onprem is not None and pool.onprem.hcas is not None and pool.onprem.hcas < fabric.rails:
            yield Finding(
                ("nodePools", i, "onprem", "hcas"),
                f"{pool.onprem.hcas} adapters per host cannot serve {fabric.rails} rails",
                f"set hcas to at least {fabric.rails} or lower the fabric's rails",
                pool.onprem.hcas,
            )
