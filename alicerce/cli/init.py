"""`alicerce init`: start a platform repository that validates, previews, generates and deploys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alicerce.cli.errors import UsageError, user_errors
from alicerce.cli.output import Format, FormatOption, print_json, wants_json
from alicerce.spec.text import escaped

if TYPE_CHECKING:
    from alicerce.spec.loader import Document

# the platform's name in a spec's metadata section (``--name`` renames an example)
METADATA_NAME = re.compile(r"^(metadata:\n(?:[ \t#].*\n|\n)*?[ \t]+name:[ \t]*)[^\s#]+", re.M)

EPILOG = """\b
Examples:
  alicerce init my-platform                  a new folder: spec, Pulumi project and stacks, generated tree, CI
  alicerce init . --name my-platform         into the current folder (a fresh clone), refused if any file exists
  alicerce init dc --target onprem           servers you own: kubespray builds the cluster (alicerce apply onprem)
  alicerce init lab --target hybrid          an on-prem training site and an AWS inference site
  alicerce init sp --example onprem-superpod start from a reference example (its name unless --name)
  alicerce init . --fill                     write only the missing files, never replace one (around the
                                             platform.yaml already there, if any)
"""

TargetOption = Annotated[
    str,
    typer.Option(
        "--target",
        help="The starter spec: aws (an EKS cluster), onprem (servers you own: kubespray control plane, InfiniBand, "
        "a GPU pool), hybrid (both), or another registered target's.",
    ),
]
ExampleOption = Annotated[
    str | None,
    typer.Option("--example", help="Start from a reference example instead of a starter (the README lists them)."),
]
FillOption = Annotated[
    bool, typer.Option("--fill", help="In an existing folder, write only the missing files (existing ones are never replaced).")
]


def register(app: typer.Typer) -> None:
    app.command("init", epilog=EPILOG)(init)


@user_errors()
def init(
    *,
    directory: Annotated[Path, typer.Argument(help="Folder for the platform repository: new, or existing (see --fill).")],
    name: Annotated[str | None, typer.Option(help="Platform name (a DNS label); my-platform, or the example's own.")] = None,
    fill: FillOption = False,
    target: TargetOption | None = None,
    example: ExampleOption = None,
    output_format: FormatOption = Format.text,
) -> None:
    """Create a platform repository in DIRECTORY: a starter platform.yaml, the Pulumi project (two stacks per
    environment), each environment's generated tree, the CI workflows, a pre-commit config, a README quickstart.

    No file is ever replaced: if any of them exists, nothing is written (exit 2) unless --fill, which writes only
    the missing ones, built around the folder's own platform.yaml when it has one.
    """
    from alicerce.emit.files import create_tree
    from alicerce.emit.scaffold import examples, starters, valid_name

    if example is not None and target is not None:
        raise UsageError("--example and --target both pick the spec to start from", "give one of them")
    if example is not None and example not in examples():
        raise UsageError(f'no example "{escaped(example)}"', f"use one of: {', '.join(examples())}")
    if target is not None and target not in starters():
        raise UsageError(f'no starter for target "{escaped(target)}"', f"use one of: {', '.join(starters())}")
    if name is not None and not valid_name(name):
        raise UsageError(f'"{escaped(name)}" is not a valid platform name', "use lowercase letters, digits and '-'")
    yours = directory / "platform.yaml"
    if fill and yours.is_file():
        if example is not None:
            raise UsageError(f"{escaped(str(yours), limit=None)} exists: --fill builds around it", "drop --example, or init another folder")
        # filling a repository that already has its spec: the stacks, trees and workflows are those of that spec
        files, used = repository_around(yours)
    elif example is not None:
        files, used = example_repository(example, name)
    else:
        files, used = starter_repository(name or "my-platform", target or "aws")
    kept = create_tree(directory, files, fill=fill)
    if wants_json(output_format):
        print_json({"schemaVersion": 1, "directory": str(directory), "written": len(files) - len(kept), "kept": kept})
        return
    print(f"wrote {len(files) - len(kept)} files to {escaped(str(directory), limit=None)}/")
    if kept:
        print(f"kept yours ({len(kept)}): {', '.join(kept)}")
    print(f"next: cd {escaped(str(directory), limit=None)} and follow README.md ({_next_steps(used)})")


def _next_steps(used: frozenset[str]) -> str:
    """The commands the README walks through, `alicerce apply <target>` for each target of the spec that deploys by apply."""
    from alicerce.targets import TARGETS

    applied = [t.name for t in TARGETS if t.applies and t.name in used]
    return ", ".join(["alicerce validate", "alicerce preview", *(f"alicerce apply {t}" for t in applied), "pulumi preview"])


# each builder returns the repository's files and the targets its spec's sites use (for the next steps)
Repository = tuple[dict[str, str], frozenset[str]]


def starter_repository(name: str, starter: str = "aws") -> Repository:
    """The files of a new repository around a starter spec (``init --target``), every environment resolved from it."""
    from alicerce.emit.scaffold import starter_spec
    from alicerce.spec.loader import load_text

    return _repository(name, load_text(starter_spec(name, starter), "platform.yaml"), starter)


def example_repository(example: str, name: str | None) -> Repository:
    """The files of a new repository around a reference example (``init --example``), renamed to ``name`` if given."""
    from alicerce.emit.scaffold import example_spec
    from alicerce.spec.loader import load_text

    text = example_spec(example)
    if name is not None:
        text = METADATA_NAME.sub(lambda m: m.group(1) + name, text, count=1)
    document = load_text(text, "platform.yaml")
    files, used = _repository(str(document.data["metadata"]["name"]), document)
    return {**files, "platform.yaml": text}, used


def repository_around(spec_path: Path) -> Repository:
    """The files of a repository around an existing spec (its errors are reported, located, as `validate` does)."""
    from alicerce.rules.validate import check
    from alicerce.spec.errors import SpecInvalid
    from alicerce.spec.loader import load_file

    document = load_file(spec_path, str(spec_path))
    if errors := check(document).errors:
        raise SpecInvalid(errors)
    return _repository(str(document.data["metadata"]["name"]), document)


def _repository(name: str, document: Document, starter: str = "aws") -> Repository:
    from alicerce.emit.repository import platform_repository
    from alicerce.rules.validate import validated

    resolved = {env: validated(document, env) for env in document.data["environments"]}
    used = frozenset(site.spec.provider for rp in resolved.values() for site in rp.sites)
    return platform_repository(name, resolved, starter), used
