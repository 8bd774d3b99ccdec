#!/usr/bin/python3
"""Port counters of the node's EFA devices, for the node exporter's textfile collector.

The node exporter's infiniband collector reports an EFA port's state and rate but none of its traffic: it reads the
port's counters/ directory, which the kernel creates only for adapters that answer performance management MADs, and
a fixed set of mlx5 names in hw_counters/ (procfs v0.21.1 sysfs/class_infiniband.go, used by node_exporter v1.12.1).
The efa driver keeps its port statistics in /sys/class/infiniband/<device>/ports/<port>/hw_counters/ (Linux
drivers/infiniband/hw/efa/efa_verbs.c, EFA_DEFINE_PORT_STATS): this writes them under names of their own. One file,
written whole and renamed, so a scrape never reads half of it. A counter the node's driver does not keep is left out,
never written as 0: the RDMA write counters came with a later patch to EFA_DEFINE_PORT_STATS ("RDMA/efa: Add RDMA
write HW statistics counters"), the retransmit-timeout and impaired-connection ones with the efa driver's network
statistics (efa driver 2.17.0 changelog, "Add Network HW statistics counters"; amzn-drivers
kernel/linux/efa/src/efa_verbs.c EFA_DEFINE_PORT_STATS "impaired_remote_conn_events", commit 8ef8bcd; listed in the
CloudWatch agent's EFA metrics as efa_impaired_remote_conn_events).

Runs on the node from a systemd timer, with the node's own python3 and nothing else installed. The node gets it without
comments and docstrings (alicerce.targets.aws.components.script_code): editing them changes no launch template and rolls no node,
so the code must never read its own docstrings.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

FILE_NAME = "alicerce_efa.prom"
"""The file in the textfile directory (the alert on stale counters names it)."""

DRIVER = "efa"
"""The kernel driver of an EFA device (/sys/class/infiniband/<device>/device/driver links to it; efa_main.c registers
efa_pci_driver under DRV_MODULE_NAME, "efa")."""

METRICS = {
    "alicerce_efa_transmitted_bytes_total": ("tx_bytes", "Bytes the EFA port transmitted."),
    "alicerce_efa_received_bytes_total": ("rx_bytes", "Bytes the EFA port received."),
    "alicerce_efa_receive_drops_total": ("rx_drops", "Packets the EFA port dropped on receive."),
    "alicerce_efa_rdma_read_errors_total": ("rdma_read_wr_err", "RDMA read work requests that completed in error."),
    "alicerce_efa_rdma_write_errors_total": ("rdma_write_wr_err", "RDMA write work requests that completed in error."),
    "alicerce_efa_retransmit_timeouts_total": ("retrans_timeout_events", "Retransmissions that timed out (SRD changed path)."),
    "alicerce_efa_impaired_remote_connections_total": (
        "impaired_remote_conn_events",
        "Times a connection to a remote peer became impaired (its rate limited).",
    ),
}
"""Every series this collector writes, each a counter: name -> (hw_counters file, help). Only what a rule, dashboard or
alert reads (alicerce.emit.kube.kpi EFA_RX, EFA_TX, EFA_ERRORS): a p5 has 32 EFA ports, so each series more is 32
stored per node (review obsreview20 F8). The packet, RDMA byte, retransmitted packet and unresponsive-remote counters
stay on the node for a look by hand (rdma statistic show, or the hw_counters files). Tests check that rules and
dashboards read only produced series."""


def efa_devices(sys_class: Path) -> list[Path]:
    """The RDMA devices under ``sys_class`` (/sys/class/infiniband) whose driver is efa, by name."""
    if not sys_class.is_dir():
        return []
    found = []
    for device in sorted(sys_class.iterdir()):
        try:
            driver = os.path.basename(os.readlink(device / "device" / "driver"))
        except OSError:  # no driver link: not a PCI function we can tell
            continue
        if driver == DRIVER:
            found.append(device)
    return found


def read_counter(path: Path) -> int | None:
    """One hw_counters file as a number; None when it is absent or not a number."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def exposition(sys_class: Path) -> str:
    """The Prometheus text exposition of every EFA port's counters (empty when the node has no EFA device)."""
    samples: dict[str, list[str]] = {name: [] for name in METRICS}
    for device in efa_devices(sys_class):
        ports = device / "ports"
        for port in sorted(ports.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0) if ports.is_dir() else []:
            labels = f'device="{_label(device.name)}",port="{_label(port.name)}"'
            for name, (counter, _) in METRICS.items():
                value = read_counter(port / "hw_counters" / counter)
                if value is not None:
                    samples[name].append(f"{name}{{{labels}}} {value}")
    lines = []
    for name, (_, text) in METRICS.items():
        if samples[name]:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} counter", *samples[name]]
    return "\n".join(lines) + "\n" if lines else ""


def write_atomically(directory: Path, text: str) -> None:
    """The textfile collector must never see a half-written file: write beside it, then rename over it."""
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".alicerce_efa.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, directory / FILE_NAME)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    # not __doc__: the launch template embeds this script without its docstrings (gpu_node_pool.efa_stats_code)
    parser = argparse.ArgumentParser(description="Write the EFA ports' counters for the node exporter's textfile collector.")
    parser.add_argument("--output", type=Path, required=True, help="the textfile collector's directory")
    parser.add_argument("--sys-class", type=Path, default=Path("/sys/class/infiniband"))
    args = parser.parse_args(argv)
    write_atomically(args.output, exposition(args.sys_class))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
