"""The generated tree: one emitter per top-level folder, each returning ``{relative path: text}``.

``alicerce generate`` asks every emitter of :data:`EMITTERS` for its files, adds ``.alicerce/``
(the resolved spec and a manifest of every file with its sha256) and writes the whole tree
atomically. A new subtree is one more entry in that list.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from alicerce.emit.ansible.site import emit_ansible
from alicerce.emit.errors import EmitError
from alicerce.emit.files import write_tree_atomic
from alicerce.emit.gitops.ci import emit_ci
from alicerce.emit.gitops.kubernetes import emit_kubernetes
from alicerce.emit.gitops.monitoring import emit_monitoring
from alicerce.emit.gitops.report import emit_reports
from alicerce.resolve.model import ResolvedPlatform

Emitter = Callable[[ResolvedPlatform], dict[str, str]]
"""Pure: reads the resolved platform and returns files relative to its subtree."""

# subtree -> its emitter, in the order they run (explicit: no registration by import side effect)
EMITTERS: dict[str, Emitter] = {
    "ansible": emit_ansible,
    "kubernetes": emit_kubernetes,
    "monitoring": emit_monitoring,
    "ci": emit_ci,
    "reports": emit_reports,
}
MANIFEST = ".alicerce/manifest.json"
RESOLVED = ".alicerce/resolved.json"


def render_tree(platform: ResolvedPlatform, subtrees: list[str] | None = None) -> dict[str, str]:
    """Every file of the generated tree, keyed by its POSIX path relative to the output folder."""
    files: dict[str, str] = {}
    for subtree in sorted(EMITTERS):
        if subtrees is not None and subtree not in subtrees:
            continue
        for relative, text in EMITTERS[subtree](platform).items():
            path = PurePosixPath(subtree, relative)
            if path.is_absolute() or ".." in path.parts:
                raise EmitError(f"emitter {subtree} returned a path outside its subtree: {relative}")
            files[str(path)] = text
    files[RESOLVED] = json.dumps(platform.to_data(), indent=2, sort_keys=True, default=str) + "\n"
    manifest = {
        "platform": platform.name,
        "environment": platform.environment,
        "files": {path: hashlib.sha256(text.encode("utf-8")).hexdigest() for path, text in sorted(files.items())},
    }
    files[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return dict(sorted(files.items()))


def write_tree(out: Path, files: dict[str, str]) -> None:
    """Write the tree through a temporary sibling and a rename: the old tree or the new, never half."""
    write_tree_atomic(out, files)


def hand_edits(out: Path) -> list[str]:
    """Files under ``out`` whose content no longer matches the manifest (edited, removed)."""
    manifest_path = out / MANIFEST
    if not manifest_path.is_file():
        return []
    recorded: dict[str, str] = json.loads(manifest_path.read_text(encoding="utf-8"))["files"]
    changed = []
    for relative, digest in sorted(recorded.items()):
        path = out / relative
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            changed.append(relative)
    return changed
