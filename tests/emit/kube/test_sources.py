"""A KPI source that went missing raises an alert (issue 24, review: a KPI must never read as "fine" because its
series vanished). For each source, promtool fed with what a site looks like without it (it fires, naming what is
blind) and with it (quiet); the series carry the label shapes of the exporters at their pinned versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from alicerce.catalog.alerts import FORMER_NAMES, SOURCE_ALERTS, STATIC_ALERTS, TPOT
from alicerce.emit.kube.kpi import KIND_ACTIVE, KIND_MOST_ACTIVE, RAY_NODE_TYPE_LABEL
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import ROOT
from tests.emit.kube.scrape import kuberay_scraped
from tests.emit.kube.test_diagnoses import NODE, OTHER, STEPS, cordoned, gpus, io, node_counter, node_labels
from tests.emit.kube.test_monitoring import expected, needs_promtool, platform, rule_groups, rules_of, run_promtool
from tests.emit.kube.upstream import load


def check(site: str, name: str, inputs: list[dict[str, str]], fired: list[dict[str, Any]], tmp_path: Path) -> None:
    tmp_path.mkdir()
    run_promtool(platform(), site, [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "30m", "alertname": name, "exp_alerts": fired}]}], tmp_path)  # fmt: skip


def test_every_source_alert_is_generated_where_its_source_belongs_and_can_be_overridden() -> None:
    assert set(SOURCE_ALERTS) <= set(STATIC_ALERTS)  # monitoring.alerts may retune or drop them
    aws, dc1 = rules_of(platform(), "aws"), rules_of(platform(), "dc1")
    assert {"KubeStateMetricsAbsent", "NodeExporterAbsent", "DCGMProfilingAbsent", "KueueMetricsAbsent", "ServingMetricsAbsent"} <= set(aws)
    # EFA ports report no traffic counters to the node exporter: nothing to miss on AWS; InfiniBand on dc1 has them
    assert "FabricCountersAbsent" not in aws
    assert "onprem-h100" in dc1["FabricCountersAbsent"]["expr"]
    assert "ServingMetricsAbsent" not in dc1  # no serving team at dc1


@needs_promtool
def test_kube_state_metrics_absent_fires_without_any_node_series(tmp_path: Path) -> None:
    rule = rules_of(platform(), "dc1")["KubeStateMetricsAbsent"]
    alive = [{"series": 'up{job="node-exporter",instance="gpu-001:9100"}', "values": f"1{STEPS}"}]
    check("dc1", "KubeStateMetricsAbsent", alive, [expected(rule, {}, "1")], tmp_path / "a")
    check("dc1", "KubeStateMetricsAbsent", alive + node_labels(NODE), [], tmp_path / "b")


@needs_promtool
def test_node_exporter_absent_names_the_node_that_reports_no_pressure(tmp_path: Path) -> None:
    rule = rules_of(platform(), "dc1")["NodeExporterAbsent"]
    one = node_labels(NODE, OTHER) + io(NODE, 0.1, 1e6, 1e6)
    check("dc1", "NodeExporterAbsent", one, [expected(rule, {"node": OTHER}, "1")], tmp_path / "a")
    both = node_labels(NODE, OTHER) + io(NODE, 0.1, 1e6, 1e6) + io(OTHER, 0.1, 1e6, 1e6)
    check("dc1", "NodeExporterAbsent", both, [], tmp_path / "b")
    # a node cordoned for repair is expected to be quiet (obsreview3 DEFECT A); an uncordoned one still alerts
    check("dc1", "NodeExporterAbsent", one + cordoned(OTHER), [], tmp_path / "c")
    check("dc1", "NodeExporterAbsent", one + cordoned(OTHER, value=0), [expected(rule, {"node": OTHER}, "1")], tmp_path / "d")


@needs_promtool
def test_fabric_counters_absent_fires_on_an_infiniband_node_whose_exporter_sees_no_port(tmp_path: Path) -> None:
    rule = rules_of(platform(), "dc1")["FabricCountersAbsent"]
    port = ',device="mlx5_0",port="1"'
    counted = node_labels(NODE, OTHER) + io(NODE, 0.1, 1e6, 1e6) + io(OTHER, 0.1, 1e6, 1e6)
    counted.append(node_counter(NODE, "node_infiniband_port_data_transmitted_bytes_total", 1e9, port))
    check("dc1", "FabricCountersAbsent", counted, [expected(rule, {"node": OTHER}, "1")], tmp_path / "a")
    counted.append(node_counter(OTHER, "node_infiniband_port_data_transmitted_bytes_total", 1e9, port))
    check("dc1", "FabricCountersAbsent", counted, [], tmp_path / "b")
    # a node whose exporter is gone altogether is NodeExporterAbsent's, not this one's
    check("dc1", "FabricCountersAbsent", node_labels(NODE), [], tmp_path / "c")
    # nor does a node cordoned for repair raise it (obsreview3 DEFECT A)
    check("dc1", "FabricCountersAbsent", counted[:-1] + cordoned(OTHER), [], tmp_path / "d")


@needs_promtool
def test_fabric_counters_absent_covers_a_hung_adapter_that_blanks_the_node(tmp_path: Path) -> None:
    """An HCA whose firmware hangs stays in /sys/class/infiniband while its counter reads fail (-ETIMEDOUT while the
    driver waits on the firmware, -ENOLINK or -EIO once mlx5 marks it in internal error); node exporter v1.12.1's
    infiniband collector (procfs v0.21.1 InfiniBandClass) then fails as a whole, and the node's healthy ports vanish
    with it: every infiniband series gone, node_scrape_collector_success{collector="infiniband"} 0. The alert fires,
    and its runbook names the case and the checks (the mlx5 health messages, a firmware reset or a reboot)."""
    rule = rules_of(platform(), "dc1")["FabricCountersAbsent"]
    exporter = f'job="node-exporter",instance="{NODE}:9100",node="{NODE}"'
    failed = {"series": f'node_scrape_collector_success{{{exporter},collector="infiniband"}}', "values": f"0{STEPS}"}
    blank = [*node_labels(NODE), *io(NODE, 0.1, 1e6, 1e6), failed]
    check("dc1", "FabricCountersAbsent", blank, [expected(rule, {"node": NODE}, "1")], tmp_path / "a")
    runbook = rule["annotations"]["description"]
    for needed in ('node_scrape_collector_success{collector="infiniband"}', "error obtaining InfiniBand class info",
                   "dmesg", "health compromised", "mlxfwreset", "reboot"):  # fmt: skip
        assert needed in runbook, needed


@needs_promtool
def test_dcgm_profiling_absent_fires_on_a_node_with_device_but_no_profiling_metrics(tmp_path: Path) -> None:
    rule = rules_of(platform(), "dc1")["DCGMProfilingAbsent"]
    profiled = gpus(NODE, "DCGM_FI_DEV_GPU_UTIL", 50) + gpus(NODE, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.4)
    check("dc1", "DCGMProfilingAbsent", profiled + gpus(OTHER, "DCGM_FI_DEV_GPU_UTIL", 50), [expected(rule, {"Hostname": OTHER}, "50")],
          tmp_path / "a")  # fmt: skip
    check("dc1", "DCGMProfilingAbsent", profiled, [], tmp_path / "b")
    # review obsreview46 N-3: a cordoned node runs the validation's burn-in (dcgmi diag), whose DCGM can hold the counters
    cordoned = [{"series": f'kube_node_spec_unschedulable{{node="{OTHER}"}}', "values": f"1{STEPS}"}]
    check("dc1", "DCGMProfilingAbsent", profiled + gpus(OTHER, "DCGM_FI_DEV_GPU_UTIL", 50) + cordoned, [], tmp_path / "c")


@needs_promtool
def test_dcgm_xid_counts_absent_fires_where_the_exporter_runs_without_alicerce_s_counters(tmp_path: Path) -> None:
    """obsreview3 DEFECT C: the XID alerts read the per-code count only alicerce's counters list enables."""
    rule = rules_of(platform(), "dc1")["DCGMXidCountsAbsent"]
    # keyed on the temperature, which a MIG instance reports too (it reports no GPU_UTIL: obsreview4 G2)
    counted = gpus(NODE, "DCGM_FI_DEV_GPU_TEMP", 40) + gpus(NODE, "DCGM_EXP_XID_ERRORS_COUNT", 0)
    check("dc1", "DCGMXidCountsAbsent", counted + gpus(OTHER, "DCGM_FI_DEV_GPU_TEMP", 40), [expected(rule, {"Hostname": OTHER}, "40")],
          tmp_path / "a")  # fmt: skip
    check("dc1", "DCGMXidCountsAbsent", counted, [], tmp_path / "b")


@needs_promtool
def test_kueue_metrics_absent_names_each_team_queue_kueue_does_not_report(tmp_path: Path) -> None:
    rule = rules_of(platform(), "dc1")["KueueMetricsAbsent"]
    assert set(load("kueue", "0.19.2", "metrics.json")["kueue_pending_workloads"]["labels"]) == {"cluster_queue", "status", "replica_role"}

    def pending(queue: str) -> list[dict[str, str]]:
        labels = f'cluster_queue="{queue}",replica_role="standalone"'
        return [{"series": f'kueue_pending_workloads{{{labels},status="{s}"}}', "values": f"0{STEPS}"} for s in ("active", "inadmissible")]

    check("dc1", "KueueMetricsAbsent", pending("research"), [expected(rule, {"cluster_queue": "applied-ml"}, "1")], tmp_path / "a")
    check("dc1", "KueueMetricsAbsent", pending("research") + pending("applied-ml"), [], tmp_path / "b")


@needs_promtool
def test_kuberay_metrics_absent_names_a_raycluster_with_pods_kuberay_does_not_report(tmp_path: Path) -> None:
    """Review obsreview16 F2: a RayJob's run is the pods of the RayClusters KubeRay's operator reports
    (kuberay_cluster_info); with its metrics gone a RayJob's GPU-hours leave the runs silently. Fires per RayCluster
    with pods and no series of its own; quiet when the operator reports it; nothing without Ray pods."""
    rule = rules_of(platform(), "aws")["KubeRayMetricsAbsent"]
    assert "kuberay_cluster_info" in load("kuberay-operator", "1.7.0", "labels.json")["operator_metrics"]
    pod = 'namespace="research",pod="sweep-2-x7k2p-head",uid="u1",label_ray_io_cluster="sweep-2-x7k2p",label_ray_io_node_type="head"'
    pods = [{"series": f"kube_pod_labels{{{pod}}}", "values": f"1{STEPS}"}]
    exposed = {"name": "sweep-2-x7k2p", "namespace": "research", "uid": "c1", "owner_kind": "RayJob"}
    info = [{"series": kuberay_scraped("kuberay_cluster_info", exposed), "values": f"1{STEPS}"}]
    labels = {"namespace": "research", "label_ray_io_cluster": "sweep-2-x7k2p"}
    check("aws", "KubeRayMetricsAbsent", pods, [expected(rule, labels, "1")], tmp_path / "a")
    check("aws", "KubeRayMetricsAbsent", pods + info, [], tmp_path / "b")
    check("aws", "KubeRayMetricsAbsent", info, [], tmp_path / "c")


@needs_promtool
def test_kuberay_metrics_absent_leaves_out_a_deleted_clusters_pod_stuck_terminating(tmp_path: Path) -> None:
    """Review obsreview21 F9: RayJob sweep-2's cluster is reported until 30m, when the job ends and KubeRay deletes the
    RayCluster; a GPU worker on a node that died keeps its deletion timestamp and its object for hours (the kubelet
    never confirms). The operator keeps reporting another cluster: quiet at 1 h and 3 h. The same worker not being
    deleted, the operator reporting nothing (down): it fires."""
    rule = rules_of(platform(), "aws")["KubeRayMetricsAbsent"]
    assert "kube_pod_deletion_timestamp" in load("kube-state-metrics", "2.20.0", "metrics.json")
    at = 'namespace="research",pod="sweep-2-x7k2p-gpu-worker-m2v5d",uid="w1"'
    worker = {"series": f'kube_pod_labels{{{at},label_ray_io_cluster="sweep-2-x7k2p",label_ray_io_node_type="worker"}}', "values": "1x240"}
    exposed = {"name": "sweep-2-x7k2p", "namespace": "research", "uid": "c1", "owner_kind": "RayJob"}
    other = {"name": "other-abcde", "namespace": "research", "uid": "c2", "owner_kind": "RayJob"}
    stuck = [worker, {"series": f"kube_pod_deletion_timestamp{{{at}}}", "values": "_x30 1800x210"},
             {"series": kuberay_scraped("kuberay_cluster_info", exposed), "values": "1x30 stale"},
             {"series": kuberay_scraped("kuberay_cluster_info", other), "values": "1x240"}]  # fmt: skip
    labels = {"namespace": "research", "label_ray_io_cluster": "sweep-2-x7k2p"}
    for name, inputs, fired in (("stuck", stuck, []), ("outage", [worker], [expected(rule, labels, "1")])):
        (tmp_path / name).mkdir()
        at_times = [{"eval_time": f"{m}m", "alertname": "KubeRayMetricsAbsent", "exp_alerts": fired} for m in (60, 180)]
        run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": at_times}], tmp_path / name)


@needs_promtool
def test_kueue_process_start_absent_fires_where_the_scrape_drops_it(tmp_path: Path) -> None:
    """Review obsreview14 F4: Kueue's counts are dated by its process's start; a scrape that drops process_* series
    turned them back into increase() with nothing said. One alert per Kueue target without it; quiet with it."""
    rule = rules_of(platform(), "dc1")["KueueProcessStartAbsent"]
    assert "process_start_time_seconds" in load("kueue", "0.19.2", "registry.json")["metrics"]
    target = 'job="kueue-controller-manager-metrics-service",instance="10.0.0.7:8443",namespace="kueue-system",pod="kueue-a"'
    pending = [{"series": f'kueue_pending_workloads{{cluster_queue="research",replica_role="leader",status="active",{target}}}',
                "values": f"0{STEPS}"}]  # fmt: skip
    started = [{"series": f"process_start_time_seconds{{{target}}}", "values": f"0{STEPS}"}]
    labels = {"job": "kueue-controller-manager-metrics-service", "instance": "10.0.0.7:8443", "namespace": "kueue-system", "pod": "kueue-a"}
    check("dc1", "KueueProcessStartAbsent", pending, [expected(rule, labels, "0")], tmp_path / "a")
    check("dc1", "KueueProcessStartAbsent", pending + started, [], tmp_path / "b")


@needs_promtool
def test_serving_metrics_absent_fires_while_running_serving_pods_are_not_scraped(tmp_path: Path) -> None:
    rule = rules_of(platform(), "aws")["ServingMetricsAbsent"]

    def pod(name: str, scraped: bool, ready: bool = True) -> list[dict[str, str]]:
        at = f'namespace="serving",pod="{name}"'
        out = [
            {"series": f'kube_pod_labels{{{at},label_alicerce_dev_workload="chat-70b"}}', "values": f"1{STEPS}"},
            {"series": f'kube_pod_status_phase{{{at},phase="Running"}}', "values": f"1{STEPS}"},
            {"series": f'kube_pod_status_ready{{{at},uid="u-{name}",condition="true"}}', "values": f"{int(ready)}{STEPS}"},
        ]
        if scraped:
            out.append({"series": f'up{{job="serving",{at},alicerce_dev_workload="chat-70b"}}', "values": f"1{STEPS}"})
        return out

    fired = expected(rule, {"namespace": "serving", "workload": "chat-70b"}, "2")
    check("aws", "ServingMetricsAbsent", pod("chat-70b-0", True) + pod("chat-70b-1", False), [fired], tmp_path / "a")
    check("aws", "ServingMetricsAbsent", pod("chat-70b-0", False) + pod("chat-70b-1", False), [fired], tmp_path / "b")
    check("aws", "ServingMetricsAbsent", pod("chat-70b-0", True) + pod("chat-70b-1", True), [], tmp_path / "c")
    # a workload not deployed yet (no pods) is not a missing source
    check("aws", "ServingMetricsAbsent", [{"series": 'up{job="x"}', "values": f"1{STEPS}"}], [], tmp_path / "d")
    # obsreview3 G14: a new pod still loading its model runs unready and unscraped (vLLM binds /metrics after load)
    check("aws", "ServingMetricsAbsent", pod("chat-70b-0", True) + pod("chat-70b-1", False, ready=False), [], tmp_path / "e")


@needs_promtool
def test_a_serving_workload_with_no_ready_pod_pages_once_it_has_served(tmp_path: Path) -> None:
    """obsreview3 G13: a workload whose every pod is pending or crashing answers nobody and its SLOs, without traffic,
    never burn. It pages when a workload that served stops; one that never became ready is a ticket."""
    rules = rules_of(platform(), "aws")

    def pod(name: str, ready: str, minutes: int = 90, running: str = "") -> list[dict[str, str]]:
        at = f'namespace="serving",pod="{name}"'
        return [
            {"series": f'kube_pod_labels{{{at},label_alicerce_dev_workload="chat-70b"}}', "values": f"1x{minutes}"},
            {"series": f'kube_pod_status_phase{{{at},phase="Running"}}', "values": running or f"1x{minutes}"},
            {"series": f'kube_pod_status_ready{{{at},uid="u-{name}",condition="true"}}', "values": ready},
        ]

    def run(inputs: list[dict[str, str]], name: str, fired: bool, path: Path) -> None:
        alerts = [expected(rules[name], {"namespace": "serving", "workload": "chat-70b"}, "2")] if fired else []
        path.mkdir()
        run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "80m", "alertname": name, "exp_alerts": alerts}]}], path)  # fmt: skip

    crashed = pod("chat-70b-0", "1x60 0x30") + pod("chat-70b-1", "1x60 0x30")  # both served an hour, then failed
    run(crashed, "ServingWorkloadDown", True, tmp_path / "a")
    run(pod("chat-70b-0", "1x90") + pod("chat-70b-1", "1x60 0x30"), "ServingWorkloadDown", False, tmp_path / "b")  # one left
    loading = pod("chat-70b-0", "0x90") + pod("chat-70b-1", "0x90")  # a first rollout that never got ready
    run(loading, "ServingWorkloadDown", False, tmp_path / "c")
    run(loading, "ServingWorkloadNeverReady", True, tmp_path / "d")
    run(crashed, "ServingWorkloadNeverReady", False, tmp_path / "e")
    # obsreview4: an outage longer than the 6 hours the alert remembers keeps paging, and is not renamed "never ready";
    # obsreview5 DEFECT 2: nor after Prometheus was down 20 minutes in the middle of it (5-minute samples, one gap)
    long = pod("chat-70b-0", "1x12 0x72 _x4 0x30") + pod("chat-70b-1", "1x12 0x72 _x4 0x30")  # the gap at 7h10m-7h30m
    for series in long:
        if "ready" not in series["series"]:
            series["values"] = "1x85 _x4 1x30"
    fired = [expected(rules["ServingWorkloadDown"], {"namespace": "serving", "workload": "chat-70b"}, "2")]
    # in both orders of the groups at a step: the serving records before the joins they read, and after them (before
    # the fix, the first order read the gap's end as a scale to zero and the outage went quiet)
    for index, order in enumerate((["alicerce.kpi.serving", "alicerce.kpi.joins"], ["alicerce.kpi.joins", "alicerce.kpi.serving"])):
        (tmp_path / f"f{index}").mkdir()
        run_promtool(platform(), "aws", [{"interval": "5m", "input_series": long, "alert_rule_test": [
            {"eval_time": "9h", "alertname": "ServingWorkloadDown", "exp_alerts": fired},
            {"eval_time": "9h", "alertname": "ServingWorkloadNeverReady", "exp_alerts": []}]}], tmp_path / f"f{index}",
            order=order)  # fmt: skip
    # obsreview5 DEFECT 4: scaled to zero on purpose beside an evicted pod's object (Failed, kept) is not an outage;
    # a crash-looping pod (Running, never ready again) still is
    evicted = pod("chat-70b-0", "1x40 0x50", running="1x40 0x50") + pod("chat-70b-1", "1x60 0x30", 60)
    evicted.append({"series": 'kube_pod_status_phase{namespace="serving",pod="chat-70b-0",phase="Failed"}', "values": "0x40 1x50"})
    run(evicted, "ServingWorkloadDown", False, tmp_path / "g")
    run(evicted, "ServingWorkloadNeverReady", False, tmp_path / "h")
    run(pod("chat-70b-0", "1x60 0x30") + pod("chat-70b-1", "1x40 0x50", 40), "ServingWorkloadDown", True, tmp_path / "i")
    # obsreview6 DEFECT 1: scaled to zero after serving, scaled up again at 10 h: Pending 3 minutes, then loading the
    # model until 10h20m. Not an outage (never ready since it had no pod): quiet while it loads
    at = 'namespace="serving",pod="chat-70b-{}"'
    morning = [
        {"series": f'kube_pod_labels{{{at.format(0)},label_alicerce_dev_workload="chat-70b"}}', "values": "1x60"},
        {"series": f'kube_pod_status_phase{{{at.format(0)},phase="Running"}}', "values": "1x60"},
        {"series": f'kube_pod_status_ready{{{at.format(0)},uid="u-0",condition="true"}}', "values": "1x60"},
        {"series": f'kube_pod_labels{{{at.format(1)},label_alicerce_dev_workload="chat-70b"}}', "values": "_x599 1x30"},
        {"series": f'kube_pod_status_phase{{{at.format(1)},phase="Pending"}}', "values": "_x599 1x3 0x27"},
        {"series": f'kube_pod_status_phase{{{at.format(1)},phase="Running"}}', "values": "_x599 0x3 1x27"},
        {"series": f'kube_pod_status_ready{{{at.format(1)},uid="u-1",condition="true"}}', "values": "_x599 0x21 1x9"},
        # the rest of the cluster: kube-state-metrics reports pods throughout
        {"series": 'kube_pod_status_phase{namespace="kube-system",pod="coredns-0",phase="Running"}', "values": "1x630"},
    ]
    (tmp_path / "j").mkdir()
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": morning, "alert_rule_test": [
        {"eval_time": "612m", "alertname": "ServingWorkloadDown", "exp_alerts": []},
        {"eval_time": "619m", "alertname": "ServingWorkloadDown", "exp_alerts": []}]}], tmp_path / "j")  # fmt: skip
    # the same scale-up, but the pod never gets ready (a bad image, the model too big for the GPU): not Down (it did
    # not serve since it started), and it was quiet as "never ready" too since it served once before; now a ticket
    # 45 minutes after the pod appeared (review obs24fix note)
    stuck = [dict(series, values=series["values"].replace("_x599 0x21 1x9", "_x599 0x70")) for series in morning]
    for series in stuck:
        if 'pod="chat-70b-1"' in series["series"] and "ready" not in series["series"]:
            series["values"] = series["values"].replace("1x30", "1x70").replace("1x3 0x27", "1x3 0x67").replace("0x3 1x27", "0x3 1x67")
    stuck[-1]["values"] = "1x680"
    never = [expected(rules["ServingWorkloadNeverReady"], {"namespace": "serving", "workload": "chat-70b"}, "1")]
    (tmp_path / "k").mkdir()
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": stuck, "alert_rule_test": [
        {"eval_time": "640m", "alertname": "ServingWorkloadNeverReady", "exp_alerts": []},
        {"eval_time": "660m", "alertname": "ServingWorkloadNeverReady", "exp_alerts": never},
        {"eval_time": "660m", "alertname": "ServingWorkloadDown", "exp_alerts": []}]}], tmp_path / "k")  # fmt: skip


@needs_promtool
def test_a_workload_scaled_to_zero_is_not_down_while_its_pods_terminate(tmp_path: Path) -> None:
    """obsreview6 G7: scaled to zero at 60 min, the two pods of a workload that served drain for 15 minutes (a long
    grace period): they stay Running, fail readiness, and carry their deletion timestamp (kube-state-metrics 2.20.0).
    They are no live replica: no page, and the scale to zero is recorded at the deletion, so a scale-up at 80 min that
    loads for 15 minutes is quiet too. The near miss: the same pods failing readiness with no deletion page."""
    assert "kube_pod_deletion_timestamp" in load("kube-state-metrics", "2.20.0", "metrics.json")
    rules = rules_of(platform(), "aws")

    def pod(name: str, deleted: bool, ready: str, running: str = "1x75") -> list[dict[str, str]]:
        at = f'namespace="serving",pod="{name}"'
        out = [
            {"series": f'kube_pod_labels{{{at},uid="u-{name}",label_alicerce_dev_workload="chat-70b"}}', "values": running},
            {"series": f'kube_pod_status_phase{{{at},uid="u-{name}",phase="Running"}}', "values": running},
            {"series": f'kube_pod_status_ready{{{at},uid="u-{name}",condition="true"}}', "values": ready},
        ]
        if deleted:  # the deletion at 60 min, the timestamp its value
            out.append({"series": f'kube_pod_deletion_timestamp{{{at},uid="u-{name}"}}', "values": "_x59 3600x16"})
        return out

    cluster = [{"series": 'kube_pod_status_phase{namespace="kube-system",pod="coredns-0",uid="u-dns",phase="Running"}',
                "values": "1x120"}]  # fmt: skip
    draining = [*pod("chat-70b-0", True, "1x60 0x15"), *pod("chat-70b-1", True, "1x60 0x15")]
    # scaled up again at 80 min, loading its model until 95 min
    morning = pod("chat-70b-2", False, "_x80 0x15 1x25", "_x80 1x40")
    crashed = [*pod("chat-70b-0", False, "1x60 0x15"), *pod("chat-70b-1", False, "1x60 0x15")]
    key = {"namespace": "serving", "workload": "chat-70b"}
    down = [expected(rules["ServingWorkloadDown"], key, "2")]
    for name, inputs, at, fired in (
        ("draining", draining + cluster, "74m", []),
        ("up-again", draining + morning + cluster, "94m", []),
        ("crashed", crashed + cluster, "74m", down),
    ):
        path = tmp_path / name
        path.mkdir()
        run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": at, "alertname": "ServingWorkloadDown", "exp_alerts": fired},
            {"eval_time": at, "alertname": "ServingWorkloadNeverReady", "exp_alerts": []}]}], path)  # fmt: skip


def _multi_node_pod(name: str, role: str, ready: str, up: str | None) -> list[dict[str, str]]:
    """One Running pod of chat-70b's multi-node group: its labels as kube-state-metrics exports them (``role``: the
    label that tells the serving pod from a worker), its readiness, and its scrape target's ``up`` (None: unscraped)."""
    at = f'namespace="serving",pod="{name}"'
    out = [
        {"series": f'kube_pod_labels{{{at},label_alicerce_dev_workload="chat-70b",{role}}}', "values": "1x90"},
        {"series": f'kube_pod_status_phase{{{at},phase="Running"}}', "values": "1x90"},
        {"series": f'kube_pod_status_ready{{{at},uid="u-{name}",condition="true"}}', "values": ready},
    ]
    if up is not None:
        out.append({"series": f'up{{job="serving",{at},alicerce_dev_workload="chat-70b"}}', "values": up})
    return out


def _served_by_one_pod(serving: list[dict[str, str]], crashed: list[dict[str, str]], tmp_path: Path) -> None:
    """A multi-node model whose one serving pod is scraped and its workers are not: ready workers are no unscraped
    replicas, and workers ready beside a serving pod that stopped being ready are an outage."""
    rules = rules_of(platform(), "aws")
    key = {"namespace": "serving", "workload": "chat-70b"}
    for name, inputs, fired in (
        ("ServingMetricsAbsent", serving, []),
        ("ServingWorkloadDown", serving, []),
        ("ServingWorkloadDown", crashed, [expected(rules["ServingWorkloadDown"], key, "1")]),
    ):
        path = tmp_path / f"{name}-{len(fired)}"
        path.mkdir()
        run_promtool(platform(), "aws", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "80m", "alertname": name, "exp_alerts": fired}]}], path)  # fmt: skip


@needs_promtool
def test_a_leaderworkerset_group_is_served_by_its_leader(tmp_path: Path) -> None:
    """obsreview5 G9: a multi-node model in a LeaderWorkerSet labelled as a whole; its workers (worker index 1) are
    ready and serve no /metrics. They are no unscraped replica, and a crash-looping leader beside them is an outage."""

    assert "kube_pod_labels" in load("kube-state-metrics", "2.20.0", "metrics.json")

    def pod(name: str, index: str, ready: str, scraped: bool) -> list[dict[str, str]]:
        return _multi_node_pod(name, f'label_leaderworkerset_sigs_k8s_io_worker_index="{index}"', ready, "1x90" if scraped else None)

    serving = pod("chat-70b-0", "0", "1x90", True) + pod("chat-70b-0-1", "1", "1x90", False)
    crashed = pod("chat-70b-0", "0", "1x60 0x30", True) + pod("chat-70b-0-1", "1", "1x90", False)
    _served_by_one_pod(serving, crashed, tmp_path)


@needs_promtool
def test_a_rayservice_is_served_by_its_head(tmp_path: Path) -> None:
    """obs24fix's note: README said to label only a RayService's head, so its workers, which hold the GPUs and run the
    Serve replicas, were in no workload's cost and read as training by the idle-GPU alert. Labelled as a whole, KubeRay's
    node type (ray.io/node-type, head or worker: KubeRay v1.7.0 utils/constant.go) keeps the workers out of the serving
    alerts: a ready worker beside a crash-looping head is an outage, and two ready workers are no missing replicas.
    The PodMonitor scrapes the workers' Ray metrics agents too; their targets up do not hide a head left unscraped."""
    assert load("kuberay-operator", "1.7.0", "labels.json")["pod_labels"][RAY_NODE_TYPE_LABEL] == ["head", "worker"]

    def pod(name: str, kind: str, ready: str, up: str = "1x90") -> list[dict[str, str]]:
        return _multi_node_pod(name, f'label_ray_io_node_type="{kind}"', ready, up)

    workers = pod("chat-raycluster-gpu-worker-a", "worker", "1x90") + pod("chat-raycluster-gpu-worker-b", "worker", "1x90")
    serving = pod("chat-raycluster-head", "head", "1x90") + workers
    crashed = pod("chat-raycluster-head", "head", "1x60 0x30") + workers
    _served_by_one_pod(serving, crashed, tmp_path)
    # workers unready beside a Ready head are no pod outage: a worker without a Serve replica fails its probe by design
    # (an idle worker group, a cold start from zero: review obsreview48 D-1, D-2); whether the replicas serve is
    # RayServeDeploymentDown's, from Ray Serve's own count (tests/emit/kube/test_ray_serve.py)
    idle = pod("chat-raycluster-head", "head", "1x90") + [
        s for w in ("a", "b") for s in pod(f"chat-raycluster-gpu-worker-{w}", "worker", "1x30 0x60")
    ]
    (tmp_path / "idle").mkdir()
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": idle, "alert_rule_test": [
        {"eval_time": "80m", "alertname": "ServingWorkloadDown", "exp_alerts": []}]}], tmp_path / "idle")  # fmt: skip
    unscraped = pod("chat-raycluster-head", "head", "1x90", up="0x90") + workers
    rules = rules_of(platform(), "aws")
    fired = [expected(rules["ServingMetricsAbsent"], {"namespace": "serving", "workload": "chat-70b"}, "1")]
    (tmp_path / "unscraped").mkdir()
    run_promtool(platform(), "aws", [{"interval": "1m", "input_series": unscraped, "alert_rule_test": [
        {"eval_time": "80m", "alertname": "ServingMetricsAbsent", "exp_alerts": fired}]}], tmp_path / "unscraped")  # fmt: skip


@needs_promtool
def test_a_node_left_cordoned_for_days_is_reported(tmp_path: Path) -> None:
    """obsreview4 G6: cordoned nodes raise no missing-exporter or missing-GPU alert, so one forgotten after a repair
    would hide its faults for good. Three days cordoned warns; a night's repair does not."""
    rule = rules_of(platform(), "dc1")["NodeCordonedForDays"]
    # 5-minute samples (an hourly one would leave the series stale between samples, and reset the alert's 72 h),
    # evaluated every 5 minutes: the two [72h:10m] subqueries at each of 4,560 one-minute steps were ~15 CPU-s a run
    labels = [{**s, "values": "1x920"} for s in node_labels(NODE, OTHER)]
    # NODE cordoned at 2 h and forgotten; OTHER cordoned for a 10-hour repair
    forgotten = [
        *labels,
        *({**c, "values": "0x23 1x897"} for c in cordoned(NODE)),
        *({**c, "values": "1x120 0x800"} for c in cordoned(OTHER)),
    ]
    (tmp_path / "a").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    run_promtool(platform(), "dc1", [{"interval": "5m", "input_series": forgotten, "alert_rule_test": [
        {"eval_time": "76h", "alertname": "NodeCordonedForDays", "exp_alerts": [expected(rule, {"node": NODE}, "1")]},
        {"eval_time": "73h", "alertname": "NodeCordonedForDays", "exp_alerts": []}]}], tmp_path / "a", every="5m")  # fmt: skip
    # obsreview5 G6: 90 minutes without kube-state-metrics in the middle (its pod rescheduled) does not start the
    # three days again
    gap = [
        {**s, "values": "0x23 1x456 _x18 1x421" if "unschedulable" in s["series"] else "1x479 _x18 1x421"}
        for s in forgotten[: len(labels) + 1]
    ]
    run_promtool(platform(), "dc1", [{"interval": "5m", "input_series": gap, "alert_rule_test": [
        {"eval_time": "76h", "alertname": "NodeCordonedForDays", "exp_alerts": [expected(rule, {"node": NODE}, "1")]}]}],
        tmp_path / "b", every="5m")  # fmt: skip


@needs_promtool
def test_a_fabric_rail_that_went_down_or_keeps_flapping_alerts(tmp_path: Path) -> None:
    """obsreview3 G22: a rail down halves a node's NCCL bandwidth and nothing said so. A port that was active in the
    last 30 days and is not now warns; a port that never came up (an unused second port) does not; a link that went down
    three times in an hour warns."""
    rules = rules_of(platform(), "dc1")
    assert "FabricPortDown" not in rules_of(platform(), "aws")  # EFA reports no port state to the node exporter

    def port(node: str, name: str, states: str) -> dict[str, str]:
        labels = f'job="node-exporter",instance="{node}:9100",node="{node}",device="{name}",port="1"'
        assert "node_infiniband_state_id" in load("node-exporter", "v1.12.1", "metrics.json")
        return {"series": f"node_infiniband_state_id{{{labels}}}", "values": states}

    rails = [*node_labels(NODE), port(NODE, "mlx5_0", "4x30 1x30"), port(NODE, "mlx5_1", f"4{STEPS}"), port(NODE, "mlx5_9", f"1{STEPS}")]
    fired = expected(rules["FabricPortDown"], {"node": NODE, "device": "mlx5_0", "port": "1"}, "1")
    check("dc1", "FabricPortDown", rails[:2], [], tmp_path / "a")  # still active at 30 min: quiet (the check runs at 30m)
    tmp = tmp_path / "b"
    tmp.mkdir()
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": rails, "alert_rule_test": [
        {"eval_time": "50m", "alertname": "FabricPortDown", "exp_alerts": [fired]}]}], tmp)  # fmt: skip
    # obsreview4: a rail down longer than the day the alert remembers stays reported
    (tmp_path / "d").mkdir()
    long = [*node_labels(NODE), port(NODE, "mlx5_0", "4x12 1x320")]  # 5-minute samples: up 1 h, then down 26 h
    for sample in long[:1]:
        sample["values"] = "1x330"
    run_promtool(platform(), "dc1", [{"interval": "5m", "input_series": long, "alert_rule_test": [
        {"eval_time": "26h", "alertname": "FabricPortDown", "exp_alerts": [fired]}]}], tmp_path / "d")  # fmt: skip
    # obsreview5 DEFECT 2: cordoned in between (a drain to reseat the cable, a driver upgrade), quiet while out of
    # service, reported again once back in with the rail still down
    (tmp_path / "e").mkdir()
    labels = [{**n, "values": "1x440"} for n in node_labels(NODE)]
    drained = [{**c, "values": "0x360 1x12 0x67"} for c in cordoned(NODE)]  # cordoned 30h05m-31h05m
    rail = port(NODE, "mlx5_0", "4x12 1x427")  # up 1 h, then down
    run_promtool(platform(), "dc1", [{"interval": "5m", "input_series": [*labels, rail, *drained], "alert_rule_test": [
        {"eval_time": "30h30m", "alertname": "FabricPortDown", "exp_alerts": []},
        {"eval_time": "33h", "alertname": "FabricPortDown", "exp_alerts": [fired]}]}], tmp_path / "e")  # fmt: skip
    # obsreview5 G5: a rail that never came up on a node (8 rails declared, mlx5_7 never ACTIVE) warns once the node is
    # past its install grace; a rail that was up and went down is FabricPortDown's, not this one's
    (tmp_path / "f").mkdir()
    created = [{"series": f'kube_node_created{{node="{n}"}}', "values": "-3600x60"} for n in (NODE, OTHER)]
    dead = [port(NODE, f"mlx5_{i}", f"4{STEPS}") for i in range(7)] + [port(NODE, "mlx5_7", f"1{STEPS}")]
    lost = [port(OTHER, f"mlx5_{i}", f"4{STEPS}") for i in range(7)] + [port(OTHER, "mlx5_7", "4x10 1x50")]
    never = expected(rules["FabricRailsNeverUp"], {"node": NODE}, "7")
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": [*node_labels(NODE, OTHER), *created, *dead, *lost],
        "alert_rule_test": [{"eval_time": "30m", "alertname": "FabricRailsNeverUp", "exp_alerts": [never]}]}], tmp_path / "f")  # fmt: skip
    flaps = [*node_labels(NODE), node_counter(NODE, "node_infiniband_link_downed_total", 3 / 3600, ',device="mlx5_0",port="1"')]
    flapping = expected(rules["FabricLinkFlapping"], {"node": NODE, "device": "mlx5_0", "port": "1"}, "")
    tmp = tmp_path / "c"
    tmp.mkdir()
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": flaps, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricLinkFlapping", "exp_alerts": [flapping]}]}], tmp)  # fmt: skip


@needs_promtool
@pytest.mark.parametrize(("downs", "fires"), [("5x80 6x10 7x60", False), ("5x80 6x5 7x5 8x60", True)])
def test_link_flapping_counts_whole_downs(downs: str, fires: bool, tmp_path: Path) -> None:
    """Review obsreview21 F2: "more than twice in an hour". Two downs (5 -> 6 at 80m, -> 7 at 90m) stay quiet, three
    fire, with the rules evaluated 30 s off the scrapes as a real rule group is: increase() extrapolates the two to
    2 x 3600/3540 = 2.034, which `> 2` read as more than two."""
    labels = f'job="node-exporter",instance="{NODE}:9100",node="{NODE}",device="mlx5_0",port="1"'
    inputs = [*[{**n, "values": "1x150"} for n in node_labels(NODE)],
              {"series": f"node_infiniband_link_downed_total{{{labels}}}", "values": downs}]  # fmt: skip
    alert = [expected(rules_of(platform(), "dc1")["FabricLinkFlapping"], {"node": NODE, "device": "mlx5_0", "port": "1"}, "")]
    times = ("100m30s", "120m30s", "135m30s")
    at_times = [{"eval_time": m, "alertname": "FabricLinkFlapping", "exp_alerts": alert if fires else []} for m in times]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": at_times}]
    run_promtool(platform(), "dc1", tests, tmp_path, every="30s")


@needs_promtool
def test_a_port_error_counter_stopped_at_its_maximum_is_reported(tmp_path: Path) -> None:
    """link_downed is 8 bits and symbol/receive errors 16 in the IB PortCounters the kernel reads, and they stop at
    all ones: mlx5_0 goes down 6 times in 6 minutes to 255 and keeps flapping unseen (FabricLinkFlapping quiet an
    hour later); mlx5_1 has both link_downed and symbol_error at their maximum; mlx5_2 at 200 still counts."""
    rules = rules_of(platform(), "dc1")

    def counter(name: str, device: str, values: str) -> dict[str, str]:
        assert name in load("node-exporter", "v1.12.1", "metrics.json"), name
        labels = f'job="node-exporter",instance="{NODE}:9100",node="{NODE}",device="{device}",port="1"'
        return {"series": f"{name}{{{labels}}}", "values": values}

    inputs = [
        *[{**n, "values": "1x130"} for n in node_labels(NODE)],
        counter("node_infiniband_link_downed_total", "mlx5_0", "249+1x6 255x124"),
        counter("node_infiniband_link_downed_total", "mlx5_1", "255x130"),
        counter("node_infiniband_symbol_error_total", "mlx5_1", "65535x130"),
        counter("node_infiniband_link_downed_total", "mlx5_2", "200x130"),
    ]
    saturated = rules["FabricCountersSaturated"]
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricLinkFlapping", "exp_alerts": [
            expected(rules["FabricLinkFlapping"], {"node": NODE, "device": "mlx5_0", "port": "1"}, "")]},
        {"eval_time": "130m", "alertname": "FabricLinkFlapping", "exp_alerts": []},  # what the counter can tell
        {"eval_time": "130m", "alertname": "FabricCountersSaturated", "exp_alerts": [
            expected(saturated, {"node": NODE, "device": "mlx5_0", "port": "1"}, "1"),
            expected(saturated, {"node": NODE, "device": "mlx5_1", "port": "1"}, "2")]},
    ]}], tmp_path)  # fmt: skip


H200_POOL = """
  - name: onprem-h200
    site: dc1
    purpose: training
    accelerator: "H200-SXM5-141GB:8"
    onprem:
      hosts:
        - {hosts: "gpu-[101:104].dc1.acme.example", rack: r03}
      hcas: 8
    scaling: {min: 4, max: 4}
    fabric: ib-dc1
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
"""


def two_fabric_pools() -> ResolvedPlatform:
    """The reference platform with a second InfiniBand pool (H200) on dc1's fabric beside the H100 one."""
    text = (ROOT / "platform.yaml").read_text()
    assert text.count("\nstorage:\n") == 1
    return validated(load_text(text.replace("\nstorage:\n", H200_POOL + "\nstorage:\n"), "platform.yaml"), "prod")


def ib_port(node: str, device: str, states: str) -> dict[str, str]:
    """node-exporter v1.12.1's port state of one device's port 1 on a node (4: ACTIVE)."""
    assert "node_infiniband_state_id" in load("node-exporter", "v1.12.1", "metrics.json")
    labels = f'job="node-exporter",instance="{node}:9100",node="{node}",device="{device}",port="1"'
    return {"series": f"node_infiniband_state_id{{{labels}}}", "values": states}


def pool_node(node: str, pool: str, created: int, unschedulable: int = 0, minutes: int = 120) -> list[dict[str, str]]:
    """kube-state-metrics' label, creation time and cordon flag of one node of ``pool``, a sample a minute."""
    return [
        {"series": f'kube_node_labels{{node="{node}",label_alicerce_dev_pool="{pool}"}}', "values": f"1x{minutes}"},
        {"series": f'kube_node_created{{node="{node}"}}', "values": f"{created}x{minutes}"},
        {"series": f'kube_node_spec_unschedulable{{node="{node}"}}', "values": f"{unschedulable}x{minutes}"},
    ]


@needs_promtool
def test_rails_never_up_keeps_the_cordon_and_the_grace_for_every_pool_of_a_site(tmp_path: Path) -> None:
    """obsreview6 DEFECT 4: with two fabric pools, ``A or B and on (grace) unless on (cordoned)`` filtered only the last
    pool's term, so a cordoned H100 node and one still installing warned. Each pool: a cordoned node and a node created
    at 40 min stay quiet at 60 min; an uncordoned node long in service with 7 of 8 rails warns."""
    rp = two_fabric_pools()
    rule = rules_of(rp, "dc1")["FabricRailsNeverUp"]
    inputs: list[dict[str, str]] = []
    fired = []
    for pool, first in (("onprem-h100", 1), ("onprem-h200", 101)):
        cordoned_node, new, broken = (f"gpu-{first + i:03d}" for i in range(3))
        inputs += pool_node(cordoned_node, pool, -3600, unschedulable=1) + pool_node(new, pool, 2400) + pool_node(broken, pool, -3600)
        inputs += [ib_port(cordoned_node, f"mlx5_{i}", "4x120" if i < 7 else "1x120") for i in range(8)]
        inputs += [ib_port(new, f"mlx5_{i}", "1x120") for i in range(8)]
        inputs += [ib_port(broken, f"mlx5_{i}", "4x120" if i < 7 else "1x120") for i in range(8)]
        fired.append(expected(rule, {"node": broken}, "7"))
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricRailsNeverUp", "exp_alerts": fired}]}], tmp_path / "a")  # fmt: skip


@needs_promtool
def test_port_down_reads_the_pools_that_name_no_rail_devices_in_one_term(tmp_path: Path) -> None:
    """Pools reading the same devices (no railDevices) share one term of FabricPortDown, so the expression does not grow
    with such pools and stays under the 4,000 an expression is kept under. A rail down on a node of either pool is still
    reported."""
    rp = two_fabric_pools()
    rule = rules_of(rp, "dc1")["FabricPortDown"]
    assert rule["expr"].count(KIND_MOST_ACTIVE) == 1 and len(rule["expr"]) < 4000
    inputs: list[dict[str, str]] = []
    fired = []
    for pool, node in (("onprem-h100", "gpu-001"), ("onprem-h200", "gpu-101")):
        inputs += pool_node(node, pool, -3600) + [ib_port(node, f"mlx5_{i}", "4x120" if i < 7 else "4x30 1x90") for i in range(8)]
        fired.append(expected(rule, {"node": node, "device": "mlx5_7", "port": "1"}, "1"))
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricPortDown", "exp_alerts": fired}]}], tmp_path / "a")  # fmt: skip


@needs_promtool
def test_rails_never_up_stays_quiet_where_the_node_exporter_reports_no_port(tmp_path: Path) -> None:
    """obsreview6 DEFECT 3: a node whose node exporter is down (not scheduled yet, broken) read as "0 fabric ports up"
    and sent the operator to the cabling; NodeExporterAbsent or FabricCountersAbsent is the alert there. A node of the
    same pool with 7 of 8 rails up still warns."""
    rp = platform()
    rule = rules_of(rp, "dc1")["FabricRailsNeverUp"]
    silent, broken = "gpu-002", "gpu-003"
    inputs = pool_node(silent, "onprem-h100", -3600) + pool_node(broken, "onprem-h100", -3600)
    inputs += [ib_port(broken, f"mlx5_{i}", "4x120" if i < 7 else "1x120") for i in range(8)]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricRailsNeverUp", "exp_alerts": [expected(rule, {"node": broken}, "7")]}]}],
        tmp_path / "a")  # fmt: skip


@needs_promtool
def test_a_rail_whose_adapter_vanished_is_down(tmp_path: Path) -> None:
    """obsreview6 DEFECT 5: an HCA that left /sys/class/infiniband (fell off the PCIe bus) has no state series, so
    FabricPortDown never saw it and the 30-day memory kept FabricRailsNeverUp quiet. A remembered port with no series is
    down now; the same loss on a cordoned node, a port that never existed and a node whose exporter stopped stay quiet."""
    rp = platform()
    rule = rules_of(rp, "dc1")["FabricPortDown"]
    lost, drained, other, gone = "gpu-003", "gpu-004", "gpu-005", "gpu-006"
    inputs = pool_node(lost, "onprem-h100", -3600, minutes=240) + pool_node(drained, "onprem-h100", -3600, 1, minutes=240)
    inputs += pool_node(other, "onprem-h100", -3600, minutes=240) + pool_node(gone, "onprem-h100", -3600, minutes=240)
    for node in (lost, drained):  # mlx5_7's series end at 60 min, the other rails stay ACTIVE
        inputs += [ib_port(node, f"mlx5_{i}", "4x240" if i < 7 else "4x60") for i in range(8)]
    inputs += [ib_port(other, f"mlx5_{i}", "4x240") for i in range(8)]  # never had an mlx5_8: nothing to miss
    inputs += [ib_port(gone, f"mlx5_{i}", "4x60") for i in range(8)]  # the exporter stopped: NodeExporterAbsent's
    fired = expected(rule, {"node": lost, "device": "mlx5_7", "port": "1"}, "1")
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "150m", "alertname": "FabricPortDown", "exp_alerts": [fired]},
        {"eval_time": "150m", "alertname": "FabricRailsNeverUp", "exp_alerts": []}]}], tmp_path / "a")  # fmt: skip


@needs_promtool
def test_a_rail_off_the_bus_is_down_and_a_renamed_one_is_not(tmp_path: Path) -> None:
    """Review obsreview35 D-1: gating a vanished port on the node being short of rails silenced it where the pool names
    no rail devices and a storage port is ACTIVE beside the rails (gpu-004: 7 rails + mlx5_8 read as 8). Each node's
    mlx5_7 leaves /sys/class/infiniband at 60m unless said otherwise. Down: gpu-004, gpu-005 (no storage port), gpu-008
    (rebooted at 90m, its other ports back under their names: 7 of the 8 it had). Renamed, quiet (reviews obsreview34 N-3,
    obsreview36 D-1): gpu-006's adapter moved to another slot (back as mlx5_9 after the reboot), gpu-007's PCI buses renumbered (all 8
    rails back as mlx5_10..17). gpu-009 renumbered with one rail missing (7 back): its 8 old names are reported."""
    rp = platform()
    rule = rules_of(rp, "dc1")["FabricPortDown"]
    assert "railDevices" not in (ROOT / "platform.yaml").read_text()  # the case: every device reads as a rail
    nodes = [f"gpu-00{i}" for i in range(4, 10)]
    inputs = [s for n in nodes for s in pool_node(n, "onprem-h100", -3600, minutes=240)]
    for node in ("gpu-004", "gpu-005", "gpu-006"):
        inputs += [ib_port(node, f"mlx5_{i}", "4x240" if i < 7 else "4x60") for i in range(8)]
    inputs += [ib_port("gpu-004", "mlx5_8", "4x240"), ib_port("gpu-006", "mlx5_9", "_x70 4x170")]
    inputs += [ib_port("gpu-008", f"mlx5_{i}", "4x89 _x5 4x146") for i in range(7)] + [ib_port("gpu-008", "mlx5_7", "4x60")]
    for node, back in (("gpu-007", 8), ("gpu-009", 7)):
        inputs += [ib_port(node, f"mlx5_{i}", "4x60") for i in range(8)]
        inputs += [ib_port(node, f"mlx5_{10 + i}", "_x66 4x174") for i in range(back)]
    fired = [expected(rule, {"node": n, "device": "mlx5_7", "port": "1"}, "1") for n in ("gpu-004", "gpu-005", "gpu-008")]
    fired += [expected(rule, {"node": "gpu-009", "device": f"mlx5_{i}", "port": "1"}, "1") for i in range(8)]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "150m", "alertname": "FabricPortDown", "exp_alerts": fired},
        {"eval_time": "150m", "alertname": "FabricRailsNeverUp", "exp_alerts": []}]}], tmp_path / "a")  # fmt: skip


def segs(*parts: tuple[str, int]) -> str:
    """A sample a minute: each (value, minutes) holds for that many samples ('_': no sample)."""
    return " ".join(f"_x{n}" if value == "_" else f"{value}x{n - 1}" for value, n in parts)


def ib_info(node: str, device: str, hca_type: str = "MT4129", board_id: str = "MT_0000000838") -> dict[str, str]:
    """node-exporter v1.12.1's node_infiniband_info of one device (board_id: the card's PSID; defaults: a ConnectX-7)."""
    assert "board_id" in load("node-exporter", "v1.12.1", "metrics.json")["node_infiniband_info"]["labels"]
    labels = f'job="node-exporter",instance="{node}:9100",node="{node}",device="{device}"'
    return {"series": f'node_infiniband_info{{{labels},board_id="{board_id}",firmware_version="28.39.1002",hca_type="{hca_type}"}}',
            "values": "1x240"}  # fmt: skip


def ib_port_n(node: str, device: str, states: str, port: str) -> dict[str, str]:
    return {**ib_port(node, device, states), "series": ib_port(node, device, states)["series"].replace('port="1"', f'port="{port}"')}


OLD, MID, NEW = [f"mlx5_{i}" for i in range(8)], [f"mlx5_{10 + i}" for i in range(8)], [f"mlx5_{20 + i}" for i in range(8)]
# a reboot is 6 minutes without any port (60-66m, 120-126m)
THROUGH = segs(("4", 60), ("_", 6), ("4", 54), ("_", 6), ("4", 115))  # a name through both reboots
FIRST = segs(("4", 60), ("_", 181))  # a name until the first reboot
MIDDLE = segs(("_", 66), ("4", 54), ("_", 121))  # a name between the reboots
LAST = segs(("_", 126), ("4", 115))  # a name after the second reboot
BACK = segs(("4", 60), ("_", 66), ("4", 115))  # a name gone between the reboots, back after the second
AFTER = segs(("_", 66), ("4", 175))  # a name after the first reboot
ALL = segs(("4", 241))


CX6, CX7 = ("MT4123", "MT_0000000223"), ("MT4129", "MT_0000000838")  # (hca_type, board_id): ConnectX-6, ConnectX-7
UNTIL2 = segs(("4", 60), ("_", 6), ("4", 54), ("_", 121))  # a name through the first reboot, until the second
REBOOT2 = segs(("4", 120), ("_", 6), ("4", 115))  # a name through the second reboot only


def info(node: str, device: str, card: tuple[str, str], values: str) -> dict[str, str]:
    return {**ib_info(node, device, *card), "values": values.replace("4", "1")}


def down(rule: dict[str, Any], node: str, device: str, card: tuple[str, str] | None = None) -> dict[str, Any]:
    """FabricPortDown of a port 1, with its card's kind where the exporter reported one (PORT_LAST_ACTIVE keeps it)."""
    kind = {"hca_type": card[0]} if card else {}
    return expected(rule, {"node": node, "device": device, "port": "1", **kind}, "1")


@needs_promtool
def test_a_rename_is_told_from_a_lost_rail_however_often_names_change(tmp_path: Path) -> None:
    """A port gone is down unless its node has as many ports of its kind ACTIVE as it had (reviews obsreview37,
    obsreview39). Quiet: gpu-020's adapter moved and put back, gpu-021 renumbered twice (A -> B -> C), gpu-022's
    renumbering rolled back (A -> B -> A), gpu-026 renumbered once with the kind reported, gpu-027 a flap away and back,
    gpu-031 a rename put back after 3 minutes (obsreview39 G-1), gpu-032 mlx5_7 replaced by a ConnectX-7 under its name
    and then all renumbered (obsreview39 G-2), gpu-033 the kind reported only from 30m on and then renumbered, gpu-035
    an exporter restart, gpu-036 two kinds reported for one device. Loud: a card of another kind added in the reboot
    that renumbered the rails, one rail DOWN under its new name (gpu-023) or absent (gpu-024: obsreview37 D-2); port 2
    of a known card cabled while mlx5_7 is off the bus (gpu-025: obsreview37 G-1); mlx5_7 off the bus while mlx5_3 is
    away 8 (gpu-028) or 12 minutes (gpu-030: obsreview39 D-1b) and back; mlx5_6 and mlx5_7 off the bus, a reboot brings
    mlx5_6 back (gpu-029: obsreview39 D-1a); mlx5_7 off the bus across an exporter restart (gpu-034)."""
    rp = platform()
    rules = rules_of(rp, "dc1")
    rule = rules["FabricPortDown"]
    nodes = [f"gpu-0{i}" for i in range(20, 37)]
    inputs = [s for n in nodes for s in pool_node(n, "onprem-h100", -3600, minutes=240)]
    inputs += [ib_port("gpu-020", d, THROUGH) for d in OLD[:7]] + [ib_port("gpu-020", "mlx5_7", BACK), ib_port("gpu-020", "mlx5_9", MIDDLE)]
    inputs += [ib_port("gpu-021", d, FIRST) for d in OLD] + [ib_port("gpu-021", d, MIDDLE) for d in MID]
    inputs += [ib_port("gpu-021", d, LAST) for d in NEW]
    inputs += [ib_port("gpu-022", d, BACK) for d in OLD] + [ib_port("gpu-022", d, MIDDLE) for d in MID]
    for node, eighth in (("gpu-023", segs(("_", 66), ("1", 175))), ("gpu-024", None)):
        inputs += [ib_port(node, d, FIRST) for d in OLD] + [ib_port(node, d, AFTER) for d in MID[:7]]
        inputs += [ib_port(node, "mlx5_30", AFTER), ib_info(node, "mlx5_30", "MT41692", "MT_0000000884")]  # a BlueField-3
        inputs += [ib_info(node, d) for d in OLD + MID[:7]] + ([ib_port(node, MID[7], eighth), ib_info(node, MID[7])] if eighth else [])
    inputs += [ib_port("gpu-025", d, ALL) for d in OLD[:7]] + [ib_port("gpu-025", "mlx5_7", FIRST)]
    inputs += [ib_port_n("gpu-025", "mlx5_0", segs(("1", 120), ("4", 121)), "2")]
    inputs += [ib_port("gpu-026", d, FIRST) for d in OLD] + [ib_port("gpu-026", d, AFTER) for d in MID]
    inputs += [ib_info("gpu-026", d) for d in OLD + MID]
    inputs += [ib_port("gpu-027", d, ALL) for d in OLD[:7]] + [ib_port("gpu-027", "mlx5_7", segs(("4", 60), ("_", 3), ("4", 178)))]
    # gpu-028, gpu-030: mlx5_7 off the bus at 60m; at 100m mlx5_3 leaves for 8 or 12 minutes (past promtool's 5-minute
    # lookback) and comes back (a PCIe link retrained, a PCI rescan): it must not stand in for mlx5_7
    for node, away in (("gpu-028", 8), ("gpu-030", 12)):
        inputs += [ib_port(node, d, ALL) for d in OLD[:7] if d != "mlx5_3"] + [ib_port(node, "mlx5_7", FIRST)]
        inputs += [ib_port(node, "mlx5_3", segs(("4", 100), ("_", away), ("4", 141 - away)))]
    inputs += [ib_port("gpu-029", d, REBOOT2) for d in OLD[:6]] + [ib_port("gpu-029", "mlx5_6", BACK), ib_port("gpu-029", "mlx5_7", FIRST)]
    # gpu-031: renumbered at the 60-66m reboot, rebooted again at 69m and back under the first names at 74m
    inputs += [ib_port("gpu-031", d, segs(("4", 60), ("_", 14), ("4", 167))) for d in OLD]
    inputs += [ib_port("gpu-031", d, segs(("_", 66), ("4", 3), ("_", 172))) for d in MID]
    # gpu-032: ConnectX-6 rails; mlx5_7's card replaced by a ConnectX-7 in the first reboot, all renumbered in the second
    inputs += [ib_port("gpu-032", d, UNTIL2) for d in OLD] + [ib_port("gpu-032", d, LAST) for d in MID]
    inputs += [info("gpu-032", d, CX6, UNTIL2) for d in OLD[:7]] + [info("gpu-032", d, CX6, LAST) for d in MID[:7]]
    inputs += [info("gpu-032", "mlx5_7", CX6, FIRST), info("gpu-032", "mlx5_7", CX7, MIDDLE), info("gpu-032", MID[7], CX7, LAST)]
    # gpu-033: the exporter reports the cards' kind from 30m on (a relabeling fixed), renumbered at 60-66m
    inputs += [ib_port("gpu-033", d, FIRST) for d in OLD] + [ib_port("gpu-033", d, AFTER) for d in MID]
    inputs += [info("gpu-033", d, CX7, segs(("_", 30), ("4", 30), ("_", 181))) for d in OLD] + [info("gpu-033", d, CX7, AFTER) for d in MID]
    # gpu-034, gpu-035: the node exporter restarts at 90m (its series stale, back at 92m); gpu-034's mlx5_7 is off the bus
    restart = "4x89 stale _ 4x148"
    inputs += [ib_port("gpu-034", d, restart) for d in OLD[:7]] + [ib_port("gpu-034", "mlx5_7", FIRST)]
    inputs += [ib_port("gpu-035", d, restart) for d in OLD]
    # gpu-036: two info series of one device with different kinds (two exporters on the node): no join error that would
    # leave PORT_LAST_ACTIVE unwritten on the whole site (obsreview39 N-2)
    inputs += (
        [ib_port("gpu-036", d, ALL) for d in OLD] + [info("gpu-036", d, CX7, ALL) for d in OLD] + [info("gpu-036", "mlx5_0", CX6, ALL)]
    )
    at_100 = [down(rule, n, d, CX7) for n in ("gpu-023", "gpu-024") for d in OLD]
    at_100 += [down(rule, n, "mlx5_7") for n in ("gpu-025", "gpu-028", "gpu-029", "gpu-030", "gpu-034")]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "100m", "alertname": "FabricPortDown", "exp_alerts": [*at_100, down(rule, "gpu-029", "mlx5_6")]},
        {"eval_time": "200m", "alertname": "FabricPortDown", "exp_alerts": at_100},
        {"eval_time": "200m", "alertname": "FabricRailsNeverUp", "exp_alerts": []}]}], tmp_path / "a",
        order=["alicerce.kpi.node", "alicerce.fabric"])  # fmt: skip


@needs_promtool
def test_each_lost_port_is_reported_for_its_own_30_days(tmp_path: Path) -> None:
    """A sample an hour. mlx5_6 leaves at 24h, mlx5_7 at 264h: at 696h both are reported. At 760h mlx5_6 is forgotten
    (PORT_LAST_ACTIVE: gone 30 days) and takes its place in the node's most with it (8 -> 7), so mlx5_7, gone 21 days,
    is still reported; at 990h it is forgotten too and nothing is. Review obsreview41 D-1: an expiry by when the most (8)
    was last reached dropped it to the 6 ACTIVE at 744h and silenced mlx5_7 days after it was lost."""
    rp = platform()
    rule = rules_of(rp, "dc1")["FabricPortDown"]
    node = "gpu-040"
    inputs = pool_node(node, "onprem-h100", -3600, minutes=1001) + [ib_port(node, d, "4x1000") for d in OLD[:6]]
    inputs += [ib_port(node, "mlx5_6", "4x24 _x976"), ib_port(node, "mlx5_7", "4x264 _x736")]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1h", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "696h", "alertname": "FabricPortDown", "exp_alerts": [down(rule, node, "mlx5_6"), down(rule, node, "mlx5_7")]},
        {"eval_time": "760h", "alertname": "FabricPortDown", "exp_alerts": [down(rule, node, "mlx5_7")]},
        {"eval_time": "990h", "alertname": "FabricPortDown", "exp_alerts": []}]}], tmp_path / "a", every="1h",
        order=["alicerce.kpi.node", "alicerce.fabric"])  # fmt: skip


@needs_promtool
def test_a_rail_lost_before_its_node_went_unreported_for_days_is_still_reported(tmp_path: Path) -> None:
    """Reviews obsreview42 G-1, obsreview43 G-2: the count and the cap read each node's pool from kube-state-metrics,
    so while it did not report the node nothing wrote the node's most; after more than a day of that the most
    restarted at the count (7) and mlx5_7, lost at 24h, went quiet for the rest of its 30 days. 100h..129h:
    kube-state-metrics reports nothing (gpu-041), or not gpu-042's Node (deleted and joined again) while it reports
    gpu-043, which is healthy throughout."""
    rp = platform()
    rule = rules_of(rp, "dc1")["FabricPortDown"]
    hours = 400

    def unreported(node: str, gapped: int) -> list[dict[str, str]]:
        """The node's first ``gapped`` kube-state-metrics series with no sample 100h..129h."""
        listed = pool_node(node, "onprem-h100", -3600, minutes=hours)
        value = [s["values"].split("x")[0] for s in listed]
        held = [{**s, "values": f"{v}x99 _x30 {v}x{hours - 130}"} for s, v in zip(listed, value, strict=True)]
        return held[:gapped] + listed[gapped:]

    inputs = unreported("gpu-041", 3) + unreported("gpu-042", 1) + unreported("gpu-043", 0)
    inputs += [ib_port("gpu-043", d, f"4x{hours}") for d in OLD]
    for node in ("gpu-041", "gpu-042"):
        inputs += [ib_port(node, d, f"4x{hours}") for d in OLD[:7]] + [ib_port(node, "mlx5_7", f"4x24 _x{hours - 24}")]
    both = [down(rule, n, "mlx5_7") for n in ("gpu-041", "gpu-042")]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1h", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "90h", "alertname": "FabricPortDown", "exp_alerts": both},
        {"eval_time": "300h", "alertname": "FabricPortDown", "exp_alerts": both}]}], tmp_path / "a",
        every="1h", order=["alicerce.kpi.node", "alicerce.fabric"])  # fmt: skip


@needs_promtool
def test_a_node_exporter_restart_neither_resolves_nor_delays_a_rail_down(tmp_path: Path) -> None:
    """Review obsreview39 N-4: FabricPortDown is gated on the node reporting ports, so an exporter restart resolved it
    and it fired again 5 minutes later. gpu-060's mlx5_7 leaves at 30m; its exporter restarts at 60m (back at 62m)."""
    rp = platform()
    rule = rules_of(rp, "dc1")["FabricPortDown"]
    assert rule["keep_firing_for"] == "10m"
    node = "gpu-060"
    inputs = pool_node(node, "onprem-h100", -3600) + [ib_port(node, d, "4x59 stale _ 4x57") for d in OLD[:7]]
    inputs += [ib_port(node, "mlx5_7", "4x29 _x91")]
    fired = [down(rule, node, "mlx5_7")]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": f"{m}m", "alertname": "FabricPortDown", "exp_alerts": fired} for m in (50, 61, 63)]}], tmp_path / "a",
        order=["alicerce.kpi.node", "alicerce.fabric"])  # fmt: skip


@needs_promtool
def test_ports_gone_while_their_kind_is_whole_are_told_for_a_day_from_when_the_node_is_back(tmp_path: Path) -> None:
    """A sample an hour, a reboot at 10h. Quiet as rails (FabricPortDown), told as renamed (FabricPortsRenamed, info)
    for a day: gpu-050's mlx5_7 replaced by a ConnectX-7 of another PSID (an OEM part number) in another slot (review
    obsreview41 G-1: the PSID in the kind read it as a rail lost for 30 days), gpu-051's mlx5_3 lost in the reboot that
    added a card of its kind (obsreview39 G-3: silent before), gpu-052 renumbered. gpu-053's reboot renames nothing.
    The day starts when the node is back (obsreview43 G-1: from the ports' last ACTIVE it was over before anyone could
    see it): gpu-054 is off 11h..40h and back renumbered; gpu-055's mlx5_7 is lost at 11h (a rail down) and a card of
    its kind is cabled at 31h, which makes up the count."""
    rp = platform()
    rules = rules_of(rp, "dc1")
    nodes, hours = [f"gpu-05{i}" for i in range(6)], 80
    before, after = f"4x10 _x{hours - 10}", f"_x11 4x{hours - 12}"
    inputs = [s for n in nodes for s in pool_node(n, "onprem-h100", -3600, minutes=hours)]
    inputs += [ib_port("gpu-050", d, f"4x{hours}") for d in OLD[:7]] + [ib_port("gpu-050", "mlx5_7", before)]
    inputs += [ib_port("gpu-050", "mlx5_9", after), {**ib_info("gpu-050", "mlx5_9", CX7[0], "MT_0000000970"), "values": after}]
    inputs += [{**ib_info("gpu-050", d), "values": f"1x{hours}"} for d in OLD]
    inputs += [ib_port("gpu-051", d, f"4x{hours}") for d in OLD if d != "mlx5_3"] + [ib_port("gpu-051", "mlx5_3", before)]
    inputs += [ib_port("gpu-051", "mlx5_9", after)]
    inputs += [ib_port("gpu-052", d, before) for d in OLD] + [ib_port("gpu-052", d, after) for d in MID]
    inputs += [ib_port("gpu-053", d, f"4x10 _ 4x{hours - 12}") for d in OLD]
    inputs += [ib_port("gpu-054", d, before) for d in OLD] + [ib_port("gpu-054", d, f"_x41 4x{hours - 42}") for d in MID]
    inputs += [ib_port("gpu-055", d, f"4x{hours}") for d in OLD[:7]] + [ib_port("gpu-055", "mlx5_7", before)]
    inputs += [ib_port("gpu-055", "mlx5_9", f"_x31 4x{hours - 32}")]
    renamed = rules["FabricPortsRenamed"]
    assert renamed["labels"]["severity"] == "info" and renamed["keep_firing_for"] == "10m"

    def told(node: str, device: str, card: tuple[str, str] | None = None) -> dict[str, Any]:
        return expected(renamed, {"node": node, "device": device, "port": "1", **({"hca_type": card[0]} if card else {})}, "")

    early = [told("gpu-050", "mlx5_7", CX7), told("gpu-051", "mlx5_3")] + [told("gpu-052", d) for d in OLD]
    late = [told("gpu-054", d) for d in OLD]
    port_down = rules["FabricPortDown"]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1h", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "20h", "alertname": "FabricPortsRenamed", "exp_alerts": early},
        {"eval_time": "20h", "alertname": "FabricPortDown", "exp_alerts": [down(port_down, "gpu-055", "mlx5_7")]},
        {"eval_time": "40h", "alertname": "FabricPortsRenamed", "exp_alerts": [told("gpu-055", "mlx5_7")]},
        {"eval_time": "50h", "alertname": "FabricPortsRenamed", "exp_alerts": [*late, told("gpu-055", "mlx5_7")]},
        {"eval_time": "50h", "alertname": "FabricPortDown", "exp_alerts": []},
        {"eval_time": "75h", "alertname": "FabricPortsRenamed", "exp_alerts": []}]}], tmp_path / "a",
        every="1h", order=["alicerce.kpi.node", "alicerce.fabric"])  # fmt: skip


@needs_promtool
def test_rails_never_up_counts_the_pool_s_adapters_beside_a_storage_port(tmp_path: Path) -> None:
    """Review obsreview36 G-1: without railDevices, a rail that never came up (or was forgotten after 30 days down)
    beside an ACTIVE storage port read as 7 + 1 = 8 ports up, the fabric's 8 rails, and nothing warned. The threshold
    is the pool's RDMA adapters per host (onprem.hcas, the fabric's rails by default; validate keeps it >= rails): a
    pool that declares its storage adapter (hcas 9) is warned, the reference (hcas = rails = 8) reads as before."""
    text = (ROOT / "platform.yaml").read_text()
    nine = validated(load_text(text.replace("      hcas: 8\n", "      hcas: 9\n"), "platform.yaml"), "prod")
    node = "gpu-040"
    inputs = pool_node(node, "onprem-h100", -3600)
    inputs += [ib_port(node, f"mlx5_{i}", "4x120") for i in range(7)] + [ib_port(node, "mlx5_7", "1x120")]
    inputs += [ib_port(node, "mlx5_8", "4x120")]  # the storage port, ACTIVE
    for name, rp, fired in (("nine", nine, ["8"]), ("reference", platform(), [])):
        rule = rules_of(rp, "dc1")["FabricRailsNeverUp"]
        (tmp_path / name).mkdir()
        run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "60m", "alertname": "FabricRailsNeverUp",
             "exp_alerts": [expected(rule, {"node": node}, v) for v in fired]}]}], tmp_path / name)  # fmt: skip


# the rails as the rdma role names them (rdma-core NAME_PCI: a DGX H100's compute ports, AL392), and two storage ports
RAILS = ["ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"]
STORAGE_PORTS = ["ibp41s0f0", "ibp41s0f1"]


def rail_devices_named(devices: list[str]) -> ResolvedPlatform:
    """The reference platform with the H100 pool's rail devices named (pool.onprem.railDevices)."""
    text = (ROOT / "platform.yaml").read_text()
    assert text.count("      hcas: 8\n") == 1
    return validated(load_text(text.replace("      hcas: 8\n", f"      hcas: 8\n      railDevices: {devices}\n"), "platform.yaml"), "prod")


@needs_promtool
def test_named_rail_devices_are_the_bar_whatever_hcas_declares(tmp_path: Path) -> None:
    """Review obsreview39 D-2: with railDevices named only those ports are counted, so hcas 9 (a storage adapter
    declared beside 8 named rails) read every healthy node as 8 < 9 for ever. The named rails are the bar: gpu-041
    with its 8 rails and storage port ACTIVE is quiet, gpu-042 with a rail never up is short."""
    text = (ROOT / "platform.yaml").read_text()
    rp = validated(load_text(text.replace("      hcas: 8\n", f"      hcas: 9\n      railDevices: {RAILS}\n"), "platform.yaml"), "prod")
    rule = rules_of(rp, "dc1")["FabricRailsNeverUp"]
    inputs = pool_node("gpu-041", "onprem-h100", -3600) + pool_node("gpu-042", "onprem-h100", -3600)
    inputs += [ib_port(n, d, "4x120") for n in ("gpu-041", "gpu-042") for d in RAILS[:7] + STORAGE_PORTS]
    inputs += [ib_port("gpu-041", RAILS[7], "4x120"), ib_port("gpu-042", RAILS[7], "1x120")]
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricRailsNeverUp",
         "exp_alerts": [expected(rule, {"node": "gpu-042"}, "7")]}]}], tmp_path)  # fmt: skip


@needs_promtool
def test_only_the_named_rail_devices_count_as_rails(tmp_path: Path) -> None:
    """obsreview6 DEFECT 2: the node exporter reports every RDMA device, storage and in-band ports included; with one
    rail never up and two storage ports ACTIVE the node still had 9 ports up, >= 8 rails, and nothing warned. With the
    rails named in the spec, the 7 rails up warn, and a storage port that goes down is not a rail down."""
    rp = rail_devices_named(RAILS)
    rules = rules_of(rp, "dc1")
    assert rules_of(platform(), "dc1")["FabricRailsNeverUp"]["expr"].count("device=~") == 0  # unnamed: every device
    node = "gpu-001"
    inputs = pool_node(node, "onprem-h100", -3600)
    inputs += [ib_port(node, d, "4x120") for d in RAILS[:7]] + [ib_port(node, RAILS[7], "1x120")]
    # storage ports; the second goes down
    inputs += [ib_port(node, STORAGE_PORTS[0], "4x120"), ib_port(node, STORAGE_PORTS[1], "4x30 1x90")]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricRailsNeverUp", "exp_alerts": [expected(rules["FabricRailsNeverUp"], {"node": node}, "7")]},
        {"eval_time": "60m", "alertname": "FabricPortDown", "exp_alerts": []}]}], tmp_path / "a")  # fmt: skip
    # the same node without the rails named: the storage port active earlier and down now is reported as a port down
    fired = expected(rules["FabricPortDown"], {"node": node, "device": STORAGE_PORTS[1], "port": "1"}, "1")
    (tmp_path / "b").mkdir()
    run_promtool(platform(), "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "60m", "alertname": "FabricPortDown", "exp_alerts": [fired]}]}], tmp_path / "b")  # fmt: skip


H200_RAILS = [f"ibp{bus}s0" for bus in (26, 66, 81, 96, 156, 194, 208, 222)]


@needs_promtool
def test_named_rail_devices_are_counted_alone_and_a_renamed_rail_reads_as_lost(tmp_path: Path) -> None:
    """Two pools naming their railDevices: each pool's nodes count only their own named devices (one count rule per
    set of names), the expression stays under 4,000 characters. gpu-001's rails renamed (PCI buses renumbered at 60m,
    new names outside railDevices) read as lost, as the runbook says, until railDevices names them; gpu-002's storage
    port added in the reboot that lost RAILS[7] is no rail and does not make up the count; gpu-003's storage port
    gone is no rail down. gpu-101 (H200) lost H200_RAILS[7]; gpu-102 is quiet although its rails are not H100 names."""
    text = (ROOT / "platform.yaml").read_text().replace("\nstorage:\n", H200_POOL + "\nstorage:\n")
    assert text.count("      hcas: 8\n") == 2
    first, second = text.split("      hcas: 8\n")[:2]
    named = first + f"      hcas: 8\n      railDevices: {RAILS}\n" + second + f"      hcas: 8\n      railDevices: {H200_RAILS}\n"
    rp = validated(load_text(named + "      hcas: 8\n".join(text.split("      hcas: 8\n")[2:]), "platform.yaml"), "prod")
    rules = rules_of(rp, "dc1")
    rule = rules["FabricPortDown"]
    assert len(rule["expr"]) < 4000 and rule["expr"].count(KIND_MOST_ACTIVE) == 2
    inputs = [s for n in ("gpu-001", "gpu-002", "gpu-003") for s in pool_node(n, "onprem-h100", -3600, minutes=240)]
    inputs += [s for n in ("gpu-101", "gpu-102") for s in pool_node(n, "onprem-h200", -3600, minutes=240)]
    renamed = [d.replace("s0", "s1") for d in RAILS]
    inputs += [ib_port("gpu-001", d, FIRST) for d in RAILS] + [ib_port("gpu-001", d, AFTER) for d in renamed]
    inputs += [ib_port("gpu-002", d, THROUGH) for d in RAILS[:7]] + [ib_port("gpu-002", RAILS[7], FIRST)]
    inputs += [ib_port("gpu-002", STORAGE_PORTS[0], AFTER)]
    inputs += [ib_port("gpu-003", d, ALL) for d in RAILS] + [ib_port("gpu-003", STORAGE_PORTS[0], FIRST)]
    inputs += [ib_port("gpu-101", d, ALL) for d in H200_RAILS[:7]] + [ib_port("gpu-101", H200_RAILS[7], FIRST)]
    inputs += [ib_port("gpu-102", d, ALL) for d in H200_RAILS]
    fired = [down(rule, "gpu-001", d) for d in RAILS] + [down(rule, "gpu-002", RAILS[7]), down(rule, "gpu-101", H200_RAILS[7])]
    (tmp_path / "a").mkdir()
    run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "100m", "alertname": "FabricPortDown", "exp_alerts": fired},
        {"eval_time": "200m", "alertname": "FabricPortDown", "exp_alerts": fired}]}], tmp_path / "a",
        order=["alicerce.kpi.node", "alicerce.fabric"])  # fmt: skip
    kpi = next(g for g in rule_groups(rp, "dc1") if g["name"] == "alicerce.kpi.node")
    assert sum(r.get("record") == KIND_ACTIVE for r in kpi["rules"]) == 2


@needs_promtool
def test_only_the_spec_s_rail_devices_are_read_as_blind(tmp_path: Path) -> None:
    """Where the pool names its rails (onprem.railDevices), an ACTIVE port beside them (a storage HCA on the same
    fabric) is not a rail whose congestion the diagnosis misses: its unread wait does not warn; a rail's does."""
    rp = rail_devices_named(RAILS)
    rule = rules_of(rp, "dc1")["FabricWaitCountersMissing"]
    exporter = f'job="node-exporter",instance="{NODE}:9100",node="{NODE}"'

    def port(device: str, value: int) -> list[dict[str, str]]:
        return [{"series": f'alicerce_fabric_port_wait_up{{{exporter},device="{device}",port="1"}}', "values": f"{value}{STEPS}"},
                {"series": f'node_infiniband_state_id{{{exporter},device="{device}",port="1"}}', "values": f"4{STEPS}"}]  # fmt: skip

    base = [*node_labels(NODE), node_counter(NODE, "node_pressure_io_waiting_seconds_total", 0.01)]
    fresh = {"series": f'node_textfile_mtime_seconds{{{exporter},file="/host/root/var/lib/prometheus/node-exporter/'
                       f'alicerce_fabric_wait.prom"}}', "values": f"0+60{STEPS}"}  # fmt: skip
    for name, rails, storage, fired in (
        ("storage", 1, 0, []),
        ("rail", 0, 1, [expected(rule, {"node": NODE, "device": RAILS[0], "port": "1"}, "")]),
    ):
        inputs = [*base, fresh, *port(RAILS[0], rails), *(s for d in RAILS[1:] for s in port(d, 1)), *port(STORAGE_PORTS[1], storage)]
        (tmp_path / name).mkdir()
        run_promtool(rp, "dc1", [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "30m", "alertname": "FabricWaitCountersMissing", "exp_alerts": fired}]}], tmp_path / name)  # fmt: skip


@needs_promtool
def test_a_serving_workload_whose_pods_serve_no_slo_bucket_is_unmeasured(tmp_path: Path) -> None:
    """Review obsreview8 F1: a workload answering requests whose scraped pods serve no bucket at the bound chat-70b's
    SLOs count at (time to first token at 1 s, inter-token latency or its former name at 50 ms) leaves its SLO alerts
    reading nothing: a vLLM that renamed the histogram, or one with other buckets. A pod that serves them under any
    name (Ray Serve's too), a workload scaled to zero, an idle RayService (Ray exports a histogram from its first
    observation) and a RayService's worker (scraped for Ray's metrics, no histogram) beside a measured head raise
    nothing."""
    rule = rules_of(platform(), "aws")["ServingLatencyUnmeasured"]
    ttft, itl, former = ("vllm:time_to_first_token_seconds", "1.0"), (TPOT, "0.05"), (FORMER_NAMES[TPOT][0], "0.05")
    ray_ttft, ray_itl = ("ray_vllm_time_to_first_token_seconds", "1.0"), ("ray_vllm_inter_token_latency_seconds", "0.05")

    def pod(name: str, *buckets: tuple[str, str], finished: str | None = "vllm:request_success_total") -> list[dict[str, str]]:
        at = f'namespace="serving",pod="{name}"'
        target = f'{at},alicerce_dev_workload="chat-70b"'
        engine = f'{target},model_name="chat",engine="0"'
        return [
            {"series": f'kube_pod_labels{{{at},label_alicerce_dev_workload="chat-70b"}}', "values": "1x60"},
            {"series": f'kube_pod_status_phase{{{at},phase="Running"}}', "values": "1x60"},
            {"series": f'kube_pod_status_ready{{{at},uid="u-{name}",condition="true"}}', "values": "1x60"},
            {"series": f'up{{job="serving",{target}}}', "values": "1x60"},
            *({"series": f'{h}_bucket{{{engine},le="{le}"}}', "values": "0+100x60"} for h, le in buckets),
            *([{"series": f'{finished}{{{engine},finished_reason="stop"}}', "values": "0+100x60"}] if finished else []),
        ]

    def case(inputs: list[dict[str, str]], unmeasured: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        fired = [expected(rule, {"namespace": "serving", "workload": "chat-70b", "histogram": h, "le": f"{float(le):g}"}, "1")
                 for h, le in unmeasured]  # fmt: skip
        return {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "45m", "alertname": "ServingLatencyUnmeasured", "exp_alerts": fired}]}  # fmt: skip

    ray = "ray_vllm_request_success_total"
    run_promtool(platform(), "aws", [
        case(pod("chat-70b-0", ttft, itl), ()),
        case(pod("chat-70b-0", ttft, former), ()),
        case(pod("chat-70b-0", ttft, itl, former), ()),  # vLLM 0.11 serves both
        case(pod("chat-70b-0", ray_ttft, ray_itl, finished=ray), ()),  # Ray Serve LLM
        case(pod("chat-70b-0", ttft), (itl,)),  # a vLLM renamed since the rules were written
        case(pod("chat-70b-0", ttft, (TPOT, "0.04")), (itl,)),  # configured with buckets that have no 50 ms bound
        case(pod("chat-70b-0", ray_ttft, finished=ray), (itl,)),
        case(pod("chat-70b-0", finished=None), ()),  # a RayService that has answered nothing yet
        case(pod("chat-70b-0", ttft, itl) + pod("chat-70b-worker", finished=None), ()),
        case([{"series": 'up{job="x"}', "values": "1x60"}], ()),  # nothing deployed
    ], tmp_path)  # fmt: skip


@needs_promtool
def test_a_scraped_serving_pod_without_vllm_series_is_unmeasured(tmp_path: Path) -> None:
    """Review obsreview21 F7: chat-70b-0 ready and scraped for 2 h, its /metrics answering process series only (vLLM
    started with --disable-log-stats creates no stat logger): every SLO reads nothing, and ServingLatencyUnmeasured
    looks only where vLLM's request counter shows traffic. ServingEngineMetricsAbsent fires; quiet once the engine
    serves its gauges (at start, traffic or not), and for a RayService head (Ray's agent exports from a first value)."""
    rule = rules_of(platform(), "aws")["ServingEngineMetricsAbsent"]

    def pod(name: str, labels: str = "", *, vllm: bool = False) -> list[dict[str, str]]:
        at = f'namespace="serving",pod="{name}"'
        target = f'job="monitoring/serving-chat-70b",{at},instance="10.1.2.3:8000",alicerce_dev_workload="chat-70b"'
        return [
            {"series": f'kube_pod_labels{{{at},uid="u1",label_alicerce_dev_workload="chat-70b"{labels}}}', "values": "1x130"},
            {"series": f'kube_pod_status_ready{{{at},uid="u1",condition="true"}}', "values": "1x130"},
            {"series": f'kube_pod_status_phase{{{at},uid="u1",phase="Running"}}', "values": "1x130"},
            {"series": f"up{{{target}}}", "values": "1x130"},
            {"series": f"process_start_time_seconds{{{target}}}", "values": "0x130"},
            *([{"series": f'vllm:num_requests_running{{{target},model_name="chat",engine="0"}}', "values": "0x130"}] if vllm else []),
        ]

    fired = [expected(rule, {"namespace": "serving", "workload": "chat-70b"}, "1")]
    head = ',label_ray_io_node_type="head"'
    cases = ((pod("chat-70b-0"), fired), (pod("chat-70b-0", vllm=True), []), (pod("chat-70b-head", head), []))
    run_promtool(platform(), "aws", [
        {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": "120m", "alertname": "ServingEngineMetricsAbsent", "exp_alerts": exp}]} for inputs, exp in cases
    ], tmp_path)  # fmt: skip


def _prometheus_volume_series(limit: int, capacity: int) -> list[dict[str, str]]:
    """Prometheus's retention gauge and its volume's capacity as the site's Prometheus stores them: the gauge from its
    own ServiceMonitor (the pod's namespace and name), the capacity from the kubelet's (the claim's namespace and name,
    honorLabels), the claim named as prometheus-operator and the StatefulSet controller name it."""
    from alicerce.emit.kube.operators import operator_releases
    from alicerce.run.diff import prometheus_claims

    rp = platform()
    release = next(r for r in operator_releases(rp, "aws") if r.key == "kube-prometheus-stack")
    [claim] = prometheus_claims(release, "aws")
    pod = claim.split("-db-", 1)[1]
    own = f'namespace="monitoring",pod="{pod}",job="{pod.removesuffix("-0")}",container="prometheus",endpoint="http-web"'
    kubelet = f'namespace="monitoring",persistentvolumeclaim="{claim}",node="ip-10-0-1-2",job="kubelet",metrics_path="/metrics"'
    # a team's claim beside it, in its own namespace, on a small volume: not Prometheus's
    team = 'namespace="research",persistentvolumeclaim="prometheus-scratch-db-prometheus-scratch-0",job="kubelet"'
    return [
        {"series": f"prometheus_tsdb_retention_limit_bytes{{{own}}}", "values": f"{limit}x120"},
        {"series": f"kubelet_volume_stats_capacity_bytes{{{kubelet}}}", "values": f"{capacity}x120"},
        {"series": f"kubelet_volume_stats_capacity_bytes{{{team}}}", "values": f"{2**30}x120"},
    ]


@needs_promtool
def test_a_retention_size_the_volume_cannot_hold_is_reported(tmp_path: Path) -> None:
    """Issue 24 (obsreview24 F8's day 2): monitoring.storage 100GiB -> 400GiB merged before the claim grew sets
    retentionSize 360GiB on a 100Gi volume; size retention never acts below the limit, so the disk fills and Prometheus
    stops, every alert with it. The kubelet reports a 100Gi ext4 volume as about 98.3GiB (the file system's metadata);
    alicerce's own 90% (90GiB) of it, and 360GiB on the grown 400Gi volume (about 393.4GiB), are quiet."""
    rule = rules_of(platform(), "aws")["PrometheusRetentionExceedsVolume"]
    gib = 2**30
    ext4_100 = int(98.3 * gib)
    pod = "prometheus-aws-operators-kube-prometh-prometheus-0"
    fired = {
        "exp_labels": {"namespace": "monitoring", "pod": pod, **rule["labels"]},
        "exp_annotations": {
            "summary": f"Prometheus {pod} may keep more than its volume holds",
            "description": rule["annotations"]["description"].replace("{{ $value | humanize1024 }}", "360Gi"),
        },
    }
    # the margin its runbook states (review obsreview26 N-C): 100GiB -> 103GiB, retention 92.7GiB, stays under 95%
    assert "under about 4% (100 to 103 GiB" in rule["annotations"]["description"]
    cases = {"grown-first": (360 * gib, ext4_100, [fired]), "as-generated": (90 * gib, ext4_100, []),
             "claim-grown": (360 * gib, int(393.4 * gib), []), "grown-3pct": (int(103 * 0.9 * gib), ext4_100, [])}  # fmt: skip
    for name, (limit, capacity, expect) in cases.items():
        (tmp_path / name).mkdir()
        run_promtool(platform(), "aws", [{"interval": "1m", "input_series": _prometheus_volume_series(limit, capacity),
                                          "alert_rule_test": [
            {"eval_time": "50m", "alertname": "PrometheusRetentionExceedsVolume", "exp_alerts": []},
            {"eval_time": "70m", "alertname": "PrometheusRetentionExceedsVolume", "exp_alerts": expect}]}],
            tmp_path / name)  # fmt: skip
    # and the facts: both series are the ones the pinned Prometheus and kubelet serve, with these labels
    assert load("prometheus", "v3.14.0", "metrics.json")["prometheus_tsdb_retention_limit_bytes"]["type"] == "gauge"
    assert load("kubelet", "1.35", "metrics.json")["kubelet_volume_stats_capacity_bytes"]["labels"] == [
        "namespace",
        "persistentvolumeclaim",
    ]
