"""Rule AL322: the spec's Helm values never pick what a chart runs or loosen how isolated it runs.

Checked against the operators' vendored values (tests/data/upstream/<chart>/<version>/values.json): every value
path the pinned charts read for an image (repository, image, version, tag, digest, registry, pull secrets) or for
host access and privilege (hostNetwork, hostPID, securityContext, privileged, ...) is refused, so a chart upgrade
that adds such a value under a known name is covered without a code change.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from alicerce.catalog import load_catalog
from alicerce.resolve.platform import CHART_VERSION_KEYS
from alicerce.rules.validate import check
from alicerce.spec.loader import load_text
from alicerce.spec.models.operators import unsafe_values
from tests.conftest import ROOT, TODAY
from tests.emit.kube.upstream import load

# the charts of operators.<name>.values, by the catalog's chart key
OPERATOR_CHARTS = ("gpu-operator", "network-operator", "kube-prometheus-stack", "kueue", "kuberay-operator", "training-operator")
# leaf names by which the vendored charts select an image or reach the host (read from their values.yaml and templates)
IMAGE_LEAVES = re.compile(r"^(image|repository|registry|imageRegistry|version|tag|digest|sha|imagePullSecrets|pullSecrets)$")
HOST_LEAVES = re.compile(r"^(hostNetwork|hostPID|hostIPC|hostPaths?|privileged|(pod|container)?[sS]ecurityContext)$")


def _chart(key: str) -> tuple[str, str]:
    catalog = load_catalog()
    chart = catalog.versions.charts[key]
    return chart.chart, getattr(catalog.versions.bom, CHART_VERSION_KEYS[key])


def _nested(path: str, leaf: Any) -> dict[str, Any]:
    value: Any = leaf
    for part in reversed(re.split(r"(?<!\\)\.", path)):
        value = {part.replace("\\.", "."): value}
    return dict(value)


def _guarded_paths(key: str) -> list[str]:
    chart, version = _chart(key)
    values: dict[str, str] = load(chart, version, "values.json")
    leaves = [p for p in values if IMAGE_LEAVES.match(p.split(".")[-1]) or HOST_LEAVES.match(p.split(".")[-1])]
    assert leaves, f"{chart} {version}: no image or host value found; the vendored values changed shape"
    return leaves


@pytest.mark.parametrize("key", OPERATOR_CHARTS)
def test_every_image_and_host_value_of_the_pinned_charts_is_refused(key: str) -> None:
    missed = [path for path in _guarded_paths(key) if not list(unsafe_values(_nested(path, "x")))]
    assert missed == []


def test_the_values_people_tune_stay_allowed() -> None:
    tuned = {
        "dcgmExporter": {"serviceMonitor": {"interval": "30s"}, "env": [{"name": "DCGM_EXPORTER_INTERVAL", "value": "5000"}]},
        "daemonsets": {"priorityClassName": "system-node-critical", "tolerations": []},
        "grafana": {"ingress": {"enabled": True, "hosts": ["grafana.example.com"]}},
        "prometheus": {"prometheusSpec": {"resources": {"requests": {"memory": "8Gi"}}}},
        "apiVersion": "v1",
        "kubeTargetVersionOverride": "1.35.0",
    }
    assert list(unsafe_values(tuned)) == []


def test_a_repointed_driver_image_fails_validate_at_its_key() -> None:
    text = (ROOT / "platform.yaml").read_text()
    anchor = "    kernelModuleType: open\n"
    assert anchor in text
    hostile = "    values:\n      driver: {repository: evil.example/nvidia}\n      daemonsets: [{securityContext: {privileged: true}}]\n"
    checked = check(load_text(text.replace(anchor, anchor + hostile), "platform.yaml"), on=TODAY)
    found = sorted({(e.span.line, e.rule, ".".join(map(str, e.path))) for e in checked.errors})
    line = text[: text.index(anchor)].count("\n") + 1
    assert found == [
        (line + 2, "AL322", "operators.gpuOperator.values.driver.repository"),
        (line + 3, "AL322", "operators.gpuOperator.values.daemonsets.0.securityContext"),
    ]


def test_chart_values_hold_only_numbers_helm_can_read() -> None:
    """Security review of issue 22: `.inf`, `.nan`, `1e400` and a 30-digit integer in operator values validated;
    resolved.json wrote null for them while the Argo CD Application handed Helm `.inf` (no JSON form)."""
    text = (ROOT / "platform.yaml").read_text()
    anchor = "  kueue: {}\n"
    assert anchor in text
    hostile = "  kueue: {values: {a: .inf, b: [.nan], c: 1e400, d: 123456789012345678901234567890, ok: 1.5}}\n"
    checked = check(load_text(text.replace(anchor, hostile), "platform.yaml"), on=TODAY)
    found = {(e.rule, ".".join(map(str, e.path))) for e in checked.errors}
    assert found == {("AL104", "operators.kueue.values")}
    message = checked.errors[0].message
    assert all(part in message for part in ("a is inf", "b.0 is nan", "c is inf", "d has 30 digits")), message
    assert "ok" not in message
