"""Defaults a spec gets from the catalog: the tested bill of materials fills unpinned versions."""

from __future__ import annotations

from alicerce.catalog.models import BillOfMaterials
from alicerce.spec.models import Versions

# spec field (snake_case) -> YAML key, for paths in errors
VERSION_KEYS = {name: field.alias or name for name, field in Versions.model_fields.items()}


def effective_versions(pinned: Versions, bom: BillOfMaterials) -> dict[str, str]:
    """Every version: the spec's pin where given, else the bill of materials (keys are YAML keys)."""
    out: dict[str, str] = {}
    for name, key in VERSION_KEYS.items():
        value = getattr(pinned, name)
        if value is None:
            value = getattr(bom, key, None)
        if value is not None:
            out[key] = value
    return out
