"""delivery: argocd under the mock engine: Pulumi installs the pinned Argo CD, the Secret its chart would make
in a hook (helm.v4.Chart runs none), the repository credential, and the site's root Application; nothing else
of the in-cluster layer but the file-system volumes only Pulumi can name (issue 13, item 2).

Checked against the argo-helm chart argo-cd facts vendored under tests/data/upstream/argo-cd/<version>/.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from alicerce.catalog import load_catalog
from alicerce.emit.gitops.argocd import REDIS_SECRET, argocd_values, deploy_time_tiers
from tests.emit.gitops.helpers import application_schema, chart_facts
from tests.emit.kube.upstream import active_hooks
from tests.pulumi.conftest import covers

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CHART = load_catalog().versions.charts["argo-cd"]


def _paths(values: dict[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every value path of a values mapping, as key tuples."""
    out: dict[tuple[str, ...], Any] = {}
    for key, value in values.items():
        out[(*prefix, key)] = value
        if isinstance(value, dict):
            out.update(_paths(value, (*prefix, key)))
    return out


def _dotted(path: tuple[str, ...]) -> str:
    """The vendored facts' spelling: keys joined by dots, dots inside a key escaped (Helm's --set convention)."""
    return ".".join(key.replace(".", "\\.") for key in path)


def _type(value: Any) -> str:
    return {bool: "bool", int: "int", str: "string", dict: "map", list: "list"}[type(value)]


@covers("alicerce:argocd:ArgoCd", "random:index/randomPassword:RandomPassword", "kubernetes:core/v1:Secret")
def test_argocd_sites_get_argocd_and_its_redis_secret_instead_of_the_layer(argocd: Any) -> None:
    rp, result = argocd
    for site in ("aws", "dc1"):
        kids = {r.type: r for r in result.children(f"{site}-argocd")}
        chart = kids["kubernetes:helm.sh/v4:Chart"]
        assert chart.inputs["chart"] == CHART.chart and chart.inputs["version"] == CHART.version
        assert chart.inputs["repositoryOpts"] == {"repo": CHART.repository} and chart.inputs["name"] == "argocd"
        secrets = {r.inputs["metadata"]["name"]: r for r in result.children(f"{site}-argocd") if r.type == "kubernetes:core/v1:Secret"}
        name, _ = REDIS_SECRET
        assert secrets[name].inputs["stringData"] == "[secret]"  # from a RandomPassword, never written anywhere
        assert f"{site}-argocd-redis" in chart.depends_on
        assert secrets["alicerce-repository"].inputs["metadata"]["labels"] == {"argocd.argoproj.io/secret-type": "repository"}
        password = kids["random:index/randomPassword:RandomPassword"]
        assert password.inputs["length"] >= 32
        # Pulumi no longer applies the operators and objects here: Argo CD does
        assert not [r for r in result.resources if r.name in (f"{site}-operators", f"{site}-objects")]
    assert rp.site("aws").spec.delivery == "argocd"


def test_the_chart_values_exist_and_switch_off_every_hook() -> None:
    """Every value set is a path of the pinned chart with the chart's type, and every hook template is guarded
    by a value set to false: helm.v4.Chart would skip those hooks, and nothing needed may be left in them."""
    types = chart_facts("argo-cd", CHART.version, "values.json")
    values = argocd_values()
    flat = _paths(values)
    for path, value in flat.items():
        dotted = _dotted(path)
        if dotted in types:
            assert types[dotted] in (_type(value), "null"), dotted
        else:  # a free-form entry of a map the chart declares (the configs.cm keys)
            assert types.get(_dotted(path[:-1])) == "map", dotted
    assert chart_facts("argo-cd", CHART.version, "hooks.json")["hooks"], "the vendored chart facts list its hook templates"
    assert active_hooks("argo-cd", CHART.version, values) == []  # every hook guard is off under alicerce's values


def test_pulumi_creates_every_secret_the_chart_needs_but_only_makes_in_hooks(argocd: Any) -> None:
    _, result = argocd
    required = [r for r in chart_facts("argo-cd", CHART.version, "secret_refs.json") if not r["optional"]]
    assert required, "the Redis Deployment reads a Secret that only the hook Job creates"
    made = {r.inputs["metadata"]["name"] for r in result.children("dc1-argocd") if r.type == "kubernetes:core/v1:Secret"}
    for ref in required:
        assert ref["secret"] in made, ref
        assert (ref["secret"], ref["key"]) == REDIS_SECRET


@covers("kubernetes:argoproj.io/v1alpha1:Application")
def test_the_root_application_pulumi_applies_validates_and_waits_for_the_chart(argocd: Any) -> None:
    _, result = argocd
    root = next(r for r in result.resources if r.type == "kubernetes:argoproj.io/v1alpha1:Application" and r.parent == "dc1-argocd")
    app = {k: root.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}
    errors = [e.message for e in jsonschema.Draft7Validator(application_schema(strict=True)).iter_errors(app)]
    assert errors == []
    assert app["spec"]["source"]["path"] == "generated/prod/kubernetes/dc1/apps"
    assert "dc1-argocd-chart" in root.depends_on


def test_file_system_volumes_stay_with_pulumi_at_an_argocd_site(argocd: Any) -> None:
    rp, result = argocd
    group = next(r for r in result.children("aws-argocd") if r.type == "kubernetes:yaml/v2:ConfigGroup")
    tiers = {o["metadata"]["labels"]["alicerce.dev/storage-tier"] for o in group.inputs["objs"]}
    assert tiers == set(deploy_time_tiers(rp, "aws"))
    assert all(o["kind"] == "PersistentVolume" and o["spec"]["csi"]["volumeHandle"] != "pulumi-owned" for o in group.inputs["objs"])
    assert not [r for r in result.children("dc1-argocd") if r.type == "kubernetes:yaml/v2:ConfigGroup"]  # dc1's come from the spec
