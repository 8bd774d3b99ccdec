"""Addressing and fabrics: disjoint networks, zones in their region, fabrics with a transport."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator

from alicerce.rules.base import Finding, RuleContext, RuleSet
from alicerce.spec.errors import Path
from alicerce.spec.models import AwsSite

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
