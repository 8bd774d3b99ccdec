"""The on-prem target's rules: fabrics that say their transport, the control plane kubespray builds, LNet reachability."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator

from alicerce.catalog.onprem import load_onprem
from alicerce.rules.base import Finding, RuleContext, RuleSet
from alicerce.spec.models import OnpremSite, ParallelFsTier
from alicerce.targets.onprem.resolve import control_plane_hosts

rules = RuleSet()


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


def _site_path(ctx: RuleContext, name: str) -> tuple[str | int, ...]:
    index = next(i for i, s in enumerate(ctx.env.sites) if s.name == name)
    return ("environments", ctx.env_name, "sites", index)


def _onprem_sites_with_pools(ctx: RuleContext) -> Iterator[OnpremSite]:
    for site in ctx.resolved.sites:
        if isinstance(site.spec, OnpremSite) and any(pool.hosts for pool in site.pools):
            yield site.spec


@rules.rule("AL243", "kubespray-kubernetes", "An on-prem site's Kubernetes version is one the pinned kubespray release installs.")
def kubespray_kubernetes(ctx: RuleContext) -> Iterable[Finding]:
    release = load_onprem().kubespray
    minor = ctx.resolved.versions.kubernetes
    if minor in release.kubernetes:
        return
    for site in _onprem_sites_with_pools(ctx):
        yield Finding(
            _site_path(ctx, site.name),
            f'on-prem site "{site.name}" is built with kubespray {release.tag}, which cannot install Kubernetes {minor}',
            f"pin versions.kubernetes to one of {', '.join(sorted(release.kubernetes))}",
            resource=site.name,
        )


@rules.rule("AL244", "control-plane", "An on-prem site with nodes names its control plane: an odd host count, a load balancer for several.")
def control_plane(ctx: RuleContext) -> Iterable[Finding]:
    for site in _onprem_sites_with_pools(ctx):
        path = _site_path(ctx, site.name)
        if site.control_plane is None:
            yield Finding(
                path,
                f'on-prem site "{site.name}" has nodes but no controlPlane: kubespray builds its cluster on the control-plane hosts',
                "add controlPlane: {hosts: [cp-[1:3].example.com], loadBalancer: {kind: kube-vip, address: ...}}",
                resource=site.name,
            )
            continue
        hosts = control_plane_hosts(site)
        if len(hosts) % 2 == 0:
            yield Finding(
                (*path, "controlPlane", "hosts"),
                f"{len(hosts)} control-plane hosts: etcd needs an odd number of members (kubespray refuses an even count)",
                "use 1, 3 or 5 hosts",
                resource=site.name,
            )
        if len(hosts) > 1 and site.control_plane.load_balancer is None:
            yield Finding(
                (*path, "controlPlane"),
                f"{len(hosts)} control-plane hosts need a load balancer or virtual IP in front of their API servers",
                "add loadBalancer: {kind: external, address: <the endpoint's IP>} or {kind: kube-vip, address: <a free IP>}",
                resource=site.name,
            )


@rules.rule("AL245", "lnet-reachable", "A Lustre server's o2ib NID is on the nodes' IPoIB network, or LNet routes lead to it.")
def lnet_reachable(ctx: RuleContext) -> Iterable[Finding]:
    for i, tier in enumerate(ctx.spec.storage):
        if not isinstance(tier, ParallelFsTier) or tier.onprem is None or tier.onprem.implementation != "lustre":
            continue
        nid = tier.onprem.server
        if "@o2ib" not in nid or tier.onprem.lnet_routes:
            continue
        # failover partners are separated by ':', several NIDs of one server by ','
        addresses = [part.split("@", 1)[0] for part in re.split(r"[:,]", nid) if "@o2ib" in part]
        sites = {s.name for s in ctx.tier_sites(tier) if isinstance(s, OnpremSite)}
        networks = [
            fabric.onprem.ipoib_cidr
            for pool in ctx.resolved.pools
            if pool.site.name in sites and pool.rdma is not None
            for fabric in [pool.rdma.fabric]
            if fabric.onprem is not None and fabric.onprem.ipoib_cidr is not None  # o2ib runs over InfiniBand and RoCE
        ]
        if not networks:
            continue  # no rail ranges declared: the rails are addressed outside the spec
        try:
            inside = all(any(ipaddress.ip_address(address) in net for net in networks) for address in addresses)
        except ValueError:
            inside = False
        if not inside:
            ranges = ", ".join(sorted({str(n) for n in networks}))
            yield Finding(
                ("storage", i, "onprem", "server"),
                f"Lustre NID {nid} is outside the nodes' IPoIB networks ({ranges}): LNet over o2ib needs a common network",
                "use the server's IPoIB address, set the fabric's ipoibCidr to include it, or declare lnetRoutes",
                nid,
                resource=tier.name,
            )
