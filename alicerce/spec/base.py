"""The base of every spec model and the small types all sections share.

Strict, frozen pydantic models with a description on every field (they become the editor hover
text through ``schema/platform.schema.json``). YAML keys are camelCase; Python attributes are
snake_case. Checks that need more than one field, the catalog or an environment live in
:mod:`alicerce.rules`, where each has a rule id and fixtures.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema
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
        # .inf and .nan are YAML numbers, and no quantity in a platform is infinite or undefined:
        # an .inf threshold silently disabled its alert, a .nan retention crashed generate
        allow_inf_nan=False,
    )


DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

Name = Annotated[
    str,
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL, "maxLength": 63}),
]
"""A DNS-1123 label; checked by rule AL201 so that every bad name is reported with its fix."""

# Kubernetes label syntax (k8s.io/apimachinery validation: IsQualifiedName, IsValidLabelValue).
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
LABEL_KEY = rf"^({_DNS_SUBDOMAIN}/)?{_LABEL_NAME}$"
LABEL_VALUE = rf"^({_LABEL_NAME})?$"
AWS_TAG_KEY_MAX = 128  # AWS tag limits: key <= 128 characters, value <= 256, no "aws:" prefix
MAX_PLATFORM_LABELS = 40  # AWS allows 50 tags a resource; alicerce adds up to 10 of its own


def _shown(text: str) -> str:
    return text if len(text) <= 60 else f"{text[:60]}..."


def check_label_key(key: str) -> str:
    """A Kubernetes label key: an optional DNS-subdomain prefix (<= 253) and '/', then a name (<= 63)."""
    prefix, slash, name = key.rpartition("/")
    problem = None
    if slash and not prefix:
        problem = "the prefix before '/' is empty"
    elif slash and len(prefix) > 253:
        problem = f"the prefix is {len(prefix)} characters, over 253"
    elif slash and not re.fullmatch(_DNS_SUBDOMAIN, prefix):
        problem = "the prefix must be a DNS subdomain (lowercase letters, digits, '-' and '.')"
    elif len(name) > 63:
        problem = f"the name part is {len(name)} characters, over 63"
    elif not re.fullmatch(_LABEL_NAME, name):
        problem = "the name must start and end with a letter or digit, with only letters, digits, '-', '_' and '.' between"
    if problem:
        raise ValueError(f'label key "{_shown(key)}" is not valid: {problem}')
    return key


def check_label_value(value: str) -> str:
    """A Kubernetes label value: empty, or <= 63 characters of the label-name alphabet."""
    if len(value) > 63:
        raise ValueError(f"label value is {len(value):,} characters, over the 63 Kubernetes allows")
    if not re.fullmatch(LABEL_VALUE, value):
        raise ValueError(
            f'label value "{_shown(value)}" is not valid: it must start and end with a letter or digit,'
            " with only letters, digits, '-', '_' and '.' between"
        )
    return value


def check_tag_key(key: str) -> str:
    """A label that also becomes an AWS tag: the key within AWS's limits too."""
    if len(key) > AWS_TAG_KEY_MAX:
        raise ValueError(f'"{_shown(key)}" becomes an AWS tag key: at most {AWS_TAG_KEY_MAX} characters, it has {len(key)}')
    if key.lower().startswith("aws:"):
        raise ValueError(f'"{_shown(key)}" becomes an AWS tag key, and the "aws:" prefix is reserved for AWS')
    return key


LabelKey = Annotated[str, AfterValidator(check_label_key), WithJsonSchema({"type": "string", "pattern": LABEL_KEY, "maxLength": 317})]
"""A Kubernetes label (or taint) key such as ``nvidia.com/gpu.clique``."""

LabelValue = Annotated[str, AfterValidator(check_label_value), WithJsonSchema({"type": "string", "pattern": LABEL_VALUE, "maxLength": 63})]
"""A Kubernetes label (or taint) value: at most 63 characters, possibly empty."""

TagKey = Annotated[
    str,
    AfterValidator(check_label_key),
    AfterValidator(check_tag_key),
    WithJsonSchema({"type": "string", "pattern": LABEL_KEY, "maxLength": AWS_TAG_KEY_MAX}),
]
"""A label key that is also an AWS tag key."""


def _labels_schema(key_max: int, **extra: int) -> WithJsonSchema:
    """Editors check keys with propertyNames (patternProperties would let other keys pass)."""
    return WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": LABEL_KEY, "maxLength": key_max},
            "additionalProperties": {"type": "string", "pattern": LABEL_VALUE, "maxLength": 63},
            **extra,
        }
    )


Labels = Annotated[
    dict[LabelKey, LabelValue],
    _labels_schema(317),
    Field(description="Kubernetes labels (key: value): keys such as example.com/team, values of at most 63 characters."),
]

PlatformLabels = Annotated[
    dict[TagKey, LabelValue],
    _labels_schema(AWS_TAG_KEY_MAX, maxProperties=MAX_PLATFORM_LABELS),
    Field(
        max_length=MAX_PLATFORM_LABELS,
        description="Labels on every Kubernetes object and AWS tags on every resource: Kubernetes label syntax,"
        f" keys of at most {AWS_TAG_KEY_MAX} characters, at most {MAX_PLATFORM_LABELS} labels.",
    ),
]

ShortText = Annotated[str, StringConstraints(max_length=256)]
"""A short free-text value (a contact, a group, a rack id): at most 256 characters."""

LongText = Annotated[str, StringConstraints(max_length=1024)]
"""A free-text explanation: at most 1,024 characters."""

Purpose = Literal["training", "fine-tuning", "inference", "batch-inference", "data-prep", "system"]
WorkloadKind = Literal["training", "fine-tuning", "inference", "batch-inference", "data-prep"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"]
