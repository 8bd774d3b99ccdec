"""Which storage tiers' I/O a site counts, and how: its nodes' client counters, or the cloud's metrics of its file systems;
and where the node exporter reads the textfiles of those counters, of the EFA ports' and of the InfiniBand ports'
transmit wait (issue 24).

The node_monitoring role writes the counters (its files/alicerce_storage_stats.py, from a systemd
timer) into the textfile collector's directory; the node exporter that owns port 9100 reads them,
the host's own or the cluster's DaemonSet through its host root mount. Decided here for both.
"""

from __future__ import annotations

from typing import Any

from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite
from alicerce.targets.base import FileSystemMetrics

TEXTFILE_DIRECTORY = "/var/lib/prometheus/node-exporter"
"""The textfile collector's directory on the host (Debian and Ubuntu's prometheus-node-exporter package use it too)."""

COUNTED_KINDS = ("lustre", "nfs")
"""Mounts whose client keeps per-mount counters: Lustre's llite stats, NFS's mountstats. BeeGFS clients keep none."""


def counted_tiers(site: ResolvedSite) -> list[str]:
    """The tiers the nodes of ``site`` mount themselves and count (empty where no Ansible-managed node mounts one)."""
    if not site.capabilities.nodes_by_ansible:
        return []
    return [t.name for t in site.storage if (m := t.mounts.get(site.name)) is not None and m.kind in COUNTED_KINDS]


def efa_counted(site: ResolvedSite) -> bool:
    """Whether nodes of ``site`` write EFA port counters into the textfile directory (its EFA pools' launch template
    installs the writer: alicerce.targets.aws.components.gpu_node_pool.efa_stats_part)."""
    return any(p.rdma is not None and p.rdma.technology == "efa" for p in site.pools)


def rail_port_pools(site: ResolvedSite) -> list[ResolvedPool]:
    """The pools of ``site`` whose RDMA ports the node exporter reports as rails (InfiniBand/RoCE with port counters):
    what FabricPortDown and FabricRailsNeverUp read, and the only readers of the port records (alicerce.emit.kube.kpi
    PORT_LAST_ACTIVE and the port kind counts), so a site without them records none."""
    return [p for p in site.pools if p.rdma is not None and p.rdma.port_counters]


def fabric_wait_pools(site: ResolvedSite) -> list[str]:
    """The pools of ``site`` whose nodes run node_monitoring's collector of their InfiniBand ports' transmit wait
    (files/alicerce_fabric_wait.py): host adapters on an InfiniBand fabric, provisioned by Ansible. It owns
    PortXmitWait, which it clears each tick where the port has only the 32-bit counter: the node exporter's
    node_infiniband_port_transmit_wait_total (the sysfs file) then reads a saw, and no rule reads it. RoCE ports answer
    no PMA query by LID, and EFA has no such counter."""
    if not site.capabilities.nodes_by_ansible:
        return []
    return sorted(p.name for p in site.pools if p.rdma is not None and p.rdma.technology == "infiniband" and p.hosts)


SUPERSEDED_NODE_SERIES = ("node_infiniband_port_transmit_wait_total",)
"""The node exporter's series of counters another collector owns: its PortXmitWait (the sysfs file the fabric wait
collector clears) reads a saw where the collector runs."""


def node_exporter_drops(site: ResolvedSite) -> list[dict[str, Any]]:
    """Metric relabelings that drop, at the scrape, what the node exporter reads of counters a collector owns: one
    owner, one series (alicerce_fabric_port_transmit_wait_ticks_total) for the ports' wait."""
    if not fabric_wait_pools(site):
        return []
    return [{"sourceLabels": ["__name__"], "regex": "|".join(SUPERSEDED_NODE_SERIES), "action": "drop"}]


def reads_textfiles(site: ResolvedSite) -> bool:
    """Whether the node exporter of ``site`` must read the textfile directory: storage tiers', EFA ports' or InfiniBand
    ports' transmit wait counters."""
    return bool(counted_tiers(site)) or efa_counted(site) or bool(fabric_wait_pools(site))


def every_mount_counted(site: ResolvedSite) -> bool:
    """Whether the client counters see every shared file system ``site``'s nodes read and write: then they, not the
    NICs and fabric ports (which carry NCCL and pod traffic too), measure a node's storage I/O."""
    mounts = [m for t in site.storage if (m := t.mounts.get(site.name)) is not None]
    return bool(counted_tiers(site)) and all(m.kind in COUNTED_KINDS for m in mounts)


def cloud_metric_tiers(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, FileSystemMetrics]:
    """Tier -> where the cloud publishes its file system's I/O, for the tiers of ``site`` whose implementation there the
    target's storage metrics exporter reads (FSx for Lustre, EFS). Empty without the platform's monitoring: the exporter,
    its cloud identity, its rules and its alert come together or not at all."""
    exporter = site.capabilities.storage_metrics
    if exporter is None or not rp.spec.operators.monitoring.enabled:
        return {}
    return {t.name: exporter.sources[i] for t in site.storage if (i := t.implementations.get(site.name, "")) in exporter.sources}
