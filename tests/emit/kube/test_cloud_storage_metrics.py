"""Storage per tier on AWS (issue 24 item 1): FSx for Lustre and EFS throughput and operations from CloudWatch through
yet-another-cloudwatch-exporter, onto the tier KPIs the on-prem counters feed; run by promtool with the series names and
labels the exporter serves at its pinned version (tests/emit/kube/yace.py, from the vendored facts)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from alicerce.emit.kube.cloud_metrics import FULLNAME, exporter_values
from alicerce.emit.kube.operators import operator_releases
from alicerce.emit.storage_counters import cloud_metric_tiers
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from alicerce.targets.aws.resolve import STORAGE_METRICS
from alicerce.targets.base import FileSystemMetrics
from tests.conftest import ROOT
from tests.emit.kube.test_kpi import rounded
from tests.emit.kube.test_monitoring import expected, needs_promtool, platform, rules_of, run_promtool
from tests.emit.kube.upstream import load
from tests.emit.kube.yace import CHART, found, label_name, naming, prom_string, series_name, served, version

STEPS = "x60"
TIER = STORAGE_METRICS.tier_label
ACCOUNT = "222222222222"


def test_the_name_rules_reproduce_the_exporter_s_own_cases() -> None:
    cases = naming()["series_name"]["upstream_cases"]
    assert len(cases) == 4
    for case in cases:
        assert series_name(case["namespace"], case["metric"], case["statistic"]) == case["expected"]
    assert prom_string("DataReadIOBytes") == "data_read_iobytes" and prom_string("SampleCount") == "sample_count"


def _declared(source: FileSystemMetrics) -> list[str]:
    names = [source.read_bytes, source.written_bytes, *source.operations, source.metadata_operations]
    return names + ([source.io_limit_percent] if source.io_limit_percent else [])


@pytest.mark.parametrize("implementation", sorted(STORAGE_METRICS.sources))
def test_every_series_the_rules_read_is_one_the_exporter_serves_for_what_is_requested(implementation: str) -> None:
    """A series name alicerce reads is BuildMetricName of a metric and statistic it asks CloudWatch for, and it asks for
    nothing it does not read (GetMetricData bills each metric: review obsreview5 G3, TotalIOBytes read by nobody)."""
    source = STORAGE_METRICS.sources[implementation]
    served = {series_name(source.namespace, m, s) for m, stats in source.requested.items() for s in stats}
    assert set(_declared(source)) == served
    # the tier tag as the exporter labels it (labelsSnakeCase off), and the file system's dimension
    assert TIER == "tag_" + label_name(STORAGE_METRICS.tier_tag) == "tag_alicerce_dev_storage_tier"
    assert source.dimension in naming()["discovery"]["services"][source.namespace]["dimension_regexp"]
    # the series of every file system the tag search finds, data or none (BuildNamespaceInfoMetrics)
    assert source.discovered == series_name(source.namespace, "info", "")


def _config(env: str = "prod", site: str = "aws") -> dict[str, Any]:
    rp = platform(env)
    config: dict[str, Any] = yaml.safe_load(exporter_values(rp, rp.site(site))["config"])
    return config


def test_the_configuration_passes_the_exporter_s_schema_and_its_checks() -> None:
    config = _config()
    jsonschema.validate(config, load("yet-another-cloudwatch-exporter", version(), "config.schema.json"))
    jobs = config["discovery"]["jobs"]
    assert [j["type"] for j in jobs] == ["AWS/EFS", "AWS/FSx"]
    assert set(config["discovery"]["exportedTagsOnMetrics"]) <= {j["type"] for j in jobs}
    for job in jobs:
        assert job["length"] >= job["period"] == 60  # scrapeconf.go: length below period is refused
        assert job["delay"] >= job["period"] and job["nilToZero"] is True
        assert job["dimensionNameRequirements"] == ["FileSystemId"]
        for tag in job["searchTags"]:
            re.compile(tag["value"])


def test_discovery_finds_exactly_the_site_s_file_systems_of_each_kind() -> None:
    """By the tags the storage component writes (alicerce.dev/storage-tier and alicerce.dev/site on top of the platform
    tags): the same tier name at another site of the environment, or in another environment, is not found."""
    rp = platform()
    jobs = {j["type"]: j["searchTags"] for j in _config()["discovery"]["jobs"]}

    def tags(tier: str, site: str = "aws", env: str = "prod") -> dict[str, str]:
        return {**rp.tags, "alicerce.dev/environment": env, STORAGE_METRICS.tier_tag: tier, STORAGE_METRICS.site_tag: site}

    assert found(jobs["AWS/FSx"], tags("datasets")) and found(jobs["AWS/FSx"], tags("checkpoints"))
    assert not found(jobs["AWS/FSx"], tags("home")) and found(jobs["AWS/EFS"], tags("home"))
    assert not found(jobs["AWS/EFS"], tags("home", site="dc1")) and not found(jobs["AWS/EFS"], tags("home", env="dev"))
    assert not found(jobs["AWS/FSx"], {k: v for k, v in tags("datasets").items() if k != STORAGE_METRICS.site_tag})


def test_the_release_runs_in_monitoring_after_the_prometheus_stack_with_no_hook_and_the_bound_service_account() -> None:
    rp = platform()
    [release] = [r for r in operator_releases(rp, "aws") if r.key == CHART]
    assert release.namespace == STORAGE_METRICS.service_account[0] == "monitoring"
    assert release.depends_on == ("kube-prometheus-stack",)
    values = release.values
    assert values["serviceAccount"] == {"create": True, "name": STORAGE_METRICS.service_account[1]}
    assert values["testConnection"] is False and values["serviceMonitor"] == {"enabled": True}
    assert values["extraArgs"] == {"scraping-interval": 60}  # every minute read once (default 300: one in five)
    assert values["fullnameOverride"] == FULLNAME
    # on-prem the hosts count their mounts: no exporter there
    assert CHART not in {r.key for r in operator_releases(rp, "dc1")}


def test_without_monitoring_there_is_no_exporter_no_rule_and_no_alert() -> None:
    example = (ROOT / "examples/aws-only.yaml").read_text()
    on = validated(load_text(example, "a.yaml"), "prod")
    assert sorted(cloud_metric_tiers(on, on.site("aws"))) == ["datasets", "home"]  # FSx and EFS
    text = example + "operators:\n  monitoring: {enabled: false}\n"
    rp = validated(load_text(text, "a.yaml"), "prod")
    assert cloud_metric_tiers(rp, rp.site("aws")) == {} and exporter_values(rp, rp.site("aws")) == {}
    assert CHART not in {r.key for r in operator_releases(rp, "aws")}


def test_a_site_without_cloud_file_systems_has_no_exporter() -> None:
    rp = validated(load_text((ROOT / "examples/minimal.yaml").read_text(), "minimal.yaml"), "dev")
    site = rp.sites[0]
    assert cloud_metric_tiers(rp, site) == {} and CHART not in {r.key for r in operator_releases(rp, site.name)}
    assert "CloudWatchStorageMetricsAbsent" not in rules_of(rp, site.name)


def scraped(metric: str, fs: str, tier: str, values: str) -> dict[str, str]:
    """A series as the exporter serves it, under its ServiceMonitor's target labels."""
    service = "fsx" if metric.startswith("aws_fsx") else "elasticfilesystem"
    arn = f"arn:aws:{service}:us-east-1:{ACCOUNT}:file-system/{fs}"
    labels = (
        f'job="{FULLNAME}",instance="10.0.3.7:5000",namespace="monitoring",service="{FULLNAME}",endpoint="http",'
        f'name="{arn}",dimension_FileSystemId="{fs}",{TIER}="{tier}",region="us-east-1",account_id="{ACCOUNT}"'
    )
    return {"series": f"{metric}{{{labels}}}", "values": values}


def _minute(per_second: float) -> str:
    """A period's Sum that is ``per_second`` over the minute, the same at every scrape."""
    return f"{per_second * 60:g}{STEPS}"


@needs_promtool
def test_tier_throughput_operations_and_io_limit_from_cloudwatch(tmp_path: Path) -> None:
    """datasets (FSx) reads 1 GB/s in 100 reads/s and 20 writes/s with 10 metadata ops/s; checkpoints (FSx) writes 2 GB/s;
    home (EFS) reads 10 MB/s in 50 reads/s, 1 metadata op/s, at 35% of its I/O limit. A file system without the tier tag
    (the exporter gives it an empty label) counts for no tier."""
    fsx, efs = STORAGE_METRICS.sources["fsx-lustre"], STORAGE_METRICS.sources["efs"]
    read_ops, write_ops = fsx.operations
    efs_reads, efs_writes = efs.operations
    assert efs.io_limit_percent is not None
    inputs = [
        scraped(fsx.read_bytes, "fs-0a", "datasets", _minute(1e9)),
        scraped(fsx.written_bytes, "fs-0a", "datasets", _minute(0)),
        scraped(read_ops, "fs-0a", "datasets", _minute(100)),
        scraped(write_ops, "fs-0a", "datasets", _minute(20)),
        scraped(fsx.metadata_operations, "fs-0a", "datasets", _minute(10)),
        scraped(fsx.read_bytes, "fs-0b", "checkpoints", _minute(0)),
        scraped(fsx.written_bytes, "fs-0b", "checkpoints", _minute(2e9)),
        scraped(fsx.read_bytes, "fs-0c", "", _minute(5e9)),  # untagged: no tier
        scraped(efs.read_bytes, "fs-0d", "home", _minute(1e7)),
        scraped(efs.written_bytes, "fs-0d", "home", _minute(0)),
        scraped(efs_reads, "fs-0d", "home", _minute(50)),
        scraped(efs_writes, "fs-0d", "home", _minute(0)),
        scraped(efs.metadata_operations, "fs-0d", "home", _minute(1)),
        scraped(efs.io_limit_percent, "fs-0d", "home", f"35{STEPS}"),
    ]

    def at(tier: str) -> str:
        return f'site="aws",tier="{tier}"'

    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded('tier:storage_client_read_bytes:rate5m{tier="datasets"}', at("datasets"), 1e9),
        rounded('tier:storage_client_written_bytes:rate5m{tier="checkpoints"}', at("checkpoints"), 2e9),
        rounded('tier:storage_client_read_bytes:rate5m{tier="home"}', at("home"), 1e7),
        rounded('tier:storage_client_ops:rate5m{tier="datasets"}', at("datasets"), 120),  # reads and writes both counted
        rounded('tier:storage_client_ops:rate5m{tier="home"}', at("home"), 50),
        rounded('tier:storage_metadata_ops:rate5m{tier="datasets"}', at("datasets"), 10),
        rounded('tier:storage_metadata_ops:rate5m{tier="home"}', at("home"), 1),
        rounded('tier:storage_io_limit:ratio{tier="home"}', at("home"), 0.35),
        rounded('count(tier:storage_client_read_bytes:rate5m{tier=""}) or vector(0)', "", 0),
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_a_replaced_exporter_pod_counts_each_file_system_once(tmp_path: Path) -> None:
    """obsreview5 DEFECT 1: a config change rolls the exporter; for five minutes the old pod's series sits in the
    window beside the new pod's, both reading the same minutes. The tier reads 1e8 B/s throughout, not twice that."""
    fsx = STORAGE_METRICS.sources["fsx-lustre"]
    old = scraped(fsx.read_bytes, "fs-0a", "datasets", f"{1e8 * 60:g}x30")
    new = scraped(fsx.read_bytes, "fs-0a", "datasets", f"_x30 {1e8 * 60:g}x30")
    new["series"] = new["series"].replace('instance="10.0.3.7:5000"', 'instance="10.0.4.9:5000"')
    at = 'site="aws",tier="datasets"'
    query = 'tier:storage_client_read_bytes:rate5m{tier="datasets"}'
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": [old, new], "promql_expr_test": [
        rounded(query, at, 1e8, at="20m"),
        rounded(query, at, 1e8, at="33m"),
    ]}], tmp_path)  # fmt: skip


@needs_promtool
def test_a_tier_cloudwatch_does_not_report_alerts_and_reported_ones_stay_quiet(tmp_path: Path) -> None:
    """The checkpoints file system is never exported (its tags lost, say): only its tier alerts, after 20 minutes."""
    rp = platform()
    rule = rules_of(rp, "aws")["CloudWatchStorageMetricsAbsent"]
    fsx, efs = STORAGE_METRICS.sources["fsx-lustre"], STORAGE_METRICS.sources["efs"]
    inputs = [scraped(fsx.read_bytes, "fs-0a", "datasets", _minute(1e9)), scraped(efs.read_bytes, "fs-0d", "home", _minute(0))]
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "15m", "alertname": "CloudWatchStorageMetricsAbsent", "exp_alerts": []},
        {"eval_time": "40m", "alertname": "CloudWatchStorageMetricsAbsent", "exp_alerts": [
            expected(rule, {"tier": "checkpoints"}, "1")]},
    ]}], tmp_path)  # fmt: skip
    everything = [*inputs, scraped(fsx.read_bytes, "fs-0b", "checkpoints", _minute(0))]
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": everything, "alert_rule_test": [
        {"eval_time": "40m", "alertname": "CloudWatchStorageMetricsAbsent", "exp_alerts": []},
    ]}], tmp_path)  # fmt: skip


def test_the_cloudwatch_alert_takes_overrides_like_any_built_in_one() -> None:
    text = (
        (ROOT / "platform.yaml")
        .read_text()
        .replace("\nmonitoring:\n", "\nmonitoring:\n  alerts:\n    - {alert: CloudWatchStorageMetricsAbsent, severity: critical}\n", 1)
    )
    rules = rules_of(validated(load_text(text, "p.yaml"), "prod"), "aws")
    assert rules["CloudWatchStorageMetricsAbsent"]["labels"]["severity"] == "critical"


def info(metric: str, fs: str, tier: str, values: str) -> dict[str, str]:
    """The exporter's info series of a file system its tag search found (value 0), with every tag as a tag_ label."""
    series = scraped(metric, fs, tier, values)
    site = label_name("tag_" + STORAGE_METRICS.site_tag)
    series["series"] = series["series"].replace(f'dimension_FileSystemId="{fs}",', f'{site}="aws",')
    return series


def _job(namespace: str) -> dict[str, Any]:
    [job] = [j for j in _config()["discovery"]["jobs"] if j["type"] == namespace]
    return job


def _served(published: dict[int, float], job: dict[str, Any], minutes: int = 60) -> str:
    """The values the exporter serves, read once a minute from minute 0, as promtool input."""
    return " ".join(f"{served(published, m, job):g}" for m in range(minutes + 1))


@needs_promtool
@pytest.mark.parametrize("idle", ["published as 0", "not published"])
def test_an_efs_burst_counts_once_whether_idle_minutes_read_0_or_nothing(idle: str, tmp_path: Path) -> None:
    """obsreview5 G1: EFS home moves 6 GB in minute 20 and nothing else. Whether CloudWatch publishes 0 for the idle
    minutes or no datapoint (the EFS docs do not say), the tier reads the burst once in the mean of the minutes its
    5-minute range holds (6e9 B / 6 minutes / 60 s: promtool 2.42's range holds both its ends, Prometheus 3's only 5
    minutes), and 0 once they have passed. The exporter's window of 5 minutes served the burst for each of 5 minutes
    where nothing followed it: 8.3e7 B/s at 27m, five times the truth."""
    efs = STORAGE_METRICS.sources["efs"]
    job = _job(efs.namespace)
    published = dict.fromkeys(range(60), 0.0) if idle == "published as 0" else {}
    published[20] = 6e9
    at = 'site="aws",tier="home"'
    query = 'tier:storage_client_read_bytes:rate5m{tier="home"}'
    inputs = [scraped(efs.read_bytes, "fs-0d", "home", _served(published, job))]
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded(query, at, 6e9 / 6 / 60, at="27m"),
        rounded(query, at, 0, at="30m"),
    ]}], tmp_path)  # fmt: skip


def test_fsx_publishes_every_minute_so_its_window_bridges_a_late_one() -> None:
    """FSx for Lustre publishes a datapoint every minute: its window reaches 5 minutes back, so one published after the
    read serves the minute before instead of a 0; EFS, which may publish nothing for idle minutes, reads one minute."""
    fsx, efs = _job("AWS/FSx"), _job("AWS/EFS")
    assert fsx["length"] == 5 * fsx["period"] and efs["length"] == efs["period"]
    late = dict.fromkeys(range(20), 1e9)  # minute 20 not yet published at the read of minute 23
    assert served(late, 23, fsx) == 1e9 and served(late, 23, efs) == 0


@needs_promtool
def test_a_tier_cloudwatch_lists_no_metric_of_is_idle_unless_the_exporter_s_calls_fail(tmp_path: Path) -> None:
    """obsreview5 G2: home's EFS has moved nothing in two weeks (a tier not used yet), so ListMetrics lists no metric of
    it and the exporter serves only its info series. The tier reads 0 and CloudWatchStorageMetricsAbsent, which tells
    the operator to debug the exporter's role and the tags, stays quiet. Once GetMetricData fails (the role denied), the
    same tier is unrecorded and the alert fires."""
    rp = platform()
    rule = rules_of(rp, "aws")["CloudWatchStorageMetricsAbsent"]
    fsx, efs = STORAGE_METRICS.sources["fsx-lustre"], STORAGE_METRICS.sources["efs"]
    inputs = [
        scraped(fsx.read_bytes, "fs-0a", "datasets", _minute(1e9)),
        scraped(fsx.read_bytes, "fs-0b", "checkpoints", _minute(0)),
        info(fsx.discovered, "fs-0a", "datasets", f"0{STEPS}"),
        info(fsx.discovered, "fs-0b", "checkpoints", f"0{STEPS}"),
        info(efs.discovered, "fs-0d", "home", f"0{STEPS}"),
    ]
    at = 'site="aws",tier="home"'
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": inputs, "promql_expr_test": [
        rounded('tier:storage_client_read_bytes:rate5m{tier="home"}', at, 0, at="30m"),
        rounded('tier:storage_client_ops:rate5m{tier="home"}', at, 0, at="30m"),
        rounded('tier:storage_client_read_bytes:rate5m{tier="datasets"}', 'site="aws",tier="datasets"', 1e9, at="30m"),
    ], "alert_rule_test": [
        {"eval_time": "40m", "alertname": "CloudWatchStorageMetricsAbsent", "exp_alerts": []},
    ]}], tmp_path)  # fmt: skip
    # GetMetricData denied from minute 10: no data series of any file system, the request errors counting
    denied = [info(fsx.discovered, "fs-0a", "datasets", f"0{STEPS}"), info(efs.discovered, "fs-0d", "home", f"0{STEPS}"),
              info(fsx.discovered, "fs-0b", "checkpoints", f"0{STEPS}"),
              {"series": f'yace_cloudwatch_request_errors_total{{job="{FULLNAME}",instance="10.0.3.7:5000",api_name="GetMetricData"}}',
               "values": "0x10 1+1x50"}]  # fmt: skip
    run_promtool(rp, "aws", [{"interval": "1m", "input_series": denied, "alert_rule_test": [
        {"eval_time": "40m", "alertname": "CloudWatchStorageMetricsAbsent", "exp_alerts": [
            expected(rule, {"tier": t}, "1") for t in ("checkpoints", "datasets", "home")]},
    ]}], tmp_path)  # fmt: skip
