"""Grafana dashboards, one per audience, over the KPI series (alicerce.emit.kube.kpi, costs, diagnoses).

- ``gpu-platform.json``: the platform team's overview (effective utilisation, allocation, queues, time from dataset
  to deployed model, spend, fabric, storage, GPU health);
- ``team.json``: one team at a time (``$team``): its GPUs, how busy they are, its queue, its spend against budget;
- ``inference.json``: one serving workload at a time (``$workload``): latency percentiles, throughput, errors,
  availability, SLO error ratio and cost per million tokens.

Every query reads only series an exporter or a recording rule produces (tests/emit/kube/test_dashboards.py).
"""

from __future__ import annotations

from typing import Any

from alicerce.catalog.alerts import DIAGNOSES, GPU_KEY
from alicerce.emit.kube.costs import RUN_30D, TOKENS_30D, month_spent, settled
from alicerce.emit.kube.kpi import LEAD_TIME, POD_WORKLOAD
from alicerce.emit.kube.promql import recorded_read
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite

# the records only inference workloads feed (their serving engines' metrics, their pods' readiness, their tokens)
SERVING_RECORDS = ("workload:vllm_", "workload:serving_", "workload:usd_per_million_tokens")

Panel = tuple[str, list[str], str]  # title, queries, unit


def _panels(rows: list[Panel], have: set[str]) -> list[dict[str, Any]]:
    """The panels, each with the queries whose recorded series the site records (a panel left without any is
    dropped): a site without budgets or SLOs shows no empty budget line or SLO panel."""
    rows = [(title, kept, unit) for title, exprs, unit in rows if (kept := [e for e in exprs if recorded_read(e) <= have])]
    out = []
    for i, (title, exprs, unit) in enumerate(rows, start=1):
        x, y = (0 if i % 2 else 12), (i - 1) // 2 * 8  # two panels a row
        panel = {
            "id": i, "type": "timeseries", "title": title, "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"expr": e, "refId": chr(ord("A") + j), "legendFormat": "__auto"} for j, e in enumerate(exprs)],
        }  # fmt: skip
        out.append(_ranking(panel) if all(e.startswith("topk(") for e in exprs) else panel)
    return out


def _ranking(panel: dict[str, Any]) -> dict[str, Any]:
    """A top-k as a table at the dashboard's end time, highest first: a time series of it ran topk at every step, so a
    week's range drew every series that was ever in the top, unranked (review obsreview13 F8)."""
    targets = [{**t, "instant": True, "range": False, "format": "table"} for t in panel["targets"]]
    return {**panel, "type": "table", "targets": targets, "options": {"sortBy": [{"displayName": "Value", "desc": True}]}}


def _board(
    rp: ResolvedPlatform, key: str, title: str, rows: list[Panel], variables: list[dict[str, Any]], *, have: set[str]
) -> dict[str, Any]:
    source = {"name": "datasource", "type": "datasource", "query": "prometheus"}
    return {
        "title": f"{rp.name} {title} ({rp.environment})",
        "uid": f"alicerce-{rp.name}-{rp.environment}{key}"[:40],
        "schemaVersion": 39,
        "editable": False,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [source, *variables]},
        "panels": _panels(rows, have),
        "tags": ["alicerce", "gpu"],
    }


def _variable(name: str, metric: str, label: str) -> dict[str, Any]:
    query = f"label_values({metric}, {label})"
    return {"name": name, "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "query": query,
            "definition": query, "refresh": 2, "includeAll": False, "multi": False}  # fmt: skip


def overview(rp: ResolvedPlatform, have: set[str]) -> dict[str, Any]:
    rows: list[Panel] = [
        (
            "Effective GPU utilisation by pool (busy / billed: installed, or reserved while fewer are launched)",
            ["pool:gpu_effective_utilization:ratio", "site:gpu_effective_utilization:ratio"],
            "percentunit",
        ),
        # a reserved pool's share of what it pays for, reserved GPUs not launched included (review obsreview31 N-1)
        (
            "GPU allocation by pool (allocated / billed: installed, or reserved while fewer are launched)",
            ["pool:gpu_allocation:ratio"],
            "percentunit",
        ),
        ("GPU utilisation by team", ["team:gpu_utilization:avg"], "percentunit"),
        (
            "GPUs installed, allocated and busy by pool",
            ["pool:gpus_installed:sum", "pool:gpus_allocated:sum", "pool:gpus_busy:sum"],
            "short",
        ),
        ("Queue wait p95 by team", ["team:kueue_admission_wait_seconds:p95"], "s"),
        ("Pending workloads by team", ["team:kueue_pending_workloads:sum"], "short"),
        ("Workloads finished in the last 7 days by team", ["team:kueue_finished_workloads:increase7d"], "short"),
        # recorded only where a served model's whole chain runs at the site (alicerce.emit.kube.kpi lead_time_rules)
        ("Time from dataset to deployed model by served model", [LEAD_TIME], "s"),
        ("GPU spend by team (USD/h)", ["team:gpu_cost_usd:rate1h"], "currencyUSD"),
        (
            "Idle GPU cost by pool (USD/h): billed, held by no pod (reserved GPUs not launched included)",
            ["pool:gpu_idle_cost_usd:rate1h"],
            "currencyUSD",
        ),
        ("Cost per used GPU-hour by team", ["team:usd_per_used_gpu_hour:ratio"], "currencyUSD"),
        ("Inference p99 time to first token", ["workload:vllm_time_to_first_token_seconds:p99"], "s"),
        ("Inference error ratio (API 5xx)", ["workload:vllm_request_errors:ratio_rate5m"], "percentunit"),
        ("Fabric receive / transmit by pool", ["pool:infiniband_receive_bytes:rate5m", "pool:infiniband_transmit_bytes:rate5m"], "Bps"),
        ("Fabric errors by pool", ["pool:infiniband_errors:rate5m"], "short"),
        ("Storage read / write by pool", ["pool:storage_read_bytes:rate5m", "pool:storage_write_bytes:rate5m"], "Bps"),
        ("Disk IOPS by pool", ["pool:disk_iops:rate5m"], "iops"),
        (
            "Storage client read / write by tier",
            ["tier:storage_client_read_bytes:rate5m", "tier:storage_client_written_bytes:rate5m"],
            "Bps",
        ),
        ("Storage client operations by tier", ["tier:storage_client_ops:rate5m"], "ops"),
        # on-prem from the clients' counters, in the cloud where CloudWatch reports them (FSx for Lustre, EFS)
        ("Storage metadata operations by tier", ["tier:storage_metadata_ops:rate5m"], "ops"),
        ("Storage I/O limit used by tier (EFS General Purpose)", ["tier:storage_io_limit:ratio"], "percentunit"),
        ("GPU memory used by pool", ["pool:gpu_memory_used:avg"], "percentunit"),
        # one value per GPU first: a time-sliced GPU's device counters come once per pod holding it (dcgm-exporter with
        # KUBERNETES_VIRTUAL_GPUS, vendored labels.json virtual_gpus), so a plain sum counted it once per pod
        ("Tensor core activity by node", [f"avg by (Hostname) (max by ({GPU_KEY}) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)) * 100"], "percent"),
        ("GPU temperature", ["max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)"], "celsius"),
        ("GPU power", [f"sum by (Hostname) (max by ({GPU_KEY}) (DCGM_FI_DEV_POWER_USAGE))"], "watt"),
        ("Last XID by GPU", ["max by (Hostname, gpu) (DCGM_FI_DEV_XID_ERRORS)"], "short"),
        (
            "Firing diagnoses",
            [f'count by (alertname) (ALERTS{{alertstate="firing",alertname=~"{"|".join(DIAGNOSES)}"}})'],
            "short",
        ),
    ]
    return _board(rp, "", "GPU platform", rows, [], have=have)


def team(rp: ResolvedPlatform, have: set[str]) -> dict[str, Any]:
    t = 'team="$team"'
    rows: list[Panel] = [
        ("GPUs allocated and busy", [f"team:gpus_allocated:sum{{{t}}}", f"team:gpus_busy:sum{{{t}}}"], "short"),
        ("Effective GPU utilisation (busy / allocated)", [f"team:gpu_effective_utilization:ratio{{{t}}}"], "percentunit"),
        ("GPU memory used", [f"team:gpu_memory_used:avg{{{t}}}"], "percentunit"),
        ("GPU use against quota by pool", [f"team_pool:kueue_gpu_usage:sum{{{t}}}", f"team_pool:kueue_gpu_quota:sum{{{t}}}"], "short"),
        ("Queue wait p50 / p95", [f"team:kueue_admission_wait_seconds:p50{{{t}}}", f"team:kueue_admission_wait_seconds:p95{{{t}}}"], "s"),
        ("Admission to pods ready p95", [f"team:kueue_admitted_until_ready_seconds:p95{{{t}}}"], "s"),
        ("Pending workloads and GPUs", [f"team:kueue_pending_workloads:sum{{{t}}}", f"team:kueue_gpus_pending:sum{{{t}}}"], "short"),
        (
            "Admitted, finished and evicted workloads per hour",
            [
                f"team:kueue_admitted_workloads:increase1h{{{t}}}",
                f"team:kueue_finished_workloads:increase1h{{{t}}}",
                f"team:kueue_evicted_workloads:increase1h{{{t}}}",
            ],
            "short",
        ),
        (
            "Jobs succeeded, failed and running by kind (Job, JobSet, RayJob)",
            [f"team_kind:jobs_succeeded:sum{{{t}}}", f"team_kind:jobs_failed:sum{{{t}}}", f"team_kind:jobs_running:sum{{{t}}}"],
            "short",
        ),
        ("Job failure ratio by kind", [f"team_kind:job_failure:ratio{{{t}}}"], "percentunit"),
        (
            "GPU cost of the team's 10 costliest runs, last 30 days (TrainJob, Job or RayJob; run_uid tells a name reused)",
            [f"topk(10, {settled(f'{RUN_30D}{{{t}}}')})"],
            "currencyUSD",
        ),
        ("Job run time p50 / p95 by kind", [f"team_kind:job_run_seconds:p50{{{t}}}", f"team_kind:job_run_seconds:p95{{{t}}}"], "s"),
        (
            "Spend this month against budget (USD)",
            [month_spent(t), f"alicerce:team_budget_usd:monthly{{{t}}}"],
            "currencyUSD",
        ),
        (
            "Spend rate (USD/h) and cost per used GPU-hour",
            [f"team:gpu_cost_usd:rate1h{{{t}}}", f"team:usd_per_used_gpu_hour:ratio{{{t}}}"],
            "currencyUSD",
        ),
    ]
    return _board(rp, "-team", "team", rows, [_variable("team", "alicerce:namespace_team:info", "team")], have=have)


def inference(rp: ResolvedPlatform, have: set[str]) -> dict[str, Any]:
    w = 'workload="$workload"'
    rows: list[Panel] = [
        ("Time to first token p50 / p95 / p99", [f"workload:vllm_time_to_first_token_seconds:p{q}{{{w}}}" for q in (50, 95, 99)], "s"),
        ("Inter-token latency p50 / p95 / p99", [f"workload:vllm_inter_token_latency_seconds:p{q}{{{w}}}" for q in (50, 95, 99)], "s"),
        ("End-to-end latency p50 / p95 / p99", [f"workload:vllm_e2e_latency_seconds:p{q}{{{w}}}" for q in (50, 95, 99)], "s"),
        ("Requests per second", [f"workload:vllm_requests:rate5m{{{w}}}"], "reqps"),
        (
            "Generated and prompt tokens per second",
            [f"workload:vllm_generation_tokens:rate5m{{{w}}}", f"workload:vllm_prompt_tokens:rate5m{{{w}}}"],
            "short",
        ),
        ("Error ratio (API requests answered 5xx)", [f"workload:vllm_request_errors:ratio_rate5m{{{w}}}"], "percentunit"),
        ("Availability (serving pods up)", [f"workload:serving_up:ratio{{{w}}}"], "percentunit"),
        ("SLO error ratio, 1 h and 6 h", [f"slo:sli_error:ratio_rate1h{{{w}}}", f"slo:sli_error:ratio_rate6h{{{w}}}"], "percentunit"),
        ("Requests waiting", [f"workload:vllm_requests_waiting:sum{{{w}}}"], "short"),
        (
            "Cost per million tokens (prompt and generated; this hour and the last 30 days)",
            [f"workload:usd_per_million_tokens:ratio{{{w}}}", settled(f"{TOKENS_30D}{{{w}}}")],
            "currencyUSD",
        ),
        ("GPU utilisation and memory", [f"workload:gpu_utilization:avg{{{w}}}", f"workload:gpu_memory_used:avg{{{w}}}"], "percentunit"),
    ]
    # the serving workloads with pods, from kube-state-metrics' labels (POD_WORKLOAD): vLLM's request rate lost a
    # workload whose pods are all down, exactly while ServingWorkloadDown pages for it (review obsreview27 N3)
    served = sorted(wl.name for wl in rp.spec.workloads if wl.kind == "inference")
    listed = f'{POD_WORKLOAD}{{workload=~"{"|".join(served)}"}}' if served else "workload:vllm_requests:rate5m"
    return _board(rp, "-inference", "inference", rows, [_variable("workload", listed, "workload")], have=have)


def dashboards(rp: ResolvedPlatform, site: ResolvedSite, groups: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """File name -> dashboard, over what the site's rule ``groups`` record. The serving records are recorded at every
    site; where no inference workload's team is, their panels and the inference board would stay empty (review
    obsreview24 N3)."""
    have = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    teams = {t.name for t in site.teams}
    if not any(w.kind == "inference" and w.team in teams for w in rp.spec.workloads):
        have = {name for name in have if not name.startswith(SERVING_RECORDS)}
    boards = {"gpu-platform.json": overview(rp, have), "team.json": team(rp, have), "inference.json": inference(rp, have)}
    if "alicerce:namespace_team:info" not in have:  # no team at the site: nobody to pick
        del boards["team.json"]
    if "workload:vllm_requests:rate5m" not in have:  # nothing served here: no workload to pick
        del boards["inference.json"]
    return boards
