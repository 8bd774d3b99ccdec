"""Typed, cached access to the catalog data files.

Data files are YAML (facts with their sources side by side); they are parsed with libyaml when
available and checked against :mod:`alicerce.catalog.models` once per process.
"""

from __future__ import annotations

import functools
import pickle
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, cast

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict

from alicerce.catalog.models import (
    Fsx,
    Gpu,
    InferenceCalibration,
    InstanceType,
    Prices,
    Sizing,
    Tco,
    TrainingCalibration,
    UnseenEvaluation,
    Versions,
)
from alicerce.spec.cachedir import cache_dir, sha256, write_entry
from alicerce.spec.record import record, replace

_T = TypeVar("_T")
_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PACKAGE = Path(__file__).parent
"""This package's folder: its data files are read from it directly (``importlib.resources`` loads zipfile and
threading for its readers, a tenth of a cold `validate`; alicerce is installed as files)."""


class _GpuFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    schemaVersion: int
    gpus: tuple[Gpu, ...]


class _InstanceFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    schemaVersion: int
    instances: tuple[InstanceType, ...]


class _VersionsFile(Versions):
    schemaVersion: int


class _FsxFile(Fsx):
    schemaVersion: int


class _SizingFile(Sizing):
    schemaVersion: int


class _TrainingCalibrationFile(TrainingCalibration):
    schemaVersion: int


class _InferenceCalibrationFile(InferenceCalibration):
    schemaVersion: int


class _UnseenEvaluationFile(UnseenEvaluation):
    schemaVersion: int


class _PricesFile(Prices):
    schemaVersion: int


class _TcoFile(Tco):
    schemaVersion: int


def _read(name: str) -> Any:
    text = (PACKAGE / "data" / name).read_text("utf-8")
    return yaml.load(text, Loader=_Loader)


@record
class Catalog:
    """All catalog facts, indexed for lookup by id or alias."""

    gpus: tuple[Gpu, ...]
    instances: tuple[InstanceType, ...]
    versions: Versions
    fsx: Fsx
    user_ids: frozenset[str] = frozenset()  # GPU ids and instance types a spec's own `catalog:` section added

    def with_user(self, gpus: Iterable[Gpu], instances: Iterable[InstanceType]) -> Catalog:
        """This catalog plus a spec's own entries. An entry whose id is already known is left out, and an
        alias already taken is dropped (rule AL285 reports both): a user entry never changes what a
        known name means."""
        gpus, instances = list(gpus), list(instances)
        if not gpus and not instances:
            return self
        known = {name.lower() for g in self.gpus for name in (g.id, *g.aliases)}
        added_gpus: list[Gpu] = []
        for gpu in gpus:
            if gpu.id.lower() in known:
                continue
            free = tuple(a for a in gpu.aliases if a.lower() not in known)  # a taken alias keeps its old meaning
            added_gpus.append(gpu if free == gpu.aliases else gpu.model_copy(update={"aliases": free}))
            known |= {name.lower() for name in (gpu.id, *free)}
        types = {i.type for i in self.instances}
        added_instances: list[InstanceType] = []
        for instance in instances:
            if instance.type not in types:
                added_instances.append(instance)
                types.add(instance.type)
        return replace(
            self,
            gpus=(*self.gpus, *added_gpus),
            instances=(*self.instances, *added_instances),
            user_ids=self.user_ids | {g.id for g in added_gpus} | {i.type for i in added_instances},
        )

    def user_provided(self, name: str | None) -> bool:
        """Whether a GPU id or alias, or an instance type, comes from the spec's own catalog."""
        if name is None:
            return False
        gpu = self.gpu(name)
        return (gpu.id if gpu is not None else name) in self.user_ids

    @functools.cached_property
    def sizing(self) -> Sizing:
        """Sizer assumptions, loaded on first use and kept checked in the cache folder (a rule of validate reads them)."""
        return cached("sizing", ("data/sizing.yaml", "models.py", "__init__.py"), _parse_sizing)

    @functools.cached_property
    def prices(self) -> Prices:
        """Regional, Spot, Capacity Block and reservation pricing, loaded on first use and kept checked in the cache
        folder (a rule of validate reads the Capacity Block sale limits)."""
        return cached("prices", ("data/prices.yaml", "models.py", "__init__.py"), _parse_prices)

    @functools.cached_property
    def tco(self) -> Tco:
        """Cost factors of owned capacity (plan only)."""
        return _TcoFile.model_validate(_read("tco.yaml"))

    @functools.cached_property
    def training_calibration(self) -> TrainingCalibration:
        """Public training runs the throughput model is fitted to (tests and `--explain` only)."""
        return _TrainingCalibrationFile.model_validate(_read("calibration-training.yaml"))

    @functools.cached_property
    def inference_calibration(self) -> InferenceCalibration:
        """Published serving results the roofline is fitted to (tests only)."""
        return _InferenceCalibrationFile.model_validate(_read("calibration-inference.yaml"))

    @functools.cached_property
    def unseen_evaluation(self) -> UnseenEvaluation:
        """Public runs no calibration row's source covers: what bench/sizing_accuracy.py measures the planner on (never fitted)."""
        return _UnseenEvaluationFile.model_validate(_read("evaluation-unseen.yaml"))

    @functools.cached_property
    def _gpu_index(self) -> dict[str, Gpu]:
        index: dict[str, Gpu] = {}
        for gpu in self.gpus:
            for name in (gpu.id, *gpu.aliases):
                index[name.lower()] = gpu
        return index

    @functools.cached_property
    def _instance_index(self) -> dict[str, InstanceType]:
        return {instance.type: instance for instance in self.instances}

    def gpu(self, name: str) -> Gpu | None:
        """The GPU with this canonical id or alias (case-insensitive), or None."""
        return self._gpu_index.get(name.lower())

    def gpu_names(self) -> list[str]:
        """Every id and alias, for did-you-mean hints."""
        return sorted({n for g in self.gpus for n in (g.id, *g.aliases)})

    def instance(self, name: str) -> InstanceType | None:
        return self._instance_index.get(name)

    def instance_names(self) -> list[str]:
        return sorted(self._instance_index)


def _parse_sizing() -> Sizing:
    return _SizingFile.model_validate(_read("sizing.yaml"))


def _parse_prices() -> Prices:
    return _PricesFile.model_validate(_read("prices.yaml"))


def _parse_catalog() -> Catalog:
    gpus = _GpuFile.model_validate(_read("gpus.yaml")).gpus
    instances = _InstanceFile.model_validate(_read("instances.yaml")).instances
    versions = _VersionsFile.model_validate(_read("versions.yaml"))
    fsx = _FsxFile.model_validate(_read("fsx.yaml"))
    return Catalog(gpus=gpus, instances=instances, versions=versions, fsx=fsx)


def cached(name: str, inputs: tuple[str, ...], build: Callable[[], _T]) -> _T:
    """``build()``, kept pickled in the cache folder under a key made of ``inputs`` (paths in this package).

    Parsing the catalog's data files and building the validators of their models costs more than
    the rest of a cold `alicerce validate`; the checked result is kept under a key made of the
    data files, the modules of their models and the interpreter and pydantic versions, so only the
    first run after a change pays for it. A missing, unreadable or stale entry is rebuilt, and a
    cache that cannot be written is skipped. ``ALICERCE_NO_CACHE=1`` turns it off.
    """
    folder = cache_dir()
    if folder is None:
        return build()
    digest = sha256(f"{name}\0{sys.version}\0{pydantic.VERSION}\0".encode())
    for item in inputs:
        digest.update(item.encode() + b"\0" + (PACKAGE / item).read_bytes() + b"\0")
    path = folder / "catalog" / f"{name}-{digest.hexdigest()}.pickle"
    try:
        with path.open("rb") as handle:
            return cast(_T, pickle.load(handle))  # written by this function, in the user's own cache folder
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass
    if getattr(pydantic, "LITE", False):  # under alicerce.spec.lite: the real path builds and writes the entry
        from alicerce.spec.lite import GiveUp

        raise GiveUp(f"no cached {name}")
    value = build()
    write_entry(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value


@functools.cache
def load_catalog() -> Catalog:
    """The packaged catalog, parsed and checked once, then read back from the cache folder."""
    inputs = ("data/gpus.yaml", "data/instances.yaml", "data/versions.yaml", "data/fsx.yaml", "models.py", "__init__.py")
    return cached("catalog", inputs, _parse_catalog)


__all__ = ["Catalog", "load_catalog"]
