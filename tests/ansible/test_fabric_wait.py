"""The fabric ports' transmit wait (issue 24, congested fabric): node_monitoring's collector owns PortXmitWait, which the
kernel serves at 32 bits and which stops at all ones (Linux drivers/infiniband/core/sysfs.c PORT_PMA_ATTR(port_xmit_wait,
0, 32, 320)). It reads the 64-bit extended counter where the port's PMA has one and otherwise reads and clears the 32-bit
one each tick, summing; the node exporter's rate over the sysfs file goes flat once it saturates, this total does not.
Tested on fixture sysfs trees with a perfquery that answers as infiniband-diags does (rdma-core perfquery.c, libibmad
fields.c names) and clears the counter only for the PortXmitWait reset mask."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from tests.conftest import ROOT
from tests.emit.kube.test_monitoring import PROMTOOL, needs_promtool

SCRIPT = ROOT / "alicerce" / "ansible" / "roles" / "node_monitoring" / "files" / "alicerce_fabric_wait.py"
FIXTURES = Path(__file__).parent / "fixtures" / "fabric"
EXTENDED = 'device="mlx5_0",port="1"'  # NDR, a PMA with the 64-bit PortXmitWait
CLEARED = 'device="mlx5_1",port="1"'  # HDR, only the 32-bit one
FULL = 2**32 - 1


def collector() -> ModuleType:
    spec = importlib.util.spec_from_file_location("alicerce_fabric_wait", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _port(root: Path, device: str, layer: str, rate: str, lid: str, *, sysfs_wait: int) -> None:
    port = root / "sys" / "class" / "infiniband" / device / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    (port / "link_layer").write_text(f"{layer}\n")
    (port / "rate").write_text(f"{rate}\n")
    (port / "lid").write_text(f"{lid}\n")
    (port / "counters" / "port_xmit_wait").write_text(f"{sysfs_wait}\n")


FAKE_PERFQUERY = """#!{python}
import pathlib, sys
root = pathlib.Path({root!r})
args = sys.argv[1:]
with open(root / "calls", "a") as log:
    log.write(" ".join(args) + "\\n")
device = args[args.index("-C") + 1]
fixtures = pathlib.Path({fixtures!r})
if args[0] == "-c":
    print((fixtures / "perfquery-smplctl.txt").read_text(), end="")
elif args[0] == "-x":
    name = "perfquery-extended-xmitwait.txt" if device == "mlx5_0" else "perfquery-extended.txt"
    print((fixtures / name).read_text(), end="")
elif args[0] == "-r" and device == "mlx5_1" and args[-3:] == ["19", "1", "0x10000"]:
    hardware = root / "hw-mlx5_1"
    wait = hardware.read_text().strip()
    print((fixtures / "perfquery-counters.txt").read_text().replace("@WAIT@", wait), end="")
    hardware.write_text("0")  # PortXmitWait alone is cleared
else:
    sys.exit(1)
"""


def fake_node(root: Path, *, perfquery: bool = True) -> tuple[Path, str]:
    """Three ports: NDR and HDR InfiniBand (the HDR one's sysfs counter stuck at all ones), and a RoCE port."""
    _port(root, "mlx5_0", "InfiniBand", "400 Gb/sec (4X NDR)", "0x12", sysfs_wait=FULL)
    _port(root, "mlx5_1", "InfiniBand", "200 Gb/sec (4X HDR)", "0x13", sysfs_wait=FULL)
    _port(root, "mlx5_2", "Ethernet", "100 Gb/sec (4X EDR)", "0x0", sysfs_wait=0)
    (root / "hw-mlx5_1").write_text(str(FULL))  # cleared by nobody since boot
    command = root / "perfquery"
    if perfquery:
        command.write_text(FAKE_PERFQUERY.format(python=sys.executable, root=str(root), fixtures=str(FIXTURES)))
        command.chmod(0o755)
    return root / "sys", str(command)


def samples(text: str) -> dict[str, float]:
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if not line.startswith("#")}


def test_the_total_keeps_counting_where_the_sysfs_counter_is_stuck_full(tmp_path: Path) -> None:
    sys_root, perfquery = fake_node(tmp_path)
    module = collector()
    ports: dict[tuple[str, str], object] = {}
    sysfs = tmp_path / "sys" / "class" / "infiniband" / "mlx5_1" / "ports" / "1" / "counters" / "port_xmit_wait"
    totals = []
    for waited in (None, 1_000_000, 3_000_000_000, FULL):
        if waited is not None:
            (tmp_path / "hw-mlx5_1").write_text(str(waited))  # what the port's PMA gathered since the last clear
        out = samples(module.exposition(module.tick(ports, sys_root, perfquery), sys_root))
        totals.append(out[f"alicerce_fabric_port_transmit_wait_ticks_total{{{CLEARED}}}"])
        assert int(sysfs.read_text()) == FULL  # what node_exporter reads: flat all along
    assert totals == [FULL, FULL + 1_000_000, FULL + 3_001_000_000, 2 * FULL + 3_001_000_000]
    assert out[f"alicerce_fabric_port_wait_extended{{{CLEARED}}}"] == 0
    # the first read (gathered since boot) is a starting point; the last came back full: counted
    assert out[f"alicerce_fabric_port_wait_saturated_reads_total{{{CLEARED}}}"] == 1
    # the 64-bit counter is read as it stands, never cleared, and no clear is ever sent to it
    assert out[f"alicerce_fabric_port_transmit_wait_ticks_total{{{EXTENDED}}}"] == 73014444032
    assert out[f"alicerce_fabric_port_wait_extended{{{EXTENDED}}}"] == 1
    assert f"alicerce_fabric_port_wait_saturated_reads_total{{{EXTENDED}}}" not in out
    calls = (tmp_path / "calls").read_text().splitlines()
    assert not [c for c in calls if "mlx5_0" in c and c.startswith("-r")]
    # the clear names the port's own LID (sysfs lid 0x13) and the PortXmitWait mask alone
    assert calls.count("-r -C mlx5_1 -P 1 19 1 0x10000") == 4
    # PortSamplesControl is read once per port
    assert sum(c.startswith("-c") for c in calls) == 2
    assert out[f"alicerce_fabric_port_wait_up{{{CLEARED}}}"] == out[f"alicerce_fabric_port_wait_up{{{EXTENDED}}}"] == 1
    assert not [k for k in out if "mlx5_2" in k]  # RoCE: no PMA by LID


def test_the_tick_length_follows_the_lane_rate_and_the_tick_field(tmp_path: Path) -> None:
    sys_root, perfquery = fake_node(tmp_path)
    module = collector()
    out = samples(module.exposition(module.tick({}, sys_root, perfquery), sys_root))
    # Tick 0x07 is the Quantum generation's: a tick per 8 bytes of the whole port (NVIDIA's ibdiagnet manual, review
    # obsreview26 G-C), 64 bits at 400 Gb/s (NDR) 0.16 ns, at 200 Gb/s (HDR) 0.32 ns; read as 8 symbol times of one
    # lane it was 4x that
    assert abs(out[f"alicerce_fabric_port_tick_seconds{{{EXTENDED}}}"] - 64 / 400e9) < 1e-15
    assert abs(out[f"alicerce_fabric_port_tick_seconds{{{CLEARED}}}"] - 64 / 200e9) < 1e-15
    # Tick 31 (SwitchIB, Switch-X): 32 bytes on each lane, the IBA's symbol times: 32 x 8 bits / 25 Gb/s at 4X EDR
    assert abs(module.tick_seconds("100 Gb/sec (4X EDR)", 32) - 32 * 8 / 25e9) < 1e-15
    assert module.tick_seconds("garbage", 8) is None
    # 8b/10b lanes carry a byte in 10 signalling bits: SDR's symbol time is the 4 ns NVIDIA's ibdiagnet manual gives
    assert abs(module.symbol_seconds("10 Gb/sec (4X SDR)") - 4e-9) < 1e-15
    assert module.symbol_seconds("400 Gb/sec (4X NDR)") == 8 / 100e9
    assert module.symbol_seconds("garbage") is None


def test_a_node_without_perfquery_reports_its_ports_down_and_no_total(tmp_path: Path) -> None:
    sys_root, _ = fake_node(tmp_path, perfquery=False)
    module = collector()
    out = samples(module.exposition(module.tick({}, sys_root, "/nonexistent/perfquery"), sys_root))
    assert out == {f"alicerce_fabric_port_wait_up{{{EXTENDED}}}": 0, f"alicerce_fabric_port_wait_up{{{CLEARED}}}": 0}


def _answers(*, tick: bool = True, capmask: str = "0x1A00") -> Callable[[list[str]], str | None]:
    """A perfquery that answers as infiniband-diags does for an HCA with only the 32-bit PortXmitWait (which waited 5000
    ticks), with or without PortSamplesControl, and with the ClassPortInfo CapabilityMask it prints."""

    def runner(command: list[str]) -> str | None:
        if command[1] == "-c":
            return (FIXTURES / "perfquery-smplctl.txt").read_text() if tick else None  # perfquery.c IBEXITs "sampctlquery"
        if command[1] == "-x":
            return (FIXTURES / "perfquery-extended.txt").read_text()
        counters = (FIXTURES / "perfquery-counters.txt").read_text().replace("@WAIT@", "5000")
        return counters.replace("(CapMask: 0x1A00)", f"(CapMask: {capmask})")

    return runner


def test_a_port_whose_wait_cannot_be_measured_is_reported_down(tmp_path: Path) -> None:
    """Review obsreview26 G-D: a PMA that answers PortXmitWait but not PortSamplesControl (an optional attribute, IBA
    vol. 1 16.1.3) left the port up with no tick length, so its wait ratio had no series and neither the congestion
    diagnosis nor FabricWaitCountersMissing said anything; and a PMA whose ClassPortInfo does not indicate PortXmitWait
    (CapabilityMask bit 12) reads 0 through perfquery whatever the port waits, up all along. Both are down now; the
    counter read without a tick keeps its total (the tick may answer later), the unindicated one has none."""
    sys_root, _ = fake_node(tmp_path)
    module = collector()
    untimed = samples(module.exposition(module.tick({}, sys_root, "perfquery", _answers(tick=False)), sys_root))
    assert untimed[f"alicerce_fabric_port_wait_up{{{CLEARED}}}"] == 0
    assert untimed[f"alicerce_fabric_port_transmit_wait_ticks_total{{{CLEARED}}}"] == 5000
    assert not [k for k in untimed if k.startswith("alicerce_fabric_port_tick_seconds")]
    unindicated = samples(module.exposition(module.tick({}, sys_root, "perfquery", _answers(capmask="0x0A00")), sys_root))
    assert unindicated[f"alicerce_fabric_port_wait_up{{{CLEARED}}}"] == 0
    assert f"alicerce_fabric_port_transmit_wait_ticks_total{{{CLEARED}}}" not in unindicated
    # the control: the same HCA with both answered and bit 12 set is measured
    measured = samples(module.exposition(module.tick({}, sys_root, "perfquery", _answers()), sys_root))
    assert measured[f"alicerce_fabric_port_wait_up{{{CLEARED}}}"] == 1
    assert measured[f"alicerce_fabric_port_tick_seconds{{{CLEARED}}}"] > 0


def test_the_file_is_replaced_whole(tmp_path: Path) -> None:
    sys_root, perfquery = fake_node(tmp_path / "node")
    out = tmp_path / "textfile"
    out.mkdir()
    module = collector()
    assert module.main(["--output", str(out), "--sys-root", str(sys_root), "--perfquery", perfquery, "--once"]) == 0
    assert [p.name for p in out.iterdir()] == [module.FILE_NAME]
    assert "alicerce_fabric_port_transmit_wait_ticks_total" in (out / module.FILE_NAME).read_text()


@needs_promtool
def test_promtool_accepts_the_file(tmp_path: Path) -> None:
    sys_root, perfquery = fake_node(tmp_path)
    module = collector()
    text = module.exposition(module.tick({}, sys_root, perfquery), sys_root)
    lint = [shutil.which(PROMTOOL) or PROMTOOL, "check", "metrics"]
    done = subprocess.run(lint, input=text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_series_it_writes_is_declared_with_its_type(tmp_path: Path) -> None:
    sys_root, perfquery = fake_node(tmp_path)
    module = collector()
    text = module.exposition(module.tick({}, sys_root, perfquery), sys_root)
    written = {line.split("{")[0] for line in text.splitlines() if not line.startswith("#")}
    assert written == set(module.METRICS)
    for name, (kind, _) in module.METRICS.items():
        assert f"# TYPE {name} {kind}" in text
        assert name.endswith("_total") == (kind == "counter")


def test_the_collector_runs_on_the_infiniband_pools_nodes_only() -> None:
    """dc1's H100 pool has InfiniBand rails (host adapters, Ansible-provisioned): it runs the collector; its system pool
    has no fabric; and the node exporter reads the textfile directory there (the chart's DaemonSet through /host/root)."""
    from alicerce.emit.ansible.role_vars import NodeMonitoringVars
    from alicerce.emit.ansible.site import pool_roles
    from alicerce.emit.storage_counters import fabric_wait_pools, reads_textfiles
    from tests.emit.kube.test_monitoring import platform

    rp = platform("prod")
    dc1 = rp.site("dc1")
    enabled = {}
    for pool in dc1.pools:
        [monitoring] = [r for r in pool_roles(rp, dc1, pool) if isinstance(r, NodeMonitoringVars)]
        enabled[pool.name] = monitoring.node_monitoring_fabric_wait
    assert enabled == {"onprem-h100": True, "dc1-system": False}
    assert fabric_wait_pools(dc1) == ["onprem-h100"] and reads_textfiles(dc1)
    assert fabric_wait_pools(rp.site("aws")) == []  # EFA: no PortXmitWait, and no Ansible
