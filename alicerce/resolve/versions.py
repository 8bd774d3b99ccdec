"""Defaults a spec gets from the catalog: the tested bill of materials fills unpinned versions."""

from __future__ import annotations

from alicerce.catalog.models import BillOfMaterials, EksAddonPins
from alicerce.spec.models import Versions

# spec field (snake_case) -> YAML key of each component version; the EKS add-on pins are a map of their own
VERSION_KEYS = {name: field.alias or name for name, field in Versions.model_fields.items() if name != "eks_addons"}


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


def effective_eks_addons(pinned: Versions, catalog: EksAddonPins, kubernetes: str) -> dict[str, str]:
    """EKS add-on versions: the spec's pin, else the catalog's for the Kubernetes minor; absent: AWS's default."""
    out = {name: pins.versions[kubernetes] for name, pins in catalog.items() if kubernetes in pins.versions}
    out.update({str(name): version for name, version in pinned.eks_addons.items()})
    return dict(sorted(out.items()))
