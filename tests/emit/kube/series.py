"""Which series a PromQL expression reads, and which series the platform really has: those the exporters it installs
produce (the vendored facts under tests/data/upstream, at the versions pinned) and those its recording rules write."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from tests.ansible.test_fabric_wait import collector as fabric_wait_collector
from tests.ansible.test_storage_counters import collector as storage_collector
from tests.emit.kube.upstream import load
from tests.emit.kube.yace import series_name
from tests.emit.kube.yace import version as yace_version
from tests.targets.aws.test_efa_counters import writer as efa_writer

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan"}
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAMES = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?!\s*\(|[\w:])")


def series_read(expr: str) -> set[str]:
    """Metric names an expression selects (not functions, keywords, label names or numbers)."""
    text = _STRINGS.sub('""', expr)
    text = _MATCHERS.sub("", text)
    text = _RANGES.sub("", text)
    text = _GROUPING.sub("", text)
    return {n for n in _NAMES.findall(text) if n.lower() not in KEYWORDS}


def _histogram(name: str, kind: str) -> set[str]:
    return {f"{name}_bucket", f"{name}_sum", f"{name}_count"} if kind == "histogram" else {name}


def exporter_series() -> dict[str, str]:
    """Every series name an exporter the platform installs produces -> the exporter (vendored facts)."""
    out: dict[str, str] = {}
    dcgm = load("dcgm-exporter", "4.5.3-4.8.2", "counters.json")
    for name in dcgm["counters"]:
        out[name] = "dcgm-exporter 4.5.3-4.8.2"
    for name in dcgm["optional"]:  # collected because alicerce's counters list names them (emit.kube.dcgm_counters)
        out[name] = "dcgm-exporter 4.5.3-4.8.2 (alicerce's counters list)"
    for component, version in (
        ("kube-state-metrics", "2.20.0"),
        ("kueue", "0.19.2"),
        ("node-exporter", "v1.12.1"),
        ("prometheus", "v3.14.0"),
        ("kubelet", "1.35"),
    ):
        for name, fact in load(component, version, "metrics.json").items():
            out |= dict.fromkeys(_histogram(name, fact["type"]), f"{component} {version}")
    # Kueue's registry is controller-runtime's: its process collector's series are served beside Kueue's own
    for name, fact in load("kueue", "0.19.2", "registry.json")["metrics"].items():
        out |= dict.fromkeys(_histogram(name, fact["type"]), "kueue 0.19.2 (controller-runtime's registry)")
    # vLLM before and after it renamed its time-per-output-token histogram (alicerce.catalog.alerts FORMER_NAMES), and
    # the same series through Ray Serve LLM: Ray's metrics agent prefixes ray_, recent vLLM sanitises ':' first
    ray = load("vllm", "latest-2026-12", "metrics.json")["ray"]
    assert ray["example"] == "ray_vllm_time_to_first_token_seconds_bucket"
    for version in ("005a810bc40f", "latest-2026-12"):
        for name, fact in load("vllm", version, "metrics.json")["metrics"].items():
            for served in (name, f"ray_{name}", f"ray_{name.replace(':', '_')}"):
                out |= dict.fromkeys(_histogram(served, fact["type"]), f"vllm {version}")
    # Ray Serve's HTTP proxy counts the requests of a workload behind Ray Serve LLM (no vLLM API server runs there)
    for name, fact in load("ray-serve", "latest-2026-12", "metrics.json").items():
        out |= dict.fromkeys(_histogram(name, fact["type"]), "ray serve's HTTP proxy (latest-2026-12)")
    # vLLM's API server counts its HTTP requests with prometheus-fastapi-instrumentator's default metrics
    for name, fact in load("prometheus-fastapi-instrumentator", "8.1.0", "metrics.json").items():
        out |= dict.fromkeys(_histogram(name, fact["type"]), "vllm's API server (prometheus-fastapi-instrumentator 8.1.0)")
    # the KubeRay operator's own info gauges (metrics.enabled, scraped through its chart's ServiceMonitor)
    for name in load("kuberay-operator", "1.7.0", "labels.json")["operator_metrics"]:
        out[name] = "kuberay-operator 1.7.0"
    for name, (kind, _) in storage_collector().METRICS.items():
        out |= dict.fromkeys(_histogram(name, kind), "alicerce's storage counters (node_monitoring, textfile collector)")
    for name, (kind, _) in fabric_wait_collector().METRICS.items():
        out |= dict.fromkeys(_histogram(name, kind), "alicerce's InfiniBand transmit wait collector (node_monitoring, textfile collector)")
    for name in efa_writer().METRICS:
        out[name] = "alicerce's EFA port counters (the EFA pools' launch template, textfile collector)"
    # yet-another-cloudwatch-exporter: what it serves for each metric and statistic a target's exporter asks for, named
    # by its rules (tests/emit/kube/yace.py), not by the names the target declares
    from alicerce.resolve.targets import RESOLVERS

    for resolver in RESOLVERS.values():
        exporter = resolver.capabilities.storage_metrics
        for source in exporter.sources.values() if exporter else ():
            for metric, statistics in source.requested.items():
                out |= {series_name(source.namespace, metric, s): f"yet-another-cloudwatch-exporter {yace_version()}" for s in statistics}
            # one per file system its tag search finds (naming.json info_series)
            out[series_name(source.namespace, "info", "")] = f"yet-another-cloudwatch-exporter {yace_version()} (info)"
    out["up"] = "prometheus (every scrape target)"
    out["ALERTS"] = "prometheus (the state of every alert)"
    return out


def recorded(groups: Iterable[dict[str, Any]]) -> set[str]:
    return {r["record"] for g in groups for r in g["rules"] if "record" in r}


def unproduced(exprs: Iterable[str], groups: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Expression -> the names it reads that neither an exporter nor a recording rule produces."""
    have = set(exporter_series()) | recorded(groups)
    out = {}
    for expr in exprs:
        missing = series_read(expr) - have
        if missing:
            out[expr] = missing
    return out
