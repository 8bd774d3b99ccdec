"""Node pools: provider-neutral GPU and CPU pools with per-target details."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictInt, WithJsonSchema

from alicerce.spec.base import LabelKey, Labels, LabelValue, Name, Purpose, SpecModel
from alicerce.spec.text import CatalogId
from alicerce.spec.units import MAX_HOSTS_PER_POOL
from alicerce.targets import PoolSections, add_sections


class Accelerator(SpecModel):
    """The accelerator model of a node pool and how many each node has."""

    model: CatalogId = Field(description="Catalog GPU id or alias.", examples=["H100-SXM5-80GB"])
    count: StrictInt = Field(ge=1, le=16, description="Accelerators per node.")


def _accelerator_shorthand(value: Any) -> Any:
    if isinstance(value, str):
        model, sep, count = value.rpartition(":")
        if not sep:
            return {"model": value, "count": 1}
        try:
            return {"model": model, "count": int(count)}
        except ValueError:
            raise ValueError(f'expected "MODEL:COUNT" such as "H100-SXM5-80GB:8", got "{value}"') from None
    return value


AcceleratorSpec = Annotated[
    Accelerator,
    BeforeValidator(_accelerator_shorthand),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]+)?$", "examples": ["H100-SXM5-80GB:8"]},
                {
                    "type": "object",
                    "properties": {
                        "model": {"type": "string", "description": "Catalog GPU id or alias."},
                        "count": {"type": "integer", "minimum": 1, "maximum": 16, "description": "Accelerators per node."},
                    },
                    "required": ["model", "count"],
                    "additionalProperties": False,
                },
            ]
        }
    ),
]


class NoSharing(SpecModel):
    """Whole GPUs per pod."""

    mode: Literal["none"] = Field(description="No GPU sharing.")


class MigSharing(SpecModel):
    """Multi-Instance GPU: each GPU split into hardware-isolated instances."""

    mode: Literal["mig"] = Field(description="MIG partitioning.")
    profiles: dict[CatalogId, StrictInt] = Field(
        min_length=1,
        description="MIG profile -> instances per GPU (one mig-parted configuration applied to every GPU).",
        examples=[{"1g.10gb": 7}, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}],
    )


class TimeSlicing(SpecModel):
    """Time-sliced sharing: each GPU advertised as several, with no memory isolation."""

    mode: Literal["time-slicing"] = Field(description="Time-slicing.")
    replicas: StrictInt = Field(ge=2, le=64, description="Pods that may share one GPU.")


Sharing = Annotated[NoSharing | MigSharing | TimeSlicing, Field(discriminator="mode")]


class Taint(SpecModel):
    key: LabelKey = Field(description="Taint key.", examples=["nvidia.com/gpu"])
    value: LabelValue = Field(default="", description="Taint value.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Taint effect.")


class Scaling(SpecModel):
    min: StrictInt = Field(ge=0, le=MAX_HOSTS_PER_POOL, description="Fewest nodes (0 lets an idle pool cost nothing).")
    max: StrictInt = Field(ge=0, le=MAX_HOSTS_PER_POOL, description="Most nodes; also the explicit GPU limit for autoscalers.")
    desired: StrictInt | None = Field(default=None, ge=0, le=MAX_HOSTS_PER_POOL, description="Initial size; defaults to min.")


class NodePool(SpecModel, PoolSections):
    """A group of identical nodes with one purpose."""

    name: Name = Field(description="Pool name.", examples=["train-h100"])
    site: Name = Field(description="Site (of each environment) the pool lives in.")
    purpose: Purpose = Field(description="What runs here; drives kubelet tuning, priority and placement.")
    accelerator: AcceleratorSpec | None = Field(
        default=None, description='GPU model and count per node, e.g. "H100-SXM5-80GB:8"; omit for CPU pools.'
    )
    sharing: Sharing = Field(default_factory=lambda: NoSharing(mode="none"), description="GPU sharing mode.")
    add_sections(locals(), "pool")  # each target's details (`aws:`, `onprem:`, ...); its own site's is required
    scaling: Scaling = Field(description="Node count bounds.")
    labels: Labels = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list, description="Taints; GPU pools need one so only GPU pods land there.")
    fabric: Name | None = Field(default=None, description="RDMA fabric the pool joins.")
