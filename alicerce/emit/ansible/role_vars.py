"""The public variables of every alicerce Ansible role, as pydantic models: the one source of truth.

Each role under ``ansible/roles/<role>`` has ``defaults/main.yml`` and ``meta/argument_specs.yml``
that document the same variables with the same types and defaults; both are written from these
models (``python -m alicerce.emit.ansible.role_vars --write``) and a test fails when they drift. The
generator fills the same models from the resolved spec and writes them into ``group_vars`` (and,
for per-host facts such as IPoIB addresses, into the inventory), so the role interface, its
defaults and what the generator writes cannot disagree.

Fields marked ``secret`` (the BeeGFS authentication secret) are never written by the generator:
they come from an ansible-vault file the operator keeps next to the inventory.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from alicerce.catalog.onprem import load_onprem
from alicerce.emit.gitops.yamltext import IndentedDumper
from alicerce.emit.storage_counters import TEXTFILE_DIRECTORY

# the pinned node software repositories (catalog/data/onprem.yaml): the roles' defaults come from there, never a second copy
_SOFTWARE = load_onprem().nodeSoftware

Target = Literal["auto", "host", "image"]
_TARGET_HELP = "host: a running server; image: an OS image or chroot (packages, files); auto: image inside a chroot."


def _target(role: str) -> Any:
    return Field(default="auto", description=_TARGET_HELP, json_schema_extra={"role": role})


def secret(description: str) -> Any:
    """A variable that only ever comes from ansible-vault; the generator never writes it."""
    return Field(default="", description=description, json_schema_extra={"secret": True})


def per_host(default: Any, description: str) -> Any:
    """A variable the generator writes per host in the inventory, not per group."""
    return Field(default=default, description=description, json_schema_extra={"per_host": True})


class RoleVars(BaseModel):
    """Base of the role variable models: every field is one public variable of ``ROLE``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ROLE: ClassVar[str]
    SHORT: ClassVar[str]
    DESCRIPTION: ClassVar[str]


class PreflightVars(RoleVars):
    ROLE = "preflight"
    SHORT = "Check that a host is fit to become a GPU node before anything changes."
    DESCRIPTION = "Supported OS and kernel, architecture, Secure Boot state and the GPU and RDMA PCI devices the spec promises."

    preflight_target: Target = _target("preflight")
    preflight_supported_distributions: list[str] = Field(
        default=["Debian 12", "Ubuntu 22.04", "Ubuntu 24.04"], description="Distribution and major version pairs the roles support."
    )
    preflight_architectures: list[str] = Field(
        default=["x86_64"], description="CPU architectures the roles support (only x86_64 is exercised by a test)."
    )
    preflight_min_kernel: str = Field(default="5.15", description="Oldest kernel release accepted on a running host.")
    preflight_secure_boot: Literal["any", "enabled", "disabled"] = Field(
        default="any", description="Required Secure Boot state (unsigned proprietary modules need it disabled)."
    )
    preflight_gpu_count: int = Field(default=0, description="NVIDIA GPUs (PCI class 03xx, vendor 10de) every host must have.")
    preflight_hca_count: int = Field(
        default=0, description="RDMA rails the spec declares: at least this many Mellanox/NVIDIA RDMA functions (more are allowed)."
    )
    preflight_unsigned_modules: list[str] = Field(
        default=[],
        description="Unsigned out-of-tree modules the pool builds (Lustre, DOCA-OFED, BeeGFS): Secure Boot stops the run.",
    )
    preflight_sysfs_root: str = Field(default="/sys", description="Where sysfs is read from (tests point it at a fixture).")


class NvidiaDriverVars(RoleVars):
    ROLE = "nvidia_driver"
    SHORT = "Install the pinned NVIDIA data center driver where the host owns it, and reboot into it."
    DESCRIPTION = (
        "Driver branch and exact version from the spec, open or proprietary modules, headers of the running kernel, nouveau "
        "blacklisted, persistence mode on, packages held; a changed driver drains and reboots the node."
    )

    nvidia_driver_target: Target = _target("nvidia_driver")
    nvidia_driver_enabled: bool = Field(default=False, description="Whether this host owns the driver (the site's gpuDriver is host).")
    nvidia_driver_branch: str = Field(default="580", description="Driver branch (major version).")
    nvidia_driver_version: str = Field(default="580.173.02", description="Exact driver version; packages are pinned and held at it.")
    nvidia_driver_kernel_module_type: Literal["open", "proprietary"] = Field(default="open", description="NVIDIA kernel modules flavour.")
    nvidia_driver_source: Literal["nvidia", "distribution"] = Field(
        default="nvidia", description="Install from NVIDIA's CUDA repository or the distribution's own archive."
    )
    nvidia_driver_repository_url: str = Field(
        default=_SOFTWARE.cuda.repository,
        description="Base URL of the CUDA repository (point it at a mirror on air-gapped sites).",
    )
    nvidia_driver_repository_key_url: str = Field(
        default="", description="Signing key of the repository; empty: the CUDA repository's own key (3bf863cc.pub)."
    )
    nvidia_driver_repository_key_fingerprint: str = Field(
        default=_SOFTWARE.cuda.keyFingerprint, description="Fingerprint the signing key must have, or it is refused."
    )
    nvidia_driver_packages: list[str] = Field(default=[], description="Packages to install; empty picks the per-OS default.")
    nvidia_driver_persistenced: bool = Field(default=True, description="Run nvidia-persistenced with persistence mode on.")
    nvidia_driver_hold: bool = Field(default=True, description="Hold the driver packages so upgrades never move them.")
    nvidia_driver_reboot: bool = Field(
        default=True, description="Drain and reboot a running node when its driver packages change (never in an image)."
    )
    nvidia_driver_rebuild_for_ofed: bool = Field(
        default=False, description="Rebuild the driver's DKMS modules after DOCA-OFED so nvidia-peermem finds its peer-memory symbols."
    )
    nvidia_driver_peermem: bool = Field(
        default=False,
        description="Load nvidia-peermem once the driver is loaded (legacy GPUDirect RDMA with DOCA-OFED; DMA-BUF needs no module).",
    )
    nvidia_driver_sysfs_root: str = Field(default="/sys", description="Where sysfs is read from (tests point it at a fixture).")


class NvidiaFabricmanagerVars(RoleVars):
    ROLE = "nvidia_fabricmanager"
    SHORT = "Run NVIDIA Fabric Manager on NVSwitch systems."
    DESCRIPTION = "Fabric Manager and NSCQ at exactly the driver version, only where the GPU model's servers use NVSwitch."

    nvidia_fabricmanager_target: Target = _target("nvidia_fabricmanager")
    nvidia_fabricmanager_enabled: bool = Field(default=False, description="Whether the host has NVSwitches and owns its driver.")
    nvidia_fabricmanager_branch: str = Field(default="580", description="Driver branch Fabric Manager must match.")
    nvidia_fabricmanager_version: str = Field(default="580.173.02", description="Exact driver version Fabric Manager must match.")
    nvidia_fabricmanager_degraded_mode: bool = Field(
        default=False,
        description="Run with less NVLink bandwidth when a trunk link or NVSwitch fails (TRUNK_LINK_FAILURE_MODE, "
        "NVSWITCH_FAILURE_MODE 1), not leave the GPUs uninitialised (0).",
    )
    nvidia_fabricmanager_nvlsm: bool = Field(
        default=False,
        description="Fourth-generation NVSwitches (HGX B200/B300): install the NVLink Subnet Manager (nvlsm) and load "
        "ib_umad, without which Fabric Manager cannot start.",
    )


class NvidiaContainerToolkitVars(RoleVars):
    ROLE = "nvidia_container_toolkit"
    SHORT = "NVIDIA Container Toolkit and CDI specs that follow the driver; containerd's config is kubespray's."
    DESCRIPTION = "The four toolkit packages at one version, nvidia-cdi-refresh on driver changes, no edit of containerd's config."

    nvidia_container_toolkit_target: Target = _target("nvidia_container_toolkit")
    nvidia_container_toolkit_enabled: bool = Field(default=False, description="Whether this host owns the toolkit (GPU nodes).")
    nvidia_container_toolkit_driver_root: str = Field(
        default="/",
        description="Where the driver lives: / (the host's), or /run/nvidia/driver where the GPU Operator's driver container mounts it.",
    )
    nvidia_container_toolkit_version: str = Field(
        default=_SOFTWARE.containerToolkit.version, description="NVIDIA Container Toolkit version (>= 1.18)."
    )
    nvidia_container_toolkit_repository_url: str = Field(
        default="https://nvidia.github.io/libnvidia-container", description="Toolkit apt repository (mirror it on air-gapped sites)."
    )
    nvidia_container_toolkit_repository_key_url: str = Field(
        default="", description="Signing key of the repository; empty: the repository's own gpgkey."
    )
    nvidia_container_toolkit_repository_key_fingerprint: str = Field(
        default=_SOFTWARE.containerToolkit.keyFingerprint, description="Fingerprint the signing key must have, or it is refused."
    )


class RdmaVars(RoleVars):
    ROLE = "rdma"
    SHORT = "RDMA fabric: InfiniBand or RoCE, addressed rails, GPUDirect RDMA through DMA-BUF (or nvidia-peermem with DOCA-OFED)."
    DESCRIPTION = (
        "rdma-core or a pinned, signed DOCA-OFED, stable rail names applied before anything mounts, IPoIB or RoCE addresses "
        "from the fabric plan, subnet manager, lossless RoCE on the rails only."
    )

    rdma_target: Target = _target("rdma")
    rdma_enabled: bool = Field(default=False, description="Whether the host joins an RDMA fabric.")
    rdma_stack: Literal["rdma-core", "doca-ofed"] = Field(default="rdma-core", description="Inbox rdma-core or NVIDIA DOCA-OFED.")
    rdma_doca_version: str = Field(default="3.2.1", description="DOCA-Host release whose repository is used (never latest).")
    rdma_doca_repository_url: str = Field(
        default=_SOFTWARE.doca.repository, description="DOCA repository base (with rdma_stack doca-ofed)."
    )
    rdma_doca_repository_key_url: str = Field(default=_SOFTWARE.doca.key, description="DOCA repository signing key.")
    rdma_technology: Literal["infiniband", "roce"] = Field(default="infiniband", description="RDMA transport.")
    rdma_rails: int = Field(default=0, description="RDMA rails per host, from the spec; extra adapters (north-south) are left alone.")
    rdma_rate_gbps: int = Field(default=400, description="Expected link rate per rail in Gbit/s.")
    rdma_rail_adapters: list[str] = Field(
        default=[], description="PCI addresses of the rail adapters in rail order (spec railAdapters); empty: by link layer and rate."
    )
    rdma_rail_devices: list[str] = Field(
        default=[],
        description="RDMA device names of the rails (spec railDevices), each checked present once named; empty: none checked.",
    )
    rdma_mtu: int = Field(default=4096, description="RDMA MTU; RoCE rails get 9000-byte frames.")
    rdma_subnet_manager: bool = Field(default=False, description="Run opensm on this host (only where the spec says so).")
    rdma_gpudirect: Literal["none", "dmabuf", "peermem"] = Field(
        default="none", description="GPUDirect RDMA path: DMA-BUF (open modules, no module to load) or legacy nvidia-peermem (DOCA-OFED)."
    )
    rdma_roce_pfc_priority: int = Field(default=3, description="RoCE: the lossless (PFC) priority.")
    rdma_roce_traffic_class: int = Field(default=106, description="RoCE: traffic class of RDMA traffic (DSCP 26, ECN capable).")
    rdma_online_rails: list[str] = Field(
        default=[],
        description="Rails network-online.target waits for (those LNet runs over): _netdev mounts never race them.",
    )
    rdma_addresses: list[str] = per_host([], "Rail address with prefix per rail, in rail order (IPoIB or RoCE, from the fabric plan).")
    rdma_sysfs_root: str = Field(default="/sys", description="Where sysfs is read from (tests point it at a fixture).")


class NvmeScratchVars(RoleVars):
    ROLE = "nvme_scratch"
    SHORT = "Local NVMe disks as one RAID0 scratch volume; an existing array is never re-created and a signed disk is never used."
    DESCRIPTION = "mdadm RAID0 over the spec's NVMe disks (or blank ones), file system, fstab entry and mount with scratch options."

    nvme_scratch_target: Target = _target("nvme_scratch")
    nvme_scratch_enabled: bool = Field(default=False, description="Whether the host's pool has a local-nvme tier.")
    nvme_scratch_mount_path: str = Field(default="/scratch", description="Mount path of the scratch volume.")
    nvme_scratch_filesystem: Literal["xfs", "ext4"] = Field(default="xfs", description="File system on the array.")
    nvme_scratch_array_name: str = Field(default="scratch", description="md array name (/dev/md/<name>).")
    nvme_scratch_devices: list[str] = Field(
        default=[], description="Member disks from the spec; empty: only blank NVMe disks (no partition table or signature)."
    )
    nvme_scratch_min_devices: int = Field(default=1, description="Fewest disks worth building an array from.")
    nvme_scratch_mount_options: list[str] = Field(
        default=["defaults", "noatime", "nofail", "x-systemd.device-timeout=30s"], description="Mount options."
    )
    nvme_scratch_sysfs_root: str = Field(default="/sys", description="Where sysfs is read from (tests point it at a fixture).")
    nvme_scratch_proc_root: str = Field(default="/proc", description="Where procfs (mdstat, mounts) is read from (tests use a fixture).")


class ParallelFsClientVars(RoleVars):
    ROLE = "parallel_fs_client"
    SHORT = "Mount the spec's Lustre, BeeGFS and NFS tiers from pinned, signed repositories."
    DESCRIPTION = "Client packages, LNet over the rails (with routes), BeeGFS config with authentication, mounts after the rails are up."

    parallel_fs_client_target: Target = _target("parallel_fs_client")
    parallel_fs_client_mounts: list[dict[str, Any]] = Field(
        default=[], description="Mounts: {name, type (lustre|beegfs|nfs), source, path, options}."
    )
    parallel_fs_client_lnet_networks: str = Field(
        default="", description="LNet networks, e.g. o2ib0(ibrail0,ibrail1); empty: LNet default."
    )
    parallel_fs_client_lnet_routes: list[str] = Field(default=[], description="LNet routes, 'NET GATEWAY_NID' each.")
    parallel_fs_client_lustre_repository_url: str = Field(
        default=f"{_SOFTWARE.lustre.repository}/lustre-{_SOFTWARE.lustre.version}",
        description="Lustre client repository of one release (a signed mirror: Whamcloud's own is not signed).",
    )
    parallel_fs_client_lustre_repository_key_url: str = Field(
        default="", description="Signing key of the Lustre mirror; required when a Lustre tier is mounted."
    )
    parallel_fs_client_lustre_repository_key_fingerprint: str = Field(
        default="", description="Fingerprint the Lustre mirror's key must have, or it is refused; required with the key."
    )
    parallel_fs_client_beegfs_repository_url: str = Field(
        default=_SOFTWARE.beegfs.repository, description="BeeGFS repository of one release (mirror it when air-gapped)."
    )
    parallel_fs_client_beegfs_repository_key_url: str = Field(default=_SOFTWARE.beegfs.key, description="BeeGFS repository signing key.")
    parallel_fs_client_beegfs_rdma: bool = Field(default=True, description="BeeGFS over RDMA (connUseRDMA).")
    parallel_fs_client_beegfs_auth_secret: str = secret(
        "BeeGFS connection authentication secret (connAuthFile); only ever from ansible-vault, never rendered."
    )
    parallel_fs_client_proc_root: str = Field(default="/proc", description="Where procfs (mounts) is read from (tests use a fixture).")


class KubernetesNodeVars(RoleVars):
    ROLE = "kubernetes_node"
    SHORT = "What kubespray does not do: kubelet resource-manager state on policy changes, drains, reboots, label and taint removal."
    DESCRIPTION = (
        "Before kubespray: retire the apt-installed kubelet and distribution containerd, reset the CPU and memory manager state "
        "of a drained node whose policy changes. After it: uncordon, remove labels and taints the spec dropped, node Ready."
    )

    kubernetes_node_target: Target = _target("kubernetes_node")
    kubernetes_node_cpu_manager_policy: Literal["none", "static"] = Field(
        default="none", description="kubelet CPU manager policy kubespray writes (a change resets the state file, drained)."
    )
    kubernetes_node_memory_manager_policy: Literal["None", "Static"] = Field(
        default="None", description="kubelet memory manager policy kubespray writes (a change resets the state file, drained)."
    )
    kubernetes_node_labels: dict[str, str] = Field(default={}, description="Node labels of the pool (kubespray adds them).")
    kubernetes_node_taints: list[str] = Field(default=[], description="Taints of the pool as key=value:Effect (kubespray adds them).")
    kubernetes_node_kubectl: str = Field(
        default="kubectl --kubeconfig /etc/kubernetes/admin.conf", description="kubectl on the first control-plane host."
    )
    kubernetes_node_drain_timeout: str = Field(default="900s", description="How long a drain may take before the run fails.")
    kubernetes_node_state_dir: str = Field(default="/var/lib/kubelet", description="kubelet's state directory.")
    kubernetes_node_kubelet_config: dict[str, Any] = Field(
        default={
            "cpuManagerPolicy": None,
            "cpuManagerPolicyOptions": None,
            "topologyManagerPolicy": None,
            "topologyManagerScope": None,
            "systemReserved": {"cpu": "500m", "memory": "512Mi"},
        },
        description="kubelet config keys kubespray renders from the pool's resource managers (null: absent), set on a policy change.",
    )
    kubernetes_node_kubelet_config_path: str = Field(
        default="/etc/kubernetes/kubelet-config.yaml", description="kubelet's config file (kubespray writes it)."
    )
    kubernetes_node_ready_timeout: int = Field(
        default=300, description="Seconds a restarted kubelet may take to report its node Ready before the run fails."
    )


class NodeMonitoringVars(RoleVars):
    ROLE = "node_monitoring"
    SHORT = "Prometheus node exporter where the host owns it; DCGM exporter off Kubernetes."
    DESCRIPTION = (
        "Node exporter from the distribution, collectors checked against the installed binary, DCGM exporter where no GPU Operator runs."
    )

    node_monitoring_target: Target = _target("node_monitoring")
    node_monitoring_node_exporter: bool = Field(default=False, description="Whether this host runs the node exporter (nodeExporter host).")
    node_monitoring_listen_address: str = Field(default=":9100", description="Node exporter listen address.")
    node_monitoring_collectors: list[str] = Field(
        default=["infiniband", "mdadm", "nvme", "systemd", "textfile"], description="Collectors enabled on top of the defaults."
    )
    node_monitoring_textfile_directory: str = Field(default=TEXTFILE_DIRECTORY, description="Directory of the textfile collector.")
    node_monitoring_storage_tiers: list[dict[str, str]] = Field(
        default=[],
        description="Mounted Lustre and NFS tiers whose client I/O counters a timer writes for the textfile collector: {tier, path, type}.",
    )
    node_monitoring_fabric_wait: bool = Field(
        default=False,
        # README.md says why: UFM, OpenSM's PerfMgr or an ibdiagnet sweep reading the same port see it near 0, and
        # their clears make its total under-count (one owner per fabric counter; review obsreview26 N-B). The description
        # is one line of the role's defaults, which ansible-lint holds to 160 characters
        description="Run the collector owning the ports' PortXmitWait; on the 32-bit path it clears it every second (its only reader).",
    )
    node_monitoring_dcgm_exporter: bool = Field(default=False, description="Run DCGM exporter as a service (nodes outside Kubernetes).")
    node_monitoring_dcgm_exporter_listen_address: str = Field(default=":9400", description="DCGM exporter listen address.")


class NodeValidationVars(RoleVars):
    ROLE = "node_validation"
    SHORT = "Acceptance and burn-in: the node proves what the spec promises, or the run fails with a per-host report."
    DESCRIPTION = (
        "GPU count, driver, persistence, ECC and row remapping, XIDs, PCIe links, NVLink and Fabric Manager, dcgmi diag, NCCL "
        "all-reduce and ib_write_bw against floors from the fabric, rails and addresses, scratch, mounts, node Ready and allocatable."
    )

    node_validation_target: Target = _target("node_validation")
    node_validation_gpu_count: int = Field(default=0, description="GPUs nvidia-smi must list.")
    node_validation_driver_version: str = Field(default="", description="Driver version every GPU must report.")
    node_validation_nvswitch: bool = Field(default=False, description="Check Fabric Manager state and that no NVLink is down.")
    node_validation_pcie_generation: int = Field(default=0, description="PCIe generation every GPU link must train at (0: not checked).")
    node_validation_pcie_width: int = Field(default=16, description="PCIe link width every GPU must train at.")
    node_validation_dcgm_diag_level: int = Field(default=0, description="dcgmi diag run level (0: not run).")
    node_validation_nccl_busbw_gbps: float = Field(
        default=0.0, description="Floor of NCCL all-reduce bus bandwidth inside a node in GB/s (0: not run)."
    )
    node_validation_nccl_internode_busbw_gbps: float = Field(
        default=0.0, description="Floor of NCCL all-reduce bus bandwidth across nodes in GB/s (0: not run)."
    )
    node_validation_p2p_bw_gbps: float = Field(default=0.0, description="Floor of GPU-to-GPU copy bandwidth in GB/s (0: not run).")
    node_validation_hca_count: int = Field(default=0, description="Rails expected (the spec's), each an active port.")
    node_validation_hca_rate_gbps: int = Field(default=0, description="Rate every rail must run at.")
    node_validation_rail_adapters: list[str] = Field(
        default=[], description="PCI addresses of the rail adapters (spec railAdapters); empty: by link layer and rate."
    )
    node_validation_hca_link_layer: Literal["InfiniBand", "Ethernet"] = Field(default="InfiniBand", description="Link layer of the rails.")
    node_validation_ib_write_bw_gbps: float = Field(default=0.0, description="Floor of ib_write_bw per rail in Gbit/s (0: not run).")
    # the loopback test starts its server in the background and gives it this long to listen before the client connects;
    # the tests' fake ib_write_bw has no server to wait for and pass 0 (2 s x 8 rails of each burn-in run otherwise)
    node_validation_ib_server_wait_s: int = Field(
        default=2, description="Seconds each rail's ib_write_bw server gets to start listening before its client connects."
    )
    node_validation_rail_addresses: list[str] = per_host([], "Addresses the rails must carry (from the fabric plan).")
    node_validation_scratch_path: str = Field(default="", description="Scratch mount that must be an md RAID0; empty: none.")
    node_validation_scratch_min_bytes: int = Field(default=1, description="Smallest acceptable scratch file system size.")
    node_validation_mounts: list[str] = Field(default=[], description="Paths that must be mount points.")
    node_validation_allocatable: dict[str, str] = Field(
        default={}, description="Extended resources the Kubernetes node must offer, e.g. nvidia.com/gpu: '8' (empty: no node check)."
    )
    node_validation_report_dir: str = Field(
        default="/var/lib/alicerce/acceptance", description="Where each node keeps its acceptance report (JSON)."
    )
    node_validation_tools: dict[str, str] = Field(
        default={
            "nvidia_smi": "nvidia-smi",
            "dcgmi": "dcgmi",
            "all_reduce_perf": "/usr/local/bin/all_reduce_perf",
            "ib_write_bw": "ib_write_bw",
            "p2p_bandwidth": "/usr/local/bin/nvbandwidth",
            "journalctl": "journalctl",
            "dmesg": "dmesg",
            "ip": "ip",
            "kubectl": "kubectl --kubeconfig /etc/kubernetes/admin.conf",
            "mpirun": "mpirun --allow-run-as-root",
        },
        description="Commands the burn-in runs (tests point them at fakes that replay recorded outputs).",
    )
    node_validation_sysfs_root: str = Field(default="/sys", description="Where sysfs is read from (tests point it at a fixture).")
    node_validation_proc_root: str = Field(default="/proc", description="Where procfs is read from (tests point it at a fixture).")


ROLE_VARS: tuple[type[RoleVars], ...] = (
    PreflightVars,
    RdmaVars,
    NvidiaDriverVars,
    NvidiaFabricmanagerVars,
    NvidiaContainerToolkitVars,
    NvmeScratchVars,
    ParallelFsClientVars,
    KubernetesNodeVars,
    NodeMonitoringVars,
    NodeValidationVars,
)
"""Every role, in the order the node is built: DOCA before the driver (its DKMS build must see OFED), the file
systems after the rails, the kubelet's state before kubespray, acceptance last (after kubespray, see post-cluster.yml)."""


def field_flag(info: FieldInfo, flag: str) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get(flag))


# ---------------------------------------------------------------------------------------------
# argument_specs and defaults written from the models


def _arg_type(annotation: Any) -> dict[str, Any]:
    origin = get_origin(annotation)
    if origin is Literal:
        return {"type": "str", "choices": list(get_args(annotation))}
    if origin in (list, typing.List):  # noqa: UP006
        (inner,) = get_args(annotation)
        element = _arg_type(inner)["type"]
        return {"type": "list", "elements": element}
    if origin in (dict, typing.Dict):  # noqa: UP006
        return {"type": "dict"}
    if origin in (typing.Union, types.UnionType):
        raise TypeError(f"role variables are never optional: {annotation}")
    if annotation is typing.Any:
        return {"type": "raw"}
    return {"type": {str: "str", int: "int", bool: "bool", float: "float"}[annotation]}


def argument_spec(model: type[RoleVars]) -> dict[str, Any]:
    """The ``meta/argument_specs.yml`` content of a role."""
    options: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        option: dict[str, Any] = {"description": [info.description or name], **_arg_type(info.annotation)}
        if field_flag(info, "secret"):
            option["no_log"] = True
        option["default"] = info.get_default(call_default_factory=True)
        options[name] = option
    return {
        "argument_specs": {
            "main": {
                "short_description": model.SHORT,
                "description": [model.DESCRIPTION],
                "author": ["alicerce"],
                "options": options,
            }
        }
    }


def defaults(model: type[RoleVars]) -> dict[str, Any]:
    return {name: info.get_default(call_default_factory=True) for name, info in model.model_fields.items()}


class _Dumper(IndentedDumper):
    pass


TEMPLATE_MARKERS = ("{{", "{%", "{#")
"""What makes Ansible template a string (jinja2's default delimiters)."""


class _VarsDumper(_Dumper):
    """Variables and inventories: a string that Ansible would template is written ``!unsafe``.

    Ansible loads an ``!unsafe`` scalar as text it never templates. The spec's values reach these
    files; rule AL275 refuses template syntax in them, and this keeps any that get past it inert.
    """


class AnsibleTemplate(str):
    """A string alicerce itself writes for Ansible to template (never text from the spec): dumped as is."""


def _represent_text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if any(marker in data for marker in TEMPLATE_MARKERS):
        return dumper.represent_scalar("!unsafe", data, style="'")
    return dumper.represent_str(data)


def _represent_template(dumper: yaml.SafeDumper, data: AnsibleTemplate) -> yaml.ScalarNode:
    return dumper.represent_str(str(data))


_VarsDumper.add_representer(str, _represent_text)
_VarsDumper.add_representer(AnsibleTemplate, _represent_template)
_Dumper.add_representer(AnsibleTemplate, _represent_template)


def dump_yaml(data: Any, *, inert: bool = False) -> str:
    """Deterministic YAML: block style, keys in the given order, lists indented (yamllint-clean).

    ``inert``: for variables and inventories Ansible reads, never templating a string in them.
    """
    dumper = _VarsDumper if inert else _Dumper
    return yaml.dump(data, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)


def defaults_text(model: type[RoleVars]) -> str:
    lines = ["---", f"# {model.ROLE}: {model.SHORT}", "# Written from alicerce/emit/ansible/role_vars.py; see meta/argument_specs.yml."]
    for name, info in model.model_fields.items():
        lines.append(f"# {info.description}")
        lines.append(dump_yaml({name: info.get_default(call_default_factory=True)}).rstrip("\n"))
    return "\n".join(lines) + "\n"


def argument_specs_text(model: type[RoleVars]) -> str:
    return "---\n" + dump_yaml(argument_spec(model))


def role_files(roles_dir: Path) -> dict[Path, str]:
    return {
        **{roles_dir / m.ROLE / "defaults" / "main.yml": defaults_text(m) for m in ROLE_VARS},
        **{roles_dir / m.ROLE / "meta" / "argument_specs.yml": argument_specs_text(m) for m in ROLE_VARS},
    }


def main(argv: list[str]) -> int:
    roles_dir = Path(__file__).resolve().parents[2] / "ansible" / "roles"
    stale = [path for path, text in role_files(roles_dir).items() if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if "--write" in argv:
        for path in stale:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(role_files(roles_dir)[path], encoding="utf-8")
            print(f"wrote {path}")
        return 0
    for path in stale:
        print(f"stale: {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
