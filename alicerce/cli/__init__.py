"""The `alicerce` command line: one module per verb, registered here.

Command modules import their heavy dependencies inside the command body, so that
``alicerce validate`` starts fast (it never imports Pulumi or Ansible).
"""

from __future__ import annotations

import typer

from alicerce.cli import catalog, init, rules, schema, show, validate

app = typer.Typer(
    name="alicerce",
    help="Turn one platform spec into a GPU/ML platform on AWS, on-prem, or both.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

for module in (validate, show, schema, catalog, init, rules):
    module.register(app)


def main() -> None:
    app()
