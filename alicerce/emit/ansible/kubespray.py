"""The kubespray side of an on-prem site: the inventory and variables that build its Kubernetes cluster.

kubespray (a pinned release, ``data/onprem.yaml``) owns what a cluster needs on every host:
containerd (with its whole ``config.toml``, the NVIDIA runtime and CDI included), chrony (the
hosts' one time daemon: ``time_sync_vars``), kubelet, kubeadm, etcd, the CNI and the API endpoint.
alicerce writes what kubespray reads: one inventory per site (``kube_control_plane`` from
``controlPlane.hosts``, ``etcd`` on the same hosts,
``kube_node`` with one child group per pool), cluster-wide variables in ``group_vars/all.yml`` and
the per-pool kubelet, runtime, label and taint variables in ``group_vars/pool_<name>.yml``.

kubespray's playbooks refuse any ansible-core outside [2.18, 2.19) while alicerce's roles run on
2.19, so kubespray runs from its own pinned environment: ``requirements.txt`` (its Python pins, which the
execution environment reads), ``requirements.lock`` (those and everything they install, hashed,
which the local environment installs) and ``requirements.yml`` (the collection at the pinned
commit) are written next to the inventory,
and ``alicerce.run.ansible.kubespray_environment`` builds that environment.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from alicerce.catalog.onprem import KubesprayRelease, kubespray_lock, load_onprem
from alicerce.emit.ansible.role_vars import AnsibleTemplate
from alicerce.emit.errors import EmitError
from alicerce.emit.kube.common import ACCEPTANCE_TAINT
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite
from alicerce.targets.onprem.resolve import AUDIT_LOG_FILES, AUDIT_LOG_MB, control_plane_hosts
from alicerce.targets.onprem.spec import TIME_SERVER_OPTIONS, OnpremSite, TimeSync

# Playbooks of the collection alicerce runs (kubespray resolves <collection>.<name> to playbooks/<name>.yml).
# facts.yml refreshes the fact cache of every host before a run with --limit (kubespray docs/operations/nodes.md).
# remove-node.yml drains and resets the hosts named by -e node= (docs/operations/nodes.md).
PLAYBOOKS = {
    "cluster.yml": "cluster",
    "scale.yml": "scale",
    "upgrade-cluster.yml": "upgrade_cluster",
    "remove-node.yml": "remove_node",
    "facts.yml": "facts",
}
ARTIFACTS = "artifacts"  # kubespray/<ARTIFACTS>/<site>/admin.conf: what kubespray hands back to the controller


@dataclass(frozen=True)
class KubeletManagers:
    """The kubelet resource managers of a pool, by what the pool runs."""

    cpu_manager: str  # none | static
    topology_manager: str  # none | best-effort | restricted | single-numa-node
    scope: str  # container | pod


# Training pods take every GPU of an HGX board, whose GPUs hang off both sockets: `restricted` admits
# them (two NUMA nodes is the fewest that can hold eight GPUs) and rejects a smaller pod spread
# wider than it needs; `single-numa-node` would reject every 8-GPU pod (see topology_admits).
PURPOSE_KUBELET = {
    "training": KubeletManagers("static", "restricted", "pod"),
    "fine-tuning": KubeletManagers("static", "restricted", "pod"),
    "inference": KubeletManagers("static", "best-effort", "container"),
    "batch-inference": KubeletManagers("static", "best-effort", "container"),
    "data-prep": KubeletManagers("none", "none", "container"),
    "system": KubeletManagers("none", "none", "container"),
}


def kubelet_managers(purpose: str) -> KubeletManagers:
    return PURPOSE_KUBELET[purpose]


# The static CPU manager needs whole CPUs kept back (kube_* keep kubespray's defaults); other pools keep
# kubespray's own system_*_reserved defaults (roles/kubernetes/node/defaults/main.yml at the pinned tag).
STATIC_SYSTEM_RESERVED = {"cpu": "2", "memory": "8Gi"}
KUBESPRAY_SYSTEM_RESERVED = {"cpu": "500m", "memory": "512Mi"}
STATIC_POLICY_OPTIONS = {"full-pcpus-only": "true"}


def kubelet_manager_vars(managers: KubeletManagers) -> dict[str, Any]:
    """kubespray's variables for a pool's kubelet resource managers (into ``group_vars/pool_<name>.yml``)."""
    data: dict[str, Any] = {}
    if managers.cpu_manager != "none":
        data["kubelet_cpu_manager_policy"] = managers.cpu_manager
        data["kubelet_cpu_manager_policy_options"] = dict(STATIC_POLICY_OPTIONS)
        data["system_cpu_reserved"] = STATIC_SYSTEM_RESERVED["cpu"]
        data["system_memory_reserved"] = STATIC_SYSTEM_RESERVED["memory"]
    if managers.topology_manager != "none":
        data["kubelet_topology_manager_policy"] = managers.topology_manager
        data["kubelet_topology_manager_scope"] = managers.scope
    return data


def kubelet_manager_config(managers: KubeletManagers) -> dict[str, Any]:
    """The keys of kubelet's config file that kubespray renders from ``kubelet_manager_vars`` (None: not rendered).

    kubernetes_node writes exactly these into the kubelet config of a node whose resource-manager policy
    changes, so kubelet restarts with the new policy inside the node's batch (drained, state reset, verified,
    released) instead of staying stopped until kubespray runs; kubespray then renders the same values
    (kubelet-config.v1beta1.yaml.j2 at the pinned tag: cpuManagerPolicy, cpuManagerPolicyOptions,
    topologyManagerPolicy, topologyManagerScope only when defined; systemReserved always).
    """
    kubespray = kubelet_manager_vars(managers)
    return {
        "cpuManagerPolicy": kubespray.get("kubelet_cpu_manager_policy"),
        "cpuManagerPolicyOptions": kubespray.get("kubelet_cpu_manager_policy_options"),
        "topologyManagerPolicy": kubespray.get("kubelet_topology_manager_policy"),
        "topologyManagerScope": kubespray.get("kubelet_topology_manager_scope"),
        "systemReserved": {
            "cpu": kubespray.get("system_cpu_reserved", KUBESPRAY_SYSTEM_RESERVED["cpu"]),
            "memory": kubespray.get("system_memory_reserved", KUBESPRAY_SYSTEM_RESERVED["memory"]),
        },
    }


def topology_admits(policy: str, gpus_per_numa: list[int], request: int) -> bool:
    """Whether the kubelet's topology manager admits a pod asking for ``request`` GPUs (pod scope).

    From the topology manager's documented semantics: the device manager hints every NUMA set that
    can hold the request and marks as preferred those of the fewest NUMA nodes that can; the merged
    hint must be one NUMA node for ``single-numa-node``, preferred for ``restricted``; ``none`` and
    ``best-effort`` admit whatever fits on the node.
    """
    if request > sum(gpus_per_numa):
        return False
    if policy in ("none", "best-effort"):
        return True
    ordered = sorted(gpus_per_numa, reverse=True)
    fewest = next(n for n in range(1, len(ordered) + 1) if sum(ordered[:n]) >= request)
    if policy == "single-numa-node":
        return fewest == 1
    if policy == "restricted":
        return True  # the device manager's preferred hint spans exactly `fewest` nodes and is admitted
    raise ValueError(f"unknown topology manager policy {policy!r}")


def kubespray_version(release: KubesprayRelease, minor: str) -> str:
    """The full Kubernetes patch kubespray installs for a minor version (``kube_version``)."""
    patch = release.kubernetes.get(minor)
    if patch is None:
        raise EmitError(f"kubespray {release.tag} cannot install Kubernetes {minor}; it supports {', '.join(sorted(release.kubernetes))}")
    return patch


def _endpoint(site: OnpremSite) -> tuple[str, int]:
    parts = urlsplit(site.control_plane_endpoint if "://" in site.control_plane_endpoint else f"https://{site.control_plane_endpoint}")
    return parts.hostname or "", parts.port or 6443


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def time_sync_vars(time_sync: TimeSync) -> dict[str, Any]:
    """kubespray's NTP variables: chrony on every host of the cluster, kubespray its one owner.

    At the pinned tag (roles/kubespray_defaults/defaults/main/main.yml:810-820, roles/kubernetes/preinstall/
    {defaults/main.yml:41-77, tasks/0081-ntp-configurations.yml}, roles/system_packages/vars/main.yml:19-21):
    ``ntp_enabled`` (false by default) installs the ``ntp_package``, stops and disables systemd-timesyncd and starts
    and enables the daemon; ``ntp_package`` defaults to ntp except on RedHat, so chrony is named. With servers,
    ``ntp_manage_config`` renders kubespray's chrony.conf.j2 (each ``server <entry>``, makestep 1.0 3, rtcsync: the
    kernel's synchronised flag that the node exporter's timex collector reports, node_exporter docs/TIME.md) from
    ``ntp_servers``; without, the package's own configuration stays (kubespray's default, ntp_manage_config false).
    ``ntp_timezone`` and ``ntp_force_sync_immediately`` keep their defaults: the zone stays as installed, and the
    forced sync stops the daemon on every run. kubespray starts the service as chronyd on every OS family: Ubuntu's
    chrony.service declares Alias=chronyd.service, and its packaged chrony.conf has rtcsync too and reads servers a
    DHCP server hands out (sourcedir /run/chrony-dhcp), as seen in copies of Ubuntu's shipped files, not its source.
    """
    data: dict[str, Any] = {"ntp_enabled": True, "ntp_package": "chrony"}
    if time_sync.servers:
        data |= {"ntp_manage_config": True, "ntp_servers": [f"{server} {TIME_SERVER_OPTIONS}" for server in time_sync.servers]}
    return data


def cluster_vars(platform: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """kubespray's cluster-wide variables (``group_vars/all.yml``) of one site."""
    spec = site.spec
    assert isinstance(spec, OnpremSite) and spec.control_plane is not None
    release = load_onprem().kubespray
    host, port = _endpoint(spec)
    pods, services = spec.pod_cidr, spec.service_cidr
    if pods is None or services is None:
        raise EmitError(f"site {site.name}: no pod or service range resolved")
    data: dict[str, Any] = {
        "kube_version": kubespray_version(release, platform.versions.kubernetes),
        "container_manager": "containerd",
        "etcd_deployment_type": "host",
        "kube_network_plugin": spec.control_plane.cni,
        "kube_pods_subnet": str(pods),
        "kube_service_addresses": str(services),
        "kube_network_node_prefix": 24,
        "kube_proxy_mode": "ipvs",
        "cluster_name": "cluster.local",
        # the admin kubeconfig lands on the controller in kubespray/artifacts/<site>/admin.conf, a folder the
        # generated tree keeps across runs (alicerce.emit.tree.KEPT); kubespray's default is beside the inventory
        "kubeconfig_localhost": True,
        "artifacts_dir": AnsibleTemplate("{{ inventory_dir }}/../" + ARTIFACTS + "/" + site.name),
        "kubectl_localhost": False,
        # kubespray's GPU add-on is a legacy driver DaemonSet: the driver and toolkit are alicerce's or the GPU Operator's
        "nvidia_accelerator_enabled": False,
        # a default kubespray cluster has no StorageClass (local_path_provisioner_enabled: false, kubespray_defaults
        # main.yml:456), so Prometheus's claim, which names none unless monitoring.storageClass does, would stay
        # Pending; kubespray's local-path provisioner becomes the default class (its is_default_storageclass "true")
        "local_path_provisioner_enabled": platform.spec.operators.monitoring.enabled and platform.spec.monitoring.storage_class is None,
        "supplementary_addresses_in_ssl_keys": [host],
    }
    data |= time_sync_vars(spec.time_sync)
    etcd = site.capabilities.etcd_metrics
    if etcd is not None:
        # etcd's own metrics listener and kubespray's Service and Endpoints for it (alicerce.targets.onprem.resolve):
        # what kube-prometheus-stack's kubeEtcd scrape reads (alicerce.emit.kube.operators.etcd_scrape_values)
        data |= {
            "etcd_metrics_port": etcd.port,
            "etcd_metrics": etcd.detail,
            "etcd_metrics_service_labels": dict(etcd.service_labels),
        }
    audit = platform.spec.security.audit
    if audit.enabled:
        # kube-apiserver's audit log through kubespray's own switch and its default policy (secrets, configmaps and
        # tokens at Metadata, never their bodies; kubespray v2.31.0 roles/kubernetes/control-plane): files rotate at
        # AUDIT_LOG_MB and are kept for the audit retention, at most AUDIT_LOG_FILES of them on each control-plane host
        # (the target's rotation, which plan weighs against the retention: PL347)
        data |= {
            "kubernetes_audit": True,
            "audit_log_maxage": max(1, math.ceil(audit.retention / 86400)),
            "audit_log_maxsize": AUDIT_LOG_MB,
            "audit_log_maxbackups": AUDIT_LOG_FILES,
        }
        if audit.webhook is not None:
            # the same policy's events also go, batched, to the spec's collector (kubespray v2.31.0
            # kubernetes_audit_webhook, audit_webhook_server_url: the webhook kubeconfig's server, the hosts' CAs)
            data |= {"kubernetes_audit_webhook": True, "audit_webhook_server_url": audit.webhook}
    balancer = spec.control_plane.load_balancer
    if balancer is not None:
        data["loadbalancer_apiserver"] = {"address": str(balancer.address), "port": port}
        data["loadbalancer_apiserver_localhost"] = False
        data["supplementary_addresses_in_ssl_keys"] = sorted({host, str(balancer.address)})
        if not _is_address(host):
            data["apiserver_loadbalancer_domain_name"] = host
        if balancer.kind == "kube-vip":
            data.update(
                {
                    "kube_vip_enabled": True,
                    "kube_vip_controlplane_enabled": True,
                    "kube_vip_arp_enabled": True,
                    "kube_vip_address": str(balancer.address),
                    # kube-vip's ARP mode with IPVS needs strict ARP (kubespray docs/ingress/kube-vip.md)
                    "kube_proxy_strict_arp": True,
                }
            )
            if balancer.interface:
                data["kube_vip_interface"] = balancer.interface
    return data


def nvidia_runtime() -> dict[str, Any]:
    """The ``nvidia`` entry of ``containerd_additional_runtimes``: kubespray renders it into config.toml.

    Option values are strings: kubespray writes ``true``/``false`` bare and quotes anything else,
    so a YAML boolean (rendered ``True``) would become a TOML string.
    """
    return {
        "name": "nvidia",
        "type": "io.containerd.runc.v2",
        "engine": "",  # read only by kubespray's containerd < 2 template
        "root": "",
        "base_runtime_spec": "cri-base.json",
        "options": {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": "true"},
    }


def pool_vars(site: ResolvedSite, pool: ResolvedPool) -> dict[str, Any]:
    """kubespray's variables for the nodes of one pool (``group_vars/pool_<name>.yml``)."""
    managers = kubelet_managers(pool.spec.purpose)
    data: dict[str, Any] = {
        "node_labels": dict(sorted(pool.labels.items())),
        "node_taints": [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in pool.spec.taints],
        "kubelet_max_pods": 110,
    }
    data.update(kubelet_manager_vars(managers))
    # kubespray taints a node with kubectl after it joined; registering with the taints closes the window in which
    # pods without the toleration land on it. The acceptance taint is only registered (kubelet applies
    # registerWithTaints when it creates its Node; kubespray's node_taints would put it back on every run): a new
    # node takes no work until post-cluster.yml accepted it and removed the taint.
    data["kubelet_config_extra_args"] = {
        "registerWithTaints": [
            {"key": t.key, "value": t.value, "effect": t.effect} if t.value else {"key": t.key, "effect": t.effect}
            for t in pool.spec.taints
        ]
        + [dict(ACCEPTANCE_TAINT)]
    }
    if pool.gpu is not None:
        data["enable_cdi"] = True
        # one owner of config.toml: kubespray renders the nvidia runtime of the host's toolkit, whoever owns the
        # driver (the GPU Operator runs with toolkit.enabled=false: NodeSoftwareOwners.container_toolkit)
        data["containerd_default_runtime"] = "nvidia"
        data["containerd_additional_runtimes"] = [nvidia_runtime()]
        if site.software.gpu_driver == "host":
            wants = ["nvidia-persistenced.service"]
            if pool.gpu.interconnect.nvswitch and pool.gpus_per_node >= 8:
                wants.append("nvidia-fabricmanager.service")
            data["kubelet_systemd_wants_dependencies"] = wants
    return data


def inventory(site: ResolvedSite, pool_groups: dict[str, str]) -> dict[str, Any]:
    """kubespray's groups: control plane (also etcd) and the workers as one child group per pool."""
    spec = site.spec
    assert isinstance(spec, OnpremSite)
    masters = control_plane_hosts(spec)
    workers: dict[str, Any] = {}
    for pool in site.pools:
        if pool.hosts:
            workers[pool_groups[pool.name]] = {"hosts": dict.fromkeys(pool.hosts)}
    return {
        "all": {
            "children": {
                "kube_control_plane": {"hosts": dict.fromkeys(masters)},
                "etcd": {"children": {"kube_control_plane": None}},
                "kube_node": {"children": workers},
            }
        }
    }


def requirements_lock(release: KubesprayRelease) -> str:
    """The environment's lock: every package with its sha256, what ``kubespray_environment`` installs with hashes."""
    return f"# kubespray {release.tag}'s environment, installed with pip install --require-hashes.\n" + kubespray_lock(release)


def requirements_txt(release: KubesprayRelease) -> str:
    lines = [f"# kubespray {release.tag}'s requirements.txt: the environment its playbooks run in ({release.ansibleCore})."]
    lines += [f"{name}=={version}" for name, version in sorted(release.python.items())]
    return "\n".join(lines) + "\n"
