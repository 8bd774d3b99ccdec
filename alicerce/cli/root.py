"""The top level of the command line: its help, `--version`, and options shared by every command."""

from __future__ import annotations

from typing import Annotated

import typer

HELP = """Turn one platform spec into a GPU/ML platform on AWS, on-prem, or both.

\b
Examples:
  alicerce init my-platform        start a platform repository
  alicerce validate                check ./platform.yaml: every error, located
  alicerce plan --env prod         size the platform from its workloads
  alicerce preview --env prod      what the Pulumi program declares, offline
  alicerce rules AL212             what one rule checks, with a passing and a failing example

Shell completion: alicerce --install-completion (bash, zsh, fish, PowerShell).
"""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("alicerce")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        print(f"alicerce {version()}")
        raise typer.Exit()


def root(
    _version: Annotated[
        bool, typer.Option("--version", "-V", help="Print the version and exit.", callback=_show_version, is_eager=True)
    ] = False,
) -> None:
    """Options of the `alicerce` command itself (before any verb)."""
