"""Shared file systems in team namespaces: each team its own directory, or the whole file system read-only;
a file system linked to an object tier (FSx data repository) only as the teams' grants on that tier allow.

For every shared tier (parallel file system, shared NFS) at a site, each team namespace gets a claim
named after the tier, pre-bound to a PersistentVolume of its own (``claimRef``: no other claim can
bind it). With ``teamAccess: per-team`` the volume points at ``<root>/teams/<team>``: a Lustre or
FSx subdirectory mount (the FSx CSI driver mounts ``<dns>@tcp:/<mountname>``, aws-fsx-csi-driver
pkg/driver/node.go 109-119), an EFS ``fs-id:/path`` handle, an NFS path, or a hostPath below the
node's mount. With ``read-only`` every team mounts the root, read-only (the volume source where it
has a flag, and an admission policy on the claim for hostPath). A file system linked to an object tier
holds that tier's objects (and exports to it): only teams granted the object tier get a claim, at the
grant's prefix, read-only for a read grant. On EFS each team's directory is its own access point.

The team directories are made by a Job per tier in ``alicerce-system`` that first checks that the
file system is really mounted there (its type in /proc/mounts), so a missing mount never turns
into directories on a node's local disk. A hostPath volume names ``<mount>/teams/<team>`` with
``type: Directory``: where the file system is not mounted, that path does not exist and the pod does
not start, instead of writing to the node's disk. hostPath volumes carry node affinity to the pools
whose hosts mount the file system (the parallel_fs_client role mounts every shared tier of its site).
"""

from __future__ import annotations

import copy
import hashlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from alicerce.emit.errors import EmitError
from alicerce.emit.kube.common import POOL_LABEL, meta, system_placement
from alicerce.resolve.model import MOUNT_KINDS, Mount, ResolvedPlatform, ResolvedPool, ResolvedSite, ResolvedTier
from alicerce.resolve.namespaces import SYSTEM_NAMESPACE
from alicerce.resolve.targets import RESOLVERS
from alicerce.spec.models import ParallelFsTier, SharedNfsTier

TEAMS_DIR = "teams"
ROOT_MOUNT = "/fs"
# file systems the nodes mount themselves (alicerce.emit.ansible.site FSTAB_OPTIONS), reached by pods through a hostPath
HOST_MOUNTED = tuple(k.kind for k in MOUNT_KINDS if k.host_mounted)
# the type /proc/mounts shows for each kind, checked before any directory is made (each kind's record)
FS_TYPES = {k.kind: " ".join(k.fs_types) for k in MOUNT_KINDS if k.fs_types}
TIER_LABEL = "alicerce.dev/storage-tier"
CLAIM_REQUEST = "1Gi"
"""What every static team claim requests, whatever the file system's size. A claim bound by ``volumeName`` needs
a request no larger than the volume's capacity (PV controller checkVolumeSatisfyClaim), and a claim's request may
only grow, and only through a StorageClass that allows expansion: a claim requesting the file system's size
made every later growth of the file system an update Kubernetes refuses (``pulumi up`` and Argo CD both fail).
The volume's capacity, a mutable field of a static PersistentVolume, carries the real size."""
SOURCE_HASH_LENGTH = 8
PER_TEAM = "perTeam"
"""Key of a deploy-time volume entry holding each team's own volume source (an EFS access point per team), beside
the root source."""


def team_path(team: str) -> str:
    return f"{TEAMS_DIR}/{team}"


# Each team's POSIX identity on shared file systems: its EFS access point's uid/gid (alicerce.targets.aws), and the
# identity the prepare Job makes its directory as on a root-squashed NFS export. Ids are a stable function of the team
# name (adding or removing a team never renumbers another: an access point's identity cannot change without
# replacing it), in a range clear of system and image users.
TEAM_ID_BASE, TEAM_ID_SPAN = 20000, 40000


def team_posix_ids(teams: tuple[str, ...]) -> dict[str, int]:
    """uid (= gid) of each team on EFS: a hash of its name in [TEAM_ID_BASE, TEAM_ID_BASE + TEAM_ID_SPAN), the next
    free id on a collision (teams in name order, so the result depends only on the set of names)."""
    taken: dict[str, int] = {}
    for team in sorted(teams):
        uid = TEAM_ID_BASE + int(hashlib.sha256(team.encode()).hexdigest()[:8], 16) % TEAM_ID_SPAN
        while uid in taken.values():
            uid = TEAM_ID_BASE + (uid - TEAM_ID_BASE + 1) % TEAM_ID_SPAN
        taken[team] = uid
    return taken


def _source(tier: ResolvedTier, site: str, volumes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The root PersistentVolume source of a shared tier at a site, or None where there is none (yet)."""
    mount = tier.mounts.get(site)
    spec = tier.spec
    if mount is None:
        return None
    if tier.name in volumes:  # created at deploy time (FSx, EFS): the caller knows its CSI volume
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in volumes[tier.name].items() if k != PER_TEAM}
    if mount.kind == "nfs" and isinstance(spec, SharedNfsTier):
        server, _, export = mount.source.partition(":")  # resolve's `server:/export` (a host name holds no colon)
        return {"nfs": {"server": server, "path": export}}
    if mount.kind in HOST_MOUNTED:
        return {"hostPath": {"path": mount.path, "type": "Directory"}}
    return None  # weka: no client role mounts it yet


def _suffixed(value: Any, suffix: str) -> Any:
    """``value`` + ``suffix``; a deploy-time value (a Pulumi Output, which has ``apply``) stays deploy-time."""
    if hasattr(value, "apply"):
        return value.apply(lambda v: f"{v}{suffix}")
    return f"{value}{suffix}"


# every registered target's CSI drivers and how their volumes name a subdirectory (Capabilities.csi_subdirectories)
CSI_SUBDIRECTORIES = {driver: form for r in RESOLVERS.values() for driver, form in r.capabilities.csi_subdirectories.items()}

UNKNOWN_DRIVER = "deploy-time"
"""The CSI driver of a placeholder volume source, for objects rendered before the file system exists (the
GitOps tree leaves those volumes to Pulumi): it passes through unchanged."""


def _below(source: dict[str, Any], sub: str) -> dict[str, Any]:
    """The same volume source, one directory down."""
    if any(part in ("", ".", "..") for part in sub.split("/")):  # validate refuses it (ObjectPrefix); never write it
        raise EmitError(f"refusing a volume below {sub!r}: it would leave the directory it names")
    if source.get("csi", {}).get("driver") == UNKNOWN_DRIVER:
        return source
    if "hostPath" in source:
        return {"hostPath": {**source["hostPath"], "path": f"{source['hostPath']['path'].rstrip('/')}/{sub}"}}
    if "nfs" in source:
        return {"nfs": {**source["nfs"], "path": f"{source['nfs']['path'].rstrip('/')}/{sub}"}}
    csi = dict(source["csi"])
    form = CSI_SUBDIRECTORIES.get(csi["driver"])  # declared by the target whose driver it is
    if form is not None and form.attribute is not None:
        attributes = dict(csi.get("volumeAttributes", {}))
        attributes[form.attribute] = _suffixed(attributes.get(form.attribute, form.default), f"/{sub}")
        return {"csi": {**csi, "volumeAttributes": attributes}}
    if form is not None and form.handle_separator is not None:
        return {"csi": {**csi, "volumeHandle": _suffixed(csi["volumeHandle"], f"{form.handle_separator}{sub}")}}
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
            "resources": {"requests": {"storage": CLAIM_REQUEST}},
        },
    }
    return [pv, pvc]


def _offline(value: Any) -> Any:
    """A volume source as plain data: a deploy-time value (a Pulumi Output) becomes a fixed marker."""
    if isinstance(value, Mapping):
        return {str(k): _offline(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_offline(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return UNKNOWN_DRIVER


def _identity(mount: Mount, source: Mapping[str, Any], path: str | None, read_only: bool) -> dict[str, Any]:
    """What names a volume: its source where it is known offline; for a file system created at deploy time (FSx,
    EFS: ``mount.source`` is empty) only what the spec decides, so the GitOps tree's claims, written before the file
    system exists, name the very volume Pulumi creates. The directory and access are named in both cases (a
    deploy-time source hides the directory inside an Output)."""
    offline = None if mount.source == "" else source
    return {"source": offline, "mount": mount.kind, "path": path, "readOnly": read_only}


def volume_name(base: str, identity: Mapping[str, Any]) -> str:
    """A PersistentVolume's name: ``base`` and a hash of what about it Kubernetes never lets change (its source,
    the directory below the root, read-only or not, where it may be mounted). A change of source (a tier's prefix,
    an access point, an NFS export) then makes a new volume beside the old one, and the claim (whose volumeName is
    immutable) is replaced to bind it, instead of an in-place replacement of the volume, whose delete waits forever
    on the claim bound to it (kubernetes.io/pv-protection)."""
    digest = hashlib.sha256(json.dumps(_offline(identity), sort_keys=True).encode()).hexdigest()[:SOURCE_HASH_LENGTH]
    return f"{base[: 253 - SOURCE_HASH_LENGTH - 1]}-{digest}"


def _mount_check(tier: ResolvedTier, kind: str) -> str:
    """Shell: fail unless the file system of ``kind`` is what is mounted at ROOT_MOUNT (never a node's local disk)."""
    return (
        f"fstype=$(awk '$2 == \"{ROOT_MOUNT}\" {{print $3}}' /proc/mounts); "
        f'case " {FS_TYPES[kind]} " in *" $fstype "*) ;; *) echo "{tier.name} is not mounted ($fstype)" >&2; exit 1;; esac; '
    )


# An NFS export squashes root by default (exports(5) root_squash): root in the Job would be nobody, unable to make
# anything in a root-owned export. There each team's directory is made by a container running as the team's own
# identity (team_posix_ids), inside a ``teams`` directory the export's administrator makes once, world-writable
# with the sticky bit (no team can remove another's directory). Nothing there runs as root.
ROOT_SQUASHED = ("nfs",)


def _prepare_job(rp: ResolvedPlatform, site: ResolvedSite, tier: ResolvedTier, *, kind: str, claim: str, dirs: list[str]) -> dict[str, Any]:
    """A Job that makes the teams' directories, after checking that the file system is mounted where it runs."""
    base = {
        "image": rp.images["storage-prep"].image,
        "volumeMounts": [{"name": "fs", "mountPath": ROOT_MOUNT}],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
    containers: list[dict[str, Any]] = []
    if kind in ROOT_SQUASHED:
        teams_dir = shlex.quote(f"{ROOT_MOUNT}/{TEAMS_DIR}")
        missing = (
            f'echo "{tier.name}: {TEAMS_DIR}/ is missing or not writable: on the NFS server, make it once with '
            f'install -d -m 1777 <export>/{TEAMS_DIR}" >&2; exit 1'
        )
        ids = team_posix_ids(tuple(d.removeprefix(f"{TEAMS_DIR}/") for d in dirs))
        for d in dirs:
            team = d.removeprefix(f"{TEAMS_DIR}/")
            path = shlex.quote(f"{ROOT_MOUNT}/{d}")
            # a directory that exists already (made by an administrator, or under another id) is left as it is: chmod
            # by anyone but its owner fails, and the Job would never complete; it only has to be writable
            unwritable = (
                f'echo "{tier.name}: {d} exists but uid {ids[team]} (team {team}) cannot write it: on the NFS server, '
                f'chown {ids[team]}:{ids[team]} it or chmod 1777 it" >&2; exit 1'
            )
            script = (
                _mount_check(tier, kind)
                + f"[ -d {teams_dir} ] && [ -w {teams_dir} ] || {{ {missing}; }}; "
                + f"if [ ! -d {path} ]; then mkdir {path} && chmod 1777 {path} || exit 1; fi; [ -w {path} ] || {{ {unwritable}; }}"
            )
            identity = {"runAsNonRoot": True, "runAsUser": ids[team], "runAsGroup": ids[team]}
            containers.append(
                {"name": f"prepare-{team}"[:63], "command": ["sh", "-c", script], **base, "securityContext": {**identity, **restricted}}
            )
    else:
        paths = " ".join(shlex.quote(f"{ROOT_MOUNT}/{d}") for d in dirs)
        script = _mount_check(tier, kind) + f"mkdir -p {paths} && chmod 1777 {paths}"
        # root makes directories in a root-owned file system root (Lustre, FSx and EFS do not squash root by default)
        containers.append({"name": "prepare", "command": ["sh", "-c", script], **base, "securityContext": {"runAsUser": 0, **restricted}})
    pod: dict[str, Any] = {
        "restartPolicy": "OnFailure",
        # each container its own copy: shared dicts would come out as YAML anchors and aliases in the GitOps tree
        "containers": [copy.deepcopy({k: c[k] for k in sorted(c)}) for c in containers],
        "volumes": [{"name": "fs", "persistentVolumeClaim": {"claimName": claim}}],
    }
    # on the system pool, like every platform component: its nodes mount the site's shared file systems too
    # (mounting_pools), and no team pool's taint or Spot reclaim stands in the way
    pod |= system_placement(site.pools)
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


@dataclass(frozen=True)
class TeamMount:
    """One team namespace's claim on a shared file system: the directory below the root it sees, and whether
    it may write there."""

    team: str
    namespace: str
    claim: str
    path: str | None  # below the file system root; None: the root itself
    read_only: bool


def linked_source(tier: ResolvedTier, site_name: str) -> str | None:
    """The object tier a file system is linked to at a site (an FSx data repository): its files are that tier's
    objects, so teams reach them only as their grants on that tier allow."""
    mount = tier.mounts.get(site_name)
    spec = tier.spec
    if mount is not None and mount.kind == "fsx-lustre" and isinstance(spec, ParallelFsTier) and spec.source:
        return spec.source
    return None


def team_mounts(rp: ResolvedPlatform, site_name: str, tier: ResolvedTier) -> list[TeamMount]:
    """Who mounts a shared tier at a site, where and how.

    A file system linked to an object tier (an FSx data repository association exports to the bucket) holds
    that tier's objects: only teams with a storage grant on it get a claim, at the grant's prefix, read-only
    unless the grant is read-write and the tier not ``teamAccess: read-only``. Any other shared tier: every
    team, in its own directory or the root read-only (``teamAccess``)."""
    site = rp.site(site_name)
    spec = tier.spec
    tier_read_only = isinstance(spec, ParallelFsTier | SharedNfsTier) and spec.team_access == "read-only"
    source = linked_source(tier, site_name)
    out: list[TeamMount] = []
    for team in site.teams:
        if source is None:
            path = None if tier_read_only else team_path(team.name)
            out.extend(TeamMount(team.name, ns, tier.name, path, tier_read_only) for ns in team.namespaces)
            continue
        grants = [g for g in team.spec.storage_access if g.tier == source]
        for i, grant in enumerate(grants):
            claim = tier.name if i == 0 else f"{tier.name}-{i + 1}"
            path = grant.prefix.rstrip("/") if grant.prefix else None
            read_only = tier_read_only or grant.access != "read-write"
            out.extend(TeamMount(team.name, ns, claim, path, read_only) for ns in team.namespaces)
    return out


def _directories(tier: ResolvedTier, site_name: str, mounts: list[TeamMount]) -> list[str]:
    """Directories the prepare Job makes: each team's own, or on a linked file system the prefixes granted
    read-write (read grants see what the bucket holds)."""
    if linked_source(tier, site_name) is None:
        return sorted({m.path for m in mounts if m.path is not None})
    return sorted({m.path for m in mounts if m.path is not None and not m.read_only})


def _team_source(source: dict[str, Any], entry: Mapping[str, Any], mount: TeamMount) -> dict[str, Any]:
    """The PersistentVolume source of one team's claim: the team's own access point where the file system has
    them (EFS), else the root source one directory down; read-only where the claim is."""
    per_team = entry.get(PER_TEAM, {})
    if mount.path is not None and mount.path == team_path(mount.team) and mount.team in per_team:
        team_source = {k: dict(v) if isinstance(v, Mapping) else v for k, v in per_team[mount.team].items()}
    elif mount.path is not None:
        team_source = _below(source, mount.path)
    else:
        team_source = dict(source)
    return _read_only(team_source) if mount.read_only else team_source


def shared_volumes(rp: ResolvedPlatform, site_name: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Team claims on every shared file system of a site, and the Jobs that make the team directories."""
    out: list[dict[str, Any]] = []
    site = rp.site(site_name)
    for tier in site.storage:
        spec = tier.spec
        source = _source(tier, site_name, volumes)
        mount = tier.mounts.get(site_name)
        if source is None or mount is None or not isinstance(spec, ParallelFsTier | SharedNfsTier):
            continue
        pools = mounting_pools(site, tier)
        size, options, labels = _size(tier), list(mount.options), {TIER_LABEL: tier.name}
        mounts = team_mounts(rp, site_name, tier)
        for m in mounts:
            team_source = _team_source(source, volumes.get(tier.name, {}), m)
            if pools:  # a hostPath exists only on the nodes that mount the file system
                team_source["nodeAffinity"] = _node_affinity(pools)
            suffix = m.claim[len(tier.name) :]  # "" or "-2", "-3": a team's further grants on a linked tier
            identity = _identity(mount, team_source, m.path, m.read_only)
            pv = volume_name(f"{rp.name}-{tier.name}-{m.namespace}{suffix}", identity)
            out.extend(
                _volume_pair(pv, m.namespace, m.claim, source=team_source, size=size, options=options, labels=labels, read_only=m.read_only)
            )
        if dirs := _directories(tier, site_name, mounts):
            root_claim = f"{tier.name}-root"
            if pools:
                source = {**source, "nodeAffinity": _node_affinity(pools)}
            root = volume_name(f"{rp.name}-{tier.name}-root", _identity(mount, source, None, False))
            out.extend(
                _volume_pair(root, SYSTEM_NAMESPACE, root_claim, source=source, size=size, options=options, labels=labels, read_only=False)
            )
            out.append(_prepare_job(rp, site, tier, kind=mount.kind, claim=root_claim, dirs=dirs))
    return out


def read_only_claims(rp: ResolvedPlatform, site_name: str) -> list[str]:
    """Claims that team namespaces may mount only read-only: those read-only wherever they are made."""
    site = rp.site(site_name)
    claims: dict[str, bool] = {}
    for tier in site.storage:
        if not isinstance(tier.spec, ParallelFsTier | SharedNfsTier) or not tier.mounts.get(site_name):
            continue
        for m in team_mounts(rp, site_name, tier):
            claims[m.claim] = claims.get(m.claim, True) and m.read_only
    return sorted(c for c, read_only in claims.items() if read_only)


def system_namespace(rp: ResolvedPlatform) -> dict[str, Any]:
    """alicerce's own namespace: its Jobs run as root on shared file systems (baseline, not privileged)."""
    labels = {
        "alicerce.dev/managed": "true",
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": f"v{rp.versions.kubernetes}",
    }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(SYSTEM_NAMESPACE, labels=labels)}
