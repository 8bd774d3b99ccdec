"""User errors as data: where, what, why, and what to do about it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from alicerce.spec.record import field, record
from alicerce.spec.text import escaped, redacted, secret_shape

PathElement = str | int
Path = tuple[PathElement, ...]


def format_path(path: Sequence[PathElement]) -> str:
    """``("nodePools", 1, "accelerator")`` -> ``nodePools[1].accelerator``."""
    out = ""
    for element in path:
        if isinstance(element, int):
            out += f"[{element}]"
        elif out:
            out += f".{element}"
        else:
            out = element
    return out or "<root>"


@record(order=True)
class Span:
    """A 1-based position in a source file."""

    file: str
    line: int
    column: int


@record
class SpecError:
    """One located problem in a user's spec."""

    span: Span
    rule: str
    path: Path
    message: str
    hint: str | None = None
    value: Any = None
    environment: str | None = None

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (self.span, self.rule, format_path(self.path), self.message)

    def render(self) -> str:
        return self._line(f"error[{self.rule}]")

    def render_note(self) -> str:
        """The line of a note: something the user should know that is not an error (exit code 0)."""
        return self._line("note")

    def render_warning(self) -> str:
        """The line of a warning rule's finding (Rule.warning): named by its rule, and no error (exit code 0)."""
        return self._line(f"warning[{self.rule}]")

    def _line(self, kind: str) -> str:
        where = f"{self.span.file}:{self.span.line}:{self.span.column}"
        scope = f"[env {self.environment}] " if self.environment else ""
        located = f"{format_path(self.path)}: " if self.path else ""
        text = f"{where}: {kind}: {scope}{located}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        # every message may quote the user's text: an escape code or a line break in it is shown, never acted on
        return escaped(redacted(text), limit=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.span.file,
            "line": self.span.line,
            "column": self.span.column,
            "path": format_path(self.path),
            "message": redacted(self.message),
            "hint": redacted(self.hint) if self.hint else self.hint,
            "rule": self.rule,
            "value": "<redacted>" if isinstance(self.value, str) and secret_shape(self.value) else _jsonable(self.value),
            "environment": self.environment,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, str) and len(value) > 60:  # a report names a value, it never carries a huge one
        return f"{value[:40]}... ({len(value):,} characters)"
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


@record(frozen=False)
class SpecInvalid(Exception):
    """Raised with every error found; the CLI prints them and exits 2."""

    errors: list[SpecError] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(f"{len(self.errors)} error(s) in the platform spec")


def render_report(errors: Sequence[SpecError], as_json: bool = False) -> tuple[str, str]:
    """(stdout, stderr) text reporting ``errors``: one line each (or a JSON object), and a count."""
    if as_json:
        return json.dumps({"schemaVersion": 1, "valid": False, "errors": [e.to_json() for e in errors]}, indent=2) + "\n", ""
    count = len(errors)
    return "".join(e.render() + "\n" for e in errors), f"{count} error{'s' if count != 1 else ''}\n"


def sorted_unique(errors: Iterable[SpecError], environments: Sequence[str] = ()) -> list[SpecError]:
    """Sort by position and merge repeats of one error found in several environments.

    An error seen in every environment in ``environments`` is reported without an environment
    (it is in the base spec); one seen in some of them names them all, comma-separated.
    """
    seen: dict[tuple[Any, ...], tuple[SpecError, list[str]]] = {}
    for error in errors:
        key = (error.span, error.rule, error.path, error.message)
        kept = seen.setdefault(key, (error, []))
        if error.environment and error.environment not in kept[1]:
            kept[1].append(error.environment)
    out: list[SpecError] = []
    for error, envs in seen.values():
        everywhere = not envs or (bool(environments) and set(envs) >= set(environments))
        scope = None if everywhere else ",".join(envs)
        out.append(SpecError(error.span, error.rule, error.path, error.message, error.hint, error.value, scope))
    return sorted(out, key=lambda e: e.sort_key)


def did_you_mean(word: str, choices: Iterable[str], quote: bool = True) -> str | None:
    """A hint naming the closest choice by edit distance, or None when nothing is close."""
    pool = list(dict.fromkeys(choices))
    by_case = {c.lower(): c for c in pool}
    if word.lower() in by_case:
        match = by_case[word.lower()]
    else:
        import difflib  # only for a word that is no choice: a valid spec's check never gets here

        matches = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
        if not matches:
            lowered = difflib.get_close_matches(word.lower(), list(by_case), n=1, cutoff=0.6)
            if not lowered:
                return None
            matches = [by_case[lowered[0]]]
        match = matches[0]
    return f'did you mean "{match}"?' if quote else f"did you mean {match}?"


def one_of(choices: Iterable[str], limit: int = 8) -> str:
    """``expected one of: a, b, c`` with a cap, for hints when nothing is close."""
    items = sorted(choices)
    shown = ", ".join(items[:limit])
    more = f", ... ({len(items) - limit} more)" if len(items) > limit else ""
    return f"expected one of: {shown}{more}"
