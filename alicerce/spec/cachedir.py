"""Where alicerce keeps its caches: ``ALICERCE_CACHE_DIR``, else ``$XDG_CACHE_HOME/alicerce``.

``ALICERCE_NO_CACHE=1`` turns every cache off. This module imports nothing heavy: the validate
fast path reads it before pydantic loads.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol


def cache_dir() -> Path | None:
    """The cache folder, or None when caching is turned off."""
    if os.environ.get("ALICERCE_NO_CACHE"):
        return None
    explicit = os.environ.get("ALICERCE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "alicerce"


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


def sha256(data: bytes = b"") -> Hasher:
    """A SHA-256 hasher, from CPython's own built-in module where there is one: ``hashlib`` loads OpenSSL's bindings to
    offer every algorithm (3 ms of a cold `validate`), and the cache keys need this one only. The digests are the same."""
    try:
        from _sha256 import sha256 as builtin  # type: ignore[import-not-found,unused-ignore]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as builtin  # type: ignore[import-not-found,no-redef,unused-ignore]  # CPython 3.12+
        except ImportError:
            from hashlib import sha256 as builtin  # type: ignore[assignment,unused-ignore]
    hasher: Hasher = builtin(data)
    return hasher


def import_path_key() -> str:
    """A key that changes when a distribution is installed or removed: the interpreter, and each folder of the
    import path with its modification time (adding or removing a distribution's files changes its folder's)."""
    digest = sha256(sys.version.encode())
    for entry in sys.path:
        try:
            digest.update(f"{entry}:{os.stat(entry or '.').st_mtime_ns}\n".encode())
        except OSError:
            continue
    return digest.hexdigest()


def cached_json(kind: str, key: str, build: Callable[[], object]) -> object:
    """``build()``'s JSON value, kept in the cache folder under ``kind`` and ``key``; rebuilt when absent or
    unreadable, not kept when the folder cannot be written or caching is off."""
    folder = cache_dir()
    path = folder / kind / f"{key}.json" if folder is not None else None
    if path is not None:
        try:
            return json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            pass
    value = build()
    if path is not None:
        write_entry(path, json.dumps(value).encode())
    return value


def write_entry(path: Path, data: bytes) -> None:
    """Write a cache entry atomically (a concurrent run reads no entry or a whole one); a cache folder that
    cannot be written is skipped."""
    # a private file next to the entry, as tempfile.mkstemp makes one (created exclusively, owner-only), without
    # importing tempfile: it loads random, shutil and the compression modules, a tenth of a cold `validate`
    tmp = path.parent / f".tmp-{os.getpid()}-{os.urandom(8).hex()}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return
