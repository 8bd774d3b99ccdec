"""A real Prometheus server for tests: series written as OpenMetrics, backfilled into a TSDB with
`promtool tsdb create-blocks-from openmetrics`, served by the `prometheus` binary on a free local port.

Used by the tests of what queries a live Prometheus (the budget guard, `alicerce costs export`). Skipped where the
binaries are missing, failed under CI=true (like promtool in tests/emit/kube/test_monitoring.py).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
needs_prometheus = pytest.mark.skipif(
    (PROMETHEUS is None or PROMTOOL is None) and os.environ.get("CI") != "true",
    reason="prometheus/promtool missing (apt-get install prometheus; make test installs it)",
)

Sample = tuple[datetime.datetime, float]


def at(text: str) -> datetime.datetime:
    """``2025-03-01T00:00`` as a UTC time."""
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.UTC)


def every(start: str, end: str, step: datetime.timedelta, value: float) -> list[Sample]:
    """A constant ``value`` from ``start`` to ``end`` (inclusive), one sample a ``step``."""
    out, t, stop = [], at(start), at(end)
    while t <= stop:
        out.append((t, value))
        t += step
    return out


def openmetrics(series: dict[str, list[Sample]]) -> str:
    """``series``: ``name{labels}`` -> samples. OpenMetrics wants each family's samples together, in time order."""
    lines = []
    for name in sorted(series, key=lambda s: s.split("{")[0]):
        family = name.split("{")[0]
        if not any(line.startswith(f"# TYPE {family} ") for line in lines):
            lines.append(f"# TYPE {family} gauge")
        lines += [f"{name} {value!r} {t.timestamp():.3f}" for t, value in sorted(series[name])]
    return "\n".join([*lines, "# EOF"]) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def prometheus_server(series: dict[str, list[Sample]], tmp_path: Path) -> Iterator[str]:
    """Start Prometheus over a TSDB holding ``series``; yields its base URL."""
    assert PROMETHEUS is not None and PROMTOOL is not None, "prometheus and promtool are required under CI"
    data = tmp_path / "tsdb"
    source = tmp_path / "series.om"
    source.write_text(openmetrics(series))
    # promtool cuts the samples into blocks of 2 hours unless told otherwise: a month of series was 373 blocks and
    # ~14 CPU-s, nearly all of a chargeback test. Its hidden --max-block-duration (on `tsdb create-blocks-from` in
    # promtool 2.42, cmd/promtool/main.go; rounded down to TSDB's ranges 2h x 3^n, backfill.go
    # getCompatibleBlockDuration) makes it one or two blocks of 4,374 hours; Prometheus serves them the same.
    done = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=8760h", str(source), str(data)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "prometheus.yml").write_text("global: {}\n")
    port = _free_port()
    command = [
        PROMETHEUS,
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={data}",
        "--storage.tsdb.retention.time=100y",  # the backfilled samples are old: keep them
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert process.poll() is None, (tmp_path / "prometheus.log").read_text()
            assert time.monotonic() < deadline, "prometheus did not become ready in 60 s"
            time.sleep(0.2)
        # ready is not loaded: the newest backfilled block answers only once the TSDB has reloaded its blocks
        times = [t for samples in series.values() for t, _ in samples]
        span = int((max(times) - min(times)).total_seconds()) + 1
        total = sum(len(samples) for samples in series.values())
        families = sorted({name.split("{")[0] for name in series})
        # by family: count_over_time drops the name, and two families with the same labels would collide
        expr = " + ".join(f"sum(count_over_time({f}[{span}s]))" for f in families)
        while True:
            found = query(url, expr, max(times))
            if found and float(found[0]["value"][1]) == total:  # type: ignore[index]
                break
            assert time.monotonic() < deadline, f"prometheus holds {found} of the {total} samples backfilled"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def query(url: str, expr: str, when: datetime.datetime) -> list[dict[str, object]]:
    params = urllib.parse.urlencode({"query": expr, "time": f"{when.timestamp():.3f}"})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, object]] = body["data"]["result"]
    return result
