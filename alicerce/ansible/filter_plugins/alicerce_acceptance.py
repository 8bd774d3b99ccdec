"""Acceptance and burn-in: parse what the real tools print and judge a node against the spec.

Every parser reads the documented output of one tool (nvidia-smi CSV queries, ``nvidia-smi
nvlink --status``, ``nvidia-smi -q``, ``dcgmi diag -j``, NCCL's ``all_reduce_perf``,
``ib_write_bw --report_gbits``, ``nvbandwidth``, ``ip -j addr``, ``kubectl get node -o json`` and
the kernel log), so the decisions are unit-tested on recorded outputs (tests/ansible/fixtures/tools)
and the role only runs the commands. :func:`acceptance_report` turns the observations into checks
with a threshold and a measured value each.
"""

from __future__ import annotations

import json
import re
from typing import Any

# XIDs an application causes (its own faults and resets); any other XID since boot is the hardware's
# or the driver's and fails the node (NVIDIA GPU Deployment and Management, "XID Errors").
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 69})
_GPU_FIELDS = (
    "index",
    "bus_id",
    "driver_version",
    "name",
    "persistence_mode",
    "ecc_mode",
    "ecc_uncorrected",
    "pcie_gen_max",
    "pcie_width",
)
GPU_QUERY = (
    "index,pci.bus_id,driver_version,name,persistence_mode,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,pcie.link.gen.max,pcie.link.width.current"
)


def _csv(line: str) -> list[str]:
    return [f.strip() for f in line.split(",")]


def parse_gpu_query(text: str) -> list[dict[str, str]]:
    """``nvidia-smi --query-gpu=<GPU_QUERY> --format=csv,noheader,nounits``: one dict per GPU."""
    gpus = []
    for line in text.splitlines():
        fields = _csv(line)
        if len(fields) >= len(_GPU_FIELDS) and fields[0].isdigit():
            gpus.append(dict(zip(_GPU_FIELDS, fields, strict=False)))
    return gpus


def parse_remapped_rows(text: str) -> list[dict[str, Any]]:
    """``nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,
    remapped_rows.pending,remapped_rows.failure --format=csv,noheader``."""
    rows = []
    for line in text.splitlines():
        fields = _csv(line)
        if len(fields) < 5 or ":" not in fields[0]:
            continue
        rows.append(
            {
                "bus_id": fields[0],
                "correctable": _int(fields[1]),
                "uncorrectable": _int(fields[2]),
                "pending": fields[3].lower() in ("yes", "true", "1"),
                "failure": fields[4].lower() in ("yes", "true", "1"),
            }
        )
    return rows


def _int(text: str) -> int:
    return int(text) if text.strip().isdigit() else 0


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


_XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)")


def parse_xids(text: str) -> list[dict[str, Any]]:
    """XIDs in the kernel log since boot (``journalctl -k -b -o cat``), with whether an application causes them."""
    found = []
    for line in text.splitlines():
        match = _XID.search(line)
        if match:
            xid = int(match.group(2))
            found.append({"bus_id": match.group(1), "xid": xid, "application": xid in APPLICATION_XIDS, "line": line.strip()})
    return found


def holds_boot_start(text: str) -> bool:
    """Whether a kernel log read still holds this boot's first message ("Linux version ..."): a journal whose early
    part was rotated away, a wrapped ring buffer or an empty journal (``-- No entries --``) may have lost an XID."""
    return any("Linux version " in line for line in text.splitlines()[:50])


def kernel_log(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The XIDs of the first kernel log that was read (journal, then ring buffer), or why none was.

    ``results`` are the registered runs in order of preference; a skipped or failed run is passed over.
    An unread log is ``xids: None``: the XID check then fails as unknown instead of reading "none".
    """
    errors = []
    for result in results:
        if not isinstance(result, dict) or result.get("skipped"):
            continue
        command = " ".join(str(a) for a in result.get("cmd") or []) or "the kernel log"
        text = str(result.get("stdout", ""))
        if result.get("rc") == 0 and holds_boot_start(text):
            return {"xids": parse_xids(text), "error": ""}
        if result.get("rc") == 0:  # volatile, rotated or wrapped: what was lost may have held an XID
            errors.append(f"{command}: no longer holds the start of this boot")
            continue
        errors.append(f"{command}: {result.get('msg') or result.get('stderr') or 'rc ' + str(result.get('rc'))}".strip())
    return {"xids": None, "error": "; ".join(errors) or "no kernel log was read"}


def parse_dcgm_diag(text: str) -> dict[str, Any]:
    """``dcgmi diag -r LEVEL -j``: the overall result and every test that did not pass (DCGM 3 and 4 layouts)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {"result": "error", "failed": ["dcgmi diag printed no JSON"], "warnings": []}
    categories = (data.get("DCGM GPU Diagnostic") or data.get("DCGM Diagnostic") or {}).get("test_categories", [])
    failed, warnings = [], []
    for category in categories:
        for test in category.get("tests", []):
            for result in test.get("results", []):
                status = str(result.get("status", "")).lower()
                where = f"{test.get('name', '?')}" + (f" gpu {result['gpu_id']}" if "gpu_id" in result else "")
                if status == "fail":
                    failed.append(where)
                elif status == "warn":
                    warnings.append(where)
    if not categories:
        return {"result": "error", "failed": ["no test results"], "warnings": []}
    return {"result": "fail" if failed else "pass", "failed": failed, "warnings": warnings}


def parse_all_reduce(text: str) -> dict[str, float]:
    """NCCL ``all_reduce_perf``: bus bandwidth (GB/s) of the largest message (out of place) and the average it prints."""
    largest, busbw = -1, 0.0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 12 and fields[0].isdigit() and fields[2] in ("float", "half", "bfloat16", "double", "int8", "uint8"):
            size = int(fields[0])
            if size > largest:
                largest, busbw = size, float(fields[7])
    match = re.search(r"Avg bus bandwidth\s*:\s*([\d.]+)", text)
    return {"busbw_gbps": busbw, "average_gbps": float(match.group(1)) if match else 0.0, "bytes": float(max(largest, 0))}


def parse_ib_write_bw(text: str) -> float:
    """``ib_write_bw --report_gbits``: BW average in Gbit/s of the last size measured (0 when none)."""
    value = 0.0
    in_table = False
    for line in text.splitlines():
        if "BW average" in line:
            in_table = True
            continue
        fields = line.split()
        if in_table and len(fields) >= 4 and fields[0].isdigit():
            value = float(fields[3])
    return value


def parse_nvbandwidth(text: str, testcase: str = "device_to_device_memcpy_write_ce") -> float:
    """``nvbandwidth -t TESTCASE``: the slowest GPU pair (GB/s) of its matrix (0 when the test did not run)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(f"Running {testcase}")), None)
    if start is None:
        return 0.0
    values = []
    for line in lines[start + 2 :]:
        if not line.strip() or line.startswith("SUM"):
            break
        fields = line.split()
        if fields and fields[0].isdigit():
            values += [float(f) for f in fields[1:] if re.fullmatch(r"\d+\.\d+", f)]  # the column header holds integers
    return min(values) if values else 0.0


def parse_ip_addresses(text: str) -> dict[str, list[str]]:
    """``ip -j addr show``: address/prefix of every interface."""
    try:
        links = json.loads(text or "[]")
    except ValueError:
        return {}
    return {
        link["ifname"]: [f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a.get("family") in ("inet", "inet6")]
        for link in links
    }


def parse_node(text: str) -> dict[str, Any]:
    """``kubectl get node NAME -o json``: Ready and the allocatable resources."""
    try:
        node = json.loads(text)
    except ValueError:
        return {"ready": False, "allocatable": {}, "error": "no node object"}
    conditions = {c.get("type"): c.get("status") for c in node.get("status", {}).get("conditions", [])}
    return {"ready": conditions.get("Ready") == "True", "allocatable": node.get("status", {}).get("allocatable", {})}


def _check(checks: list[dict[str, Any]], name: str, want: Any, got: Any, ok: bool) -> None:
    checks.append({"check": name, "expected": want, "actual": got, "ok": bool(ok)})


def _gpu_checks(checks: list[dict[str, Any]], observed: dict[str, Any], expected: dict[str, Any]) -> None:
    gpus = observed.get("gpus")
    if gpus is None:
        _check(checks, "gpu count", expected["gpu_count"], observed.get("nvidia_smi_error", "nvidia-smi failed"), False)
        return
    _check(checks, "gpu count", expected["gpu_count"], len(gpus), len(gpus) == expected["gpu_count"])
    versions = sorted({g["driver_version"] for g in gpus})
    if expected.get("driver_version"):
        want = expected["driver_version"]
        _check(checks, "driver version", want, ", ".join(versions) or "none", versions == [want])
    off = [g["index"] for g in gpus if g.get("persistence_mode") != "Enabled"]
    _check(checks, "persistence mode", "Enabled", f"off on GPU {', '.join(off)}" if off else "Enabled", not off)
    ecc_off = [g["index"] for g in gpus if g.get("ecc_mode") not in ("Enabled", "[N/A]", "N/A")]
    _check(checks, "ecc mode", "Enabled", f"off on GPU {', '.join(ecc_off)}" if ecc_off else "Enabled", not ecc_off)
    uncorrected = [f"GPU {g['index']}={g['ecc_uncorrected']}" for g in gpus if g.get("ecc_uncorrected", "0") not in ("0", "[N/A]", "N/A")]
    _check(checks, "ecc uncorrected errors", 0, ", ".join(uncorrected) or 0, not uncorrected)
    gen = int(expected.get("pcie_generation") or 0)
    if gen:
        slow = [f"GPU {g['index']}=gen{g.get('pcie_gen_max')}" for g in gpus if _int(str(g.get("pcie_gen_max", ""))) < gen]
        _check(checks, "pcie generation", f">= gen{gen}", ", ".join(slow) or f"gen{gen}", not slow)
    width = int(expected.get("pcie_width") or 0)
    if width:
        narrow = [f"GPU {g['index']}=x{g.get('pcie_width')}" for g in gpus if _int(str(g.get("pcie_width", ""))) < width]
        _check(checks, "pcie width", f"x{width}", ", ".join(narrow) or f"x{width}", not narrow)
    rows = observed.get("remapped_rows") or []
    bad_rows = [r["bus_id"] for r in rows if r["pending"] or r["failure"] or r["uncorrectable"] > 0]
    _check(checks, "row remapping", "no pending, failed or uncorrectable", ", ".join(bad_rows) or "clean", not bad_rows)
    log = observed.get("kernel_log") or {"xids": None, "error": "no kernel log was read"}
    if log["xids"] is None:
        _check(checks, "xid since boot", "none (hardware or driver)", f"unknown: {log['error']}", False)
    else:
        hardware_xids = [f"{x['bus_id']}: Xid {x['xid']}" for x in log["xids"] if not x["application"]]
        _check(checks, "xid since boot", "none (hardware or driver)", "; ".join(hardware_xids) or "none", not hardware_xids)
    if expected.get("nvswitch"):
        down = observed.get("nvlink_down")
        _check(checks, "nvlinks up", "all", "unknown" if down is None else (", ".join(down) or "all"), down == [])
        states = observed.get("fabric_states") or []
        ok = bool(states) and all(s == "Completed" for s in states)
        _check(checks, "fabric manager state", "Completed on every GPU", ", ".join(sorted(set(states))) or "none", ok)


def _not_installed(checks: list[dict[str, Any]], name: str, want: Any, why: str) -> None:
    """A burn-in that did not run: reported as skipped with the reason, not as a failed node.

    No alicerce role installs NCCL's tests, nvbandwidth or an MPI, and DCGM's diagnostic plugins come
    with a CUDA-specific package node_monitoring does not install: a missing tool says so in the
    report instead of failing every node. A node whose workloads still run is never loaded either.
    """
    checks.append({"check": name, "expected": want, "actual": f"not run: {why}", "ok": True, "skipped": True})


def workload_pods(text: str) -> list[str]:
    """``kubectl get pods -A --field-selector spec.nodeName=NODE -o json``: the running pods that are workloads.

    DaemonSet pods (device plugin, exporters, CNI) and static pods stay on a drained node; anything
    else means the node carries someone's job and must not be burned in (issue 20: burn-in only on a
    node that never took work or that alicerce drained).
    """
    try:
        items = json.loads(text or "{}").get("items", [])
    except ValueError:
        return []
    busy = []
    for pod in items:
        meta = pod.get("metadata", {})
        if pod.get("status", {}).get("phase") not in ("Running", "Pending"):
            continue
        if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            continue
        if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            continue
        busy.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return sorted(busy)


def allocatable_ready(text: str, expected: dict[str, str]) -> bool:
    """Whether the node offers exactly the expected count of each extended resource.

    Exactly: a device plugin re-registers after a reboot (fewer, for a while), and more than promised means the
    plugin shares or splits GPUs the pool does not declare (time-slicing, MIG), which quotas would not expect.
    """
    offered = parse_node(text).get("allocatable", {})
    return all(str(offered.get(name, "0")) == str(count) for name, count in expected.items())


def allocatable_report(text: str, expected: dict[str, str]) -> str:
    """What keeps a node from cluster acceptance (Ready, each resource at exactly its promised count); "accepted" if nothing."""
    node = parse_node(text)
    offered = node.get("allocatable", {})
    problems = [] if node.get("ready") else [f"not Ready ({node.get('error', 'Ready is not True')})"]
    problems += [
        f"{name}: expected {count}, offers {offered.get(name, 0)}"
        for name, count in sorted(expected.items())
        if str(offered.get(name, "0")) != str(count)
    ]
    return "; ".join(problems) or "accepted"


def _burn_in_checks(checks: list[dict[str, Any]], observed: dict[str, Any], expected: dict[str, Any]) -> None:
    missing = {
        key: f"{tool} is not installed on the node (install it, or set the floor to 0)"
        for key, tool in (observed.get("missing_tools") or {}).items()
    }
    busy: list[str] = observed.get("workload_pods") or []
    if busy:
        why = f"{len(busy)} workload pods run on the node ({', '.join(busy[:3])}): drain it to burn it in"
        missing = dict.fromkeys(BURN_IN_TOOLS, why)
    level = int(expected.get("dcgm_diag_level") or 0)
    if level and "dcgm_diag" in missing:
        _not_installed(checks, f"dcgmi diag level {level}", "pass", missing["dcgm_diag"])
    elif level:
        diag = observed.get("dcgm_diag") or {"result": "not run", "failed": []}
        _check(checks, f"dcgmi diag level {level}", "pass", "; ".join(diag["failed"]) or diag["result"], diag["result"] == "pass")
    for key, name in (("nccl_busbw_gbps", "nccl all-reduce busbw in node"), ("p2p_bw_gbps", "gpu-to-gpu bandwidth")):
        floor = float(expected.get(key) or 0)
        if floor and key in missing:
            _not_installed(checks, name, f">= {floor} GB/s", missing[key])
        elif floor:
            got = float(observed.get(key) or 0)
            _check(checks, name, f">= {floor} GB/s", f"{got} GB/s", got >= floor)
    floor = float(expected.get("nccl_internode_busbw_gbps") or 0)
    if floor and "nccl_internode_busbw_gbps" in missing:
        _not_installed(checks, "nccl all-reduce busbw across nodes", f">= {floor} GB/s", missing["nccl_internode_busbw_gbps"])
    elif floor:
        got = observed.get("nccl_internode_busbw_gbps")
        if got is None:
            _check(checks, "nccl all-reduce busbw across nodes", f">= {floor} GB/s", "not run: a batch of one host", True)
        else:
            _check(checks, "nccl all-reduce busbw across nodes", f">= {floor} GB/s", f"{float(got)} GB/s", float(got) >= floor)
    floor = float(expected.get("ib_write_bw_gbps") or 0)
    if floor and "ib_write_bw" in missing:
        _not_installed(checks, "ib_write_bw per rail", f">= {floor} Gb/s", missing["ib_write_bw"])
    elif floor:
        measured = observed.get("ib_write_bw") or {}
        slow = [f"{dev}={bw}" for dev, bw in sorted(measured.items()) if float(bw) < floor]
        missing = int(expected.get("hca_count") or 0) - len(measured)
        got = ", ".join(slow) or (f"{len(measured)} rails >= {floor}" if missing <= 0 else f"{missing} rails not measured")
        _check(checks, "ib_write_bw per rail", f">= {floor} Gb/s", got, not slow and missing <= 0)


def _rail_checks(checks: list[dict[str, Any]], observed: dict[str, Any], expected: dict[str, Any]) -> None:
    technology = "infiniband" if expected.get("hca_link_layer") == "InfiniBand" else "roce"
    rate = int(expected.get("hca_rate_gbps") or 0)
    found = observed.get("rails") or []  # the spec's rails, chosen by alicerce_rails (extra adapters left out)
    _check(checks, "hca count", expected["hca_count"], len(found), len(found) == expected["hca_count"])
    not_active = [r["ibdev"] for r in found if not str(r["port"].get("state", "")).endswith("ACTIVE")]
    _check(checks, "hca ports active", "all", ", ".join(not_active) or "all", not not_active)
    if rate:
        slow = [f"{r['ibdev']}={r['port'].get('rate_gbps')}" for r in found if r["port"].get("rate_gbps") != rate]
        _check(checks, "hca rate", f"{rate} Gb/s", ", ".join(slow) or f"{rate} Gb/s", not slow)
    wanted = expected.get("rail_addresses") or []
    if wanted:
        addresses = observed.get("addresses") or {}
        prefix = "ibrail" if technology == "infiniband" else "rorail"
        missing = [f"{prefix}{i} {a}" for i, a in enumerate(wanted) if a not in addresses.get(f"{prefix}{i}", [])]
        _check(checks, "rail addresses", ", ".join(wanted), "missing " + ", ".join(missing) if missing else "all", not missing)


def acceptance_report(observed: dict[str, Any], expected: dict[str, Any]) -> list[dict[str, Any]]:
    """Every acceptance and burn-in check of one node: the threshold, the measured value, and ``ok``."""
    checks: list[dict[str, Any]] = []
    if expected.get("gpu_count", 0) > 0:
        _gpu_checks(checks, observed, expected)
        _burn_in_checks(checks, observed, expected)
    if expected.get("hca_count", 0) > 0:
        _rail_checks(checks, observed, expected)
    mounts = {m["path"]: m for m in observed.get("facts", {}).get("mounts", [])}
    scratch = expected.get("scratch_path", "")
    if scratch:
        mount = mounts.get(scratch)
        if mount is None:
            _check(checks, "scratch mounted", scratch, "not mounted", False)
        else:
            source = str(mount.get("source", ""))
            local = source.startswith(("/dev/md", "/dev/nvme"))  # an md RAID0, or the one NVMe disk used directly
            _check(checks, "scratch on local nvme", "/dev/md/* or /dev/nvme*", source, local)
            size, want_size = int(mount.get("size_bytes", 0)), int(expected.get("scratch_min_bytes", 1))
            _check(checks, "scratch size", f">= {want_size}", size, size >= want_size)
    for path in expected.get("mounts", []):
        _check(checks, f"mounted {path}", "mounted", mounts.get(path, {}).get("fstype", "not mounted"), path in mounts)
    allocatable = expected.get("allocatable") or {}
    if allocatable:
        node = observed.get("node") or {"ready": False, "allocatable": {}}
        _check(checks, "node ready", "True", str(node.get("ready")), bool(node.get("ready")))
        short = [
            f"{r}={node['allocatable'].get(r, 0)}"
            for r, n in sorted(allocatable.items())
            if _int(str(node["allocatable"].get(r, "0"))) != int(n)  # exactly, as allocatable_ready
        ]
        want = ", ".join(f"{r}={n}" for r, n in sorted(allocatable.items()))
        _check(checks, "node allocatable", want, ", ".join(short) or want, not short)
    return checks


def failed_checks(report: list[dict[str, Any]]) -> list[str]:
    return [f"{c['check']}: expected {c['expected']}, found {c['actual']}" for c in report if not c["ok"]]


def skipped_checks(report: list[dict[str, Any]]) -> list[str]:
    return [f"{c['check']}: {c['actual']}" for c in report if c.get("skipped")]


# The burn-in checks by the tool they run (a key of node_validation_tools) and the observation they fill.
BURN_IN_TOOLS = {
    "dcgm_diag": "dcgmi",
    "nccl_busbw_gbps": "all_reduce_perf",
    "p2p_bw_gbps": "p2p_bandwidth",
    "ib_write_bw": "ib_write_bw",
    "nccl_internode_busbw_gbps": "mpirun",
}


def missing_tools(absent: list[str], tools: dict[str, str]) -> dict[str, str]:
    """The burn-in observations whose tool is not on the node, from the commands ``command -v`` did not find.

    ``absent``: the first word of each node_validation_tools command that was not found. The
    across-node all-reduce needs both mpirun and all_reduce_perf.
    """
    gone = set(absent)
    found: dict[str, str] = {}
    for observation, key in BURN_IN_TOOLS.items():
        needed = [tools[key].split()[0]] + ([tools["all_reduce_perf"].split()[0]] if key == "mpirun" else [])
        lacking = [command for command in needed if command in gone]
        if lacking:
            found[observation] = " and ".join(lacking)
    return found


class FilterModule:
    """Filters of the acceptance run (names prefixed ``alicerce_``)."""

    def filters(self) -> dict[str, Any]:
        return {
            "alicerce_gpu_query": parse_gpu_query,
            "alicerce_remapped_rows": parse_remapped_rows,
            "alicerce_nvlink_down": parse_nvlink_down,
            "alicerce_fabric_states": parse_fabric_states,
            "alicerce_xids": parse_xids,
            "alicerce_kernel_log": kernel_log,
            "alicerce_holds_boot_start": holds_boot_start,
            "alicerce_dcgm_diag": parse_dcgm_diag,
            "alicerce_missing_tools": missing_tools,
            "alicerce_workload_pods": workload_pods,
            "alicerce_allocatable_ready": allocatable_ready,
            "alicerce_allocatable_report": allocatable_report,
            "alicerce_skipped_checks": skipped_checks,
            "alicerce_all_reduce": parse_all_reduce,
            "alicerce_ib_write_bw": parse_ib_write_bw,
            "alicerce_nvbandwidth": parse_nvbandwidth,
            "alicerce_ip_addresses": parse_ip_addresses,
            "alicerce_node": parse_node,
            "alicerce_acceptance_report": acceptance_report,
            "alicerce_failed_checks": failed_checks,
        }
