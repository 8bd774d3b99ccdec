"""Budgets that act (issue 24 item 3): the guard holds a team's ClusterQueue once its month's spend reaches the
budget, and releases it the next month. Its logic runs for real: queries against a real Prometheus server over a
backfilled TSDB, HTTP calls to a stand-in API server that applies JSON merge patches (RFC 7386) and checks each
result against Kueue's vendored ClusterQueue schema (the API server is the boundary, not what is tested)."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from alicerce.emit.kube import budget_guard
from alicerce.emit.kube.budgets import NAME, guard_script
from alicerce.emit.kube.costs import HISTORY_START
from alicerce.emit.kube.monitoring import monitoring_objects, rule_groups
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT
from tests.emit.kube.prometheus import at, every, needs_prometheus, prometheus_server
from tests.emit.kube.test_monitoring import expected, needs_promtool, platform, rules_of, run_promtool
from tests.emit.kube.upstream import load

TOKEN = "guard-token"
HOUR = datetime.timedelta(hours=1)
QUARTER = datetime.timedelta(minutes=15)
CRD = load("kueue", "0.19.2", "crds/kueue.x-k8s.io_clusterqueues_v1beta2.schema.json")


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies application/merge-patch+json."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


class FakeApiServer:
    """ClusterQueues by name; every PATCH recorded and validated against the vendored CRD schema."""

    def __init__(self, queues: dict[str, dict[str, Any]]) -> None:
        self.queues = queues
        self.patches: list[tuple[str, dict[str, Any]]] = []


@contextmanager
def api_server(state: FakeApiServer) -> Iterator[str]:
    prefix = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _queue(self) -> str | None:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}" or not self.path.startswith(prefix):
                self._reply(403, {"kind": "Status", "code": 403})
                return None
            name = self.path[len(prefix) :]
            if name not in state.queues:
                self._reply(404, {"kind": "Status", "code": 404})
                return None
            return name

        def do_GET(self) -> None:
            if (name := self._queue()) is not None:
                self._reply(200, state.queues[name])

        def do_PATCH(self) -> None:
            if (name := self._queue()) is None:
                return
            assert self.headers.get("Content-Type") == "application/merge-patch+json"
            patch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            updated = merge(state.queues[name], patch)
            jsonschema.validate(updated["spec"], CRD["properties"]["spec"])
            state.queues[name] = updated
            state.patches.append((name, patch))
            self._reply(200, updated)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def queue(name: str, policy: str | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"cohortName": "acme", "resourceGroups": []}
    if policy is not None:
        spec["stopPolicy"] = policy
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}  # fmt: skip


Series = dict[str, list[tuple[datetime.datetime, float]]]


def spend(team: str, usd_per_hour: float, *spans: tuple[str, str], idle: tuple[str, ...] = ()) -> Series:
    """What the cost rules record for a team that runs over ``spans``: its spend rate, and within each hour of them that
    hour's cost so far (the hour's total at each sample: the totals read only each hour's last); both 0 around the
    ``idle`` moments (the rules record 0 for a team that runs nothing while kube-state-metrics answers)."""

    def before(b: str) -> str:  # the span's last quarter-hour: the sample at ``b`` is the next hour's
        return (at(b) - QUARTER).isoformat()[:16]

    quiet = [s for m in idle for s in every((at(m) - HOUR).isoformat()[:16], m, QUARTER, 0.0)]
    rate = [s for a, b in spans for s in every(a, b, QUARTER, usd_per_hour)]
    hours = [s for a, b in spans for s in every(a, before(b), QUARTER, usd_per_hour)]
    labels = f'{{site="aws",team="{team}"}}'
    return {f"team:gpu_cost_usd:rate1h{labels}": rate + quiet, f"team:gpu_cost_usd:sum1h{labels}": hours + quiet}


def budget(team: str, usd: float, *moments: str) -> Series:
    """The static budget series, around the moments the guard runs (a backfilled block per two hours of samples
    makes a whole month of them slow to load)."""
    spans = [(at(m) - HOUR, at(m)) for m in moments]
    samples = [s for a, b in spans for s in every(a.isoformat()[:16], b.isoformat()[:16], QUARTER, usd)]
    return {f'alicerce:team_budget_usd:monthly{{site="aws",team="{team}"}}': samples}


def config(prometheus: str, kube: str, tmp_path: Path, teams: list[str]) -> dict[str, Any]:
    (tmp_path / "token").write_text(TOKEN + "\n")
    return {
        "prometheus": prometheus,
        "site": "aws",
        "teams": [{"team": t, "clusterQueue": t} for t in teams],
        "kubernetes": {"url": kube, "tokenFile": str(tmp_path / "token"), "caFile": ""},
    }


def test_the_decision_holds_once_and_releases_only_its_own_hold() -> None:
    month = "2025-03"
    assert budget_guard.decide(10.0, 5.0, queue("a"), month) == {"metadata": {"annotations": {budget_guard.HOLD_ANNOTATION: month}},
                                                                 "spec": {"stopPolicy": "Hold"}}  # fmt: skip
    assert budget_guard.decide(10.0, 5.0, queue("a", "Hold", {budget_guard.HOLD_ANNOTATION: month}), month) is None
    assert budget_guard.decide(10.0, 5.0, queue("a", "HoldAndDrain"), month) is None  # an operator's harder stop stays
    assert budget_guard.decide(1.0, 5.0, queue("a", "Hold"), month) is None  # an operator's own Hold is theirs to lift
    released = budget_guard.decide(1.0, 5.0, queue("a", "Hold", {budget_guard.HOLD_ANNOTATION: "2025-02"}), month)
    assert released == {"metadata": {"annotations": {budget_guard.HOLD_ANNOTATION: None}}, "spec": {"stopPolicy": "None"}}
    assert budget_guard.decide(None, 5.0, queue("a"), month) is None and budget_guard.decide(9.0, None, queue("a"), month) is None
    # review obsreview11 F2: a $0 share holds at the first dollar spent, not at midnight with nothing spent
    assert budget_guard.decide(0.0, 0.0, queue("a"), month) is None
    assert budget_guard.decide(0.01, 0.0, queue("a"), month) == {"metadata": {"annotations": {budget_guard.HOLD_ANNOTATION: month}},
                                                                  "spec": {"stopPolicy": "Hold"}}  # fmt: skip
    # review obsreview8 F3: while the month's start is missing, this month's hold stays; last month's is released
    held_now = queue("a", "Hold", {budget_guard.HOLD_ANNOTATION: month})
    assert budget_guard.decide(1.0, 5.0, held_now, month, whole_month=False) is None
    assert budget_guard.decide(1.0, 5.0, held_now, month) == released
    held_before = queue("a", "Hold", {budget_guard.HOLD_ANNOTATION: "2025-02"})
    assert budget_guard.decide(1.0, 5.0, held_before, month, whole_month=False) == released


@needs_prometheus
def test_the_guard_keeps_its_hold_while_prometheus_lacks_the_start_of_the_month(tmp_path: Path) -> None:
    """Review obsreview8 F3: research was held on 10 March; Prometheus's volume is lost on the 20th, and the spend it
    counts from then is under the budget: the hold stays while the rules record the history as cut short (a run
    that reads no such record releases it, as a larger budget would)."""
    run = "2025-03-21T12:00"
    state = FakeApiServer({"research": queue("research", "Hold", {budget_guard.HOLD_ANNOTATION: "2025-03"})})
    lost = {'alicerce:cost_history_start:seconds{namespace="monitoring",pod="prometheus-0",site="aws"}':
            every("2025-03-21T11:00", run, QUARTER, at("2025-03-20T00:00").timestamp())}  # fmt: skip
    series = {**spend("research", 100, ("2025-03-20T00:00", run)), **budget("research", 5000, run)}
    for tsdb in ("lost", "whole"):
        (tmp_path / tsdb).mkdir()
    with prometheus_server({**series, **lost}, tmp_path / "lost") as prometheus, api_server(state) as kube:
        assert budget_guard.run(config(prometheus, kube, tmp_path, ["research"]), at(run)) == 0
    assert state.patches == []
    with prometheus_server(series, tmp_path / "whole") as prometheus, api_server(state) as kube:
        assert budget_guard.run(config(prometheus, kube, tmp_path, ["research"]), at(run)) == 0
    assert state.queues["research"]["spec"]["stopPolicy"] == "None"


@needs_prometheus
def test_the_guard_holds_a_spent_team_and_releases_it_the_next_month(tmp_path: Path) -> None:
    # research spends $100/h from 28 February 20:00 to 3 March 04:00; March's first hour ends at 01:00 of the first
    # (midnight ends February's last), so its $5,000 is gone with the hour that ends at 02:00 on the 3rd (the 50th);
    # applied-ml ran nothing (a spend of 0); ops was held by an operator by hand
    runs = ("2025-03-02T12:00", "2025-03-03T02:30", "2025-03-20T00:00", "2025-04-01T01:10")
    spans = (("2025-02-28T20:00", "2025-03-03T04:00"), ("2025-04-01T00:00", "2025-04-01T02:00"))
    series = {**spend("research", 100, *spans, idle=("2025-03-20T00:00",)), **budget("research", 5000, *runs),
              **spend("applied-ml", 0, idle=runs), **budget("applied-ml", 2000, *runs),
              **spend("ops", 0, idle=runs), **budget("ops", 10, *runs)}  # fmt: skip
    state = FakeApiServer({"research": queue("research"), "applied-ml": queue("applied-ml"), "ops": queue("ops", "Hold")})
    with prometheus_server(series, tmp_path) as prometheus, api_server(state) as kube:
        cfg = config(prometheus, kube, tmp_path, ["applied-ml", "ops", "research"])

        assert budget_guard.run(cfg, at("2025-03-02T12:00")) == 0  # 36 hours: $3,600
        assert state.patches == []
        assert budget_guard.run(cfg, at("2025-03-03T02:30")) == 0  # 50 hours counted: $5,000
        assert state.patches == [("research", {"metadata": {"annotations": {budget_guard.HOLD_ANNOTATION: "2025-03"}},
                                               "spec": {"stopPolicy": "Hold"}})]  # fmt: skip
        assert state.queues["research"]["spec"]["stopPolicy"] == "Hold"
        assert budget_guard.run(cfg, at("2025-03-20T00:00")) == 0  # held already: no second patch
        assert len(state.patches) == 1
        # February's spend does not count in March; in April the month starts again: the hour that ended at 01:00
        assert budget_guard.run(cfg, at("2025-04-01T01:10")) == 0
        assert state.patches[-1] == ("research", {"metadata": {"annotations": {budget_guard.HOLD_ANNOTATION: None}},
                                                  "spec": {"stopPolicy": "None"}})  # fmt: skip
        assert state.queues["research"]["spec"]["stopPolicy"] == "None"
        assert budget_guard.HOLD_ANNOTATION not in state.queues["research"]["metadata"]["annotations"]
        assert state.queues["ops"]["spec"]["stopPolicy"] == "Hold" and state.queues["applied-ml"]["spec"] == queue("x")["spec"]


@needs_prometheus
def test_without_a_budget_series_the_guard_changes_nothing_and_fails(tmp_path: Path) -> None:
    state = FakeApiServer({"research": queue("research")})
    series = spend("research", 1e6, ("2025-03-01T00:00", "2025-03-02T00:00"))
    with prometheus_server(series, tmp_path) as prometheus, api_server(state) as kube:
        assert budget_guard.run(config(prometheus, kube, tmp_path, ["research"]), at("2025-03-01T23:00")) == 1
    assert state.patches == []


@needs_prometheus
def test_without_a_spend_series_the_guard_neither_holds_nor_releases_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """research was held in February; in March its spend series is gone (kube-state-metrics down, the cost rules not
    loaded): a missing spend is not a spend of 0, so the queue stays held, and applied-ml, spent out but blind since
    its series vanished an hour before the run, is not held on a month summed up to then; the run fails."""
    state = FakeApiServer({"research": queue("research", "Hold", {budget_guard.HOLD_ANNOTATION: "2025-02"}),
                           "applied-ml": queue("applied-ml")})  # fmt: skip
    run = "2025-03-05T12:00"
    series = {**budget("research", 5000, run), **budget("applied-ml", 10, run),
              **spend("applied-ml", 100, ("2025-03-01T00:00", "2025-03-05T10:00"))}  # fmt: skip
    with prometheus_server(series, tmp_path) as prometheus, api_server(state) as kube:
        assert budget_guard.run(config(prometheus, kube, tmp_path, ["applied-ml", "research"]), at(run)) == 1
    assert state.patches == []
    err = capsys.readouterr().err
    assert "team research: no spend recorded at site aws; queue research left as it is" in err
    assert "team applied-ml: no spend recorded" in err


@needs_promtool
def test_spend_is_zero_while_its_sources_answer_and_missing_spend_raises_the_guards_alert(tmp_path: Path) -> None:
    rp = platform()
    rule = rules_of(rp, "aws")["BudgetResearchSpendMissing"]
    nodes = [{"series": 'kube_node_labels{node="ip-10-20-1-1.ec2.internal",label_alicerce_dev_pool="train-p5"}', "values": "1x60"}]
    answering = {"interval": "1m", "input_series": nodes,
                 "promql_expr_test": [{"expr": 'team:gpu_cost_usd:rate1h{team="research"}', "eval_time": "40m",
                                       "exp_samples": [{"labels": 'team:gpu_cost_usd:rate1h{site="aws",team="research"}', "value": 0}]}],
                 "alert_rule_test": [{"eval_time": "40m", "alertname": "BudgetResearchSpendMissing", "exp_alerts": []}]}  # fmt: skip
    blind = {"interval": "1m", "input_series": [{"series": 'up{job="x"}', "values": "1x60"}],
             "alert_rule_test": [{"eval_time": "40m", "alertname": "BudgetResearchSpendMissing",
                                  "exp_alerts": [expected(rule, {"team": "research"}, "1")]}]}  # fmt: skip
    run_promtool(rp, "aws", [answering, blind], tmp_path)


def test_the_shipped_script_runs_on_the_standard_library_alone(tmp_path: Path) -> None:
    """The ConfigMap's copy, run with `python -I` (no site-packages): Prometheus refused, it fails without a patch."""
    (tmp_path / "guard.py").write_text(guard_script())
    (tmp_path / "token").write_text(TOKEN)
    cfg = {"prometheus": "http://127.0.0.1:9", "site": "aws", "teams": [{"team": "t", "clusterQueue": "t"}],
           "kubernetes": {"url": "http://127.0.0.1:9", "tokenFile": str(tmp_path / "token"), "caFile": ""}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    done = subprocess.run([sys.executable, "-I", str(tmp_path / "guard.py"), str(tmp_path / "config.json")],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 1 and "team t: URLError" in done.stderr, done.stderr


def spec_with(on_exhausted: str) -> str:
    return (
        (ROOT / "platform.yaml")
        .read_text()
        .replace(
            "budget: {monthlyUsd: 900000, onExhausted: stopAdmitting}", f"budget: {{monthlyUsd: 900000, onExhausted: {on_exhausted}}}", 1
        )
    )


def test_only_a_budget_that_says_so_gets_a_guard_and_it_may_patch_only_that_queue() -> None:
    alert_only = validated(load_text(spec_with("alert"), "p.yaml"), "prod")
    assert not [o for o in monitoring_objects(alert_only, "aws") if o["metadata"]["name"] == NAME]
    rp = validated(load_text(spec_with("stopAdmitting"), "p.yaml"), "prod")
    for site in ("aws", "dc1"):
        objs = {o["kind"]: o for o in monitoring_objects(rp, site) if o["metadata"]["name"] == NAME}
        assert sorted(objs) == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "CronJob", "ServiceAccount"]
        assert objs["ClusterRole"]["rules"] == [
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "resourceNames": ["research"], "verbs": ["get", "patch"]}
        ]
        subject = objs["ClusterRoleBinding"]["subjects"][0]
        pod = objs["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert (subject["name"], subject["namespace"]) == (pod["serviceAccountName"], objs["ServiceAccount"]["metadata"]["namespace"])
        assert objs["ConfigMap"]["data"]["budget_guard.py"] == guard_script()
        cfg = json.loads(objs["ConfigMap"]["data"]["config.json"])
        assert cfg["site"] == site and cfg["teams"] == [{"team": "research", "clusterQueue": "research"}]
        # the budget it compares with is one the site's rules record
        recorded = {r["labels"]["team"] for g in rule_groups(rp, site) for r in g["rules"] if r.get("record") == budget_guard.BUDGET}
        assert "research" in recorded
        assert budget_guard.SPEND in {r.get("record") for g in rule_groups(rp, site) for r in g["rules"]}
        assert budget_guard.HISTORY_START == HISTORY_START in {r.get("record") for g in rule_groups(rp, site) for r in g["rules"]}


OFF = [("kueue: {enabled: false}", "AL362"), ("kueue: {}\n  monitoring: {enabled: false}", "AL363")]


@pytest.mark.parametrize(("operator", "rule"), OFF)
def test_a_stop_the_platform_cannot_carry_out_is_a_located_error(operator: str, rule: str) -> None:
    """Kueue off: no ClusterQueue to hold (AL362); monitoring off: no spend to read (AL363)."""
    from alicerce.spec.errors import SpecInvalid

    text = spec_with("stopAdmitting").replace("  kueue: {}\n", f"  {operator}\n", 1)
    with pytest.raises(SpecInvalid) as raised:
        validated(load_text(text, "p.yaml"), "prod")
    found = [e for e in raised.value.errors if e.rule == rule]
    assert len(found) == 1, raised.value.errors
    line = text[: text.index("onExhausted")].count("\n") + 1
    assert found[0].path == ("tenancy", "teams", 0, "budget", "onExhausted") and found[0].span.line == line


@pytest.mark.parametrize("on_exhausted", ["alert", "stopAdmitting"])
def test_a_budget_of_any_kind_needs_a_month_of_retention(on_exhausted: str) -> None:
    """Review obsreview6 DEFECT 6: the budget alerts sum the month's spend as the guard does, so a retention shorter
    than the longest month silences them by its end too; AL363 checked only budgets that stop admitting. The error
    points at monitoring.retention and the default keeps a whole month."""
    from alicerce.spec.errors import SpecInvalid
    from alicerce.spec.models.monitoring import Monitoring

    assert Monitoring().retention == 31 * 86400
    text = spec_with(on_exhausted)
    assert text.count("  retention: 31d ") == 1
    short = text.replace("  retention: 31d ", "  retention: 30d ", 1)
    with pytest.raises(SpecInvalid) as raised:
        validated(load_text(short, "p.yaml"), "prod")
    found = [e for e in raised.value.errors if e.rule == "AL363"]
    assert len(found) == 1, raised.value.errors
    line = short[: short.index("  retention: 30d ")].count("\n") + 1
    assert found[0].path == ("monitoring", "retention") and found[0].span.line == line
    assert found[0].hint == "set monitoring.retention to 31d or more (the default)"
    reader = "budget alerts sum" if on_exhausted == "alert" else "budget guard sums"
    assert f"team research's {reader} the month's spend from Prometheus, which keeps 30 days" in found[0].message
    # without the line the default holds a month: no finding
    validated(load_text(text.replace("  retention: 31d ", "  # retention: 31d ", 1), "p.yaml"), "prod")
