"""`alicerce diff`: what a spec change does to each environment, as a pull request comment or JSON."""

from __future__ import annotations

import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alicerce.cli.common import load, require_kubeconfigs
from alicerce.cli.errors import UsageError, user_errors
from alicerce.cli.output import camel_keys, print_json

if TYPE_CHECKING:
    from alicerce.spec.loader import Document


class Format(str, Enum):
    markdown = "markdown"
    json = "json"


EPILOG = """\b
Examples:
  alicerce diff --base main                         what this branch's platform.yaml changes, as a PR comment
  alicerce diff old.yaml new.yaml --env prod        two spec files, one environment
  alicerce diff --base main --format json --no-plan the resolved changes only, for a script
"""


def register(app: typer.Typer) -> None:
    app.command("diff", epilog=EPILOG)(diff)


def base_document(ref: str, spec: Path) -> Document | None:
    """The spec as it is at git revision ``ref`` (None when the file does not exist there)."""
    from alicerce.spec.loader import load_text

    folder = Path(os.path.realpath(spec)).parent
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True, check=True).stdout.strip()
        relative = Path(os.path.realpath(spec)).relative_to(os.path.realpath(top)).as_posix()
        subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=folder, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError, ValueError):
        raise UsageError(
            f"{ref} is not a revision of a git repository holding {spec}", "run it inside the repository; try --base main"
        ) from None
    shown = subprocess.run(["git", "show", f"{ref}:{relative}"], cwd=folder, capture_output=True, check=False)
    if shown.returncode != 0:
        return None
    return load_text(shown.stdout.decode("utf-8", errors="replace"), f"{ref}:{relative}")


@user_errors(json_flag="output_format")
def diff(
    specs: Annotated[list[Path] | None, typer.Argument(help="OLD_SPEC NEW_SPEC, or one spec with --base (default platform.yaml).")] = None,
    base: Annotated[str | None, typer.Option("--base", help="Compare the spec with itself at this git revision, e.g. main.")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="Only this environment (repeatable; default: all).")] = None,
    output_format: Annotated[Format, typer.Option("--format", "-f", help="markdown (a PR comment) or json.")] = Format.markdown,
    plan: Annotated[bool, typer.Option("--plan/--no-plan", help="Also diff the offline resource plan (the Pulumi mock engine).")] = True,
) -> None:
    """What a spec change does: pools, GPU capacity, quotas, storage, cost, and every destructive resource change."""

    from alicerce.rules.validate import validated
    from alicerce.run.diff import diff_environment, planned, render_markdown

    paths = specs or [Path("platform.yaml")]
    if base is not None:
        if len(paths) != 1:
            raise UsageError("with --base give one spec (the new one)", "alicerce diff --base main platform.yaml")
        old_doc, new_doc, title = base_document(base, paths[0]), load(paths[0]), f"{base} → working tree ({paths[0]})"
    elif len(paths) == 2:
        old_doc, new_doc, title = load(paths[0]), load(paths[1]), f"{paths[0]} → {paths[1]}"
    else:
        raise UsageError("give OLD_SPEC NEW_SPEC, or one spec with --base GITREF")
    old_envs = list(old_doc.data.get("environments") or {}) if old_doc is not None and isinstance(old_doc.data, dict) else []
    new_envs = list(new_doc.data.get("environments") or {}) if isinstance(new_doc.data, dict) else []
    names = [*new_envs, *(e for e in old_envs if e not in new_envs)]
    for wanted in env or []:
        if wanted not in names:
            raise UsageError(f'no environment "{wanted}" in either spec', f"choose from {', '.join(names)}")
    results = []
    for name in env or names:
        old = validated(old_doc, name) if old_doc is not None and name in old_envs else None
        new = validated(new_doc, name) if name in new_envs else None
        if plan:  # the offline plan runs the Kubernetes layer of both sides
            for document, rp in ((old_doc, old), (new_doc, new)):
                if document is not None and rp is not None:
                    require_kubeconfigs(document, rp)
        results.append(diff_environment(name, old, new, plan=planned if plan else None))
    if output_format is Format.json:
        print_json({"schemaVersion": 1, "title": title, "environments": [camel_keys(d.to_json()) for d in results]})
    else:
        sys.stdout.write(render_markdown(results, title))
