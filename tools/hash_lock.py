"""Add ``--hash`` lines to a pip lock file, so that ``pip install --require-hashes -r`` installs it.

Usage: ``python tools/hash_lock.py requirements.lock`` (``make lock`` runs it after writing the pins).

Each ``name==version`` line gets the sha256 of the file pip itself downloads for it from the
configured package index (``pip download --no-deps``, into a throwaway folder): the wheel this
machine's Python and platform install (Linux x86-64, CPython 3.11 for ``make`` and CI), or the
source archive where there is no wheel. Another platform or Python picks other files and then
stops with a hash mismatch rather than installing something unchecked: run ``make lock`` there.
Comment lines and the order of the pins are kept; existing hashes are replaced.
Nothing here is trusted from anywhere but the bytes pip downloaded.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version


def _download(pins: list[str], dest: Path) -> None:
    """``pip download`` every pin, as the install from the lock would pick it on this machine."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as listing:
        listing.write("\n".join(pins) + "\n")
        listing.flush()
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(dest), "-r", listing.name],
            check=True,
        )


def _owner(name: str) -> tuple[str, str] | None:
    """The (canonical name, version) a downloaded file belongs to."""
    try:
        if name.endswith(".whl"):
            project, version, _, _ = parse_wheel_filename(name)
        else:
            project, version = parse_sdist_filename(name)
    except ValueError:
        return None
    return str(project), str(version)


def hashes(pins: list[str]) -> dict[tuple[str, str], list[str]]:
    """sha256 of every file pip downloads for ``pins`` (``name==version``), by (canonical name, version)."""
    found: dict[tuple[str, str], set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="alicerce-lock-") as folder:
        dest = Path(folder)
        _download(pins, dest)
        for file in sorted(dest.iterdir()):
            owner = _owner(file.name)
            if owner is not None:
                found.setdefault(owner, set()).add(hashlib.sha256(file.read_bytes()).hexdigest())
    return {key: sorted(values) for key, values in found.items()}


def main(lock: Path) -> int:
    lines = lock.read_text("utf-8").splitlines()
    comments = [line for line in lines if line.startswith("#")]
    pins = [line.split("\\")[0].strip() for line in lines if line.strip() and not line.startswith(("#", " ", "\t", "--"))]
    digests = hashes(pins)
    out = list(comments)
    missing = []
    for pin in pins:
        requirement = Requirement(pin)
        version = next(iter(requirement.specifier)).version
        found = digests.get((str(canonicalize_name(requirement.name)), str(Version(version))))
        if not found:
            missing.append(pin)
            continue
        out.append(" \\\n".join([pin, *(f"    --hash=sha256:{digest}" for digest in found)]))
    if missing:
        print(f"no distribution file downloaded for: {', '.join(missing)}", file=sys.stderr)
        return 1
    lock.write_text("\n".join(out) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "requirements.lock")))
