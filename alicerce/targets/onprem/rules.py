"""The on-prem target's rules: fabrics that say their transport, the control plane kubespray builds, LNet reachability."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator

from alicerce.catalog.onprem import load_onprem
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.models import ParallelFsTier
from alicerce.spec.paths import SpecPath
from alicerce.spec.units import MAX_HOSTS_PER_POOL, MAX_HOSTS_PER_SITE, count_hosts, expand_hosts, host_pattern_problem
from alicerce.targets.onprem.resolve import control_plane_hosts
from alicerce.targets.onprem.spec import OnpremSite

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
                S.networks.fabrics[f],
                f'fabric "{fabric.name}" is used by on-prem pool "{pool.name}" but has no onprem section',
                "add onprem: {technology: infiniband} (or roce)",
                resource=fabric.name,
            )
        if pool.onprem is not None and pool.onprem.hcas is not None and pool.onprem.hcas < fabric.rails:
            yield Finding(
                S.node_pools[i].onprem.hcas,
                f"{pool.onprem.hcas} adapters per host cannot serve {fabric.rails} rails",
                f"set hcas to at least {fabric.rails} or lower the fabric's rails",
                pool.onprem.hcas,
            )


@rules.rule("AL384", "rail-devices", "A pool that names its rail devices names each once and one per rail of its fabric.")
def rail_devices(ctx: RuleContext) -> Iterable[Finding]:
    # the fabric alerts count these devices against the rails: fewer would warn on every node forever, more would hide
    # a rail that never came up behind the extra name (review obsreview6 DEFECT 2)
    rails = {f.name: f.rails for f in ctx.spec.networks.fabrics}
    for i, pool in ctx.indexed_pools():
        if pool.onprem is None or not pool.onprem.rail_devices:
            continue
        names = pool.onprem.rail_devices
        twice = sorted({d for d in names if names.count(d) > 1})
        if twice:
            yield Finding(
                S.node_pools[i].onprem.rail_devices,
                f"rail devices {', '.join(twice)} are named more than once",
                "name each RDMA device of a rail once (ibdev2netdev lists them)",
                twice[0],
            )
        wanted = rails.get(pool.fabric) if pool.fabric is not None else None
        if wanted is not None and len(set(names)) != wanted:
            yield Finding(
                S.node_pools[i].onprem.rail_devices,
                f"{len(set(names))} rail devices named for fabric {pool.fabric}'s {wanted} rails",
                f"name the {wanted} RDMA devices of the rails, one per rail, or leave railDevices empty",
                len(set(names)),
            )


# The name rdma-core's rdma_rename gives an RDMA device under NAME_PCI, the policy the rdma role installs on every host of
# a fabric (roles/rdma/templates/rdma-naming.rules.j2): the link protocol the kernel reports ("ib" for InfiniBand,
# "roce" for RoCE), then P<domain> where the PCI domain is not 0, then p<bus>s<device> in decimal (s<slot> for a
# firmware slot number is coded but never reached: find_sun's sscanf("%s.%s") takes the PCI address whole and fails;
# accepted here for a release that fixes it); f<function> on a multi-function adapter (v<vf> on its virtual functions)
# and S<n> on a sub-function (linux-rdma/rdma-core v64.0-61-g691953d8, kernel-boot/rdma_rename.c
# by_pci(), and the examples of kernel-boot/rdma-persistent-naming.rules: mlx5_0 at 0000:00:0c.4 -> ibp0s12f4).
# A kernel name (mlx5_3) is renamed at the device's first add event after the rule is in place
_NUMBER = "(?:0|[1-9][0-9]*)"
_PCI_NAME_REST = rf"(?:P[1-9][0-9]*)?(?:p{_NUMBER}s{_NUMBER}|s[1-9][0-9]*)(?:f{_NUMBER}(?:v{_NUMBER})?)?(?:S{_NUMBER})?"
_NAME_PCI_PREFIX = {"infiniband": "ib", "roce": "roce"}


def _rail_name_problem(name: str, technology: str) -> str | None:
    prefix = _NAME_PCI_PREFIX[technology]
    if re.fullmatch(prefix + _PCI_NAME_REST, name):
        return None
    if any(re.fullmatch(other + _PCI_NAME_REST, name) for other in _NAME_PCI_PREFIX.values()):
        return f"{name} is {'a RoCE' if prefix == 'ib' else 'an InfiniBand'} device's name, and the fabric is {technology}"
    if re.fullmatch(r"[a-z][a-z0-9]*_[0-9]+", name):
        return f"{name} is a kernel name, and the rdma role renames each RDMA device after its PCI address"
    # No name survives but NAME_PCI's: rdma_rename leaves a device alone only when the kernel reports its name as given
    # by user space (RDMA_NAME_ASSIGN_TYPE_USER, rdma-core v64.0-61-g691953d8 kernel-boot/rdma_rename.c main), which the
    # kernel sets only for devices created under a requested name (rxe, siw, a named mlx5 sub-function device:
    # ib_mark_name_assigned_by_user, "RDMA/core: Introduce name_assign_type for an IB device", 2024). A rename through
    # `rdma dev set` (nldev_set_doit -> ib_device_rename) does not set it, and the role replays the add event each run.
    # At boot a site rule that sorts first (59-*.rules, NAME_FIXED) renames the device before ours, whose rdma_rename
    # then no longer finds the kernel name (%k) and leaves the site's: such a name comes back at each boot
    return (
        f"{name} is not a name the rdma role leaves on an RDMA device: at each alicerce run it renames every adapter's "
        f"device after its PCI address ({prefix}p<bus>s<slot>), over a name set by hand (rdma dev set) or by a site's own "
        "udev rule, which wins only at boot where it sorts before 60-rdma-persistent-naming.rules, so the name would "
        "change between boots and runs; rdma-core's rdma_rename spares only devices created under a user's name (rxe, siw)"
    )


@rules.rule(
    "AL392",
    "rail-device-names",
    "A pool's rail devices are named as the rdma role names RDMA devices: after their PCI address (rdma-core NAME_PCI).",
)
def rail_device_names(ctx: RuleContext) -> Iterable[Finding]:
    # the fabric alerts match the node exporter's device label against these names: a kernel name such as mlx5_3
    # never exists once the role's udev rule renamed the devices, and every node would report its rails never up
    technology = {f.name: f.onprem.technology for f in ctx.spec.networks.fabrics if f.onprem is not None}
    for i, pool in ctx.indexed_pools():
        transport = technology.get(pool.fabric) if pool.fabric is not None else None
        if pool.onprem is None or transport is None:
            continue
        for j, name in enumerate(pool.onprem.rail_devices):
            problem = _rail_name_problem(name, transport)
            if problem is not None:
                yield Finding(
                    S.node_pools[i].onprem.rail_devices[j],
                    problem,
                    f"name the devices `rdma link` or `ibv_devices` lists on a node once an alicerce run named them, "
                    f"such as {_NAME_PCI_PREFIX[transport]}p24s0 for the adapter at 0000:18:00.0",
                    name,
                    resource=pool.name,
                )


def _host_count(pattern: str) -> int:
    try:
        return count_hosts(pattern)
    except ValueError:
        return 0  # malformed: reported where it is expanded


@rules.rule(
    "AL220",
    "host-ranges",
    "On-prem host ranges expand, no host sits in two pools, max fits the hosts listed, and pools and sites stay under their host caps.",
)
def host_ranges(ctx: RuleContext) -> Iterable[Finding]:
    owner: dict[str, str] = {}
    site_hosts: dict[str, int] = {}
    for i, pool in ctx.indexed_pools():
        if pool.onprem is None or not isinstance(ctx.pool_site(pool), OnpremSite):
            continue
        # counted from the brackets before anything is expanded: a hostile product costs nothing
        sizes = [_host_count(entry.hosts) for entry in pool.onprem.hosts]
        if sum(sizes) > MAX_HOSTS_PER_POOL and max(sizes) <= MAX_HOSTS_PER_POOL:  # one range over: reported at the range
            message = f"the pool's host ranges add up to {sum(sizes):,} hosts, over the {MAX_HOSTS_PER_POOL:,} a pool may have"
            yield Finding(S.node_pools[i].onprem.hosts, message, "split the hosts over several pools", sum(sizes))
            continue
        before = site_hosts.get(pool.site, 0)
        site_hosts[pool.site] = before + (sum(sizes) if sum(sizes) <= MAX_HOSTS_PER_POOL else 0)
        if site_hosts[pool.site] > MAX_HOSTS_PER_SITE:
            if before <= MAX_HOSTS_PER_SITE:  # reported once, at the pool that crosses the cap
                total = site_hosts[pool.site]
                message = f"with this pool, site {pool.site} lists {total:,} hosts, over the {MAX_HOSTS_PER_SITE:,} a site may have"
                yield Finding(S.node_pools[i].onprem.hosts, message, "split the site, or list fewer hosts", total)
            continue
        count = 0
        for j, entry in enumerate(pool.onprem.hosts):
            path = S.node_pools[i].onprem.hosts[j]
            try:
                hosts = expand_hosts(entry.hosts)
            except ValueError as exc:
                yield Finding(path, str(exc), None, entry.hosts)
                continue
            count += len(hosts)
            for host in hosts:
                if host in owner:
                    yield Finding(path, f'host {host} is already in pool "{owner[host]}"', "a server belongs to one pool", host)
                    break
                owner[host] = pool.name
        if count and pool.scaling.max > count:
            yield Finding(
                S.node_pools[i].scaling.max,
                f"max {pool.scaling.max} exceeds the {count} hosts listed",
                f"set max: {count} or list more hosts",
                pool.scaling.max,
            )


@rules.rule("AL221", "host-names", "On-prem hosts are RFC 1123 host names: lowercase labels of letters, digits and '-', joined by dots.")
def host_names(ctx: RuleContext) -> Iterable[Finding]:
    """Checked on each range before it is expanded; the names land verbatim in the Ansible inventory."""
    patterns: list[tuple[SpecPath, str]] = []
    for i, pool in ctx.indexed_pools():
        if pool.onprem is not None:
            patterns += [(S.node_pools[i].onprem.hosts[j], entry.hosts) for j, entry in enumerate(pool.onprem.hosts)]
    for s, site in enumerate(ctx.env.sites):
        if isinstance(site, OnpremSite) and site.control_plane is not None:
            base = S.environments[ctx.env_name].sites[s].control_plane.hosts
            patterns += [(base[j], pattern) for j, pattern in enumerate(site.control_plane.hosts)]
    for path, pattern in patterns:
        problem = host_pattern_problem(pattern)
        if problem is not None:
            yield Finding(path, problem, "write names such as gpu-[001:032].dc1.example.com", pattern)


def _site_path(ctx: RuleContext, name: str) -> SpecPath:
    index = next(i for i, s in enumerate(ctx.env.sites) if s.name == name)
    return S.environments[ctx.env_name].sites[index]


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
                path.control_plane.hosts,
                f"{len(hosts)} control-plane hosts: etcd needs an odd number of members (kubespray refuses an even count)",
                "use 1, 3 or 5 hosts",
                resource=site.name,
            )
        if len(hosts) > 1 and site.control_plane.load_balancer is None:
            yield Finding(
                path.control_plane,
                f"{len(hosts)} control-plane hosts need a load balancer or virtual IP in front of their API servers",
                "add loadBalancer: {kind: external, address: <the endpoint's IP>} or {kind: kube-vip, address: <a free IP>}",
                resource=site.name,
            )


@rules.rule("AL245", "lnet-reachable", "A Lustre server's o2ib NID is on the nodes' IPoIB network, or LNet routes lead to it.")
def lnet_reachable(ctx: RuleContext) -> Iterable[Finding]:
    for resolved in ctx.resolved.storage:
        tier, i = resolved.spec, resolved.index
        if not isinstance(tier, ParallelFsTier) or tier.onprem is None or tier.onprem.implementation != "lustre":
            continue
        nid = tier.onprem.server
        if "@o2ib" not in nid or tier.onprem.lnet_routes:
            continue
        # failover partners are separated by ':', several NIDs of one server by ','
        addresses = [part.split("@", 1)[0] for part in re.split(r"[:,]", nid) if "@o2ib" in part]
        sites = {name for name in resolved.sites if isinstance(ctx.sites.get(name), OnpremSite)}
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
                S.storage[i].onprem.server,
                f"Lustre NID {nid} is outside the nodes' IPoIB networks ({ranges}): LNet over o2ib needs a common network",
                "use the server's IPoIB address, set the fabric's ipoibCidr to include it, or declare lnetRoutes",
                nid,
                resource=tier.name,
            )


@rules.rule("AL385", "audit-webhook-read", "An audit webhook is declared only where on-prem API servers send to it (audit on).")
def audit_webhook_read(ctx: RuleContext) -> Iterable[Finding]:
    # kubespray is the only engine that reads it (AWS sites audit to CloudWatch Logs and CloudTrail); the field is the
    # document's, so a hybrid spec whose development environment is AWS-only still uses it in production
    audit = ctx.spec.security.audit
    if audit.webhook is None:
        return
    path = S.security.audit.webhook
    if not audit.enabled:
        yield Finding(path, "audit logging is off (audit.enabled: false): no API server sends events to this webhook",
                      "remove webhook, or turn audit logging on", audit.webhook)  # fmt: skip
    elif not any(isinstance(site, OnpremSite) for env in ctx.spec.environments.values() for site in env.sites):
        yield Finding(path, "no environment has an on-prem site: only kubespray's API servers send to this webhook (AWS sites "
                      "audit to CloudWatch Logs and CloudTrail)", "remove webhook, or add the on-prem site it is for",
                      audit.webhook)  # fmt: skip


def _time_server_problem(server: str) -> str | None:
    """Why chrony on a host cannot follow ``server``, or None: a loopback or unspecified address is the host itself."""
    if server.lower().rstrip(".") == "localhost":
        return "localhost is the host itself, not a time server"
    try:
        address = ipaddress.ip_address(server)
    except ValueError:
        return None
    if address.is_loopback or address.is_unspecified:
        return f"{server} is the host itself, not a time server"
    return None


@rules.rule("AL391", "time-servers", "An on-prem site's time servers are named once each, and none is the host itself.")
def time_servers(ctx: RuleContext) -> Iterable[Finding]:
    # each lands in kubespray's chrony.conf as a server line: a name twice is one source counted twice when chrony
    # votes out a wrong server, and a loopback source leaves every host following its own clock, never synchronised
    for s, site in enumerate(ctx.env.sites):
        if not isinstance(site, OnpremSite):
            continue
        seen: set[str] = set()
        base = S.environments[ctx.env_name].sites[s].time_sync.servers
        for j, server in enumerate(site.time_sync.servers):
            key = server.lower().rstrip(".")
            if key in seen:
                yield Finding(base[j], f"time server {server} is named twice", "name each NTP server once", server, resource=site.name)
            seen.add(key)
            problem = _time_server_problem(server)
            if problem is not None:
                yield Finding(base[j], problem, "name the data center's NTP servers, or leave servers empty", server, resource=site.name)
