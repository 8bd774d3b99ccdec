"""The decisions roles take from host facts and tool outputs (filter_plugins/), without hardware.

Tool outputs are fixtures written from each tool's documented format (tests/ansible/fixtures/tools).
"""

from __future__ import annotations

import importlib.util
import json
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
A = _load(ROOT / "alicerce" / "ansible" / "filter_plugins" / "alicerce_acceptance.py", "alicerce_acceptance_filters")
TOOLS = ROOT / "tests" / "ansible" / "fixtures" / "tools"
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


def test_a_rail_keeps_its_own_interface_beside_representors_and_another_port() -> None:
    """Review obsreview44 N-4: the first interface by name was taken as the rail's, so a switchdev representor
    (ens1f0npf0vf0 sorts before rorail0) or a dual-port adapter's other port (ib1 before ibrail0) was renamed, and the
    node drained for it, at every run."""

    def netdev(name: str, netdevs: list[str], layer: str = "InfiniBand") -> str:
        hca = {**_hca("mlx5_0", "0000:1a:00.0", layer=layer), "netdevs": netdevs}
        prefix = "ibrail" if layer == "InfiniBand" else "rorail"
        plan = F.ipoib_plan({"infiniband": [hca]}, [], prefix, {"technology": "infiniband" if layer == "InfiniBand" else "roce"})
        assert plan[0]["name"] == name
        return str(plan[0]["netdev"])

    assert netdev("rorail0", ["ens1f0npf0vf0", "ens1f0npf0vf1", "rorail0"], "Ethernet") == "rorail0"
    assert netdev("rorail0", ["ens1f0npf0sf88", "ens1f0np0"], "Ethernet") == "ens1f0np0"  # renamed once, then kept
    assert netdev("ibrail0", ["ib1", "ibrail0"]) == "ibrail0"
    assert netdev("ibrail0", ["ib0", "ib1"]) == "ib0"
    assert netdev("ibrail0", []) == ""  # an InfiniBand port without IPoIB: nothing to rename


def _expected(**extra: object) -> dict[str, object]:
    return {
        "gpu_count": 8,
        "driver_version": "580.173.02",
        "nvswitch": True,
        "pcie_generation": 5,
        "pcie_width": 16,
        "hca_count": 8,
        "hca_rate_gbps": 400,
        "hca_link_layer": "InfiniBand",
        "scratch_path": "/scratch",
        "scratch_min_bytes": 1,
        "mounts": ["/lustre", "/home/shared"],
        **extra,
    }


def _observed(**extra: object) -> dict[str, object]:
    facts = {
        "infiniband": [_hca(f"mlx5_{i}", f"0000:{i:02x}:00.0") for i in range(8)],
        "mounts": [
            {"path": "/scratch", "source": "/dev/md127", "fstype": "xfs", "size_bytes": 10},
            {"path": "/lustre", "fstype": "lustre"},
            {"path": "/home/shared", "fstype": "nfs4"},
        ],
    }
    return {
        "gpus": A.parse_gpu_query((TOOLS / "nvidia-smi-query-gpu.csv").read_text()),
        "remapped_rows": A.parse_remapped_rows((TOOLS / "nvidia-smi-remapped-rows.csv").read_text()),
        "kernel_log": _journal("journal-kernel-clean.txt"),
        "nvlink_down": [],
        "fabric_states": ["Completed"] * 8,
        "facts": facts,
        "rails": F.rails(facts, "infiniband", 8, 400),
        **extra,
    }


def test_acceptance_passes_a_healthy_node_recorded_from_the_real_tools() -> None:
    report = A.acceptance_report(_observed(), _expected())
    assert A.failed_checks(report) == []
    names = [c["check"] for c in report]
    for check in (
        "persistence mode",
        "ecc mode",
        "pcie generation",
        "pcie width",
        "row remapping",
        "xid since boot",
        "fabric manager state",
    ):
        assert check in names
    assert all({"expected", "actual", "ok"} <= set(c) for c in report)  # threshold and measured value, every check


def test_acceptance_names_every_failed_check() -> None:
    facts = {
        "infiniband": [_hca(f"mlx5_{i}", f"0000:{i:02x}:00.0", rate=200 if i == 0 else 400) for i in range(8)],
        "mounts": [
            {"path": "/scratch", "source": "/dev/md127", "fstype": "xfs", "size_bytes": 10},
            {"path": "/lustre", "fstype": "lustre"},
        ],
    }
    observed = _observed(
        gpus=A.parse_gpu_query((TOOLS / "nvidia-smi-query-gpu-degraded.csv").read_text())[:7],
        remapped_rows=A.parse_remapped_rows((TOOLS / "nvidia-smi-remapped-rows-pending.csv").read_text()),
        kernel_log=_journal("journal-kernel-xid.txt"),
        nvlink_down=["GPU 3 link 2"],
        facts=facts,
        rails=F.rails(facts, "infiniband", 8, 400),
    )
    assert A.failed_checks(A.acceptance_report(observed, _expected())) == [
        "gpu count: expected 8, found 7",
        "persistence mode: expected Enabled, found off on GPU 3",
        "ecc uncorrected errors: expected 0, found GPU 3=2",
        "pcie width: expected x16, found GPU 3=x8",
        "row remapping: expected no pending, failed or uncorrectable, found 00000000:AB:00.0",
        "xid since boot: expected none (hardware or driver), found 0000:5d:00: Xid 79",  # Xid 13 is the application's
        "nvlinks up: expected all, found GPU 3 link 2",
        "hca rate: expected 400 Gb/s, found mlx5_0=200",
        "mounted /home/shared: expected mounted, found not mounted",
    ]


def _journal(fixture: str) -> dict[str, object]:
    return A.kernel_log([{"rc": 0, "stdout": (TOOLS / fixture).read_text(), "cmd": ["journalctl", "-k"]}])


# What `ansible.builtin.command` registers for a program that is not installed (seen on a real node).
_NOT_INSTALLED = {"rc": 2, "cmd": ["journalctl", "-k", "-b"], "msg": "[Errno 2] No such file or directory: b'journalctl'", "failed": True}


def _one_h200(**extra: object) -> dict[str, object]:
    """What the role observed on a real H200 node (tests/ansible/fixtures/tools/SOURCE.yaml)."""
    return {
        "gpus": A.parse_gpu_query((TOOLS / "nvidia-smi-query-gpu-1xH200.csv").read_text()),
        "remapped_rows": A.parse_remapped_rows((TOOLS / "nvidia-smi-remapped-rows-1xH200.csv").read_text()),
        "fabric_states": A.parse_fabric_states((TOOLS / "nvidia-smi-q-1xH200.txt").read_text()),
        "facts": {"infiniband": [], "mounts": []},
        **extra,
    }


def test_acceptance_of_a_real_h200_node_reads_the_ring_buffer_where_the_journal_is_missing() -> None:
    expected = {"gpu_count": 1, "driver_version": "580.159.04", "pcie_generation": 5, "pcie_width": 16}
    boot = "[    0.000000] Linux version 6.18.44 (root@build) #1 SMP PREEMPT_DYNAMIC\n"
    ring_buffer = {"rc": 0, "stdout": boot + "[    5.1] nvidia: loading out-of-tree module\n", "cmd": ["dmesg"]}
    report = A.acceptance_report(_one_h200(kernel_log=A.kernel_log([_NOT_INSTALLED, ring_buffer])), expected)
    assert A.failed_checks(report) == []
    assert {c["check"]: c["actual"] for c in report}["pcie generation"] == "gen5"


def test_an_unread_kernel_log_is_an_unknown_xid_state_not_a_clean_one() -> None:
    """On the real H200 node journalctl was not installed and the check read "none": a false pass."""
    skipped = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    for results in ([_NOT_INSTALLED, skipped], [_NOT_INSTALLED, {"rc": 1, "cmd": ["dmesg"], "stderr": "dmesg: read kernel buffer failed"}]):
        report = A.acceptance_report(_one_h200(kernel_log=A.kernel_log(results)), {"gpu_count": 1})
        (failed,) = A.failed_checks(report)
        assert failed.startswith("xid since boot: expected none (hardware or driver), found unknown: journalctl -k -b: [Errno 2]")
    assert "dmesg: dmesg: read kernel buffer failed" in failed


def test_an_empty_journal_is_not_a_clean_one() -> None:
    """A volatile or rotated journal answers rc 0 with nothing of this boot: the ring buffer is read instead."""
    empty = {"rc": 0, "stdout": "-- No entries --\n", "cmd": ["journalctl", "-k", "-b"]}
    ring_buffer = {"rc": 0, "stdout": (TOOLS / "journal-kernel-xid.txt").read_text(), "cmd": ["dmesg"]}
    assert [x["xid"] for x in A.kernel_log([empty, ring_buffer])["xids"]] == [13, 79]
    alone = A.kernel_log([empty, {"skipped": True}])
    assert alone == {"xids": None, "error": "journalctl -k -b: no longer holds the start of this boot"}


def test_a_wrapped_ring_buffer_is_not_a_clean_kernel_log() -> None:
    """storreview: after days of uptime the ring buffer starts at [259200.1]: an XID of the first hours is gone."""
    wrapped = {"rc": 0, "stdout": "[259200.100000] eth0: link up\n[259201.2] nvidia-peermem: loaded\n", "cmd": ["dmesg"]}
    log = A.kernel_log([_NOT_INSTALLED, wrapped])
    assert log["xids"] is None and "dmesg: no longer holds the start of this boot" in log["error"]


def test_fabric_manager_state_of_a_gpu_without_nvswitch_fails_a_pool_that_expects_one() -> None:
    report = A.acceptance_report(
        _one_h200(kernel_log=_journal("journal-kernel-clean.txt"), nvlink_down=[]), {"gpu_count": 1, "nvswitch": True}
    )
    assert A.failed_checks(report) == ["fabric manager state: expected Completed on every GPU, found N/A"]


def test_acceptance_fails_when_nvidia_smi_does_not_run() -> None:
    report = A.acceptance_report({"gpus": None, "nvidia_smi_error": "No such file", "facts": {}}, {"gpu_count": 8})
    assert A.failed_checks(report) == ["gpu count: expected 8, found No such file"]


def test_burn_in_floors_against_recorded_dcgmi_nccl_ib_write_bw_and_nvbandwidth() -> None:
    expected = _expected(dcgm_diag_level=2, nccl_busbw_gbps=315.0, p2p_bw_gbps=315.0, ib_write_bw_gbps=360.0, hca_count=2)
    healthy = _observed(
        dcgm_diag=A.parse_dcgm_diag((TOOLS / "dcgmi-diag-r2-pass.json").read_text()),
        nccl_busbw_gbps=A.parse_all_reduce((TOOLS / "all_reduce_perf-8xH100.txt").read_text())["busbw_gbps"],
        p2p_bw_gbps=A.parse_nvbandwidth((TOOLS / "nvbandwidth-d2d-write.txt").read_text()),
        ib_write_bw={"mlx5_0": A.parse_ib_write_bw((TOOLS / "ib_write_bw-mlx5_0.txt").read_text()), "mlx5_1": 391.0},
    )
    healthy["rails"] = healthy["rails"][:2]  # type: ignore[index]
    assert A.failed_checks(A.acceptance_report(healthy, expected)) == []
    broken = {
        **healthy,
        "dcgm_diag": A.parse_dcgm_diag((TOOLS / "dcgmi-diag-r2-fail.json").read_text()),
        "nccl_busbw_gbps": A.parse_all_reduce((TOOLS / "all_reduce_perf-8xH100-slow.txt").read_text())["busbw_gbps"],
        "ib_write_bw": {"mlx5_0": 391.88, "mlx5_3": A.parse_ib_write_bw((TOOLS / "ib_write_bw-mlx5_3-slow.txt").read_text())},
    }
    assert A.failed_checks(A.acceptance_report(broken, expected)) == [
        "dcgmi diag level 2: expected pass, found GPU Memory gpu 6",  # the PCIe replay warning does not fail the node
        "nccl all-reduce busbw in node: expected >= 315.0 GB/s, found 251.32 GB/s",
        "ib_write_bw per rail: expected >= 360.0 Gb/s, found mlx5_3=198.72",
    ]


def test_tool_parsers_read_the_documented_formats() -> None:
    nccl = A.parse_all_reduce((TOOLS / "all_reduce_perf-8xH100.txt").read_text())
    assert (nccl["busbw_gbps"], nccl["average_gbps"], nccl["bytes"]) == (418.14, 358.792, 8589934592)
    assert A.parse_ib_write_bw((TOOLS / "ib_write_bw-mlx5_0.txt").read_text()) == 391.88
    assert A.parse_nvbandwidth((TOOLS / "nvbandwidth-d2d-write.txt").read_text()) == 389.12
    assert A.parse_nvbandwidth("Running host_to_device_memcpy_ce.\n") == 0.0
    diag = A.parse_dcgm_diag((TOOLS / "dcgmi-diag-r2-fail.json").read_text())
    assert (diag["result"], diag["failed"], diag["warnings"]) == ("fail", ["GPU Memory gpu 6"], ["PCIe gpu 1"])
    assert A.parse_dcgm_diag("Error: unable to connect to host engine")["result"] == "error"
    addresses = A.parse_ip_addresses((TOOLS / "ip-addr-rails.json").read_text())
    assert addresses["ibrail0"] == ["10.40.0.1/19"] and addresses["ibrail1"] == []
    node = A.parse_node((TOOLS / "kubectl-node-ready.json").read_text())
    assert node["ready"] and node["allocatable"]["nvidia.com/gpu"] == "8"
    assert A.parse_nvlink_down("GPU 0: H100\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n") == ["GPU 0 link 1"]
    assert A.parse_fabric_states("    Fabric\n        State : Completed\n        Status : Success\n") == ["Completed"]


def test_rail_addresses_and_node_allocatable_are_checked() -> None:
    expected = _expected(rail_addresses=["10.40.0.1/19", "10.40.32.1/19"], allocatable={"nvidia.com/gpu": "8", "rdma/ib": "8"})
    observed = _observed(
        addresses=A.parse_ip_addresses((TOOLS / "ip-addr-rails.json").read_text()),
        node=A.parse_node((TOOLS / "kubectl-node-ready.json").read_text()),
    )
    assert A.failed_checks(A.acceptance_report(observed, expected)) == [
        "rail addresses: expected 10.40.0.1/19, 10.40.32.1/19, found missing ibrail1 10.40.32.1/19"
    ]
    observed["node"] = {"ready": False, "allocatable": {"nvidia.com/gpu": "7"}}
    failed = A.failed_checks(A.acceptance_report(observed, {**expected, "rail_addresses": []}))
    assert failed == [
        "node ready: expected True, found False",
        "node allocatable: expected nvidia.com/gpu=8, rdma/ib=8, found nvidia.com/gpu=7, rdma/ib=0",
    ]


def test_a_north_south_adapter_beside_the_rails_is_left_alone() -> None:
    """Defect 7: eight 400G rails plus one Ethernet (or slower) NIC; the spec says eight rails."""
    ib = [_hca(f"mlx5_{i}", f"0000:{0x1A + i * 0x10:02x}:00.0") for i in range(8)]
    north_south = _hca("mlx5_8", "0000:05:00.0", rate=100, layer="Ethernet")
    assert len(F.rails({"infiniband": [*ib, north_south]}, "infiniband", 8, 400)) == 8
    roce = [_hca(f"mlx5_{i}", f"0000:{0x1A + i * 0x10:02x}:00.0", layer="Ethernet") for i in range(8)]
    chosen = F.rails({"infiniband": [north_south, *roce]}, "roce", 8, 400)  # the NIC sorts first by PCI address
    assert [r["ibdev"] for r in chosen] == [f"mlx5_{i}" for i in range(8)]
    devices = [{"vendor": "0x15b3", "class": "0x020700"}] * 8 + [{"vendor": "0x15b3", "class": "0x020000"}]
    assert F.pci_count(devices, "hca") == 9  # preflight asks for at least the spec's rails


def test_scratch_never_takes_a_disk_with_a_signature() -> None:
    """Defect 17: a spare-looking disk with a file system is never written."""
    signed = {"results": [{"item": {"name": "nvme3n1"}, "stdout": (TOOLS / "wipefs-ext4.json").read_text()}]}
    facts = F.with_signatures({"nvme_disks": [disk("nvme2n1"), disk("nvme3n1")], "md_arrays": []}, signed["results"])
    found = F.scratch_plan(facts, "scratch", [], 1)
    assert (found["action"], found["devices"]) == ("single", ["/dev/nvme2n1"])  # discovery leaves it out
    named = F.scratch_plan(facts, "scratch", ["nvme2n1", "nvme3n1"], 1)
    assert named["action"] == "fail" and "nvme3n1 (ext4)" in named["reason"]  # named in the spec: stop
    by_id = {"nvme_disks": [disk("nvme2n1", by_id=["nvme-SAMSUNG_MZ1L23T8HBLA-00A07_S6EWNA0T100001"])], "md_arrays": []}
    plan = F.scratch_plan(by_id, "scratch", ["/dev/disk/by-id/nvme-SAMSUNG_MZ1L23T8HBLA-00A07_S6EWNA0T100001"], 1)
    assert (plan["action"], plan["devices"]) == ("single", ["/dev/nvme2n1"])


def test_one_scratch_disk_is_used_without_an_array_and_kept_on_the_next_run() -> None:
    """Issue 20, 10: mdadm refuses --level=0 --raid-devices=1 without --force ("1 is an unusual number of drives for
    an array"), and a one-disk RAID0 adds nothing: the disk carries the file system itself, named by id in fstab."""
    one = {"nvme_disks": [disk("nvme2n1", by_id=["nvme-SAMSUNG_X_S1"])], "md_arrays": []}
    plan = F.scratch_plan(one, "scratch", [], 1, "/scratch")
    assert (plan["action"], plan["device"]) == ("single", "/dev/disk/by-id/nvme-SAMSUNG_X_S1")
    mounted = {**one, "nvme_disks": [{**one["nvme_disks"][0], "mounted": True, "signatures": ["xfs"]}]}
    mounted["mounts"] = [{"path": "/scratch", "source": "/dev/nvme2n1", "fstype": "xfs"}]
    again = F.scratch_plan(mounted, "scratch", [], 1, "/scratch")
    assert (again["action"], again["device"]) == ("keep", "/dev/nvme2n1")  # never re-made, never a failure
    two = {"nvme_disks": [disk("nvme2n1"), disk("nvme3n1")], "md_arrays": []}
    assert F.scratch_plan(two, "scratch", [], 1, "/scratch")["action"] == "create"
    report = A.acceptance_report(
        _observed(facts={"mounts": [{"path": "/scratch", "source": "/dev/nvme2n1", "fstype": "xfs", "size_bytes": 10}]}),
        _expected(scratch_path="/scratch"),
    )
    (check,) = [c for c in report if c["check"] == "scratch on local nvme"]
    assert check["ok"] and check["actual"] == "/dev/nvme2n1"


def test_kubelet_state_is_reset_only_when_its_policy_changes() -> None:
    """Defect 13: another config change keeps the state; a policy change removes exactly that state file."""
    static = (TOOLS / "cpu_manager_state-static.json").read_text()
    none = (TOOLS / "cpu_manager_state-none.json").read_text()
    assert F.resource_manager_reset(static, "", "static", "None") == {"reset": False, "files": []}
    assert F.resource_manager_reset(none, "", "static", "None") == {"reset": True, "files": ["cpu_manager_state"]}
    assert F.resource_manager_reset("", "", "static", "None") == {"reset": False, "files": []}  # a new node has none
    memory = '{"policyName":"Static","machineState":{},"checksum":1}'
    assert F.resource_manager_reset(static, memory, "static", "None")["files"] == ["memory_manager_state"]


def test_labels_and_taints_the_spec_dropped_are_removed_and_nobody_elses() -> None:
    """Defect 18: kubespray only adds; alicerce removes what it set before and the spec no longer has."""
    node = json.loads((TOOLS / "kubectl-node-ready.json").read_text())
    annotations = node["metadata"]["annotations"]
    labels = F.label_changes(
        node["metadata"]["labels"], annotations["alicerce.dev/labels"], {"alicerce.dev/pool": "x", "nvidia.com/gpu.clique": "y"}
    )
    assert labels == {"remove": ["old/label"], "annotation": "alicerce.dev/pool,nvidia.com/gpu.clique"}  # kubernetes.io/hostname stays
    taints = F.taint_changes(node["spec"]["taints"], annotations["alicerce.dev/taints"], ["nvidia.com/gpu=true:NoSchedule"])
    assert taints == {"remove": ["old:NoExecute-"], "annotation": "nvidia.com/gpu:NoSchedule"}


def test_driver_changes_reboot_the_node() -> None:
    """Defect 10: a changed driver reboots (drained) instead of failing verify with 'reboot after an upgrade'."""
    assert F.driver_action("580.105.08", "580.173.02", False) == "reboot"  # upgraded earlier, never rebooted
    assert F.driver_action("", "580.173.02", True) == "reboot"
    assert F.driver_action("580.173.02", "580.173.02", False) == "none"
    assert F.driver_action("", "580.173.02", False) == "load"


def test_vendor_repositories_use_their_own_architecture_names() -> None:
    """Defect 11: NVIDIA's server repositories say sbsa (DOCA: arm64-sbsa), never the aarch64 fact."""
    assert [F.repository_arch("aarch64", kind) for kind in ("cuda", "doca", "deb")] == ["sbsa", "arm64-sbsa", "arm64"]
    assert [F.repository_arch("x86_64", kind) for kind in ("cuda", "doca", "deb")] == ["x86_64", "x86_64", "amd64"]
    with pytest.raises(ValueError, match="ppc64le"):
        F.repository_arch("ppc64le", "cuda")


def test_fabric_manager_packages_match_the_driver_branch_naming() -> None:
    """Defect 15: from 580 the packages carry no branch suffix, and NSCQ comes with Fabric Manager."""
    assert F.fabricmanager_packages("580", "580.173.02") == ["nvidia-fabricmanager=580.173.02-*", "libnvidia-nscq=580.173.02-*"]
    assert F.fabricmanager_packages("570", "570.195.03") == ["nvidia-fabricmanager-570=570.195.03-*", "libnvidia-nscq-570=570.195.03-*"]


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


def test_a_burn_in_tool_that_is_not_installed_skips_its_check_with_the_reason() -> None:
    # no alicerce role installs NCCL's tests, nvbandwidth or an MPI: a node without them is reported, not failed
    tools = {
        "nvidia_smi": "nvidia-smi",
        "dcgmi": "dcgmi",
        "all_reduce_perf": "/usr/local/bin/all_reduce_perf",
        "ib_write_bw": "ib_write_bw",
        "p2p_bandwidth": "/usr/local/bin/nvbandwidth",
        "mpirun": "mpirun --allow-run-as-root",
    }
    missing = A.missing_tools(["/usr/local/bin/all_reduce_perf", "/usr/local/bin/nvbandwidth"], tools)
    assert missing == {
        "nccl_busbw_gbps": "/usr/local/bin/all_reduce_perf",
        "p2p_bw_gbps": "/usr/local/bin/nvbandwidth",
        "nccl_internode_busbw_gbps": "/usr/local/bin/all_reduce_perf",  # mpirun runs all_reduce_perf on every node
    }
    assert A.missing_tools(["mpirun"], tools) == {"nccl_internode_busbw_gbps": "mpirun"}
    expected = _expected(
        dcgm_diag_level=2, nccl_busbw_gbps=315.0, p2p_bw_gbps=315.0, nccl_internode_busbw_gbps=300.0, ib_write_bw_gbps=360.0
    )
    observed = _observed(
        dcgm_diag=A.parse_dcgm_diag((TOOLS / "dcgmi-diag-r2-pass.json").read_text()),
        ib_write_bw={f"mlx5_{i}": 391.0 for i in range(8)},
        nccl_internode_busbw_gbps=None,
        missing_tools=missing,
    )
    report = A.acceptance_report(observed, expected)
    assert A.failed_checks(report) == []
    assert A.skipped_checks(report) == [
        "nccl all-reduce busbw in node: not run: /usr/local/bin/all_reduce_perf is not installed on the node"
        " (install it, or set the floor to 0)",
        "gpu-to-gpu bandwidth: not run: /usr/local/bin/nvbandwidth is not installed on the node (install it, or set the floor to 0)",
        "nccl all-reduce busbw across nodes: not run: /usr/local/bin/all_reduce_perf is not installed on the node"
        " (install it, or set the floor to 0)",
    ]
    # a tool that is installed and measures below the floor still fails the node
    slow = {**observed, "missing_tools": {}, "nccl_busbw_gbps": 100.0, "p2p_bw_gbps": 400.0}
    assert A.failed_checks(A.acceptance_report(slow, expected)) == [
        "nccl all-reduce busbw in node: expected >= 315.0 GB/s, found 100.0 GB/s"
    ]


def _pod(name: str, phase: str = "Running", owner: str = "", mirror: bool = False) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "ns"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "x"}]
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    return {"metadata": meta, "status": {"phase": phase}}


def test_burn_in_never_runs_on_a_node_whose_workloads_run() -> None:
    """Issue 20, 4: DaemonSet and static pods stay on a drained node; any other running pod is someone's job."""
    pods = {
        "items": [_pod("dp", owner="DaemonSet"), _pod("etcd", mirror=True), _pod("done", phase="Succeeded"), _pod("train-0", owner="Job")]
    }
    assert A.workload_pods(json.dumps(pods)) == ["ns/train-0"]
    assert A.workload_pods(json.dumps({"items": pods["items"][:3]})) == []
    expected = _expected(dcgm_diag_level=2, nccl_busbw_gbps=315.0, p2p_bw_gbps=315.0, ib_write_bw_gbps=360.0)
    report = A.acceptance_report(_observed(workload_pods=["ns/train-0"], ib_write_bw={}), expected)
    assert A.failed_checks(report) == []
    skipped = A.skipped_checks(report)
    assert len(skipped) == 4 and all("1 workload pods run on the node (ns/train-0): drain it to burn it in" in s for s in skipped)


def test_acceptance_waits_for_the_device_plugin_to_offer_every_gpu() -> None:
    node = {"status": {"allocatable": {"nvidia.com/gpu": "0", "cpu": "96"}}}
    assert not A.allocatable_ready(json.dumps(node), {"nvidia.com/gpu": "8"})
    node["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    assert A.allocatable_ready(json.dumps(node), {"nvidia.com/gpu": "8"})


def test_a_node_is_held_by_its_acceptance_taint_or_alicerces_drain() -> None:
    taint = "alicerce.dev/acceptance=pending:NoSchedule"
    new = {"spec": {"taints": [{"key": "alicerce.dev/acceptance", "value": "pending", "effect": "NoSchedule"}]}}
    assert F.node_holds(json.dumps(new), taint) == {"pending": True, "drained": False}
    drained = {"spec": {"unschedulable": True}, "metadata": {"annotations": {"alicerce.dev/drained": "true"}}}
    assert F.node_holds(json.dumps(drained), taint) == {"pending": False, "drained": True}
    assert F.node_holds("", taint) == {"pending": False, "drained": False}


def test_driver_packages_carry_the_spec_version_so_a_changed_version_upgrades() -> None:
    """Issue 20, 5: a bare name with state present never moves an installed package."""
    names = ["nvidia-headless-no-dkms-580-server-open", "linux-modules-nvidia-580-server-open-generic", "x=1"]
    assert F.pinned_packages(names, "580.173.02", ["linux-modules-nvidia-"]) == [
        "nvidia-headless-no-dkms-580-server-open=580.173.02-*",
        "linux-modules-nvidia-580-server-open-generic",  # carries the kernel's version, not the driver's
        "x=1",
    ]
    assert F.driver_upgrade("580.95.05", "580.173.02") is True
    assert F.driver_upgrade("", "580.173.02") is False  # a fresh node runs no driver and no jobs
    assert F.driver_upgrade("580.173.02", "580.173.02") is False


def test_rdma_renames_lists_the_devices_not_yet_named_after_their_pci_address() -> None:
    """Check mode's forecast of the naming step (obsreview40 G-2): kernel names are renamed, NAME_PCI names are not."""
    facts = {
        "infiniband": [
            _hca("mlx5_0", "0000:18:00.0"),
            _hca("ibp64s0", "0000:40:00.0"),
            _hca("mlx5_2", "0000:9a:00.1", layer="Ethernet"),
            _hca("mlx5_3", "0001:05:00.0"),
        ]
    }
    assert F.rdma_renames(facts) == [
        "mlx5_0 at 0000:18:00.0 -> ibp24s0",
        "mlx5_2 at 0000:9a:00.1 -> rocep154s0f1",
        "mlx5_3 at 0001:05:00.0 -> ibP1p5s0",
    ]


def test_rdma_renames_knows_the_name_pci_shapes_al392_knows() -> None:
    """One shape, two copies (the filter runs on the controller without alicerce): they must agree."""
    import alicerce.rules  # noqa: F401  (the rule modules import through the registry first)
    from alicerce.targets.onprem.rules import _rail_name_problem

    for name in ["ibp24s0", "ibp0s12f4", "roceP2p3s0f1v7", "ibs5", "ibp24s0S1", "mlx5_0", "ibp024s0", "ibs0", "ib0", "ibp24"]:
        problem = _rail_name_problem(name, "roce" if name.startswith("roce") else "infiniband")
        assert (problem is None) == bool(F._NAME_PCI.fullmatch(name)), name
