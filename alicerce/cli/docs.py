"""`alicerce docs`: the spec reference, one page per section, from the models' own descriptions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.errors import UsageError, user_errors

EPILOG = """\b
Examples:
  alicerce docs nodePools                 every field of a node pool, in the terminal
  alicerce docs --output docs/spec        write README.md and one page per section
"""


def register(app: typer.Typer) -> None:
    app.command("docs", epilog=EPILOG)(docs)


@user_errors()
def docs(
    section: Annotated[
        str | None, typer.Argument(metavar="[SECTION]", help="One top-level key, e.g. nodePools.", show_default=False)
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write every page into this folder.")] = None,
) -> None:
    """Print the reference of one spec section, or write every section's page (Markdown) into a folder."""
    from alicerce.spec.docs import page, pages, sections
    from alicerce.spec.text import escaped

    if output is not None:
        from alicerce.emit.files import ensure_folder, write_text_atomic

        ensure_folder(output, output)
        written = pages()
        for name, text in written.items():
            # alicerce's own pages: a link in their place is replaced, what it points to never written
            write_text_atomic(output / name, text, through_links=False)
        print(f"wrote {len(written)} pages to {escaped(str(output), limit=None)}/")
        return
    if section is None:
        from alicerce.spec.docs import index

        print(index(), end="")
        return
    if section not in sections():
        from alicerce.spec.errors import did_you_mean

        raise UsageError(f'no spec section "{section}"', did_you_mean(section, sections()) or f"one of: {', '.join(sections())}")
    print(page(section), end="")
