"""The decisions roles take from host facts (ansible/filter_plugins/alicerce_node.py), without hardware."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


F = _load(ROOT / "alicerce" / "ansible" / "filter_plugins" / "alicerce_node.py", "alicerce_node_filters")
FACTS = _load(ROOT / "alicerce" / "ansible" / "library" / "alicerce_node_facts.py", "alicerce_node_facts_module")

TB = 3_840_000_000_000


def disk(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "size_bytes": TB, "partitions": [], "holders": [], "mounted": False, "md_superblock": False, **extra}


def test_pci_counts_gpus_hcas_and_nvswitches_apart_and_ignores_virtual_functions() -> None:
    devices = [
        {"vendor": "0x10de", "class": "0x030200"},
        {"vendor": "0x10de", "class": "0x030200"},
        {"vendor": "0x10de", "class": "0x068000"},
        {"vendor": "0x15b3", "class": "0x020700"},
        {"vendor": "0x15b3", "class": "0x020700", "virtfn": True},
        {"vendor": "0x8086", "class": "0x020000"},
    ]
    assert (F.pci_count(devices, "gpu"), F.pci_count(devices, "nvswitch"), F.pci_count(devices, "hca")) == (2, 1, 1)


def test_kernel_releases_compare_numerically() -> None:
    assert F.kernel_at_least("6.1.0-28-amd64", "5.15")
    assert F.kernel_at_least("5.15.0-91-generic", "5.15")
    assert not F.kernel_at_least("5.4.0-200-generic", "5.15")


def test_scratch_plan_creates_from_spare_disks_only() -> None:
    facts = {"nvme_disks": [disk("nvme1n1"), disk("nvme0n1", partitions=["nvme0n1p1"]), disk("nvme2n1")], "md_arrays": []}
    plan = F.scratch_plan(facts, "scratch", [], 1)
    assert plan["action"] == "create"
    assert plan["devices"] == ["/dev/nvme1n1", "/dev/nvme2n1"]  # the partitioned boot disk is left alone
    assert plan["size_bytes"] == 2 * TB


def test_scratch_plan_never_recreates_an_existing_array() -> None:
    facts = {
        "nvme_disks": [disk("nvme1n1", holders=["md127"], md_superblock=True), disk("nvme2n1", holders=["md127"], md_superblock=True)],
        "md_arrays": [{"device": "md127", "name": "scratch", "members": ["nvme1n1", "nvme2n1"]}],
    }
    assert F.scratch_plan(facts, "scratch", [], 1)["action"] == "keep"
    # the same disks under another array name are still kept, with that array's device
    facts["md_arrays"] = [{"device": "md127", "name": "md127", "members": ["nvme1n1", "nvme2n1"]}]
    plan = F.scratch_plan(facts, "scratch", [], 1)
    assert (plan["action"], plan["device"]) == ("keep", "/dev/md127")


def test_scratch_plan_assembles_stopped_arrays_and_fails_clearly() -> None:
    stopped = {"nvme_disks": [disk("nvme1n1", md_superblock=True)], "md_arrays": []}
    assert F.scratch_plan(stopped, "scratch", [], 1)["action"] == "assemble"
    none = F.scratch_plan({"nvme_disks": [], "md_arrays": []}, "scratch", [], 1)
    assert none["action"] == "fail" and "need at least 1" in none["reason"]
    busy = F.scratch_plan({"nvme_disks": [disk("nvme1n1", mounted=True)], "md_arrays": []}, "scratch", ["nvme1n1"], 1)
    assert busy["action"] == "fail" and "in use" in busy["reason"]
    missing = F.scratch_plan({"nvme_disks": [], "md_arrays": []}, "scratch", ["/dev/nvme9n1"], 1)
    assert missing["action"] == "fail" and "nvme9n1" in missing["reason"]


def _hca(name: str, pci: str, state: str = "4: ACTIVE", rate: int = 400, layer: str = "InfiniBand") -> dict[str, object]:
    return {"name": name, "pci": pci, "netdevs": [], "ports": [{"port": "1", "state": state, "rate_gbps": rate, "link_layer": layer}]}


def test_ipoib_rails_follow_pci_order_not_device_names() -> None:
    facts = {
        "infiniband": [_hca("mlx5_0", "0000:9a:00.0"), _hca("mlx5_1", "0000:1a:00.0"), _hca("roce0", "0000:05:00.0", layer="Ethernet")]
    }
    plan = F.ipoib_plan(facts, ["10.40.0.1/19", "10.40.32.1/19"])
    assert [(p["name"], p["ibdev"], p["address"]) for p in plan] == [
        ("ibrail0", "mlx5_1", "10.40.0.1/19"),
        ("ibrail1", "mlx5_0", "10.40.32.1/19"),
    ]


def test_validation_report_names_every_failed_check() -> None:
    observed = {
        "gpus": [{"driver_version": "580.173.02"}] * 7,
        "nvlink_down": ["GPU 3 link 2"],
        "fabric_states": ["Completed"] * 7,
        "facts": {
            "infiniband": [_hca(f"mlx5_{i}", f"0000:{i:02x}:00.0", rate=200 if i == 0 else 400) for i in range(8)],
            "mounts": [
                {"path": "/scratch", "source": "/dev/md127", "fstype": "xfs", "size_bytes": 10},
                {"path": "/lustre", "fstype": "lustre"},
            ],
        },
    }
    expected = {
        "gpu_count": 8,
        "driver_version": "580.173.02",
        "nvswitch": True,
        "hca_count": 8,
        "hca_rate_gbps": 400,
        "hca_link_layer": "InfiniBand",
        "scratch_path": "/scratch",
        "scratch_min_bytes": 1,
        "mounts": ["/lustre", "/home/shared"],
    }
    failed = F.failed_checks(F.validation_report(observed, expected))
    assert failed == [
        "gpu count: expected 8, found 7",
        "nvlinks up: expected all, found GPU 3 link 2",
        "hca rate: expected 400 Gb/s, found mlx5_0=200",
        "mounted /home/shared: expected mounted, found not mounted",
    ]


def test_validation_fails_when_nvidia_smi_does_not_run() -> None:
    report = F.validation_report({"gpus": None, "nvidia_smi_error": "No such file", "facts": {}}, {"gpu_count": 8})
    assert F.failed_checks(report) == ["gpu count: expected 8, found No such file"]


def test_nvidia_smi_parsers() -> None:
    gpus = F.parse_nvidia_smi_gpus("0, 00000000:18:00.0, 580.173.02, NVIDIA H100 80GB HBM3\n1, 00000000:2A:00.0, 580.173.02, NVIDIA H100\n")
    assert [g["index"] for g in gpus] == ["0", "1"]
    assert F.parse_nvlink_down("GPU 0: H100\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n") == ["GPU 0 link 1"]
    assert F.parse_fabric_states("    Fabric\n        State : Completed\n        Status : Success\n") == ["Completed"]


DEBIAN_CONTAINERD = """version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
"""

DEFAULT_CONTAINERD = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
    runtime_type = "io.containerd.kata.v2"
"""


def test_containerd_edits_depend_on_what_the_config_already_defines() -> None:
    assert F.containerd_config_version(DEBIAN_CONTAINERD) == 2
    assert F.containerd_config_version("[plugins]\n") == 1
    assert F.containerd_systemd_cgroup_edit(DEFAULT_CONTAINERD)["action"] == "replace"
    block = F.containerd_systemd_cgroup_edit(DEBIAN_CONTAINERD)
    assert block["action"] == "block" and "runtimes.runc]" in block["block"]
    nvidia = F.containerd_nvidia_v2_edit(DEFAULT_CONTAINERD, True, "m")
    assert nvidia["default"] == "replace" and "[plugins" not in nvidia["block"].split("runtimes.nvidia]")[0].replace(
        '[plugins."io.containerd.grpc.v1.cri".containerd.', ""
    )
    assert F.containerd_nvidia_v2_edit(DEBIAN_CONTAINERD, True, "m")["default"] == "block"


def test_containerd_edit_is_decided_without_the_roles_own_block() -> None:
    first = F.containerd_nvidia_v2_edit(DEBIAN_CONTAINERD, True, "alicerce x")
    after = DEBIAN_CONTAINERD + "# BEGIN alicerce x\n" + first["block"] + "\n# END alicerce x\n"
    assert F.containerd_nvidia_v2_edit(after, True, "alicerce x") == first  # a re-run writes the same block


def test_kubelet_dropin_for_training_registers_taints() -> None:
    config = F.kubelet_dropin("static", "single-numa-node", {"cpu": "2"}, 110, ["nvidia.com/gpu=true:NoSchedule", "dedicated:NoExecute"])
    assert config["cpuManagerPolicy"] == "static" and config["topologyManagerScope"] == "pod"
    assert config["registerWithTaints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]


def test_facts_module_reads_a_fake_node(tmp_path: Path) -> None:
    from tests.ansible.fakenode import make_fake_node

    make_fake_node(tmp_path, gpus=8, hcas=2, active=1, nvme=2)
    sysfs, proc = tmp_path / "fake" / "sys", tmp_path / "fake" / "proc"
    devices = FACTS.pci_devices(str(sysfs))
    assert (F.pci_count(devices, "gpu"), F.pci_count(devices, "hca"), F.pci_count(devices, "nvswitch")) == (8, 2, 4)
    hcas = FACTS.infiniband(str(sysfs))
    assert [(h["name"], h["pci"], h["ports"][0]["rate_gbps"]) for h in hcas] == [
        ("mlx5_0", "0000:1a:00.0", 400),
        ("mlx5_1", "0000:2a:00.0", 400),
    ]
    arrays = FACTS.md_arrays(str(proc / "mdstat"), str(tmp_path / "dev"))
    assert arrays == [{"device": "md127", "name": "md127", "state": "active", "level": "raid0", "members": ["nvme0n1", "nvme1n1"]}]
    mounts = FACTS.mounts(str(proc), live=False)
    assert {m["path"] for m in mounts} >= {"/scratch", "/lustre"}
    assert FACTS.secure_boot(str(sysfs)) == "unsupported"


@pytest.mark.parametrize("raw", ["400 Gb/sec (4X NDR)", "200 Gb/sec (4X HDR)", "bogus"])
def test_port_rates_parse(raw: str) -> None:
    assert FACTS._rate_gbps(raw) == {"400 Gb/sec (4X NDR)": 400, "200 Gb/sec (4X HDR)": 200, "bogus": 0}[raw]
