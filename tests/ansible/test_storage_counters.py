"""The storage tiers' client counters (issue 24 item 1, on-prem): node_monitoring's collector reads Lustre's llite stats
and NFS's mountstats in their real formats and writes one textfile the node exporter serves; promtool lints it."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

from tests.conftest import ROOT
from tests.emit.kube.test_monitoring import PROMTOOL, needs_promtool

SCRIPT = ROOT / "alicerce" / "ansible" / "roles" / "node_monitoring" / "files" / "alicerce_storage_stats.py"
FIXTURES = Path(__file__).parent / "fixtures" / "storage"
TIERS = [
    {"tier": "dc1-lustre", "path": "/lustre", "type": "lustre"},
    {"tier": "home", "path": "/home/shared", "type": "nfs"},
    {"tier": "archive", "path": "/archive", "type": "nfs"},  # in the spec, not mounted on this node
]


# a node whose mounts all answer: the probe resolves the path, as the collector's own does, without a statfs of a path
# this machine does not have
ANSWERING = [sys.executable, "-c", "import os, sys; print(os.path.realpath(sys.argv[1]))"]
NO_LFS = "/nonexistent/lfs"  # lustre-client without lfs: the only instance of the file system is the tier's


def collector() -> ModuleType:
    spec = importlib.util.spec_from_file_location("alicerce_storage_stats", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_node(root: Path, *, lctl: bool = True) -> tuple[Path, str]:
    """A procfs with the two tiers mounted, and an lctl that answers only the parameter Lustre documents."""
    proc = root / "proc" / "self"
    proc.mkdir(parents=True)
    shutil.copy(FIXTURES / "mounts.txt", proc / "mounts")
    shutil.copy(FIXTURES / "mountstats.txt", proc / "mountstats")
    command = root / "lctl"
    if lctl:
        shutil.copy(FIXTURES / "lctl-llite-stats.txt", root / "llite-stats")
        command.write_text(fake_lctl(root))
        command.chmod(0o755)
    return root / "proc", str(command)


def fake_lctl(root: Path | str) -> str:
    """lctl with two file systems mounted, ``ai`` (the fixture's counters) and ``ai-b`` (a billion bytes read), whose
    names share a prefix, answering only the two calls Lustre documents for reading llite stats."""
    return f"""#!/bin/sh
case "$*" in
  "list_param llite.*") printf 'llite.ai-ffff9a0b1c2d3000\\nllite.ai-b-ffff9a0b1c2d7000\\n';;
  "get_param -n llite.ai-ffff9a0b1c2d3000.stats") cat {root}/llite-stats;;
  "get_param -n llite.ai-b-ffff9a0b1c2d7000.stats") echo 'read_bytes 9 samples [bytes] 1 1 1000000000 1';;
  *) exit 2;;
esac
"""


def samples(text: str) -> dict[str, float]:
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if not line.startswith("#")}


def test_counters_of_a_lustre_and_an_nfs_tier_and_a_tier_the_node_does_not_mount(tmp_path: Path) -> None:
    proc, lctl = fake_node(tmp_path)
    out = samples(collector().exposition(TIERS, proc, lctl, NO_LFS, probe=ANSWERING))
    lustre = 'tier="dc1-lustre",mountpoint="/lustre",fstype="lustre"'
    home = 'tier="home",mountpoint="/home/shared",fstype="nfs"'
    assert out[f"alicerce_storage_client_read_bytes_total{{{lustre}}}"] == 1277752524800  # the read_bytes SUM
    assert out[f"alicerce_storage_client_reads_total{{{lustre}}}"] == 152340  # its sample count: read calls
    assert out[f"alicerce_storage_client_written_bytes_total{{{lustre}}}"] == 9269411840
    assert out[f"alicerce_storage_client_writes_total{{{lustre}}}"] == 2210
    # NFS: what applications read (buffered 1048576000 + O_DIRECT 4096000), not another mount's counters
    assert out[f"alicerce_storage_client_read_bytes_total{{{home}}}"] == 1052672000
    assert out[f"alicerce_storage_client_written_bytes_total{{{home}}}"] == 524288000
    assert (out[f"alicerce_storage_client_reads_total{{{home}}}"], out[f"alicerce_storage_client_writes_total{{{home}}}"]) == (1004, 500)
    up = {k: v for k, v in out.items() if k.startswith("alicerce_storage_client_up")}
    assert up == {
        f"alicerce_storage_client_up{{{lustre}}}": 1,
        f"alicerce_storage_client_up{{{home}}}": 1,
        'alicerce_storage_client_up{tier="archive",mountpoint="/archive",fstype="nfs"}': 0,
    }
    assert not [k for k in out if 'tier="archive"' in k and "_up" not in k]


def test_metadata_and_data_waits_of_a_lustre_and_an_nfs_tier(tmp_path: Path) -> None:
    """What a loader of many small files waits on, which IO pressure cannot see (an RPC for metadata sleeps outside
    io_schedule): each tier's metadata operations and the time they took, beside the time its reads and writes took."""
    proc, lctl = fake_node(tmp_path)
    out = samples(collector().exposition(TIERS, proc, lctl, NO_LFS, probe=ANSWERING))
    lustre = 'tier="dc1-lustre",mountpoint="/lustre",fstype="lustre"'
    home = 'tier="home",mountpoint="/home/shared",fstype="nfs"'
    # Lustre: open 4410 + close 4410 + getattr 12004 + readdir 220 + statfs 18 + inode_permission 30100; not ioctl, and
    # not openclosetime (how long files stayed open, no wait at all)
    assert out[f"alicerce_storage_client_metadata_operations_total{{{lustre}}}"] == 51162
    # their SUM microseconds, [usecs] (the manual) and [usec] (2.15's source) alike: 88210 + 30101 + 41023 + 310400
    # + 3600 + 30100 = 503434 us; the read calls' 94010231 us
    assert out[f"alicerce_storage_client_metadata_wait_seconds_total{{{lustre}}}"] == 0.503434
    assert out[f"alicerce_storage_client_data_wait_seconds_total{{{lustre}}}"] == 94.010231
    # NFS: OPEN 2100 + CLOSE 2100 + GETATTR 8400 + LOOKUP 3150 + ACCESS 1050 RPCs (not NULL, COMMIT or the lease's
    # RENEW); their execute milliseconds 4300 + 2000 + 6100 + 3500 + 750, and READ's 3500 + WRITE's 2200
    assert out[f"alicerce_storage_client_metadata_operations_total{{{home}}}"] == 16800
    assert out[f"alicerce_storage_client_metadata_wait_seconds_total{{{home}}}"] == 16.65
    assert out[f"alicerce_storage_client_data_wait_seconds_total{{{home}}}"] == 5.7
    # a Lustre client that counts its operations untimed ([reqs], before 2.14) says nothing of its waits
    untimed = collector().lustre_counters("open 9 samples [reqs]\nread_bytes 2 samples [bytes] 1 1 2 2\n")
    assert untimed["metadata_operations"] == 9 and "metadata_wait_seconds" not in untimed


def test_a_tier_is_counted_by_its_own_file_system_and_found_through_a_symbolic_link(tmp_path: Path) -> None:
    """storreview: ``llite.ai-*`` also matched file system ``ai-b``; a tier whose path leads through a link was never
    found in the mount table (which holds resolved paths)."""
    proc, lctl = fake_node(tmp_path / "node")
    (tmp_path / "data").symlink_to("/lustre")
    tier = {"tier": "dc1-lustre", "path": str(tmp_path / "data"), "type": "lustre"}
    out = samples(collector().exposition([tier], proc, lctl, NO_LFS, probe=ANSWERING))
    assert (
        out[f'alicerce_storage_client_read_bytes_total{{tier="dc1-lustre",mountpoint="{tmp_path}/data",fstype="lustre"}}'] == 1277752524800
    )


def test_a_node_without_lctl_reports_its_lustre_tier_down_and_still_counts_nfs(tmp_path: Path) -> None:
    proc, lctl = fake_node(tmp_path, lctl=False)
    out = samples(collector().exposition(TIERS[:2], proc, lctl, NO_LFS, probe=ANSWERING))
    assert out['alicerce_storage_client_up{tier="dc1-lustre",mountpoint="/lustre",fstype="lustre"}'] == 0
    assert out['alicerce_storage_client_up{tier="home",mountpoint="/home/shared",fstype="nfs"}'] == 1


def write(tmp_path: Path) -> Path:
    """The collector's file, written by its command line over the fake node (a stale file there before it)."""
    proc, lctl = fake_node(tmp_path / "node")
    config, textfile = tmp_path / "tiers.json", tmp_path / "textfile"
    config.write_text(json.dumps(TIERS))
    textfile.mkdir()
    (textfile / "alicerce_storage.prom").write_text("stale\n")
    assert collector().main(["--config", str(config), "--output", str(textfile), "--proc-root", str(proc), "--lctl", lctl]) == 0
    return textfile


def test_the_file_is_replaced_whole(tmp_path: Path) -> None:
    textfile = write(tmp_path)
    module = collector()
    assert [p.name for p in textfile.iterdir()] == [module.FILE_NAME]  # no temporary file left beside it
    written = textfile / module.FILE_NAME
    assert written.stat().st_mode & 0o777 == 0o644
    assert set(samples(written.read_text())) and "stale" not in written.read_text()


@needs_promtool
def test_promtool_accepts_the_file(tmp_path: Path) -> None:
    assert PROMTOOL is not None, "promtool is required under CI"
    text = (write(tmp_path) / collector().FILE_NAME).read_text()
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_every_series_it_writes_is_declared_with_its_type(tmp_path: Path) -> None:
    """METRICS is what the rules and dashboards may read (tests/emit/kube/series.py): the output never strays from it."""
    proc, lctl = fake_node(tmp_path)
    module = collector()
    text = module.exposition(TIERS, proc, lctl, NO_LFS, probe=ANSWERING)
    written = {key.split("{")[0] for key in samples(text)}
    assert written == set(module.METRICS)
    for name, (kind, _) in module.METRICS.items():
        assert f"# TYPE {name} {kind}" in text
        assert name.endswith("_total") == (kind == "counter")


def test_two_tiers_on_one_lustre_file_system_each_count_their_own_mount(tmp_path: Path) -> None:
    """Review obsreview3 DEFECT K: a datasets tier at /lustre and a checkpoints tier at /ckpt on the same file system
    ``ai`` both reported the sum of both mounts' llite instances. ``lfs getname`` names each mount point's instance."""
    proc, lctl = fake_node(tmp_path)
    with (proc / "self" / "mounts").open("a") as table:
        table.write("10.40.31.250@o2ib:/ai /ckpt lustre rw,flock,lazystatfs,noatime 0 0\n")
    lctl_path = Path(lctl)
    lctl_path.write_text(
        lctl_path.read_text()
        .replace(
            "  *) exit 2;;",
            "  \"get_param -n llite.ai-ffff9a0b1c2d5000.stats\") echo 'write_bytes 3 samples [bytes] 1 1 9000000000 1';;\n  *) exit 2;;",
        )
        .replace("llite.ai-ffff9a0b1c2d3000\\n", "llite.ai-ffff9a0b1c2d3000\\nllite.ai-ffff9a0b1c2d5000\\n")
    )
    lfs = tmp_path / "lfs"
    lfs.write_text("#!/bin/sh\ncase \"$2\" in\n  /lustre) echo 'ai-ffff9a0b1c2d3000 /lustre';;\n"
                   "  /ckpt) echo 'ai-ffff9a0b1c2d5000 /ckpt';;\n  *) exit 1;;\nesac\n")  # fmt: skip
    lfs.chmod(0o755)
    tiers = [TIERS[0], {"tier": "dc1-ckpt", "path": "/ckpt", "type": "lustre"}]
    out = samples(collector().exposition(tiers, proc, lctl, str(lfs), probe=ANSWERING))
    data, ckpt = 'tier="dc1-lustre",mountpoint="/lustre",fstype="lustre"', 'tier="dc1-ckpt",mountpoint="/ckpt",fstype="lustre"'
    assert out[f"alicerce_storage_client_read_bytes_total{{{data}}}"] == 1277752524800
    assert out[f"alicerce_storage_client_written_bytes_total{{{data}}}"] == 9269411840
    assert out[f"alicerce_storage_client_written_bytes_total{{{ckpt}}}"] == 9000000000
    assert out[f"alicerce_storage_client_read_bytes_total{{{ckpt}}}"] == 0
    # without lfs a file system mounted twice cannot say which instance is whose: both read as down, not as each other
    both = samples(collector().exposition(tiers, proc, lctl, NO_LFS, probe=ANSWERING))
    assert both[f"alicerce_storage_client_up{{{data}}}"] == 0 and both[f"alicerce_storage_client_up{{{ckpt}}}"] == 0


def test_a_hung_mount_reads_as_down_and_does_not_hang_the_collector(tmp_path: Path) -> None:
    """A hard NFS mount whose server is gone (or an evicted Lustre client) blocks every stat under it: the collector ran
    its lookups in its own process and hung with it, so no tier was written. The stat runs in a child it gives up on."""
    proc, lctl = fake_node(tmp_path)
    hung = tmp_path / "probe"
    hung.write_text(f"#!{sys.executable}\nimport os, sys, time\n"
                    "if sys.argv[1] == '/home/shared':\n    time.sleep(60)\nprint(os.path.realpath(sys.argv[1]))\n")  # fmt: skip
    hung.chmod(0o755)
    started = time.monotonic()
    out = samples(collector().exposition(TIERS[:2], proc, lctl, NO_LFS, probe=[str(hung)], timeout=2))
    assert time.monotonic() - started < 20
    assert out['alicerce_storage_client_up{tier="home",mountpoint="/home/shared",fstype="nfs"}'] == 0
    assert out['alicerce_storage_client_up{tier="dc1-lustre",mountpoint="/lustre",fstype="lustre"}'] == 1
    assert not [k for k in out if 'tier="home"' in k and "_up" not in k]
    # the collector's own probe resolves and statfs-es a path that answers, and refuses one that is not there
    module = collector()
    own = [sys.executable, "-c", "; ".join(module.PROBE)]
    (tmp_path / "mnt").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "mnt")
    assert module.answering(str(tmp_path / "link"), own, 10) == str((tmp_path / "mnt").resolve())
    assert module.answering(str(tmp_path / "absent"), own, 10) is None


def test_a_lustre_fsync_counts_as_a_data_wait() -> None:
    """Review obsreview27 G6: a checkpoint's fsync waits for its flushed pages in cl_sync_io_wait (lustre obdclass/
    cl_io.c), outside io_schedule(), so IO pressure misses it; llite times it as "fsync" (LPROCFS_TYPE_LATENCY from
    2.14, lproc_llite.c llite_opcode_table). Its microseconds join the write calls' as data wait, not metadata."""
    stats = "write 40 samples [usec] 10 90000 2000000 0\nfsync 8 samples [usec] 100 9000000 30000000 0\n"
    out = collector().lustre_counters(stats)
    assert out["data_wait_seconds"] == 32.0  # (2 000 000 + 30 000 000) us
    assert out["metadata_wait_seconds"] == 0.0
