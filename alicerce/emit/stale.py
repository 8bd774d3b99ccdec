"""``generate --check``: which committed files differ from what the spec produces now.

Pure comparison of :func:`~alicerce.emit.tree.render_tree` output with a folder (and, for the CI
workflows, with the folder GitHub reads them from): nothing is written. A file is stale when it is
missing, when its bytes differ, or when the folder's manifest lists it but the spec no longer
produces it. Files the generator never wrote (the user's own) are not its business.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from alicerce.emit.files import SHARED_MANIFEST, read_manifest

CI_PREFIX = "ci/"
WORKFLOW_SUFFIXES = (".yml", ".yaml")


@dataclass(frozen=True, order=True)
class Stale:
    path: str  # as shown to the user: relative to the current folder when below it
    why: str  # missing | differs | no longer generated

    def line(self) -> str:
        return f"  {self.why:<19} {self.path}"


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read(path: Path) -> bytes | None:
    """The bytes of a regular file (not through a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if stat.S_ISREG(os.fstat(handle.fileno()).st_mode) else None


def _recorded(out: Path) -> list[str]:
    return list(read_manifest(out)[0])


def workflows(files: dict[str, str]) -> dict[str, str]:
    """The workflow files of the ``ci/`` subtree, by file name (what ``--ci-dir`` writes)."""
    return {
        PurePosixPath(path).name: text
        for path, text in files.items()
        if path.startswith(CI_PREFIX) and path.endswith(WORKFLOW_SUFFIXES) and "/" not in path[len(CI_PREFIX) :]
    }


def _compare(folder: Path, files: dict[str, str]) -> list[Stale]:
    out = []
    for relative, text in sorted(files.items()):
        found = _read(folder / relative)
        if found is None:
            out.append(Stale(_shown(folder / relative), "missing"))
        elif found != text.encode("utf-8"):
            out.append(Stale(_shown(folder / relative), "differs"))
    return out


def stale_files(out: Path, files: dict[str, str], ci_dir: Path | None = None) -> list[Stale]:
    """Every file under ``out`` (and the workflows under ``ci_dir``) that does not match ``files``."""
    found = _compare(out, files)
    found += [Stale(_shown(out / p), "no longer generated") for p in _recorded(out) if p not in files and (out / p).exists()]
    if ci_dir is not None:
        wanted = workflows(files)
        found += _compare(ci_dir, wanted)
        recorded = read_manifest(ci_dir, SHARED_MANIFEST)[0]
        found += [Stale(_shown(ci_dir / p), "no longer generated") for p in recorded if p not in wanted and (ci_dir / p).exists()]
    return sorted(found)
