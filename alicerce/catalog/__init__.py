"""Typed, cached access to the catalog data files.

Data files are YAML (facts with their sources side by side); they are parsed with libyaml when
available and checked against :mod:`alicerce.catalog.models` once per process.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from alicerce.catalog.models import Fsx, Gpu, InstanceType, Sizing, Versions

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _GpuFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schemaVersion: int
    gpus: tuple[Gpu, ...]


class _InstanceFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schemaVersion: int
    instances: tuple[InstanceType, ...]


class _VersionsFile(Versions):
    schemaVersion: int


class _FsxFile(Fsx):
    schemaVersion: int


class _SizingFile(Sizing):
    schemaVersion: int


def _read(name: str) -> Any:
    text = resources.files("alicerce.catalog").joinpath("data", name).read_text("utf-8")
    return yaml.load(text, Loader=_Loader)


@dataclass(frozen=True)
class Catalog:
    """All catalog facts, indexed for lookup by id or alias."""

    gpus: tuple[Gpu, ...]
    instances: tuple[InstanceType, ...]
    versions: Versions
    fsx: Fsx

    @functools.cached_property
    def sizing(self) -> Sizing:
        """Sizer assumptions, loaded on first use (validation never needs them)."""
        return _SizingFile.model_validate(_read("sizing.yaml"))

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


@functools.cache
def load_catalog() -> Catalog:
    """The packaged catalog, parsed and checked once per process."""
    gpus = _GpuFile.model_validate(_read("gpus.yaml")).gpus
    instances = _InstanceFile.model_validate(_read("instances.yaml")).instances
    versions = _VersionsFile.model_validate(_read("versions.yaml"))
    fsx = _FsxFile.model_validate(_read("fsx.yaml"))
    return Catalog(gpus=gpus, instances=instances, versions=versions, fsx=fsx)


__all__ = ["Catalog", "load_catalog"]
