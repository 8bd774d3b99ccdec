"""`alicerce init`: start a platform repository that validates, previews, generates and deploys."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.errors import UsageError, user_errors
from alicerce.cli.output import Format, FormatOption, print_json, wants_json

EPILOG = """\b
Examples:
  alicerce init my-platform                  a new folder: spec, Pulumi project and stacks, generated tree, CI
  alicerce init . --name my-platform         into the current folder (a fresh clone), refused if any file exists
  alicerce init . --fill                     write only the files that are missing, never replace one
"""

FillOption = Annotated[
    bool, typer.Option("--fill", help="In an existing folder, write only the missing files (existing ones are never replaced).")
]


def register(app: typer.Typer) -> None:
    app.command("init", epilog=EPILOG)(init)


@user_errors()
def init(
    directory: Annotated[Path, typer.Argument(help="Folder for the platform repository: new, or existing (see --fill).")],
    name: Annotated[str, typer.Option(help="Platform name (a DNS label).")] = "my-platform",
    fill: FillOption = False,
    output_format: FormatOption = Format.text,
) -> None:
    """Create a platform repository in DIRECTORY: a starter platform.yaml, the Pulumi project (two stacks per
    environment), each environment's generated tree, the CI workflows, a pre-commit config, a README quickstart.

    No file is ever replaced: if any of them exists, nothing is written (exit 2) unless --fill.
    """
    from alicerce.emit.files import create_tree
    from alicerce.emit.scaffold import valid_name

    if not valid_name(name):
        raise UsageError(f'"{name}" is not a valid platform name', "use lowercase letters, digits and '-'")
    files = starter_repository(name)
    kept = create_tree(directory, files, fill=fill)
    if wants_json(output_format):
        print_json({"schemaVersion": 1, "directory": str(directory), "written": len(files) - len(kept), "kept": kept})
        return
    print(f"wrote {len(files) - len(kept)} files to {directory}/")
    if kept:
        print(f"kept yours ({len(kept)}): {', '.join(kept)}")
    print(f"next: cd {directory} and follow README.md (alicerce validate, alicerce preview, pulumi preview)")


def starter_repository(name: str) -> dict[str, str]:
    """The files of a new repository around the starter spec, every environment resolved from it."""
    from alicerce.emit.repository import platform_repository
    from alicerce.emit.scaffold import scaffold_files
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    spec = load_text(scaffold_files(name)["platform.yaml"], "platform.yaml")
    return platform_repository(name, {env: validated(spec, env) for env in spec.data["environments"]})
