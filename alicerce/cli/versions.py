"""`alicerce versions`: the bill of materials of one environment, with where each pin comes from."""

from __future__ import annotations

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, SpecArg, choose_environment, load
from alicerce.cli.errors import user_errors
from alicerce.cli.output import Column, Format, FormatOption, JsonAlias, Table, camel_keys, console, print_json, print_table, wants_json

EPILOG = """\b
Examples:
  alicerce versions --env prod                    every version prod runs and where its pin comes from
  alicerce versions --env prod --format json | jq '.versions[] | select(.pinned | not)'
                                                  what nobody pins (picked at deploy time)
"""


def register(app: typer.Typer) -> None:
    app.command("versions", epilog=EPILOG)(versions)


@user_errors()
def versions(
    env: EnvOption = None, spec: SpecArg = DEFAULT_SPEC, output_format: FormatOption = Format.text, as_json: JsonAlias = False
) -> None:
    """Every version ENV runs (Kubernetes, charts, EKS add-ons, driver, images, Ansible, node packages) and its source.

    Anything nobody pins is listed as unpinned, with who picks its version at deploy time.
    """
    from alicerce.emit.bom import bill_of_materials
    from alicerce.rules.validate import validated

    document = load(spec)
    name = choose_environment(document, env)
    rp = validated(document, name)
    pins = bill_of_materials(rp)
    if wants_json(output_format, as_json):
        print_json({"schemaVersion": 1, "environment": name, "versions": [camel_keys(p.to_json()) for p in pins]})
        return
    table = Table(
        f"{rp.name} {name}: bill of materials",
        [Column("kind"), Column("component", key=True), Column("version", key=True), Column("from"), Column("sites", key=True)],
    )
    for pin in pins:
        table.add(pin.kind, pin.component, pin.version or "unpinned", pin.source, ", ".join(pin.sites) or "all")
    out = console()
    print_table(table, out)
    unpinned = [p.component for p in pins if not p.pinned]
    if unpinned:
        out.print(f"{len(unpinned)} unpinned: {', '.join(unpinned)}", markup=False)


__all__ = ["register", "versions"]
