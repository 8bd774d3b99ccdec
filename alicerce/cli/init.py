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
    """Create DIR: a platform repository (starter platform.yaml, Pulumi project, generated trees, CI, pre-commit)."""
    from alicerce.emit.files import create_tree
    from alicerce.emit.scaffold import valid_name

    if not valid_name(name):
        raise UsageError(f'"{name}" is not a valid platform name', "use lowercase letters, digits and '-'")
    create_tree(directory, starter_repository(name))
    print(f"created {directory}: edit platform.yaml, then run `alicerce validate {directory}/platform.yaml`")


def starter_repository(name: str) -> dict[str, str]:
    """The files of a new repository around the starter spec, every environment resolved from it."""
    from alicerce.emit.repository import platform_repository
    from alicerce.emit.scaffold import scaffold_files
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    spec = load_text(scaffold_files(name)["platform.yaml"], "platform.yaml")
    return platform_repository(name, {env: validated(spec, env) for env in spec.data["environments"]})
