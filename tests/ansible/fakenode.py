"""A fake GPU node for check-mode runs: sysfs, procfs and nvidia-smi fixtures inside a rootfs."""

from __future__ import annotations

import os
from pathlib import Path

DRIVER = "580.173.02"


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
) -> Path:
    """Write ``root``/fake/{sys,proc} and ``root``/fake/nvidia-smi; return the in-root path ``/fake``."""
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
    smi = base / "nvidia-smi"
    rows = "\\n".join(f"{i}, 00000000:{0x18 + i * 0x10:02X}:00.0, {driver}, NVIDIA H100 80GB HBM3" for i in range(gpus))
    links = "\\n".join(f"GPU {i}: NVIDIA H100 80GB HBM3\\n\\t Link 0: 26.562 GB/s" for i in range(gpus))
    fabric = "\\n".join("    Fabric\\n        State : Completed\\n        Status : Success" for _ in range(gpus))
    smi.write_text(
        "#!/bin/sh\n"
        f'case "$1" in\n  --query-gpu=*) printf "{rows}\\n";;\n  nvlink) printf "{links}\\n";;\n  -q) printf "{fabric}\\n";;\nesac\n'
    )
    smi.chmod(0o755)
    return Path("/fake")


def _pci(base: Path, address: str, vendor: str, klass: str) -> None:
    device = base / address
    device.mkdir(parents=True, exist_ok=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(klass + "\n")
    (device / "device").write_text("0x2330\n")
