"""The counters list alicerce mounts into dcgm-exporter (review obsreview3 DEFECT C): the image's own list, field for
field, plus the XID count per code that lets a second XID of the same code raise an alert, and the clock events per
reason that say a GPU slows down for heat."""

from __future__ import annotations

import csv
import io

import pytest

from alicerce.catalog.alerts import CLOCK_EVENTS_METRIC, FABRIC_MANAGER_STATUS, REMAP_PENDING, XID_COUNT_METRIC
from alicerce.emit.kube import dcgm_counters
from alicerce.emit.kube.dcgm_counters import COUNTERS, counters_configmap, counters_csv
from alicerce.emit.kube.operators import operator_releases
from tests.emit.kube.test_monitoring import platform
from tests.emit.kube.upstream import load

VENDORED = load("dcgm-exporter", "4.5.3-4.8.2", "counters.json")


def test_the_list_is_the_image_s_own_plus_the_xid_count_and_remap_pending() -> None:
    listed = {name: kind for name, kind, _ in COUNTERS}
    # nothing the image collects is lost (the KPIs, dashboards and health alerts read them), with the same types
    assert {name: listed.get(name) for name in VENDORED["counters"]} == VENDORED["counters"]
    assert (
        set(listed) - set(VENDORED["counters"])
        == set(VENDORED["optional"])
        == {
            XID_COUNT_METRIC,
            REMAP_PENDING,
            CLOCK_EVENTS_METRIC,
            FABRIC_MANAGER_STATUS,
        }
    )
    assert all(listed[name] == VENDORED["optional"][name]["type"] for name in VENDORED["optional"])


def test_every_line_parses_as_dcgm_exporter_reads_it() -> None:
    """dcgm-exporter reads the list with Go's csv reader and refuses a record that is not exactly three fields
    (4.5.3-4.8.2 internal/pkg/counters/counter_config.go 85-104): a comma in a help text would stop the exporter."""
    records = list(csv.reader(io.StringIO(counters_csv())))
    assert len(records) == len(COUNTERS)
    assert all(len(r) == 3 and r[1].strip() in ("gauge", "counter", "label") for r in records), records


@pytest.mark.parametrize("site", ["aws", "dc1"])
def test_the_gpu_operator_creates_and_mounts_the_list(site: str) -> None:
    values = next(r for r in operator_releases(platform("prod"), site) if r.key == "gpu-operator").values
    # gpu-operator v26.3.3 templates/dcgm_exporter_config.yaml writes data under dcgm-metrics.csv when create is set;
    # clusterpolicy.yaml 570-573 passes the name to the operator, which mounts it and points the exporter at it
    assert values["dcgmExporter"]["config"] == {"name": counters_configmap(), "create": True, "data": counters_csv()}


def test_a_new_counters_list_changes_the_configmap_the_cluster_policy_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review observe5 item 1: the exporter reads the list at start and the operator mounts it with a subPath
    (gpu-operator v26.3.3 controllers/object_controls.go 1882-1902), so a change of content under the same name reached
    no running exporter. The name the ClusterPolicy passes on (clusterpolicy.yaml 570-573) follows the content: the
    operator rewrites the DaemonSet's metrics-config volume, and the DaemonSet rolls."""

    def config() -> dict[str, object]:
        values = next(r for r in operator_releases(platform("prod"), "dc1") if r.key == "gpu-operator").values
        return dict(values["dcgmExporter"]["config"])

    before = config()
    monkeypatch.setattr(dcgm_counters, "COUNTERS", (*COUNTERS, ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "CRC.")))
    after = config()
    assert after["data"] != before["data"] and "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL" in str(after["data"])
    assert after["name"] != before["name"] and str(after["name"]).startswith("alicerce-dcgm-metrics-")
    assert len(str(after["name"])) <= 63  # a volume's ConfigMap reference, a DNS label at most
    monkeypatch.setattr(dcgm_counters, "COUNTERS", COUNTERS)
    assert config() == before  # the same list, the same name: no roll on an unrelated regeneration


# the dcgm-exporter image each gpu-operator pin runs by default (deployments/gpu-operator/values.yaml dcgmExporter.version;
# v26.3.3:285 reads 4.5.3-4.8.2-distroless, read at the tag): the exporter whose labels tests/data/upstream vendors
EXPORTER_OF_GPU_OPERATOR = {"v26.3.3": "4.5.3-4.8.2"}


def test_the_vendored_exporter_labels_are_the_pinned_gpu_operator_s() -> None:
    """Review obsreview21 F6: dcgm-exporter's main renames the ``Hostname`` label to ``hostname`` (d5e5f51, after
    4.8.2), and every DCGM join, health alert and dashboard keys on ``Hostname``. Nothing pins the exporter but the
    gpu-operator chart: a chart upgrade fails here until the exporter it brings is vendored and its labels checked."""
    from alicerce.catalog import load_catalog
    from alicerce.resolve.platform import CHART_VERSION_KEYS

    pinned = getattr(load_catalog().versions.bom, CHART_VERSION_KEYS["gpu-operator"])
    assert pinned in EXPORTER_OF_GPU_OPERATOR, f"gpu-operator {pinned}: vendor its dcgm-exporter and check its labels"
    labels = load("dcgm-exporter", EXPORTER_OF_GPU_OPERATOR[pinned], "labels.json")
    assert "Hostname" in labels["device_labels"]
