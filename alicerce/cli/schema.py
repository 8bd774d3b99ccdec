"""`alicerce schema`: the JSON Schema of the spec language, or of a JSON document alicerce prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.errors import UsageError, user_errors

EPILOG = """\b
Examples:
  alicerce schema --output schema/platform.schema.json   the spec's schema, for editors and CI
  alicerce schema --document plan                         the schema of `alicerce plan --format json`
"""


def register(app: typer.Typer) -> None:
    app.command("schema", epilog=EPILOG)(schema)


@user_errors()
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (through a symlink to its target) instead of stdout.")
    ] = None,
    document: Annotated[
        str | None,
        typer.Option(
            "--document",
            "-d",
            help="A JSON output's schema instead: validate, error, plan, show, preview, catalog, rules, generate, apply.",
        ),
    ] = None,
) -> None:
    """Print the platform spec's JSON Schema (the committed schema/platform.schema.json).

    With --document, the schema of one of alicerce's JSON outputs (committed under schema/output/).
    """
    from alicerce.emit.files import write_text_atomic

    if document is None:
        from alicerce.spec.schema import schema_text

        text = schema_text()
    else:
        from alicerce.cli.documents import DOCUMENTS, document_schema_text
        from alicerce.spec.errors import did_you_mean

        if document not in DOCUMENTS:
            raise UsageError(f'no JSON document "{document}"', did_you_mean(document, DOCUMENTS) or f"one of: {', '.join(DOCUMENTS)}")
        text = document_schema_text(document)
    if output is None:
        print(text, end="")
    else:
        write_text_atomic(output, text)
