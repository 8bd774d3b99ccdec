"""Resolve: the facts every emitter reads are decided once, here, from the spec and the catalog."""

from __future__ import annotations

import json

import pytest

from alicerce.rules.validate import validated
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import load_file, load_text
from tests.conftest import ROOT

REFERENCE = load_file(ROOT / "platform.yaml", "platform.yaml")


def test_reference_prod_pools() -> None:
    prod = validated(REFERENCE, "prod")
    p5 = prod.pool("train-p5")
    assert p5.gpu is not None and p5.gpu.id == "H100-SXM5-80GB"
    assert p5.efa_interfaces == 32
    assert p5.zone == "us-east-1a"
    assert p5.placement_group is False  # capacity reservation: no forced placement group
    assert p5.max_gpus == 128
    onprem = prod.pool("onprem-h100")
    assert len(onprem.hosts) == 32 and onprem.hosts[0] == "gpu-001.dc1.acme.example"
    assert onprem.efa_interfaces == 0
    assert prod.pool("data-prep").gpu is None


def test_dev_overrides_apply() -> None:
    dev = validated(REFERENCE, "dev")
    names = [p.name for p in dev.pools]
    assert "train-p5" not in names and "onprem-h100" not in names and "train-dev" in names
    assert dev.pool("infer-l40s").spec.scaling.max == 2
    datasets = next(t for t in dev.storage if t.name == "datasets")
    assert datasets.fsx is not None and datasets.fsx.capacity_gib == 4800


def test_on_demand_efa_pool_gets_a_placement_group() -> None:
    text = (ROOT / "alicerce/rules/fixtures/_base.yaml").read_text()
    assert validated(load_text(text, "b.yaml"), "prod").pool("train").placement_group is True


def test_tags_carry_platform_environment_and_cost_center() -> None:
    prod = validated(REFERENCE, "prod")
    assert prod.tags == {
        "alicerce.dev/cost-center": "CC-4410",
        "alicerce.dev/environment": "prod",
        "alicerce.dev/platform": "acme-ml",
        "business-unit": "ai-research",
    }
    assert prod.pool("train-p5").labels["alicerce.dev/pool"] == "train-p5"


def test_teams_default_namespace_and_cost_center() -> None:
    teams = {t.name: t for t in validated(REFERENCE, "prod").teams}
    assert teams["research"].namespaces == ("research",)
    assert teams["serving"].namespaces == ("serving", "serving-canary")


def test_storage_implementations_per_site() -> None:
    tiers = {t.name: t for t in validated(REFERENCE, "prod").storage}
    assert tiers["home"].implementations == {"aws": "efs", "dc1": "nfs"}
    assert tiers["dc1-lustre"].implementations == {"dc1": "lustre"}
    assert tiers["datasets"].fsx is not None and tiers["datasets"].fsx.per_unit_throughput == 250


def test_resolved_data_is_deterministic_json() -> None:
    first = json.dumps(validated(REFERENCE, "prod").to_data())
    second = json.dumps(validated(load_file(ROOT / "platform.yaml", "platform.yaml"), "prod").to_data())
    assert first == second
    assert "kubeconfigSecret" in first


def test_resolve_refuses_invalid_environments() -> None:
    text = (ROOT / "alicerce/rules/fixtures/_base.yaml").read_text().replace("max: 4}\n    fabric: efa", "max: 4}\n    fabric: efaa")
    with pytest.raises(SpecInvalid) as info:
        validated(load_text(text, "b.yaml"), "prod")
    assert {e.rule for e in info.value.errors} == {"AL203"}


def test_shared_file_systems_on_prem_mount_nosuid_nodev_last() -> None:
    """Security review of issue 22: a spec's `suid`/`dev` mount options let setuid binaries and device nodes
    on a server the spec names run as root on every node; nosuid,nodev come last, so mount(8) keeps them."""
    text = (ROOT / "platform.yaml").read_text()
    lustre = 'onprem: {implementation: lustre, server: "10.40.31.250@o2ib", filesystem: ai}'
    assert lustre in text
    spec = load_text(text.replace(lustre, lustre[:-1] + ", mountOptions: [suid, dev]}"), "platform.yaml")
    prod = validated(spec, "prod")
    for name in ("dc1-lustre", "home"):
        mount = next(t for t in prod.storage if t.name == name).mounts["dc1"]
        assert mount.options[-2:] == ("nosuid", "nodev"), (name, mount.options)
    assert "suid" in next(t for t in prod.storage if t.name == "dc1-lustre").mounts["dc1"].options  # kept, and overridden


@pytest.mark.parametrize("implementation", ["beegfs", "weka"])
def test_beegfs_and_weka_mount_nosuid_nodev_last(implementation: str) -> None:
    """Issue 22: BeeGFS and Weka tiers mounted with the spec's options alone, so a spec's `suid` or `dev` let setuid
    binaries and device nodes on a server the spec names run as root on a node (Lustre and NFS already closed it)."""
    text = (ROOT / "platform.yaml").read_text()
    lustre = 'onprem: {implementation: lustre, server: "10.40.31.250@o2ib", filesystem: ai}'
    assert lustre in text
    other = f'onprem: {{implementation: {implementation}, server: "mgmt.dc1.example", filesystem: ai, mountOptions: [suid, dev]}}'
    prod = validated(load_text(text.replace(lustre, other), "platform.yaml"), "prod")
    mount = next(t for t in prod.storage if t.name == "dc1-lustre").mounts["dc1"]
    assert mount.kind == implementation
    assert mount.options == ("suid", "dev", "nosuid", "nodev")
