"""Facts a target declares, read by the neutral stages instead of a guess from its name or its spec section.

Each test changes the declared fact alone (the resolved site's capabilities, the resolver's file-system sizing,
the pool's resolved capacity type, the mount facts) and shows the neutral code follows it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from alicerce.catalog import Catalog
from alicerce.catalog.fsx import FsxConfig
from alicerce.emit.kube.objects import object_needs
from alicerce.emit.kube.operators import operator_releases
from alicerce.emit.kube.storage import shared_volumes
from alicerce.plan.platform import plan_platform
from alicerce.plan.pricing import capacity_type
from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.targets import RESOLVERS
from alicerce.spec.models import StorageTier
from tests.conftest import TODAY
from tests.emit.gitops.helpers import reference, reference_data, resolve


def _with_capabilities(rp: ResolvedPlatform, site: str, **changes: Any) -> ResolvedPlatform:
    sites = tuple(
        dataclasses.replace(s, capabilities=dataclasses.replace(s.capabilities, **changes)) if s.name == site else s for s in rp.sites
    )
    return dataclasses.replace(rp, sites=sites)


def test_the_device_plugin_and_csi_charts_are_the_targets_own() -> None:
    rp = reference("prod")
    keys = [r.key for r in operator_releases(rp, "aws")]
    assert "aws-efa-k8s-device-plugin" in keys and "aws-fsx-csi-driver" in keys  # AWS declares them
    bare = _with_capabilities(rp, "aws", csi_charts={}, rdma_device_plugin=None)
    assert not {"aws-efa-k8s-device-plugin", "aws-fsx-csi-driver"} & {r.key for r in operator_releases(bare, "aws")}


def test_a_workload_waits_for_the_csi_chart_its_target_declares() -> None:
    rp = reference("prod")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"volumes": [{"persistentVolumeClaim": {"claimName": "c"}}]},
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c", "namespace": "ns", "labels": {"alicerce.dev/storage-tier": "datasets"}},
    }
    assert object_needs(rp.site("aws"), pod, [pod, claim]) == {"aws-fsx-csi-driver"}
    other = _with_capabilities(rp, "aws", csi_charts={"fsx-lustre": "another-csi"})
    assert object_needs(other.site("aws"), pod, [pod, claim]) == {"another-csi"}


def test_the_capacity_type_is_the_resolved_pools() -> None:
    rp = reference("prod")
    pools = {p.name: p for p in rp.pools}
    assert (pools["data-prep"].capacity_type, pools["train-p5"].capacity_type) == ("spot", "capacity-reservation")
    assert pools["onprem-h100"].capacity_type == "on-demand"  # the default where the target decides none
    # plan prices what resolve decided, not the pool's aws: section
    assert capacity_type(dataclasses.replace(pools["data-prep"], capacity_type="capacity-block")) == "capacity-block"


def test_nfs_volumes_come_from_the_resolved_mount_not_the_spec() -> None:
    rp = reference("prod")
    home = next(t for t in rp.storage if t.name == "home")
    moved = dataclasses.replace(
        home, mounts={**home.mounts, "dc1": dataclasses.replace(home.mounts["dc1"], source="nfs2.example:/srv/home")}
    )
    sites = tuple(
        dataclasses.replace(s, storage=tuple(moved if t.name == "home" else t for t in s.storage)) if s.name == "dc1" else s
        for s in rp.sites
    )
    rp = dataclasses.replace(rp, sites=sites)
    sources = [v["spec"]["nfs"] for v in shared_volumes(rp, "dc1", {}) if v["kind"] == "PersistentVolume" and "nfs" in v["spec"]]
    assert sources and all(s["server"] == "nfs2.example" and s["path"].startswith("/srv/home") for s in sources)


def test_file_system_sizing_is_the_targets_decision_in_resolve_and_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolve sizes FSx once through the AWS target; plan asks the same target for the workloads' need."""
    calls: list[tuple[str, float | None, bool]] = []
    real = RESOLVERS["aws"]

    def recording(tier: StorageTier, implementation: str, catalog: Catalog, bps: float | None, pinned: bool) -> FsxConfig | None:
        calls.append((tier.name, bps, pinned))
        return real.file_system(tier, implementation, catalog, bps, pinned)

    monkeypatch.setitem(RESOLVERS, "aws", dataclasses.replace(real, file_system=recording))
    rp = resolve(reference_data(), "prod")  # resolved afresh (reference() is cached)
    assert {(name, pinned) for name, _, pinned in calls} >= {("datasets", True), ("checkpoints", True)}
    calls.clear()
    plan = plan_platform(rp, today=TODAY)
    planned = {t.name: t for t in plan.storage}
    sized = [(name, bps) for name, bps, pinned in calls if not pinned]
    assert sized and all(planned[name].fsx is not None for name, _ in sized)
    assert {name for name, _ in sized} == {t.name for t in plan.storage if t.fsx is not None}


def test_the_stack_asks_for_the_admin_principals_its_cloud_declares(monkeypatch: pytest.MonkeyPatch) -> None:
    import alicerce.targets
    from alicerce.emit.pulumi.stack import StackSettings

    rp = reference("prod")
    problem = next(p for p in StackSettings((), ("10.0.0.0/8",), ("cloud",)).problems(rp) if "adminPrincipals" in p)
    assert problem == (
        "alicerce:adminPrincipals names no IAM role: the cluster grants admin only through explicit access entries, so the role "
        "that runs the Kubernetes layer must be listed (pulumi config set --path 'alicerce:adminPrincipals[0]' "
        "arn:aws:iam::<account>:role/<deployer>)"
    )
    aws = alicerce.targets.target("aws")
    assert aws.cloud is not None
    other = dataclasses.replace(aws, cloud=dataclasses.replace(aws.cloud, admin_principal_kind="group", admin_principal_example="g"))
    monkeypatch.setattr(alicerce.targets, "TARGETS", tuple(other if t.name == "aws" else t for t in alicerce.targets.TARGETS))
    problem = next(p for p in StackSettings((), ("10.0.0.0/8",), ("cloud",)).problems(rp) if "adminPrincipals" in p)
    assert "names no group:" in problem and problem.endswith("'alicerce:adminPrincipals[0]' g)")
    without = dataclasses.replace(aws, cloud=None)  # a target with no cloud account: nothing to grant
    monkeypatch.setattr(alicerce.targets, "TARGETS", tuple(without if t.name == "aws" else t for t in alicerce.targets.TARGETS))
    assert not any("adminPrincipals" in p for p in StackSettings((), ("10.0.0.0/8",), ("cloud",)).problems(rp))


def test_rdma_rate_and_host_stack_are_resolved_attachment_facts() -> None:
    from alicerce.emit.kube.operators import _driver_rdma
    from alicerce.plan.placement import network_gbps_per_gpu

    rp = reference("prod")
    pool = rp.pool("onprem-h100")
    assert pool.rdma is not None and (pool.rdma.rate_gbps, pool.rdma.host_stack) == (400, "rdma-core")  # the on-prem resolver's
    faster = dataclasses.replace(pool, rdma=dataclasses.replace(pool.rdma, rate_gbps=800))
    assert network_gbps_per_gpu(faster, 25) == 2 * network_gbps_per_gpu(pool, 25)  # plan reads the resolved rate
    # the GPU Operator's useHostMofed follows the hosts' resolved RDMA software, not the fabric's on-prem section
    ofed = dataclasses.replace(pool, rdma=dataclasses.replace(pool.rdma, host_stack="doca-ofed"))
    assert (_driver_rdma([pool])["useHostMofed"], _driver_rdma([ofed])["useHostMofed"]) == (False, True)


def test_a_tier_kind_a_target_does_not_implement_is_not_built_there() -> None:
    """A new tier kind is one record plus its own code: a target that lists no implementation for it says None."""
    from types import SimpleNamespace

    new_kind: Any = SimpleNamespace(class_="new-kind", name="t")
    assert RESOLVERS["aws"].implementation(new_kind) is None  # before: CAPABILITIES.storage[...] raised KeyError


def test_a_team_volume_below_the_root_takes_the_subdirectory_form_its_driver_declares(monkeypatch: pytest.MonkeyPatch) -> None:
    from alicerce.emit.kube import storage
    from alicerce.targets.base import CsiSubdirectory

    declared = {d: f for r in RESOLVERS.values() for d, f in r.capabilities.csi_subdirectories.items()}
    assert declared == storage.CSI_SUBDIRECTORIES and {"fsx.csi.aws.com", "efs.csi.aws.com"} <= set(declared)
    other = {"csi": {"driver": "files.example.com", "volumeHandle": "vol-1"}}
    with pytest.raises(ValueError, match="no subdirectory form"):
        storage._below(other, "research")
    monkeypatch.setitem(storage.CSI_SUBDIRECTORIES, "files.example.com", CsiSubdirectory(handle_separator="#"))
    assert storage._below(other, "research")["csi"]["volumeHandle"] == "vol-1#research"
