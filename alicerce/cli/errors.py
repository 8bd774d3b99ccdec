"""One place where user mistakes become a clean message and exit code 2.

Anything else is a bug: it keeps its traceback and exits 1.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from alicerce.emit.errors import EmitError, OutputError
from alicerce.spec.errors import SpecError, SpecInvalid, render_report
from alicerce.spec.text import escaped

P = ParamSpec("P")
R = TypeVar("R")

EXIT_INVALID = 2


class UsageError(Exception):
    """A wrong command-line value (unknown environment, existing directory, ...)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def terminal_text(text: object) -> str:
    """``text`` for a terminal: its lines kept, every other control, invisible or bidi character written as an escape.
    Messages quote command-line values (paths, --base, rule ids) and a terminal would act on an escape code in them."""
    return "\n".join(escaped(line, limit=None) for line in str(text).split("\n"))


def print_errors(errors: list[SpecError], as_json: bool = False) -> None:
    out, err = render_report(errors, as_json)
    sys.stdout.write(out)
    sys.stderr.write(err)


def warn(message: str, hint: str | None = None) -> None:
    """A warning on stderr (also under --format json, whose stdout stays one JSON document)."""
    suffix = f" ({terminal_text(hint)})" if hint else ""
    print(f"warning: {terminal_text(message)}{suffix}", file=sys.stderr)


JSON_FLAGS = ("output_format", "as_json")
"""The parameters through which a command asks for JSON: ``--format`` and the old ``--json``."""


def user_errors(json_flag: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Turn spec errors, usage errors and refused or impossible outputs into messages and exit code 2.

    Under ``--format json`` (or ``json_flag``, another parameter asking for JSON) the error is a JSON
    document on stdout; otherwise it is ``error: message (hint)`` lines on stderr.
    """

    def decorate(command: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(command)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            flags = (*JSON_FLAGS, json_flag) if json_flag else JSON_FLAGS
            as_json = any(kwargs.get(flag) in (True, "json") or getattr(kwargs.get(flag), "value", None) == "json" for flag in flags)
            try:
                return command(*args, **kwargs)
            except SpecInvalid as exc:
                print_errors(exc.errors, as_json)
                raise typer.Exit(EXIT_INVALID) from None
            except (UsageError, OutputError, EmitError) as exc:
                hint = getattr(exc, "hint", None)
                if as_json:
                    document = {"schemaVersion": 1, "error": str(exc), "hint": hint, **getattr(exc, "details", {})}
                    print(json.dumps(document, indent=2))
                else:
                    suffix = f" ({terminal_text(hint)})" if hint else ""
                    print(f"error: {terminal_text(exc)}{suffix}", file=sys.stderr)
                raise typer.Exit(EXIT_INVALID) from None

        return wrapper

    return decorate
