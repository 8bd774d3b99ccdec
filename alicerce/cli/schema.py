"""`alicerce schema`: the JSON Schema of the spec language, for editors and CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)


def schema(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
) -> None:
    """Print the platform spec's JSON Schema (the committed schema/platform.schema.json)."""
    from alicerce.emit.files import write_text_atomic
    from alicerce.spec.schema import schema_text

    text = schema_text()
    if output is None:
        print(text, end="")
    else:
        write_text_atomic(output, text)
