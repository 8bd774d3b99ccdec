"""What every target (a kind of site: AWS, on-prem, later others) tells the provider-neutral code.

A target is a package under :mod:`alicerce.targets` with one module per pipeline stage: ``spec``
(its sections of the spec), ``rules`` (its cross-field rules), ``resolve`` (the facts it decides:
instance types, RDMA attachment, zones, hosts by rack, storage implementations) and ``build`` (its
Pulumi resources), plus ``target`` with its one :class:`Target` declaration. Every stage derives its
list of targets from :data:`alicerce.targets.TARGETS` (the spec's ``Site`` union and sections, the
rules' ``RULE_MODULES``, :data:`alicerce.resolve.targets.RESOLVERS`, the program's ``BUILDERS``); the
code in between reads :class:`Capabilities` and resolved facts, never the provider's name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel

from alicerce.spec.cachedir import cached_json, import_path_key
from alicerce.spec.record import field, record

RdmaTechnology = Literal["efa", "infiniband", "roce"]
Capacity = Literal["rented", "owned"]
Deploy = Literal["pulumi", "apply"]
SectionPlace = Literal["pool", "fabric", "parallel-fs", "shared-nfs", "object", "block"]


@record
class Section:
    """A target's own section of a provider-neutral model (a pool's `aws:`, a tier's `onprem:`): its model and hover text."""

    model: type[BaseModel]
    description: str


@record
class CloudAccount:
    """How a target's sites are reached from outside the cloud: CI's credentials step, the stack settings the
    scaffold writes and the region the README names. A target without one needs no cloud credentials in CI."""

    region: Callable[[Any], str]  # the site's region: CI's credentials are for it, the README's quickstart names it
    # the scaffold's placeholder for a cloud stack's `alicerce:adminPrincipals` (the roles granted cluster admin)
    admin_principals: Callable[[Any], tuple[str, ...]]
    credentials_action: str  # the GitHub action CI runs to assume the environment's role by OIDC (pinned in the catalog)
    credentials_inputs: Mapping[str, str]  # its inputs; "{region}" and "{session}" are filled in per job
    # the cloud's clusters grant admin only to principals the stack names (`alicerce:adminPrincipals`): what one is
    # called and an example value, for the stack check that refuses none before anything deploys
    admin_principal_kind: str = "principal"
    admin_principal_example: str = "<principal>"


@record
class ManagedAddons:
    """The add-ons a target's managed control plane installs by version, for the bill of materials."""

    kind: str  # the BOM's kind of pin
    always: tuple[str, ...]  # installed on every cluster of the target
    by_storage: Mapping[str, str]  # storage implementation -> the add-on a tier of it needs


@record
class Target:
    """One target as every stage sees it: declared once, in ``alicerce/targets/<name>/target.py``.

    The later stages are named by module (``"package.module"``) and loaded when that stage runs, so the
    spec models import only this declaration and its ``spec`` module (``alicerce validate`` stays fast).
    """

    name: str  # the spec's `provider:` value, and the key of its sections in pools, tiers and fabrics
    label: str  # in messages: "AWS", "on-prem"
    site: type[BaseModel]  # its site model (a `provider: Literal[name]` field discriminates it)
    sections: Mapping[SectionPlace, Section]  # its sections of the neutral models; "pool" is required
    resolver: str  # module holding RESOLVER, its TargetResolver (resolve stage)
    rules: str  # module holding `rules`, its RuleSet (rules stage)
    build: str  # module holding build_site and kube_site, its Pulumi layers (emit stage)
    capacity: Capacity  # rented by the hour (plan prices it) or owned (plan amortises it: TCO, costs.owned)
    # how its sites are deployed: "pulumi": a Pulumi stack builds the cloud layer; "apply": `alicerce apply <name>`
    # provisions the nodes and the cluster (its Ansible tree); CI, the README and the scaffold follow this
    deploy: tuple[Deploy, ...]
    starter: str | None = None  # its starter spec for `alicerce init --target` (emit/templates/starters/<starter>.yaml)
    cloud: CloudAccount | None = None  # its sites' cloud account (CI credentials, stack settings); None: none needed
    addons: ManagedAddons | None = None  # the managed add-ons its clusters run (the bill of materials lists them)

    def __post_init__(self) -> None:
        if "pool" not in self.sections:
            raise ValueError(f"target {self.name}: declare its pool section")
        object.__setattr__(self, "sections", MappingProxyType(dict(self.sections)))

    @property
    def applies(self) -> bool:
        """`alicerce apply <name>` provisions its nodes (the generated Ansible tree)."""
        return "apply" in self.deploy


@record
class PlatformEndpoint:
    """Something outside the pod network every team pod must reach (a NetworkPolicy egress allow)."""

    name: str  # names the NetworkPolicy: allow-<name>
    cidrs: tuple[str, ...]
    ports: tuple[tuple[Literal["TCP", "UDP"], int], ...]
    why: str  # one line for the policy's annotation


@record
class CsiSubdirectory:
    """How a PersistentVolume of one CSI driver mounts a directory below the file system's root (a team's volume)."""

    attribute: str | None = None  # the volume attribute naming the mount, to which "/<dir>" is appended
    default: str = ""  # that attribute's value where the source omits it
    handle_separator: str | None = None  # else: the volume handle gets "<separator><dir>" appended


@record
class AuditLogOnHosts:
    """Where a target's API servers keep their audit log on their own hosts, rotated by count: each keeps ``files``
    files of ``megabytes`` and deletes the oldest whatever its age (kube-apiserver --audit-log-maxbackup, -maxsize)."""

    files: int
    megabytes: int
    servers: tuple[str, ...]  # the site's API server hosts, each with its own set of files


@record
class EtcdMetrics:
    """Where a target's cluster builder serves etcd's metrics to Prometheus: a listener of its own beside the client
    port (which asks for client certificates), published in kube-system as a Service without a selector and Endpoints
    on the etcd hosts' addresses, which only the builder knows (a site names its hosts, not their addresses)."""

    port: int  # the metrics listener's port on every etcd host
    scheme: Literal["http", "https"]  # what that listener speaks
    port_name: str  # the name of the Service's and Endpoints' port
    service_labels: Mapping[str, str]  # the labels the builder puts on that Service, which the ServiceMonitor selects
    detail: Literal["basic", "extensive"]  # etcd --metrics: "extensive" adds the gRPC handling-time histograms


@record
class FileSystemMetrics:
    """Where the cloud publishes one kind of file system's I/O, what alicerce reads of it, and the series the storage
    metrics exporter serves for it. Each series holds one period's statistic (a sum over the period, not a counter):
    per second is the value over the period's seconds."""

    namespace: str  # the metrics namespace the cloud publishes the file system's metrics in
    dimension: str  # the one dimension that names a file system (series with more dimensions are per part of one)
    requested: Mapping[str, tuple[str, ...]]  # metric -> the statistics alicerce asks for
    read_bytes: str  # bytes read in one period
    written_bytes: str  # bytes written in one period
    operations: tuple[str, ...]  # summed: data reads and writes in one period
    metadata_operations: str  # metadata operations in one period
    discovered: str  # served (value 0) for every file system the exporter's tag search finds, whatever the cloud has on it
    # how many periods back one read reaches (its newest datapoint is served): more than one bridges a minute the cloud
    # publishes late, but repeats a busy minute where the cloud publishes nothing for the idle ones after it
    window_periods: int = 1
    io_limit_percent: str | None = None  # how close the file system is to its I/O limit, in percent, where it has one


@record
class StorageMetricsExporter:
    """The exporter that reads a target's file systems' I/O from the cloud's metrics service into Prometheus."""

    chart: str  # catalog chart key
    service_account: tuple[str, str]  # (namespace, name): the cloud identity the target's build binds to it
    tier_tag: str  # the tag the target's build puts on each tier's file system, valued with the tier's name
    site_tag: str  # the tag it puts on them valued with the site's name (two sites may share a region and a tier name)
    tier_label: str  # the label the exporter turns that tag into on every series
    period_seconds: int  # the statistics' period: the finest the cloud publishes these metrics at
    delay_seconds: int  # how far behind now the newest period read ends (the cloud publishes a minute late)
    request_errors: str  # a selector of the exporter's counter of failed calls to the cloud's metrics API
    sources: Mapping[str, FileSystemMetrics]  # storage implementation -> its metrics


@record
class Capabilities:
    """What a target's clusters bring and how alicerce provisions them."""

    provider: str  # the spec's `provider:` value
    label: str  # in messages: "AWS", "on-prem"
    owned: bool  # its capacity is owned (servers bought: TCO, costs.owned), not rented by the hour
    pool_section: str  # the NodePool field that holds this target's details
    pool_section_hint: str  # how to add that section, for error hints
    nodes_by_ansible: bool  # alicerce's Ansible tree provisions the nodes (else the cloud's node groups do)
    gpu_stack_on_image: bool  # the node image already carries the NVIDIA driver and container toolkit
    storage: dict[str, str] = field(default_factory=dict)  # storage class -> implementation, where the target decides it
    storage_choices: dict[str, str] = field(default_factory=dict)  # storage class -> implementations the spec may name (hints)
    default_storage_class: dict[str, Any] | None = None  # the StorageClass pods get when they name none
    # control-plane components whose metrics Prometheus cannot reach from inside the cluster (a cloud's managed
    # control plane, a component listening on loopback): nothing scrapes them and no alert waits on them
    unscraped_control_plane: tuple[Literal["controller-manager", "scheduler", "etcd", "kube-proxy"], ...] = ()
    # where the cluster's etcd serves its metrics outside a pod (a host service the builder configures); None: etcd is
    # either unscraped (above) or a pod the monitoring chart's own Service selects
    etcd_metrics: EtcdMetrics | None = None
    # where the site's audit log stays on the API servers' hosts when no webhook ships it (the builder's rotation);
    # None: the target keeps it elsewhere (a cloud's control-plane logs)
    audit_log_on_hosts: AuditLogOnHosts | None = None
    # Helm releases of the target's own controllers, bound to cloud identities its build creates: Pulumi installs
    # them in every delivery mode (the GitOps tree names them)
    cloud_controllers: tuple[str, ...] = ()
    # storage implementation -> the Helm chart of the CSI driver that mounts it in pods, installed in the cluster (a
    # driver the cloud layer installs, or one the hosts mount, needs none)
    csi_charts: Mapping[str, str] = field(default_factory=dict)
    # the Helm chart of the device plugin that advertises its pools' cloud RDMA interfaces to pods; None: no such
    # interfaces (on-prem RDMA goes through the Network Operator)
    rdma_device_plugin: str | None = None
    # CSI driver name -> how its volumes name a subdirectory (teams' volumes on a shared file system it mounts)
    csi_subdirectories: Mapping[str, CsiSubdirectory] = field(default_factory=dict)
    # the exporter of the target's file systems' throughput and operations per tier; None: the hosts count them
    # (alicerce.emit.storage_counters) or nothing does
    storage_metrics: StorageMetricsExporter | None = None
    # what the on-call does about a GPU node that died (NotReady, its GPUs lost), in the missing-GPUs page's runbook:
    # a target whose nodes repair themselves says so, so nobody hunts for a BMC a cloud does not give
    dead_node_action: str = "check its BMC and console, then cordon it while it is repaired"
    # what the on-call does with a node whose GPU reported a critical XID (GPUCriticalXid's runbook)
    gpu_fault_action: str = "drain the node and run the node validation role before returning it to service"
    # what the end of GPUCriticalXid's page, at the node's cordon, means at the site
    critical_xid_cordon: str = "A reset that has not happened is not a resolved incident"
    # the same for a GPU suspected, not proven, faulty (GPUApplicationXidRecurring: jobs fail on it and run elsewhere)
    gpu_suspect_action: str = "drain the node and run the node validation role"
    # what is done with a GPU that must be replaced (GPURowRemapFailure: out of spare memory rows)
    gpu_replace_action: str = "replace it (RMA)"
    # where to look when the hardware brakes a node's GPUs for power (GPUHardwareSlowdown): on owned hosts, their power
    power_fault_action: str = "Check the node's power supplies, PDU feed and the BMC's power and event logs (ipmitool sel list)"
    # who keeps the nodes' clocks and what the on-call checks when one is off or unsynchronised (NodeClockOffset, and the
    # monitoring chart's NodeClockNotSynchronising): on owned hosts kubespray's chrony and the site's time servers
    clock_sync_action: str = (
        "kubespray runs chrony on every host, following the site's timeSync.servers (the distribution's pools where it "
        "names none): on the node, chronyc tracking says how far off the clock is and chronyc sources -v which servers "
        "it reaches and selects; name servers the hosts reach and agree with in timeSync.servers, and run alicerce apply "
        "onprem"
    )


def entry_points(group: str) -> list[tuple[str, str]]:
    """The (name, value) of each entry point of ``group`` in the installed distributions, by name.

    Reading every installed distribution's metadata costs as much as the rest of a cold `validate`: the list is
    kept in the cache folder, keyed by the import path's folders and their modification times (installing or
    removing a distribution changes its folder's).
    """

    def scan() -> list[list[str]]:
        from importlib.metadata import entry_points as installed

        return [[entry.name, entry.value] for entry in sorted(installed(group=group), key=lambda e: e.name)]

    found = cached_json("entry-points", f"{group}-{import_path_key()}", scan)
    if not isinstance(found, list):
        return [(name, value) for name, value in scan()]
    return [(str(name), str(value)) for name, value in found]


def load_entry_point(value: str) -> object:
    """What an entry point's ``module:attr.path [extras]`` names, as ``EntryPoint.load`` finds it."""
    module, _, attrs = value.split("[", 1)[0].partition(":")
    found: object = importlib.import_module(module.strip())
    for name in filter(None, attrs.strip().split(".")):
        found = getattr(found, name)
    return found
