"""The versions an environment runs: the spec's pins over the catalog's tested bill of materials."""

from __future__ import annotations

from alicerce.catalog.models import BillOfMaterials, EksAddonPins
from alicerce.spec.models import Versions

# spec field (snake_case) -> bill-of-materials field (the YAML key); the EKS add-on pins are a map of their own
VERSION_KEYS = {name: field.alias or name for name, field in Versions.model_fields.items() if name != "eks_addons"}


def effective_versions(pinned: Versions, bom: BillOfMaterials) -> BillOfMaterials:
    """Every component version, typed: the spec's pin where given, else the bill of materials."""
    pins = {key: getattr(pinned, name) for name, key in VERSION_KEYS.items() if getattr(pinned, name) is not None}
    return bom.model_copy(update=pins)


def effective_eks_addons(pinned: Versions, catalog: EksAddonPins, kubernetes: str) -> dict[str, str]:
    """EKS add-on versions: the spec's pin, else the catalog's for the Kubernetes minor; absent: AWS's default."""
    out = {name: pins.versions[kubernetes] for name, pins in catalog.items() if kubernetes in pins.versions}
    out.update({str(name): version for name, version in pinned.eks_addons.items()})
    return dict(sorted(out.items()))
