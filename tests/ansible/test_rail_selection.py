"""Rail selection never picks a storage network's port (issue 20, onprem 2 item 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.emit.tree import render_tree
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.ansible.test_filters import F, _hca
from tests.conftest import ROOT

RAILS = [_hca(f"mlx5_{i}", f"0000:{0x1A + i * 0x10:02x}:00.0", layer="Ethernet") for i in range(8)]
# a storage network on the same ConnectX model, same link layer and rate, and first in PCI order
STORAGE = _hca("mlx5_8", "0000:05:00.0", layer="Ethernet")


def test_a_storage_port_like_the_rails_is_never_guessed() -> None:
    """Before: the first eight by PCI address were rails, the storage port among them (renumbered and re-addressed)."""
    with pytest.raises(ValueError, match=r"9 Ethernet adapters at 400 Gb/s for 8 rails: mlx5_8 \(0000:05:00.0\).*railAdapters"):
        F.rails({"infiniband": [STORAGE, *RAILS]}, "roce", 8, 400)
    with pytest.raises(ValueError, match="railAdapters"):
        F.ipoib_plan(
            {"infiniband": [STORAGE, *RAILS]}, ["10.40.0.1/19"] * 8, "rorail", {"technology": "roce", "rails": 8, "rate_gbps": 400}
        )


def test_the_spec_names_the_rails_and_they_alone_are_taken() -> None:
    adapters = [str(r["pci"]) for r in RAILS]
    chosen = F.rails({"infiniband": [STORAGE, *RAILS]}, "roce", 8, 400, adapters)
    assert [r["ibdev"] for r in chosen] == [f"mlx5_{i}" for i in range(8)]
    fabric = {"technology": "roce", "rails": 8, "rate_gbps": 400, "adapters": adapters}
    plan = F.ipoib_plan({"infiniband": [STORAGE, *RAILS]}, [f"10.40.{i * 32}.1/19" for i in range(8)], "rorail", fabric)
    assert "mlx5_8" not in [p["ibdev"] for p in plan] and plan[0]["ibdev"] == "mlx5_0"
    with pytest.raises(ValueError, match=r"0000:ff:00\.0"):
        F.rails({"infiniband": RAILS}, "roce", 8, 400, [*adapters[:7], "0000:ff:00.0"])
    # nothing changes where the extra adapter differs (rate or link layer): the spec need not name anything
    slow = _hca("mlx5_9", "0000:04:00.0", rate=100, layer="Ethernet")
    assert [r["ibdev"] for r in F.rails({"infiniband": [slow, *RAILS]}, "roce", 8, 400)] == [f"mlx5_{i}" for i in range(8)]


def _h100_group_vars(tmp_path: Path, **onprem: list[str]) -> dict[str, Any]:
    """The reference's onprem-h100 group vars with these onprem fields set on the pool."""
    data = yaml.safe_load((ROOT / "platform.yaml").read_text())
    next(p for p in data["nodePools"] if p["name"] == "onprem-h100")["onprem"].update(onprem)
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    files = render_tree(validated(load_file(path, "platform.yaml"), "prod"), subtrees=["ansible"])
    group: dict[str, Any] = yaml.safe_load(files["ansible/group_vars/pool_onprem_h100.yml"])
    return group


def test_rail_adapters_reach_both_roles_from_the_spec(tmp_path: Path) -> None:
    adapters = [f"0000:{0x1A + i * 0x10:02X}:00.0" for i in range(8)]
    group = _h100_group_vars(tmp_path, railAdapters=adapters)
    assert group["rdma_rail_adapters"] == group["node_validation_rail_adapters"] == [a.lower() for a in adapters]


def test_rail_devices_reach_the_rdma_role_from_the_spec(tmp_path: Path) -> None:
    """Before (obsreview40 G-1): railDevices reached only the fabric alerts, so the run never checked them."""
    names = [f"ibp{0x1A + i * 0x10}s0" for i in range(8)]
    assert _h100_group_vars(tmp_path, railDevices=names)["rdma_rail_devices"] == names
