"""Make ``--dist loadgroup`` keep each ``xdist_group`` on one worker under pytest 9.2.

pytest-xdist 3.8 tells its scheduler an item's group by appending ``@group`` to ``item._nodeid`` on
the worker. pytest 9.2 builds ``nodeid`` from a structured ``item._id`` and never reads ``_nodeid``, so
the suffix is lost and every grouped test is scheduled on its own (pytest-xdist issue 1386, open at
3.8.0): each worker then builds the converged rootfs, the Pulumi previews and the wheel again,
minutes of CPU on two cores. This plugin runs after xdist's hook and writes the same suffix where
pytest 9.2 keeps the id; where xdist already did (a fixed release), it leaves the item alone.
tests/conftest.py registers it; ``-p tests.xdist_groups`` loads it into any other pytest run.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId  # pytest's own id type (9.2): the one place nodeid is read from


@pytest.hookimpl(trylast=True)  # after xdist's own hook, which only sets the attribute pytest 9.2 ignores
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # only an xdist worker under --dist loadgroup
        return
    for item in items:
        marks = item.iter_markers("xdist_group")
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")) for mark in marks})
        if not names:
            continue
        suffix = f"@{'_'.join(names)}"  # xdist's own spelling, which its scheduler splits at the last "@"
        if not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)
