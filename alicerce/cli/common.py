"""Options and helpers shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alicerce.cli.errors import UsageError

if TYPE_CHECKING:
    from alicerce.resolve.model import ResolvedPlatform
    from alicerce.spec.loader import Document

SpecArg = Annotated[Path, typer.Argument(help="Platform spec file (default: ./platform.yaml).", show_default=False)]
DEFAULT_SPEC = Path("platform.yaml")

EnvOption = Annotated[
    str | None, typer.Option("--env", "-e", help="Environment (optional when the spec has only one).", show_default=False)
]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace files edited, removed or added in the output tree; what you wrote is kept under .alicerce/displaced/.",
    ),
]


def load(spec: Path) -> Document:
    """Load a spec file with every guard (errors raise SpecInvalid)."""
    from alicerce.spec.loader import load_file

    return load_file(spec, str(spec))


def environment_names(document: Document) -> list[str]:
    environments = document.data.get("environments") if isinstance(document.data, dict) else None
    return [str(name) for name in environments] if isinstance(environments, dict) else []


def choose_environment(document: Document, env: str | None) -> str:
    """``env`` when given; else the spec's only environment; several need ``--env``."""
    if env is not None:
        return env
    names = environment_names(document)
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(f"{document.file} has no environments", "add one under environments:")
    raise UsageError(f"{document.file} has {len(names)} environments ({', '.join(names)})", "choose one with --env")


def require_kubeconfigs(document: Document, rp: ResolvedPlatform) -> None:
    """The offline plan (preview, diff) runs the Kubernetes layer, which reaches an existing cluster only through
    the secret its site names: a site without one is a missing key, located at its site (exit 2), not a crash
    of the Pulumi program."""
    from alicerce.emit.pulumi.stack import missing_kubeconfigs
    from alicerce.spec.errors import SpecError, SpecInvalid
    from alicerce.spec.loader import locate

    errors = []
    for index, name in missing_kubeconfigs(rp):
        path = ("environments", rp.environment, "sites", index, "kubeconfigSecret")
        span, _ = locate(document.pos, path)
        message = f"site {name} needs kubeconfigSecret for the Kubernetes layer that preview and pulumi up run"
        hint = "name the Pulumi secret config key that holds its kubeconfig, e.g. kubeconfigSecret: dc1Kubeconfig"
        errors.append(SpecError(span, "AL101", path, message, hint, None, rp.environment))
    if errors:
        raise SpecInvalid(errors)
