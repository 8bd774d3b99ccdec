"""`alicerce generate`: write the generated tree (ansible/ for on-prem sites, .alicerce/ manifest)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, JsonOption, SpecArg, load
from alicerce.cli.errors import UsageError, user_errors

OutOption = Annotated[Path, typer.Option("--out", "-o", help="Output folder (replaced atomically).")]
CheckOption = Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 listing stale files when OUT differs from the spec.")]
CiDirOption = Annotated[
    Path | None, typer.Option("--ci-dir", help="Also write (or --check) the ci/ workflows here, e.g. .github/workflows.")
]


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)


@user_errors(json_flag="as_json")
def generate(
    *,
    env: EnvOption,
    spec: SpecArg = DEFAULT_SPEC,
    out: OutOption = Path("out"),
    as_json: JsonOption = False,
    check: CheckOption = False,
    ci_dir: CiDirOption = None,
) -> None:
    """Write every generated artifact of one environment into OUT: deterministic bytes, atomically.

    With --check nothing is written: exit 1 listing the stale files when OUT (or CI_DIR) differs from
    what the spec produces, 0 when it matches. --ci-dir also writes the ci/ workflows there.
    """
    from alicerce.emit.errors import EmitError
    from alicerce.emit.stale import write_workflows
    from alicerce.emit.tree import render_tree, write_tree
    from alicerce.rules.validate import validated

    platform = validated(load(spec), env)
    try:
        files = render_tree(platform)
    except EmitError as exc:
        raise UsageError(str(exc)) from None
    if ci_dir is not None and ci_dir.resolve().is_relative_to(out.resolve()):
        raise UsageError(f"--ci-dir {ci_dir} is inside --out {out}", "the workflows go outside the generated tree, e.g. .github/workflows")
    if check:
        raise typer.Exit(report_stale(out, files, ci_dir, as_json))
    write_tree(out, files)
    if ci_dir is not None:
        write_workflows(ci_dir, files)
    if as_json:
        print(json.dumps({"out": str(out), "files": len(files)}, indent=2))
    else:
        subtrees = sorted({path.split("/", 1)[0] for path in files})
        print(f"wrote {len(files)} files to {out}/ ({', '.join(subtrees)})")


def report_stale(out: Path, files: dict[str, str], ci_dir: Path | None, as_json: bool) -> int:
    """Print what `generate --check` found; the exit code (1: stale files, 0: up to date)."""
    from alicerce.emit.stale import stale_files

    stale = stale_files(out, files, ci_dir)
    if as_json:
        print(json.dumps({"out": str(out), "stale": [{"path": s.path, "why": s.why} for s in stale]}, indent=2))
    elif stale:
        print(f"{len(stale)} generated file(s) do not match the spec (run the same command without --check):", file=sys.stderr)
        print("\n".join(s.line() for s in stale), file=sys.stderr)
    else:
        print(f"{out}/ matches the spec")
    return 1 if stale else 0
