#!/usr/bin/python3
"""The time each InfiniBand port waits to transmit, as a counter that never saturates, for the textfile collector.

PortXmitWait counts the ticks in which a port had data to send and sent none (no credits from its peer, or no
arbitration): the fabric's congestion at that port. The kernel serves it from the PortCounters attribute at 32 bits
(Linux drivers/infiniband/core/sysfs.c: PORT_PMA_ATTR(port_xmit_wait, 0, 32, 320), also in the extended group),
and PMA counters stop at all ones rather than wrap: at NDR a port that waits all the time fills it in under seven
seconds, after which a rate over the sysfs file (node_exporter's node_infiniband_port_transmit_wait_total) reads 0 on
exactly the congested port. So this collector owns the counter:

- where the port's PMA has the 64-bit PortXmitWait of PortCountersExtended (ClassPortInfo CapabilityMask2
  IsAdditionalPortCountersExtendedSupported; infiniband-diags `perfquery -x` prints it then, rdma-core
  infiniband-diags/perfquery.c dump_perfcounters_ext), that counter is the total, read and never cleared;
- else it reads the 32-bit PortXmitWait and clears it in the same call (`perfquery -r ... <lid> <port> 0x10000`:
  reset mask bit 16 is CounterSelect2 bit 0, PortXmitWait alone, libibmad gs.c performance_reset_via) every tick, and
  adds each read to a running total. A tick short enough never fills 32 bits; a read that comes back full is counted.
  One owner per fabric counter: UFM, OpenSM's PerfMgr or an ibdiagnet sweep that read the same PMA then see this
  counter near 0, and their own clears make this total under-count (review obsreview26 N-B).

The tick's length: PortSamplesControl.Tick (`perfquery -c`) says how many symbol times one tick lasts (Tick + 1),
a symbol time being one byte on one lane (InfiniBand Architecture, PortSamplesControl; NVIDIA ibdiagnet user manual,
"Congestion Assessment on InfiniBand Links": 0x00 = 1 symbol time, 4 ns at SDR). The lane's rate comes from the port's
sysfs `rate` ("400 Gb/sec (4X NDR)"): 8b/10b lanes (SDR, DDR, QDR) carry a byte in 10 signalling bits, the rest in 8
data bits. NVIDIA's hardware counts in two ways the same manual lists, told apart by the Tick it reports
(tick_seconds): the share of time derived from it is good for telling a congested port from an idle one.

Runs on the node as a service with the node's own python3 and infiniband-diags; one file, written whole and renamed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

FILE_NAME = "alicerce_fabric_wait.prom"

METRICS = {
    "alicerce_fabric_port_transmit_wait_ticks_total": (
        "counter",
        "Ticks the port had data to transmit and sent none (PortXmitWait), from its 64-bit counter or cleared and summed.",
    ),
    "alicerce_fabric_port_tick_seconds": (
        "gauge",
        "Length of one PortXmitWait tick: (PortSamplesControl.Tick + 1) symbol times, or as many bytes of the port where the Tick says so.",
    ),
    "alicerce_fabric_port_wait_extended": ("gauge", "1: the 64-bit extended counter is read; 0: the 32-bit one is read and cleared."),
    "alicerce_fabric_port_wait_saturated_reads_total": (
        "counter",
        "Reads of the 32-bit counter that came back full: the wait of that tick is at least what was added.",
    ),
    "alicerce_fabric_port_wait_up": (
        "gauge",
        "1 when the port's wait can be measured: PortXmitWait read on the last tick, its PMA indicating the counter and "
        "its tick length known; 0 otherwise.",
    ),
}
"""Every series this collector writes (tests check that rules read only produced series)."""

SATURATED_32 = 2**32 - 1
XMIT_WAIT_SUPPORTED = 1 << 12
"""PerfMgt ClassPortInfo CapabilityMask bit 12 (IB_PM_PC_XMIT_WAIT_SUP, rdma-core libibmad mad.h enum IB_CPI_CAPMASK):
the PMA's PortCounters carry PortXmitWait. perfquery prints the mask in host order in its header ("# Port counters: Lid
19 port 1 (CapMask: 0x1A00)") and, without the bit, prints PortXmitWait as 0 whatever the port waits (perfquery.c
dump_perfcounters: "PortXmitWait not indicated so ignore this counter"): such a port is not measured, not idle."""
RESET_XMIT_WAIT = "0x10000"
"""perfquery's reset mask for PortXmitWait alone: bits 16 and up go to CounterSelect2, whose bit 0 is PortXmitWait."""

TIMEOUT = 5.0
"""Seconds one perfquery may take (a MAD that gets no answer times out inside it sooner)."""

# bits of signalling per byte of data on a lane: 8b/10b up to QDR, 64b/66b and later encodings after (the kernel's
# `rate` gives the signalling rate for the former, 2.5/5/10 Gb/s, and the data rate for the latter)
EIGHT_B_TEN_B = frozenset(("SDR", "DDR", "QDR"))

Runner = Callable[[list[str]], "str | None"]


class Port:
    """What the collector keeps of one port between ticks."""

    def __init__(self, device: str, port: str) -> None:
        self.device, self.port = device, port
        self.total = 0.0  # ticks waited: the extended counter, or the sum of the cleared reads
        self.saturated = 0  # cleared reads that came back full
        self.bits = 0  # 0: not read yet; 64 or 32 once read
        self.tick_symbols: int | None = None  # symbol times per tick (PortSamplesControl.Tick + 1)
        self.up = False  # the counter was read on the last tick (its tick length is checked apart: usable)


def run(command: list[str]) -> str | None:
    """A command's output, or None when it is missing, fails or hangs."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def fields(text: str) -> dict[str, str]:
    """libibmad's dump: 'Name:.......value' per line (mad_dump_fields)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9_]+):\.*(\S+)\s*$", line.strip())
        if match:
            out[match.group(1)] = match.group(2)
    return out


def infiniband_ports(sys_root: Path) -> list[tuple[str, str]]:
    """(device, port) of every InfiniBand port (RoCE ports answer no PMA queries by LID: their link layer is Ethernet)."""
    found = []
    for port_dir in sorted((sys_root / "class" / "infiniband").glob("*/ports/*")):
        try:
            layer = (port_dir / "link_layer").read_text().strip()
        except OSError:
            continue
        if layer == "InfiniBand":
            found.append((port_dir.parent.parent.name, port_dir.name))
    return found


def symbol_seconds(rate: str) -> float | None:
    """One byte on one lane, from sysfs `rate`: '400 Gb/sec (4X NDR)' -> 8 bits / 100 Gb/s."""
    match = re.match(r"^\s*([0-9.]+) Gb/sec \((\d+)X (\w+)\)", rate)
    if not match:
        return None
    total, lanes, speed = float(match.group(1)), int(match.group(2)), match.group(3)
    if total <= 0 or lanes <= 0:
        return None
    bits = 10 if speed in EIGHT_B_TEN_B else 8
    return bits / (total / lanes * 1e9)


# How NVIDIA hardware counts PortXmitWait, by the Tick its PortSamplesControl reports (NVIDIA ibdiagnet user manual
# v2.13, "Congestion Assessment on InfiniBand Links",
# docs.nvidia.com/networking/display/ibdiagnetusermanualv213/congestion+assessment+on+infiniband+links; review obsreview26
# G-C): SwitchIB and Switch-X report Tick 31 and count every 32 bytes on each lane, lost bytes = counter x (Tick + 1) x
# lanes, one tick (Tick + 1) symbol times; Quantum, Quantum-2 and Quantum-3 report Tick 7 and count every 8 bytes of the
# PORT whatever its width, lost bytes = counter x (Tick + 1), one tick (Tick + 1) bytes at the port's rate, a lane
# count shorter. The per-lane reading made a 4X HDR/NDR port that waits 5% of the time read 20%. The manual names
# switches; that a ConnectX HCA reporting Tick 7 counts as its Quantum generation does is the reading of the Tick it
# reports, not a statement of the manual ("behavior may vary depending on the generation"): a port held at line-rate
# backpressure must read about 1 if it does, a lane count below 1 if it does not.
PORT_WIDE_TICKS = frozenset((7,))
"""PortSamplesControl.Tick values of hardware that counts per bytes of the whole port, not per lane."""


def tick_seconds(rate: str, tick_symbols: int) -> float | None:
    """How long one PortXmitWait tick lasts on a port of sysfs ``rate`` whose PMA reports Tick ``tick_symbols - 1``."""
    symbol = symbol_seconds(rate)
    match = re.match(r"^\s*[0-9.]+ Gb/sec \((\d+)X ", rate)
    if symbol is None or match is None:
        return None
    lanes = int(match.group(1)) if tick_symbols - 1 in PORT_WIDE_TICKS else 1
    return tick_symbols * symbol / lanes


def _number(value: str | None) -> int | None:
    try:
        return int(value, 0) if value is not None else None
    except ValueError:
        return None


def read_port(state: Port, sys_root: Path, perfquery: str, runner: Runner) -> None:
    """One tick of one port: the extended counter as it stands, or the 32-bit one read and cleared and added up."""
    local = ["-C", state.device, "-P", state.port]
    if state.tick_symbols is None:
        tick = _number(fields(runner([perfquery, "-c", *local]) or "").get("Tick"))
        state.tick_symbols = tick + 1 if tick is not None else None
    if state.bits in (0, 64):
        extended = _number(fields(runner([perfquery, "-x", *local]) or "").get("PortXmitWait"))
        if extended is not None:
            state.bits, state.total, state.up = 64, float(extended), True
            return
        if state.bits == 64:  # it answered before: a failed read, not a PMA without the counter
            state.up = False
            return
    lid = _number(_read(sys_root / "class" / "infiniband" / state.device / "ports" / state.port / "lid"))
    if lid is None:
        state.up = False
        return
    answer = runner([perfquery, "-r", *local, str(lid), state.port, RESET_XMIT_WAIT]) or ""
    cleared = _number(fields(answer).get("PortXmitWait"))
    mask = re.search(r"\(CapMask: (0x[0-9A-Fa-f]+)", answer)
    if cleared is None or (mask is not None and not int(mask.group(1), 16) & XMIT_WAIT_SUPPORTED):
        state.up = False  # no answer, or a 0 that says nothing (review obsreview26 G-D)
        return
    # the first read holds whatever gathered since the counter was last cleared (boot, an operator's perfquery -R):
    # added, it is the total's starting point, which rate() never counts; a full counter then says nothing of this tick
    first = state.bits == 0
    state.bits, state.up = 32, True
    state.total += cleared
    state.saturated += int(cleared >= SATURATED_32 and not first)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def exposition(ports: list[Port], sys_root: Path) -> str:
    """The Prometheus text exposition of every port's wait."""
    samples: dict[str, list[str]] = {name: [] for name in METRICS}
    for state in ports:
        labels = f'device="{state.device}",port="{state.port}"'
        rate = _read(sys_root / "class" / "infiniband" / state.device / "ports" / state.port / "rate") or ""
        symbol = symbol_seconds(rate)
        # a counter read without a tick length gives no share of time: the rules' ratio has no series and the congestion
        # diagnosis is blind on the port. PortSamplesControl is optional (IBA vol. 1 16.1.3; perfquery -c exits when the
        # PMA does not answer it), so a PMA may serve the wait and not its tick: reported not up (review obsreview26 G-D)
        usable = state.up and symbol is not None and state.tick_symbols is not None
        samples["alicerce_fabric_port_wait_up"].append(f"alicerce_fabric_port_wait_up{{{labels}}} {int(usable)}")
        if not state.bits:
            continue  # never read: no total to report
        samples["alicerce_fabric_port_transmit_wait_ticks_total"].append(
            f"alicerce_fabric_port_transmit_wait_ticks_total{{{labels}}} {state.total:.0f}"
        )
        samples["alicerce_fabric_port_wait_extended"].append(f"alicerce_fabric_port_wait_extended{{{labels}}} {int(state.bits == 64)}")
        if state.bits == 32:
            samples["alicerce_fabric_port_wait_saturated_reads_total"].append(
                f"alicerce_fabric_port_wait_saturated_reads_total{{{labels}}} {state.saturated}"
            )
        # one tick's length by the counting rule of the Tick the PMA reports (tick_seconds, review obsreview26 G-C)
        length = tick_seconds(rate, state.tick_symbols) if symbol is not None and state.tick_symbols is not None else None
        if length is not None:
            samples["alicerce_fabric_port_tick_seconds"].append(f"alicerce_fabric_port_tick_seconds{{{labels}}} {length:.6e}")
    lines = []
    for name, (kind, text) in METRICS.items():
        if samples[name]:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *samples[name]]
    return "\n".join(lines) + "\n"


def write_atomically(directory: Path, text: str) -> None:
    """The textfile collector must never see a half-written file: write beside it, then rename over it."""
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".alicerce_fabric_wait.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, directory / FILE_NAME)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def tick(ports: dict[tuple[str, str], Port], sys_root: Path, perfquery: str, runner: Runner = run) -> list[Port]:
    """Read every InfiniBand port once (ports that appear are added; ports that left keep no series)."""
    present = infiniband_ports(sys_root)
    for key in present:
        state = ports.setdefault(key, Port(*key))
        read_port(state, sys_root, perfquery, runner)
    return [ports[key] for key in present]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True, help="the textfile collector's directory")
    parser.add_argument("--sys-root", type=Path, default=Path("/sys"))
    parser.add_argument("--perfquery", default="perfquery")
    # at NDR with Tick 7 a fully waiting port adds 1.6e9 ticks a second: a second between reads stays well under 2^32
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between reads of each port")
    parser.add_argument("--once", action="store_true", help="read once and exit")
    args = parser.parse_args(argv)
    ports: dict[tuple[str, str], Port] = {}
    while True:
        started = time.monotonic()
        write_atomically(args.output, exposition(tick(ports, args.sys_root, args.perfquery), args.sys_root))
        if args.once:
            return 0
        time.sleep(max(0.0, args.interval - (time.monotonic() - started)))


if __name__ == "__main__":
    raise SystemExit(main())
