"""The `alicerce` command line: one module per verb, registered here.

Command modules import their heavy dependencies inside the command body, and a plain
``alicerce validate`` is served before the CLI framework loads (see fastpath), from the result
cache when the spec is unchanged. Validation never imports Pulumi or Ansible.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer


def build_app() -> typer.Typer:
    import typer

    from alicerce.cli import apply, catalog, diff, generate, init, plan, preview, rules, schema, show, validate, versions

    app = typer.Typer(
        name="alicerce",
        help="Turn one platform spec into a GPU/ML platform on AWS, on-prem, or both.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
    )
    for module in (validate, show, plan, preview, schema, catalog, init, rules, generate, apply, diff, versions):
        module.register(app)
    return app


def main() -> None:
    from alicerce.cli.fastpath import serve

    code = serve(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    build_app()()
