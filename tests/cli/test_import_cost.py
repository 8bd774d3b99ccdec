"""What a cold `alicerce validate` loads: a structural guard on its start-up cost, not a timed test.

A cold check of a valid spec runs the models against alicerce.spec.lite and imports no pydantic at
all once the checked catalog is cached; a spec with errors (or the first run) pays for pydantic and
the spec's validators. Everything else it used to load (the other commands, the later stages, the
validators of the catalog's data files and of the resolved objects) is left out on both paths, and
these tests fail when a change brings it back. Timings are measured by bench/validate_speed.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Runs a plain `validate` the way the `alicerce` script does, then reports what the process loaded and built.
PROBE = """
import contextlib, io, json, os, sys
from alicerce.cli import main
def _exit(code):  # main() ends a plain validate with os._exit; the probe looks at the process after it
    raise SystemExit(code)
os._exit = _exit
sys.argv = ["alicerce", "validate", sys.argv[1]]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        code = exc.code
from alicerce.spec import lite
lite_loaded = list(lite.LOADED)
pydantic_loaded = "pydantic" in sys.modules or "pydantic_core" in sys.modules
loaded = sorted(set(sys.modules) | set(lite_loaded))  # before this probe imports anything itself
from pydantic import BaseModel
from pydantic.plugin import _loader
from pydantic._internal._mock_val_ser import MockValSer
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
built = sorted({f"{c.__module__}.{c.__qualname__}" for c in subclasses(BaseModel)
                if c.__module__.startswith("alicerce") and not isinstance(c.__dict__.get("__pydantic_validator__"), MockValSer)})
import dataclasses, importlib
modules = sorted(set(sys.modules) | set(lite_loaded))
compiled = sorted({f"{c.__module__}.{c.__qualname__}" for name in modules if name.startswith("alicerce")
                   for c in vars(importlib.import_module(name)).values()
                   if isinstance(c, type) and c.__module__ == name and dataclasses.is_dataclass(c)
                   and c.__dict__.get("__init__") is not None and c.__init__.__code__.co_filename == "<string>"})
print(json.dumps({"code": code, "modules": modules, "loaded": loaded, "built": built, "compiled_dataclasses": compiled,
                  "plugins_scanned": _loader._plugins is not None, "pydantic_loaded": pydantic_loaded}))
"""

# the heavy toolchains are checked by tests/cli/test_cli.py::test_validate_imports_no_pulumi_ansible_or_cli_framework
NEVER_LOADED_STAGES = ("alicerce.plan", "alicerce.emit", "alicerce.run")


def probe(cache: Path, spec: Path = ROOT / "platform.yaml", **extra: str) -> dict[str, object]:
    env = {**os.environ, "ALICERCE_CACHE_DIR": str(cache), **extra}
    for name in ("ALICERCE_NO_CACHE", "PYDANTIC_DISABLE_PLUGINS"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(spec)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def edited(tmp_path: Path, source: Path, mark: str) -> Path:
    """A copy of ``source`` with a comment added: the result cache has never seen it (a cold run)."""
    copy = tmp_path / f"{source.stem}-{mark}.yaml"
    copy.write_text(f"{source.read_text('utf-8')}# {mark}\n", encoding="utf-8")
    return copy


@pytest.mark.parametrize("lite", ["1", "0"])
def test_a_cold_validate_loads_no_later_stage_and_no_other_command(tmp_path: Path, lite: str) -> None:
    probe(tmp_path / "cache")  # the first run writes the checked catalog's cache entries
    for spec in (edited(tmp_path, ROOT / "platform.yaml", "a"), edited(tmp_path, ROOT / "examples" / "mistakes.yaml", "a")):
        modules = probe(tmp_path / "cache", spec, ALICERCE_LITE=lite)["modules"]
        assert isinstance(modules, list)
        assert [m for m in modules if m.startswith(NEVER_LOADED_STAGES)] == []
        assert [m for m in modules if m.startswith("alicerce.cli.")] == ["alicerce.cli.fastpath", "alicerce.cli.result_cache"]


def test_a_cold_validate_of_a_valid_spec_imports_no_pydantic(tmp_path: Path) -> None:
    """Once the checked catalog is cached, a valid spec is checked by the lite models (issue 25: importing pydantic
    alone costs more than the whole budget of a cold validate); a spec with errors takes the real path."""
    cache = tmp_path / "cache"
    first = probe(cache, edited(tmp_path, ROOT / "platform.yaml", "first"))
    assert first["code"] == 0 and first["pydantic_loaded"] is True  # the first run checks and caches the catalog
    valid = probe(cache, edited(tmp_path, ROOT / "platform.yaml", "edited"))
    assert valid["code"] == 0 and valid["pydantic_loaded"] is False and valid["built"] == []
    assert "alicerce.rules.validate" in valid["modules"]  # it did check: the rules ran, on the lite models
    invalid = probe(cache, edited(tmp_path, ROOT / "examples" / "mistakes.yaml", "edited"))
    assert invalid["code"] == 2 and invalid["pydantic_loaded"] is True
    assert probe(cache, edited(tmp_path, ROOT / "platform.yaml", "off"), ALICERCE_LITE="0")["pydantic_loaded"] is True


def test_a_cold_validate_builds_only_the_spec_validators(tmp_path: Path) -> None:
    """On the real path (ALICERCE_LITE=0, or a spec with errors) the catalog is checked on the first run and read
    back afterwards; resolved objects are never validated."""
    cache = tmp_path / "cache"
    first = probe(cache, edited(tmp_path, ROOT / "platform.yaml", "first"), ALICERCE_LITE="0")["built"]
    assert isinstance(first, list)
    assert "alicerce.catalog._GpuFile" in first  # the first run checks the packaged catalog
    assert list((cache / "catalog").glob("catalog-*.pickle"))
    # an edited spec is cold for the result cache, not for the catalog
    after = probe(cache, edited(tmp_path, ROOT / "platform.yaml", "after"), ALICERCE_LITE="0")["built"]
    assert isinstance(after, list) and after
    # the spec's own models, and its target sections' (catalog.sizing, which a rule reads, is read back too)
    assert [name for name in after if not name.startswith("alicerce.spec.") and ".spec." not in name] == []


def test_a_cold_validate_does_not_scan_the_installed_distributions_for_pydantic_plugins(tmp_path: Path) -> None:
    """pydantic's plugin lookup reads the entry points of every installed distribution; alicerce's models use no plugin."""
    assert probe(tmp_path / "cache", ALICERCE_LITE="0")["plugins_scanned"] is False


def test_a_cold_validate_compiles_no_dataclass_methods(tmp_path: Path) -> None:
    """A dataclass compiles the source of its methods when its module is imported (0.8 ms a frozen class, 36 ms over
    the classes a cold validate imported), and importing dataclasses loads inspect, ast, dis and tokenize: the classes on
    its path are records (alicerce.spec.record), whose methods are shared functions."""
    probe(tmp_path / "cache")
    found = probe(tmp_path / "cache", edited(tmp_path, ROOT / "platform.yaml", "a"))
    assert found["code"] == 0 and found["compiled_dataclasses"] == []
    loaded = found["loaded"]
    assert isinstance(loaded, list) and "alicerce.rules.validate" in loaded
    heavy = ("dataclasses", "inspect", "tempfile", "importlib.resources", "importlib.metadata", "hashlib", "difflib")
    assert [name for name in heavy if name in loaded] == []
