"""What a cold `alicerce validate` loads: a structural guard on its start-up cost, not a timed test.

A cold check pays for importing pydantic and building the spec's validators; everything else it
used to load (the other commands, the later stages, the validators of the catalog's data files and
of the resolved objects) is left out, and these tests fail when a change brings it back.
Timings are measured by bench/validate_speed.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

# Runs a plain `validate` the way the `alicerce` script does, then reports what the process loaded and built.
PROBE = """
import contextlib, io, json, sys
from alicerce.cli import main
sys.argv = ["alicerce", "validate", sys.argv[1]]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        code = exc.code
from pydantic import BaseModel
from pydantic.plugin import _loader
from pydantic._internal._mock_val_ser import MockValSer
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
built = sorted({f"{c.__module__}.{c.__qualname__}" for c in subclasses(BaseModel)
                if c.__module__.startswith("alicerce") and not isinstance(c.__dict__.get("__pydantic_validator__"), MockValSer)})
print(json.dumps({"code": code, "modules": sorted(sys.modules), "built": built, "plugins_scanned": _loader._plugins is not None}))
"""

# the heavy toolchains are checked by tests/cli/test_cli.py::test_validate_imports_no_pulumi_ansible_or_cli_framework
NEVER_LOADED_STAGES = ("alicerce.plan", "alicerce.emit", "alicerce.run")


def probe(cache: Path) -> dict[str, object]:
    env = {**os.environ, "ALICERCE_CACHE_DIR": str(cache)}
    for name in ("ALICERCE_NO_CACHE", "PYDANTIC_DISABLE_PLUGINS"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "platform.yaml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, object] = json.loads(out.stdout)
    assert result["code"] == 0
    return result


def test_a_cold_validate_loads_no_later_stage_and_no_other_command(tmp_path: Path) -> None:
    modules = probe(tmp_path / "cache")["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.startswith(NEVER_LOADED_STAGES)] == []
    assert [m for m in modules if m.startswith("alicerce.cli.")] == ["alicerce.cli.fastpath", "alicerce.cli.result_cache"]


def test_a_cold_validate_builds_only_the_spec_validators(tmp_path: Path) -> None:
    """The catalog is checked on the first run and read back afterwards; resolved objects are never validated."""
    cache = tmp_path / "cache"
    first = probe(cache)["built"]
    assert isinstance(first, list)
    assert "alicerce.catalog._GpuFile" in first  # the first run checks the packaged catalog
    assert list((cache / "catalog").glob("catalog-*.pickle"))
    after = probe(cache)["built"]  # an edited spec is cold for the result cache, not for the catalog
    assert isinstance(after, list)
    assert [name for name in after if not name.startswith("alicerce.spec.")] == []


def test_a_cold_validate_does_not_scan_the_installed_distributions_for_pydantic_plugins(tmp_path: Path) -> None:
    """pydantic's plugin lookup reads the entry points of every installed distribution; alicerce's models use no plugin."""
    assert probe(tmp_path / "cache")["plugins_scanned"] is False
