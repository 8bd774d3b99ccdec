"""The one error an emitter raises for a platform it cannot express."""

from __future__ import annotations


class EmitError(Exception):
    """An emitter cannot express the resolved platform (for example an IPoIB range too small)."""
