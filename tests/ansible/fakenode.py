"""A fake GPU node for check-mode runs: sysfs, procfs and nvidia-smi fixtures inside a rootfs."""

from __future__ import annotations

import json
import os
from pathlib import Path

DRIVER = "580.173.02"
FIXTURES = Path(__file__).parent / "fixtures" / "tools"


def make_fake_node(
    root: Path,
    *,
    gpus: int = 8,
    hcas: int = 8,
    active: int | None = None,
    rate: int = 400,
    nvme: int = 4,
    driver: str = DRIVER,
    mounts: tuple[str, ...] = ("/lustre", "/home/shared"),
    scratch: bool = True,
    journal: bool = True,
    ring_buffer: str = "journal-kernel-clean.txt",
) -> Path:
    """Write ``root``/fake/{sys,proc}, nvidia-smi and the burn-in tools; return the in-root path ``/fake``.

    ``journal=False`` leaves journalctl out (as on a node without systemd-journald); ``dmesg`` then
    replays ``ring_buffer``.
    """
    base = root / "fake"
    sys_root = base / "sys"
    pci = sys_root / "bus" / "pci" / "devices"
    for index in range(gpus):
        _pci(pci, f"0000:{0x18 + index * 0x10:02x}:00.0", "0x10de", "0x030200")
    for index in range(4 if gpus >= 8 else 0):  # NVSwitches: never counted as GPUs
        _pci(pci, f"0000:{0x05 + index:02x}:00.0", "0x10de", "0x068000")
    active = hcas if active is None else active
    for index in range(hcas):
        address = f"0000:{0x1A + index * 0x10:02x}:00.0"
        _pci(pci, address, "0x15b3", "0x020700")
        ib = sys_root / "class" / "infiniband" / f"mlx5_{index}"
        port = ib / "ports" / "1"
        port.mkdir(parents=True, exist_ok=True)
        (port / "state").write_text("4: ACTIVE\n" if index < active else "1: DOWN\n")
        (port / "phys_state").write_text("5: LinkUp\n")
        (port / "rate").write_text(f"{rate} Gb/sec (4X NDR)\n")
        (port / "link_layer").write_text("InfiniBand\n")
        link = ib / "device"
        if not link.is_symlink():
            os.symlink(f"../../../bus/pci/devices/{address}", link)
        (pci / address / "net" / f"ibp{index}s0").mkdir(parents=True, exist_ok=True)
    for module, version in (("nvidia", driver), ("nvidia_peermem", driver)):
        (sys_root / "module" / module).mkdir(parents=True, exist_ok=True)
        (sys_root / "module" / module / "version").write_text(version + "\n")
    block = sys_root / "block"
    for index in range(nvme):
        disk = block / f"nvme{index}n1"
        (disk / "holders").mkdir(parents=True, exist_ok=True)
        (disk / "size").write_text(str(3_840_000_000_000 // 512) + "\n")
    proc = base / "proc"
    proc.mkdir(parents=True, exist_ok=True)
    members = " ".join(f"nvme{i}n1[{i}]" for i in range(nvme))
    (proc / "mdstat").write_text(f"Personalities : [raid0]\nmd127 : active raid0 {members}\n" if scratch else "Personalities :\n")
    lines = ["/dev/vda1 / ext4 rw 0 0"]
    if scratch:
        lines.append(f"/dev/md127 /scratch xfs rw,noatime {nvme * 3_840_000_000_000} 0")
    lines += [f"server:/x {path} {'lustre' if path == '/lustre' else 'nfs4'} rw 1 0" for path in mounts]
    (proc / "mounts").write_text("\n".join(lines) + "\n")
    tools = base / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    for fixture in FIXTURES.iterdir():
        (tools / fixture.name).write_bytes(fixture.read_bytes())
    rows = "\\n".join(
        f"{i}, 00000000:{0x18 + i * 0x10:02X}:00.0, {driver}, NVIDIA H100 80GB HBM3, Enabled, Enabled, 0, 5, 16" for i in range(gpus)
    )
    remapped = "\\n".join(f"00000000:{0x18 + i * 0x10:02X}:00.0, 0, 0, No, No" for i in range(gpus))
    links = "\\n".join(f"GPU {i}: NVIDIA H100 80GB HBM3\\n\\t Link 0: 26.562 GB/s" for i in range(gpus))
    fabric = "\\n".join("    Fabric\\n        State : Completed\\n        Status : Success" for _ in range(gpus))
    _script(
        base / "nvidia-smi",
        f'case "$1" in\n  --query-gpu=*) printf "{rows}\\n";;\n  --query-remapped-rows=*) printf "{remapped}\\n";;\n'
        f'  nvlink) printf "{links}\\n";;\n  -q) printf "{fabric}\\n";;\nesac\n',
    )
    # the burn-in tools replay recorded outputs (tests/ansible/fixtures/tools)
    _script(base / "dcgmi", "cat /fake/tools/dcgmi-diag-r2-pass.json\n")
    _script(base / "all_reduce_perf", "cat /fake/tools/all_reduce_perf-8xH100.txt\n")
    _script(base / "nvbandwidth", "cat /fake/tools/nvbandwidth-d2d-write.txt\n")
    _script(base / "ib_write_bw", "[ $# -gt 8 ] && cat /fake/tools/ib_write_bw-mlx5_0.txt\nexit 0\n")
    if journal:
        _script(base / "journalctl", "cat /fake/tools/journal-kernel-clean.txt\n")
    _script(base / "dmesg", f"cat /fake/tools/{ring_buffer}\n")
    # `ip -j addr show`: the rails named and addressed as the fabric plan says (10.40.0.0/16 split in eight)
    links = [
        {"ifname": f"ibrail{i}", "addr_info": [{"family": "inet", "local": f"10.40.{32 * i}.1", "prefixlen": 19}]} for i in range(hcas)
    ]
    (tools / "ip-addr.json").write_text(json.dumps(links))
    _script(base / "ip", "cat /fake/tools/ip-addr.json\n")
    return Path("/fake")


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def tools(fake: Path) -> dict[str, str]:
    """node_validation_tools pointing at the fake node's tools (paths inside the rootfs)."""
    return {
        "nvidia_smi": f"{fake}/nvidia-smi",
        "dcgmi": f"{fake}/dcgmi",
        "all_reduce_perf": f"{fake}/all_reduce_perf",
        "ib_write_bw": f"{fake}/ib_write_bw",
        "p2p_bandwidth": f"{fake}/nvbandwidth",
        "journalctl": f"{fake}/journalctl",
        "dmesg": f"{fake}/dmesg",
        "ip": f"{fake}/ip",
        "kubectl": "kubectl",
        "mpirun": "mpirun",
    }


def _pci(base: Path, address: str, vendor: str, klass: str) -> None:
    device = base / address
    device.mkdir(parents=True, exist_ok=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(klass + "\n")
    (device / "device").write_text("0x2330\n")
