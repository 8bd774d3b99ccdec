"""The interface a target's resolve step offers: its capabilities and the facts only it can decide."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from alicerce.catalog import Catalog
from alicerce.catalog.fsx import FsxConfig
from alicerce.catalog.models import InstanceType
from alicerce.spec.models import Fabric, Networks, NodePool, PlatformSpec, Site, StorageTier
from alicerce.spec.record import field, record
from alicerce.targets.base import Capabilities, PlatformEndpoint, RdmaTechnology


@record
class PoolPlacement:
    """Where and on what a pool's nodes run, as its target decides it."""

    instance: InstanceType | None = None
    rdma_technology: RdmaTechnology | None = None
    rdma_interfaces: int = 0
    placement_group: bool = False
    zone: str | None = None
    racks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # where the target runs the RDMA links itself: the link rate per interface (Gbit/s; None: the instance type says)
    # and the RDMA software its hosts run (rdma-core, doca-ofed; None: not alicerce's to install)
    rdma_rate_gbps: float | None = None
    rdma_host_stack: str | None = None
    # the RDMA device names of the rails where the spec names them (empty: every device the node reports)
    rdma_rail_devices: tuple[str, ...] = ()
    # how its rented capacity is bought (plan prices it, rules check reservations); owned capacity is never priced
    capacity_type: str = "on-demand"


@record
class NodeSoftwareOwners:
    """Who owns the node software of a site (one owner per component; both sides read this)."""

    gpu_driver: Literal["node-image", "operator", "host"]  # node-image: the machine image ships driver and toolkit
    node_exporter: Literal["cluster", "host"]

    @property
    def container_toolkit(self) -> Literal["node-image", "host"]:
        """Who owns the NVIDIA container toolkit: the image that ships it, else the host.

        Never the GPU Operator: its toolkit container rewrites containerd's config (an ``imports`` line
        and a drop-in), which the host's cluster installer templates whole on every run (kubespray's
        containerd role), so the two would undo each other (on-prem research A3). The host side
        installs the toolkit packages and registers the runtime through the installer's own variables;
        where the operator owns the driver, the host toolkit's ``root`` is ``/run/nvidia/driver``, where the
        driver container mounts it (NVIDIA cloud-native-docs gpu-operator/getting-started.rst 687-706,
        "Pre-Installed NVIDIA Container Toolkit (but no drivers)", tag gpu-operator-v26.3-32).
        """
        return "node-image" if self.gpu_driver == "node-image" else "host"


@record
class MountFacts:
    """How a shared file system is mounted at a site of this target (see alicerce.resolve.model.Mount)."""

    kind: str
    source: str
    options: tuple[str, ...]


@record
class TargetResolver:
    capabilities: Capabilities
    site: Callable[[Site, Networks], Site]  # the site with its defaults filled
    pool: Callable[[NodePool, Site, Fabric | None, Catalog], PoolPlacement]
    implementation: Callable[[StorageTier], str | None]  # how a tier is built here; None: not at all
    mount: Callable[[StorageTier, str], MountFacts | None]  # how nodes and pods mount a shared tier here
    software: Callable[[Site], NodeSoftwareOwners]
    # the capabilities of one site where they depend on it (a default StorageClass on the site's key); else `capabilities`
    site_capabilities: Callable[[Site, PlatformSpec, str], Capabilities] | None = None

    def capabilities_of(self, site: Site, spec: PlatformSpec, environment: str) -> Capabilities:
        return self.site_capabilities(site, spec, environment) if self.site_capabilities is not None else self.capabilities

    endpoints: Callable[[Site], tuple[PlatformEndpoint, ...]] = lambda site: ()  # what team pods must reach outside the pod network
    # the managed file system a tier implemented as `implementation` gets here, sized for a throughput (bytes/s):
    # `pinned` keeps the capacity the spec pins (resolve's one configuration); plan sizes for the workloads' need
    # without it. None where the target builds none (its tiers are the user's own servers).
    file_system: Callable[[StorageTier, str, Catalog, float | None, bool], FsxConfig | None] = lambda tier, impl, catalog, bps, pinned: None
