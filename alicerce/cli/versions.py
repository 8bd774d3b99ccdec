"""`alicerce versions`: the bill of materials of one environment, with where each pin comes from."""

from __future__ import annotations

import json

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, JsonOption, SpecArg, load
from alicerce.cli.errors import user_errors


def register(app: typer.Typer) -> None:
    app.command("versions")(versions)


@user_errors(json_flag="as_json")
def versions(env: EnvOption, spec: SpecArg = DEFAULT_SPEC, as_json: JsonOption = False) -> None:
    """Every version ENV runs (Kubernetes, charts, EKS add-ons, driver, images, Ansible, node packages) and its source.

    Anything nobody pins is listed as unpinned, with who picks its version at deploy time.
    """
    from alicerce.emit.bom import bill_of_materials
    from alicerce.rules.validate import validated

    rp = validated(load(spec), env)
    pins = bill_of_materials(rp)
    if as_json:
        print(json.dumps({"environment": env, "versions": [p.to_json() for p in pins]}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("kind", "component", "version", "from", "sites", title=f"{rp.name} {env}: bill of materials")
    for pin in pins:
        table.add_row(pin.kind, pin.component, pin.version or "[yellow]unpinned[/]", pin.source, ", ".join(pin.sites) or "all")
    console = Console()
    console.print(table)
    unpinned = [p.component for p in pins if not p.pinned]
    if unpinned:
        console.print(f"[yellow]{len(unpinned)} unpinned[/]: {', '.join(unpinned)}")
