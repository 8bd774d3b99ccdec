"""`alicerce validate`: every error in a spec, located, before anything is deployed."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, SpecArg
from alicerce.cli.errors import UsageError, user_errors


class Format(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"  # SARIF 2.1.0 for code scanning


EPILOG = """\b
Examples:
  alicerce validate                              ./platform.yaml, every environment
  alicerce validate platform.yaml --env prod     one environment
  alicerce validate --format json                the errors as data, for editors and CI
"""


def register(app: typer.Typer) -> None:
    app.command("validate", epilog=EPILOG)(validate)


@user_errors(json_flag="output_format")
def validate(
    spec: SpecArg = DEFAULT_SPEC,
    env: Annotated[str | None, typer.Option("--env", "-e", help="Check one environment only.")] = None,
    all_envs: Annotated[bool, typer.Option("--all-envs", help="Check every environment (the default).")] = False,
    output_format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> None:
    """Check a platform spec: schema, every environment's overrides, and cross-field rules.

    Exit code 0 when valid, 2 when the spec has errors, 1 on an internal error.
    """
    from alicerce.cli.fastpath import run_validate
    from alicerce.cli.result_cache import Request

    if env is not None and all_envs:
        raise UsageError("--env and --all-envs exclude each other")
    result = run_validate(Request(str(spec), env, output_format.value))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.code:
        raise typer.Exit(result.code)
