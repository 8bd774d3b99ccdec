"""Addressing and fabrics: disjoint networks, zones in their region, fabrics with a transport."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator

from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.paths import SpecPath
from alicerce.targets import TARGETS

rules = RuleSet()

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _networks(ctx: RuleContext) -> Iterator[tuple[str, SpecPath, Network, bool]]:
    """(label, path, network, routed) for every range an environment uses."""
    defaults = ctx.spec.networks
    for s, site in enumerate(ctx.env.sites):
        base = S.environments[ctx.env_name].sites[s]
        service = site.service_cidr or defaults.service_cidr
        service_path = base.service_cidr if site.service_cidr else S.networks.service_cidr
        for label, field in site.ROUTED:
            value = getattr(site, field)
            if isinstance(value, list):
                for k, network in enumerate(value):
                    yield f"{site.name} {label}", getattr(base, field)[k], network, True
            elif value is not None:
                yield f"{site.name} {label}", getattr(base, field), value, True
            else:  # the environment-wide default of networks (podCidr)
                yield f"{site.name} {label}", getattr(S.networks, field), getattr(defaults, field), True
        yield f"{site.name} services", service_path, service, False
    for f, fabric in enumerate(defaults.fabrics):
        for t in TARGETS:  # each target's own section of the fabric, with the routed ranges it declares (ROUTED)
            section = getattr(fabric, t.name, None)
            for label, field in getattr(section, "ROUTED", ()):
                if (value := getattr(section, field)) is not None:
                    yield f"fabric {fabric.name} {label}", getattr(getattr(S.networks.fabrics[f], t.name), field), value, True


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
