"""A RayService's serving alerts from Ray Serve's own replica count (reviews obsreview47 D-1, obsreview48 D-1..D-3).

Its pods' readiness cannot say whether it serves: KubeRay's head probe checks the raylet and GCS only, a worker's the
Serve proxy, which runs on any node holding a replica of any deployment and on no node holding none. Counting Ray
workers' readiness paged on a cold start from zero and beside an idle worker group, and stayed quiet on a dead engine
beside a live ingress. The Serve controller on the head sets each deployment's healthy replicas and its status at every
control loop (python/ray/serve/_private/deployment_state.py); the alerts read those, as Prometheus stores them from the
head's metrics port under the serving PodMonitor (the workload label from the pod's alicerce.dev/workload). Under Ray's
default OpenTelemetry backend a gauge not set again is dropped after its export: a replica's 0 shows once, then nothing
(review obsreview49 D-1: the target replica gauge, set on a change only, was absent and both alerts silent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alicerce.emit.kube.kpi import (
    RAY_DEPLOYMENT_STATUS_GAUGE,
    RAY_DESIRED_REPLICAS,
    RAY_REPLICA_HEALTHY,
    RAY_STATUS_HEALTHY,
    RAY_STATUS_WANTING,
)
from tests.emit.kube.test_monitoring import expected, needs_promtool, platform, rules_of, run_promtool
from tests.emit.kube.upstream import load

ENGINE, INGRESS = "LLMServer:llama-3-70b", "OpenAiIngress"
HEAD = "chat-raycluster-head"
KEY = {"namespace": "serving", "workload": "chat-70b", "application": "llm"}


def controller(metric: str, deployment: str, values: str, replica: str | None = None, head: str = HEAD) -> dict[str, str]:
    """One of the Serve controller's gauges, scraped from the head pod (Ray's own SessionName and node labels beside)."""
    labels = {"namespace": "serving", "pod": head, "alicerce_dev_workload": "chat-70b", "application": "llm",
              "deployment": deployment, "SessionName": "session_2026", "job": "serving/chat-70b"}  # fmt: skip
    if replica is not None:
        labels["replica"] = replica
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


# serve_deployment_status's numbering (ray python/ray/serve/tests/test_metrics.py)
DEPLOY_FAILED, UNHEALTHY, UPDATING, UPSCALING, DOWNSCALING, HEALTHY = 1, 2, 3, 4, 5, 6


def status(deployment: str, values: str, head: str = HEAD) -> dict[str, str]:
    return controller(RAY_DEPLOYMENT_STATUS_GAUGE, deployment, values, head=head)


def healthy(deployment: str, replica: str, values: str, head: str = HEAD) -> dict[str, str]:
    return controller(RAY_REPLICA_HEALTHY, deployment, values, replica, head)


def desired(deployment: str, values: str) -> dict[str, str]:
    """An autoscaling deployment's decision, before min_replicas and max_replicas bound it (at every control loop)."""
    return controller(RAY_DESIRED_REPLICAS, deployment, values)


def at(alert: str, when: str, fired: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"eval_time": when, "alertname": alert, "exp_alerts": fired or []}


def case(inputs: list[dict[str, str]], checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"interval": "1m", "input_series": inputs, "alert_rule_test": checks}


def test_the_gauges_read_are_the_serve_controllers() -> None:
    facts = load("ray-serve", "latest-2026-12", "metrics.json")
    assert facts[RAY_REPLICA_HEALTHY]["labels"] == ["deployment", "replica", "application"]
    assert facts[RAY_DEPLOYMENT_STATUS_GAUGE]["labels"] == facts[RAY_DESIRED_REPLICAS]["labels"] == ["deployment", "application"]
    assert {facts[m]["type"] for m in (RAY_REPLICA_HEALTHY, RAY_DEPLOYMENT_STATUS_GAUGE, RAY_DESIRED_REPLICAS)} == {"gauge"}
    numbering = {"DEPLOY_FAILED": DEPLOY_FAILED, "UNHEALTHY": UNHEALTHY, "UPDATING": UPDATING, "UPSCALING": UPSCALING,
                 "DOWNSCALING": DOWNSCALING, "HEALTHY": HEALTHY}  # fmt: skip
    assert {v: int(k) for k, v in facts[RAY_DEPLOYMENT_STATUS_GAUGE]["values"].items() if v != "UNKNOWN"} == numbering
    assert (RAY_STATUS_HEALTHY, RAY_STATUS_WANTING) == (HEALTHY, (DEPLOY_FAILED, UPSCALING))


@needs_promtool
def test_a_rayservice_pages_on_its_replicas_not_its_pods(tmp_path: Path) -> None:
    rp = platform()
    rules = rules_of(rp, "aws")
    down, never, blind = "RayServeDeploymentDown", "RayServeDeploymentNeverHealthy", "RayServeDeploymentStatusAbsent"
    engine = KEY | {"deployment": ENGINE}
    tests = [
        # the engine's only replica fails its health check at 60m (its 0 exported once, then dropped) and no replacement
        # passes, UNHEALTHY until one does; the ingress's stays healthy, so the worker holding both stays Ready: the
        # engine is down (obsreview48 D-3)
        case(
            [
                status(ENGINE, f"{HEALTHY}x59 {UNHEALTHY}x120"),
                healthy(ENGINE, "r1", "1x59 0 _x119"),
                status(INGRESS, f"{HEALTHY}x180"),
                healthy(INGRESS, "i1", "1x180"),
            ],
            [
                at(down, "50m"),
                at(down, "70m", [expected(rules[down], engine, str(UNHEALTHY))]),
                at(down, "170m", [expected(rules[down], engine, str(UNHEALTHY))]),
                at(never, "170m"),
            ],
        ),
        # its GPU worker drained (a spot reclaim, a node drain): Serve moves the replica and the status stays HEALTHY
        # while the replacement waits for a GPU node from 60m, and runs at 120m (obsreview50 D-1); a deployment with
        # fixed replicas, then one that autoscales with requests to serve
        case(
            [status(ENGINE, f"{HEALTHY}x180"), healthy(ENGINE, "r1", "1x59 0 _x119"), healthy(ENGINE, "r2", "_x119 1x60")],
            [at(down, "50m"), at(down, "70m", [expected(rules[down], engine, str(HEALTHY))]), at(down, "130m")],
        ),
        case(
            [
                status(ENGINE, f"{HEALTHY}x180"),
                desired(ENGINE, "1x180"),
                healthy(ENGINE, "r1", "1x59 0 _x119"),
                healthy(ENGINE, "r2", "_x119 1x60"),
            ],
            [at(down, "70m", [expected(rules[down], engine, str(HEALTHY))]), at(down, "130m")],
        ),
        # scaled to zero at 31m as a 30-second scrape stores it, the second or two of DOWNSCALING unseen (obsreview51
        # D-1): HEALTHY before and after, the replica's 0 once and then none, its autoscaler deciding on none; up again
        # at 102m, loading until 132m: neither the zero nor the cold start is down, and 30 minutes is no never-healthy
        # (obsreview48 D-1)
        case(
            [
                status(ENGINE, f"{HEALTHY}x101 {UPSCALING}x30 {HEALTHY}x50"),
                desired(ENGINE, "1x30 0x71 1x80"),
                healthy(ENGINE, "r1", "1x30 0 _x149"),
                healthy(ENGINE, "r2", "_x132 1x48"),
            ],
            [at(down, "40m"), at(down, "90m"), at(down, "110m"), at(down, "130m"), at(never, "130m"), at(down, "170m"), at(never, "170m")],
        ),
        # scaling up for lack of GPU nodes (UPSCALING from 20m, its second replica Pending) when its serving replica is
        # moved off a drained node at 60m: UPSCALING with none is no cold start, it pages (obsreview53 D-1)
        case(
            [status(ENGINE, f"{HEALTHY}x19 {UPSCALING}x100"), desired(ENGINE, "1x19 2x100"), healthy(ENGINE, "r1", "1x59 0 _x59")],
            [
                at(down, "50m"),
                at(down, "70m", [expected(rules[down], engine, str(UPSCALING))]),
                at(down, "110m", [expected(rules[down], engine, str(UPSCALING))]),
            ],
        ),
        # scaling down (one replica of two, or a lower num_replicas) when its last serving replica is moved off a
        # drained node at 30m: DOWNSCALING until the replacement runs at 110m, its autoscaler still deciding on one:
        # down (obsreview54 G-1); a scale to zero whose last replica takes ten minutes to stop is not
        case(
            [
                status(ENGINE, f"{HEALTHY}x19 {DOWNSCALING}x90 {HEALTHY}x10"),
                desired(ENGINE, "2x19 1x100"),
                healthy(ENGINE, "r1", "1x19 0 _x99"),
                healthy(ENGINE, "r2", "1x29 0 _x89"),
                healthy(ENGINE, "r3", "_x109 1x10"),
            ],
            [at(down, "30m"), at(down, "40m", [expected(rules[down], engine, str(DOWNSCALING))]), at(down, "115m")],
        ),
        case(
            [
                status(ENGINE, f"{HEALTHY}x19 {DOWNSCALING}x10 {HEALTHY}x30"),
                desired(ENGINE, "1x19 0x40"),
                healthy(ENGINE, "r1", "1x19 0 _x39"),
            ],
            [at(down, "27m"), at(down, "50m"), at(never, "50m")],
        ),
        # a zero-downtime upgrade: the new cluster's controller updates its replica for 40 minutes while the old
        # cluster's still serves
        case(
            [
                status(ENGINE, f"{HEALTHY}x120", "chat-raycluster-a-head"),
                healthy(ENGINE, "r1", "1x120", "chat-raycluster-a-head"),
                status(ENGINE, f"_x30 {UPDATING}x40 {HEALTHY}x50", "chat-raycluster-b-head"),
                healthy(ENGINE, "r2", "_x70 1x50", "chat-raycluster-b-head"),
            ],
            [at(down, "60m"), at(never, "60m"), at(down, "100m"), at(never, "100m")],
        ),
        # a first deploy whose replica never passes a health check: a ticket after 45 minutes, no page
        case(
            [status(ENGINE, f"{UPDATING}x30 {DEPLOY_FAILED}x30")],
            [at(never, "40m"), at(never, "50m", [expected(rules[never], engine, str(DEPLOY_FAILED))]), at(down, "50m")],
        ),
        # a Ray before the status gauge: replica health alone cannot tell dead from scaled to zero, and says so
        case(
            [healthy(ENGINE, "r1", "1x60")],
            [at(down, "50m"), at(never, "50m"), at(blind, "50m", [expected(rules[blind], engine, "1")])],
        ),
    ]
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_the_down_page_needs_the_served_replica_it_lost(tmp_path: Path) -> None:
    """The control of the scale-to-zero case: the same replica lost while its autoscaler still wants one pages, so the
    quiet zero and cold start above are the decision's doing, not an input the rule cannot read."""
    rp = platform()
    rules = rules_of(rp, "aws")
    engine = KEY | {"deployment": ENGINE}
    lost = [status(ENGINE, f"{HEALTHY}x101 {UPSCALING}x30 {HEALTHY}x50"), desired(ENGINE, "1x180"),
            healthy(ENGINE, "r1", "1x30 0 _x149"), healthy(ENGINE, "r2", "_x132 1x48")]  # fmt: skip
    fired = [expected(rules["RayServeDeploymentDown"], engine, str(HEALTHY))]
    run_promtool(rp, "aws", [case(lost, [at("RayServeDeploymentDown", "90m", fired), at("RayServeDeploymentDown", "140m")])], tmp_path)
