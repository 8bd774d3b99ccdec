"""A local, signed apt repository of placeholder packages with the real names and versions.

The vendor repositories the roles add (NVIDIA's CUDA and container toolkit repositories, a Lustre
mirror) cannot be reached from the test machines, so the converges get the same flat repository
layout on loopback HTTP instead: a throwaway GPG key signs each repository's ``InRelease``, the
packages carry the names and versions the roles pin (plus a newer driver the pin must refuse),
and the files they ship are the ones the roles act on (the persistence daemon's unit with
``--no-persistence-mode``, Fabric Manager's config with its failure-mode keys, the CDI refresh
units, ``nvidia-ctk``). apt then runs its real flow: key download, ``Signed-By``, a cache refresh
after each new repository, pins and holds.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DRIVER = "580.173.02"
TOOLKIT = "1.18.2"
LUSTRE = "2.15.1"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    files: dict[str, str] = field(default_factory=dict)  # path in the package -> content (under EXECUTABLES: mode 0755)
    depends: str = ""


EXECUTABLES = ("/usr/bin/",)
PERSISTENCED_UNIT = """[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target

[Service]
Type=forking
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced

[Install]
WantedBy=multi-user.target
"""
FABRICMANAGER_CFG = """# placeholder of /usr/share/nvidia/nvswitch/fabricmanager.cfg with its documented keys
LOG_LEVEL=4
FABRIC_MODE=0
FABRIC_MODE_RESTART=0
FM_STAY_RESIDENT_ON_FAILURES=0
ACCESS_LINK_FAILURE_MODE=0
TRUNK_LINK_FAILURE_MODE=0
NVSWITCH_FAILURE_MODE=0
ABORT_CUDA_JOBS_ON_FM_EXIT=1
"""
# the head of the config.toml the toolkit writes (v1.18.2 internal/config/toml_test.go; tests/data/upstream/nvidia-container-toolkit)
TOOLKIT_CONFIG = """#accept-nvidia-visible-devices-as-volume-mounts = false
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
disable-require = false

[nvidia-container-cli]
#debug = "/var/log/nvidia-container-toolkit.log"
environment = []
load-kmods = true
#root = "/run/nvidia/driver"
#user = "root:video"
"""
UNIT = "[Unit]\nDescription={what}\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"
PATH_UNIT = "[Unit]\nDescription={what}\n\n[Path]\nPathChanged=/lib/modules/%v/modules.dep\n\n[Install]\nWantedBy=multi-user.target\n"
STUB = "#!/bin/sh\necho '{text}'\n"


def repositories() -> dict[str, list[Package]]:
    """Repository path (as the roles compose it) -> the packages in it."""
    driver = [
        Package("nvidia-open", DRIVER, depends=f"nvidia-persistenced (= {DRIVER}-1)"),
        # a newer driver of the same branch: the spec's pin must keep the node at DRIVER
        Package("nvidia-open", "580.999.01", depends="nvidia-persistenced (= 580.999.01-1)"),
        Package(
            "nvidia-persistenced",
            DRIVER,
            {
                "/lib/systemd/system/nvidia-persistenced.service": PERSISTENCED_UNIT,
                "/usr/bin/nvidia-persistenced": STUB.format(text=DRIVER),
            },
        ),
        Package("nvidia-persistenced", "580.999.01", {"/lib/systemd/system/nvidia-persistenced.service": PERSISTENCED_UNIT}),
        Package(
            "nvidia-fabricmanager",
            DRIVER,
            {
                "/usr/share/nvidia/nvswitch/fabricmanager.cfg": FABRICMANAGER_CFG,
                "/lib/systemd/system/nvidia-fabricmanager.service": UNIT.format(what="NVIDIA fabric manager service"),
            },
        ),
        Package("libnvidia-nscq", DRIVER),
    ]
    toolkit = [
        Package("nvidia-container-toolkit", TOOLKIT, {"/usr/bin/nvidia-container-runtime": STUB.format(text="runtime")}),
        Package(
            "nvidia-container-toolkit-base",
            TOOLKIT,
            {
                "/usr/bin/nvidia-ctk": STUB.format(text=f"NVIDIA Container Toolkit CLI version {TOOLKIT}"),
                "/etc/nvidia-container-runtime/config.toml": TOOLKIT_CONFIG,
                "/lib/systemd/system/nvidia-cdi-refresh.service": UNIT.format(what="Refresh NVIDIA CDI specification file"),
                "/lib/systemd/system/nvidia-cdi-refresh.path": PATH_UNIT.format(
                    what="Trigger CDI refresh on NVIDIA driver install / uninstall events"
                ),
            },
        ),
        Package("libnvidia-container-tools", TOOLKIT),
        Package("libnvidia-container1", TOOLKIT),
    ]
    lustre = [Package("lustre-client-modules-dkms", LUSTRE), Package("lustre-client-utils", LUSTRE)]
    return {
        "cuda/debian12/x86_64": driver,
        "libnvidia-container/stable/deb/amd64": toolkit,
        f"lustre/lustre-{LUSTRE}/debian12/client": lustre,
    }


def _gpg(home: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback", "--passphrase", "", *args],
        input=stdin,
        capture_output=True,
        check=True,
    )
    return done.stdout


def _deb(package: Package, out: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "DEBIAN").mkdir()
        control = [
            f"Package: {package.name}",
            f"Version: {package.version}-1",
            "Architecture: amd64",
            "Maintainer: alicerce tests <tests@alicerce.invalid>",
            f"Description: placeholder of {package.name} {package.version} for the converge tests",
        ]
        if package.depends:
            control.insert(3, f"Depends: {package.depends}")
        (root / "DEBIAN" / "control").write_text("\n".join(control) + "\n")
        for path, content in package.files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            target.chmod(0o755 if path.startswith(EXECUTABLES) else 0o644)
        deb = out / f"{package.name}_{package.version}-1_amd64.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)], check=True, capture_output=True)
    return deb


def _packages_index(debs: list[Path]) -> str:
    stanzas = []
    for deb in debs:
        control = subprocess.run(["dpkg-deb", "--field", str(deb)], capture_output=True, text=True, check=True).stdout.strip()
        data = deb.read_bytes()
        stanzas.append(
            f"{control}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
            f"MD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}"
        )
    return "\n\n".join(stanzas) + "\n"


def _digest() -> str:
    """What a built repository depends on: the packages and this module's code (which builds them)."""
    return hashlib.sha256(repr(repositories()).encode() + Path(__file__).read_bytes()).hexdigest()


def build(target: Path) -> Path:
    """Build the repositories under ``target`` (once per content): returns ``target``; the key is ``target/key.asc``.

    Built in a temporary sibling that is renamed into place when complete, as the rootfs is: two test workers
    that build the same repository at once keep whichever finished first, and an interrupted build leaves
    nothing a later run would trust. A repository whose stamp names other inputs is replaced.
    """
    stamp = target / ".alicerce-aptrepo"
    digest = _digest()
    if stamp.is_file() and stamp.read_text() == digest:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _build(staging)
        (staging / stamp.name).write_text(digest)
        if target.exists() and not (stamp.is_file() and stamp.read_text() == digest):
            shutil.rmtree(target, ignore_errors=True)  # another content's repository
        try:
            os.replace(staging, target)
        except OSError:  # another worker renamed its build into place first: the same inputs, kept
            if not (stamp.is_file() and stamp.read_text() == digest):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def default_target() -> Path:
    """Where the repository is cached: per user, like the rootfs, one folder per content (~5 CPU-s a build saved
    per test worker and run); $ALICERCE_APTREPO names another folder."""
    if os.environ.get("ALICERCE_APTREPO"):
        return Path(os.environ["ALICERCE_APTREPO"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "alicerce" / "aptrepo" / _digest()[:16]


def _build(target: Path) -> None:
    # gpg's agent socket lives in its home: a short temporary one (a unix socket path holds ~107 bytes)
    with tempfile.TemporaryDirectory(prefix="alicerce-gpg-") as gpg_home:
        _sign_and_fill(target, Path(gpg_home))


def _sign_and_fill(target: Path, home: Path) -> None:
    _gpg(home, "--quick-gen-key", "alicerce test repository <tests@alicerce.invalid>", "ed25519", "sign", "never")
    (target / "key.asc").write_bytes(_gpg(home, "--armor", "--export"))
    for path, packages in repositories().items():
        repo = target / path
        repo.mkdir(parents=True)
        index = _packages_index([_deb(p, repo) for p in packages])
        (repo / "Packages").write_text(index)
        (repo / "Packages.gz").write_bytes(gzip.compress(index.encode(), mtime=0))
        hashes = [
            f" {hashlib.sha256((repo / name).read_bytes()).hexdigest()} {(repo / name).stat().st_size} {name}"
            for name in ("Packages", "Packages.gz")
        ]
        release = (
            "Origin: alicerce-tests\nLabel: alicerce-tests\nArchitectures: amd64\n"
            "Date: Mon, 01 Jan 2024 00:00:00 UTC\nSHA256:\n" + "\n".join(hashes) + "\n"
        )
        (repo / "Release").write_text(release)
        (repo / "InRelease").write_bytes(_gpg(home, "--clearsign", "--digest-algo", "SHA256", stdin=release.encode()))
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False, capture_output=True)  # no agent outlives the build


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` on loopback HTTP for the block; yields the base URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def fingerprint(root: Path) -> str:
    """The fingerprint of the repositories' signing key ``root/key.asc``, as gpg lists it."""
    with tempfile.TemporaryDirectory() as home:
        colons = subprocess.run(
            ["gpg", "--homedir", home, "--batch", "--show-keys", "--with-colons", str(root / "key.asc")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return next(line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:"))


def role_vars(url: str, root: Path) -> dict[str, str]:
    """The variables that point the roles at the local repositories and their key (with its fingerprint)."""
    key = f"{url}/key.asc"
    return {
        "nvidia_driver_repository_url": f"{url}/cuda",
        "nvidia_driver_repository_key_url": key,
        "nvidia_driver_repository_key_fingerprint": fingerprint(root),
        "nvidia_container_toolkit_repository_url": f"{url}/libnvidia-container",
        "nvidia_container_toolkit_repository_key_url": key,
        "nvidia_container_toolkit_repository_key_fingerprint": fingerprint(root),
        "parallel_fs_client_lustre_repository_url": f"{url}/lustre/lustre-{LUSTRE}",
        "parallel_fs_client_lustre_repository_key_url": key,
        "parallel_fs_client_lustre_repository_key_fingerprint": fingerprint(root),
    }


if __name__ == "__main__":
    print(build(default_target()))
