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
- **record**: before a staging folder exists its token is written to the lock file (fsynced), so
  ``.NAME.alicerce-stage-TOKEN`` and ``.NAME.alicerce-old-TOKEN`` are provably alicerce's; a
  folder of that shape whose token is not recorded is the user's and is never removed.
- **cleanup**: the next run, holding the lock, puts back an old tree a crash left without a folder
  (when the user made an empty folder there meanwhile, the empty folder gives way; a non-empty one
  stops the run, the old tree left beside it) and removes every recorded leftover. Removal never
  crosses a mount point; a folder that is or holds a mount point is never replaced. Recorded
  leftovers that cannot be removed stop the runs at :data:`MAX_LEFTOVERS`.

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
import json
import os
import re
import secrets
import shutil
import signal
import stat
import string
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from alicerce.emit.errors import OutputError

LEFTOVER = re.compile(r"\.(?P<name>.+)\.alicerce-(?P<kind>stage|old)-(?P<token>[a-z0-9_]{8})", re.DOTALL)
"""A staging or old folder of a run, beside the output folder ``name``."""

_TOKEN = string.ascii_lowercase + string.digits

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


def write_text_atomic(path: Path, text: str, *, through_links: bool = True) -> None:
    """Write ``text`` (UTF-8) to regular file ``path`` in one rename; see :func:`write_bytes_atomic`."""
    write_bytes_atomic(path, text.encode("utf-8"), through_links=through_links)


def write_bytes_atomic(path: Path, data: bytes, *, through_links: bool = True) -> None:
    """Write ``data`` to regular file ``path`` (through a symlink to its target) in one rename.

    A folder, device or FIFO at ``path`` is refused, and so is a link that points nowhere (writing
    through it would create folders wherever it points); missing folders above ``path`` are created.
    With ``through_links=False`` (files alicerce owns in a folder it shares with the user) a link
    at ``path`` is replaced itself: what it points to is never written.
    """
    if through_links and os.path.islink(path) and not os.path.exists(path):
        raise OutputError(
            f"{path} is a symbolic link to {os.readlink(path)}, which does not exist", "name the file itself, or fix the link"
        )
    real = Path(os.path.realpath(path)) if through_links else Path(os.path.realpath(path.absolute().parent)) / path.name
    try:
        info: os.stat_result | None = os.stat(real) if through_links else os.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as exc:
        raise os_error(exc, path) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{path} is a folder", "name a file to write, e.g. a path ending in .json")
    if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISLNK(info.st_mode):
        raise OutputError(f"{path} is not a regular file", "name a regular file; without the option the text goes to stdout")
    ensure_folder(real.parent, path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.alicerce-tmp-", dir=real.parent)
    except OSError as exc:
        raise os_error(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
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


MANIFEST = ".alicerce/manifest.json"
SHARED_MANIFEST = ".alicerce-manifest.json"
SHARED_DISPLACED = ".alicerce-displaced/"
"""In a folder alicerce shares with the user (``.github/workflows`` holds the user's own workflows
too), its manifest and the place ``--force`` moves replaced files to. GitHub reads only the ``.yml``
and ``.yaml`` files directly in the workflows folder, so neither is ever run as a workflow."""
MAX_MANIFEST_BYTES = 64 * 2**20


def _safe_relative(path: object) -> bool:
    """A manifest entry that names a file inside the tree: relative, no ``..``, no NUL, no empty part."""
    if not isinstance(path, str) or not path or "\0" in path or path.startswith("/"):
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def read_manifest(out: Path, name: str = MANIFEST) -> tuple[dict[str, str], str | None]:
    """The digests of manifest ``out/name``, or ({}, why) when it cannot be read or is not alicerce's shape.

    The manifest is read as hostile input: a link, a huge or deeply nested file, or an entry naming
    a path outside the tree (``../x``, ``/etc/passwd``, a NUL byte) makes it unreadable, never a
    traceback and never a path alicerce reads or writes.
    """
    why = f"{name} cannot be read"
    try:
        fd = os.open(out / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return {}, f"{why} ({exc.strerror})"
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return {}, f"{why} (not a regular file)"
            data = handle.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            return {}, f"{why} (over {MAX_MANIFEST_BYTES // 2**20} MiB)"
        files = json.loads(data)["files"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
        return {}, f"{why} ({type(exc).__name__}: {str(exc)[:120]})"
    if not isinstance(files, dict) or not all(_safe_relative(k) and isinstance(v, str) for k, v in files.items()):
        return {}, f"{name} has no valid file list"
    return files, None


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
    if "\0" in str(out):  # not from a command line, but from any caller: never a ValueError deeper down
        raise OutputError(f"{shown!r} holds a NUL character", "name a folder with a plain path")
    # os.path.realpath, not Path.resolve: Python 3.11's raises RuntimeError on a symlink loop
    try:
        cwd = Path(os.path.realpath(Path.cwd()))
        resolved = Path(os.path.realpath(out))
    except OSError as exc:
        raise os_error(exc, shown) from None
    if resolved == cwd:
        raise OutputError(f"{shown} is the current folder", f"{_WHOLE}: name a folder of its own, e.g. --out out")
    if cwd.is_relative_to(resolved):
        raise OutputError(f"{shown} holds the current folder", f"{_WHOLE}: name a folder of its own, e.g. --out out")
    if out.name in ("", ".", ".."):
        raise OutputError(f"{shown} must end in a folder name", "name the folder itself, e.g. --out out")
    try:
        path = Path(os.path.realpath(out.absolute().parent)) / out.name
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
        if Path(os.path.realpath(spec)).is_relative_to(path):
            raise OutputError(f"{shown} holds the spec {spec}", f"{_WHOLE}: keep it apart from the spec, e.g. --out out")
    if os.path.lexists(path / ".git"):
        raise OutputError(f"{shown} holds a Git repository (.git)", f"{_WHOLE}: name a folder inside the repository")
    refuse_mounts(path, shown)
    return Target(path, shown)


def refuse_mounts(path: Path, shown: str) -> None:
    """Refuse a folder that is, or holds, a mount point: replacing it would move or delete what the mount shows."""
    found = mount_points(path)
    if found == [path]:
        raise OutputError(f"{shown} is a mount point", f"{_WHOLE}, which a mount point cannot be: name a folder inside it")
    if found:
        inside = ", ".join(str(p.relative_to(path)) for p in found[:5])
        raise OutputError(f"{shown} holds a mount point ({inside})", f"{_WHOLE}: unmount it, or mount it outside the output folder")


def _lock_wait() -> float:
    try:
        return max(0.0, float(os.environ.get("ALICERCE_LOCK_WAIT", "10")))
    except ValueError:
        return 10.0


_RECORD = re.compile(r"^stage (?P<token>[a-z0-9_]{8})$", re.MULTILINE)
MAX_LEFTOVERS = 3
"""Recorded leftovers that could not be removed before a run refuses to add one more."""


@dataclass
class Lock:
    """The held lock of a target, and its record of the staging tokens runs made and did not clean.

    The lock file holds the holder's pid on its first line, then one ``stage TOKEN`` line per
    staging folder made and not yet removed: ``.NAME.alicerce-stage-TOKEN`` and
    ``.NAME.alicerce-old-TOKEN`` are alicerce's only when their token is recorded here, so a
    folder of the same shape that the user made is never removed.
    """

    fd: int
    target: Target
    tokens: list[str] = field(default_factory=list)

    def holder(self) -> str:
        return os.pread(self.fd, 32, 0).decode("ascii", "replace").split("\n", 1)[0].strip() or "unknown"

    def read(self) -> None:
        text = os.pread(self.fd, 1 << 16, 0).decode("ascii", "replace")
        self.tokens = list(dict.fromkeys(m["token"] for m in _RECORD.finditer(text)))

    def save(self) -> None:
        """Write pid and tokens, durable before any folder they name is made: write, then cut the tail."""
        data = "".join([f"{os.getpid()}\n", *(f"stage {token}\n" for token in self.tokens)]).encode()
        os.pwrite(self.fd, data, 0)
        os.ftruncate(self.fd, len(data))
        os.fsync(self.fd)

    def names(self, token: str) -> tuple[Path, Path]:
        """The staging and old folder of ``token``."""
        return (
            self.target.parent / f".{self.target.name}.alicerce-stage-{token}",
            self.target.parent / f".{self.target.name}.alicerce-old-{token}",
        )


@contextmanager
def locked(target: Target) -> Iterator[Lock]:
    """Hold the lock of ``target`` (see the module text): wait for another run, then refuse."""
    ensure_folder(target.parent, target.shown)
    try:
        fd = os.open(target.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        raise os_error(exc, target.shown) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputError(f"cannot lock {target.shown}: {target.lock} is not a regular file", "remove it and run again")
        lock = Lock(fd, target)
        deadline = time.monotonic() + _lock_wait()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OutputError(
                        f"{target.shown} is being written by another alicerce run (pid {lock.holder()})",
                        f"wait for it to finish and run again; the lock is {target.lock}",
                    ) from None
                time.sleep(0.05)
        lock.read()
        lock.save()
        fault("locked")
        yield lock
    finally:
        os.close(fd)  # releases the lock


def _legacy_old(target: Target) -> Path | None:
    """``.NAME.old``, the old tree the writer before the lock left when it crashed between renames."""
    old = target.parent / f".{target.name}.old"
    return old if os.path.isfile(old / ".alicerce" / "manifest.json") and not os.path.islink(old) else None


def _put_back(old: Path, target: Target) -> None:
    os.rename(old, target.path)
    fsync_folder(target.parent)


def _is_empty_folder(path: Path) -> bool:
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def recover(target: Target, lock: Lock) -> list[str]:
    """Under the lock: put back an old tree a crash left without a folder, then remove the leftovers runs recorded.

    Only folders whose token the lock file records are removed; ``.NAME.old`` (the writer before
    the lock) is put back when the folder is missing and otherwise left alone, like any
    leftover-shaped folder nobody recorded (a warning names it). Returns warnings; raises
    :class:`OutputError` when the folder was replaced by the user after a crash left the previous
    tree beside it, or when recorded leftovers pile up.
    """
    warnings: list[str] = []
    legacy = _legacy_old(target)
    if legacy is not None and not os.path.lexists(target.path):
        _put_back(legacy, target)
    remaining: list[str] = []
    for token in reversed(lock.tokens):  # the newest first: its old tree is the one to put back
        stage, old = lock.names(token)
        if os.path.lexists(old):
            if not os.path.lexists(target.path):
                _put_back(old, target)
            elif os.path.lexists(stage):
                # the crash came between the two renames: the new tree never arrived, so what stands
                # at the folder's place now was made by someone else after the crash
                if not _is_empty_folder(target.path):
                    raise OutputError(
                        f"{target.shown} was made anew after a crashed run left the previous tree in {old}",
                        f"move {target.shown} aside, rename {old} back to {target.shown}, and run again",
                    )
                os.rmdir(target.path)
                _put_back(old, target)
        for path in (stage, old):
            if os.path.lexists(path) and (warning := remove(path)):
                warnings.append(warning)
        if os.path.lexists(stage) or os.path.lexists(old):
            remaining.append(token)
    lock.tokens = list(reversed(remaining))
    lock.save()
    if len(lock.tokens) >= MAX_LEFTOVERS:
        raise OutputError(
            f"{len(lock.tokens)} folders earlier runs left beside {target.shown} cannot be removed",
            f"remove the folders named .{target.name}.alicerce-stage-* and .{target.name}.alicerce-old-* yourself, then run again",
        )
    for path in sorted(target.parent.iterdir()):
        match = LEFTOVER.fullmatch(path.name)
        if match and match["name"] == target.name and match["token"] not in lock.tokens:
            warnings.append(f"left {path} alone: no alicerce run recorded making it; remove it if it is not yours")
    return warnings


def remove(path: Path) -> str | None:
    """Remove a staging or old folder of alicerce's, never crossing into another file system; a warning when some stays."""
    try:
        device = os.lstat(path).st_dev
    except FileNotFoundError:
        return None
    except OSError:
        return f"could not remove {path}; the next run tries again"
    if _purge(path, device, _mounted()):
        return None
    return f"could not remove all of {path} (a mount point, or no permission); the next run tries again"


def _purge(path: Path, device: int, table: frozenset[str]) -> bool:
    """Remove ``path`` and what it holds; stops at a mount point (another device). True when all is gone."""
    try:
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            return True
        if info.st_dev != device or is_mount(path, table):
            return False  # a bind or other mount inside the tree: what it shows is not ours
        if info.st_mode & 0o700 != 0o700:
            os.chmod(path, stat.S_IMODE(info.st_mode) | 0o700)  # a read-only folder copied from the user's
        with os.scandir(path) as entries:
            names = [entry.name for entry in entries]
        removed = [_purge(path / name, device, table) for name in names]  # every entry, not up to the first that stays
        complete = all(removed)
        if complete:
            os.rmdir(path)
        return complete
    except FileNotFoundError:
        return True
    except (OSError, RecursionError):
        return False


def _mounted() -> frozenset[str]:
    """Every mount point of this process (Linux ``/proc/self/mountinfo``; empty elsewhere).

    ``os.path.ismount`` cannot see a bind mount of a folder on the same file system (same device,
    different inode than its parent's), so the mount table is read as well.
    """
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
            fields = [line.split(" ") for line in table]
    except OSError:
        return frozenset()
    unescape = re.compile(r"\\([0-7]{3})")  # spaces, tabs, newlines and backslashes in paths are octal escapes
    return frozenset(unescape.sub(lambda m: chr(int(m[1], 8)), row[4]) for row in fields if len(row) > 4)


def is_mount(path: Path, table: frozenset[str] | None = None) -> bool:
    """True when ``path`` (not followed if a link) is a mount point, bind mounts included."""
    if os.path.islink(path):
        return False
    if os.path.ismount(path):
        return True
    return os.path.realpath(path) in (_mounted() if table is None else table)


def mount_points(folder: Path) -> list[Path]:
    """Mount points at or under ``folder`` (links are not followed): a tree that holds one is not replaced."""
    table = _mounted()
    try:
        root = os.lstat(folder)
    except OSError:
        return []
    if is_mount(folder, table):
        return [folder]
    found: list[Path] = []
    for current, folders, _ in os.walk(folder):
        for name in list(folders):
            path = Path(current, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and (info.st_dev != root.st_dev or is_mount(path, table)):
                found.append(path)
                folders.remove(name)
    return sorted(found)


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


def new_staging(target: Target, lock: Lock | None = None) -> Path:
    """An empty staging folder beside ``target``, with a folder's ordinary permissions.

    With ``lock`` its token is recorded in the lock file before the folder exists, so that a crash
    leaves a folder the next run knows is alicerce's.
    """
    while True:
        token = "".join(secrets.choice(_TOKEN) for _ in range(8))
        staging = target.parent / f".{target.name}.alicerce-stage-{token}"
        if lock is not None:
            lock.tokens.append(token)
            lock.save()
        try:
            os.mkdir(staging, 0o777)  # the umask applies, as to any folder
            return staging
        except FileExistsError:
            if lock is not None:
                lock.tokens.remove(token)
            continue


def forget(lock: Lock, staging: Path) -> None:
    """Drop the record of ``staging``'s token once neither of its folders is left."""
    token = staging.name.rsplit("-", 1)[1]
    if token in lock.tokens and not any(os.path.lexists(path) for path in lock.names(token)):
        lock.tokens.remove(token)
        lock.save()


def swap_in(target: Target, staging: Path, settle: Callable[[Path], list[str]] | None = None) -> list[str]:
    """Put the complete tree ``staging`` at ``target`` in one step; returns warnings about cleanup.

    ``settle`` is called with the old tree once it is out of the way, before it is removed: what a
    user saved into it after the last check (the instant before the swap) is carried from there.
    """
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
    notes = settle(old) if settle is not None else []
    warning = remove(old)
    fsync_folder(target.parent)
    return notes + ([warning] if warning else [])


def _undo_fill(folder: Path, written: Sequence[str], existed: set[str]) -> None:
    """Remove what a failed fill of ``folder`` created: the files of ``written`` (none existed before)
    and the folders it made (not those in ``existed``); never anything else of the folder's."""
    for relative in written:
        path = folder / relative
        with suppress(OSError):
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
    parents = {parent for relative in written for parent in PurePosixPath(relative).parents if str(parent) not in existed}
    for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        with suppress(OSError):
            os.rmdir(folder / parent)  # only an empty folder goes: one of the user's keeps its files


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
            missing = {relative: text for relative, text in files.items() if relative not in present}
            # a folder of the tree that is a link (.github -> elsewhere) would take the files outside the folder named
            links = sorted({str(p) for r in missing for p in PurePosixPath(r).parents if str(p) != "." and os.path.islink(target / p)})
            if links:
                raise OutputError(
                    f"{target / links[0]}: is a symbolic link, and alicerce writes only into real folders inside {target}",
                    "nothing was written; replace the link by a folder, or init a new folder",
                )
            existed = {str(p) for relative in missing for p in PurePosixPath(relative).parents if os.path.isdir(target / p)}
            try:
                stage_files(target, missing)
            except BaseException:
                # a failed init leaves the folder as it found it, never half filled
                _undo_fill(target, list(missing), existed)
                raise
            return present
        if os.path.lexists(target):
            raise OutputError(f"{target} already exists and is not a folder", "choose a new or empty folder")
        checked = Target(Path(os.path.realpath(target.absolute().parent)) / target.name, str(target))
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
