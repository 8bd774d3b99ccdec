"""Decisions the alicerce roles take from host facts, as pure functions (unit-tested in tests/ansible).

Every hardware-bound step (which disks form the scratch array, which HCA is which rail, whether a
node passes acceptance) is decided here from facts read by the ``alicerce_node_facts`` module, so
the decision is tested without the hardware and the tasks only carry it out.
"""

from __future__ import annotations

import re
from typing import Any

NVIDIA = "0x10de"
MELLANOX = "0x15b3"
_GPU_CLASSES = ("0x0300", "0x0302")  # VGA compatible controller, 3D controller
_NVSWITCH_CLASS = "0x0680"  # bridge: NVSwitches show up as "other bridge" devices of vendor 10de
_HCA_CLASSES = ("0x0207", "0x0200")  # InfiniBand controller, Ethernet controller (RoCE)


def pci_count(devices: list[dict[str, Any]], kind: str) -> int:
    """Physical functions of ``kind`` (gpu, nvswitch or hca) among the PCI devices."""
    if kind == "gpu":
        vendor, classes = NVIDIA, _GPU_CLASSES
    elif kind == "nvswitch":
        vendor, classes = NVIDIA, (_NVSWITCH_CLASS,)
    elif kind == "hca":
        vendor, classes = MELLANOX, _HCA_CLASSES
    else:
        raise ValueError(f"unknown PCI device kind {kind!r}")
    return sum(
        1
        for dev in devices
        if str(dev.get("vendor", "")).lower() == vendor and str(dev.get("class", ""))[:6].lower() in classes and not dev.get("virtfn")
    )


def kernel_at_least(release: str, minimum: str) -> bool:
    """``5.15.0-91-generic`` >= ``5.15``: compare the numeric release prefix."""

    def numbers(text: str) -> tuple[int, ...]:
        match = re.match(r"(\d+(?:\.\d+)*)", text)
        return tuple(int(n) for n in match.group(1).split(".")) if match else ()

    return numbers(release) >= numbers(minimum)


def scratch_plan(facts: dict[str, Any], array_name: str, wanted: list[str], min_devices: int) -> dict[str, Any]:
    """What to do about the scratch array: keep, assemble, create, or fail (with the reason).

    An array that exists (active under the wanted name, or built from any of the wanted disks) is
    always kept: a re-run never re-creates it and never touches its data. Disks that carry an md
    superblock but are not in a running array are assembled, not re-created.
    """
    arrays: list[dict[str, Any]] = facts.get("md_arrays", [])
    disks: list[dict[str, Any]] = facts.get("nvme_disks", [])
    for array in arrays:
        if array.get("name") == array_name:
            return {"action": "keep", "device": f"/dev/md/{array_name}", "devices": array.get("members", []), "reason": "array exists"}
    by_name = {d["name"]: d for d in disks}
    if wanted:
        missing = [name for name in wanted if name.removeprefix("/dev/") not in by_name]
        if missing:
            return {"action": "fail", "devices": [], "reason": f"disks not found: {', '.join(missing)}"}
        chosen = [by_name[name.removeprefix("/dev/")] for name in wanted]
    else:
        chosen = [d for d in disks if not d.get("partitions") and not d.get("mounted") and not _foreign_holders(d)]
    in_use = [d["name"] for d in chosen if d.get("partitions") or d.get("mounted") or _foreign_holders(d)]
    if in_use:
        return {"action": "fail", "devices": [], "reason": f"disks in use: {', '.join(sorted(in_use))}"}
    for array in arrays:
        taken = sorted(d["name"] for d in chosen if d["name"] in array.get("members", []))
        if taken:
            device = f"/dev/{array['device']}" if array.get("device") else f"/dev/md/{array_name}"
            return {"action": "keep", "device": device, "devices": taken, "reason": f"disks already form {device}"}
    if any(d.get("md_superblock") for d in chosen):
        return {
            "action": "assemble",
            "device": f"/dev/md/{array_name}",
            "devices": sorted(d["name"] for d in chosen),
            "reason": "md superblocks found",
        }
    if len(chosen) < max(min_devices, 1):
        return {"action": "fail", "devices": [], "reason": f"{len(chosen)} spare NVMe disks, need at least {max(min_devices, 1)}"}
    names = sorted(d["name"] for d in chosen)
    return {
        "action": "create",
        "device": f"/dev/md/{array_name}",
        "devices": [f"/dev/{n}" for n in names],
        "size_bytes": sum(int(d.get("size_bytes", 0)) for d in chosen),
        "reason": f"{len(names)} spare NVMe disks",
    }


def _foreign_holders(disk: dict[str, Any]) -> list[str]:
    return [h for h in disk.get("holders", []) if not str(h).startswith("md")]


def rails(facts: dict[str, Any], technology: str) -> list[dict[str, Any]]:
    """RDMA adapters in rail order (PCI address order), each with its netdev and first port."""
    link_layer = "InfiniBand" if technology == "infiniband" else "Ethernet"
    found = []
    for hca in sorted(facts.get("infiniband", []), key=lambda h: str(h.get("pci", ""))):
        ports = [p for p in hca.get("ports", []) if p.get("link_layer") == link_layer]
        if not ports:
            continue
        found.append({"ibdev": hca["name"], "pci": hca.get("pci", ""), "netdevs": hca.get("netdevs", []), "port": ports[0]})
    return found


def ipoib_plan(facts: dict[str, Any], addresses: list[str], prefix: str = "ibrail") -> list[dict[str, Any]]:
    """Stable netdev name and IPoIB address per rail: rail i is the i-th InfiniBand HCA by PCI address."""
    plan = []
    for index, rail in enumerate(rails(facts, "infiniband")):
        plan.append(
            {
                "rail": index,
                "name": f"{prefix}{index}",
                "ibdev": rail["ibdev"],
                "pci": rail["pci"],
                "address": addresses[index] if index < len(addresses) else "",
            }
        )
    return plan


def parse_nvidia_smi_gpus(text: str) -> list[dict[str, str]]:
    """``nvidia-smi --query-gpu=index,pci.bus_id,driver_version,name --format=csv,noheader``."""
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 4 and fields[0].isdigit():
            gpus.append({"index": fields[0], "bus_id": fields[1], "driver_version": fields[2], "name": ",".join(fields[3:])})
    return gpus


def parse_nvlink_down(text: str) -> list[str]:
    """``nvidia-smi nvlink --status`` lines of links that are not up (inactive or 0 GB/s)."""
    down = []
    gpu = ""
    for line in text.splitlines():
        if line.startswith("GPU "):
            gpu = line.split(":")[0]
        match = re.match(r"\s*Link (\d+):\s*(.*)$", line)
        if match and ("inactive" in match.group(2).lower() or re.match(r"0(\.0+)? GB/s", match.group(2).strip())):
            down.append(f"{gpu} link {match.group(1)}")
    return down


def parse_fabric_states(text: str) -> list[str]:
    """Fabric ``State`` of each GPU in ``nvidia-smi -q`` (Completed when Fabric Manager did its job)."""
    states = []
    in_fabric = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "Fabric":
            in_fabric = True
            continue
        if in_fabric and stripped.startswith("State"):
            states.append(stripped.split(":", 1)[1].strip())
            in_fabric = False
    return states


def validation_report(observed: dict[str, Any], expected: dict[str, Any]) -> list[dict[str, Any]]:
    """Every acceptance check of one node with expected and actual values; ``ok`` false fails the node."""
    checks: list[dict[str, Any]] = []

    def check(name: str, want: Any, got: Any, ok: bool) -> None:
        checks.append({"check": name, "expected": want, "actual": got, "ok": bool(ok)})

    gpus = observed.get("gpus")
    if expected.get("gpu_count", 0) > 0:
        if gpus is None:
            check("gpu count", expected["gpu_count"], observed.get("nvidia_smi_error", "nvidia-smi failed"), False)
        else:
            check("gpu count", expected["gpu_count"], len(gpus), len(gpus) == expected["gpu_count"])
            versions = sorted({g["driver_version"] for g in gpus})
            want = expected.get("driver_version", "")
            if want:
                check("driver version", want, ", ".join(versions) or "none", versions == [want])
        if expected.get("nvswitch"):
            down = observed.get("nvlink_down")
            check("nvlinks up", "all", "unknown" if down is None else (", ".join(down) or "all"), down == [])
            states = observed.get("fabric_states") or []
            ok = bool(states) and all(s == "Completed" for s in states)
            check("fabric manager state", "Completed on every GPU", ", ".join(sorted(set(states))) or "none", ok)
    if expected.get("hca_count", 0) > 0:
        found = rails(observed.get("facts", {}), "infiniband" if expected.get("hca_link_layer") == "InfiniBand" else "roce")
        check("hca count", expected["hca_count"], len(found), len(found) == expected["hca_count"])
        not_active = [r["ibdev"] for r in found if not str(r["port"].get("state", "")).endswith("ACTIVE")]
        check("hca ports active", "all", ", ".join(not_active) or "all", not not_active)
        rate = expected.get("hca_rate_gbps", 0)
        if rate:
            slow = [f"{r['ibdev']}={r['port'].get('rate_gbps')}" for r in found if r["port"].get("rate_gbps") != rate]
            check("hca rate", f"{rate} Gb/s", ", ".join(slow) or f"{rate} Gb/s", not slow)
    mounts = {m["path"]: m for m in observed.get("facts", {}).get("mounts", [])}
    scratch = expected.get("scratch_path", "")
    if scratch:
        mount = mounts.get(scratch)
        if mount is None:
            check("scratch mounted", scratch, "not mounted", False)
        else:
            is_md = str(mount.get("source", "")).startswith("/dev/md")
            check("scratch on md raid", "/dev/md/*", mount.get("source"), is_md)
            size = int(mount.get("size_bytes", 0))
            want_size = int(expected.get("scratch_min_bytes", 1))
            check("scratch size", f">= {want_size}", size, size >= want_size)
    for path in expected.get("mounts", []):
        check(f"mounted {path}", "mounted", mounts.get(path, {}).get("fstype", "not mounted"), path in mounts)
    return checks


def failed_checks(report: list[dict[str, Any]]) -> list[str]:
    return [f"{c['check']}: expected {c['expected']}, found {c['actual']}" for c in report if not c["ok"]]


def containerd_config_version(text: str) -> int:
    """The ``version`` of a containerd config (1 when absent, as containerd reads it)."""
    match = re.search(r"(?m)^\s*version\s*=\s*(\d+)\s*$", text or "")
    return int(match.group(1)) if match else 1


_CRI_V2 = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc'


def strip_block(text: str, marker: str) -> str:
    """``text`` without the blockinfile block whose markers end in ``marker`` (the role's own edit)."""
    pattern = r"(?ms)^# BEGIN " + re.escape(marker) + r"\n.*?^# END " + re.escape(marker) + r"\n?"
    return re.sub(pattern, "", text)


_CRI_V2_CONTAINERD = 'plugins."io.containerd.grpc.v1.cri".containerd'
_NVIDIA_V2 = [
    f"[{_CRI_V2_CONTAINERD}.runtimes.nvidia]",
    "  privileged_without_host_devices = false",
    '  runtime_type = "io.containerd.runc.v2"',
    f"[{_CRI_V2_CONTAINERD}.runtimes.nvidia.options]",
    '  BinaryName = "/usr/bin/nvidia-container-runtime"',
    "  SystemdCgroup = true",
]


def containerd_nvidia_v2_edit(text: str, default_runtime: bool, marker: str) -> dict[str, str]:
    """How to add the nvidia runtime to a version-2 config, decided on the text without our own block.

    The block always holds the nvidia runtime tables. Making nvidia the default flips an existing
    ``default_runtime_name`` (``replace``), adds the key under an existing containerd table
    (``insert``), or puts that table in the block when nobody defined it (``block``).
    """
    others = strip_block(text, marker)
    lines = list(_NVIDIA_V2)
    default = "none"
    if default_runtime:
        if re.search(r"(?m)^\s*default_runtime_name\s*=", others):
            default = "replace"
        elif re.search(r"(?m)^\s*\[" + re.escape(_CRI_V2_CONTAINERD) + r"\]\s*$", others):
            default = "insert"
        else:
            default = "block"
            lines = [f"[{_CRI_V2_CONTAINERD}]", '  default_runtime_name = "nvidia"', *lines]
    return {"block": "\n".join(lines), "default": default}


def containerd_systemd_cgroup_edit(text: str, marker: str = "") -> dict[str, str]:
    """The smallest edit of a version-2 containerd config that makes runc use systemd cgroups.

    ``replace``: flip an existing ``SystemdCgroup = false``; ``insert``: add the key under the
    existing runc options table; ``block``: add the missing runc tables (TOML forbids defining a
    table twice, so a table that exists is never written again); ``none``: already set.
    """
    if re.search(r"(?m)^\s*SystemdCgroup\s*=\s*true\s*$", text):
        return {"action": "none", "block": ""}
    if re.search(r"(?m)^\s*SystemdCgroup\s*=\s*false\s*$", text):
        return {"action": "replace", "block": ""}
    if re.search(r"(?m)^\s*\[" + re.escape(_CRI_V2 + ".options") + r"\]\s*$", text):
        return {"action": "insert", "block": ""}
    lines = []
    if not re.search(r"(?m)^\s*\[" + re.escape(_CRI_V2) + r"\]\s*$", text):
        lines += [f"[{_CRI_V2}]", '  runtime_type = "io.containerd.runc.v2"']
    lines += [f"[{_CRI_V2}.options]", "  SystemdCgroup = true"]
    return {"action": "block", "block": "\n".join(lines)}


def kubelet_dropin(
    cpu_manager: str, topology_manager: str, system_reserved: dict[str, str], max_pods: int, taints: list[str]
) -> dict[str, Any]:
    """The kubelet drop-in configuration (KubeletConfiguration) alicerce owns on a node."""
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cgroupDriver": "systemd",
        "failSwapOn": True,
        "maxPods": max_pods,
        "cpuManagerPolicy": cpu_manager,
        "topologyManagerPolicy": topology_manager,
        "systemReserved": dict(sorted(system_reserved.items())),
    }
    if topology_manager != "none":
        config["topologyManagerScope"] = "pod" if topology_manager == "single-numa-node" else "container"
    if cpu_manager == "static":
        config["cpuManagerPolicyOptions"] = {"full-pcpus-only": "true"}
    registered = []
    for taint in taints:
        key_value, _, effect = taint.rpartition(":")
        key, _, value = key_value.partition("=")
        registered.append({"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect})
    if registered:
        config["registerWithTaints"] = registered
    return config


class FilterModule:
    """Filters for the alicerce roles (names prefixed ``alicerce_``)."""

    def filters(self) -> dict[str, Any]:
        return {
            "alicerce_pci_count": pci_count,
            "alicerce_kernel_at_least": kernel_at_least,
            "alicerce_scratch_plan": scratch_plan,
            "alicerce_rails": rails,
            "alicerce_ipoib_plan": ipoib_plan,
            "alicerce_nvidia_smi_gpus": parse_nvidia_smi_gpus,
            "alicerce_nvlink_down": parse_nvlink_down,
            "alicerce_fabric_states": parse_fabric_states,
            "alicerce_validation_report": validation_report,
            "alicerce_failed_checks": failed_checks,
            "alicerce_containerd_config_version": containerd_config_version,
            "alicerce_kubelet_dropin": kubelet_dropin,
            "alicerce_containerd_systemd_cgroup_edit": containerd_systemd_cgroup_edit,
            "alicerce_containerd_nvidia_v2_edit": containerd_nvidia_v2_edit,
        }
