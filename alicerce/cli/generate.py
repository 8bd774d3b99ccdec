"""`alicerce generate`: write the generated tree (ansible/ for on-prem sites, .alicerce/ manifest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, JsonOption, SpecArg, load
from alicerce.cli.errors import UsageError, user_errors

OutOption = Annotated[Path, typer.Option("--out", "-o", help="Output folder (replaced atomically).")]


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)


@user_errors(json_flag="as_json")
def generate(env: EnvOption, spec: SpecArg = DEFAULT_SPEC, out: OutOption = Path("out"), as_json: JsonOption = False) -> None:
    """Write every generated artifact of one environment into OUT: deterministic bytes, atomically."""
    from alicerce.emit.errors import EmitError
    from alicerce.emit.tree import render_tree, write_tree
    from alicerce.rules.validate import validated

    platform = validated(load(spec), env)
    try:
        files = render_tree(platform)
    except EmitError as exc:
        raise UsageError(str(exc)) from None
    write_tree(out, files)
    if as_json:
        print(json.dumps({"out": str(out), "files": len(files)}, indent=2))
    else:
        subtrees = sorted({path.split("/", 1)[0] for path in files})
        print(f"wrote {len(files)} files to {out}/ ({', '.join(subtrees)})")
