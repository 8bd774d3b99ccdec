"""Argo CD delivery of one site's in-cluster layer, decided as plain data.

The same operator releases (:func:`~alicerce.emit.kube.operators.operator_releases`) and objects
(:func:`~alicerce.emit.kube.objects.cluster_objects`) the Pulumi layer applies become Argo CD
Applications: one Helm-sourced Application per release (pinned chart and version, values inline as
``helm.valuesObject``) and one directory Application per group of objects, all children of one
root Application (app of apps) per site. Order comes from sync waves:

- wave 0: the built-in objects that need no operator (team namespaces, quotas, policies, priority classes,
  claims);
- wave 1 and up: each operator one wave after the operators whose CRDs it uses;
- every other object one wave after the latest operator it needs (:func:`~alicerce.emit.kube.objects.object_needs`):
  the owner of its CRD (Kueue queues, PrometheusRules, the NicClusterPolicy), or the CSI driver that mounts
  a claim its pods use (a Job on FSx waits for the FSx CSI driver: in wave 0 it would never complete and hold
  every later wave).

Argo CD waits for a child Application to be healthy before the next wave only when it can assess an
Application's health; :data:`APPLICATION_HEALTH_LUA` restores that check (removed from Argo CD 1.8)
and is part of the values of the Argo CD alicerce installs.

The AWS file-system PersistentVolumes (FSx for Lustre, EFS) need volume handles that exist only
after ``pulumi up`` creates the file systems, so they stay Pulumi-owned in every delivery mode; the
claims that bind them (by the volume names, known offline) are in the tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alicerce.emit.kube.common import system_placement
from alicerce.emit.kube.objects import cluster_objects, object_needs
from alicerce.emit.kube.operators import Release, operator_namespace_labels, operator_releases
from alicerce.emit.kube.storage import UNKNOWN_DRIVER
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool
from alicerce.resolve.namespaces import ARGOCD_NAMESPACE

ARGOCD_CHART = "argo-cd"  # catalog chart key
APPLICATION_API = "argoproj.io/v1alpha1"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"  # per-resource sync options
RECREATE = "Force=true,Replace=true"  # delete and create instead of apply
CASCADE_FINALIZER = "resources-finalizer.argocd.argoproj.io"
IN_CLUSTER = "https://kubernetes.default.svc"
PROJECT = "default"
CORE_GROUP = "core"  # the objects of built-in kinds
# the objects' files and the Application files live in these folders of kubernetes/<site>/
APPS_FOLDER = "apps"
OBJECTS_FOLDER = "objects"

# Argo CD 1.8 removed the health assessment of argoproj.io/Application; without it an app of apps
# does not wait for one wave of child Applications to be healthy before the next
# (argo-cd docs/operator-manual/health.md, "Argo CD App").
APPLICATION_HEALTH_LUA = """\
hs = {}
hs.status = "Progressing"
hs.message = ""
if obj.status ~= nil then
  if obj.status.health ~= nil then
    hs.status = obj.status.health.status
    if obj.status.health.message ~= nil then
      hs.message = obj.status.health.message
    end
  end
end
return hs
"""


def deploy_time_tiers(rp: ResolvedPlatform, site_name: str) -> tuple[str, ...]:
    """Tiers of a site whose file system is created at deploy time and mounted by a CSI driver (FSx, EFS).

    Their PersistentVolume source (a volume handle) is a Pulumi output, unknown offline.
    """
    site = rp.site(site_name)
    return tuple(t.name for t in site.storage if (mount := t.mounts.get(site_name)) is not None and mount.source == "")


def _tier_of(obj: Mapping[str, Any]) -> str | None:
    """The storage tier of a PersistentVolume (None for anything else)."""
    if obj["kind"] != "PersistentVolume":
        return None
    tier = obj["metadata"].get("labels", {}).get("alicerce.dev/storage-tier")
    return None if tier is None else str(tier)


def _recreated_on_change(obj: dict[str, Any]) -> dict[str, Any]:
    """A Job whose pod template changes (a team added to the ones a prepare Job creates folders for) cannot be
    applied: ``spec.template`` of a Job is immutable, so the apply fails, the objects Application stays degraded and
    the app of apps stops at its wave. The Pulumi provider replaces such a Job; in Argo CD the per-resource
    sync option ``Force=true,Replace=true`` deletes and recreates it (argo-cd docs/user-guide/sync-options.md,
    "Force Sync", at v3.4.4), and the Application's ``ApplyOutOfSyncOnly=true`` limits that to a Job that changed.
    A team claim is recreated the same way: its spec is immutable, and it changes only when it moves to a new volume
    (:func:`alicerce.emit.kube.storage.volume_name`); the Pulumi provider replaces it too (any ``.spec`` change of a
    PersistentVolumeClaim forces a new one, pulumi-kubernetes provider/pkg/provider/diff.go)."""
    if obj["kind"] not in ("Job", "PersistentVolumeClaim"):
        return obj
    metadata = obj["metadata"]
    annotations = {**metadata.get("annotations", {}), SYNC_OPTIONS: RECREATE}
    return {**obj, "metadata": {**metadata, "annotations": dict(sorted(annotations.items()))}}


def tree_objects(rp: ResolvedPlatform, site_name: str) -> list[dict[str, Any]]:
    """The site's objects as the GitOps tree holds them: all of ``cluster_objects`` but the Pulumi-owned volumes."""
    later = deploy_time_tiers(rp, site_name)
    unknown = {tier: {"csi": {"driver": UNKNOWN_DRIVER, "volumeHandle": UNKNOWN_DRIVER}} for tier in later}  # never reach the tree
    return [_recreated_on_change(o) for o in cluster_objects(rp, site_name, unknown) if _tier_of(o) not in later]


def pulumi_owned_objects(rp: ResolvedPlatform, site_name: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What Pulumi keeps applying at a site Argo CD delivers: the volumes of file systems it created."""
    later = deploy_time_tiers(rp, site_name)
    return [o for o in cluster_objects(rp, site_name, volumes) if _tier_of(o) in later]


def object_group(needs: Iterable[str], waves: Mapping[str, int]) -> str:
    """The Application an object belongs to: the chart key of the latest-wave operator it needs, or ``core``."""
    last = max(waves.values(), default=0)
    return max(needs, key=lambda key: (waves.get(key, last), key), default=CORE_GROUP)


def release_name(site_name: str, release: Release) -> str:
    """The Helm release name, the one the Pulumi layer's chart resource has (``<site>-operators-<key>``),
    so both deliveries name the charts' objects alike."""
    return f"{site_name}-operators-{release.key}"


def release_waves(releases: Sequence[Release]) -> dict[str, int]:
    """Sync wave of each release: 1, or one more than the latest release whose CRDs it uses."""
    waves: dict[str, int] = {}
    for release in releases:  # operator_releases lists dependencies first
        waves[release.key] = 1 + max((waves[d] for d in release.depends_on if d in waves), default=0)
    return waves


def group_waves(groups: Sequence[str], waves: Mapping[str, int]) -> dict[str, int]:
    """Sync wave of each object group: 0 for built-in kinds, one after the operator that owns its CRDs."""
    last = max(waves.values(), default=0)
    return {g: 0 if g == CORE_GROUP else waves.get(g, last) + 1 for g in groups}


@dataclass(frozen=True)
class Repository:
    """Where Argo CD reads a site's generated tree: the spec's gitops section, for one environment."""

    url: str
    revision: str
    site_path: str  # kubernetes/<site>/ of this environment's tree, relative to the repository root

    @classmethod
    def of(cls, rp: ResolvedPlatform, site_name: str) -> Repository | None:
        gitops = rp.spec.gitops
        if gitops.repository is None:
            return None
        base = "/".join(part for part in (gitops.folder.strip("/"), rp.environment, "kubernetes", site_name) if part)
        return cls(gitops.repository, gitops.revision, base)


def _meta(name: str, wave: int | None, labels: Mapping[str, str], finalizer: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ARGOCD_NAMESPACE, "labels": dict(sorted(labels.items()))}
    if wave is not None:
        meta["annotations"] = {SYNC_WAVE: str(wave)}  # Argo CD reads the wave as a string
    if finalizer:
        meta["finalizers"] = [CASCADE_FINALIZER]  # removing the Application removes what it installed
    return meta


def sync_policy(rp: ResolvedPlatform, options: Sequence[str] = (), namespace_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Automated sync with the spec's prune and self-heal.

    Every Application applies server-side, as the Pulumi layer's provider does (``enable_server_side_apply``):
    the same field ownership in both deliveries, and CRDs larger than the 262,144-byte
    ``last-applied-configuration`` annotation (kube-prometheus-stack, KubeRay) apply at all.
    """
    sync = rp.spec.gitops.sync
    policy: dict[str, Any] = {
        "automated": {"prune": sync.prune, "selfHeal": sync.self_heal},
        "syncOptions": sorted({"ServerSideApply=true", *options}),
        "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}},
    }
    if namespace_labels:
        policy["managedNamespaceMetadata"] = {"labels": dict(sorted(namespace_labels.items()))}
    return policy


def _labels(rp: ResolvedPlatform, site_name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "alicerce",
        "alicerce.dev/platform": rp.name,
        "alicerce.dev/environment": rp.environment,
        "alicerce.dev/site": site_name,
    }


def helm_source(release: Release, name: str) -> dict[str, Any]:
    """An Argo CD Helm source: the chart at its pinned version, values inline."""
    # Argo CD takes an OCI registry without its scheme (argo-cd docs/user-guide/helm.md at v3.4.4)
    repo = release.repository.removeprefix("oci://").rstrip("/")
    helm: dict[str, Any] = {"releaseName": name}
    if release.values:
        helm["valuesObject"] = release.values
    return {"repoURL": repo, "chart": release.chart, "targetRevision": release.version, "helm": helm}


def application(
    rp: ResolvedPlatform,
    site_name: str,
    name: str,
    *,
    wave: int | None,
    source: dict[str, Any],
    destination: dict[str, Any],
    policy: dict[str, Any],
    cascade: bool = True,
) -> dict[str, Any]:
    """An Application of the site's Argo CD (``cascade``: removing it removes what it installed)."""
    return {
        "apiVersion": APPLICATION_API,
        "kind": "Application",
        "metadata": _meta(name, wave, _labels(rp, site_name), finalizer=cascade),
        "spec": {"project": PROJECT, "source": source, "destination": {"server": IN_CLUSTER, **destination}, "syncPolicy": policy},
    }


def release_application(
    rp: ResolvedPlatform, site_name: str, release: Release, wave: int, *, owns_namespace: bool = True
) -> dict[str, Any]:
    """``owns_namespace``: the release is the first of its namespace, whose Application creates it and keeps its labels
    (one owner: a later release there, such as the CloudWatch exporter in monitoring, finds it made)."""
    name = release_name(site_name, release)
    options: list[str] = []
    labels: dict[str, str] | None = None
    if release.namespace != "kube-system" and owns_namespace:  # never take over kube-system's metadata
        options.append("CreateNamespace=true")
        labels = operator_namespace_labels(release.namespace, rp.versions.kubernetes)
    return application(
        rp,
        site_name,
        name,
        wave=wave,
        source=helm_source(release, name),
        destination={"namespace": release.namespace},
        policy=sync_policy(rp, options, labels),
    )


def objects_application(rp: ResolvedPlatform, site_name: str, repo: Repository, group: str, wave: int) -> dict[str, Any]:
    # objects of another chart's API group may reach the dry run before that chart's CRDs are served; only what
    # is out of sync is applied, so a Job marked for recreation is recreated only when it changed
    options = ["ApplyOutOfSyncOnly=true"] if group == CORE_GROUP else ["ApplyOutOfSyncOnly=true", "SkipDryRunOnMissingResource=true"]
    return application(
        rp,
        site_name,
        f"{site_name}-objects-{group}",
        wave=wave,
        source={"repoURL": repo.url, "targetRevision": repo.revision, "path": f"{repo.site_path}/{OBJECTS_FOLDER}/{group}"},
        destination={},  # every namespaced object names its namespace
        policy=sync_policy(rp, options),
    )


def root_application(rp: ResolvedPlatform, site_name: str, repo: Repository) -> dict[str, Any]:
    """The app of apps of a site: syncs the Applications under kubernetes/<site>/apps/.

    No cascade finalizer: deleting the root by mistake must not uninstall the platform.
    """
    return application(
        rp,
        site_name,
        f"{site_name}-root",
        wave=None,
        source={"repoURL": repo.url, "targetRevision": repo.revision, "path": f"{repo.site_path}/{APPS_FOLDER}"},
        destination={"namespace": ARGOCD_NAMESPACE},
        policy=sync_policy(rp),
        cascade=False,
    )


@dataclass(frozen=True)
class SiteDelivery:
    """Everything Argo CD needs to deliver one site, from the one pure function of each kind."""

    releases: tuple[Release, ...]
    objects: dict[str, list[dict[str, Any]]]  # group -> objects, in cluster_objects order
    release_waves: dict[str, int]
    group_waves: dict[str, int]

    @classmethod
    def of(cls, rp: ResolvedPlatform, site_name: str) -> SiteDelivery:
        releases = tuple(operator_releases(rp, site_name))
        waves = release_waves(releases)
        groups: dict[str, list[dict[str, Any]]] = {}
        objs = tree_objects(rp, site_name)
        for obj in objs:
            groups.setdefault(object_group(object_needs(rp.site(site_name), obj, objs), waves), []).append(obj)
        return cls(releases, dict(sorted(groups.items())), waves, group_waves(sorted(groups), waves))

    def applications(self, rp: ResolvedPlatform, site_name: str, repo: Repository) -> list[dict[str, Any]]:
        first: dict[str, str] = {}
        for r in sorted(self.releases, key=lambda r: self.release_waves[r.key]):
            first.setdefault(r.namespace, r.key)
        apps = [
            release_application(rp, site_name, r, self.release_waves[r.key], owns_namespace=first[r.namespace] == r.key)
            for r in self.releases
        ]
        apps += [objects_application(rp, site_name, repo, g, self.group_waves[g]) for g in self.objects]
        return apps


def argocd_values(pools: Iterable[ResolvedPool] = ()) -> dict[str, Any]:
    """Values of the argo-cd chart the Pulumi layer installs at a site with ``delivery: argocd`` (``pools``: the site's).

    - ``redisSecretInit.enabled: false``: the chart creates the Redis password Secret ``argocd-redis``
      (key ``auth``) only in a pre-install hook Job, and Pulumi's helm.v4.Chart runs no hooks; the
      Redis Deployment needs that Secret (not optional), so Pulumi creates it (see
      :data:`REDIS_SECRET`) and the hook stays off.
    - the Application health check, so the app of apps honours its sync waves;
    - Dex and notifications off: nothing alicerce writes uses them.
    - ``global.nodeSelector``/``global.tolerations``: on the system pool, like every platform controller (every
      component's template falls back to them: argo-cd 10.1.1 ``<component>.nodeSelector | default
      .Values.global.nodeSelector``). Elsewhere it can land on a Spot data-prep node and go with it, mid-sync.
    """
    values: dict[str, Any] = {
        "redisSecretInit": {"enabled": False},
        "configs": {"cm": {"resource.customizations.health.argoproj.io_Application": APPLICATION_HEALTH_LUA}},
        "dex": {"enabled": False},
        "notifications": {"enabled": False},
    }
    placement = system_placement(pools)
    if placement:
        values["global"] = placement
    return values


REDIS_SECRET = ("argocd-redis", "auth")
"""(name, key) of the Secret the chart's Redis reads its password from (templates/redis/deployment.yaml)."""
