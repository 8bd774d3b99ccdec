"""The checked catalog kept in the cache folder: read back equal, rebuilt when broken, off on request."""

from __future__ import annotations

from pathlib import Path

import pytest

from alicerce.catalog import _parse_catalog, cached
from alicerce.catalog.onprem import _OnpremFile, load_onprem

INPUTS = ("data/gpus.yaml", "models.py")


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, int]:
        self.calls += 1
        return {"built": self.calls}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ALICERCE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ALICERCE_NO_CACHE", raising=False)
    return tmp_path


def test_a_cached_value_is_built_once_and_read_back(cache: Path) -> None:
    build = Counter()
    assert cached("probe", INPUTS, build) == {"built": 1}
    assert cached("probe", INPUTS, build) == {"built": 1}
    assert build.calls == 1
    assert cached("probe", ("data/instances.yaml", "models.py"), build) == {"built": 2}  # other inputs, another entry


def test_a_broken_entry_is_rebuilt(cache: Path) -> None:
    build = Counter()
    cached("probe", INPUTS, build)
    (entry,) = (cache / "catalog").glob("probe-*.pickle")
    entry.write_bytes(b"not a pickle")
    assert cached("probe", INPUTS, build) == {"built": 2}
    assert cached("probe", INPUTS, build) == {"built": 2}  # and written again


def test_no_cache_turns_it_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALICERCE_NO_CACHE", "1")
    build = Counter()
    cached("probe", INPUTS, build)
    cached("probe", INPUTS, build)
    assert build.calls == 2
    assert not (cache / "catalog").exists()


def test_the_catalog_read_back_equals_the_checked_one(cache: Path) -> None:
    inputs = ("data/gpus.yaml", "data/instances.yaml", "data/versions.yaml", "data/fsx.yaml", "models.py", "__init__.py")
    first = cached("catalog", inputs, _parse_catalog)
    again = cached("catalog", inputs, lambda: pytest.fail("not read back"))
    assert again == first == _parse_catalog()
    assert again.gpu("H100") == first.gpu("H100")


def test_the_onprem_facts_read_back_equal_the_checked_ones(cache: Path) -> None:
    load_onprem.cache_clear()
    try:
        first, again = load_onprem(), (load_onprem.cache_clear(), load_onprem())[1]
    finally:
        load_onprem.cache_clear()
    assert isinstance(first, _OnpremFile)
    assert again == first
    assert list((cache / "catalog").glob("onprem-*.pickle"))
