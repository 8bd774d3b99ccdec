"""`alicerce rules`: every error id (file, schema, overrides, cross-field rules), and one rule explained."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from alicerce.cli.errors import UsageError, user_errors
from alicerce.cli.output import Column, Format, FormatOption, JsonAlias, Table, console, print_json, print_table, wants_json

EPILOG = """\b
Examples:
  alicerce rules                      every id: AL0xx the file, AL1xx the schema and overrides, AL2xx cross-field
  alicerce rules AL212                what AL212 checks, a passing and a failing example, and the error it gives
  alicerce rules --format json        the same list for scripts
"""


def register(app: typer.Typer) -> None:
    app.command("rules", epilog=EPILOG)(rules)


def _stage(rule_id: str) -> str:
    return {"0": "file", "1": "schema"}.get(rule_id[2], "cross-field")


def all_ids() -> list[dict[str, Any]]:
    """Every error id alicerce reports, in id order, from the two tables that define them."""
    from alicerce.rules import all_rules
    from alicerce.spec.rule_ids import FILE_AND_SCHEMA_IDS

    rows = [
        {"id": e.id, "name": e.name, "summary": e.summary, "waivable": False, "stage": _stage(e.id), "warning": False}
        for e in FILE_AND_SCHEMA_IDS
    ]
    rows += [
        {"id": r.id, "name": r.name, "summary": r.summary, "waivable": r.waivable, "stage": "cross-field", "warning": r.warning}
        for r in all_rules().values()
    ]
    return sorted(rows, key=lambda row: str(row["id"]))


@user_errors()
def rules(
    rule_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="One rule to explain, e.g. AL212.", show_default=False)] = None,
    output_format: FormatOption = Format.text,
    as_json: JsonAlias = False,
) -> None:
    """List every error id and what it checks, or explain one rule with examples from its fixtures."""
    as_json = wants_json(output_format, as_json)
    ids = all_ids()
    if rule_id is None:
        if as_json:
            print_json({"schemaVersion": 1, "rules": ids})
            return
        table = Table(
            "Rules (AL0xx the file, AL1xx the schema and overrides, AL2xx cross-field; `alicerce rules ID` explains one)",
            [Column("id", key=True), Column("name", key=True), Column("checks"), Column("waivable")],
        )
        for row in ids:
            table.add(row["id"], row["name"], row["summary"], "yes" if row["waivable"] else "")
        print_table(table)
        return
    by_id = {str(row["id"]): row for row in ids}
    wanted = rule_id.strip().upper()
    if wanted not in by_id:
        from alicerce.spec.errors import did_you_mean

        raise UsageError(f'no rule "{rule_id}"', did_you_mean(wanted, list(by_id)) or "`alicerce rules` lists them")
    explain(by_id[wanted], as_json)


def explain(rule: dict[str, Any], as_json: bool) -> None:
    """One rule: what it checks and, for a cross-field rule, its fixtures with the errors they give."""
    from alicerce.rules.examples import examples, patched
    from alicerce.rules.validate import check

    cases = []
    for example in examples(str(rule["id"])):
        checked = None if example.kind == "pass" else check(patched(example.rule, example.kind, example.index))
        errors = [] if checked is None else checked.errors + checked.warnings
        hits = [e.render_warning() if rule.get("warning") else e.render() for e in errors if e.rule == rule["id"]]
        cases.append({"kind": example.kind, "description": example.description, "patch": example.snippet, "errors": hits})
    if as_json:
        print_json({"schemaVersion": 1, "rule": rule, "examples": cases})
        return
    out = console()
    waivable = "waivable in `waivers`" if rule["waivable"] else "not waivable"
    waivable += ", a warning: validate still passes" if rule.get("warning") else ""
    out.print(f"{rule['id']} {rule['name']} ({rule['stage']}, {waivable})", markup=False)
    out.print(f"  {rule['summary']}", markup=False)
    if not cases:
        out.print("  (no fixture examples: file and schema errors are shown by `alicerce validate` where they occur)", markup=False)
        return
    out.print("  Examples patch the fixture base spec (alicerce/rules/fixtures/_base.yaml):", markup=False)
    for case in cases:
        verdict = "passes" if case["kind"] == "pass" else "fails"
        out.print(f"\n{verdict}: {case['description']}", markup=False)
        for line in str(case["patch"]).splitlines():
            out.print(f"    {line}", markup=False)
        for error in case["errors"]:
            out.print(f"  -> {error}", markup=False)
