"""`alicerce generate`: write the generated tree (ansible/ for on-prem sites, .alicerce/ manifest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, ForceOption, JsonOption, SpecArg, load
from alicerce.cli.errors import user_errors, warn

OutOption = Annotated[
    Path, typer.Option("--out", "-o", help="Output folder: new, empty, or generated before (it holds .alicerce/manifest.json).")
]


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)


@user_errors(json_flag="as_json")
def generate(
    env: EnvOption,
    spec: SpecArg = DEFAULT_SPEC,
    out: OutOption = Path("out"),
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Write every generated artifact of one environment into OUT: deterministic bytes, swapped in atomically.

    OUT must be new, empty, or a folder generate wrote before. Files changed there since stop the
    run unless --force; ansible/host_vars/ is yours and is carried into every new tree.
    """
    from alicerce.emit.tree import check_output, render_tree, write_tree
    from alicerce.rules.validate import validated

    check_output(out, [spec])  # a refused folder is refused before the spec is even read
    files = render_tree(validated(load(spec), env))
    report = write_tree(out, files, force=force, protected=[spec])
    for warning in report.warnings:
        warn(warning)
    if as_json:
        print(json.dumps({"out": str(out), "files": len(files), "kept": report.kept, "displaced": report.displaced}, indent=2))
        return
    subtrees = sorted({path.split("/", 1)[0] for path in files})
    print(f"wrote {len(files)} files to {out}/ ({', '.join(subtrees)})")
    if report.kept:
        print(f"kept yours: {', '.join(report.kept)}")
    if report.displaced:
        print(f"replaced {len(report.displaced)} changed files; what you had is in {out}/{report.displaced_to}")
