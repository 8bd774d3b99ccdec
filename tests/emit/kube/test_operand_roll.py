"""A day-2 change of a pool's sharing rolls ONE GPU Operator DaemonSet over every GPU node of the site, one node at a time
(review obsreview30 G-1): GPUsMissing<Pool> waits for the roll on a Ready node that still offers GPUs, for at most the
site's bound; a node at 0 or NotReady still pages, and so does a node a stuck roll never reaches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alicerce.emit.kube.monitoring import ROLL_SECONDS_PER_NODE, ROLLED_OPERANDS, roll_bound_minutes
from alicerce.resolve.model import ResolvedPlatform
from tests.emit.gitops.helpers import pool, variant
from tests.emit.kube.test_monitoring import expected, needs_promtool, rules_of, run_promtool
from tests.emit.kube.upstream import load

ALERT = "GPUsMissingInferL4"
L4 = 'label_alicerce_dev_pool="infer-l4",label_node_kubernetes_io_instance_type="g6.xlarge"'
STEPS = 90


def _eight_replicas() -> ResolvedPlatform:
    """infer-l4's time-slicing replicas 4 -> 8 (g6.xlarge, 1 L4): the rules expect 8 per node from the sync."""

    def eight(data: dict[str, Any]) -> None:
        pool(data, "infer-l4")["sharing"]["replicas"] = 8

    return variant(eight)


def _node(name: str, offered: str, ready: str = f"1x{STEPS}") -> list[dict[str, str]]:
    return [
        {"series": f'kube_node_labels{{node="{name}",{L4}}}', "values": f"1x{STEPS}"},
        {"series": f'kube_node_created{{node="{name}"}}', "values": f"-36000x{STEPS}"},
        {"series": f'kube_node_spec_unschedulable{{node="{name}"}}', "values": f"0x{STEPS}"},
        {"series": f'kube_node_status_allocatable{{node="{name}",resource="nvidia_com_gpu",unit="integer"}}', "values": offered},
        {"series": f'kube_node_status_condition{{node="{name}",condition="Ready",status="true"}}', "values": ready},
    ]


def _device_plugin(updated: str, desired: int = 44) -> list[dict[str, str]]:
    """kube-state-metrics' view of the device plugin's DaemonSet: ``desired`` GPU nodes, ``updated`` of them on the new
    template (the sync at minute 5 changes the template: 0 updated, then one node a minute)."""
    labels = 'namespace="gpu-operator",daemonset="nvidia-device-plugin-daemonset"'
    return [
        {"series": f"kube_daemonset_status_desired_number_scheduled{{{labels}}}", "values": f"{desired}x{STEPS}"},
        {"series": f"kube_daemonset_status_updated_number_scheduled{{{labels}}}", "values": updated},
    ]


def test_the_roll_is_read_from_kube_state_metrics_daemonset_series() -> None:
    """The names the exemption reads are the vendored kube-state-metrics 2.20.0 series, labelled by daemonset; the bound
    of the reference aws site (train-p5 16 + infer-l40s 12 + infer-l4 16 GPU nodes at max) is 44 nodes x 60 s."""
    metrics = load("kube-state-metrics", "2.20.0", "metrics.json")
    for name in ("kube_daemonset_status_desired_number_scheduled", "kube_daemonset_status_updated_number_scheduled"):
        assert metrics[name]["labels"] == ["namespace", "daemonset"]
    rp = _eight_replicas()
    assert ROLL_SECONDS_PER_NODE == 60 and roll_bound_minutes(rp.site("aws")) == 44
    rule = rules_of(rp, "aws")[ALERT]
    assert all(name in rule["expr"] for name in ROLLED_OPERANDS) and "[44m:1m]" in rule["expr"]
    # the page of a stuck roll tells the on-call where to look
    assert "roll did not reach the node within 44 minutes" in rule["annotations"]["description"]


@needs_promtool
def test_a_big_site_roll_that_reaches_a_node_late_is_quiet(tmp_path: Path) -> None:
    """The sync at minute 5 starts the roll over the site's 44 GPU nodes, one a minute. l4-late offers the old 4 until
    the roll reaches it 40 minutes later (minute 45), then 8: quiet (before the fix it paged from minute 20). Mid-roll,
    l4-zero loses its GPUs (0 from minute 10) and l4-dead goes NotReady (minute 10): both page 15 minutes later."""
    rp = _eight_replicas()
    rule = rules_of(rp, "aws")[ALERT]
    inputs = [
        *_device_plugin(f"44x4 0+1x44 44x{STEPS - 49}"),
        *_node("l4-late", f"4x44 8x{STEPS - 45}"),
        *_node("l4-zero", f"4x9 0x{STEPS - 10}"),
        *_node("l4-dead", f"4x{STEPS}", ready=f"1x9 0x{STEPS - 10}"),
        *_node("l4-done", f"4x5 8x{STEPS - 6}"),
    ]
    lost = [expected(rule, {"node": n, "resource": "nvidia_com_gpu"}, "0") for n in ("l4-dead", "l4-zero")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "20m", "alertname": ALERT, "exp_alerts": []},
        {"eval_time": "26m", "alertname": ALERT, "exp_alerts": lost},
        {"eval_time": "44m", "alertname": ALERT, "exp_alerts": lost},
        {"eval_time": "80m", "alertname": ALERT, "exp_alerts": lost},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


@needs_promtool
def test_a_stuck_roll_pages_after_the_site_bound(tmp_path: Path) -> None:
    """The roll stops at 20 of 44 nodes (a pod that does not start holds the one unavailable slot): l4-stuck keeps the
    old 4. The exemption ends 44 minutes after the roll began (minute 5 -> 48), then the alert's 15 minutes: it pages
    at minute 63, not before the bound."""
    rp = _eight_replicas()
    rule = rules_of(rp, "aws")[ALERT]
    inputs = [*_device_plugin(f"44x4 0+1x20 20x{STEPS - 25}"), *_node("l4-stuck", f"4x{STEPS}")]
    stuck = [expected(rule, {"node": "l4-stuck", "resource": "nvidia_com_gpu"}, "4")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "40m", "alertname": ALERT, "exp_alerts": []},
        {"eval_time": "60m", "alertname": ALERT, "exp_alerts": []},
        {"eval_time": "64m", "alertname": ALERT, "exp_alerts": stuck},
        {"eval_time": "85m", "alertname": ALERT, "exp_alerts": stuck},
    ]}]  # fmt: skip
    run_promtool(rp, "aws", tests, tmp_path)


DC1_H100 = 'label_alicerce_dev_pool="onprem-h100",label_alicerce_dev_accelerator="H100-SXM5-80GB"'
MIG_STEPS = 45


def _mig_node(name: str, old: str, new: str) -> list[dict[str, str]]:
    """A dc1 onprem-h100 node offering ``old`` mig-3g.40gb and ``new`` mig-2g.20gb instances (promtool values)."""
    resource = 'kube_node_status_allocatable{{node="{}",resource="nvidia_com_mig_{}",unit="integer"}}'
    return [
        {"series": f'kube_node_labels{{node="{name}",{DC1_H100}}}', "values": f"1x{MIG_STEPS}"},
        {"series": f'kube_node_created{{node="{name}"}}', "values": f"-36000x{MIG_STEPS}"},
        {"series": f'kube_node_spec_unschedulable{{node="{name}"}}', "values": f"0x{MIG_STEPS}"},
        {"series": resource.format(name, "3g_40gb"), "values": old},
        {"series": resource.format(name, "2g_20gb"), "values": new},
        {"series": f'kube_node_status_condition{{node="{name}",condition="Ready",status="true"}}', "values": f"1x{MIG_STEPS}"},
    ]


@needs_promtool
def test_a_node_the_mig_roll_has_not_reached_waits_for_its_new_profile(tmp_path: Path) -> None:
    """Review obsreview32 G-2 (repro /work/wt/or32-repro/test_mig_new_profile_roll.py, inverted): dc1's onprem-h100 goes
    from MIG 3g.40gb x2 to 2g.20gb x3 per GPU (mixed strategy: a new resource, 24 per node); the MIG manager's DaemonSet
    (32 nodes) rolls one node a minute from the sync at minute 5. h100-late offers its old 16 mig-3g.40gb and none of the
    new profile until the roll reaches it at minute 30: quiet while the roll is young, and at 24 after. h100-dead, Ready
    but offering no GPU at all (0 of the old profile, none of the new), pages 15 minutes after the sync."""

    def split(data: dict[str, Any]) -> None:
        pool(data, "onprem-h100")["sharing"] = {"mode": "mig", "profiles": {"2g.20gb": 3}}

    rp = variant(split)
    rule = rules_of(rp, "dc1")["GPUsMissingOnpremH100"]
    assert "nvidia_com_mig_2g_20gb" in rule["expr"] and "nvidia-mig-manager" in rule["expr"]
    ds = 'namespace="gpu-operator",daemonset="nvidia-mig-manager"'
    inputs = [
        {"series": f"kube_daemonset_status_desired_number_scheduled{{{ds}}}", "values": f"32x{MIG_STEPS}"},
        {"series": f"kube_daemonset_status_updated_number_scheduled{{{ds}}}", "values": f"32x4 0+1x32 32x{MIG_STEPS - 37}"},
        *_mig_node("h100-late", "16x29 stale", f"_x30 24x{MIG_STEPS - 30}"),
        *_mig_node("h100-dead", f"0x{MIG_STEPS}", f"_x{MIG_STEPS}"),
    ]
    dead = [expected(rule, {"node": "h100-dead", "resource": "nvidia_com_mig_2g_20gb"}, "0")]
    tests = [{"interval": "1m", "input_series": inputs, "alert_rule_test": [
        {"eval_time": "20m", "alertname": "GPUsMissingOnpremH100", "exp_alerts": dead},
        {"eval_time": "25m", "alertname": "GPUsMissingOnpremH100", "exp_alerts": dead},
        {"eval_time": "35m", "alertname": "GPUsMissingOnpremH100", "exp_alerts": dead},
    ]}]  # fmt: skip
    run_promtool(rp, "dc1", tests, tmp_path)
