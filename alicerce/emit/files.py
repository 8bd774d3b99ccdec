"""Writing output without ever losing what is already there: single files and whole trees.

A single file (:func:`write_text_atomic`) goes through a temporary sibling, fsync and one rename.

A tree replaces its output folder in one step, under a lock, and a crash at any instant leaves a
complete tree behind (the old one or the new one):

- **lock**: ``.NAME.alicerce-lock`` beside the folder, held with ``fcntl.flock`` for the whole
  run (the kernel releases it when the process dies, so a crash never leaves it held). A second run
  waits up to ``ALICERCE_LOCK_WAIT`` seconds (default 10), then refuses naming the holder's pid.
  The file stays: removing it would let a third run lock a different file than a waiting one.
- **staging**: the new tree is written into ``.NAME.alicerce-stage-XXXXXXXX`` beside the folder;
  every file and folder is fsynced before the swap, and the parent folder after it.
- **swap**: on Linux, ``renameat2(RENAME_EXCHANGE)`` swaps the staging folder and the output
  folder in one system call, so the folder exists at every instant. Where that call is missing
  (other systems, older C libraries, file systems that refuse it) the fallback is two renames
  through ``.NAME.alicerce-old-XXXXXXXX``; a crash between them leaves no folder for a moment,
  and the next run puts the old tree back before anything else.
- **cleanup**: the next run, holding the lock, removes every staging and old folder a crashed run
  left (only names of this exact shape, for this folder).

Fault injection: ``ALICERCE_FAULT=<point>`` makes the writer kill itself with SIGKILL at that
point, ``ALICERCE_FAULT=<point>=<seconds>`` makes it pause there; the tests use both to crash or
overlap runs at exact steps. Points: ``locked``, ``file:N`` (after the Nth staged file),
``staged``, ``between-renames`` (fallback only), ``swapped``, ``done``.
``ALICERCE_RENAME_EXCHANGE=0`` forces the fallback.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from alicerce.emit.errors import OutputError

LEFTOVER = re.compile(r"\.(?P<name>.+)\.alicerce-(?P<kind>stage|old)-(?P<token>[a-z0-9_]{8})")
"""A staging or old folder of a run, beside the output folder ``name``."""

_HINTS = {
    errno.EROFS: "the file system is read-only; choose an output folder on a writable disk",
    errno.EACCES: "you may not write there; check the permissions of the folder",
    errno.EPERM: "you may not write there; check the permissions of the folder",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "your disk quota is used up",
    errno.ENOTDIR: "a folder on the path is a file",
    errno.ENOENT: "a folder on the path cannot be created here",
    errno.EXDEV: "the folder is a mount point; choose a folder inside it",
    errno.EBUSY: "the folder is a mount point or in use; choose a folder inside it",
    errno.ELOOP: "the path loops through symbolic links, or ends in one",
    errno.ENAMETOOLONG: "the path is too long",
}


def os_error(exc: OSError, shown: Path | str) -> OutputError:
    """An OS error while writing ``shown`` (the path the user named), with the path it hit and a hint."""
    at = f" at {exc.filename}" if exc.filename is not None and str(exc.filename) != str(shown) else ""
    return OutputError(f"cannot write {shown}: {exc.strerror or exc}{at}", _HINTS.get(exc.errno or 0))


def fault(point: str) -> None:
    """Crash (SIGKILL) or pause here when ``ALICERCE_FAULT`` names ``point``; tests only."""
    wanted = os.environ.get("ALICERCE_FAULT")
    if not wanted:
        return
    name, _, pause = wanted.partition("=")
    if name != point:
        return
    if pause:
        time.sleep(float(pause))
    else:
        os.kill(os.getpid(), signal.SIGKILL)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_folder(folder: Path) -> None:
    """Make the entries of ``folder`` (creations, renames) durable."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist) with ``data``, fsynced; never follows a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_folder(folder: Path, shown: Path | str | None = None) -> None:
    """Create ``folder`` and its missing parents; anything but a folder on the way is an :class:`OutputError`.

    ``shown`` is the path the user named (messages start with it), ``folder`` by default.
    """
    shown = folder if shown is None else shown
    missing: list[Path] = []
    current = folder
    while True:
        try:
            info = os.stat(current)  # follows links: a link to a folder is a folder
        except (FileNotFoundError, NotADirectoryError):
            missing.append(current)
            current = current.parent
            continue
        except OSError as exc:
            raise os_error(exc, shown) from None
        if not stat.S_ISDIR(info.st_mode):
            what = "it is not a folder" if current == Path(shown) else f"{current} is not a folder"
            raise OutputError(f"cannot write {shown}: {what}", "check the path")
        break
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            if not path.is_dir():
                raise OutputError(f"cannot write {shown}: {path} is not a folder", "check the path") from None
        except OSError as exc:
            raise os_error(exc, shown) from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to regular file ``path`` (through a symlink to its target) in one rename.

    A folder, device or FIFO at ``path`` is refused; missing folders above it are created.
    """
    real = Path(os.path.realpath(path))
    try:
        info: os.stat_result | None = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as exc:
        raise os_error(exc, path) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{path} is a folder", "name a file to write, e.g. a path ending in .json")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OutputError(f"{path} is not a regular file", "name a regular file; without the option the text goes to stdout")
    ensure_folder(real.parent, path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.alicerce-tmp-", dir=real.parent)
    except OSError as exc:
        raise os_error(exc, path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; generated files are ordinary files
        os.replace(tmp, real)
        fsync_folder(real.parent)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise os_error(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stage_files(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` (relative POSIX path -> text) under ``root``, each fsynced, in sorted order."""
    folders = {root}
    for number, (relative, text) in enumerate(sorted(files.items()), start=1):
        path = root / relative
        if path.parent not in folders:
            os.makedirs(path.parent, exist_ok=True)
            folders.update(root / parent for parent in PurePosixPath(relative).parents)
        write_file(path, text.encode("utf-8"))
        fault(f"file:{number}")
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        fsync_folder(folder)


def link_into(source: Path, dest: Path) -> None:
    """Give ``dest`` what ``source`` holds (a file, link, special file or whole folder), leaving ``source`` as it is.

    Hard links where the file system has them (nothing is read, modes and special files are
    kept); copies elsewhere.
    """
    info = os.lstat(source)
    if stat.S_ISDIR(info.st_mode):
        os.makedirs(dest, exist_ok=True)
        for entry in sorted(os.scandir(source), key=lambda e: e.name):
            link_into(Path(entry.path), dest / entry.name)
        os.chmod(dest, stat.S_IMODE(info.st_mode))  # last: a read-only folder is filled first
        fsync_folder(dest)
        return
    os.makedirs(dest.parent, exist_ok=True)
    try:
        os.link(source, dest, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        shutil.copy2(source, dest, follow_symlinks=False)


_WHOLE = "the output folder is replaced whole"


@dataclass(frozen=True)
class Target:
    """An output folder, checked: its absolute path (parent resolved) and the path as the user typed it."""

    path: Path
    shown: str

    @property
    def parent(self) -> Path:
        return self.path.parent

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def lock(self) -> Path:
        return self.parent / f".{self.name}.alicerce-lock"


def check_folder(out: Path, protected: Sequence[Path] = ()) -> Target:
    """Refuse an output-folder path that cannot be a tree alicerce replaces; touches nothing.

    Refused: the current folder or one holding it, a path ending in ``..``, a symbolic link,
    anything that is not a folder, a folder holding one of ``protected`` (the spec) or a ``.git``.
    """
    shown = str(out) if str(out) not in ("", ".") else "."
    cwd = Path.cwd().resolve()
    try:
        resolved = out.resolve()
    except OSError as exc:
        raise os_error(exc, shown) from None
    if resolved == cwd:
        raise OutputError(f"{shown} is the current folder", f"{_WHOLE}: name a folder of its own, e.g. --out out")
    if cwd.is_relative_to(resolved):
        raise OutputError(f"{shown} holds the current folder", f"{_WHOLE}: name a folder of its own, e.g. --out out")
    if out.name in ("", ".", ".."):
        raise OutputError(f"{shown} must end in a folder name", "name the folder itself, e.g. --out out")
    try:
        path = out.absolute().parent.resolve() / out.name
        info: os.stat_result | None = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as exc:
        raise os_error(exc, shown) from None
    if info is None:
        return Target(path, shown)
    if stat.S_ISLNK(info.st_mode):
        raise OutputError(f"{shown} is a symbolic link", "alicerce writes only into a real folder it owns: name that folder, not a link")
    if not stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{shown} is not a folder", "name a new folder, or one alicerce generated before")
    for spec in protected:
        if spec.resolve().is_relative_to(path):
            raise OutputError(f"{shown} holds the spec {spec}", f"{_WHOLE}: keep it apart from the spec, e.g. --out out")
    if os.path.lexists(path / ".git"):
        raise OutputError(f"{shown} holds a Git repository (.git)", f"{_WHOLE}: name a folder inside the repository")
    return Target(path, shown)


def _lock_wait() -> float:
    try:
        return max(0.0, float(os.environ.get("ALICERCE_LOCK_WAIT", "10")))
    except ValueError:
        return 10.0


@contextmanager
def locked(target: Target) -> Iterator[None]:
    """Hold the lock of ``target`` (see the module text): wait for another run, then refuse."""
    ensure_folder(target.parent, target.shown)
    try:
        fd = os.open(target.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise os_error(exc, target.shown) from None
    try:
        deadline = time.monotonic() + _lock_wait()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                    raise OutputError(
                        f"{target.shown} is being written by another alicerce run (pid {holder})",
                        f"wait for it to finish and run again; the lock is {target.lock}",
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        fault("locked")
        yield
    finally:
        os.close(fd)  # releases the lock


def _legacy_old(target: Target) -> Path | None:
    """``.NAME.old``, the old tree the writer before the lock left when it crashed between renames."""
    old = target.parent / f".{target.name}.old"
    return old if os.path.isfile(old / ".alicerce" / "manifest.json") and not os.path.islink(old) else None


def recover(target: Target) -> list[str]:
    """Under the lock: put back an old tree a crash left without a folder, then remove every leftover.

    Returns warnings for leftovers that could not be removed (the next run tries again).
    """
    leftovers = [p for p in target.parent.iterdir() if (m := LEFTOVER.fullmatch(p.name)) and m["name"] == target.name]
    legacy = _legacy_old(target)
    if legacy is not None:
        leftovers.append(legacy)
    if not os.path.lexists(target.path):
        olds = [p for p in leftovers if p == legacy or p.name.startswith(f".{target.name}.alicerce-old-")]
        if olds:
            newest = max(olds, key=lambda p: os.lstat(p).st_mtime_ns)
            os.rename(newest, target.path)
            fsync_folder(target.parent)
            leftovers.remove(newest)
    return [warning for path in leftovers if (warning := remove(path))]


def remove(path: Path) -> str | None:
    """Remove a staging or old folder; a warning when some of it stays."""
    shutil.rmtree(path, ignore_errors=True)
    return f"could not remove {path}; the next run tries again" if os.path.lexists(path) else None


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one system call (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if sys.platform != "linux" or os.environ.get("ALICERCE_RENAME_EXCHANGE") == "0":
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)  # glibc >= 2.28, musl >= 1.2.5
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # the kernel or this file system has no exchange: two renames instead
    raise OSError(code, os.strerror(code), str(b))


def new_staging(target: Target) -> Path:
    """An empty staging folder beside ``target``, with a folder's ordinary permissions."""
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.alicerce-stage-", dir=target.parent))
    os.chmod(staging, 0o777 & ~_umask())
    return staging


def swap_in(target: Target, staging: Path) -> list[str]:
    """Put the complete tree ``staging`` at ``target`` in one step; returns warnings about cleanup."""
    for folder in (staging, target.parent):
        fsync_folder(folder)
    fault("staged")
    if not os.path.lexists(target.path):
        os.rename(staging, target.path)  # the folder appears whole
        fsync_folder(target.parent)
        fault("swapped")
        return []
    os.chmod(staging, stat.S_IMODE(os.stat(target.path).st_mode))  # the folder keeps its permissions
    if _exchange(staging, target.path):
        fsync_folder(target.parent)
        fault("swapped")
        old = staging  # the exchange left the old tree under the staging name
    else:
        old = target.parent / staging.name.replace(".alicerce-stage-", ".alicerce-old-")
        os.rename(target.path, old)
        fsync_folder(target.parent)
        fault("between-renames")
        try:
            os.rename(staging, target.path)
        except OSError:
            os.rename(old, target.path)  # the old tree goes back: the folder is never left missing
            raise
        fsync_folder(target.parent)
        fault("swapped")
    warning = remove(old)
    fsync_folder(target.parent)
    return [warning] if warning else []


def create_tree(target: Path, files: dict[str, str], *, fill: bool = False) -> list[str]:
    """Create folder ``target`` holding ``files``, or add them to it when it exists; returns the paths
    of ``files`` left as they were (already there).

    A new folder appears whole (staged beside it, then one rename); in an existing folder (the
    current one, for ``init .``, or a fresh clone) each file is created and none is replaced: when
    any of ``files`` exists (a file, folder or link of that name) nothing is written, unless
    ``fill``, which writes only the missing ones.
    """
    try:
        if os.path.isdir(target):
            present = sorted(relative for relative in files if os.path.lexists(target / relative))
            if present and not fill:
                shown = ", ".join(present[:5]) + (f" and {len(present) - 5} more" if len(present) > 5 else "")
                raise OutputError(
                    f"{target / present[0]}: already exists ({len(present)} of the {len(files)} files to write: {shown})",
                    "nothing was written; choose a new or empty folder, or --fill to write only the missing files",
                )
            stage_files(target, {relative: text for relative, text in files.items() if relative not in present})
            return present
        if os.path.lexists(target):
            raise OutputError(f"{target} already exists and is not a folder", "choose a new or empty folder")
        checked = Target(target.absolute().parent.resolve() / target.name, str(target))
        ensure_folder(checked.parent, target)
        staging = new_staging(checked)
        try:
            stage_files(staging, files)
            swap_in(checked, staging)
        except BaseException:
            remove(staging)
            raise
    except OSError as exc:
        raise os_error(exc, target) from None
    return []
