"""One record per operator (alicerce.resolve.operators): every table the stages read about operators derives from it,
and the record agrees with the spec, the catalog and the reserved namespaces, so adding an operator is one record
plus its own code."""

from __future__ import annotations

import pytest

from alicerce.catalog import load_catalog
from alicerce.emit.kube.objects import CRD_OWNERS
from alicerce.emit.kube.operators import _OWN_VALUES, PRIVILEGED_NAMESPACES, operator_releases
from alicerce.resolve.namespaces import RESERVED_NAMESPACES
from alicerce.resolve.operators import OPERATORS, operator
from alicerce.resolve.platform import CHART_VERSION_KEYS
from alicerce.resolve.versions import VERSION_KEYS
from alicerce.spec.models import Operators
from tests.emit.gitops.helpers import variant


def test_every_spec_operator_has_one_record_that_the_other_stages_agree_with() -> None:
    assert sorted(o.switch for o in OPERATORS) == sorted(Operators.model_fields)  # a spec switch without a record fails
    charts = load_catalog().versions.charts
    for o in OPERATORS:
        assert o.chart in charts, o.chart  # its release's chart is pinned in the catalog
        assert o.version in VERSION_KEYS.values(), o.version  # and pinnable in versions:
        assert CHART_VERSION_KEYS[o.chart] == o.version
        assert o.namespace in RESERVED_NAMESPACES, o.namespace  # no team may claim its namespace
        assert (o.namespace in PRIVILEGED_NAMESPACES) == o.privileged
        assert {g for g, chart in CRD_OWNERS.items() if chart == o.chart} == set(o.crd_groups)
        assert o.chart in _OWN_VALUES and operator(o.chart) == o
    assert operator("argo-cd") is None


def test_the_spec_values_of_each_operator_reach_its_release_through_its_record() -> None:
    def tune(data: dict[str, object]) -> None:
        operators = data.setdefault("operators", {})
        assert isinstance(operators, dict)
        for o in OPERATORS:
            key = "".join(w if i == 0 else w.capitalize() for i, w in enumerate(o.switch.split("_")))
            operators.setdefault(key, {})["values"] = {"podAnnotations": {"alicerce.test/record": o.chart}}

    rp = variant(tune)
    releases = {r.key: r for site in rp.sites for r in operator_releases(rp, site.name)}
    for o in OPERATORS:
        if o.chart in releases:
            assert releases[o.chart].values["podAnnotations"] == {"alicerce.test/record": o.chart}, o.chart
    assert {o.chart for o in OPERATORS} - set(releases) <= {"network-operator"}  # the reference runs every other one


def test_every_mount_kind_is_one_record() -> None:
    """The mount kinds targets may name, the host-mounted ones and their /proc/mounts types derive from MOUNT_KINDS."""
    from typing import get_args

    from alicerce.emit.kube.storage import FS_TYPES, HOST_MOUNTED
    from alicerce.resolve.model import MOUNT_KINDS, Mount, MountKind

    assert sorted(get_args(MountKind)) == sorted(k.kind for k in MOUNT_KINDS)  # the type checker's list is the records'
    assert set(HOST_MOUNTED) == {k.kind for k in MOUNT_KINDS if k.host_mounted} == {"lustre", "beegfs"}
    assert FS_TYPES["nfs"] == "nfs nfs4" and "weka" not in FS_TYPES
    with pytest.raises(ValueError, match="unknown mount kind"):
        Mount(kind="cephfs", source="", path="/x", options=())  # type: ignore[arg-type]
