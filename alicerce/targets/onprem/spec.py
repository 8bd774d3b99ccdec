"""The on-prem target's sections of the spec: the site (a data center with its own cluster), the
pool's hosts, the storage implementations (Lustre, BeeGFS, Weka, NFS, S3-compatible, block) and
the InfiniBand or RoCE fabric details.
"""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, StrictInt, WithJsonSchema

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.text import (
    ApiEndpoint,
    Device,
    FsName,
    Host,
    Interface,
    KeyFingerprint,
    LnetRoute,
    MountOption,
    NidList,
    PciAddress,
    RdmaDevice,
    SecretName,
    ServerPath,
    Url,
    Word,
)
from alicerce.spec.units import Cidr


def check_endpoint(value: str) -> str:
    """The API endpoint has a host and, when it names a port, one from 1 to 65535 (kubespray's
    loadbalancer_apiserver_port; a port of 99999 crashed generate, 0 silently became 6443)."""
    parts = urlsplit(value if "://" in value else f"https://{value}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        shown = value if len(value) <= 80 else f"{value[:80]}..."
        raise ValueError(f'the port of "{shown}" must be a number from 1 to 65535')
    if not parts.hostname:
        raise ValueError("expected https://host[:port], such as https://k8s.dc1.example.com:6443")
    return value


class OnpremHostGroup(SpecModel):
    """Control-plane or infrastructure hosts of an on-prem site."""

    hosts: list[str] = Field(min_length=1, description="Host names or ranges such as cp-[1:3].dc1.example.com.")


class ApiLoadBalancer(SpecModel):
    """How clients and nodes reach the API servers of several control-plane hosts (kubespray's HA modes)."""

    kind: Literal["external", "kube-vip"] = Field(
        description="external: a load balancer you run in front of the control plane (kubespray loadbalancer_apiserver); "
        "kube-vip: a virtual IP the control-plane hosts announce themselves (ARP)."
    )
    address: IPv4Address = Field(description="IP address the endpoint's name resolves to (the load balancer or the virtual IP).")
    interface: Interface | None = Field(default=None, description="kube-vip: the control-plane hosts' interface that carries the VIP.")


class ControlPlane(OnpremHostGroup):
    """The control-plane hosts alicerce builds the site's cluster on (with kubespray), and how the API is reached."""

    load_balancer: ApiLoadBalancer | None = Field(
        default=None,
        description="Required with more than one host: the API endpoint in front of them. With one host the endpoint is that host.",
    )
    cni: Literal["calico", "cilium"] = Field(default="calico", description="Pod network plugin kubespray installs.")


class Acceptance(SpecModel):
    """What the burn-in proves on every node before it takes work."""

    dcgm_diag_level: Literal[1, 2, 3, 4] = Field(
        default=2, description="dcgmi diag run level: 1 quick (seconds), 2 medium (about 2 minutes), 3 long (about 30 minutes), 4 extended."
    )
    nccl_efficiency: float = Field(
        default=0.7,
        gt=0,
        le=1,
        description="Share of the per-GPU link bandwidth (NVLink or PCIe, one direction; rails x rate across nodes) that "
        "NCCL all-reduce bus bandwidth and GPU-to-GPU copies must reach.",
    )
    ib_write_bw_efficiency: float = Field(default=0.9, gt=0, le=1, description="Share of the rail rate ib_write_bw must reach per rail.")


class LustreMirror(SpecModel):
    """A signed mirror of Whamcloud's Lustre client repository (Whamcloud's own Ubuntu repositories are not signed)."""

    url: Url = Field(
        description="The mirror of one Lustre release: apt reads <url>/<distribution>/client (ubuntu2204/client, ...).",
        examples=["https://apt.dc1.acme.example/lustre/lustre-2.15.1"],
    )
    key: Url = Field(description="URL of the mirror's signing key (ASCII-armored).", examples=["https://apt.dc1.acme.example/key.asc"])
    key_fingerprint: KeyFingerprint = Field(
        description="Full fingerprint of that key: the node installs it only when the downloaded key has it.",
        examples=["0123456789ABCDEF0123456789ABCDEF01234567"],
    )


class NodeSoftware(SpecModel):
    """Who owns each piece of node software at an on-prem site: exactly one owner per component."""

    gpu_driver: Literal["operator", "host"] = Field(
        default="operator",
        description="Who installs the NVIDIA driver and Fabric Manager: the GPU Operator's driver container (NVIDIA's "
        "recommendation for Kubernetes nodes), or alicerce's nvidia_driver role on the host (for hosts whose RDMA stack "
        "must be built against the driver).",
    )
    lustre_mirror: LustreMirror | None = Field(
        default=None,
        description="Where the nodes get the Lustre client: a signed mirror of the pinned release. Needed where a Lustre tier "
        "is mounted (the node stage refuses to add an unsigned or unchecked repository).",
    )
    node_exporter: Literal["cluster", "host"] = Field(
        default="cluster",
        description="Who runs the Prometheus node exporter on port 9100: kube-prometheus-stack's DaemonSet, or "
        "alicerce's node_monitoring role on the host.",
    )


# kubespray's chrony configuration writes each server as "server <entry>" (roles/kubernetes/preinstall/templates/
# chrony.conf.j2 at the pinned tag); alicerce adds iburst, kubespray's own default option (its ntp_servers defaults)
TIME_SERVER_OPTIONS = "iburst"


class TimeSync(SpecModel):
    """The clock of every host of the site: kubespray installs chrony, the one time daemon of the hosts."""

    servers: list[Host] = Field(
        default_factory=list,
        max_length=16,
        description="NTP servers the hosts' chrony follows (kubespray's ntp_servers, each polled with iburst), usually "
        "the data center's own time servers. Empty: chrony keeps the configuration its distribution package ships "
        "(the distribution's public NTP pools, which a site without internet access cannot reach).",
        examples=[["ntp1.dc1.example.com", "ntp2.dc1.example.com", "10.30.0.2"]],
    )


class OnpremSite(SpecModel):
    """An on-prem data center with its own Kubernetes cluster."""

    ROUTED: ClassVar[tuple[tuple[str, str], ...]] = (("hosts", "host_cidrs"), ("pods", "pod_cidr"))  # (label, field); unset: networks'

    name: Name = Field(description="Site name that node pools and storage tiers refer to.", examples=["dc1"])
    provider: Literal["onprem"] = Field(description="Target kind.")
    control_plane_endpoint: Annotated[ApiEndpoint, AfterValidator(check_endpoint)] = Field(
        description="Kubernetes API endpoint of the site's cluster: https://host[:port], the port 1 to 65535 (default 6443).",
        examples=["https://k8s.dc1.example.com:6443"],
    )
    control_plane: ControlPlane | None = Field(
        default=None, description="Control-plane hosts: alicerce builds the cluster on them with kubespray (`alicerce apply onprem`)."
    )
    host_cidrs: list[Cidr] = Field(min_length=1, description="Node networks of the site.")
    pod_cidr: Cidr | None = Field(default=None, description="Pod range (defaults to networks.podCidr).")
    service_cidr: Cidr | None = Field(default=None, description="Service range (defaults to networks.serviceCidr).")
    kubeconfig_secret: SecretName | None = Field(
        default=None,
        description="Name of the Pulumi secret config key holding this cluster's kubeconfig (never the kubeconfig itself).",
        examples=["dc1Kubeconfig"],
    )
    node_software: NodeSoftware = Field(default_factory=NodeSoftware, description="Who owns each piece of node software.")
    delivery: Literal["pulumi", "argocd"] = Field(
        default="pulumi",
        description="How the in-cluster layer reaches this site's cluster: pulumi applies the operators and objects itself; "
        "argocd installs a pinned Argo CD that syncs the generated kubernetes/<site>/ tree from gitops.repository.",
    )
    acceptance: Acceptance = Field(default_factory=Acceptance, description="Burn-in thresholds every node must pass.")
    time_sync: TimeSync = Field(
        default_factory=TimeSync,
        description="Where the hosts set their clocks. Synchronised clocks are what GPU alerts comparing a node's boot "
        "time with Prometheus's, cost windows and DCGM and NCCL logs read across nodes rely on.",
    )


class HostRange(SpecModel):
    """A set of on-prem hosts, optionally in one rack."""

    hosts: str = Field(description="Host name or range such as gpu-[001:032].dc1.example.com.")
    rack: Word | None = Field(default=None, description="Rack id, used for inventory groups and rolling batches.")


def _host_range_shorthand(value: Any) -> Any:
    return {"hosts": value} if isinstance(value, str) else value


HostRangeSpec = Annotated[
    HostRange,
    BeforeValidator(_host_range_shorthand),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "description": "Host name or range such as gpu-[001:032].dc1.example.com."},
                {
                    "type": "object",
                    "properties": {
                        "hosts": {"type": "string", "description": "Host name or range."},
                        "rack": {"type": ["string", "null"], "description": "Rack id."},
                    },
                    "required": ["hosts"],
                    "additionalProperties": False,
                },
            ]
        }
    ),
]


class OnpremPool(SpecModel):
    """Which on-prem servers form the pool."""

    hosts: list[HostRangeSpec] = Field(
        min_length=1,
        description="Host names or ranges, as strings or {hosts, rack}.",
        examples=[["gpu-[001:032].dc1.example.com"]],
    )
    hcas: StrictInt | None = Field(
        default=None, ge=0, le=64, description="Expected RDMA adapters per host (defaults to the fabric's rails)."
    )
    rail_adapters: list[PciAddress] = Field(
        default_factory=list,
        max_length=64,
        description="PCI addresses of the fabric's rail adapters, in rail order (lspci -D). Needed where a node carries more "
        "adapters of the fabric's link layer and rate than rails (a storage network on the same adapters): alicerce never "
        "guesses which are rails. Empty: the adapters of the fabric's link layer and rate.",
        examples=[["0000:1a:00.0", "0000:2a:00.0"]],
    )
    rail_devices: list[RdmaDevice] = Field(
        default_factory=list,
        max_length=64,
        description="RDMA device names of the fabric's rail ports, as /sys/class/infiniband and the node exporter name them "
        "once the rdma role has set the node up: it names each device after its PCI address (rdma-core's NAME_PCI: "
        "ib or roce, then p<bus>s<slot> in decimal, f<function> on a two-port adapter), so `rdma link` and `ibv_devices` "
        "show ibp24s0 for the InfiniBand adapter at 0000:18:00.0, never the kernel's mlx5_0 (AL392). The fabric alerts "
        "count and watch only these: a node with storage or in-band RDMA ports beside its rails otherwise counts those as "
        "rails, and a dead rail hides behind an active storage port. Empty: every RDMA device the node exporter reports.",
        # a DGX H100's eight compute-fabric ConnectX-7 ports (NVIDIA DGX H100/H200 User Guide, "Network Modules" table:
        # the PCI-named interfaces ibp24s0 ... ibp220s0, whose RDMA devices NAME_PCI gives the same names)
        examples=[["ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"]],
    )
    scratch_devices: list[Device] = Field(
        default_factory=list,
        description="NVMe disks of the local-nvme scratch array, by stable name (/dev/disk/by-id/... or nvme1n1). Empty: only "
        "disks with no partition table, file system or RAID signature are used; a signed disk stops the run.",
        examples=[["/dev/disk/by-id/nvme-SAMSUNG_MZ1L23T8HBLA-00A07_S6EWNA0T100001"]],
    )


class OnpremParallelFs(SpecModel):
    implementation: Literal["lustre", "beegfs", "weka"] = Field(description="Parallel file system.")
    server: NidList = Field(description="MGS NID (Lustre), management host (BeeGFS) or backend (Weka).", examples=["10.0.0.10@o2ib"])
    filesystem: FsName = Field(description="File system name on the server.", examples=["scratch"])
    mount_options: list[MountOption] = Field(
        default_factory=list, description="Extra mount options; nosuid,nodev always come after them (a spec cannot turn them off)."
    )
    lnet_routes: list[LnetRoute] = Field(
        default_factory=list,
        description="Lustre: LNet routes 'NET GATEWAY_NID' to reach servers outside the nodes' IPoIB networks.",
        examples=[["o2ib1 10.40.0.250@o2ib"]],
    )


class OnpremNfs(SpecModel):
    implementation: Literal["nfs"] = Field(default="nfs", description="NFS server export.")
    server: Host = Field(description="NFS server.")
    export: ServerPath = Field(description="Exported path.")
    version: Literal["3", "4.1", "4.2"] = Field(default="4.1", description="NFS protocol version.")


class OnpremObject(SpecModel):
    implementation: Literal["minio", "ceph-rgw"] = Field(description="S3-compatible object store.")
    endpoint: Url = Field(description="S3 endpoint URL.")
    bucket: Word = Field(description="Bucket name.")


class OnpremBlock(SpecModel):
    implementation: Literal["ceph-rbd", "local-path"] = Field(description="Block storage provider.")


class OnpremFabric(SpecModel):
    ROUTED: ClassVar[tuple[tuple[str, str], ...]] = (("IPoIB", "ipoib_cidr"),)  # (label, field) of its routed address ranges
    technology: Literal["infiniband", "roce"] = Field(description="RDMA transport on-prem.")
    rate_gbps: StrictInt = Field(
        default=400, ge=1, le=1600, description="Link rate per rail in Gbit/s (1 to 1,600: XDR InfiniBand is 800).", examples=[400]
    )
    subnet_manager: Literal["external", "opensm"] = Field(
        default="external", description="InfiniBand subnet manager: run by the fabric (UFM, switch) or opensm on the nodes."
    )
    mtu: StrictInt = Field(default=4096, ge=256, le=4096, description="RDMA MTU (RoCE: 4096 with jumbo frames on the switches).")
    ipoib_cidr: Cidr | None = Field(default=None, description="IPoIB (InfiniBand) or rail (RoCE) address range, split across rails.")
    stack: Literal["rdma-core", "doca-ofed"] = Field(
        default="rdma-core",
        description="RDMA software: the distribution's inbox rdma-core (GPUDirect through DMA-BUF) or NVIDIA DOCA-OFED "
        "(needed for the legacy nvidia-peermem path; the driver is rebuilt against it).",
    )
    roce_traffic_class: StrictInt = Field(
        default=106, ge=0, le=255, description="RoCE: traffic class of RDMA traffic (DSCP 26 << 2 | ECN bits)."
    )
    roce_pfc_priority: StrictInt = Field(default=3, ge=0, le=7, description="RoCE: lossless (PFC) priority.")
