#!/usr/bin/python3
"""Client I/O counters of the storage tiers a node mounts, for the node exporter's textfile collector.

The node exporter reads local disks and NICs, not what a node reads from each tier: Lustre keeps its
client counters in llite stats (read through `lctl list_param` and `get_param`, the interface Lustre
documents across releases), NFS in /proc/self/mountstats. One file, written whole and renamed, so a scrape never reads
half of it. BeeGFS clients keep no per-mount byte counters (its per-client stats live on the servers),
so BeeGFS tiers are not listed here.

Runs on the node from a systemd timer, with the node's own python3 and nothing else installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FILE_NAME = "alicerce_storage.prom"
"""The file in the textfile directory (the alert on stale counters names it)."""

METRICS = {
    "alicerce_storage_client_read_bytes_total": ("counter", "Bytes applications read from the tier on this node."),
    "alicerce_storage_client_written_bytes_total": ("counter", "Bytes applications wrote to the tier on this node."),
    "alicerce_storage_client_reads_total": ("counter", "Read operations: read calls on Lustre (llite), READ RPCs on NFS."),
    "alicerce_storage_client_writes_total": ("counter", "Write operations: write calls on Lustre (llite), WRITE RPCs on NFS."),
    "alicerce_storage_client_metadata_operations_total": (
        "counter",
        "Metadata operations: open, close, stat, lookup, readdir, create, unlink ... (llite on Lustre, RPCs on NFS).",
    ),
    "alicerce_storage_client_metadata_wait_seconds_total": (
        "counter",
        "Time the tier's metadata operations took, summed over the calls: how many waited on metadata at once, on average.",
    ),
    "alicerce_storage_client_data_wait_seconds_total": (
        "counter",
        "The same for read, write and fsync calls on Lustre (llite), READ and WRITE RPCs on NFS.",
    ),
    "alicerce_storage_client_up": ("gauge", "1 when the tier is mounted where the spec mounts it and its counters were read."),
}
"""Every series this collector writes (tests check that dashboards and rules read only produced series)."""

Counters = dict[str, float]

# Lustre's llite stats time each file and inode operation in microseconds (lustre-release lustre/llite/lproc_llite.c
# llite_opcode_table: LPROCFS_TYPE_LATENCY, unit "usec"; clients before 2.14 count them as [reqs], untimed). The
# metadata ones: what a loader of many small files waits on at the metadata server. Not openclosetime (the time files
# stay open), seek, mmap or page faults
LUSTRE_METADATA = frozenset((
    "open", "close", "getattr", "setattr", "readdir", "create", "link", "unlink", "symlink", "mkdir", "rmdir", "mknod",
    "rename", "statfs", "getxattr", "setxattr", "listxattr", "removexattr", "inode_permission",
))  # fmt: skip
# ... and the data ones. A write call's time includes its wait for the OSC's dirty cache or grant (osc/osc_cache.c
# osc_enter_cache, inside the call), and fsync's (LPROCFS_TYPE_LATENCY "fsync" in the same table) the wait for the
# flushed pages (obdclass/cl_io.c cl_sync_io_wait): neither sleeps in io_schedule(), so IO pressure does not show
# a checkpoint stalled on them and these timings are what does (review obsreview27 G6)
LUSTRE_DATA = frozenset(("read", "write", "fsync"))
# NFS's per-op RPC statistics (Linux net/sunrpc/stats.c _print_rpc_iostats: NAME: ops, transmissions, timeouts, bytes
# sent, bytes received, queue, RTT and execute milliseconds[, errors]); execute is each call's whole time, queue and
# retransmissions included: what the caller waited. Procedure names of NFSv3 and v4 (fs/nfs/nfs3xdr.c, nfs4xdr.c)
NFS_METADATA = frozenset((
    "GETATTR", "SETATTR", "LOOKUP", "LOOKUPP", "LOOKUP_ROOT", "ACCESS", "READLINK", "CREATE", "MKDIR", "SYMLINK",
    "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "STATFS",
    "OPEN", "OPEN_NOATTR", "OPEN_CONFIRM", "OPEN_DOWNGRADE", "CLOSE", "GETACL", "SETACL", "GETXATTR", "SETXATTR",
    "LISTXATTRS", "REMOVEXATTR",
))  # fmt: skip
NFS_DATA = frozenset(("READ", "WRITE"))

TIMEOUT = 10.0
"""Seconds a mount, lctl or lfs may take to answer before the tier reads as down."""

PROBE = ("import os, sys", "path = os.path.realpath(sys.argv[1])", "os.statvfs(path)", "print(path)")
"""What a child runs to see that a tier's mount answers: resolve its path (a link into it is followed) and statfs it."""


def mounts(proc_root: Path) -> dict[str, tuple[str, str]]:
    """Mount point -> (source, file system type), from the node's mount table."""
    table: dict[str, tuple[str, str]] = {}
    for line in (proc_root / "self" / "mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3:
            table[fields[1].replace("\\040", " ")] = (fields[0], fields[2])
    return table


def lustre_counters(text: str) -> Counters:
    """`lctl get_param -n llite.FS-INSTANCE.stats`: 'NAME COUNT samples [UNIT] MIN MAX SUM [SUMSQ]'."""
    out = {"read_bytes": 0.0, "written_bytes": 0.0, "reads": 0.0, "writes": 0.0, "metadata_operations": 0.0}
    waits = {"metadata_wait_seconds": 0.0, "data_wait_seconds": 0.0}
    timed = False
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] != "samples":
            continue
        name, count, unit = fields[0], float(fields[1]), fields[3]
        if len(fields) >= 7 and name in ("read_bytes", "write_bytes"):
            kind = "read" if name == "read_bytes" else "write"
            out["reads" if kind == "read" else "writes"] += count
            out["read_bytes" if kind == "read" else "written_bytes"] += float(fields[6])
        if name in LUSTRE_METADATA:
            out["metadata_operations"] += count
        microseconds = len(fields) >= 7 and unit.startswith("[usec")  # the manual writes [usecs], 2.15's source [usec]
        if microseconds and (name in LUSTRE_METADATA or name in LUSTRE_DATA):
            waits["metadata_wait_seconds" if name in LUSTRE_METADATA else "data_wait_seconds"] += float(fields[6]) / 1e6
            timed = True
    return {**out, **waits} if timed else out  # an untimed client says nothing of its waits, not 0


def nfs_counters(mountstats: str, path: str) -> Counters | None:
    """/proc/self/mountstats for the mount at ``path``: application bytes (normal and O_DIRECT) and READ/WRITE RPCs."""
    block: list[str] | None = None
    inside = False
    for line in mountstats.splitlines():
        if line.startswith("device "):
            fields = line.split()  # device SOURCE mounted on PATH with fstype TYPE ...
            inside = len(fields) > 7 and fields[4].replace("\\040", " ") == path and fields[7].startswith("nfs")
            block = [] if inside else block
        elif inside and block is not None:
            block.append(line.strip())
    if block is None:
        return None
    out = {"read_bytes": 0.0, "written_bytes": 0.0, "reads": 0.0, "writes": 0.0, "metadata_operations": 0.0}
    out |= {"metadata_wait_seconds": 0.0, "data_wait_seconds": 0.0}
    for line in block:
        name, _, rest = line.partition(":")
        values = rest.split()
        if name == "bytes" and len(values) >= 4:
            # normal read, normal write, direct read, direct write, then what the server sent and received
            out["read_bytes"] = float(values[0]) + float(values[2])
            out["written_bytes"] = float(values[1]) + float(values[3])
        elif name in NFS_DATA and values:
            out["reads" if name == "READ" else "writes"] = float(values[0])
        if (name in NFS_METADATA or name in NFS_DATA) and len(values) >= 8:
            if name in NFS_METADATA:
                out["metadata_operations"] += float(values[0])
            out["metadata_wait_seconds" if name in NFS_METADATA else "data_wait_seconds"] += float(values[7]) / 1e3
    return out


def answering(path: str, probe: list[str], timeout: float) -> str | None:
    """``path`` resolved, when its mount answers a statfs within ``timeout``; else None. A hard NFS mount whose server
    is gone, or a Lustre client the servers evicted, blocks every stat under it: in a child, which the collector kills
    and never waits for, so one hung mount reads as down and the other tiers are still written."""
    try:
        child = subprocess.Popen([*probe, path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()  # a task blocked on NFS or Lustre is killable; if it is not, it is left behind, not waited for
        return None
    return out.strip() if child.returncode == 0 and out.strip() else None


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def lustre_instance(lfs: str, lctl: str, fsname: str, path: str, timeout: float) -> str | None:
    """The llite instance mounted at ``path``: ``lfs getname PATH`` prints 'FSNAME-INSTANCE PATH' (Lustre's
    test-framework.sh get_client_uuid reads the llite instance of a mount point this way). Two tiers on one file system
    (or the same file system also mounted elsewhere) have two instances: each tier counts its own mount's. Without lfs,
    the only instance of the file system, or none when it is mounted more than once (it cannot tell which)."""
    done = _run([lfs, "getname", path], timeout)
    if done is not None and done.returncode == 0 and done.stdout.split():
        return done.stdout.split()[0]
    instances = lustre_instances(lctl, fsname, timeout)
    return instances[0] if len(instances) == 1 else None


def lustre_instances(lctl: str, fsname: str, timeout: float = TIMEOUT) -> list[str]:
    """The llite instances of file system ``fsname`` on this node: ``lctl list_param llite.*`` names each
    'llite.FSNAME-INSTANCE', the instance a hexadecimal address. Matched whole, never by a ``FSNAME-*`` pattern, which
    also takes a file system named ``FSNAME-b``; a file system mounted twice has two instances, summed."""
    done = _run([lctl, "list_param", "llite.*"], timeout)
    if done is None or done.returncode != 0:
        return []
    whole = re.compile(rf"llite\.({re.escape(fsname)}-[0-9a-f]+)")
    return [m.group(1) for line in done.stdout.splitlines() if (m := whole.fullmatch(line.strip()))]


def read_tier(
    tier: dict[str, str], table: dict[str, tuple[str, str]], proc_root: Path, tools: dict[str, str], *, probe: list[str], timeout: float
) -> Counters | None:
    """The counters of one tier, or None when it is not mounted as the spec says, does not answer, or its counters
    cannot be read. ``tools``: the lctl and lfs commands."""
    resolved = answering(tier["path"], probe, timeout)
    if resolved is None:  # not there, or hung: nothing under it is touched in this process
        return None
    # the mount table holds resolved paths: a tier under a symbolic link is found where the link leads
    path = tier["path"] if tier["path"] in table else resolved
    mounted = table.get(path)
    if mounted is None:
        return None
    source, fstype = mounted
    try:
        if tier["type"] == "lustre" and fstype == "lustre":
            fsname = source.rpartition(":/")[2].split("/")[0]  # MGS NIDs:/FSNAME[/subdirectory]
            instance = lustre_instance(tools["lfs"], tools["lctl"], fsname, path, timeout)
            done = _run([tools["lctl"], "get_param", "-n", f"llite.{instance}.stats"], timeout) if instance else None
            if done is None or done.returncode != 0 or not done.stdout.strip():
                return None
            return lustre_counters(done.stdout)
        if tier["type"] == "nfs" and fstype.startswith("nfs"):
            return nfs_counters((proc_root / "self" / "mountstats").read_text(), path)
    except OSError:  # no mountstats: the tier reads as down, the other tiers are still written
        return None
    return None


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def exposition(
    tiers: list[dict[str, str]], proc_root: Path, lctl: str, lfs: str = "lfs", *, probe: list[str] | None = None, timeout: float = TIMEOUT
) -> str:
    """The Prometheus text exposition of every tier's counters."""
    table = mounts(proc_root)
    tools = {"lctl": lctl, "lfs": lfs}
    probe = probe if probe is not None else [sys.executable, "-c", "; ".join(PROBE)]
    samples: dict[str, list[str]] = {name: [] for name in METRICS}
    for tier in tiers:
        labels = f'tier="{_label(tier["tier"])}",mountpoint="{_label(tier["path"])}",fstype="{_label(tier["type"])}"'
        counters = read_tier(tier, table, proc_root, tools, probe=probe, timeout=timeout)
        samples["alicerce_storage_client_up"].append(f"alicerce_storage_client_up{{{labels}}} {0 if counters is None else 1}")
        for key, value in (counters or {}).items():
            number = f"{value:.6f}" if key.endswith("_seconds") else f"{value:.0f}"  # microseconds of waits
            samples[f"alicerce_storage_client_{key}_total"].append(f"alicerce_storage_client_{key}_total{{{labels}}} {number}")
    lines = []
    for name, (kind, text) in METRICS.items():
        if samples[name]:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *samples[name]]
    return "\n".join(lines) + "\n"


def write_atomically(directory: Path, text: str) -> None:
    """The textfile collector must never see a half-written file: write beside it, then rename over it."""
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".alicerce_storage.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, directory / FILE_NAME)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="JSON list of {tier, path, type}")
    parser.add_argument("--output", type=Path, required=True, help="the textfile collector's directory")
    parser.add_argument("--proc-root", type=Path, default=Path("/proc"))
    parser.add_argument("--lctl", default="lctl")
    parser.add_argument("--lfs", default="lfs")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds a mount may take to answer")
    args = parser.parse_args(argv)
    tiers = json.loads(args.config.read_text())
    write_atomically(args.output, exposition(tiers, args.proc_root, args.lctl, args.lfs, timeout=args.timeout))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
