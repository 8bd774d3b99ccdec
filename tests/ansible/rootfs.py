"""Build (once) and cache a minimal Debian 12 root file system for the real Ansible converges.

``python -m tests.ansible.rootfs DIR`` runs ``mmdebstrap --variant=minbase bookworm`` (or, where it
is not installed, ``debootstrap``) from the Debian mirror this machine's apt already uses (read from
/etc/apt at run time, so no mirror is named in the code), into a temporary sibling that is renamed
into place when complete. mmdebstrap fetches with apt, in parallel: ~40-70 s here where debootstrap
took ~3.7 minutes, for the same packages at the same versions (its merged-usr hook sets /usr up
the way debootstrap does, with usr-is-merged rather than the usrmerge package and its perl, and the
package lists are kept as debootstrap keeps them). A finished
rootfs carries a stamp file and is reused. Under ``CI=true`` a missing tool is an error; elsewhere
the build is skipped with a message (exit code 3) and the converge tests skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SUITE = "bookworm"
STAMP = ".alicerce-rootfs"
# What every server OS has and minbase leaves out (python3 and python3-apt for Ansible's apt
# module; systemd, udev and kmod for services, device rules and module config); the roles install
# everything else themselves.
INCLUDE = ("python3", "python3-apt", "systemd", "udev", "kmod")
EXIT_SKIPPED = 3


def _deb822_uris(text: str) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        suites = fields.get("suites", "").split()
        found.extend((uri, suites) for uri in fields.get("uris", "").split())
    return found


def _one_line_uris(text: str) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        parts = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
        if len(parts) >= 3 and parts[0] == "deb":
            found.append((parts[1], [parts[2]]))
    return found


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The URI of the first apt source that serves the Debian ``bookworm`` suite itself."""
    sources: list[tuple[str, list[str]]] = []
    for path in sorted(apt_dir.glob("sources.list.d/*.sources")):
        sources.extend(_deb822_uris(path.read_text(encoding="utf-8", errors="replace")))
    for path in [apt_dir / "sources.list", *sorted(apt_dir.glob("sources.list.d/*.list"))]:
        if path.is_file():
            sources.extend(_one_line_uris(path.read_text(encoding="utf-8", errors="replace")))
    for uri, suites in sources:
        if SUITE in suites:
            return uri
    raise LookupError(f"no apt source for Debian {SUITE} in {apt_dir}; set ALICERCE_DEBIAN_MIRROR")


def _stamp_key() -> str:
    return f"debian {SUITE} minbase +{','.join(INCLUDE)}"


# mmdebstrap's hook that merges /usr as debootstrap does (Debian's mmdebstrap package ships it here)
MERGED_USR_HOOK = Path("/usr/share/mmdebstrap/hooks/merged-usr")


def _sbin(name: str) -> str | None:
    return shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)


def bootstrapper() -> str | None:
    """mmdebstrap where it is installed with its merged-usr hook, else debootstrap, else None."""
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is not None and MERGED_USR_HOOK.is_dir():
        return mmdebstrap
    return _sbin("debootstrap")


def bootstrap_command(tool: str, staging: Path, mirror: str) -> list[str]:
    """The command that builds the minbase image into ``staging``: the same packages with either tool."""
    common = ["--variant=minbase", f"--include={','.join(INCLUDE)}"]
    if Path(tool).name == "mmdebstrap":
        # merged /usr the debootstrap way (usr-is-merged, no usrmerge and perl); apt's lists kept, as debootstrap keeps them
        common += ["--quiet", f"--hook-dir={MERGED_USR_HOOK}", "--skip=cleanup/apt/lists"]
    return [tool, *common, SUITE, str(staging), mirror]


def build(target: Path) -> Path:
    target = target.absolute()
    if (target / STAMP).is_file() and (target / STAMP).read_text(encoding="utf-8").startswith(_stamp_key()):
        return target
    tool = bootstrapper()
    if tool is None or os.geteuid() != 0:
        why = "neither mmdebstrap nor debootstrap is installed" if tool is None else "building a rootfs needs root"
        raise FileNotFoundError(why)
    mirror = os.environ.get("ALICERCE_DEBIAN_MIRROR") or debian_mirror()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        # the merged-usr hook narrates its dpkg and apt runs on stderr: shown only when the build fails
        done = subprocess.run(bootstrap_command(tool, staging, mirror), check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if done.returncode != 0:
            sys.stderr.buffer.write(done.stderr)
            raise subprocess.CalledProcessError(done.returncode, done.args)
        # keep the image small and the converges quick: no man pages or docs from later installs
        (staging / "etc/dpkg/dpkg.cfg.d/01-alicerce-nodoc").write_text(
            "path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n", encoding="utf-8"
        )
        # services are never started inside the image (policy-rc.d 101: "action not allowed")
        policy = staging / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n", encoding="utf-8")
        policy.chmod(0o755)
        (staging / STAMP).write_text(f"{_stamp_key()} from {mirror}\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def default_target() -> Path:
    """Where the rootfs is cached: $ALICERCE_ROOTFS, else per user (like uv's cache), so every clone shares one."""
    if os.environ.get("ALICERCE_ROOTFS"):
        return Path(os.environ["ALICERCE_ROOTFS"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "alicerce" / "rootfs" / SUITE


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else default_target()
    try:
        print(f"rootfs ready: {build(target)}")
    except (FileNotFoundError, LookupError) as exc:
        if os.environ.get("CI", "").lower() == "true":
            print(f"error: cannot build the Debian rootfs: {exc}", file=sys.stderr)
            return 1
        print(f"skipped: cannot build the Debian rootfs ({exc}); the converge tests will skip", file=sys.stderr)
        return EXIT_SKIPPED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
