"""The base of every spec model and the small types all sections share.

Strict, frozen pydantic models with a description on every field (they become the editor hover
text through ``schema/platform.schema.json``). YAML keys are camelCase; Python attributes are
snake_case. Checks that need more than one field, the catalog or an environment live in
:mod:`alicerce.rules`, where each has a rule id and fixtures.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel


class SpecModel(BaseModel):
    """Base of every spec model: unknown keys are errors, values never change after load."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        use_enum_values=True,
        defer_build=True,
    )


DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

Name = Annotated[
    str,
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL, "maxLength": 63}),
]
"""A DNS-1123 label; checked by rule AL201 so that every bad name is reported with its fix."""

Labels = Annotated[
    dict[str, str],
    Field(description="Kubernetes-style labels (key: value)."),
]

Purpose = Literal["training", "fine-tuning", "inference", "batch-inference", "data-prep", "system"]
WorkloadKind = Literal["training", "fine-tuning", "inference", "batch-inference", "data-prep"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"]
