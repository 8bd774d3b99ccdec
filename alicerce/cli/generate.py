"""`alicerce generate`: write the generated tree (ansible/, kubernetes/, monitoring/, ci/, reports/, .alicerce/)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, ForceOption, SpecArg, choose_environment, load
from alicerce.cli.errors import UsageError, user_errors, warn
from alicerce.cli.output import Format, FormatOption, JsonAlias, print_json, wants_json
from alicerce.spec.text import escaped

OutOption = Annotated[
    Path, typer.Option("--out", "-o", help="Output folder: new, empty, or generated before (it holds .alicerce/manifest.json).")
]
CheckOption = Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 listing stale files when OUT differs from the spec.")]
CiDirOption = Annotated[
    Path | None, typer.Option("--ci-dir", help="Also write (or --check) the ci/ workflows here, e.g. .github/workflows.")
]


EPILOG = """\b
Examples:
  alicerce generate --env prod --out out/prod      the tree for prod (ansible/, kubernetes/, monitoring/, ci/, reports/)
  alicerce generate --env prod --out out/prod --force
                                                   replace files edited by hand (yours are kept in .alicerce/displaced/)
  alicerce generate --env prod --out generated/prod --ci-dir .github/workflows --check
                                                   in CI: exit 1 listing what is stale, write nothing
"""


def register(app: typer.Typer) -> None:
    app.command("generate", epilog=EPILOG)(generate)


@user_errors()
def generate(
    *,
    env: EnvOption = None,
    spec: SpecArg = DEFAULT_SPEC,
    out: OutOption = Path("out"),
    force: ForceOption = False,
    check: CheckOption = False,
    ci_dir: CiDirOption = None,
    output_format: FormatOption = Format.text,
    as_json: JsonAlias = False,
) -> None:
    """Write every generated artifact of one environment into OUT: deterministic bytes, swapped in atomically.

    OUT must be new, empty, or a folder generate wrote before. Files changed there since stop the
    run unless --force; ansible/host_vars/ is yours and is carried into every new tree. With
    --check nothing is written: exit 1 listing the stale files when OUT (or CI_DIR) differs from what
    the spec produces, 0 when it matches. --ci-dir also writes the ci/ workflows there.
    """
    from alicerce.emit.files import MANIFEST
    from alicerce.emit.stale import workflows
    from alicerce.emit.tree import check_output, check_shared, render_tree, write_shared, write_tree
    from alicerce.rules.validate import validated

    as_json = wants_json(output_format, as_json)
    if ci_dir is not None and Path(os.path.realpath(ci_dir)).is_relative_to(os.path.realpath(out)):  # realpath: no RuntimeError on a loop
        raise UsageError(f"--ci-dir {ci_dir} is inside --out {out}", "the workflows go outside the generated tree, e.g. .github/workflows")
    if not check:
        check_output(out, [spec])  # a refused folder is refused before the spec is even read
    document = load(spec)
    files = render_tree(validated(document, choose_environment(document, env)))
    if check:
        raise typer.Exit(report_stale(out, files, ci_dir, as_json))
    if ci_dir is not None:  # the workflows' refusals come before the tree is written: nothing half done
        check_shared(ci_dir, workflows(files), force=force, protected=[spec])
    report = write_tree(out, files, force=force, protected=[spec])
    ci_report = None
    if ci_dir is not None:
        manifest = json.loads(files[MANIFEST])
        ci_report = write_shared(
            ci_dir, workflows(files), platform=manifest["platform"], environment=manifest["environment"], force=force, protected=[spec]
        )
    for warning in report.warnings:
        warn(warning)
    if as_json:
        print_json({"schemaVersion": 1, "out": str(out), "files": len(files), "kept": report.kept, "displaced": report.displaced})
        return
    subtrees = sorted({path.split("/", 1)[0] for path in files})
    print(f"wrote {len(files)} files to {escaped(str(out), limit=None)}/ ({', '.join(subtrees)})")
    if report.kept:
        print(f"kept yours: {', '.join(report.kept)}")
    if report.displaced:
        print(f"replaced {len(report.displaced)} changed files; what you had is in {escaped(str(out), limit=None)}/{report.displaced_to}")
    if ci_report is not None and ci_report.displaced:
        print(f"replaced {len(ci_report.displaced)} changed workflows; what you had is in {ci_dir}/{ci_report.displaced_to}")


def report_stale(out: Path, files: dict[str, str], ci_dir: Path | None, as_json: bool) -> int:
    """Print what `generate --check` found; the exit code (1: stale files, 0: up to date)."""
    from alicerce.emit.stale import stale_files

    stale = stale_files(out, files, ci_dir)
    if as_json:
        print_json({"schemaVersion": 1, "out": str(out), "stale": [{"path": s.path, "why": s.why} for s in stale]})
    elif stale:
        print(f"{len(stale)} generated file(s) do not match the spec (run the same command without --check):", file=sys.stderr)
        print("\n".join(s.line() for s in stale), file=sys.stderr)
    else:
        print(f"{out}/ matches the spec")
    return 1 if stale else 0
