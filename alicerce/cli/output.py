"""How results reach the user: `--format text|json`, JSON documents with a schema version, and tables
that stay readable at any width.

Every command that prints a result takes ``--format text|json`` (``--json`` is a hidden alias kept
for one release). A JSON document is one object on stdout with ``schemaVersion`` first; its JSON
Schema is committed under ``schema/output/`` (see :mod:`alicerce.cli.documents`).

Tables choose their layout from the width they have, and never cut a cell:

- **wide**: a boxed table when every cell fits on one line in the terminal's width;
- **wrapped** (100 columns or more): the boxed table, long cells wrapped between words over
  several lines, identifier columns (names a user types again) kept whole;
- **narrow** (under 100 columns, or when wrapping would have to break words): one block per
  row, the row's identifiers first, then ``header: value`` pairs packed into the width;
- **plain** (stdout is not a terminal and ``COLUMNS`` is unset: a pipe, a CI log): one line per
  row, columns aligned with spaces, no box characters and no width limit, so `grep` and `awk`
  see whole rows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

NARROW_BELOW = 100
"""Terminals narrower than this get the narrow layout when a table does not fit."""


class Format(str, Enum):
    text = "text"
    json = "json"


FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format: text for people, json for scripts.")]
JsonAlias = Annotated[bool, typer.Option("--json", hidden=True, help="Same as --format json (deprecated).")]


def wants_json(output_format: Format | str | None, json_alias: bool = False) -> bool:
    """True when the command should print its JSON document (``--format json``, or the old ``--json``)."""
    if json_alias:
        print("warning: --json is deprecated and will be removed in alicerce 0.3; use --format json", file=sys.stderr)
        return True
    return output_format in (Format.json, "json")


_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")


def camel_keys(value: Any) -> Any:
    """``value`` with every snake_case key camelCased, recursively, for a document built by snake_case code.

    Only identifier-shaped keys change (``gpu_hours`` -> ``gpuHours``); keys that are data (pool and
    workload names are DNS labels, GPU ids and resources carry ``-``, ``.`` or ``/``) never match.
    """
    if isinstance(value, dict):
        return {(_camel(k) if isinstance(k, str) and _SNAKE.match(k) else k): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [camel_keys(v) for v in value]
    return value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def print_json(document: dict[str, Any]) -> None:
    """One JSON document on stdout, ``schemaVersion`` first (documents set their own version)."""
    ordered = {"schemaVersion": document.get("schemaVersion", 1), **{k: v for k, v in document.items() if k != "schemaVersion"}}
    sys.stdout.write(json.dumps(ordered, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------
# tables


@dataclass(frozen=True)
class Column:
    header: str
    key: bool = False  # an identifier the user types again (a name, a type, an id): never folded or cut
    numeric: bool = False  # right-aligned


@dataclass
class Table:
    title: str
    columns: Sequence[Column]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    styles: list[str | None] = field(default_factory=list)

    def add(self, *cells: str, style: str | None = None) -> None:
        assert len(cells) == len(self.columns), (self.title, cells)
        self.rows.append(tuple(cells))
        self.styles.append(style)

    def natural_width(self) -> int:
        """Every cell on one line, with the box characters and padding of a rich table."""
        return sum(self.widths(whole=True)) + 3 * len(self.columns) + 1

    def folded_width(self) -> int:
        """Cells wrapped between words (identifiers whole): the narrowest the boxed table gets without breaking a word."""
        return sum(self.widths(whole=False)) + 3 * len(self.columns) + 1

    def widths(self, whole: bool) -> list[int]:
        out = []
        for i, column in enumerate(self.columns):
            cells = [row[i] for row in self.rows]
            if whole or column.key:
                out.append(max([len(column.header) if whole else _longest_word(column.header), *(len(c) for c in cells)]))
            else:
                out.append(max(_longest_word(text) for text in [column.header, *cells]))
        return out


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def output_width() -> int | None:
    """The width tables may use: ``COLUMNS`` when set, the terminal's when stdout is one, else None (a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def console() -> Console:
    """A rich console for stdout at :func:`output_width` (wide enough never to wrap in a pipe)."""
    from rich.console import Console

    width = output_width()
    return Console(width=width if width is not None else 10_000, highlight=False)


def layout(table: Table, width: int | None) -> str:
    if width is None:
        return "plain"
    if table.natural_width() <= width:
        return "wide"
    return "wrapped" if width >= NARROW_BELOW and table.folded_width() <= width else "narrow"


def print_table(table: Table, out: Console | None = None) -> None:
    """Print ``table`` in the layout its width allows (see the module docstring)."""
    out = out or console()
    width = output_width()
    chosen = layout(table, width)
    if chosen == "plain":
        out.print(_plain(table), markup=False, soft_wrap=True)
    elif chosen == "narrow":
        out.print(_narrow(table, width or 80), markup=False, soft_wrap=True)
    else:
        out.print(_rich(table, width if chosen == "wrapped" else None))


def _rich(table: Table, width: int | None) -> Any:
    """A boxed rich table; with a ``width``, every column gets a fixed width of at least its longest word
    (identifiers: their longest value) and the room left is shared by how much each column wants."""
    from rich.table import Table as RichTable

    rich = RichTable(title=table.title, title_justify="left")
    widths = table.widths(whole=True)
    if width is not None:
        least = table.widths(whole=False)
        room = width - (3 * len(widths) + 1) - sum(least)
        wants = [w - m for w, m in zip(widths, least, strict=True)]
        total = sum(wants) or 1
        widths = [m + (room * want) // total for m, want in zip(least, wants, strict=True)]
    for column, fixed in zip(table.columns, widths, strict=True):
        rich.add_column(column.header, justify="right" if column.numeric else "left", width=fixed, no_wrap=column.key, overflow="fold")
    for row, style in zip(table.rows, table.styles, strict=True):
        rich.add_row(*row, style=style)
    return rich


def _plain(table: Table) -> str:
    headers = [c.header for c in table.columns]
    widths = [max([len(h), *(len(row[i]) for row in table.rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(w) if c.numeric else cell.ljust(w) for cell, w, c in zip(cells, widths, table.columns, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([table.title, line(headers), *(line(row) for row in table.rows)])


def _narrow(table: Table, width: int) -> str:
    keys = [i for i, c in enumerate(table.columns) if c.key] or [0]
    lines = _wrap(table.title, width, "")
    for row in table.rows:
        lines.append("   ".join([row[keys[0]], *(f"{table.columns[i].header}: {row[i]}" for i in keys[1:])]))  # whole, even if long
        current = ""
        for i, column in enumerate(table.columns):
            if i in keys:
                continue
            pair = f"{column.header}: {row[i]}"
            joined = f"{current}   {pair}" if current else pair
            if current and len(joined) + 2 > width:
                lines.extend(_wrap(current, width, "  "))
                joined = pair
            current = joined
        if current:
            lines.extend(_wrap(current, width, "  "))
    return "\n".join(lines)


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """``text`` over lines of ``width``, broken between words only (a word longer than the width stays whole)."""
    import textwrap

    return textwrap.wrap(
        text, width, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=False, break_on_hyphens=False
    ) or [indent]
