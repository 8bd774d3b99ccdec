"""`alicerce rules`: every cross-field rule with its id, so errors and waivers can be looked up."""

from __future__ import annotations

import json

import typer

from alicerce.cli.common import JsonOption


def register(app: typer.Typer) -> None:
    app.command("rules")(rules)


def rules(as_json: JsonOption = False) -> None:
    """List the validation rules (ids, names, what they check, whether a waiver may skip them)."""
    from alicerce.rules import all_rules

    found = all_rules()
    if as_json:
        print(json.dumps([{"id": r.id, "name": r.name, "summary": r.summary, "waivable": r.waivable} for r in found.values()], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "name", "checks", "waivable", title="Cross-field rules")
    for r in found.values():
        table.add_row(r.id, r.name, r.summary, "yes" if r.waivable else "")
    Console().print(table)
