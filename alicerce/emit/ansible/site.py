"""Emit the ``ansible/`` subtree: inventory, group_vars, playbooks and config for each on-prem site.

Planning is pure: :func:`inventory_site` turns the resolved platform into an :class:`AnsibleSite`
(inventory groups, the role variable models of every pool, per-host variables), and the emitter
only serialises it. Role variables are the pydantic models of :mod:`alicerce.emit.ansible.role_vars`,
the same models the roles' defaults and argument specs are written from.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alicerce.catalog.onprem import load_onprem
from alicerce.emit.ansible.kubespray import (
    PLAYBOOKS,
    cluster_vars,
    kubelet_manager_config,
    kubelet_managers,
    pool_vars,
    requirements_lock,
    requirements_txt,
)
from alicerce.emit.ansible.kubespray import inventory as kubespray_inventory
from alicerce.emit.ansible.role_vars import (
    ROLE_VARS,
    KubernetesNodeVars,
    NodeMonitoringVars,
    NodeValidationVars,
    NvidiaContainerToolkitVars,
    NvidiaDriverVars,
    NvidiaFabricmanagerVars,
    NvmeScratchVars,
    ParallelFsClientVars,
    PreflightVars,
    RdmaVars,
    RoleVars,
    dump_yaml,
    field_flag,
)
from alicerce.emit.errors import EmitError
from alicerce.emit.kube.network import promised_rdma
from alicerce.emit.storage_counters import counted_tiers, fabric_wait_pools
from alicerce.emit.templates import ANSIBLE_SOURCE, render
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite
from alicerce.spec.models import Fabric, LocalNvmeTier, ParallelFsTier
from alicerce.spec.text import LNET_ROUTE, config_word, escaped, mount_point_problem
from alicerce.targets.onprem.resolve import control_plane_hosts
from alicerce.targets.onprem.spec import Acceptance, OnpremSite

# Collections the roles use, pinned to the versions they are tested with (ansible 12.3).
COLLECTIONS = (("ansible.posix", "2.1.0"), ("community.general", "11.4.2"))
ANSIBLE_CORE = "2.19.14"
ANSIBLE_RUNNER = "2.4.3"
EE_BASE_IMAGE = "quay.io/centos/centos:stream9-minimal"
ROLLING_BATCH = "25%"
# where the GPU Operator's driver container mounts the driver on the host (cloud-native-docs gpu-operator/getting-started.rst,
# "Pre-Installed NVIDIA Container Toolkit (but no drivers)")
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
# Roles of the cluster stage (post-cluster.yml, after kubespray); every other role runs in site.yml, before it.
POST_CLUSTER_ROLES = ("node_validation",)
# Bandwidth of a PCIe x16 link per generation in GB/s, one direction.
PCIE_X16_GBPS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


def group_name(*parts: str) -> str:
    """An inventory group name: letters, digits and underscores only."""
    return re.sub(r"[^A-Za-z0-9_]", "_", "_".join(parts))


@dataclass(frozen=True)
class InventoryPool:
    name: str
    group: str
    purpose: str
    gpu: bool
    racks: dict[str, tuple[str, ...]]  # rack group -> hosts ("" rack: hosts without one)
    roles: tuple[RoleVars, ...]

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(h for hosts in self.racks.values() for h in hosts)


@dataclass(frozen=True)
class AnsibleSite:
    name: str
    group: str
    pools: tuple[InventoryPool, ...]
    host_vars: dict[str, dict[str, Any]] = field(default_factory=dict)


# the rails' interface names per transport, as the rdma role names them (roles/rdma/vars/main.yml _rdma_link_prefix)
RAIL_PREFIX = {"infiniband": "ibrail", "roce": "rorail"}


def rail_subnets(cidr: ipaddress.IPv4Network | ipaddress.IPv6Network, rails: int) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The fabric's IPoIB range split into one subnet per rail, in rail order."""
    extra_bits = max(rails - 1, 0).bit_length()
    if cidr.prefixlen + extra_bits > cidr.max_prefixlen:
        raise EmitError(f"IPoIB range {cidr} cannot be split into {rails} rails")
    return [ipaddress.ip_network(str(net)) for net in cidr.subnets(prefixlen_diff=extra_bits)][:rails]


def host_numbers(hosts: list[str]) -> dict[str, int]:
    """A number per host that never changes when other hosts come or go: the last digits of its short name
    (gpu-017 -> 17), where those are unique across the fabric; else its position (1-based), which shifts."""
    numbers: dict[str, int] = {}
    for host in hosts:
        digits = re.findall(r"\d+", host.split(".", 1)[0])
        if not digits:
            break
        numbers[host] = int(digits[-1])
    if len(numbers) == len(hosts) and len(set(numbers.values())) == len(hosts) and 0 not in numbers.values():
        return numbers
    return {host: index + 1 for index, host in enumerate(hosts)}


def ipoib_addresses(cidr: ipaddress.IPv4Network | ipaddress.IPv6Network, rails: int, hosts: list[str]) -> dict[str, list[str]]:
    """Split the fabric's IPoIB range into one subnet per rail; each host gets the address of its stable number on
    each rail, so replacing or removing one node never renumbers the others under their mounted file systems."""
    subnets = rail_subnets(cidr, rails)
    usable = subnets[0].num_addresses - 2
    numbers = host_numbers(hosts)
    if max(numbers.values(), default=0) > usable:
        raise EmitError(f"IPoIB range {cidr} gives {usable} addresses per rail; host number {max(numbers.values())} does not fit")
    return {host: [f"{subnet.network_address + numbers[host]}/{subnet.prefixlen}" for subnet in subnets] for host in hosts}


# mount options only /etc/fstab takes (the rest come from resolve, shared with the PersistentVolumes)
FSTAB_OPTIONS = {"lustre": ("defaults", "_netdev"), "nfs": ("defaults", "_netdev"), "beegfs": ()}


def _mounts(site: ResolvedSite) -> list[dict[str, Any]]:
    """The shared file systems the nodes of a site mount themselves (weka and cloud file systems are not)."""
    mounts: list[dict[str, Any]] = []
    for tier in site.storage:
        mount = tier.mounts.get(site.name)
        if mount is None or mount.kind not in FSTAB_OPTIONS:
            continue
        options = [*FSTAB_OPTIONS[mount.kind], *mount.options]
        # each value becomes one field of an fstab or BeeGFS line written as root: refuse, never write, one that would not stay one
        for value, what in [(mount.source, "mount source"), (mount.path, "mount path"), *((o, "mount option") for o in options)]:
            _config_word(value, what)
        if "," in "".join(mount.options) or mount_point_problem(mount.path):
            raise EmitError(f'tier "{tier.name}": mount {escaped(mount.path)} with options {escaped(",".join(mount.options))} is unsafe')
        mounts.append({"name": tier.name, "type": mount.kind, "source": mount.source, "path": mount.path, "options": options})
    return mounts


def _config_word(value: str, what: str) -> str:
    try:
        return config_word(value, what)
    except ValueError as error:
        raise EmitError(str(error)) from None


def _lnet(mounts: list[dict[str, Any]], fabric: Fabric | None) -> str:
    nids = [str(m["source"]).split(":/")[0] for m in mounts if m["type"] == "lustre"]
    networks = sorted({nid.rsplit("@", 1)[1] for nid in nids if "@" in nid})
    if not networks or fabric is None or fabric.onprem is None:
        return ""
    # o2iblnd runs over RoCE as over InfiniBand: the NI is the rail's netdev, named by the rdma role after the transport
    # (a RoCE fabric with no LNet networks would leave the clients unable to reach servers whose NIDs are @o2ib).
    # The rails are one subnet each (ipoib_addresses): LNet runs only over the rails whose subnet holds a server NID (an
    # NI on a rail that cannot reach the servers only makes LNet time out on it); servers behind an LNet router: rail 0
    reaching: set[int] = set()
    if fabric.onprem.ipoib_cidr is not None:
        subnets = rail_subnets(fabric.onprem.ipoib_cidr, fabric.rails)
        for nid in nids:
            try:
                address = ipaddress.ip_address(nid.rsplit("@", 1)[0])
            except ValueError:
                continue
            reaching |= {i for i, subnet in enumerate(subnets) if address in subnet}
    prefix = RAIL_PREFIX[fabric.onprem.technology]
    rails = ",".join(f"{prefix}{i}" for i in sorted(reaching or {0}))
    return ",".join(f"{net}({rails})" if net.startswith("o2ib") else net for net in networks)


def lnet_rails(networks: str) -> list[str]:
    """The rail names in an LNet networks string: o2ib(ibrail0,ibrail1) -> [ibrail0, ibrail1] (rorailN on RoCE)."""
    return sorted({rail for group in re.findall(r"\(([^)]*)\)", networks) for rail in group.split(",") if rail})


def _lnet_routes(site: ResolvedSite) -> list[str]:
    routes: list[str] = []
    for tier in site.storage:
        spec = tier.spec
        if isinstance(spec, ParallelFsTier) and spec.onprem is not None and spec.onprem.implementation == "lustre":
            routes.extend(spec.onprem.lnet_routes)
    for route in routes:  # a route is written into `options lnet routes="..."` in /etc/modprobe.d, which modprobe runs as root
        if LNET_ROUTE.problem(route) is not None:
            raise EmitError(f'LNet route "{escaped(route)}" would not stay one route of the modprobe.d line; refusing to write it')
    return sorted(set(routes))


def _unsigned_modules(mounts: list[dict[str, Any]], stack: str) -> list[str]:
    """The out-of-tree modules a node of the pool builds without a signature (the NVIDIA driver checks its own)."""
    kinds = {m["type"] for m in mounts}
    unsigned = ["lustre (lustre-client-modules-dkms)"] if "lustre" in kinds else []
    unsigned += ["beegfs (beegfs-client builds it at start)"] if "beegfs" in kinds else []
    unsigned += ["DOCA-OFED (its DKMS kernel modules)"] if stack == "doca-ofed" else []
    return unsigned


def acceptance_floors(pool: ResolvedPool, acceptance: Acceptance) -> dict[str, float]:
    """Burn-in floors from the GPU's links and the fabric's rails: NCCL and GPU-to-GPU in GB/s, ib_write_bw in Gbit/s."""
    gpu = pool.gpu
    floors = {"nccl": 0.0, "nccl_internode": 0.0, "p2p": 0.0, "ib_write_bw": 0.0}
    if gpu is not None and pool.gpus_per_node > 1:
        link = gpu.interconnect.nvlinkBandwidthGBps
        # NVLink figures are bidirectional. Only an NVSwitch joins every GPU over NVLink: bridged PCIe cards (H100 NVL)
        # reach all but their bridge partner over the x16 host link, which bounds an all-GPU all-reduce and the slowest
        # GPU pair, as it does for PCIe-only GPUs
        nvlink_all = bool(link) and gpu.interconnect.nvswitch
        per_direction = link / 2 if nvlink_all and link else PCIE_X16_GBPS.get(gpu.interconnect.pcieGeneration, 0.0)
        floors["nccl"] = round(per_direction * acceptance.nccl_efficiency, 1)
        floors["p2p"] = round(per_direction * acceptance.nccl_efficiency, 1)
    fabric = pool.rdma.fabric if pool.rdma is not None else None
    if fabric is not None and fabric.onprem is not None:
        if gpu is not None and len(pool.hosts) > 1:
            floors["nccl_internode"] = round(fabric.rails * fabric.onprem.rate_gbps / 8 * acceptance.nccl_efficiency, 1)
        floors["ib_write_bw"] = round(fabric.onprem.rate_gbps * acceptance.ib_write_bw_efficiency, 1)
    return floors


def acceptance_promise(platform: ResolvedPlatform, site: ResolvedSite, pool: ResolvedPool) -> dict[str, str]:
    """Every extended resource a node of the pool offers once the operators' device plugins run (accept.yml waits for them).

    The GPU units of the pool (GPU Operator), and its RDMA resource where the Network Operator's NicClusterPolicy
    selects its nodes (an InfiniBand or RoCE fabric on host adapters).
    """
    promise = {r: str(n) for r, n in pool.gpu_units.resources.items()} if pool.gpu_units else {}
    return dict(sorted((promise | promised_rdma(platform, site.name, pool)).items()))


def pool_roles(platform: ResolvedPlatform, site: ResolvedSite, pool: ResolvedPool) -> tuple[RoleVars, ...]:
    """The variables of every role for the nodes of ``pool``, read from the resolved platform."""
    assert isinstance(site.spec, OnpremSite), f"site {site.name}: Ansible provisions on-prem nodes"
    versions = platform.versions
    software = load_onprem().nodeSoftware
    mirror = site.spec.node_software.lustre_mirror
    adapters = [a.lower() for a in pool.spec.onprem.rail_adapters] if pool.spec.onprem else []
    gpu = pool.gpu
    gpus = pool.gpus_per_node if gpu else 0
    host_driver = bool(gpu) and site.software.gpu_driver == "host"
    fabric = pool.rdma.fabric if pool.rdma is not None else None
    onprem_fabric = fabric.onprem if fabric else None
    rails = fabric.rails if fabric is not None and onprem_fabric is not None else 0
    nvswitch = bool(gpu and gpu.interconnect.nvswitch and gpus >= 8)
    scratch = next((t.spec for t in site.storage if isinstance(t.spec, LocalNvmeTier) and pool.name in t.spec.pools), None)
    mounts = _mounts(site)
    counted = set(counted_tiers(site))
    kubelet = kubelet_managers(pool.spec.purpose)
    driver_version = versions.driverVersion
    rate = onprem_fabric.rate_gbps if onprem_fabric else 0
    link_layer = "Ethernet" if onprem_fabric and onprem_fabric.technology == "roce" else "InfiniBand"
    stack = onprem_fabric.stack if onprem_fabric else "rdma-core"
    gpudirect = pool.rdma.gpudirect if pool.rdma is not None else "none"
    acceptance = site.spec.acceptance
    floors = acceptance_floors(pool, acceptance)
    taints = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in pool.spec.taints]
    return (
        PreflightVars(preflight_gpu_count=gpus, preflight_hca_count=rails, preflight_unsigned_modules=_unsigned_modules(mounts, stack)),
        RdmaVars(
            rdma_enabled=onprem_fabric is not None,
            rdma_stack=stack,
            rdma_doca_version=software.doca.version,
            rdma_technology=onprem_fabric.technology if onprem_fabric else "infiniband",
            rdma_rails=rails,
            rdma_rate_gbps=rate or 400,
            rdma_rail_adapters=adapters,
            # the names the fabric alerts watch (fabric_alerts.py): verify stops the run where one is missing
            rdma_rail_devices=list(pool.rdma.rail_devices) if pool.rdma is not None else [],
            rdma_mtu=onprem_fabric.mtu if onprem_fabric else 4096,
            rdma_gpudirect=gpudirect,
            rdma_roce_pfc_priority=onprem_fabric.roce_pfc_priority if onprem_fabric else 3,
            rdma_roce_traffic_class=onprem_fabric.roce_traffic_class if onprem_fabric else 106,
            rdma_online_rails=lnet_rails(_lnet(mounts, fabric)),
        ),
        NvidiaDriverVars(
            nvidia_driver_enabled=host_driver,
            nvidia_driver_branch=versions.driverBranch,
            nvidia_driver_version=driver_version,
            nvidia_driver_kernel_module_type=pool.kernel_modules or "open",
            nvidia_driver_rebuild_for_ofed=gpudirect == "peermem",
            nvidia_driver_peermem=host_driver and gpudirect == "peermem",
        ),
        NvidiaFabricmanagerVars(
            nvidia_fabricmanager_enabled=nvswitch and host_driver,
            nvidia_fabricmanager_branch=versions.driverBranch,
            nvidia_fabricmanager_version=driver_version,
            # from the catalog's GPU data: fourth-generation NVSwitches are managed through NVLSM over ib_umad
            nvidia_fabricmanager_nvlsm=nvswitch and host_driver and (gpu.interconnect.nvswitch_generation or 0) >= 4 if gpu else False,
        ),
        NvidiaContainerToolkitVars(
            # the GPU Operator runs without its toolkit (NodeSoftwareOwners.container_toolkit): the host owns it either way
            nvidia_container_toolkit_enabled=bool(gpu) and site.software.container_toolkit == "host",
            nvidia_container_toolkit_driver_root="/" if host_driver else OPERATOR_DRIVER_ROOT,
            nvidia_container_toolkit_version=software.containerToolkit.version,
        ),
        NvmeScratchVars(
            nvme_scratch_enabled=scratch is not None,
            nvme_scratch_mount_path=_config_word(scratch.mount_path, "mount path") if scratch else "/scratch",
            nvme_scratch_filesystem=scratch.filesystem if scratch else "xfs",
            nvme_scratch_devices=list(pool.spec.onprem.scratch_devices) if pool.spec.onprem else [],
        ),
        ParallelFsClientVars(
            parallel_fs_client_mounts=mounts,
            parallel_fs_client_lnet_networks=_lnet(mounts, fabric),
            parallel_fs_client_lnet_routes=_lnet_routes(site),
            # the site's signed mirror (nodeSoftware.lustreMirror); without one the role refuses to mount Lustre
            parallel_fs_client_lustre_repository_url=mirror.url
            if mirror
            else f"{software.lustre.repository}/lustre-{software.lustre.version}",
            parallel_fs_client_lustre_repository_key_url=mirror.key if mirror else "",
            parallel_fs_client_lustre_repository_key_fingerprint=mirror.key_fingerprint.upper() if mirror else "",
            parallel_fs_client_beegfs_repository_url=software.beegfs.repository,
            parallel_fs_client_beegfs_repository_key_url=software.beegfs.key,
            parallel_fs_client_beegfs_rdma=onprem_fabric is not None,
        ),
        KubernetesNodeVars(
            kubernetes_node_cpu_manager_policy=kubelet.cpu_manager,
            kubernetes_node_kubelet_config=kubelet_manager_config(kubelet),
            kubernetes_node_labels=dict(sorted(pool.labels.items())),
            kubernetes_node_taints=taints,
        ),
        NodeMonitoringVars(
            node_monitoring_node_exporter=site.software.node_exporter == "host",
            node_monitoring_collectors=["systemd", "textfile", "nvme"]
            + (["infiniband"] if onprem_fabric else [])
            + (["mdadm"] if scratch else []),
            node_monitoring_dcgm_exporter=bool(gpu) and not platform.spec.operators.gpu_operator.enabled,
            # the InfiniBand ports' transmit wait (alicerce.emit.storage_counters.fabric_wait_counted)
            node_monitoring_fabric_wait=pool.name in fabric_wait_pools(site),
            node_monitoring_storage_tiers=[
                {"tier": m["name"], "path": m["path"], "type": m["type"]} for m in mounts if m["name"] in counted
            ],
        ),
        NodeValidationVars(
            node_validation_gpu_count=gpus,
            node_validation_driver_version=driver_version if gpu else "",
            node_validation_nvswitch=nvswitch,
            node_validation_pcie_generation=gpu.interconnect.pcieGeneration if gpu else 0,
            node_validation_dcgm_diag_level=acceptance.dcgm_diag_level if gpu else 0,
            node_validation_nccl_busbw_gbps=floors["nccl"],
            node_validation_nccl_internode_busbw_gbps=floors["nccl_internode"],
            node_validation_p2p_bw_gbps=floors["p2p"],
            node_validation_hca_count=rails,
            node_validation_hca_rate_gbps=rate,
            node_validation_hca_link_layer=link_layer,
            node_validation_rail_adapters=adapters,
            node_validation_ib_write_bw_gbps=floors["ib_write_bw"],
            node_validation_scratch_path=scratch.mount_path if scratch else "",
            node_validation_mounts=[m["path"] for m in mounts],
            node_validation_allocatable=acceptance_promise(platform, site, pool),
        ),
    )


def inventory_site(platform: ResolvedPlatform, site: ResolvedSite) -> AnsibleSite:
    """A site's inventory: its pools with hosts by rack and role variables, per-host IPoIB addresses."""
    pools: list[InventoryPool] = []
    host_vars: dict[str, dict[str, Any]] = {}
    by_fabric: dict[str, list[str]] = {}
    for pool in site.pools:
        if not pool.racks:
            continue
        racks = {group_name("rack", site.name, rack) if rack else "": hosts for rack, hosts in pool.racks.items()}
        pools.append(
            InventoryPool(
                name=pool.name,
                group=group_name("pool", pool.name),
                purpose=pool.spec.purpose,
                gpu=pool.gpu is not None,
                racks=racks,
                roles=pool_roles(platform, site, pool),
            )
        )
        if pool.rdma is not None:
            by_fabric.setdefault(pool.rdma.fabric.name, []).extend(pool.hosts)
    for fabric in platform.spec.networks.fabrics:
        hosts = by_fabric.get(fabric.name, [])
        if not hosts or fabric.onprem is None:
            continue
        if fabric.onprem.ipoib_cidr is not None:
            for host, addresses in ipoib_addresses(fabric.onprem.ipoib_cidr, fabric.rails, hosts).items():
                host_vars.setdefault(host, {})["rdma_addresses"] = addresses
                host_vars[host]["node_validation_rail_addresses"] = addresses
        if fabric.onprem.subnet_manager == "opensm":
            for host in hosts[:2]:  # a master and a standby subnet manager
                host_vars.setdefault(host, {})["rdma_subnet_manager"] = True
    return AnsibleSite(name=site.name, group=group_name("site", site.name), pools=tuple(pools), host_vars=host_vars)


def group_vars(roles: tuple[RoleVars, ...]) -> dict[str, Any]:
    """What the generator writes for a pool: every public variable except secrets and per-host ones."""
    data: dict[str, Any] = {}
    for model in roles:
        for name, info in type(model).model_fields.items():
            if field_flag(info, "secret") or field_flag(info, "per_host"):
                continue
            data[name] = getattr(model, name)
    return data


def inventory(sites: list[AnsibleSite], control_plane: list[str] | None = None) -> dict[str, Any]:
    children: dict[str, Any] = {}
    purposes: dict[str, list[str]] = {}
    gpu_pools: list[str] = []
    for site in sites:
        pools: dict[str, Any] = {}
        for pool in site.pools:
            rack_groups: dict[str, Any] = {}
            loose: dict[str, Any] = {}
            for rack, hosts in pool.racks.items():
                entries = {h: dict(sorted(site.host_vars.get(h, {}).items())) or None for h in hosts}
                if rack:
                    rack_groups[rack] = {"hosts": entries}
                else:
                    loose.update(entries)
            body: dict[str, Any] = {}
            if loose:
                body["hosts"] = loose
            if rack_groups:
                body["children"] = rack_groups
            pools[pool.group] = body
            purposes.setdefault(group_name("purpose", pool.purpose), []).append(pool.group)
            if pool.gpu:
                gpu_pools.append(pool.group)
        children[site.group] = {"children": pools}
    for purpose, groups in sorted(purposes.items()):
        children[purpose] = {"children": dict.fromkeys(groups)}
    children["gpu_nodes"] = {"children": dict.fromkeys(gpu_pools)}
    # the hosts kubectl runs on for drains, uncordons and label changes (delegated; no role applies to them)
    children["kube_control_plane"] = {"hosts": dict.fromkeys(control_plane or [])}
    return {"all": {"children": children}}


def _role_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for base in ("roles", "library", "filter_plugins"):
        for path in sorted((ANSIBLE_SOURCE / base).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc",):
                files[str(Path(base, path.relative_to(ANSIBLE_SOURCE / base)).as_posix())] = path.read_text(encoding="utf-8")
    return files


def ansible_sites(platform: ResolvedPlatform) -> list[ResolvedSite]:
    """The sites whose nodes alicerce's Ansible tree provisions."""
    return [s for s in platform.sites if s.capabilities.nodes_by_ansible]


def _kubespray_files(platform: ResolvedPlatform, sites: list[AnsibleSite], header: str, forks: int) -> dict[str, str]:
    """kubespray's project: one inventory per site, its pinned environment and the playbooks alicerce runs."""
    release = load_onprem().kubespray
    files: dict[str, str] = {
        "kubespray/requirements.txt": f"# {header}\n" + requirements_txt(release),
        "kubespray/requirements.lock": f"# {header}\n" + requirements_lock(release),
        "kubespray/requirements.yml": render("ansible/kubespray-requirements.yml.j2", header=header, release=release),
        "kubespray/ansible.cfg": render("ansible/kubespray-ansible.cfg.j2", header=header, forks=forks),
        "kubespray/execution-environment.yml": render(
            "ansible/kubespray-execution-environment.yml.j2",
            header=header,
            release=release,
            base_image=EE_BASE_IMAGE,
            ansible_core=release.python["ansible-core"],
            ansible_runner=ANSIBLE_RUNNER,
        ),
    }
    for site in sites:
        resolved = platform.site(site.name)
        spec = resolved.spec
        assert isinstance(spec, OnpremSite)
        if spec.control_plane is None:
            raise EmitError(f"site {site.name}: controlPlane.hosts is required: kubespray builds the cluster on them")
        base = f"kubespray/{site.name}"
        groups = {pool.name: pool.group for pool in site.pools}
        files[f"{base}/inventory.yml"] = f"---\n# {header}\n# kubespray's inventory of site {site.name}.\n" + dump_yaml(
            kubespray_inventory(resolved, groups), inert=True
        )
        files[f"{base}/group_vars/all.yml"] = f"---\n# {header}\n# Cluster-wide kubespray variables of site {site.name}.\n" + dump_yaml(
            cluster_vars(platform, resolved), inert=True
        )
        for pool in resolved.pools:
            if pool.name in groups:
                files[f"{base}/group_vars/{groups[pool.name]}.yml"] = (
                    f"---\n# {header}\n# kubespray variables of pool {pool.name}.\n" + dump_yaml(pool_vars(resolved, pool), inert=True)
                )
        for playbook, name in PLAYBOOKS.items():
            files[f"{base}/{playbook}"] = render("ansible/kubespray-playbook.yml.j2", header=header, release=release, playbook=name)
    return files


def emit_ansible(platform: ResolvedPlatform) -> dict[str, str]:
    sites = [inventory_site(platform, site) for site in ansible_sites(platform)]
    sites = [s for s in sites if s.pools]
    if not sites:
        return {}
    header = f"Generated by alicerce from platform {platform.name}, environment {platform.environment}. Do not edit: regenerate."
    hosts = sum(len(pool.hosts) for site in sites for pool in site.pools)
    forks = max(5, min(100, hosts))
    node_roles = [m.ROLE for m in ROLE_VARS if m.ROLE != "preflight" and m.ROLE not in POST_CLUSTER_ROLES]
    plays = {"header": header, "sites": sites, "batch": ROLLING_BATCH, "max_fail_percentage": 0}
    files: dict[str, str] = {
        "ansible.cfg": render("ansible/ansible.cfg.j2", header=header, forks=forks),
        "inventory.yml": f"---\n# {header}\n" + dump_yaml(inventory(sites, _control_planes(platform, sites)), inert=True),
        "site.yml": render("ansible/site.yml.j2", roles=node_roles, accept_roles=list(POST_CLUSTER_ROLES), **plays),
        "post-cluster.yml": render("ansible/post-cluster.yml.j2", roles=list(POST_CLUSTER_ROLES), **plays),
        ".ansible-lint": "---\n# "
        + header
        + "\nprofile: production\noffline: true\nskip_list: []\nexclude_paths:\n  - .cache/\n  - kubespray/\n",
        # what running the playbooks leaves beside them never reaches a commit: the admin kubeconfig kubespray
        # writes (artifacts_dir), fact caches, lint caches (tree.KEPT carries them across generates)
        ".gitignore": f"# {header}\n/kubespray/artifacts/\n/kubespray/.cache/\n/.cache/\n/.ansible/\n",
        "validate.yml": render("ansible/validate.yml.j2", header=header, sites=sites),
        "accept.yml": render("ansible/accept.yml.j2", header=header, sites=sites),
        "requirements.yml": render("ansible/requirements.yml.j2", header=header, collections=COLLECTIONS),
        "execution-environment.yml": render(
            "ansible/execution-environment.yml.j2",
            header=header,
            base_image=EE_BASE_IMAGE,
            ansible_core=ANSIBLE_CORE,
            ansible_runner=ANSIBLE_RUNNER,
            ee_tag=platform.environment,
        ),
        "README.md": render(
            "ansible/README.md.j2",
            header=header,
            platform=platform.name,
            environment=platform.environment,
            sites=sites,
            host_count=hosts,
            secrets={s.name: platform.site(s.name).spec.kubeconfig_secret for s in sites},  # type: ignore[union-attr]
        ),
    }
    for site in sites:
        for pool in site.pools:
            files[f"group_vars/{pool.group}.yml"] = f"---\n# {header}\n# Pool {pool.name} at site {site.name}.\n" + dump_yaml(
                group_vars(pool.roles), inert=True
            )
    files.update(_kubespray_files(platform, sites, header, forks))
    files.update(_role_files())
    return files


def _control_planes(platform: ResolvedPlatform, sites: list[AnsibleSite]) -> list[str]:
    hosts: list[str] = []
    for site in sites:
        spec = platform.site(site.name).spec
        if isinstance(spec, OnpremSite):
            hosts.extend(control_plane_hosts(spec))
    return hosts
