"""Day 2 of the static team volumes (issue 21, Kubernetes defects 3 and 4): what the next `pulumi up` or Argo CD
sync does to the PersistentVolumes and claims after a file system grows or a tier's volume source changes.

Kubernetes' update validation (pkg/apis/core/validation, ValidatePersistentVolumeUpdate and
ValidatePersistentVolumeClaimUpdate at 1.35): a PersistentVolume's source and node affinity never change; a
claim's spec never changes but for a larger ``resources.requests`` through a StorageClass that allows expansion
(``storageClassName: ""`` has none). An update that breaks either is refused, and the deployment stops there.
"""

from __future__ import annotations

from typing import Any

import pytest

from alicerce.emit.errors import EmitError
from alicerce.emit.kube.objects import cluster_objects
from alicerce.emit.kube.storage import _below
from alicerce.resolve.model import ResolvedPlatform
from alicerce.run.diff import diff_environment
from tests.emit.gitops.helpers import reference, variant

VOLUMES = {
    "datasets": {
        "csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1", "volumeAttributes": {"dnsname": "a.example", "mountname": "abc"}}
    },
    "checkpoints": {
        "csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-2", "volumeAttributes": {"dnsname": "b.example", "mountname": "def"}}
    },
    "home": {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": "fs-3"}},
}
# the fields of a PersistentVolume spec an update may change (everything else is its source or node affinity)
PV_MUTABLE = {"capacity", "accessModes", "mountOptions", "claimRef", "persistentVolumeReclaimPolicy", "storageClassName", "volumeMode"}


def _volumes(rp: ResolvedPlatform) -> dict[tuple[str, str, str | None, str], dict[str, Any]]:
    out = {}
    for site in rp.sites:
        for obj in cluster_objects(rp, site.name, VOLUMES if site.name == "aws" else {}):  # file systems Pulumi made at aws
            if obj["kind"] in ("PersistentVolume", "PersistentVolumeClaim"):
                out[(site.name, obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])] = obj
    return out


def refused_updates(
    before: dict[Any, dict[str, Any]],
    after: dict[Any, dict[str, Any]],
    kinds: tuple[str, ...] = ("PersistentVolume", "PersistentVolumeClaim"),
) -> list[str]:
    """The updates of objects kept by name that the API server refuses."""
    refused = []
    for key in sorted((k for k in set(before) & set(after) if k[1] in kinds), key=str):
        old, new = before[key]["spec"], after[key]["spec"]
        if key[1] == "PersistentVolume":
            changed = {k for k in set(old) | set(new) if old.get(k) != new.get(k)} - PV_MUTABLE
            if changed:
                refused.append(f"{key}: immutable {sorted(changed)}")
        elif old != new:
            grew = {k: v for k, v in old.items() if k != "resources"} == {k: v for k, v in new.items() if k != "resources"}
            if not grew or old.get("storageClassName", "") == "":  # no StorageClass: nothing may expand it
                refused.append(f"{key}: claim spec changed")
    return refused


def _grow(data: dict[str, Any]) -> None:
    for tier in data["storage"]:
        if tier["name"] == "datasets":
            tier["capacity"] = "96TiB"
        if tier["name"] == "dc1-lustre":
            tier["capacity"] = "4PiB"


def test_growing_file_systems_changes_no_claim_and_only_mutable_volume_fields() -> None:
    before, after = _volumes(reference("prod")), _volumes(variant(_grow))
    assert set(before) == set(after)
    assert refused_updates(before, after) == []
    # the volumes do carry the new size, and every claim still fits in its volume (binding by volumeName)
    grown = [k for k in after if k[1] == "PersistentVolume" and before[k]["spec"]["capacity"] != after[k]["spec"]["capacity"]]
    assert grown and any("datasets" in k[3] for k in grown) and any("dc1-lustre" in k[3] for k in grown)


def test_the_check_refuses_a_claim_whose_request_follows_the_size() -> None:
    before, after = _volumes(reference("prod")), _volumes(variant(_grow))
    key = next(k for k in after if k[1] == "PersistentVolumeClaim")
    after[key] = {**after[key], "spec": {**after[key]["spec"], "resources": {"requests": {"storage": "99Ti"}}}}
    assert refused_updates(before, after) == [f"{key}: claim spec changed"]


def _new_sources(data: dict[str, Any]) -> None:
    for tier in data["storage"]:
        if tier["name"] == "home":
            tier["onprem"]["export"] = "/export/home2"  # dc1's NFS export
    for team in data["tenancy"]["teams"]:
        if team["name"] == "applied-ml":
            for grant in team["storageAccess"]:
                if grant["tier"] == "data-lake":
                    grant["prefix"] = "curated-v2/"  # the FSx datasets file system links data-lake


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_new_volume_source_makes_new_volumes_the_claims_move_to_and_diff_says_so() -> None:
    old, new = reference("prod"), variant(_new_sources)
    before, after = _volumes(old), _volumes(new)
    # no volume is updated in place (its source is immutable: the update is refused, and a replacement under the same
    # name waits forever on its bound claim); claims are replaced, both deliveries do (tests/emit/gitops/test_argocd.py)
    assert refused_updates(before, after, ("PersistentVolume",)) == []
    moved = [k for k in set(before) & set(after) if k[1] == "PersistentVolumeClaim" and before[k]["spec"] != after[k]["spec"]]
    assert {(k[0], k[2], k[3]) for k in moved} >= {
        ("dc1", "research", "home"),
        ("dc1", "applied-ml", "home"),
        ("aws", "applied-ml", "datasets"),
    }
    for key in moved:  # each moved claim binds a volume that did not exist before, and its old volume is gone from the spec
        was, now = before[key]["spec"]["volumeName"], after[key]["spec"]["volumeName"]
        assert (key[0], "PersistentVolume", None, now) not in before and (key[0], "PersistentVolume", None, was) not in after
        assert after[(key[0], "PersistentVolume", None, now)]["spec"]["claimRef"] == {"namespace": key[2], "name": key[3]}
    # unchanged sources keep their volumes: research's datasets claim (no prefix) and the checkpoints claims
    assert (
        before[("aws", "PersistentVolumeClaim", "research", "checkpoints")]
        == after[("aws", "PersistentVolumeClaim", "research", "checkpoints")]
    )
    result = diff_environment("prod", old, new, plan=None)
    warned = " ".join(result.warnings)
    assert "claim applied-ml/home at dc1 moves from volume" in warned and "claim applied-ml/datasets at aws moves" in warned
    assert "stop them first" in warned


def test_argo_cd_recreates_a_claim_that_moves_as_pulumi_replaces_it() -> None:
    """A claim's spec is immutable: Argo CD's apply of a moved claim is refused unless it deletes and creates it."""
    from alicerce.emit.gitops.argocd import RECREATE, SYNC_OPTIONS, tree_objects

    claims = [o for o in tree_objects(reference("prod"), "dc1") if o["kind"] == "PersistentVolumeClaim"]
    assert claims and all(c["metadata"]["annotations"][SYNC_OPTIONS] == RECREATE for c in claims)


@pytest.mark.parametrize("sub", ["research/..", "..", "research//x", "./research"])
def test_a_team_volume_never_climbs_out_of_the_file_system_directory(sub: str) -> None:
    """Security review of issue 22 (defence in depth behind the ObjectPrefix grammar): a grant's prefix becomes the
    subdirectory of a team's volume on a linked file system; one with '..' would mount the root, every team's files."""
    fsx = {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1", "volumeAttributes": {"mountname": "fsx"}}}
    assert _below(fsx, "research")["csi"]["volumeAttributes"]["mountname"] == "fsx/research"
    with pytest.raises(EmitError, match="would leave the directory"):
        _below(fsx, sub)


def test_a_team_cannot_delete_the_claim_its_static_volume_is_bound_to() -> None:
    """Issue 21: a deleted claim left its static volume Released for good (Retain; the PV controller keeps the old
    claim's uid in claimRef) and the claim Argo CD or Pulumi re-made Pending beside it. Team members may delete
    their own dynamic claims, not alicerce's; the platform's deletions (not made as a team group) pass."""
    from tests.emit.kube.cluster_model import admission_denials

    rp = reference("prod")
    objs = cluster_objects(rp, "dc1")
    [claim] = [
        o
        for o in objs
        if o["kind"] == "PersistentVolumeClaim" and o["metadata"] == {**o["metadata"], "name": "home", "namespace": "research"}
    ]
    team = next(t for t in rp.site("dc1").teams if t.name == "research")
    member = tuple(team.spec.groups)

    def denials(obj: dict[str, Any], groups: tuple[str, ...]) -> list[str]:
        return admission_denials(objs, "research", obj, resource="persistentvolumeclaims", operation="DELETE", user_groups=groups)

    [message] = denials(claim, member)
    assert "Released" in message
    own = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "scratch", "namespace": "research"}}
    assert denials(own, member) == []  # a team's own claim
    assert denials(claim, ("system:serviceaccounts", "system:serviceaccounts:kube-system")) == []  # the namespace controller
    assert denials(claim, (*member, "kubeadm:cluster-admins")) == []  # an administrator who is also in the team
    # creating claims is untouched
    assert admission_denials(objs, "research", claim, resource="persistentvolumeclaims", user_groups=member) == []


def test_a_team_cannot_unlabel_the_claim_its_static_volume_is_bound_to() -> None:
    """Issue 21: the claims guard matched only DELETE and keyed on the tier label, which teams may update
    (``kubectl label pvc home alicerce.dev/storage-tier-`` then ``kubectl delete pvc home`` passed). Removing or
    changing the label is refused to team members; their other updates, and the platform's, pass."""
    import copy

    from alicerce.emit.kube.storage import TIER_LABEL
    from tests.emit.kube.cluster_model import admission_denials

    rp = reference("prod")
    objs = cluster_objects(rp, "dc1")
    [claim] = [
        o
        for o in objs
        if o["kind"] == "PersistentVolumeClaim" and o["metadata"] == {**o["metadata"], "name": "home", "namespace": "research"}
    ]
    member = tuple(next(t for t in rp.site("dc1").teams if t.name == "research").spec.groups)

    def update(new: dict[str, Any], groups: tuple[str, ...] = member) -> list[str]:
        return admission_denials(
            objs, "research", new, resource="persistentvolumeclaims", operation="UPDATE", user_groups=groups, old=claim
        )

    unlabelled = copy.deepcopy(claim)
    del unlabelled["metadata"]["labels"][TIER_LABEL]
    [message] = update(unlabelled)
    assert TIER_LABEL in message
    relabelled = copy.deepcopy(claim)
    relabelled["metadata"]["labels"][TIER_LABEL] = "scratch"
    assert len(update(relabelled)) == 1
    bare = copy.deepcopy(claim)
    del bare["metadata"]["labels"]
    assert len(update(bare)) == 1
    annotated = copy.deepcopy(claim)
    annotated["metadata"]["annotations"] = {"note": "ours"}
    annotated["metadata"]["labels"]["owner"] = "alice"
    assert update(annotated) == []  # other updates of the claim pass
    assert update(unlabelled, ("system:serviceaccounts", "system:serviceaccounts:kube-system")) == []  # the platform
    assert update(unlabelled, (*member, "system:masters")) == []  # an administrator who is also in the team
    own = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "scratch", "namespace": "research"}}
    labelled = {**own, "metadata": {**own["metadata"], "labels": {"app": "x"}}}
    assert (
        admission_denials(objs, "research", labelled, resource="persistentvolumeclaims", operation="UPDATE", user_groups=member, old=own)
        == []
    )  # a team's own claim


@pytest.mark.parametrize("site", ["aws", "dc1"])
def test_a_removed_team_takes_its_volumes_along_and_leaves_its_data(site: str) -> None:
    """The lifecycle of a team's static volumes: removing the team from the spec removes its namespace, its claims
    and their PersistentVolumes together (Pulumi deletes what leaves its program; Argo CD prunes what leaves the
    tree: automated prune is on), so no volume is left Released; each volume is Retain, and a static volume's
    delete never touches the file system: the team's directory and its data stay for an administrator to archive."""
    rp = reference("prod")
    gone = "applied-ml"
    before = _volumes(rp)
    text_rp = variant(lambda data: _drop_team(data, gone))
    after = _volumes(text_rp)
    removed = {k for k in set(before) - set(after) if k[0] == site}
    claims = {k for k in removed if k[1] == "PersistentVolumeClaim"}
    assert claims and all(k[2] == gone for k in claims)
    bound = {before[k]["spec"]["volumeName"] for k in claims}
    assert bound == {k[3] for k in removed if k[1] == "PersistentVolume"}  # each claim's volume goes with it
    assert all(before[(site, "PersistentVolume", None, name)]["spec"]["persistentVolumeReclaimPolicy"] == "Retain" for name in bound)
    assert refused_updates(before, after) == []  # nothing else changes


def _drop_team(data: dict[str, Any], team: str) -> None:
    data["tenancy"]["teams"] = [t for t in data["tenancy"]["teams"] if t["name"] != team]
    for env in data.get("environments", {}).values():
        teams = env.get("tenancy", {}).get("teams")
        if teams:
            env["tenancy"]["teams"] = [t for t in teams if t["name"] != team]
    data["workloads"] = [w for w in data["workloads"] if w.get("team") != team]
