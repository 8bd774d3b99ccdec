"""`alicerce preview`: what `pulumi up` would declare for one environment, computed offline."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, SpecArg, choose_environment, load, require_kubeconfigs
from alicerce.cli.errors import user_errors
from alicerce.cli.output import Format, FormatOption, JsonAlias, console, print_json, wants_json

if TYPE_CHECKING:
    from rich.tree import Tree

    from alicerce.run.preview import PlannedResource, PreviewResult

LABEL = "offline plan, not a diff against live state"


EPILOG = """\b
Examples:
  alicerce preview --env prod                  every resource by component, counted by type
  alicerce preview --env prod --format json    every resource with its inputs, for a script or a diff
"""


def register(app: typer.Typer) -> None:
    app.command("preview", epilog=EPILOG)(preview)


@user_errors()
def preview(
    env: EnvOption = None, spec: SpecArg = DEFAULT_SPEC, output_format: FormatOption = Format.text, as_json: JsonAlias = False
) -> None:
    """Run the Pulumi program of one environment under Pulumi's mock engine and show what it declares.

    No credentials, network or Pulumi CLI are used: this is an offline plan of the resources the
    program creates, not a diff against live state (run `pulumi preview` for that).
    """
    from rich.console import Console

    from alicerce.rules.validate import validated

    as_json = wants_json(output_format, as_json)
    document = load(spec)
    env = choose_environment(document, env)
    rp = validated(document, env)
    from alicerce.run.preview import run_preview

    require_kubeconfigs(document, rp)

    if as_json:
        result = run_preview(rp)
        print_json(document_of(result))
        return
    err = Console(stderr=True)
    with err.status(f"planning {rp.name} {env} offline under the Pulumi mock engine"):
        result = run_preview(rp)
    out = console()
    out.print(render_tree(result))
    if unpinned := result.unpinned_addons():
        out.print(
            f"[yellow]unpinned EKS add-ons[/] (AWS's default version for the cluster's minor when `pulumi up` runs;"
            f" pin them under versions.eksAddons): {', '.join(unpinned)}"
        )


def counts(result: PreviewResult) -> dict[str, int]:
    """What the engine would create (resources) and alicerce's own grouping (components): text and JSON say the same."""
    components = sum(1 for r in result.resources if r.component)
    return {"resources": len(result.resources) - components, "components": components}


def document_of(result: PreviewResult) -> dict[str, Any]:
    return {"schemaVersion": 1, "platform": result.platform, "counts": counts(result), **result.to_json()}


def render_tree(result: PreviewResult) -> Tree:
    """alicerce components as branches, each with what it declares counted by type."""
    from rich.tree import Tree

    n = counts(result)
    heading = f"{n['resources']} resources in {n['components']} components"
    root = Tree(f"[bold]{result.platform}[/] [cyan]{result.environment}[/]: {heading}  [yellow]({LABEL})[/]")
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
