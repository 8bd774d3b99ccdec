"""Options and helpers shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from alicerce.spec.loader import Document

SpecArg = Annotated[Path, typer.Argument(help="Platform spec file.")]
DEFAULT_SPEC = Path("platform.yaml")

EnvOption = Annotated[str, typer.Option("--env", "-e", help="Environment name.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace files edited, removed or added in the output tree; what you wrote is kept under .alicerce/displaced/.",
    ),
]


def load(spec: Path) -> Document:
    """Load a spec file with every guard (errors raise SpecInvalid)."""
    from alicerce.spec.loader import load_file

    return load_file(spec, str(spec))
