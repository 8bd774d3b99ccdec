"""The two ways writing output fails for a reason the user can act on (the CLI exits 2 on both)."""

from __future__ import annotations

from typing import Any


class EmitError(Exception):
    """An emitter cannot express the resolved platform (for example an IPoIB range too small)."""


class OutputError(Exception):
    """An output path alicerce refuses or cannot write: what and where, and what to do about it.

    ``details`` is extra data for ``--format json`` reports (for example the changed files of a tree).
    """

    def __init__(self, message: str, hint: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        self.details = details or {}
