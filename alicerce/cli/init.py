"""`alicerce init`: start a new platform repository from a small, valid spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.errors import UsageError, user_errors


def register(app: typer.Typer) -> None:
    app.command("init")(init)


@user_errors()
def init(
    directory: Annotated[Path, typer.Argument(help="New directory for the platform repository.")],
    name: Annotated[str, typer.Option(help="Platform name (a DNS label).")] = "my-platform",
) -> None:
    """Create DIR (or fill it when it is empty) with a starter platform.yaml, its JSON Schema and a README."""
    from alicerce.emit.files import create_tree
    from alicerce.emit.scaffold import scaffold_files, valid_name

    if not valid_name(name):
        raise UsageError(f'"{name}" is not a valid platform name', "use lowercase letters, digits and '-'")
    create_tree(directory, scaffold_files(name))
    print(f"created {directory}: edit platform.yaml, then run `alicerce validate {directory}/platform.yaml`")
