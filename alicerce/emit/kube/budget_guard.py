"""The budget guard: holds a team's Kueue ClusterQueue once the month's GPU spend reaches its budget, and releases it.

This file is a program, not a module of the pipeline: the CronJob of :mod:`alicerce.emit.kube.budgets` runs it from a
ConfigMap in a stock Python image, so it uses the standard library only. Each run, for every team in its config:

1. reads from Prometheus the team's spend since the first of the month (UTC), the cost of each hour recorded by
   alicerce's cost rules (``team:gpu_cost_usd:sum1h``, its last sample in each hour) summed at the hour marks, and
   the share of its monthly budget the site watches (``alicerce:team_budget_usd:monthly``);
2. reads the ClusterQueue, and when the spend has reached the budget sets ``spec.stopPolicy: Hold`` (Kueue admits no
   new workload of the queue; admitted ones keep running), recording the month in an annotation; when the spend is
   under the budget again (a new month, or a larger budget) it releases a queue it held itself, and only such a queue:
   a Hold an operator set by hand is theirs to lift. While Prometheus lacks the start of the month (retention deleted
   it, or its volume was lost: ``alicerce:cost_history_start:seconds``, the record CostHistoryTruncated fires on)
   the spend under-counts, so a hold the guard set this month stays (review obsreview8 F3).

A team that ran nothing has a spend series of zeros (the cost rules record 0 for a team of the site while
kube-state-metrics answers): no spend series at all means its sources are gone, not that it spent nothing. Then, as
with no budget series (the rules are not loaded, the wrong Prometheus) or Prometheus unreachable, the guard changes
nothing, neither holding nor releasing, and the run fails so the CronJob's failure shows; the alert
``Budget<Team>SpendMissing`` (alicerce.emit.kube.costs) says why.
Kueue v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go: StopPolicy None | Hold | HoldAndDrain.
"""

from __future__ import annotations

import datetime
import json
import math
import ssl
import sys
import urllib.parse
import urllib.request
from typing import Any

HOLD_ANNOTATION = "alicerce.dev/budget-hold"  # the month (YYYY-MM) the guard held the queue in
SPEND = "team:gpu_cost_usd:rate1h"
HOURLY = "team:gpu_cost_usd:sum1h"  # what the clock hour cost so far, recorded by alicerce's cost rules
BUDGET = "alicerce:team_budget_usd:monthly"
HISTORY_START = "alicerce:cost_history_start:seconds"  # present while the TSDB lacks the start of the month
KUEUE_PATH = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/"
IN_CLUSTER = {
    "url": "https://kubernetes.default.svc",
    "tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
    "caFile": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
}
TIMEOUT = 30


def month_start(now: datetime.datetime) -> datetime.datetime:
    return now.astimezone(datetime.UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _labels(team: str, site: str) -> str:
    return "{" + f"team={json.dumps(team)},site={json.dumps(site)}" + "}"


def spend_query(team: str, site: str, now: datetime.datetime, former: list[str] | None = None) -> str:
    """USD the team spent at the site since the month began: each hour's cost (the last sample of
    ``team:gpu_cost_usd:sum1h`` in it, read at the hour mark that ends it: alicerce.emit.kube.costs.hour_total) from
    01:00 of the first on. The range starts a second after midnight of the first, which
    ends the previous month's last hour (Prometheus 2 closes ranges on the left, 3 opens them: neither takes it in).
    The hour running now counts at its end; before 01:00 of the first the month has cost 0. Nothing when the spend is
    not recorded now. ``former``: names the team had earlier this month (teams[].renamedFrom), whose hours count too:
    the queue of a team renamed past its budget is held again (review obsreview24 F2)."""
    seconds = max(1, int((now - month_start(now)).total_seconds()) - 1)
    names = "|".join([team, *(former or [])])  # Prometheus anchors the regex; team names are DNS labels
    hour = f"last_over_time({HOURLY}{{team=~{json.dumps(names)},site={json.dumps(site)}}}[1h] offset 1ms)"
    hours = f"sum(sum_over_time({hour}[{seconds}s:1h])) or vector(0)"
    # nothing unless the rate was recorded since the previous run (every 15 minutes): a month summed up to when the
    # series vanished would release a held queue, or never hold a spent one
    return f"({hours}) and on () count(last_over_time({SPEND}{_labels(team, site)}[15m]))"


def budget_query(team: str, site: str) -> str:
    return f"max({BUDGET}{_labels(team, site)})"


def history_query(site: str) -> str:
    return f"max({HISTORY_START}{{site={json.dumps(site)}}})"


def decide(
    spent: float | None, budget: float | None, queue: dict[str, Any], month: str, *, whole_month: bool = True
) -> dict[str, Any] | None:
    """The merge patch the ClusterQueue needs, or None. ``month``: the current one, YYYY-MM; ``whole_month``: the
    spend counts the month from its start (else a hold of this month stays: the spend under-counts)."""
    if spent is None or budget is None:
        return None
    policy = queue.get("spec", {}).get("stopPolicy", "None")
    held = queue.get("metadata", {}).get("annotations", {}).get(HOLD_ANNOTATION)
    # a $0 share (the team's budget is planned at its other sites: alicerce plan's PL334) holds once anything is spent
    # here, not at midnight on the 1st with nothing spent: a team whose queue here runs only CPU work never spends GPUs
    if spent > budget or spent >= budget > 0:
        if policy != "None":
            return None  # held already (by the guard, or harder by an operator: HoldAndDrain stays)
        return {"metadata": {"annotations": {HOLD_ANNOTATION: month}}, "spec": {"stopPolicy": "Hold"}}
    if policy == "Hold" and held is not None and (whole_month or held != month):
        return {"metadata": {"annotations": {HOLD_ANNOTATION: None}}, "spec": {"stopPolicy": "None"}}
    return None


def prometheus_value(base: str, query: str, at: datetime.datetime) -> float | None:
    """The single value of an instant query, or None when it returns nothing."""
    url = f"{base.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": f"{at.timestamp():.3f}"})
    with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise RuntimeError(f"Prometheus refused {query}: {body.get('error')}")
    result = body["data"]["result"]
    if not result:
        return None
    value = float(result[0]["value"][1])
    return None if math.isnan(value) else value


class Kubernetes:
    """Just enough of the API server: get and merge-patch a ClusterQueue with the pod's service account token."""

    def __init__(self, config: dict[str, str]) -> None:
        self.url = config["url"].rstrip("/")
        with open(config["tokenFile"], encoding="utf-8") as f:
            self.token = f.read().strip()
        self.context = ssl.create_default_context(cafile=config["caFile"]) if self.url.startswith("https:") else None

    def _call(self, method: str, name: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.url}{KUEUE_PATH}{urllib.parse.quote(name)}", data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if body is not None:
            request.add_header("Content-Type", "application/merge-patch+json")
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=self.context) as response:
            result: dict[str, Any] = json.load(response)
        return result

    def get(self, name: str) -> dict[str, Any]:
        return self._call("GET", name)

    def patch(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("PATCH", name, body)


def run(config: dict[str, Any], now: datetime.datetime) -> int:
    kube = Kubernetes({**IN_CLUSTER, **config.get("kubernetes", {})})
    month = month_start(now).strftime("%Y-%m")
    failed = 0
    for entry in config["teams"]:
        team, queue_name = entry["team"], entry["clusterQueue"]
        try:
            budget = prometheus_value(config["prometheus"], budget_query(team, config["site"]), now)
            spent = prometheus_value(config["prometheus"], spend_query(team, config["site"], now, entry.get("renamedFrom")), now)
            if spent is None or budget is None:
                what = "no spend" if spent is None else "no budget"
                print(f"team {team}: {what} recorded at site {config['site']}; queue {queue_name} left as it is", file=sys.stderr)
                failed += 1
                continue
            whole_month = prometheus_value(config["prometheus"], history_query(config["site"]), now) is None
            if not whole_month:
                print(
                    f"team {team}: Prometheus lacks the start of the month (CostHistoryTruncated); a hold of {month} stays", file=sys.stderr
                )
            queue = kube.get(queue_name)
            patch = decide(spent, budget, queue, month, whole_month=whole_month)
            if patch is not None:
                kube.patch(queue_name, patch)
        except Exception as e:  # one team's failure must not keep the others' queues from being guarded
            print(f"team {team}: {type(e).__name__}: {e}", file=sys.stderr)
            failed += 1
            continue
        action = "held" if patch and patch["spec"]["stopPolicy"] == "Hold" else "released" if patch else "unchanged"
        print(f"team {team}: ${spent:,.2f} of ${budget:,.2f} this month; queue {queue_name} {action}")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        config = json.load(f)
    return run(config, datetime.datetime.now(datetime.UTC))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
