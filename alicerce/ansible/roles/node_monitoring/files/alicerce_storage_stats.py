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
import tempfile
from pathlib import Path

FILE_NAME = "alicerce_storage.prom"
"""The file in the textfile directory (the alert on stale counters names it)."""

METRICS = {
    "alicerce_storage_client_read_bytes_total": ("counter", "Bytes applications read from the tier on this node."),
    "alicerce_storage_client_written_bytes_total": ("counter", "Bytes applications wrote to the tier on this node."),
    "alicerce_storage_client_reads_total": ("counter", "Read operations: read calls on Lustre (llite), READ RPCs on NFS."),
    "alicerce_storage_client_writes_total": ("counter", "Write operations: write calls on Lustre (llite), WRITE RPCs on NFS."),
    "alicerce_storage_client_up": ("gauge", "1 when the tier is mounted where the spec mounts it and its counters were read."),
}
"""Every series this collector writes (tests check that dashboards and rules read only produced series)."""

Counters = dict[str, float]


def mounts(proc_root: Path) -> dict[str, tuple[str, str]]:
    """Mount point -> (source, file system type), from the node's mount table."""
    table: dict[str, tuple[str, str]] = {}
    for line in (proc_root / "self" / "mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3:
            table[fields[1].replace("\\040", " ")] = (fields[0], fields[2])
    return table


def lustre_counters(text: str) -> Counters:
    """`lctl get_param -n llite.FS-*.stats`: 'read_bytes COUNT samples [bytes] MIN MAX SUM' (every instance summed)."""
    out = {"read_bytes": 0.0, "written_bytes": 0.0, "reads": 0.0, "writes": 0.0}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 7 and fields[0] in ("read_bytes", "write_bytes") and fields[2] == "samples":
            kind = "read" if fields[0] == "read_bytes" else "write"
            out["reads" if kind == "read" else "writes"] += float(fields[1])
            out["read_bytes" if kind == "read" else "written_bytes"] += float(fields[6])
    return out


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
    out = {"read_bytes": 0.0, "written_bytes": 0.0, "reads": 0.0, "writes": 0.0}
    for line in block:
        name, _, rest = line.partition(":")
        values = rest.split()
        if name == "bytes" and len(values) >= 4:
            # normal read, normal write, direct read, direct write, then what the server sent and received
            out["read_bytes"] = float(values[0]) + float(values[2])
            out["written_bytes"] = float(values[1]) + float(values[3])
        elif name in ("READ", "WRITE") and values:
            out["reads" if name == "READ" else "writes"] = float(values[0])
    return out


def lustre_instances(lctl: str, fsname: str) -> list[str]:
    """The llite instances of file system ``fsname`` on this node: ``lctl list_param llite.*`` names each
    'llite.FSNAME-INSTANCE', the instance a hexadecimal address. Matched whole, never by a ``FSNAME-*`` pattern, which
    also takes a file system named ``FSNAME-b``; a file system mounted twice has two instances, summed."""
    done = subprocess.run([lctl, "list_param", "llite.*"], capture_output=True, text=True, check=False)
    whole = re.compile(rf"llite\.({re.escape(fsname)}-[0-9a-f]+)")
    return [m.group(1) for line in done.stdout.splitlines() if done.returncode == 0 and (m := whole.fullmatch(line.strip()))]


def read_tier(tier: dict[str, str], table: dict[str, tuple[str, str]], proc_root: Path, lctl: str) -> Counters | None:
    """The counters of one tier, or None when it is not mounted as the spec says or its counters cannot be read."""
    # the mount table holds resolved paths: a tier under a symbolic link is found where the link leads
    path = tier["path"] if tier["path"] in table else os.path.realpath(tier["path"])
    mounted = table.get(path)
    if mounted is None:
        return None
    source, fstype = mounted
    try:
        if tier["type"] == "lustre" and fstype == "lustre":
            fsname = source.rpartition(":/")[2].split("/")[0]  # MGS NIDs:/FSNAME[/subdirectory]
            instances = lustre_instances(lctl, fsname)
            stats = [
                subprocess.run([lctl, "get_param", "-n", f"llite.{i}.stats"], capture_output=True, text=True, check=False)
                for i in instances
            ]
            if not stats or any(done.returncode != 0 or not done.stdout.strip() for done in stats):
                return None
            return lustre_counters("\n".join(done.stdout for done in stats))
        if tier["type"] == "nfs" and fstype.startswith("nfs"):
            return nfs_counters((proc_root / "self" / "mountstats").read_text(), path)
    except OSError:  # no lctl, no mountstats: the tier reads as down, the other tiers are still written
        return None
    return None


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def exposition(tiers: list[dict[str, str]], proc_root: Path, lctl: str) -> str:
    """The Prometheus text exposition of every tier's counters."""
    table = mounts(proc_root)
    samples: dict[str, list[str]] = {name: [] for name in METRICS}
    for tier in tiers:
        labels = f'tier="{_label(tier["tier"])}",mountpoint="{_label(tier["path"])}",fstype="{_label(tier["type"])}"'
        counters = read_tier(tier, table, proc_root, lctl)
        samples["alicerce_storage_client_up"].append(f"alicerce_storage_client_up{{{labels}}} {0 if counters is None else 1}")
        for key, value in (counters or {}).items():
            samples[f"alicerce_storage_client_{key}_total"].append(f"alicerce_storage_client_{key}_total{{{labels}}} {value:.0f}")
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
    args = parser.parse_args(argv)
    tiers = json.loads(args.config.read_text())
    write_atomically(args.output, exposition(tiers, args.proc_root, args.lctl))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
