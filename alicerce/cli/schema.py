"""`alicerce schema`: the JSON Schema of the spec language, for editors and CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.errors import user_errors


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)


@user_errors()
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (through a symlink to its target) instead of stdout.")
    ] = None,
) -> None:
    """Print the platform spec's JSON Schema (the committed schema/platform.schema.json)."""
    from alicerce.emit.files import write_text_atomic
    from alicerce.spec.schema import schema_text

    text = schema_text()
    if output is None:
        print(text, end="")
    else:
        write_text_atomic(output, text)
