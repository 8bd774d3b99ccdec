"""`alicerce preview`: what `pulumi up` would declare for one environment, computed offline."""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import TYPE_CHECKING

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, JsonOption, SpecArg, load
from alicerce.cli.errors import user_errors

if TYPE_CHECKING:
    from rich.tree import Tree

    from alicerce.run.preview import PlannedResource, PreviewResult

LABEL = "offline plan, not a diff against live state"


def register(app: typer.Typer) -> None:
    app.command("preview")(preview)


@user_errors(json_flag="as_json")
def preview(env: EnvOption, spec: SpecArg = DEFAULT_SPEC, as_json: JsonOption = False) -> None:
    """Run the Pulumi program of one environment under Pulumi's mock engine and show what it declares.

    No credentials, network or Pulumi CLI are used: this is an offline plan of the resources the
    program creates, not a diff against live state (run `pulumi preview` for that).
    """
    from rich.console import Console

    from alicerce.rules.validate import validated

    rp = validated(load(spec), env)
    from alicerce.run.preview import run_preview

    if as_json:
        result = run_preview(rp)
        sys.stdout.write(json.dumps(result.to_json(), indent=2, sort_keys=False) + "\n")
        return
    err = Console(stderr=True)
    with err.status(f"planning {rp.name} {env} offline under the Pulumi mock engine"):
        result = run_preview(rp)
    out = Console()
    out.print(render_tree(result))
    if unpinned := result.unpinned_addons():
        out.print(
            f"[yellow]unpinned EKS add-ons[/] (AWS's default version for the cluster's minor when `pulumi up` runs;"
            f" pin them under versions.eksAddons): {', '.join(unpinned)}"
        )


def render_tree(result: PreviewResult) -> Tree:
    """alicerce components as branches, each with what it declares counted by type."""
    from rich.tree import Tree

    total = sum(1 for r in result.resources if not r.component)
    root = Tree(f"[bold]{result.platform}[/] [cyan]{result.environment}[/]: {total} resources  [yellow]({LABEL})[/]")
    children: dict[str | None, list[PlannedResource]] = {}
    for r in result.resources:
        children.setdefault(r.parent, []).append(r)

    def count(name: str) -> int:
        return sum(count(c.name) if c.component else 1 for c in children.get(name, []))

    def add(branch: Tree, parent: str | None) -> None:
        kids = children.get(parent, [])
        for comp in (r for r in kids if r.component):
            add(branch.add(f"[bold]{comp.name}[/] [dim]{comp.type}[/]  {count(comp.name)} resources"), comp.name)
        for typ, n in sorted(Counter(r.type for r in kids if not r.component).items()):
            branch.add(f"{typ} [green]x{n}[/]")
        for group in (r for r in kids if "objs" in r.inputs):
            kinds = Counter(str(o.get("kind")) for o in group.inputs["objs"])
            shown = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
            branch.add(f"[dim]{group.name}: {sum(kinds.values())} objects ({shown})[/]")

    add(root, None)
    return root
