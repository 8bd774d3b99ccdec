"""`alicerce generate`: write the generated tree (ansible/ for on-prem sites, .alicerce/ manifest)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, ForceOption, SpecArg, choose_environment, load
from alicerce.cli.errors import user_errors, warn
from alicerce.cli.output import Format, FormatOption, JsonAlias, print_json, wants_json

OutOption = Annotated[
    Path, typer.Option("--out", "-o", help="Output folder: new, empty, or generated before (it holds .alicerce/manifest.json).")
]


EPILOG = """\b
Examples:
  alicerce generate --env prod --out out/prod      the tree for prod (ansible/ per on-prem site, .alicerce/)
  alicerce generate --env prod --out out/prod --force
                                                   replace files edited by hand (yours are kept in .alicerce/displaced/)
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
    output_format: FormatOption = Format.text,
    as_json: JsonAlias = False,
) -> None:
    """Write every generated artifact of one environment into OUT: deterministic bytes, swapped in atomically.

    OUT must be new, empty, or a folder generate wrote before. Files changed there since stop the
    run unless --force; ansible/host_vars/ is yours and is carried into every new tree.
    """
    from alicerce.emit.tree import check_output, render_tree, write_tree
    from alicerce.rules.validate import validated

    as_json = wants_json(output_format, as_json)
    check_output(out, [spec])  # a refused folder is refused before the spec is even read
    document = load(spec)
    files = render_tree(validated(document, choose_environment(document, env)))
    report = write_tree(out, files, force=force, protected=[spec])
    for warning in report.warnings:
        warn(warning)
    if as_json:
        print_json({"schemaVersion": 1, "out": str(out), "files": len(files), "kept": report.kept, "displaced": report.displaced})
        return
    subtrees = sorted({path.split("/", 1)[0] for path in files})
    print(f"wrote {len(files)} files to {out}/ ({', '.join(subtrees)})")
    if report.kept:
        print(f"kept yours: {', '.join(report.kept)}")
    if report.displaced:
        print(f"replaced {len(report.displaced)} changed files; what you had is in {out}/{report.displaced_to}")
