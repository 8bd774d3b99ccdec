"""The bill of materials of one environment: every version it runs, and where each pin comes from.

Read from the resolved platform (the spec's pins over the catalog's bill of materials, the EKS
add-on table, the charts) and from what the emitters install (operator releases, Ansible
collections, node package versions). A component nobody pins is listed as unpinned, with who picks
its version at deploy time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alicerce.catalog.onprem import load_onprem
from alicerce.emit.ansible.role_vars import NvidiaContainerToolkitVars, RdmaVars
from alicerce.emit.ansible.site import ANSIBLE_CORE, ANSIBLE_RUNNER, COLLECTIONS, EE_BASE_IMAGE, pool_roles
from alicerce.emit.gitops.argocd import ARGOCD_CHART
from alicerce.emit.kube.operators import operator_releases
from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.platform import CHART_VERSION_KEYS
from alicerce.resolve.versions import VERSION_KEYS
from alicerce.targets import TARGETS

SPEC = "spec (versions.{key})"
CATALOG_BOM = "catalog bill of materials (alicerce/catalog/data/versions.yaml bom.{key})"
CATALOG_CHART = "catalog chart pin (alicerce/catalog/data/versions.yaml charts.{key})"
EKS_TABLE = "catalog EKS add-on table for Kubernetes {minor} (versions.yaml eksAddons.{key})"
SPEC_ADDON = "spec (versions.eksAddons.{key})"
ALICERCE = "alicerce ({where})"
UNPINNED = "unpinned"


@dataclass(frozen=True)
class Pin:
    """One component version of the environment."""

    kind: str  # kubernetes, driver, chart, eks-addon, image, ansible, node-package
    component: str
    version: str | None  # None: unpinned
    source: str  # where the pin comes from, or who decides when unpinned
    sites: tuple[str, ...] = ()  # where it is used (empty: every site)

    @property
    def pinned(self) -> bool:
        return self.version is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "component": self.component,
            "version": self.version,
            "pinned": self.pinned,
            "source": self.source,
            "sites": list(self.sites),
        }


def _bom_source(rp: ResolvedPlatform, bom_key: str) -> str:
    """Where a bill-of-materials field's value comes from: the spec's pin, or the catalog."""
    spec_field = next((name for name, key in VERSION_KEYS.items() if key == bom_key), None)
    if spec_field is not None and getattr(rp.spec.versions, spec_field) is not None:
        return SPEC.format(key=bom_key)
    return CATALOG_BOM.format(key=bom_key)


def bill_of_materials(rp: ResolvedPlatform) -> list[Pin]:
    """Every version the environment runs, in a stable order."""
    pins: list[Pin] = [Pin("kubernetes", "kubernetes", rp.versions.kubernetes, _bom_source(rp, "kubernetes"))]
    pins += _driver(rp)
    pins += _charts(rp)
    pins += _managed_addons(rp)
    pins += _images(rp)
    pins += _onprem(rp)
    return pins


def _driver(rp: ResolvedPlatform) -> list[Pin]:
    out: list[Pin] = []
    for site in rp.sites:
        if not any(p.gpu is not None for p in site.pools):
            continue
        if site.capabilities.gpu_stack_on_image:
            out.append(
                Pin("driver", "nvidia-driver", None, "the node image's driver (the AMI release chosen when nodes launch)", (site.name,))
            )
            continue
        owner = "alicerce's nvidia_driver role" if site.software.gpu_driver == "host" else "the GPU Operator's driver container"
        out.append(Pin("driver", "nvidia-driver-branch", rp.versions.driverBranch, _bom_source(rp, "driverBranch"), (site.name,)))
        out.append(
            Pin(
                "driver",
                "nvidia-driver",
                rp.versions.driverVersion,
                f"{_bom_source(rp, 'driverVersion')}; installed by {owner}",
                (site.name,),
            )
        )
    return out


def _charts(rp: ResolvedPlatform) -> list[Pin]:
    used: dict[str, list[str]] = {}
    for site in rp.sites:
        for release in operator_releases(rp, site.name):
            used.setdefault(release.key, []).append(site.name)
        if site.spec.delivery == "argocd":
            used.setdefault(ARGOCD_CHART, []).append(site.name)
    out = []
    for key, sites in sorted(used.items()):
        chart = rp.charts[key]
        source = _bom_source(rp, CHART_VERSION_KEYS[key]) if key in CHART_VERSION_KEYS else CATALOG_CHART.format(key=key)
        out.append(Pin("chart", f"{chart.chart} ({chart.repository})", chart.version, source, tuple(sites)))
    return out


def _managed_addons(rp: ResolvedPlatform) -> list[Pin]:
    """The add-ons each target's managed control plane installs (its declared ManagedAddons), at its sites."""
    out = []
    for t in TARGETS:
        if t.addons is None:
            continue
        sites = tuple(s.name for s in rp.sites if s.provider == t.name)
        if not sites:
            continue
        wanted = list(t.addons.always)
        used = {tier.implementations.get(s) for tier in rp.storage for s in sites}
        wanted += sorted(addon for impl, addon in t.addons.by_storage.items() if impl in used)
        for addon in sorted(wanted):
            version = rp.eks_addons.get(addon)
            if version is None:
                source = "AWS's default version for the cluster's Kubernetes minor when `pulumi up` runs (pin it in versions.eksAddons)"
            elif addon in rp.spec.versions.eks_addons:
                source = SPEC_ADDON.format(key=addon)
            else:
                source = EKS_TABLE.format(minor=rp.versions.kubernetes, key=addon)
            out.append(Pin(t.addons.kind, addon, version, source, sites))
    return out


def _images(rp: ResolvedPlatform) -> list[Pin]:
    images = rp.network_components
    sites = tuple(s.name for s in rp.sites if any(p.rdma is not None and p.rdma.technology != "efa" for p in s.pools))
    if not sites or not rp.spec.operators.network_operator.enabled:
        return []
    if images is None:
        return [Pin("image", "network-operator components", None, "no component images known for this Network Operator release", sites)]
    source = f"catalog (versions.yaml networkOperator {rp.versions.networkOperator} components)"
    return [Pin("image", f"{images.repository} (NicClusterPolicy components)", images.version, source, sites)]


def _onprem(rp: ResolvedPlatform) -> list[Pin]:
    sites = [s for s in rp.sites if s.capabilities.nodes_by_ansible and any(p.racks for p in s.pools)]
    if not sites:
        return []
    names = tuple(s.name for s in sites)
    where = ALICERCE.format(where="alicerce/emit/ansible/site.py")
    out = [
        Pin("ansible", "ansible-core", ANSIBLE_CORE, where, names),
        Pin("ansible", "ansible-runner", ANSIBLE_RUNNER, where, names),
        *[Pin("ansible", f"collection {name}", version, where, names) for name, version in COLLECTIONS],
    ]
    base, _, tag = EE_BASE_IMAGE.rpartition(":")
    out.append(
        Pin("image", f"{base} (execution environment base)", None, f"the registry's current {tag} tag when the image is built", names)
    )
    roles = [role for site in sites for pool in site.pools if pool.racks for role in pool_roles(rp, site, pool)]
    toolkit = {r.nvidia_container_toolkit_version for r in roles if isinstance(r, NvidiaContainerToolkitVars)}
    for version in sorted(toolkit):
        out.append(Pin("node-package", "nvidia-container-toolkit", version, ALICERCE.format(where="role default"), names))
    doca = sorted({r.rdma_doca_repository_url for r in roles if isinstance(r, RdmaVars) and r.rdma_enabled and r.rdma_stack == "doca-ofed"})
    stacks = sorted({r.rdma_stack for r in roles if isinstance(r, RdmaVars) and r.rdma_enabled})
    for stack in stacks:
        if stack == "rdma-core":
            out.append(Pin("node-package", "rdma-core", None, "the OS distribution's inbox package at install time", names))
    for url in doca:
        release: str | None = None if url.rstrip("/").endswith("/latest") else url.rstrip("/").rsplit("/", 1)[-1]
        out.append(
            Pin(
                "node-package",
                "doca-ofed",
                release,
                f"DOCA repository {url}" + (" (follows the latest release)" if release is None else ""),
                names,
            )
        )
    # kubespray installs the cluster: its release pins the Kubernetes patch (kube_version) and its binaries' checksums
    kubespray = load_onprem().kubespray
    source = f"catalog (alicerce/catalog/data/onprem.yaml kubespray, {kubespray.source.url})"
    out.append(Pin("installer", "kubespray", kubespray.tag, source, names))
    patch = kubespray.kubernetes.get(rp.versions.kubernetes)
    where = f"kubespray {kubespray.tag} kube_version for {rp.versions.kubernetes}"
    out.append(Pin("node-package", "kubernetes (kubeadm, kubelet, etcd)", patch, where, names))
    return out
