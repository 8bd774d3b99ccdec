"""The spec's own catalog: instance types and GPUs alicerce does not ship, declared with the same facts."""

from __future__ import annotations

from pydantic import Field

from alicerce.catalog.models import Gpu, InstanceType
from alicerce.spec.base import SpecModel


class UserCatalog(SpecModel):
    """GPUs and AWS instance types this platform uses that the built-in catalog lacks.

    Each entry has exactly the fields of a built-in one (`alicerce catalog gpus --format json`
    shows them) with its public sources, and is checked the same way; rules, sizing and every
    output then treat it like a built-in entry, marked user-provided. An id that the built-in
    catalog already has is an error (AL285).
    """

    gpus: list[Gpu] = Field(
        default_factory=list,
        description="GPU models (id, aliases, memory, bandwidth, dense TFLOP/s, interconnect, MIG, sources),"
        " as in `alicerce catalog gpus`.",
    )
    instance_types: list[InstanceType] = Field(
        default_factory=list,
        description="AWS instance types (GPUs, vCPUs, memory, NVMe, network, EFA, price, sources), as in `alicerce catalog instances`.",
    )
