"""The EFA port counters writer (issue 24 item 1 on AWS): it reads the efa driver's hw_counters of every EFA port in a
sysfs laid out as the kernel lays it out, leaves other RDMA devices alone, and writes one textfile the node exporter
serves; promtool lints it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT
from tests.emit.kube.test_monitoring import PROMTOOL, needs_promtool

SCRIPT = ROOT / "alicerce" / "targets" / "aws" / "files" / "alicerce_efa_stats.py"

# what a p5 port's hw_counters/ holds on a driver with the RDMA write counters (efa_verbs.c EFA_DEFINE_PORT_STATS, and
# the lifespan file the RDMA core adds to every hw_counters directory); rdmap1s0 is an older driver without them
PORT_COUNTERS = {
    "tx_bytes": 9_000_000_000_000,
    "tx_pkts": 1_000_000_000,
    "rx_bytes": 8_000_000_000_000,
    "rx_pkts": 900_000_000,
    "rx_drops": 3,
    "send_bytes": 10,
    "send_wrs": 1,
    "recv_bytes": 10,
    "recv_wrs": 1,
    "rdma_read_wrs": 7,
    "rdma_read_bytes": 700,
    "rdma_read_wr_err": 1,
    "rdma_read_resp_bytes": 600,
    "rdma_write_wrs": 5,
    "rdma_write_bytes": 5_000_000,
    "rdma_write_wr_err": 2,
    "rdma_write_recv_bytes": 4_000_000,
    "retrans_bytes": 11_000,
    "retrans_pkts": 11,
    "retrans_timeout_events": 4,
    "unresponsive_remote_events": 0,
    "impaired_remote_conn_events": 6,
    "lifespan": 10,
}
OLD_DRIVER = ("rdma_write_wrs", "rdma_write_bytes", "rdma_write_wr_err", "rdma_write_recv_bytes", "retrans_bytes",
              "retrans_pkts", "retrans_timeout_events", "unresponsive_remote_events",
              "impaired_remote_conn_events")  # fmt: skip


def writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("alicerce_efa_stats", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def device(sys_root: Path, name: str, driver: str, counters: dict[str, int]) -> None:
    """/sys/class/infiniband/<name> as a link to its PCI function, whose driver link names the kernel driver."""
    pci = sys_root / "devices" / f"pci-{name}"
    (sys_root / "bus" / "pci" / "drivers" / driver).mkdir(parents=True, exist_ok=True)
    hw = pci / "infiniband" / name / "ports" / "1" / "hw_counters"
    hw.mkdir(parents=True)
    for counter, value in counters.items():
        (hw / counter).write_text(f"{value}\n")
    (pci / "driver").symlink_to(os.path.relpath(sys_root / "bus" / "pci" / "drivers" / driver, pci))
    (pci / "infiniband" / name / "device").symlink_to(os.path.relpath(pci, pci / "infiniband" / name))
    ib = sys_root / "class" / "infiniband"
    ib.mkdir(parents=True, exist_ok=True)
    (ib / name).symlink_to(os.path.relpath(pci / "infiniband" / name, ib))


def fake_sys(root: Path) -> Path:
    """Two EFA devices (one on an older driver) and a ConnectX port that is not the writer's to read."""
    device(root, "rdmap0s31", "efa", PORT_COUNTERS)
    device(root, "rdmap1s0", "efa", {k: v for k, v in PORT_COUNTERS.items() if k not in OLD_DRIVER})
    device(root, "mlx5_0", "mlx5_core", {"out_of_buffer": 1, "lifespan": 10})
    return root / "class" / "infiniband"


def samples(text: str) -> dict[str, int]:
    """Each sample line: ``name{labels} value``, the value an integer (counters are written whole)."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            assert key not in out, f"duplicate series {key}"
            out[key] = int(value)
    return out


def test_every_efa_port_counter_is_written_with_its_device_and_port(tmp_path: Path) -> None:
    module = writer()
    out = samples(module.exposition(fake_sys(tmp_path)))
    port = 'device="rdmap0s31",port="1"'
    assert out[f"alicerce_efa_transmitted_bytes_total{{{port}}}"] == 9_000_000_000_000
    assert out[f"alicerce_efa_received_bytes_total{{{port}}}"] == 8_000_000_000_000
    assert out[f"alicerce_efa_receive_drops_total{{{port}}}"] == 3
    assert out[f"alicerce_efa_rdma_write_errors_total{{{port}}}"] == 2
    assert out[f"alicerce_efa_rdma_read_errors_total{{{port}}}"] == 1
    assert out[f"alicerce_efa_retransmit_timeouts_total{{{port}}}"] == 4
    assert out[f"alicerce_efa_impaired_remote_connections_total{{{port}}}"] == 6
    # one sample per declared counter and port, each from the file METRICS names
    for name, (counter, _) in module.METRICS.items():
        assert out[f"{name}{{{port}}}"] == PORT_COUNTERS[counter]
    # a counter the older driver does not keep is left out, not written as 0
    older = {k for k in out if 'device="rdmap1s0"' in k}
    assert 'alicerce_efa_rdma_write_errors_total{device="rdmap1s0",port="1"}' not in older
    assert len(older) == len([m for m, (c, _) in module.METRICS.items() if c not in OLD_DRIVER])
    assert not [k for k in out if "mlx5" in k]  # the node exporter counts a ConnectX port itself


def test_every_series_it_writes_is_a_declared_counter(tmp_path: Path) -> None:
    """METRICS is what the rules and dashboards may read (tests/emit/kube/series.py): the output never strays from it."""
    module = writer()
    text = module.exposition(fake_sys(tmp_path))
    assert {key.split("{")[0] for key in samples(text)} == set(module.METRICS)
    for name in module.METRICS:
        assert f"# TYPE {name} counter" in text and name.endswith("_total")
    assert text.isascii()  # it travels in a us-ascii MIME part of the launch template's user data


def test_a_node_without_efa_writes_an_empty_file_and_the_file_is_replaced_whole(tmp_path: Path) -> None:
    module = writer()
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    (textfile / module.FILE_NAME).write_text("stale\n")
    assert module.main(["--output", str(textfile), "--sys-class", str(tmp_path / "none")]) == 0
    assert (textfile / module.FILE_NAME).read_text() == ""  # its mtime still moves: the staleness alert stays quiet
    assert module.main(["--output", str(textfile), "--sys-class", str(fake_sys(tmp_path / "sys"))]) == 0
    assert [p.name for p in textfile.iterdir()] == [module.FILE_NAME]  # no temporary file left beside it
    written = textfile / module.FILE_NAME
    assert written.stat().st_mode & 0o777 == 0o644
    assert samples(written.read_text()) and "stale" not in written.read_text()


def test_it_runs_with_nothing_but_the_standard_library(tmp_path: Path) -> None:
    """On the node it runs under the AMI's python3 with no site packages (python3 -I -S: no user or site directories)."""
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    sys_class = fake_sys(tmp_path / "sys")
    done = subprocess.run(["python3", "-I", "-S", str(SCRIPT), "--output", str(textfile), "--sys-class", str(sys_class)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "alicerce_efa_received_bytes_total" in (textfile / writer().FILE_NAME).read_text()


@needs_promtool
def test_promtool_accepts_the_file(tmp_path: Path) -> None:
    assert PROMTOOL is not None, "promtool is required under CI"
    text = writer().exposition(fake_sys(tmp_path))
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr


# ---------------------------------------------------------------- what the launch template embeds (review obsreview20 F2)


def embedded(tmp_path: Path, source: str) -> str:
    """The EFA pools' user data with ``source`` as the writer's file."""
    from alicerce.targets.aws.components import gpu_node_pool

    original = gpu_node_pool.efa_stats_script
    gpu_node_pool.efa_stats_script = lambda: source  # type: ignore[assignment]
    try:
        user_data = gpu_node_pool.node_user_data(raid0=True, efa=True)
    finally:
        gpu_node_pool.efa_stats_script = original  # type: ignore[assignment]
    assert user_data is not None
    return user_data


def test_the_node_runs_the_writers_code_without_its_comments_and_docstrings(tmp_path: Path) -> None:
    """What the launch template installs is the code alone, runs under a bare python3 and writes the same file."""
    from alicerce.targets.aws.components.gpu_node_pool import efa_stats_code

    code = efa_stats_code()
    assert '"""' not in code and "efa_verbs.c" not in code  # no docstring, no comment
    assert code.startswith("#!/usr/bin/python3\n") and code.isascii()
    stripped = tmp_path / "alicerce_efa_stats.py"
    stripped.write_text(code)
    sys_class = fake_sys(tmp_path / "sys")
    files = {}
    for name, script in (("source", SCRIPT), ("stripped", stripped)):
        textfile = tmp_path / name
        textfile.mkdir()
        done = subprocess.run(["python3", "-I", "-S", str(script), "--output", str(textfile), "--sys-class", str(sys_class)],
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        files[name] = (textfile / writer().FILE_NAME).read_text()
    assert files["stripped"] == files["source"] and "alicerce_efa_received_bytes_total" in files["source"]
    helped = subprocess.run(["python3", "-I", "-S", str(stripped), "--help"], capture_output=True, text=True, check=False)
    assert helped.returncode == 0 and "--sys-class" in helped.stdout, helped.stderr


def test_a_comment_or_docstring_edit_leaves_the_user_data_and_a_code_edit_changes_it(tmp_path: Path) -> None:
    """A new user data is a new launch template version: EKS replaces every node of the pool."""
    source = SCRIPT.read_text()
    before = embedded(tmp_path, source)
    assert "def exposition(sys_class: Path) -> str:\n" in source and '"""The Prometheus text exposition' in source
    docs_only = (
        source.replace('"""Port counters of the node', '"""Port counters (a reworded docstring) of the node')
        .replace('"""The Prometheus text exposition', '"""The Prometheus text\n    exposition, over two lines,')
        .replace("# no driver link: not a PCI function we can tell", "#   a reworded comment")
        .replace("\nimport argparse\n", "\n# a new comment line\n\nimport argparse  # and a trailing one\n")
        .replace('FILE_NAME = "alicerce_efa.prom"\n', 'FILE_NAME = "alicerce_efa.prom"\n"""A new attribute docstring."""\n\n\n')
    )
    assert docs_only != source
    assert embedded(tmp_path, docs_only) == before
    code_edit = source.replace('prefix=".alicerce_efa."', 'prefix=".alicerce_efa_"')
    assert code_edit != source and embedded(tmp_path, code_edit) != before
    # a string's own blanks and hashes are code: kept as they are
    help_edit = source.replace('"Bytes the EFA port received."', '"Bytes the EFA port received  # here."')
    assert help_edit != source and embedded(tmp_path, help_edit) != before


def test_stripping_keeps_string_literals_and_refuses_to_change_the_program() -> None:
    from alicerce.targets.aws.components.script_code import code_only

    source = 'def f():\n    """Only a docstring."""\n\n\nTEXT = """a\n\n  # not a comment  \n"""  # a comment\nX = f"{1}  # kept"\n'
    code = code_only(source)
    assert code == 'def f():\n    pass\nTEXT = """a\n\n  # not a comment  \n"""\nX = f"{1}  # kept"\n'
    namespace: dict[str, object] = {}
    exec(compile(code, "stripped", "exec"), namespace)  # the test's own literal
    assert namespace["TEXT"] == "a\n\n  # not a comment  \n" and namespace["X"] == "1  # kept"
    with pytest.raises(ValueError, match="changed the program"):
        code_only('"""Doc."""; X = 1\n')
    with pytest.raises(ValueError, match="ASCII"):
        code_only('X = "\u00e9"\n')
