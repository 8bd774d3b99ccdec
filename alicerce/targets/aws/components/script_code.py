"""A Python script's code without its comments and docstrings, for embedding in a launch template's user data.

A node's user data is part of its launch template: any change to it is a new template version, which EKS rolls out
by replacing every node of the group (reserved and Capacity Block pools terminate first). So what a node is given
must change only when what it runs does (review obsreview20 F2). The text is cut from the source by position, not
regenerated: ``ast.unparse`` is not stable across Python versions (3.9 and 3.11 print ``for (a, b) in`` and
``for a, b in`` for one tree), and the Python that runs ``alicerce generate`` must not decide whether a fleet rolls.
Comments come from ``tokenize`` and docstrings from ``ast`` node positions; both are the same on every Python 3.9+.
The result is checked to parse to the source's own tree (docstrings aside), so a stripped script never behaves
otherwise than its source.

Standard library only: tests run it under other Python versions to check that the bytes do not move.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator

Span = tuple[int, int, int, int, str]
"""An edit: start line, start column, end line, end column (lines from 1, columns from 0), replacement."""

STATEMENT_LISTS = ("body", "orelse", "finalbody")
"""The fields of an ast node that hold a list of statements a docstring-like string can stand in."""


def _is_string_statement(statement: ast.stmt) -> bool:
    """A bare string expression: a docstring, or an attribute's docstring after its assignment; it does nothing."""
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)


def _string_statement_edits(tree: ast.Module) -> Iterator[Span]:
    """Every bare string statement, removed; one that is its block's only statement becomes ``pass``."""
    for node in ast.walk(tree):
        for field in STATEMENT_LISTS:
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            alone = all(_is_string_statement(s) for s in block)
            for index, statement in enumerate(block):
                if _is_string_statement(statement):
                    assert statement.end_lineno is not None and statement.end_col_offset is not None
                    replacement = "pass" if alone and index == 0 else ""
                    yield (statement.lineno, statement.col_offset, statement.end_lineno, statement.end_col_offset,
                           replacement)  # fmt: skip


def _without_string_statements(tree: ast.Module) -> ast.Module:
    """The tree as ``_string_statement_edits`` leaves it (what the stripped text must parse to)."""
    for node in ast.walk(tree):
        for field in STATEMENT_LISTS:
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                kept = [s for s in block if not _is_string_statement(s)]
                setattr(node, field, kept or [ast.Pass()])
    return tree


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def _comment_edits(lines: list[str], tokens: list[tokenize.TokenInfo]) -> Iterator[Span]:
    """Every comment with the blanks before it (so re-spacing a comment moves nothing), but a first-line ``#!``."""
    for token in tokens:
        if token.type != tokenize.COMMENT or (token.start == (1, 0) and token.string.startswith("#!")):
            continue
        row, column = token.start
        text = lines[row - 1]
        start = len(text[:column].rstrip(" \t"))
        yield row, start, row, token.end[1], ""


def _string_interior_lines(tokens: list[tokenize.TokenInfo]) -> set[int]:
    """The lines a multi-line string literal continues onto: their blanks are the string's, never trimmed. Python
    3.12 tokenizes an f-string as FSTRING_START .. FSTRING_END, older ones as one STRING: the lines are the same."""
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    opened: list[int] = []
    inside: set[int] = set()
    for token in tokens:
        if token.type == tokenize.STRING:
            inside.update(range(token.start[0] + 1, token.end[0] + 1))
        elif fstring_start is not None and token.type == fstring_start:
            opened.append(token.start[0])
        elif fstring_end is not None and token.type == fstring_end and opened:
            inside.update(range(opened.pop() + 1, token.end[0] + 1))
    return inside


def _apply(lines: list[str], edits: list[Span]) -> list[str]:
    """The edits made from the last to the first, each keeping the line count (a removed block leaves empty lines)."""
    out = list(lines)
    for start_row, start_col, end_row, end_col, replacement in sorted(edits, reverse=True):
        head, tail = out[start_row - 1][:start_col], out[end_row - 1][end_col:]
        if start_row == end_row:
            out[start_row - 1] = head + replacement + tail
            continue
        out[start_row - 1] = head + replacement
        for row in range(start_row, end_row - 1):
            out[row] = ""
        out[end_row - 1] = tail
    return out


def code_only(source: str) -> str:
    """``source`` without comments (a first-line ``#!`` stays), docstrings and other bare string statements, blank
    lines or trailing blanks outside string literals. Raises ValueError when the result would not be the same
    program (a docstring sharing its line with code, ``"doc"; x = 1``), rather than ship a changed one."""
    if not source.isascii():
        raise ValueError("the script must be ASCII: ast columns count bytes, tokenize columns characters")
    lines = source.splitlines()
    tokens = _tokens(source)
    removed = list(_string_statement_edits(ast.parse(source)))
    edits = [*removed, *_comment_edits(lines, tokens)]
    # the lines of a removed docstring are gone with it, blank or not
    interior = _string_interior_lines(tokens).difference(*(range(e[0], e[2] + 1) for e in removed))
    kept = []
    for row, line in enumerate(_apply(lines, edits), start=1):
        if row in interior:
            kept.append(line)
        elif line.strip():
            kept.append(line.rstrip())
    code = "\n".join(kept) + "\n"
    try:
        stripped = ast.dump(_without_string_statements(ast.parse(code)))
    except SyntaxError as error:
        raise ValueError(f"stripping the comments and docstrings changed the program: {error}") from None
    if stripped != ast.dump(_without_string_statements(ast.parse(source))):
        raise ValueError("stripping the comments and docstrings changed the program")
    return code
