"""The generated tree: the emitters that fill it, its manifest, and the contract for writing it.

``alicerce generate`` asks every emitter in :data:`EMITTERS` for its files, adds ``.alicerce/``
(the resolved spec and a manifest of every file with its sha256) and writes the tree with
:func:`write_tree`, which keeps every file alicerce did not write:

- it writes only into a new folder, an empty one, or one holding its own ``.alicerce/manifest.json``;
  anything else (the current folder, a folder holding the spec or a ``.git``, a file, a link, a
  non-empty folder of the user's) is refused before anything is touched;
- in a folder it owns, files edited, removed or added since the last run stop the run; with
  ``force`` they are replaced, and what the user had written is kept under
  ``.alicerce/displaced/<time>/``;
- the paths in :data:`KEPT` belong to the user (or to the tools run in the tree): never
  generated, carried into every new tree, never listed as changes;
- the folder is replaced in one step under a lock (see :mod:`alicerce.emit.files`).
"""

from __future__ import annotations

import datetime
import glob
import hashlib
import json
import os
import stat
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from alicerce.emit.ansible.site import emit_ansible
from alicerce.emit.errors import EmitError, OutputError
from alicerce.emit.files import (
    MANIFEST,
    SHARED_DISPLACED,
    SHARED_MANIFEST,
    Target,
    check_folder,
    ensure_folder,
    fault,
    forget,
    link_into,
    locked,
    new_staging,
    os_error,
    read_manifest,
    recover,
    remove,
    stage_files,
    swap_in,
    write_text_atomic,
)
from alicerce.emit.gitops.ci import emit_ci
from alicerce.emit.gitops.kubernetes import emit_kubernetes
from alicerce.emit.gitops.monitoring import emit_monitoring
from alicerce.emit.gitops.report import emit_reports
from alicerce.resolve.model import ResolvedPlatform

Emitter = Callable[[ResolvedPlatform], dict[str, str]]
"""Pure: reads the resolved platform and returns files relative to its subtree."""

EMITTERS: tuple[tuple[str, Emitter], ...] = (
    ("ansible", emit_ansible),
    ("kubernetes", emit_kubernetes),
    ("monitoring", emit_monitoring),
    ("ci", emit_ci),
    ("reports", emit_reports),
)
"""Every emitter with the top-level folder it fills; a new subtree is one more line here."""

RESOLVED = ".alicerce/resolved.json"
DISPLACED = ".alicerce/displaced/"

KEPT = (
    "ansible/host_vars/",
    "ansible/.cache/",
    "ansible/.ansible/",
    "ansible/acceptance/",
    "ansible/kubespray/.cache/",
    "ansible/kubespray/artifacts/",
    DISPLACED,
)
"""Paths inside the tree that generate never owns, carried into every new tree as they are:

- ``ansible/host_vars/``: the user's per-host variables (addresses, users, keys), which Ansible
  reads beside ``inventory.yml`` and ``site.yml``;
- ``ansible/.cache/``: Ansible's fact cache (``fact_caching_connection`` in the generated
  ``ansible.cfg``), kept so that re-runs stay fast; ``ansible/.ansible/``: ansible-lint's cache;
- what ``alicerce apply onprem`` leaves: ``ansible/acceptance/`` (each node's acceptance report),
  ``ansible/kubespray/.cache/`` (kubespray's fact cache, which its ``--limit`` runs need) and
  ``ansible/kubespray/artifacts/`` (each site's admin kubeconfig, ``artifacts_dir``);
- ``.alicerce/displaced/``: the files ``--force`` replaced, for the user to look at or delete.
"""

_SHOWN = 20  # changed files listed in a refusal; the rest are counted


def render_tree(platform: ResolvedPlatform, subtrees: list[str] | None = None) -> dict[str, str]:
    """Every file of the generated tree, keyed by its POSIX path relative to the output folder."""
    files: dict[str, str] = {}
    for subtree, emit in sorted(EMITTERS):
        if subtrees is not None and subtree not in subtrees:
            continue
        for relative, text in emit(platform).items():
            path = PurePosixPath(subtree, relative)
            if path.is_absolute() or ".." in path.parts:
                raise EmitError(f"emitter {subtree} returned a path outside its subtree: {relative}")
            if str(path).startswith(KEPT):
                raise EmitError(f"emitter {subtree} returned {path}, a path generate leaves to the user")
            files[str(path)] = text
    files[RESOLVED] = json.dumps(platform.to_data(), indent=2, sort_keys=True, default=str) + "\n"
    return with_manifest(files, platform=platform.name, environment=platform.environment)


def with_manifest(files: dict[str, str], *, platform: str, environment: str) -> dict[str, str]:
    """``files`` and the manifest listing each with its sha256, sorted by path."""
    manifest = {
        "platform": platform,
        "environment": environment,
        "files": {path: _digest(text.encode("utf-8")) for path, text in sorted(files.items())},
    }
    return dict(sorted({**files, MANIFEST: json.dumps(manifest, indent=2, sort_keys=True) + "\n"}.items()))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Changes:
    """How an owned tree differs from what alicerce last wrote into it (POSIX paths; a folder ends in /)."""

    edited: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    manifest_problem: str | None = None

    def __bool__(self) -> bool:
        return bool(self.edited or self.removed or self.added or self.manifest_problem)

    def as_dict(self) -> dict[str, list[str]]:
        return {"edited": list(self.edited), "removed": list(self.removed), "added": list(self.added)}

    def lines(self) -> list[str]:
        rows = [(kind, path) for kind in ("edited", "removed", "added") for path in getattr(self, kind)]
        shown = [f"  {kind:<8} {path}" for kind, path in rows[:_SHOWN]]
        if len(rows) > _SHOWN:
            shown.append(f"  ... and {len(rows) - _SHOWN} more")
        return shown


def _file_digest(path: Path) -> str | None:
    """The sha256 of regular file ``path``; None for anything else (a link, folder, FIFO: an edit too)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def tree_changes(out: Path, new_files: dict[str, str] | None = None) -> Changes:
    """What was edited, removed or added in the owned tree ``out`` since alicerce wrote it.

    A file whose content is what alicerce writes now (``new_files``) is not a change; :data:`KEPT`
    paths are never changes.
    """
    recorded, problem = read_manifest(out)
    fresh = {path: _digest(text.encode("utf-8")) for path, text in (new_files or {}).items()}
    edited, removed = [], []
    for relative, digest in sorted(recorded.items()):
        if relative.startswith(KEPT):
            continue
        try:
            os.lstat(out / relative)
        except (FileNotFoundError, NotADirectoryError):
            removed.append(relative)
            continue
        # anything but a regular file (a folder, link, FIFO the user put there) is the user's, even
        # where the new tree no longer has the path: None never matches a digest
        found = _file_digest(out / relative)
        if found is None or found not in (digest, fresh.get(relative)):
            edited.append(relative)
    # folders walked into: those holding generated files or kept paths; any other folder is one added entry
    holders = {str(parent) for relative in [*recorded, *KEPT] for parent in PurePosixPath(relative).parents}
    added: list[str] = []

    def walk(folder: Path, prefix: str) -> None:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            relative = prefix + entry.name
            if relative in recorded or relative == MANIFEST or (relative + "/").startswith(KEPT):
                continue
            if entry.is_dir(follow_symlinks=False) and relative in holders:
                walk(Path(entry.path), relative + "/")
            else:
                added.append(relative + "/" if entry.is_dir(follow_symlinks=False) else relative)

    walk(out, "")
    return Changes(tuple(edited), tuple(removed), tuple(sorted(added)), problem)


def owns(folder: Path) -> bool:
    """True when ``folder`` holds alicerce's manifest (a real ``.alicerce`` folder, a regular file)."""
    try:
        return stat.S_ISDIR(os.lstat(folder / ".alicerce").st_mode) and stat.S_ISREG(os.lstat(folder / MANIFEST).st_mode)
    except OSError:
        return False


def _is_empty(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is None


@dataclass
class WriteReport:
    """What :func:`write_tree` did besides writing the files."""

    files: int
    kept: list[str] = field(default_factory=list)  # KEPT paths carried into the new tree
    displaced: list[str] = field(default_factory=list)  # changed files kept under .alicerce/displaced/<time>/
    displaced_to: str | None = None
    warnings: list[str] = field(default_factory=list)


def _refuse_foreign(target: Target) -> bool:
    """True when ``target`` is an owned tree, False when it is new or empty; refuses anything else."""
    if not os.path.lexists(target.path) or _is_empty(target.path):
        return False
    if not owns(target.path):
        # a crash between the fallback's two renames leaves the previous tree beside the folder: say where
        olds = sorted(p for p in target.parent.glob(f".{glob.escape(target.name)}.alicerce-old-*") if owns(p))
        where = f"; a crashed run left the previous tree in {olds[-1]}" if olds else ""
        raise OutputError(
            f"{target.shown} is not empty and holds no {MANIFEST}: alicerce writes only into folders it created",
            f"choose a new or empty folder for --out; --force does not change this{where}",
        )
    return True


def _inspect(target: Target, files: dict[str, str], force: bool) -> Changes | None:
    """Refuse what may not be replaced; the changes of an owned tree (None for a new or empty folder)."""
    if not _refuse_foreign(target):
        return None
    changes = tree_changes(target.path, files)
    if changes and force:
        _refuse_linked_displaced(target.path, DISPLACED, target.shown)
    if changes and not force:
        why = changes.manifest_problem or "files changed since alicerce wrote them"
        raise OutputError(
            "\n".join([f"{target.shown}: {why}:", *changes.lines()]),
            f"keep your own files beside the output folder or under one of {', '.join(KEPT[:1])}; rerun with --force to"
            f" replace them (what you wrote is kept under {target.shown}/{DISPLACED}<time>/)",
            {"changes": changes.as_dict()},
        )
    return changes


def check_output(out: Path, protected: Sequence[Path] = ()) -> None:
    """The refusals of :func:`write_tree` that need no files: run before the expensive work."""
    try:
        _refuse_foreign(check_folder(out, protected))
    except OSError as exc:
        raise os_error(exc, out) from None


def write_tree(out: Path, files: dict[str, str], *, force: bool = False, protected: Sequence[Path] = ()) -> WriteReport:
    """Replace the tree at ``out`` with ``files`` under the output contract (see the module text).

    ``protected`` paths (the spec) may not lie inside ``out``. Raises :class:`OutputError` for every
    refusal and every OS error, before anything is touched where the refusal is about the folder.
    """
    try:
        # refuse a foreign folder before the lock file is even created; changes are read under the
        # lock only, since another run may be swapping the tree in meanwhile
        target = check_folder(out, protected)
        _refuse_foreign(target)
        with locked(target) as lock:
            warnings = recover(target, lock)
            target = check_folder(out, protected)  # again, under the lock: another run may have changed it
            changes = _inspect(target, files, force)
            kept_before = _kept_state(target.path, _carried(changes))
            staging = new_staging(target, lock)
            try:
                report = _fill(target, staging, files, changes)
                _refuse_changed_meanwhile(target, files, force, changes, kept_before)
                carried = _carried(changes)
                destinations = {p.rstrip("/"): f"{report.displaced_to}{p.rstrip('/')}" for p in report.displaced}

                def settle(old: Path) -> list[str]:
                    return _carry_late_changes(old, target.path, carried, destinations, kept_before)

                report.warnings = warnings + swap_in(target, staging, settle)
            except BaseException:
                remove(staging)
                raise
            finally:
                forget(lock, staging)
            fault("done")
            return report
    except OSError as exc:
        raise os_error(exc, out) from None


def _carried(changes: Changes | None) -> list[str]:
    """What a run carries from the old tree into the new: the kept paths, and (forced) the changed files."""
    if changes is None:
        return []
    return [*KEPT, *(path.rstrip("/") for path in (*changes.edited, *changes.added))]


def _kept_state(out: Path, roots: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Every entry under ``roots`` (paths in ``out``) with its inode, type, size and mtime.

    An edit that replaces a file (a new inode) changes it, and so does one in place (size, mtime).
    """
    state: list[tuple[str, int, int, int, int]] = []
    for kept in roots:
        root = out / kept
        try:
            top = os.lstat(root)
        except OSError:
            continue
        if not stat.S_ISDIR(top.st_mode):  # a link (even to /) or a file: the entry itself, never what it points to
            state.append((kept, top.st_ino, top.st_mode, top.st_size, top.st_mtime_ns))
            continue
        for current, folders, names in os.walk(root):
            folders.sort()
            for name in ["", *sorted(names), *folders]:
                path = Path(current, name) if name else Path(current)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                state.append((str(path.relative_to(out)), info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns))
    return sorted(state)


def _destination(path: str, new: Path, roots: list[str], destinations: dict[str, str]) -> Path | None:
    """Where ``path`` of the old tree (under one of ``roots``) goes in the new one: the same place, or its displaced copy."""
    for root in (r.rstrip("/") for r in roots):
        if path == root or path.startswith(root + "/"):
            return new / (destinations.get(root, root) + path[len(root) :])
    return None


def _carry_late_changes(
    old: Path, new: Path, roots: list[str], destinations: dict[str, str], before: list[tuple[str, int, int, int, int]]
) -> list[str]:
    """Carry into the new tree what the user changed under ``roots`` of the old one after the last check.

    Between :func:`_refuse_changed_meanwhile` and the swap an editor may still save a file into
    ``ansible/host_vars`` of the old tree, which the swap then moves out of sight: every entry whose
    inode, type, size or mtime differs from ``before`` is moved (one rename, same file system) to
    its place in the new tree, and an entry deleted in that window is deleted there too. Read again
    until nothing moves, so a save made while carrying is carried as well. Returns one note per path.
    """
    notes: list[str] = []
    for _ in range(5):
        now = _kept_state(old, roots)
        if now == before:
            return notes
        known = {row[0]: row for row in before}
        present = {row[0]: row for row in now}
        moved: set[str] = set()
        for path, *_ in now:  # parents before their entries (sorted paths)
            if known.get(path) == present[path] or not os.path.lexists(old / path):
                continue
            dest = _destination(path, new, roots, destinations)
            if dest is None:
                continue
            if stat.S_ISDIR(present[path][2]):
                os.makedirs(dest, exist_ok=True)
                continue
            os.makedirs(dest.parent, exist_ok=True)
            if os.path.isdir(dest) and not os.path.islink(dest):
                remove(dest)
            os.rename(old / path, dest)
            notes.append(f"{path} changed while the new tree was swapped in: carried into it")
            moved.add(path)
        for path, ino, mode, *_ in sorted(known.values(), reverse=True):  # entries before their folders
            if path in present:
                continue
            dest = _destination(path, new, roots, destinations)
            if dest is None:
                continue
            with suppress(OSError):
                if stat.S_ISDIR(mode):
                    os.rmdir(dest)  # only when empty: anything in it is someone's
                elif os.lstat(dest).st_ino == ino:  # still the hard link of the file the user deleted
                    os.unlink(dest)
                else:
                    continue
                notes.append(f"{path} was deleted while the new tree was swapped in: deleted there too")
        before = [row for row in now if row[0] not in moved]  # a carried entry left the old tree: not a deletion
        if not moved:
            return notes
    return notes


def _refuse_changed_meanwhile(
    target: Target, files: dict[str, str], force: bool, changes: Changes | None, kept_before: list[tuple[str, int, int, int, int]]
) -> None:
    """Read the tree again just before the swap: what the user changed while the new tree was staged stops the run.

    Without this, an edit made during staging (after the first inspection) would go with the old tree.
    """
    if changes is None:
        if os.path.lexists(target.path) and not _is_empty(target.path):
            raise OutputError(f"{target.shown} was filled while alicerce wrote the new tree", "look at what is there and run again")
        return
    again = tree_changes(target.path, files)
    if again != changes or _kept_state(target.path, _carried(changes)) != kept_before:
        raise OutputError(
            "\n".join([f"{target.shown}: files changed while alicerce wrote the new tree; nothing was replaced:", *again.lines()]),
            "run again when nothing else writes there" + ("" if force else "; rerun with --force to replace edited files"),
            {"changes": again.as_dict()},
        )


def _fill(target: Target, staging: Path, files: dict[str, str], changes: Changes | None) -> WriteReport:
    """Stage the new tree: the generated files, the kept paths, and (forced) the displaced ones."""
    stage_files(staging, files)
    report = WriteReport(files=len(files))
    if changes is None:
        return report
    for kept in KEPT:
        source = target.path / kept
        if os.path.lexists(source):
            link_into(source, staging / kept)
            report.kept.append(kept)
    displaced = [*changes.edited, *changes.added]
    if displaced:
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        folder, again = stamp, 1
        while os.path.lexists(staging / DISPLACED / folder):  # a second forced run within the same second
            again += 1
            folder = f"{stamp}-{again}"
        for relative in displaced:
            source = target.path / relative.rstrip("/")
            if os.path.lexists(source):
                link_into(source, staging / DISPLACED / folder / relative.rstrip("/"))
        report.displaced = sorted(displaced)
        report.displaced_to = f"{DISPLACED}{folder}/"
    return report


def _refuse_linked_displaced(folder: Path, displaced: str, shown: str) -> None:
    """--force moves the user's files under ``displaced``: never through a link there (or above it), which
    would move them out of the folder to wherever the link points."""
    parts = Path(displaced.rstrip("/")).parts
    for depth in range(1, len(parts) + 1):
        path = folder.joinpath(*parts[:depth])
        if os.path.islink(path):
            raise OutputError(
                f"{shown}/{'/'.join(parts[:depth])} is a link: --force would move your files to where it points",
                "remove the link (keep what it points to), then rerun with --force",
            )


# -- a folder shared with the user: the CI workflows (``generate --ci-dir``) ---------------------------


def shared_changes(folder: Path, files: dict[str, str]) -> Changes:
    """How the files alicerce owns in the shared ``folder`` differ from what it last wrote there.

    Only the names in its manifest and in ``files`` are alicerce's business: edited (recorded, now
    different or no longer a regular file, a link included), removed (recorded and still generated,
    now missing) and added (a name of ``files`` that holds something alicerce did not write: the
    user's file in the way). A file already holding what alicerce writes now is never a change.
    """
    recorded, problem = read_manifest(folder, SHARED_MANIFEST) if os.path.lexists(folder / SHARED_MANIFEST) else ({}, None)
    fresh = {name: _digest(text.encode("utf-8")) for name, text in files.items()}
    edited, removed, added = [], [], []
    for name, digest in sorted(recorded.items()):
        if not os.path.lexists(folder / name):
            if name in files:
                removed.append(name)
            continue
        found = _file_digest(folder / name)
        if found is None or found not in (digest, fresh.get(name)):
            edited.append(name)
    for name, digest in sorted(fresh.items()):
        if name not in recorded and os.path.lexists(folder / name) and _file_digest(folder / name) != digest:
            added.append(name)
    return Changes(tuple(edited), tuple(removed), tuple(added), problem)


def _refuse_shared(folder: Path, files: dict[str, str], force: bool, protected: Sequence[Path]) -> tuple[Target, Changes]:
    """The checks of :func:`check_folder` on ``folder``, then its changes (a refusal without ``force``)."""
    target = check_folder(folder, protected)
    changes = shared_changes(target.path, files) if os.path.isdir(target.path) else Changes()
    if changes and not force:
        why = changes.manifest_problem or "files changed since alicerce wrote them, or not written by alicerce"
        raise OutputError(
            "\n".join([f"{target.shown}: {why}:", *changes.lines()]),
            f"rerun with --force to replace them, keeping what you had under {target.shown}/{SHARED_DISPLACED}<time>/;"
            " files of other names there are yours and left alone",
            {"changes": changes.as_dict()},
        )
    return target, changes


def check_shared(folder: Path, files: dict[str, str], *, force: bool = False, protected: Sequence[Path] = ()) -> None:
    """The refusals of :func:`write_shared`, touching nothing: run before the generated tree is written."""
    try:
        _refuse_shared(folder, files, force, protected)
    except OSError as exc:
        raise os_error(exc, folder) from None


def write_shared(
    folder: Path, files: dict[str, str], *, platform: str, environment: str, force: bool = False, protected: Sequence[Path] = ()
) -> WriteReport:
    """Write ``files`` (plain names) into ``folder``, which the user shares, under the output contract.

    The same checks as an output folder (no link, no ``..`` ending, not the current folder, none
    holding the spec or a ``.git``, under the same lock); a manifest of what alicerce wrote
    (:data:`SHARED_MANIFEST`); files changed since, or someone else's file of the same name, stop the
    run unless ``force``, which moves them to :data:`SHARED_DISPLACED` ``<time>/`` first. Each file is
    replaced in one rename and never written through a link; files alicerce wrote there before and
    no longer generates are removed; every other file of the folder is left alone.
    """
    try:
        target, _ = _refuse_shared(folder, files, force, protected)
        with locked(target):
            target, changes = _refuse_shared(folder, files, force, protected)  # again, under the lock
            ensure_folder(target.path, target.shown)
            report = WriteReport(files=len(files))
            displaced = [*changes.edited, *changes.added]
            if displaced:
                _refuse_linked_displaced(target.path, SHARED_DISPLACED, target.shown)
                stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
                where, again = stamp, 1
                while os.path.lexists(target.path / SHARED_DISPLACED / where):
                    again += 1
                    where = f"{stamp}-{again}"
                for name in displaced:
                    link_into(target.path / name, target.path / SHARED_DISPLACED / where / name)
                    if name not in files:  # no longer generated: the user's version is kept only there
                        remove(target.path / name)
                report.displaced, report.displaced_to = sorted(displaced), f"{SHARED_DISPLACED}{where}/"
            for name, text in sorted(files.items()):
                if os.path.isdir(target.path / name) and not os.path.islink(target.path / name):
                    remove(target.path / name)  # a folder of the user's in the way, kept above
                write_text_atomic(target.path / name, text, through_links=False)
            recorded, _ = read_manifest(target.path, SHARED_MANIFEST)
            for name, digest in sorted(recorded.items()):
                if name not in files and _file_digest(target.path / name) == digest:
                    os.unlink(target.path / name)  # written by alicerce, unchanged, no longer generated
            manifest = with_manifest(files, platform=platform, environment=environment)[MANIFEST]
            write_text_atomic(target.path / SHARED_MANIFEST, manifest, through_links=False)
            return report
    except OSError as exc:
        raise os_error(exc, folder) from None
