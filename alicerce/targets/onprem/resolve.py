"""What the on-prem target decides: hosts by rack, the RDMA adapters, file system implementations and mounts."""

from __future__ import annotations

from alicerce.catalog import Catalog
from alicerce.spec.models import Fabric, LocalNvmeTier, Networks, NodePool, ParallelFsTier, PlatformSpec, SharedNfsTier, Site, StorageTier
from alicerce.spec.record import replace
from alicerce.spec.units import expand_hosts
from alicerce.targets.base import AuditLogOnHosts, Capabilities, EtcdMetrics, PlatformEndpoint
from alicerce.targets.onprem.spec import OnpremSite
from alicerce.targets.onprem.target import TARGET
from alicerce.targets.resolver import MountFacts, NodeSoftwareOwners, PoolPlacement, TargetResolver

# The kubespray release whose defaults the on-prem target assumes of a site's cluster (tests/data/upstream/kubespray/)
KUBESPRAY_DEFAULTS = "v2.31.0"

CAPABILITIES = Capabilities(
    provider=TARGET.name,
    label=TARGET.label,
    owned=TARGET.capacity == "owned",
    pool_section=TARGET.name,
    pool_section_hint="add onprem: {hosts: [...]}",
    nodes_by_ansible=TARGET.applies,
    gpu_stack_on_image=False,
    storage={"local-nvme": "mdadm-raid0"},
    # kubespray defaults (KUBESPRAY_DEFAULTS): kube-proxy serves metrics on 127.0.0.1:10249 only (control-plane defaults
    # kube-proxy.yml:97); the scheduler and controller manager listen on every address
    unscraped_control_plane=("kube-proxy",),
    # etcd runs on the hosts (etcd_deployment_type: host) with no metrics listener unless etcd_metrics_port is set
    # (roles/etcd/templates/etcd.env.j2:8-11, which then listens on http://<etcd_address>:<port> and loopback); with
    # etcd_metrics_service_labels too, kubespray applies a Service etcd-metrics and its Endpoints on each etcd host's
    # address in kube-system, port http-metrics (roles/kubernetes-apps/ansible/tasks/main.yml:78-89 and its templates
    # etcd_metrics-{service,endpoints}.yml.j2). 2381 is the port kubespray's docs and kube-prometheus-stack's kubeEtcd
    # default name (docs/operations/etcd.md; etcd_defaults main.yml:40 comments it). "extensive" adds the gRPC
    # handling-time histograms kube-prometheus-stack's etcdGRPCRequestsSlow reads (etcd's --metrics; kubespray's default
    # "basic", etcd_defaults main.yml:37). The Service's labels are alicerce's, selected by the chart's ServiceMonitor:
    # they do not depend on the Helm release's name (tests/data/upstream/kubespray/v2.31.0/metrics.json)
    etcd_metrics=EtcdMetrics(
        port=2381,
        scheme="http",
        port_name="http-metrics",
        service_labels={
            "app.kubernetes.io/name": "etcd",
            "app.kubernetes.io/component": "metrics",
            "app.kubernetes.io/managed-by": "Kubespray",
            # the job label of every etcd series (kube-prometheus-stack's etcd alerts select job=~".*etcd.*")
            "jobLabel": "kube-etcd",
        },
        detail="extensive",
    ),
    storage_choices={
        "parallel-fs": "lustre, beegfs or weka",
        "shared-nfs": "nfs",
        "object": "minio or ceph-rgw",
        "block": "ceph-rbd or local-path",
    },
)


def control_plane_hosts(site: OnpremSite) -> list[str]:
    """The control-plane hosts of a site, ranges expanded (kubespray's kube_control_plane and etcd)."""
    if site.control_plane is None:
        return []
    hosts: list[str] = []
    for entry in site.control_plane.hosts:
        try:
            hosts.extend(expand_hosts(entry))
        except ValueError:
            continue  # rule AL220 reports the range
    return hosts


def _site(site: Site, networks: Networks) -> Site:
    update = {"service_cidr": site.service_cidr or networks.service_cidr}
    if isinstance(site, OnpremSite):
        update["pod_cidr"] = site.pod_cidr or networks.pod_cidr
    return site.model_copy(update=update)


def _racks(pool: NodePool) -> dict[str, tuple[str, ...]]:
    racks: dict[str, list[str]] = {}
    for entry in pool.onprem.hosts if pool.onprem else []:
        try:
            hosts = expand_hosts(entry.hosts)
        except ValueError:
            continue  # rule AL220 reports the range
        racks.setdefault(entry.rack or "", []).extend(hosts)
    return {rack: tuple(hosts) for rack, hosts in racks.items()}


def _pool(pool: NodePool, site: Site, fabric: Fabric | None, catalog: Catalog) -> PoolPlacement:
    if not isinstance(site, OnpremSite) or pool.onprem is None:
        return PoolPlacement()
    transport = fabric.onprem if fabric is not None else None
    adapters = (pool.onprem.hcas if pool.onprem.hcas is not None else fabric.rails) if fabric is not None else 0
    return PoolPlacement(
        rdma_technology=transport.technology if transport is not None else None,
        rdma_interfaces=adapters if transport is not None else 0,
        rdma_rate_gbps=transport.rate_gbps if transport is not None else None,
        rdma_host_stack=transport.stack if transport is not None else None,
        rdma_rail_devices=tuple(pool.onprem.rail_devices) if transport is not None else (),
        racks=_racks(pool),
    )


def _implementation(tier: StorageTier) -> str | None:
    if isinstance(tier, LocalNvmeTier):
        return CAPABILITIES.storage["local-nvme"]
    return tier.onprem.implementation if tier.onprem is not None else None


# Last on every shared file system's options (mount(8) reads them left to right, so a spec's `suid` or `dev`
# cannot undo them): a setuid binary or a device node on a server the spec names never runs as root on a node.
HARDENED = ("nosuid", "nodev")


def _mount(tier: StorageTier, implementation: str) -> MountFacts | None:
    if isinstance(tier, ParallelFsTier) and tier.onprem is not None:
        fs = tier.onprem
        if implementation == "lustre":
            return MountFacts("lustre", f"{fs.server}:/{fs.filesystem}", ("flock", "noatime", *fs.mount_options, *HARDENED))
        if implementation in ("beegfs", "weka"):
            # BeeGFS: the fourth field of beegfs-mounts.conf, which the client's init script appends last to its own
            # `-ocfgFile=..,_netdev,nosuid,..` (7.4.7 beegfs-client.init), so a spec's `suid` would undo its nosuid
            return MountFacts(implementation, fs.server, (*fs.mount_options, *HARDENED))
    if isinstance(tier, SharedNfsTier) and tier.onprem is not None and implementation == "nfs":
        nfs = tier.onprem
        return MountFacts("nfs", f"{nfs.server}:{nfs.export}", (f"vers={nfs.version}", "hard", "noatime", "nconnect=8", *HARDENED))
    return None


def _software(site: Site) -> NodeSoftwareOwners:
    assert isinstance(site, OnpremSite)
    return NodeSoftwareOwners(gpu_driver=site.node_software.gpu_driver, node_exporter=site.node_software.node_exporter)


# kubespray v2.31.0 defaults: the API servers listen on kube_apiserver_port 6443 on the control-plane hosts
# (kubespray_defaults main.yml:303), and NodeLocal DNSCache is on at 169.254.25.10 (main.yml:138-140)
API_SERVER_PORT = 6443
NODELOCAL_DNS = PlatformEndpoint(
    "nodelocal-dns", ("169.254.25.10/32",), (("UDP", 53), ("TCP", 53)), "DNS through NodeLocal DNSCache (kubespray enable_nodelocaldns)"
)


def _endpoints(site: Site) -> tuple[PlatformEndpoint, ...]:
    assert isinstance(site, OnpremSite)
    # in-cluster clients (Ray, Trainer launchers) reach the API through the kubernetes Service, whose endpoints are the
    # control-plane hosts: policies see the address after the Service's translation, so allow the host networks on 6443
    api = PlatformEndpoint("kube-apiserver", tuple(str(c) for c in site.host_cidrs), (("TCP", API_SERVER_PORT),), "the Kubernetes API")
    return (api, NODELOCAL_DNS)


# kube-apiserver's audit log on each control-plane host: files of 100 MB (kubespray's audit_log_maxsize default), at
# most this many of them (kubespray's audit_log_maxbackups, set by alicerce.emit.ansible.kubespray)
AUDIT_LOG_MB = 100
AUDIT_LOG_FILES = 100


def _site_capabilities(site: Site, spec: PlatformSpec, environment: str) -> Capabilities:
    """An on-prem site's capabilities: its API servers keep the audit log on their hosts, each its own files."""
    assert isinstance(site, OnpremSite)
    audit = AuditLogOnHosts(files=AUDIT_LOG_FILES, megabytes=AUDIT_LOG_MB, servers=tuple(control_plane_hosts(site)))
    return replace(CAPABILITIES, audit_log_on_hosts=audit)


RESOLVER = TargetResolver(
    capabilities=CAPABILITIES,
    site_capabilities=_site_capabilities,
    site=_site,
    pool=_pool,
    implementation=_implementation,
    mount=_mount,
    software=_software,
    endpoints=_endpoints,
)
