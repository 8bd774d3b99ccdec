"""Reading a spec file without surprises: regular files only, never blocking, never past a cap.

A directory, a device (``/dev/zero`` never ends), a FIFO (an open blocks until someone writes) or
a socket named as SPEC is refused from one ``fstat`` of the opened descriptor; the descriptor is
opened non-blocking, so even a FIFO answers at once. Reading stops one byte past the cap, so a
file that grows while it is read cannot exhaust memory either.

This module imports only the standard library: the validate fast path uses it before anything
heavy loads.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MAX_BYTES = 10 * 1024 * 1024
"""The largest spec read; the reference platform is about 12 KiB."""

_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)

_HINTS = {
    errno.ENOENT: "check the path; SPEC defaults to ./platform.yaml",
    errno.ENOTDIR: "a folder on the path is a file; check the path",
    errno.EACCES: "you may not read it; check its permissions",
    errno.EPERM: "you may not read it; check its permissions",
    errno.ELOOP: "the path loops through symbolic links",
    errno.ENAMETOOLONG: "the path is too long",
}


class UnreadableSource(Exception):
    """The path cannot be read as a spec: a message and what to do about it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


class SourceTooLarge(Exception):
    """The file holds more than the cap; ``size`` is what was found (at least cap + 1)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def read_regular_file(path: str | Path, limit: int) -> bytes:
    """The bytes of regular file ``path``, refusing anything else and anything over ``limit`` bytes."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise UnreadableSource(f"cannot read the file: {exc.strerror}", _HINTS.get(exc.errno or 0, "check the path")) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UnreadableSource("cannot read the file: it is a directory", "name the spec file inside it, e.g. DIR/platform.yaml")
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "a special file")
            raise UnreadableSource(f"cannot read the file: it is {kind}, not a regular file", "pass the path of a YAML file")
        if info.st_size > limit:
            raise SourceTooLarge(info.st_size)
        os.set_blocking(fd, True)  # a regular file never blocks; plain reads from here
        chunks: list[bytes] = []
        read = 0
        while read <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - read))
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
        if read > limit:
            raise SourceTooLarge(read)
        return b"".join(chunks)
    except OSError as exc:
        raise UnreadableSource(f"cannot read the file: {exc.strerror}", _HINTS.get(exc.errno or 0, "check the path")) from None
    finally:
        os.close(fd)
