#!/usr/bin/python
"""Read the hardware facts the alicerce roles decide from: PCI devices, RDMA ports, NVMe disks, md arrays, mounts."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: alicerce_node_facts
short_description: Read GPU, HCA, NVMe, md and mount facts from sysfs and procfs
description:
  - Reads C(/sys/bus/pci/devices), C(/sys/class/infiniband), C(/sys/block), C(/proc/mdstat) and C(/proc/mounts)
    (or fixture copies of them) and returns them as plain data. It never changes anything.
options:
  sysfs_root:
    description: Root of sysfs.
    type: str
    default: /sys
  proc_root:
    description: Root of procfs.
    type: str
    default: /proc
  mdstat:
    description: md status file; defaults to I(proc_root)/mdstat.
    type: str
  dev_root:
    description: Root of the device tree, for C(/dev/md/<name>) links.
    type: str
    default: /dev
author:
  - alicerce
"""

EXAMPLES = r"""
- name: Read the hardware facts of the node
  alicerce_node_facts:
  register: node_facts
"""

RETURN = r"""
pci_devices:
  description: PCI functions with vendor, device, class and whether each is a virtual function.
  returned: always
  type: list
  elements: dict
infiniband:
  description: RDMA devices with PCI address, netdevs and ports (state, rate, link layer).
  returned: always
  type: list
  elements: dict
nvme_disks:
  description: NVMe namespaces with size, partitions, holders and md superblock hint.
  returned: always
  type: list
  elements: dict
md_arrays:
  description: Running md arrays (name, level, members).
  returned: always
  type: list
  elements: dict
mounts:
  description: Mounted file systems (path, source, fstype, size in bytes).
  returned: always
  type: list
  elements: dict
secure_boot:
  description: enabled, disabled, or unsupported (no EFI).
  returned: always
  type: str
"""

import os  # noqa: E402  (Ansible modules document themselves before importing)
import re  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

_SECURE_BOOT_VAR = "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def _read(path, default=""):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return default


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def pci_devices(sysfs):
    base = os.path.join(sysfs, "bus", "pci", "devices")
    devices = []
    for address in _listdir(base):
        path = os.path.join(base, address)
        devices.append(
            {
                "address": address,
                "vendor": _read(os.path.join(path, "vendor")),
                "device": _read(os.path.join(path, "device")),
                "class": _read(os.path.join(path, "class")),
                "virtfn": os.path.exists(os.path.join(path, "physfn")),
            }
        )
    return devices


def _rate_gbps(text):
    match = re.match(r"\s*([\d.]+)\s*Gb/sec", text)
    return int(float(match.group(1))) if match else 0


def infiniband(sysfs):
    base = os.path.join(sysfs, "class", "infiniband")
    hcas = []
    for name in _listdir(base):
        device = os.path.join(base, name, "device")
        ports = []
        for port in _listdir(os.path.join(base, name, "ports")):
            path = os.path.join(base, name, "ports", port)
            ports.append(
                {
                    "port": port,
                    "state": _read(os.path.join(path, "state")),
                    "phys_state": _read(os.path.join(path, "phys_state")),
                    "rate": _read(os.path.join(path, "rate")),
                    "rate_gbps": _rate_gbps(_read(os.path.join(path, "rate"))),
                    "link_layer": _read(os.path.join(path, "link_layer")),
                }
            )
        real = os.path.realpath(device)
        hcas.append(
            {
                "name": name,
                "pci": os.path.basename(real) if os.path.exists(device) else _read(os.path.join(base, name, "pci_address")),
                "netdevs": _listdir(os.path.join(device, "net")),
                "ports": ports,
            }
        )
    return hcas


def mounts(proc, live):
    found = []
    for line in _read(os.path.join(proc, "mounts")).splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        source, path, fstype = fields[0], fields[1].replace("\\040", " "), fields[2]
        size = 0
        if live:
            try:
                stat = os.statvfs(path)
                size = stat.f_frsize * stat.f_blocks
            except OSError:
                size = 0
        if len(fields) >= 5 and fields[4].isdigit():  # fixtures may carry the size in field 5
            size = int(fields[4])
        found.append({"path": path, "source": source, "fstype": fstype, "size_bytes": size})
    return found


def md_arrays(mdstat, dev):
    names = {}
    for link in _listdir(os.path.join(dev, "md")):
        names[os.path.basename(os.path.realpath(os.path.join(dev, "md", link)))] = link
    arrays = []
    for line in _read(mdstat).splitlines():
        match = re.match(r"^(md\w+)\s*:\s*(\w+)\s+(?:\(\w+\)\s+)?(raid\d+|linear)?\s*(.*)$", line)
        if not match:
            continue
        members = sorted(re.sub(r"\[\d+\].*$", "", m) for m in match.group(4).split())
        arrays.append(
            {
                "device": match.group(1),
                "name": names.get(match.group(1), match.group(1)),
                "state": match.group(2),
                "level": match.group(3) or "",
                "members": members,
            }
        )
    return arrays


def _by_id(dev):
    """Stable names per kernel disk name, from /dev/disk/by-id links."""
    aliases = {}
    base = os.path.join(dev, "disk", "by-id")
    for link in _listdir(base):
        aliases.setdefault(os.path.basename(os.path.realpath(os.path.join(base, link))), []).append(link)
    return aliases


def nvme_disks(sysfs, mounted_sources, array_members, dev="/dev"):
    by_id = _by_id(dev)
    base = os.path.join(sysfs, "block")
    disks = []
    for name in _listdir(base):
        if not re.match(r"^nvme\d+n\d+$", name):
            continue
        path = os.path.join(base, name)
        partitions = [p for p in _listdir(path) if p.startswith(name + "p")]
        holders = _listdir(os.path.join(path, "holders"))
        disks.append(
            {
                "name": name,
                "size_bytes": int(_read(os.path.join(path, "size"), "0") or 0) * 512,
                "model": _read(os.path.join(path, "device", "model")),
                "partitions": partitions,
                "holders": holders,
                "mounted": any(src in ("/dev/" + name, *("/dev/" + p for p in partitions)) for src in mounted_sources),
                "md_superblock": name in array_members or any(h.startswith("md") for h in holders),
                "by_id": sorted(by_id.get(name, [])),
            }
        )
    return disks


def secure_boot(sysfs):
    efi = os.path.join(sysfs, "firmware", "efi")
    if not os.path.isdir(efi):
        return "unsupported"
    try:
        with open(os.path.join(efi, "efivars", _SECURE_BOOT_VAR), "rb") as handle:
            data = handle.read()
    except OSError:
        return "disabled"
    return "enabled" if len(data) >= 5 and data[4] == 1 else "disabled"


def main():
    module = AnsibleModule(
        argument_spec={
            "sysfs_root": {"type": "str", "default": "/sys"},
            "proc_root": {"type": "str", "default": "/proc"},
            "mdstat": {"type": "str"},
            "dev_root": {"type": "str", "default": "/dev"},
        },
        supports_check_mode=True,
    )
    sysfs = module.params["sysfs_root"]
    proc = module.params["proc_root"]
    mounted = mounts(proc, live=proc == "/proc")
    arrays = md_arrays(module.params["mdstat"] or os.path.join(proc, "mdstat"), module.params["dev_root"])
    members = {m for a in arrays for m in a["members"]}
    module.exit_json(
        changed=False,
        pci_devices=pci_devices(sysfs),
        infiniband=infiniband(sysfs),
        nvme_disks=nvme_disks(sysfs, {m["source"] for m in mounted}, members, module.params["dev_root"]),
        md_arrays=arrays,
        mounts=mounted,
        secure_boot=secure_boot(sysfs),
    )


if __name__ == "__main__":
    main()
