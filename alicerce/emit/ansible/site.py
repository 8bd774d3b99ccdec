"""Emit the ``ansible/`` subtree: inventory, group_vars, playbooks and config for each on-prem site.

Planning is pure: :func:`plan_site` turns the resolved platform into an :class:`AnsibleSite`
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
from alicerce.emit.templates import ANSIBLE_SOURCE, render
from alicerce.resolve.platform import ResolvedPlatform, ResolvedPool
from alicerce.spec.models import Fabric, LocalNvmeTier, OnpremSite, ParallelFsTier, SharedNfsTier
from alicerce.spec.units import expand_hosts

# Collections the roles use, pinned to the versions they are tested with (ansible 12.3).
COLLECTIONS = (("ansible.posix", "2.1.0"), ("community.general", "11.4.2"))
ANSIBLE_CORE = "2.19.14"
ANSIBLE_RUNNER = "2.4.3"
EE_BASE_IMAGE = "quay.io/centos/centos:stream9-minimal"
ROLLING_BATCH = "25%"
# GPU roles run only on hosts of the gpu_nodes group; the rest run on every node.
GPU_ROLES = frozenset({"nvidia_driver", "nvidia_fabricmanager", "nvidia_container_toolkit"})
PURPOSE_KUBELET = {
    "training": ("static", "single-numa-node"),
    "fine-tuning": ("static", "single-numa-node"),
    "inference": ("static", "best-effort"),
    "batch-inference": ("static", "best-effort"),
    "data-prep": ("none", "none"),
    "system": ("none", "none"),
}


def group_name(*parts: str) -> str:
    """An inventory group name: letters, digits and underscores only."""
    return re.sub(r"[^A-Za-z0-9_]", "_", "_".join(parts))


@dataclass(frozen=True)
class PoolPlan:
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
    pools: tuple[PoolPlan, ...]
    host_vars: dict[str, dict[str, Any]] = field(default_factory=dict)


def plan_ipoib(cidr: ipaddress.IPv4Network | ipaddress.IPv6Network, rails: int, hosts: list[str]) -> dict[str, list[str]]:
    """Split the fabric's IPoIB range into one subnet per rail; host i gets address i+1 of each rail."""
    extra_bits = max(rails - 1, 0).bit_length()
    if cidr.prefixlen + extra_bits > cidr.max_prefixlen:
        raise EmitError(f"IPoIB range {cidr} cannot be split into {rails} rails")
    subnets = [ipaddress.ip_network(str(net)) for net in cidr.subnets(prefixlen_diff=extra_bits)][:rails]
    usable = subnets[0].num_addresses - 2
    if len(hosts) > usable:
        raise EmitError(f"IPoIB range {cidr} gives {usable} addresses per rail, the fabric has {len(hosts)} hosts")
    return {host: [f"{subnet.network_address + index + 1}/{subnet.prefixlen}" for subnet in subnets] for index, host in enumerate(hosts)}


def _fabric(platform: ResolvedPlatform, pool: ResolvedPool) -> Fabric | None:
    if pool.spec.fabric is None:
        return None
    return next((f for f in platform.spec.networks.fabrics if f.name == pool.spec.fabric and f.onprem is not None), None)


def _mounts(platform: ResolvedPlatform, site: OnpremSite) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = []
    for tier in platform.storage:
        impl = tier.implementations.get(site.name)
        spec = tier.spec
        if isinstance(spec, ParallelFsTier) and spec.onprem is not None and impl in ("lustre", "beegfs"):
            if impl == "lustre":
                source = f"{spec.onprem.server}:/{spec.onprem.filesystem}"
                options = ["defaults", "_netdev", "flock", "noatime", *spec.onprem.mount_options]
            else:
                source = spec.onprem.server
                options = list(spec.onprem.mount_options)
            mounts.append({"name": tier.name, "type": impl, "source": source, "path": spec.mount_path, "options": options})
        elif isinstance(spec, SharedNfsTier) and spec.onprem is not None and impl == "nfs":
            options = ["defaults", "_netdev", f"vers={spec.onprem.version}", "hard", "noatime", "nconnect=8"]
            mounts.append(
                {
                    "name": tier.name,
                    "type": "nfs",
                    "source": f"{spec.onprem.server}:{spec.onprem.export}",
                    "path": spec.mount_path,
                    "options": options,
                }
            )
    return mounts


def _lnet(mounts: list[dict[str, Any]], fabric: Fabric | None) -> str:
    nids = [str(m["source"]).split(":/")[0] for m in mounts if m["type"] == "lustre"]
    networks = sorted({nid.rsplit("@", 1)[1] for nid in nids if "@" in nid})
    if not networks or fabric is None or fabric.onprem is None or fabric.onprem.technology != "infiniband":
        return ""
    rails = ",".join(f"ibrail{i}" for i in range(fabric.rails))
    return ",".join(f"{net}({rails})" if net.startswith("o2ib") else net for net in networks)


def pool_roles(platform: ResolvedPlatform, pool: ResolvedPool) -> tuple[RoleVars, ...]:
    """The variables of every role for the nodes of ``pool``, decided from the resolved platform."""
    site = pool.site
    assert isinstance(site, OnpremSite)
    versions = platform.versions
    gpu = pool.gpu
    gpus = pool.gpus_per_node if gpu else 0
    fabric = _fabric(platform, pool)
    onprem_fabric = fabric.onprem if fabric else None
    hcas = (pool.spec.onprem.hcas if pool.spec.onprem and pool.spec.onprem.hcas is not None else fabric.rails) if fabric else 0
    nvswitch = bool(gpu and gpu.interconnect.nvswitch and gpus >= 8)
    module_type = platform.spec.operators.gpu_operator.kernel_module_type
    if module_type == "auto":
        module_type = "proprietary" if gpu is not None and gpu.architecture == "volta" else "open"
    scratch = next(
        (t.spec for t in platform.storage if isinstance(t.spec, LocalNvmeTier) and pool.name in t.spec.pools and site.name in t.sites),
        None,
    )
    mounts = _mounts(platform, site)
    cpu_manager, topology = PURPOSE_KUBELET[pool.spec.purpose]
    driver_version = versions.get("driverVersion", "")
    branch = versions.get("driverBranch", "")
    rate = onprem_fabric.rate_gbps if onprem_fabric else 0
    link_layer = "Ethernet" if onprem_fabric and onprem_fabric.technology == "roce" else "InfiniBand"
    return (
        PreflightVars(preflight_gpu_count=gpus, preflight_hca_count=hcas),
        NvidiaDriverVars(nvidia_driver_branch=branch, nvidia_driver_version=driver_version, nvidia_driver_kernel_module_type=module_type),
        NvidiaFabricmanagerVars(
            nvidia_fabricmanager_enabled=nvswitch, nvidia_fabricmanager_branch=branch, nvidia_fabricmanager_version=driver_version
        ),
        NvidiaContainerToolkitVars(),
        RdmaVars(
            rdma_enabled=onprem_fabric is not None,
            rdma_technology=onprem_fabric.technology if onprem_fabric else "infiniband",
            rdma_rails=hcas,
            rdma_rate_gbps=rate or 400,
            rdma_mtu=onprem_fabric.mtu if onprem_fabric else 4096,
            rdma_gpudirect=bool(fabric and fabric.gpu_direct_rdma and gpu),
        ),
        NvmeScratchVars(
            nvme_scratch_enabled=scratch is not None,
            nvme_scratch_mount_path=scratch.mount_path if scratch else "/scratch",
            nvme_scratch_filesystem=scratch.filesystem if scratch else "xfs",
        ),
        ParallelFsClientVars(parallel_fs_client_mounts=mounts, parallel_fs_client_lnet_networks=_lnet(mounts, fabric)),
        KubernetesNodeVars(
            kubernetes_node_version=versions.get("kubernetes", ""),
            kubernetes_node_control_plane_endpoint=site.control_plane_endpoint,
            kubernetes_node_labels=dict(sorted(pool.labels.items())),
            kubernetes_node_taints=[f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in pool.spec.taints],
            kubernetes_node_cpu_manager_policy=cpu_manager,
            kubernetes_node_topology_manager_policy=topology,
        ),
        NodeMonitoringVars(
            node_monitoring_collectors=["systemd", "textfile", "nvme"]
            + (["infiniband"] if onprem_fabric else [])
            + (["mdadm"] if scratch else []),
            node_monitoring_dcgm_exporter=bool(gpu) and not platform.spec.operators.gpu_operator.enabled,
        ),
        NodeValidationVars(
            node_validation_gpu_count=gpus,
            node_validation_driver_version=driver_version if gpu else "",
            node_validation_nvswitch=nvswitch,
            node_validation_hca_count=hcas,
            node_validation_hca_rate_gbps=rate,
            node_validation_hca_link_layer=link_layer,
            node_validation_scratch_path=scratch.mount_path if scratch else "",
            node_validation_mounts=[m["path"] for m in mounts],
        ),
    )


def plan_site(platform: ResolvedPlatform, site: OnpremSite) -> AnsibleSite:
    pools: list[PoolPlan] = []
    host_vars: dict[str, dict[str, Any]] = {}
    by_fabric: dict[str, list[str]] = {}
    for pool in platform.pools:
        if pool.site.name != site.name or pool.spec.onprem is None:
            continue
        racks: dict[str, list[str]] = {}
        for entry in pool.spec.onprem.hosts:
            rack = group_name("rack", site.name, entry.rack) if entry.rack else ""
            racks.setdefault(rack, []).extend(expand_hosts(entry.hosts))
        pools.append(
            PoolPlan(
                name=pool.name,
                group=group_name("pool", pool.name),
                purpose=pool.spec.purpose,
                gpu=pool.gpu is not None,
                racks={rack: tuple(hosts) for rack, hosts in racks.items()},
                roles=pool_roles(platform, pool),
            )
        )
        if pool.spec.fabric:
            by_fabric.setdefault(pool.spec.fabric, []).extend(pool.hosts)
    for fabric in platform.spec.networks.fabrics:
        hosts = by_fabric.get(fabric.name, [])
        if not hosts or fabric.onprem is None:
            continue
        if fabric.onprem.technology == "infiniband" and fabric.onprem.ipoib_cidr is not None:
            for host, addresses in plan_ipoib(fabric.onprem.ipoib_cidr, fabric.rails, hosts).items():
                host_vars.setdefault(host, {})["rdma_ipoib_addresses"] = addresses
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


def inventory(sites: list[AnsibleSite]) -> dict[str, Any]:
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
    return {"all": {"children": children}}


def _role_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for base in ("roles", "library", "filter_plugins"):
        for path in sorted((ANSIBLE_SOURCE / base).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc",):
                files[str(Path(base, path.relative_to(ANSIBLE_SOURCE / base)).as_posix())] = path.read_text(encoding="utf-8")
    return files


def onprem_sites(platform: ResolvedPlatform) -> list[OnpremSite]:
    return [s for s in platform.sites if isinstance(s, OnpremSite)]


def emit_ansible(platform: ResolvedPlatform) -> dict[str, str]:
    sites = [plan_site(platform, site) for site in onprem_sites(platform)]
    sites = [s for s in sites if s.pools]
    if not sites:
        return {}
    header = f"Generated by alicerce from platform {platform.name}, environment {platform.environment}. Do not edit: regenerate."
    hosts = sum(len(pool.hosts) for site in sites for pool in site.pools)
    files: dict[str, str] = {
        "ansible.cfg": render("ansible/ansible.cfg.j2", header=header, forks=max(5, min(100, hosts))),
        "inventory.yml": f"---\n# {header}\n" + dump_yaml(inventory(sites)),
        "site.yml": render(
            "ansible/site.yml.j2",
            header=header,
            sites=sites,
            batch=ROLLING_BATCH,
            max_fail_percentage=0,
            roles=[{"name": m.ROLE, "gpu_only": m.ROLE in GPU_ROLES} for m in ROLE_VARS if m.ROLE != "preflight"],
        ),
        ".ansible-lint": "---\n# " + header + "\nprofile: production\noffline: true\nskip_list: []\nexclude_paths:\n  - .cache/\n",
        "validate.yml": render("ansible/validate.yml.j2", header=header, sites=sites),
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
            "ansible/README.md.j2", header=header, platform=platform.name, environment=platform.environment, sites=sites, host_count=hosts
        ),
    }
    for site in sites:
        for pool in site.pools:
            files[f"group_vars/{pool.group}.yml"] = f"---\n# {header}\n# Pool {pool.name} at site {site.name}.\n" + dump_yaml(
                group_vars(pool.roles)
            )
    files.update(_role_files())
    return files
