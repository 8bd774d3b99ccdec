"""Where alicerce keeps its caches: ``ALICERCE_CACHE_DIR``, else ``$XDG_CACHE_HOME/alicerce``.

``ALICERCE_NO_CACHE=1`` turns every cache off. This module imports nothing heavy: the validate
fast path reads it before pydantic loads.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path | None:
    """The cache folder, or None when caching is turned off."""
    if os.environ.get("ALICERCE_NO_CACHE"):
        return None
    explicit = os.environ.get("ALICERCE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "alicerce"
