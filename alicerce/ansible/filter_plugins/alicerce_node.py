"""Decisions the alicerce roles take from host facts, as pure functions (unit-tested in tests/ansible).

Every hardware-bound step (which disks form the scratch array, which HCA is which rail, whether a
node passes acceptance) is decided here from facts read by the ``alicerce_node_facts`` module, so
the decision is tested without the hardware and the tasks only carry it out.
"""

from __future__ import annotations

import json
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


def scratch_plan(facts: dict[str, Any], array_name: str, wanted: list[str], min_devices: int, mount_path: str = "") -> dict[str, Any]:
    """What to do about the scratch array: keep, assemble, create, or fail (with the reason).

    An array that exists (active under the wanted name, or built from any of the wanted disks) is
    always kept: a re-run never re-creates it and never touches its data. Disks that carry an md
    superblock but are not in a running array are assembled, not re-created. A disk with a
    partition table, a file system or any other signature (``signatures``, as wipefs reports them)
    is never written: named in the spec it stops the run; found by discovery it is left out.
    """
    arrays: list[dict[str, Any]] = facts.get("md_arrays", [])
    disks: list[dict[str, Any]] = facts.get("nvme_disks", [])
    # one disk is used directly (mdadm refuses a one-device RAID0 without --force, and it would add nothing): once
    # it carries the scratch mount it is kept
    mounted = next((m for m in facts.get("mounts", []) if mount_path and m.get("path") == mount_path), None)
    if mounted and str(mounted.get("source", "")).removeprefix("/dev/") in {d["name"] for d in disks}:
        return {"action": "keep", "device": mounted["source"], "devices": [mounted["source"]], "reason": "disk mounted"}
    for array in arrays:
        if array.get("name") == array_name:
            return {"action": "keep", "device": f"/dev/md/{array_name}", "devices": array.get("members", []), "reason": "array exists"}
    by_name = {d["name"]: d for d in disks}
    for disk in disks:
        for alias in disk.get("by_id", []):
            by_name.setdefault(alias, disk)
    if wanted:
        missing = [name for name in wanted if _disk_key(name) not in by_name]
        if missing:
            return {"action": "fail", "devices": [], "reason": f"disks not found: {', '.join(missing)}"}
        chosen = [by_name[_disk_key(name)] for name in wanted]
    else:
        chosen = [d for d in disks if not _in_use(d) and not _foreign_signatures(d)]
    in_use = [d["name"] for d in chosen if _in_use(d)]
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
    signed = [f"{d['name']} ({', '.join(_foreign_signatures(d))})" for d in chosen if _foreign_signatures(d)]
    if signed:
        reason = f"disks carry data signatures (wipe them by hand if they really are spare): {', '.join(signed)}"
        return {"action": "fail", "devices": [], "reason": reason}
    if len(chosen) < max(min_devices, 1):
        return {"action": "fail", "devices": [], "reason": f"{len(chosen)} blank NVMe disks, need at least {max(min_devices, 1)}"}
    names = sorted(d["name"] for d in chosen)
    if len(names) == 1:
        # fstab names it by id: kernel names of NVMe disks may change between boots
        ids = sorted(chosen[0].get("by_id", []))
        device = f"/dev/disk/by-id/{ids[0]}" if ids else f"/dev/{names[0]}"
        return {
            "action": "single",
            "device": device,
            "devices": [f"/dev/{names[0]}"],
            "reason": "one blank NVMe disk, used without an array",
        }
    return {
        "action": "create",
        "device": f"/dev/md/{array_name}",
        "devices": [f"/dev/{n}" for n in names],
        "size_bytes": sum(int(d.get("size_bytes", 0)) for d in chosen),
        "reason": f"{len(names)} blank NVMe disks",
    }


def with_signatures(facts: dict[str, Any], wipefs_results: list[dict[str, Any]]) -> dict[str, Any]:
    """The facts with each disk's signature types from ``wipefs --json DEVICE`` (a loop's results)."""
    types: dict[str, list[str]] = {}
    for result in wipefs_results:
        disk = (result.get("item") or {}).get("name", "")
        try:
            found = json.loads(result.get("stdout") or "{}").get("signatures", [])
        except ValueError:
            found = [{"type": "unreadable"}]
        types[disk] = sorted({str(sig.get("type", "?")) for sig in found})
    disks = [{**d, "signatures": types.get(d["name"], d.get("signatures", []))} for d in facts.get("nvme_disks", [])]
    return {**facts, "nvme_disks": disks}


def _disk_key(name: str) -> str:
    return name.removeprefix("/dev/disk/by-id/").removeprefix("/dev/")


def _in_use(disk: dict[str, Any]) -> bool:
    return bool(disk.get("partitions") or disk.get("mounted") or _foreign_holders(disk))


def _foreign_signatures(disk: dict[str, Any]) -> list[str]:
    """Signatures other than an md superblock (which means: assemble)."""
    return [s for s in disk.get("signatures", []) if s != "linux_raid_member"]


def _foreign_holders(disk: dict[str, Any]) -> list[str]:
    return [h for h in disk.get("holders", []) if not str(h).startswith("md")]


def rails(
    facts: dict[str, Any], technology: str, count: int | None = None, rate_gbps: int = 0, adapters: list[str] | None = None
) -> list[dict[str, Any]]:
    """The fabric's rails in rail order (PCI address order), each with its netdevs and first port.

    A node may carry more RDMA adapters than the fabric has rails (a north-south NIC or a storage
    network's ports beside the compute rails): only adapters of the fabric's link layer count, and
    when there are more than ``count`` of them those at the fabric's rate are taken. When even those
    are more than ``count``, nothing tells a rail from a storage port of the same kind: the spec's
    ``adapters`` (PCI addresses of the rails) decide, and without them the selection refuses to guess.
    """
    link_layer = "InfiniBand" if technology == "infiniband" else "Ethernet"
    found = []
    for hca in sorted(facts.get("infiniband", []), key=lambda h: str(h.get("pci", ""))):
        ports = [p for p in hca.get("ports", []) if p.get("link_layer") == link_layer]
        if not ports:
            continue
        found.append({"ibdev": hca["name"], "pci": hca.get("pci", ""), "netdevs": hca.get("netdevs", []), "port": ports[0]})
    if adapters:
        wanted = [a.lower() for a in adapters]
        missing = [a for a in wanted if a not in {r["pci"].lower() for r in found}]
        if missing:
            raise ValueError(f"rail adapters {', '.join(missing)} (railAdapters) are not {link_layer} RDMA adapters on this node")
        return [r for r in found if r["pci"].lower() in wanted]
    if count is None or len(found) <= count:
        return found
    at_rate = [r for r in found if rate_gbps and r["port"].get("rate_gbps") == rate_gbps]
    if len(at_rate) > count:
        names = ", ".join(f"{r['ibdev']} ({r['pci']})" for r in at_rate)
        raise ValueError(
            f"{len(at_rate)} {link_layer} adapters at {rate_gbps} Gb/s for {count} rails: {names}; nothing tells the rails from "
            "another network's ports (storage, north-south), so none is picked: list the rails' PCI addresses in the pool's "
            "onprem.railAdapters"
        )
    keep = {r["pci"] for r in (at_rate if len(at_rate) == count else found)[:count]}
    return [r for r in found if r["pci"] in keep]


def ipoib_plan(
    facts: dict[str, Any], addresses: list[str], prefix: str = "ibrail", fabric: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Stable netdev name and address per rail: rail i is the i-th rail adapter by PCI address.

    ``fabric``: {technology, rails, rate_gbps} from the spec (default: every InfiniBand adapter).
    """
    fabric = fabric or {}
    selected = rails(
        facts, fabric.get("technology", "infiniband"), fabric.get("rails"), int(fabric.get("rate_gbps", 0)), fabric.get("adapters")
    )
    plan = []
    for index, rail in enumerate(selected):
        name = f"{prefix}{index}"
        plan.append(
            {
                "rail": index,
                "name": name,
                "ibdev": rail["ibdev"],
                "pci": rail["pci"],
                "netdev": _rail_netdev(name, rail["netdevs"]),
                "address": addresses[index] if index < len(addresses) else "",
            }
        )
    return plan


# a switchdev representor of a virtual or sub-function (mlx5 names it after its phys_port_name: ens1f0npf0vf3,
# ens1f0npf0sf88): it sits under the physical function's device/net beside the rail's own interface
_REPRESENTOR = re.compile(r"pf[0-9]+(?:vf|sf)[0-9]+$")


def _rail_netdev(name: str, netdevs: list[str]) -> str:
    """The rail's interface: its stable name where it has it already, else the adapter's first interface that is no
    representor. The first by name, whatever it was, took a representor (ens1f0npf0vf0 sorts before rorail0) or a
    dual-port adapter's other port (ib1 before ibrail0) for the rail, so every run took that interface down to rename
    it, and drained the node for it (review obsreview44 N-4)."""
    if name in netdevs:
        return name
    return next((n for n in netdevs if not _REPRESENTOR.search(n)), "")


# A name rdma-core's rdma_rename gives under NAME_PCI (the protocol, then P<domain>, p<bus>s<slot> or s<physical slot>,
# f<function>[v<vf>]): alicerce/targets/onprem/rules.py holds the same shape for AL392, and a test keeps the two equal
_N = "(?:0|[1-9][0-9]*)"
_NAME_PCI = re.compile(rf"(?:ib|roce|iw|opa|rdma)(?:P[1-9][0-9]*)?(?:p{_N}s{_N}|s[1-9][0-9]*)(?:f{_N}(?:v{_N})?)?(?:S{_N})?")
_PROTOCOL = {"InfiniBand": "ib", "Ethernet": "roce"}


def rdma_renames(facts: dict[str, Any]) -> list[str]:
    """The RDMA devices the naming rule will rename: those whose name is not NAME_PCI-shaped, as "old at pci -> new".

    The new name follows rdma_rename's by_pci (rdma-core kernel-boot/rdma_rename.c) from the PCI address alone, so it
    is a forecast: where the adapter is multi-function (f0 on a dual-port adapter's first port) the name differs in
    that part; an SR-IOV virtual function is named after its physical function's address (get_virtfn_info), with
    v<N> only where that function's name carries f<n>, so a virtual function of a single-function adapter is given
    its physical function's own name and the kernel refuses the rename; and the prefix is the kernel's protocol, which
    an Ethernet link layer reads as RoCE although an iWARP device's is iw. No s<N>: find_sun's sscanf("%s.%s") never
    matches a PCI address (%s takes it whole), so by_pci always names p<bus>s<slot>. For a rail's physical function on
    InfiniBand or RoCE the domain, bus and device are exact.
    """
    renames = []
    for hca in sorted(facts.get("infiniband", []), key=lambda h: str(h.get("name", ""))):
        name, pci = str(hca.get("name", "")), str(hca.get("pci", ""))
        if _NAME_PCI.fullmatch(name):
            continue
        layer = next((p.get("link_layer") for p in hca.get("ports", [])), "")
        match = re.fullmatch(r"([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-7])", pci)
        if match is None:
            renames.append(f"{name} at {pci or 'no PCI address'} -> not renamed (not a PCI device)")
            continue
        domain, bus, slot, function = (int(part, 16) for part in match.groups())
        new = _PROTOCOL.get(str(layer), "rdma") + (f"P{domain}" if domain else "") + f"p{bus}s{slot}" + (f"f{function}" if function else "")
        renames.append(f"{name} at {pci} -> {new}")
    return renames


def _policy_name(state_text: str) -> str | None:
    """``policyName`` of a kubelet cpu/memory manager state file (None when there is no file or it is unreadable)."""
    if not state_text:
        return None
    try:
        return str(json.loads(state_text).get("policyName", "")).lower()
    except (ValueError, AttributeError):
        return "unreadable"


def resource_manager_reset(cpu_state: str, memory_state: str, cpu_policy: str, memory_policy: str) -> dict[str, Any]:
    """Which kubelet resource-manager state files must go before kubelet starts with new policies.

    kubelet refuses to start when the policy in its state file differs from its configuration, so
    a file is removed only when its policy changes (never on other config changes), and the node
    is drained first because its pods lose their exclusive CPUs and memory.
    """
    remove = []
    for name, text, want in (("cpu_manager_state", cpu_state, cpu_policy), ("memory_manager_state", memory_state, memory_policy)):
        have = _policy_name(text)
        if have is not None and have != want.lower():
            remove.append(name)
    return {"reset": bool(remove), "files": remove}


def label_changes(current: dict[str, str], managed: str, wanted: dict[str, str]) -> dict[str, Any]:
    """Labels to remove from a node: those alicerce set before (its annotation) that the spec no longer has.

    kubespray only ever adds labels (``kubectl label --overwrite``); a label someone else set is
    never touched because only keys recorded in alicerce's annotation are candidates.
    """
    before = {k for k in managed.split(",") if k}
    remove = sorted(k for k in before - set(wanted) if k in current)
    return {"remove": remove, "annotation": ",".join(sorted(wanted))}


def taint_changes(current: list[dict[str, str]], managed: str, wanted: list[str]) -> dict[str, Any]:
    """Taints to remove (``key:Effect-``) that alicerce applied before and the spec dropped; the new annotation."""
    want = {f"{t.split('=', 1)[0].split(':', 1)[0]}:{t.rpartition(':')[2]}" for t in wanted}
    before = {k for k in managed.split(",") if k}
    present = {f"{t.get('key')}:{t.get('effect')}" for t in current or []}
    remove = sorted(f"{k}-" for k in (before - want) & present)
    return {"remove": remove, "annotation": ",".join(sorted(want))}


def node_holds(text: str, pending_taint: str) -> dict[str, bool]:
    """What keeps a node from work (``kubectl get node -o json``): the acceptance taint it joined with, alicerce's drain."""
    try:
        node = json.loads(text or "{}")
    except ValueError:
        node = {}
    key, _, rest = pending_taint.partition("=")
    effect = rest.rpartition(":")[2]
    taints = node.get("spec", {}).get("taints") or []
    annotations = node.get("metadata", {}).get("annotations") or {}
    return {
        "pending": any(t.get("key") == key and t.get("effect") == effect for t in taints),
        "drained": annotations.get("alicerce.dev/drained") == "true",
    }


REPOSITORY_ARCH = {
    # NVIDIA's CUDA network repository: Arm servers are "sbsa"
    "cuda": {"x86_64": "x86_64", "aarch64": "sbsa"},
    # DOCA-Host repositories: arm64-sbsa
    "doca": {"x86_64": "x86_64", "aarch64": "arm64-sbsa"},
    # Debian architecture names (the toolkit's generic deb repository)
    "deb": {"x86_64": "amd64", "aarch64": "arm64"},
}


def repository_arch(architecture: str, kind: str) -> str:
    """The path segment a vendor repository uses for an Ansible ``architecture`` fact."""
    try:
        return REPOSITORY_ARCH[kind][architecture]
    except KeyError:
        raise ValueError(f"no {kind} repository for architecture {architecture}") from None


def fabricmanager_packages(branch: str, version: str) -> list[str]:
    """Fabric Manager and NSCQ at exactly the driver version.

    From branch 580 the packages drop the branch suffix (nvidia-fabricmanager, libnvidia-nscq); the
    version is matched with a glob because the packaging revision differs between repositories.
    """
    suffix = "" if int(branch) >= 580 else f"-{branch}"
    return [f"nvidia-fabricmanager{suffix}={version}-*", f"libnvidia-nscq{suffix}={version}-*"]


def pinned_packages(names: list[str], version: str, unversioned: list[str] | None = None) -> list[str]:
    """apt package specs at the driver's exact version: ``name=<version>-*`` (any packaging revision).

    A bare name with ``state: present`` is never upgraded once installed, so a changed spec version
    would not reach the node (ansible.builtin.apt installs ``name=version`` when the installed
    version does not match). Packages whose version is not the driver's (Ubuntu's
    ``linux-modules-nvidia-*`` carry the kernel's version) keep their bare name; the apt preference
    still holds them to the spec's source.
    """
    skip = tuple(unversioned or [])
    return [n if "=" in n or (skip and n.startswith(skip)) else f"{n}={version}-*" for n in names]


def driver_upgrade(loaded: str, pinned: str) -> bool:
    """Whether a running node must be drained before its driver packages change: another driver is loaded."""
    return bool(loaded) and loaded != pinned


def driver_action(loaded: str, pinned: str, changed: bool) -> str:
    """After the driver packages: ``reboot`` (changed packages, or another driver loaded), ``load``, or ``none``."""
    if changed or (loaded and loaded != pinned):
        return "reboot"
    return "none" if loaded == pinned else "load"


class FilterModule:
    """Filters for the alicerce roles (names prefixed ``alicerce_``)."""

    def filters(self) -> dict[str, Any]:
        return {
            "alicerce_pci_count": pci_count,
            "alicerce_kernel_at_least": kernel_at_least,
            "alicerce_scratch_plan": scratch_plan,
            "alicerce_with_signatures": with_signatures,
            "alicerce_rails": rails,
            "alicerce_ipoib_plan": ipoib_plan,
            "alicerce_rdma_renames": rdma_renames,
            "alicerce_resource_manager_reset": resource_manager_reset,
            "alicerce_label_changes": label_changes,
            "alicerce_taint_changes": taint_changes,
            "alicerce_node_holds": node_holds,
            "alicerce_repository_arch": repository_arch,
            "alicerce_fabricmanager_packages": fabricmanager_packages,
            "alicerce_driver_action": driver_action,
            "alicerce_driver_upgrade": driver_upgrade,
            "alicerce_pinned_packages": pinned_packages,
        }
