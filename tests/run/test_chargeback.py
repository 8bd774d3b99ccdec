"""`alicerce costs` (issue 24 item 3, chargeback): one month of the cost recording rules read from a REAL Prometheus
over a TSDB backfilled with `promtool tsdb create-blocks-from openmetrics`; deterministic bytes, atomic write,
located errors."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alicerce.cli import build_app
from alicerce.run.chargeback import month_bounds
from tests.emit.kube.prometheus import at, every, needs_prometheus, prometheus_server

Q = datetime.timedelta(minutes=15)


def hours(series: str, value: float, *spans: tuple[str, str]) -> dict[str, list[tuple[datetime.datetime, float]]]:
    """``value`` every quarter of an hour in the hours from ``a`` up to ``b`` (not its own: the next hour's)."""
    return {series: [s for a, b in spans for s in every(a, (at(b) - Q).isoformat()[:16], Q, value)]}


def tsdb() -> dict[str, list[tuple[datetime.datetime, float]]]:
    """March 2025 at site aws, as the cost rules record each clock hour so far (each sample here its hour's total):
    research holds 8 GPUs for the 10 hours from 00:00 to 10:00 of the 10th at $3/GPU-hour, 6 of them busy; serving's
    chat-70b holds 4 GPUs for 3 hours (the 20th) at $2 and serves 1,000 tokens a second. The hour before midnight of 1
    March is February's and the one after midnight of 1 April is April's: March must not count them."""
    research = '{site="aws",team="research"}'
    serving = '{site="aws",team="serving"}'
    chat = '{namespace="serving",site="aws",workload="chat-70b"}'
    march = ("2025-03-10T00:00", "2025-03-10T10:00")
    serve = ("2025-03-20T00:00", "2025-03-20T03:00")
    outside = (("2025-02-28T23:00", "2025-03-01T00:00"), ("2025-04-01T00:00", "2025-04-01T01:00"))
    info = "alicerce:namespace_team:info"
    month = ("2025-03-01T00:00", "2025-04-01T00:00")  # the rules ran all month (they record the info series always)
    return {
        **hours(f"team:gpu_cost_usd:sum1h{research}", 24, march, *outside),
        **hours(f"team:gpu_hours_allocated:sum1h{research}", 8, march),
        **hours(f"team:gpu_hours_used:sum1h{research}", 6, march),
        **hours(f"team:gpu_cost_usd:sum1h{serving}", 8, serve),
        **hours(f"team:gpu_hours_allocated:sum1h{serving}", 4, serve),
        **hours(f"team:gpu_hours_used:sum1h{serving}", 4, serve),
        **hours(f'{info}{{cost_center="CC-4411",namespace="research",site="aws",team="research"}}', 1, month),
        **hours(f'{info}{{cost_center="CC-4410",namespace="serving",site="aws",team="serving"}}', 1, month),
        **hours(f"workload:gpu_cost_usd:sum1h{chat}", 8, serve),
        **hours(f"workload:vllm_tokens:sum1h{chat}", 3_600_000, serve),
        # research's 10 hours are one TrainJob's run (its JobSet), the first of them also a plain Job's, eval-3, which
        # ran again under the same name for an hour on the 20th (another Job: another uid, another row)
        **hours(
            'run:gpu_cost_usd:sum1h{cost_center="CC-4411",namespace="research",run="pretrain-7",run_kind="JobSet",'
            'run_uid="5f0c",site="aws",team="research"}',
            21,
            march,
        ),
        **hours(
            'run:gpu_cost_usd:sum1h{cost_center="CC-4411",namespace="research",run="eval-3",run_kind="Job",run_uid="a1b2",'
            'site="aws",team="research"}',
            3,
            ("2025-03-10T00:00", "2025-03-10T01:00"),
        ),
        **hours(
            'run:gpu_cost_usd:sum1h{cost_center="CC-4411",namespace="research",run="eval-3",run_kind="Job",run_uid="c3d4",'
            'site="aws",team="research"}',
            2,
            ("2025-03-20T00:00", "2025-03-20T01:00"),
        ),
    }


EXPECTED_CSV = """\
kind,month,site,team,costCenter,gpuHoursAllocated,gpuHoursUsed,spendUsd,usdPerUsedGpuHour,namespace,workload,tokens,usdPerMillionTokens,runKind,run,runUid
team,2025-03,aws,research,CC-4411,80.0,60.0,240.0,4.0,,,,,,,
team,2025-03,aws,serving,CC-4410,12.0,12.0,24.0,2.0,,,,,,,
workload,2025-03,aws,,,,,24.0,,serving,chat-70b,10800000,2.2222,,,
run,2025-03,aws,research,CC-4411,,,3.0,,research,,,,Job,eval-3,a1b2
run,2025-03,aws,research,CC-4411,,,2.0,,research,,,,Job,eval-3,c3d4
run,2025-03,aws,research,CC-4411,,,210.0,,research,,,,JobSet,pretrain-7,5f0c
"""


@needs_prometheus
def test_the_month_is_summed_hour_by_hour_per_team_cost_centre_and_workload(tmp_path: Path) -> None:
    runner = CliRunner()
    with prometheus_server(tsdb(), tmp_path) as url:
        done = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03"])
        assert done.exit_code == 0, done.output
        assert done.stdout == EXPECTED_CSV
        out = tmp_path / "march.json"
        again = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "--format", "json", "-o", str(out)])
        assert again.exit_code == 0, again.output
        document = json.loads(out.read_text())
        research = document["teams"][0]
        # by hand: 10 hours x 8 GPUs x $3 = $240 over 10 x 6 used GPU-hours = $4 per used GPU-hour
        assert (research["spendUsd"], research["gpuHoursUsed"], research["usdPerUsedGpuHour"]) == (240.0, 60.0, 4.0)
        # 3 hours x $8 = $24 for 3 x 3,600 x 1,000 tokens: $2.22 per million
        assert document["workloads"][0]["usdPerMillionTokens"] == 2.2222
        # each training run's hours: pretrain-7's 10 x $21
        assert {(r["run"], r["runUid"]): r["spendUsd"] for r in document["runs"]} == {
            ("pretrain-7", "5f0c"): 210.0, ("eval-3", "a1b2"): 3.0, ("eval-3", "c3d4"): 2.0}  # fmt: skip
        assert (
            runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "--format", "json", "-o", str(out)]).exit_code
            == 0
        )
        assert json.loads(out.read_text()) == document and not list(tmp_path.glob("march.json.*"))  # same bytes, no leftovers


@needs_prometheus
def test_a_prometheus_without_the_cost_series_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    """A header alone read as a month in which nobody spent anything: the wrong Prometheus, rules not loaded, or a
    month past its retention. It says what it looked for, exit code 2, and writes nothing."""
    runner = CliRunner()
    with prometheus_server(hours('up{job="prometheus"}', 1, ("2025-03-10T00:00", "2025-03-10T02:00")), tmp_path) as url:
        out = tmp_path / "march.csv"
        done = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "-o", str(out)])
    assert done.exit_code == 2, done.output
    assert "holds none of alicerce's cost series for 2025-03" in done.output and "alicerce-gpu-platform" in done.output
    assert not out.exists()


@needs_prometheus
def test_a_month_prometheus_holds_in_part_names_the_missing_days_and_needs_partial(tmp_path: Path) -> None:
    """Review obsreview2 DEFECT 12: a retention shorter than the month (records from the 10th on) and an outage (no
    record on the 20th) gave smaller totals and exit 0. Without --partial: exit 2, the missing days named, nothing
    written; with it: the figures Prometheus holds, a warning, and a JSON document that says it is partial."""
    series = tsdb()
    info = 'alicerce:namespace_team:info{cost_center="CC-4411",namespace="research",site="aws",team="research"}'
    outage = (at("2025-03-20T00:00"), at("2025-03-20T23:59"))  # every hour of the 20th
    series[info] = [(t, v) for t, v in series[info] if t >= at("2025-03-10T00:00") and not outage[0] <= t <= outage[1]]
    del series['alicerce:namespace_team:info{cost_center="CC-4410",namespace="serving",site="aws",team="serving"}']
    runner = CliRunner()
    out = tmp_path / "march.json"
    with prometheus_server(series, tmp_path) as url:
        refused = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "-o", str(out)])
        accepted = runner.invoke(
            build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "--partial", "-f", "json", "-o", str(out)]
        )
    assert refused.exit_code == 2, refused.output
    # no hour of the 1st to the 9th holds a record, nor any of the 20th (the marks that end them: 01:00 of the 1st to
    # midnight of the 10th, 01:00 of the 20th to midnight of the 21st)
    assert (
        "holds only part of 2025-03: no whole records, or kube-state-metrics down, on 2025-03-01 to 2025-03-09, 2025-03-20 (UTC)"
        in refused.stderr
    )
    assert "--partial" in refused.stderr and "Traceback" not in refused.output
    assert accepted.exit_code == 0, accepted.output
    assert (
        "warning: 2025-03 is partial: no whole records, or kube-state-metrics down, on 2025-03-01 to 2025-03-09, 2025-03-20 (UTC)"
        in accepted.stderr
    )
    document = json.loads(out.read_text())
    assert document["partial"] is True and document["openUntil"] is None
    assert document["missingDays"] == [f"2025-03-0{d}" for d in range(1, 10)] + ["2025-03-20"]
    assert "lackingFigures" not in document and "dcgm-exporter down" not in refused.stderr  # the records' gap says it all


@needs_prometheus
def test_hours_the_cost_sources_were_down_make_the_month_partial(tmp_path: Path) -> None:
    """Review obsreview24 F3: kube-state-metrics down for three hours of the 10th (an OOM, a bad upgrade) removed those
    hours' spend while the rules kept recording, and the month read whole with exit 0. The rules record the part of each
    hour the sources answered (MEASURED_HOUR): three hours at 0 and one at 0.97 (two minutes of a restart) on the 10th,
    every other hour whole. The 10th is missing; a restart of minutes is not."""
    from alicerce.emit.kube.costs import MEASURED_HOUR

    series = tsdb()
    answered = f'{MEASURED_HOUR}{{site="aws"}}'
    series |= hours(answered, 1, ("2025-03-01T00:00", "2025-03-10T02:00"), ("2025-03-10T06:00", "2025-04-01T00:00"))
    down, restart = (
        hours(answered, 0, ("2025-03-10T02:00", "2025-03-10T05:00")),
        hours(answered, 58 / 60, ("2025-03-10T05:00", "2025-03-10T06:00")),
    )
    series[answered] = sorted(series[answered] + down[answered] + restart[answered])
    runner = CliRunner()
    out = tmp_path / "march.json"
    with prometheus_server(series, tmp_path) as url:
        refused = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "-o", str(out)])
        accepted = runner.invoke(
            build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "--partial", "-f", "json", "-o", str(out)]
        )
        series[answered] = [(t, 1.0) for t, _ in series[answered]]  # the same month, the sources up throughout
    assert refused.exit_code == 2 and "kube-state-metrics down, on 2025-03-10 (UTC)" in refused.stderr, refused.output
    assert accepted.exit_code == 0, accepted.output
    assert json.loads(out.read_text())["missingDays"] == ["2025-03-10"]
    (tmp_path / "whole").mkdir()
    with prometheus_server(series, tmp_path / "whole") as url:
        whole = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03"])
    assert whole.exit_code == 0 and whole.stdout == EXPECTED_CSV, whole.output


def test_a_month_not_over_is_partial() -> None:
    """The current month has no records of the hours to come: it is not a whole month's chargeback."""
    from alicerce.run.chargeback import ChargebackError, export

    with pytest.raises(ChargebackError, match=r"the month is not over \(records up to 2025-03-01T00:00:00Z\)"):
        export("http://127.0.0.1:9", "2025-03", now=at("2025-03-01T00:30"))


def test_mistakes_are_one_line_errors_with_exit_code_2(tmp_path: Path) -> None:
    runner = CliRunner()
    bad_month = runner.invoke(build_app(), ["costs", "--prometheus", "http://127.0.0.1:9", "--month", "2025-13"])
    assert bad_month.exit_code == 2 and 'month "2025-13" is not YYYY-MM' in bad_month.stderr
    not_url = runner.invoke(build_app(), ["costs", "--prometheus", "file:///etc/passwd", "--month", "2025-03"])
    assert not_url.exit_code == 2 and "is not an http(s) URL" in not_url.stderr
    down = runner.invoke(build_app(), ["costs", "--prometheus", "http://127.0.0.1:9", "--month", "2025-03", "-o", str(tmp_path / "x.csv")])
    assert down.exit_code == 2 and "cannot read Prometheus at http://127.0.0.1:9" in down.stderr
    assert "Traceback" not in down.output and not (tmp_path / "x.csv").exists()
    assert month_bounds("2025-12") == (at("2025-12-01T00:00"), at("2026-01-01T00:00"))
    # years datetime cannot hold, a URL urllib cannot parse, credentials it would not send and every error would print
    for args, said in (
        (["--month", "0000-01"], 'month "0000-01" is outside the years'),
        (["--month", "9999-12"], 'month "9999-12" is outside the years'),
        (["--prometheus", "http://[::1", "--month", "2025-03"], "--prometheus is not a URL"),
        (["--prometheus", "http://host:port", "--month", "2025-03"], "--prometheus is not a URL"),
        (["--prometheus", "http://user:s3cret@127.0.0.1:9", "--month", "2025-03"], "carries credentials in the URL"),
    ):
        argv = ["costs", *(["--prometheus", "http://127.0.0.1:9"] if "--prometheus" not in args else []), *args]
        done = runner.invoke(build_app(), argv)
        assert done.exit_code == 2 and said in done.stderr and "Traceback" not in done.output, (args, done.output)
        assert "s3cret" not in done.output


@needs_prometheus
def test_a_team_whose_cost_centre_changed_within_the_month_is_split_at_the_hour(tmp_path: Path) -> None:
    """Review obsreview22 F7: the team's row took the whole month under whichever of its two codes Prometheus returned
    last. research moves from CC-4411 to CC-5000 at 05:00 on the 10th, halfway through its 10 hours: each code gets
    its 5 hours ($120, 40 GPU-hours allocated, 30 used); serving, unchanged, keeps one row."""
    series = tsdb()
    info = "alicerce:namespace_team:info"
    old = f'{info}{{cost_center="CC-4411",namespace="research",site="aws",team="research"}}'
    new = f'{info}{{cost_center="CC-5000",namespace="research",site="aws",team="research"}}'
    series[new] = [(t, v) for t, v in series[old] if t >= at("2025-03-10T05:00")]
    series[old] = [(t, v) for t, v in series[old] if t < at("2025-03-10T05:00")]
    runner = CliRunner()
    with prometheus_server(series, tmp_path) as url:
        done = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "--format", "json"])
    assert done.exit_code == 0, done.output
    rows = {
        (r["team"], r["costCenter"]): (r["spendUsd"], r["gpuHoursAllocated"], r["gpuHoursUsed"]) for r in json.loads(done.stdout)["teams"]
    }
    assert rows == {
        ("research", "CC-4411"): (120.0, 40.0, 30.0),
        ("research", "CC-5000"): (120.0, 40.0, 30.0),
        ("serving", "CC-4410"): (24.0, 12.0, 12.0),
    }


@needs_prometheus
def test_each_figure_is_whole_only_where_its_own_source_answered(tmp_path: Path) -> None:
    """Review obsreview25 G3 and N2. dcgm-exporter down for the three hours 02:00-05:00 of the 10th (the GPU-use source
    record at 0) makes the 10th lack gpuHoursUsed and usdPerUsedGpuHour, named as such, where the month read whole; a
    Prometheus restart of 10 minutes on the 15th (kube-state-metrics' record at 50/60) no longer makes the 15th a
    missing day (95% of each hour did): the month is whole and the 10 minutes are reported."""
    from alicerce.emit.kube.costs import MEASURED_HOUR, USED_MEASURED_HOUR

    month = ("2025-03-01T00:00", "2025-04-01T00:00")
    ksm, dcgm = f'{MEASURED_HOUR}{{site="aws"}}', f'{USED_MEASURED_HOUR}{{site="aws"}}'

    def spliced(name: str, value: float, span: tuple[str, str]) -> list[tuple[datetime.datetime, float]]:
        whole = hours(name, 1, month)[name]
        part = hours(name, value, span)[name]
        return sorted([s for s in whole if s[0] not in {t for t, _ in part}] + part)

    series = tsdb() | {ksm: spliced(ksm, 50 / 60, ("2025-03-15T03:00", "2025-03-15T04:00")), dcgm: hours(dcgm, 1, month)[dcgm]}
    runner = CliRunner()
    out = tmp_path / "march.json"
    with prometheus_server(series, tmp_path) as url:
        restart = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "-f", "json", "-o", str(out)])
        series[dcgm] = spliced(dcgm, 0, ("2025-03-10T02:00", "2025-03-10T05:00"))
        (tmp_path / "down").mkdir()
    assert restart.exit_code == 0, restart.output
    assert "sources were down for minutes" in restart.stderr and "spendUsd, gpuHoursAllocated: 10 min" in restart.stderr
    document = json.loads(out.read_text())
    # no serving source record here: tokens read as the spend's source (rules older than that record)
    assert "partial" not in document
    assert document["missingMinutes"] == {"spendUsd, gpuHoursAllocated": 10, "tokens, usdPerMillionTokens": 10}
    with prometheus_server(series, tmp_path / "down") as url:
        refused = runner.invoke(build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "-o", str(out)])
        accepted = runner.invoke(
            build_app(), ["costs", "--prometheus", url, "--month", "2025-03", "--partial", "-f", "json", "-o", str(out)]
        )
    assert refused.exit_code == 2, refused.output
    assert "dcgm-exporter down (gpuHoursUsed, usdPerUsedGpuHour) on 2025-03-10 (UTC)" in refused.stderr
    assert "kube-state-metrics down" not in refused.stderr
    document = json.loads(out.read_text())
    assert accepted.exit_code == 0 and document["missingDays"] == ["2025-03-10"]
    assert document["lackingFigures"] == {"gpuHoursUsed, usdPerUsedGpuHour": ["2025-03-10"]}
    assert document["missingMinutes"] == {
        "spendUsd, gpuHoursAllocated": 10,
        "gpuHoursUsed, usdPerUsedGpuHour": 180,
        "tokens, usdPerMillionTokens": 10,
    }
