"""A content-addressed memo of `alicerce validate` results.

Validating needs pydantic, whose start-up alone costs several times a YAML parse. A spec that has
not changed since it was last checked (the common case in editors' save hooks, pre-commit and CI
re-runs) gets the stored result back without importing pydantic, typer or the catalog.

The key covers everything the result depends on: the spec's bytes and displayed name, the
options, the date waivers are checked against, alicerce's own files (sources and catalog data,
by size and modification time), the interpreter and its import path. Set ``ALICERCE_NO_CACHE=1``
to bypass it; ``ALICERCE_CACHE_DIR`` moves it (default ``$XDG_CACHE_HOME/alicerce``).

This module imports nothing heavy: it runs before the CLI framework loads.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
from pathlib import Path

from alicerce.spec.cachedir import cache_dir, import_path_key, sha256, write_entry
from alicerce.spec.record import record

PACKAGE = Path(__file__).resolve().parent.parent
FORMAT_VERSION = "1"


@record
class Result:
    stdout: str
    stderr: str
    code: int


@record
class Request:
    """A `validate` invocation, normalised: what decides its output."""

    spec: str
    env: str | None
    output_format: str


def today() -> str:
    return os.environ.get("ALICERCE_TODAY") or datetime.date.today().isoformat()


@functools.cache  # once a process: lookup and store both need it, and it stats every file of the package
def _fingerprint() -> str:
    digest = sha256(import_path_key().encode())  # installing or removing a dependency changes it
    for root, dirs, files in os.walk(PACKAGE):
        # alicerce/ansible holds the content Ansible runs on the nodes (roles, modules, filters): nothing validate reads,
        # and two thirds of the package's folders
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (d == "ansible" and root == str(PACKAGE)))
        for name in sorted(files):
            if name.endswith((".py", ".yaml")):
                stat = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def key(request: Request, spec_bytes: bytes) -> str:
    digest = sha256()
    for part in (FORMAT_VERSION, _fingerprint(), request.spec, request.env or "", request.output_format, today()):
        digest.update(part.encode() + b"\0")
    digest.update(spec_bytes)
    return digest.hexdigest()


def _entry(cache: Path, cache_key: str) -> Path:
    return cache / "validate" / cache_key[:2] / f"{cache_key}.json"


def lookup(request: Request, spec_bytes: bytes) -> Result | None:
    cache = cache_dir()
    if cache is None:
        return None
    try:
        data = json.loads(_entry(cache, key(request, spec_bytes)).read_text("utf-8"))
        return Result(str(data["stdout"]), str(data["stderr"]), int(data["code"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(request: Request, spec_bytes: bytes, result: Result) -> None:
    """Remember a result; a cache that cannot be written is silently skipped."""
    cache = cache_dir()
    if cache is None:
        return
    document = {"stdout": result.stdout, "stderr": result.stderr, "code": result.code}
    write_entry(_entry(cache, key(request, spec_bytes)), json.dumps(document).encode())
