"""The AWS controllers' Helm values exist in their charts at the pinned versions, with the right types.

Facts vendored from the charts (tests/data/upstream/<chart>/<version>/values.json: dotted value path ->
YAML type of the default). A pin without vendored facts fails; so does a value path the chart lacks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets.aws.components.controllers import controller_releases
from tests.conftest import ROOT
from tests.targets.aws.conftest import SHIPPED, shipped_preview

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
PYTHON_TYPES = {"bool": bool, "string": str, "int": int, "map": dict, "list": list}
FREE_FORM = {"extraArgs", "nodeSelector", "vpcTags"}  # maps whose keys the chart passes through as given


def _paths(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        out.append((path, value))
        if isinstance(value, dict) and path not in FREE_FORM:
            out.extend(_paths(value, f"{path}."))
    return out


@pytest.mark.parametrize(("spec", "env"), SHIPPED)
def test_controller_values_exist_in_the_pinned_charts(spec: str, env: str) -> None:
    rp: ResolvedPlatform
    rp, _ = shipped_preview(spec, env)
    site = next(s.spec for s in rp.sites if s.spec.provider == "aws")
    releases = controller_releases(rp, site)  # type: ignore[arg-type]
    assert "cluster-autoscaler" in {r.key for r in releases}
    for release in releases:
        facts = ROOT / "tests/data/upstream" / release.key / release.version / "values.json"
        assert facts.exists(), f"no vendored values for {release.key} {release.version}"
        chart = json.loads(facts.read_text())
        for path, value in _paths(release.values):
            assert path in chart, f"{release.key} {release.version} has no value {path}"
            declared = chart[path]
            if declared in PYTHON_TYPES and not (declared == "map" and isinstance(value, dict)):
                assert isinstance(value, PYTHON_TYPES[declared]), f"{release.key}: {path} is {declared}"


def test_autoscaler_limits_are_explicit_and_discovery_names_the_cluster() -> None:
    rp, _ = shipped_preview("platform.yaml", "prod")
    site = next(s.spec for s in rp.sites if s.spec.provider == "aws")
    ca = next(r for r in controller_releases(rp, site) if r.key == "cluster-autoscaler")  # type: ignore[arg-type]
    assert ca.values["autoDiscovery"] == {"clusterName": "acme-ml-prod-aws"} and ca.values["awsRegion"] == "us-east-1"
    assert ca.values["extraArgs"]["max-nodes-total"] == sum(p.spec.scaling.max for p in rp.pools if p.site.name == "aws")
    assert ca.values["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"  # the one its Pod Identity role trusts
