"""Shared file systems in team namespaces: each team its own directory, or the whole file system read-only.

For every shared tier (parallel file system, shared NFS) at a site, each team namespace gets a claim
named after the tier, pre-bound to a PersistentVolume of its own (``claimRef``: no other claim can
bind it). With ``teamAccess: per-team`` the volume points at ``<root>/teams/<team>``: a Lustre or
FSx subdirectory mount (the FSx CSI driver mounts ``<dns>@tcp:/<mountname>``, aws-fsx-csi-driver
pkg/driver/node.go 109-119), an EFS ``fs-id:/path`` handle, an NFS path, or a hostPath below the
node's mount. With ``read-only`` every team mounts the root, read-only (the volume source where it
has a flag, and an admission policy on the claim for hostPath).

The team directories are made by a Job per tier in ``alicerce-system`` that first checks that the
file system is really mounted there (its type in /proc/mounts), so a missing mount never turns
into directories on a node's local disk. A hostPath volume names ``<mount>/teams/<team>`` with
``type: Directory``: where the file system is not mounted, that path does not exist and the pod does
not start, instead of writing to the node's disk. hostPath volumes carry node affinity to the pools
whose hosts mount the file system (the parallel_fs_client role mounts every shared tier of its site).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alicerce.emit.kube.common import POOL_LABEL, SYSTEM_NAMESPACE, meta, tolerate
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite, ResolvedTier
from alicerce.spec.models import ParallelFsTier, SharedNfsTier

TEAMS_DIR = "teams"
ROOT_MOUNT = "/fs"
# file systems the nodes mount themselves (alicerce.emit.ansible.site FSTAB_OPTIONS), reached by pods through a hostPath
HOST_MOUNTED = ("lustre", "beegfs")
# the type /proc/mounts shows for each kind, checked before any directory is made
FS_TYPES = {"lustre": "lustre", "fsx-lustre": "lustre", "beegfs": "beegfs", "nfs": "nfs nfs4", "efs": "nfs4"}
TIER_LABEL = "alicerce.dev/storage-tier"


def team_path(team: str) -> str:
    return f"{TEAMS_DIR}/{team}"


def _source(tier: ResolvedTier, site: str, volumes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The root PersistentVolume source of a shared tier at a site, or None where there is none (yet)."""
    mount = tier.mounts.get(site)
    spec = tier.spec
    if mount is None:
        return None
    if tier.name in volumes:  # created at deploy time (FSx, EFS): the caller knows its CSI volume
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in volumes[tier.name].items()}
    if mount.kind == "nfs" and isinstance(spec, SharedNfsTier) and spec.onprem is not None:
        return {"nfs": {"server": spec.onprem.server, "path": spec.onprem.export}}
    if mount.kind in HOST_MOUNTED:
        return {"hostPath": {"path": mount.path, "type": "Directory"}}
    return None  # weka: no client role mounts it yet


def _suffixed(value: Any, suffix: str) -> Any:
    """``value`` + ``suffix``; a deploy-time value (a Pulumi Output, which has ``apply``) stays deploy-time."""
    if hasattr(value, "apply"):
        return value.apply(lambda v: f"{v}{suffix}")
    return f"{value}{suffix}"


UNKNOWN_DRIVER = "deploy-time"
"""The CSI driver of a placeholder volume source, for objects rendered before the file system exists (the
GitOps tree leaves those volumes to Pulumi): it passes through unchanged."""


def _below(source: dict[str, Any], sub: str) -> dict[str, Any]:
    """The same volume source, one directory down."""
    if source.get("csi", {}).get("driver") == UNKNOWN_DRIVER:
        return source
    if "hostPath" in source:
        return {"hostPath": {**source["hostPath"], "path": f"{source['hostPath']['path'].rstrip('/')}/{sub}"}}
    if "nfs" in source:
        return {"nfs": {**source["nfs"], "path": f"{source['nfs']['path'].rstrip('/')}/{sub}"}}
    csi = dict(source["csi"])
    if csi["driver"] == "fsx.csi.aws.com":
        attributes = dict(csi.get("volumeAttributes", {}))
        attributes["mountname"] = _suffixed(attributes.get("mountname", "fsx"), f"/{sub}")  # Lustre subdirectory mount
        return {"csi": {**csi, "volumeAttributes": attributes}}
    if csi["driver"] == "efs.csi.aws.com":
        return {"csi": {**csi, "volumeHandle": _suffixed(csi["volumeHandle"], f":/{sub}")}}  # the driver's fs-id:/path form
    raise ValueError(f"no subdirectory form for CSI driver {csi['driver']}")


def _read_only(source: dict[str, Any]) -> dict[str, Any]:
    if "nfs" in source:
        return {"nfs": {**source["nfs"], "readOnly": True}}
    if "csi" in source:
        return {"csi": {**source["csi"], "readOnly": True}}
    return dict(source)  # hostPath: enforced on the claim by alicerce.emit.kube.tenancy.read_only_claims_policy


def mounting_pools(site: ResolvedSite, tier: ResolvedTier) -> list[ResolvedPool]:
    """Pools whose nodes mount a host-mounted file system: every pool the site's node roles provision."""
    mount = tier.mounts.get(site.name)
    if mount is None or mount.kind not in HOST_MOUNTED or not site.capabilities.nodes_by_ansible:
        return []
    return list(site.pools)


def _node_affinity(pools: list[ResolvedPool]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": sorted(p.name for p in pools)}]}
    return {"required": {"nodeSelectorTerms": [term]}}


def _size(tier: ResolvedTier) -> str:
    if tier.fsx is not None:
        return f"{tier.fsx.capacity_gib}Gi"
    capacity = tier.spec.capacity if isinstance(tier.spec, ParallelFsTier | SharedNfsTier) else None
    return f"{max(1, (capacity or 2**40) // 2**30)}Gi"


def _volume_pair(
    name: str, namespace: str, claim: str, *, source: dict[str, Any], size: str, options: list[str], labels: dict[str, str], read_only: bool
) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadOnlyMany" if read_only else "ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",  # the data outlives the claim
        "storageClassName": "",
        "claimRef": {"namespace": namespace, "name": claim},
        **source,
    }
    if options and "hostPath" not in source:
        spec["mountOptions"] = options
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta(name, labels=labels), "spec": spec}
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta(claim, namespace, labels),
        "spec": {
            "accessModes": spec["accessModes"],
            "storageClassName": "",
            "volumeName": name,
            "resources": {"requests": {"storage": size}},
        },
    }
    return [pv, pvc]


def _prepare_job(
    rp: ResolvedPlatform, tier: ResolvedTier, *, kind: str, claim: str, teams: list[str], pools: list[ResolvedPool]
) -> dict[str, Any]:
    """A Job that makes each team's directory, after checking that the file system is mounted where it runs."""
    dirs = " ".join(f"{ROOT_MOUNT}/{team_path(t)}" for t in sorted(teams))
    script = (
        f"fstype=$(awk '$2 == \"{ROOT_MOUNT}\" {{print $3}}' /proc/mounts); "
        f'case " {FS_TYPES[kind]} " in *" $fstype "*) ;; *) echo "{tier.name} is not mounted ($fstype)" >&2; exit 1;; esac; '
        f"mkdir -p {dirs} && chmod 1777 {dirs}"
    )
    pod: dict[str, Any] = {
        "restartPolicy": "OnFailure",
        "containers": [
            {
                "name": "prepare",
                "image": rp.images["storage-prep"].image,
                "command": ["sh", "-c", script],
                "volumeMounts": [{"name": "fs", "mountPath": ROOT_MOUNT}],
                # root makes directories in a root-owned file system root; nothing else is kept
                "securityContext": {
                    "runAsUser": 0,
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
            }
        ],
        "volumes": [{"name": "fs", "persistentVolumeClaim": {"claimName": claim}}],
    }
    if pools and (tolerations := tolerate(pools)):
        pod["tolerations"] = tolerations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            **meta(f"prepare-{tier.name}", SYSTEM_NAMESPACE, {TIER_LABEL: tier.name}),
            # nodes of the mounting pools may not exist yet (scale from zero): pulumi up does not wait for the Job
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {"backoffLimit": 20, "template": {"metadata": {"labels": {TIER_LABEL: tier.name}}, "spec": pod}},
    }


def shared_volumes(rp: ResolvedPlatform, site_name: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Team claims on every shared file system of a site, and the Jobs that make the team directories."""
    out: list[dict[str, Any]] = []
    site = rp.site(site_name)
    teams = [(team.name, ns) for team in site.teams for ns in team.namespaces]
    for tier in site.storage:
        spec = tier.spec
        source = _source(tier, site_name, volumes)
        mount = tier.mounts.get(site_name)
        if source is None or mount is None or not isinstance(spec, ParallelFsTier | SharedNfsTier):
            continue
        pools = mounting_pools(site, tier)
        size, options, labels = _size(tier), list(mount.options), {TIER_LABEL: tier.name}
        read_only = spec.team_access == "read-only"
        for team, ns in teams:
            team_source = _read_only(source) if read_only else _below(source, team_path(team))
            if pools:  # a hostPath exists only on the nodes that mount the file system
                team_source["nodeAffinity"] = _node_affinity(pools)
            pv = f"{rp.name}-{tier.name}-{ns}"[:253]
            out.extend(_volume_pair(pv, ns, tier.name, source=team_source, size=size, options=options, labels=labels, read_only=read_only))
        if not read_only and teams:
            root_claim = f"{tier.name}-root"
            root = f"{rp.name}-{tier.name}-root"[:253]
            if pools:
                source = {**source, "nodeAffinity": _node_affinity(pools)}
            out.extend(
                _volume_pair(root, SYSTEM_NAMESPACE, root_claim, source=source, size=size, options=options, labels=labels, read_only=False)
            )
            out.append(_prepare_job(rp, tier, kind=mount.kind, claim=root_claim, teams=sorted({t for t, _ in teams}), pools=pools))
    return out


def read_only_claims(rp: ResolvedPlatform, site_name: str) -> list[str]:
    """Claims (tier names) that team namespaces may mount only read-only."""
    site = rp.site(site_name)
    return sorted(
        t.name
        for t in site.storage
        if isinstance(t.spec, ParallelFsTier | SharedNfsTier) and t.spec.team_access == "read-only" and t.mounts.get(site_name)
    )


def system_namespace(rp: ResolvedPlatform) -> dict[str, Any]:
    """alicerce's own namespace: its Jobs run as root on shared file systems (baseline, not privileged)."""
    labels = {
        "alicerce.dev/managed": "true",
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": f"v{rp.versions.kubernetes}",
    }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(SYSTEM_NAMESPACE, labels=labels)}
