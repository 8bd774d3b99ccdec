"""The JSON Schema of the spec language, generated from the models (committed under schema/)."""

from __future__ import annotations

import json
from typing import Any

SCHEMA_ID = "https://alicerce.dev/schema/v1/platform.schema.json"


def platform_schema() -> dict[str, Any]:
    from alicerce.spec.models import PlatformSpec

    schema = PlatformSpec.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
    }


def schema_text() -> str:
    """The schema as committed: stable key order, two-space indent, final newline."""
    return json.dumps(platform_schema(), indent=2, ensure_ascii=False) + "\n"
