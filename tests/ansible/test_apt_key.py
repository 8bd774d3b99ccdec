"""Repository signing keys are trusted only with the catalog's fingerprint (issue 22, supply chain).

The roles install each apt key with ``alicerce_apt_key``: it downloads the key, computes the
fingerprint of each primary key in it (in Python: minimal nodes have gpgv but no gpg) and installs
it only when one is the expected fingerprint. Here it runs through the real ``ansible`` command
against the local signed apt repository's key (tests/ansible/aptrepo.py), whose fingerprint
``gpg --show-keys --with-colons`` gives, with the right fingerprint and a wrong one; and its
fingerprints are checked against gpg's on a real keyring.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from alicerce.catalog.onprem import load_onprem
from tests.conftest import ROOT

ANSIBLE = Path(sys.executable).parent / "ansible"
pytestmark = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg missing")


def apt_key(tmp_path: Path, **args: str) -> tuple[int, dict[str, object]]:
    env = {**os.environ, "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "t")}
    done = subprocess.run(
        [str(ANSIBLE), "localhost", "-c", "local", "-i", "localhost,", "-M", str(ROOT / "alicerce/ansible/library"),
         "-m", "alicerce_apt_key", "-a", json.dumps(args), "-e", f"ansible_python_interpreter={sys.executable}"],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    result = json.loads(done.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return done.returncode, result


def test_the_key_is_installed_only_with_its_fingerprint(aptrepo: dict[str, str], tmp_path: Path) -> None:
    url, right = aptrepo["nvidia_driver_repository_key_url"], aptrepo["nvidia_driver_repository_key_fingerprint"]
    dest = tmp_path / "keyrings" / "alicerce-test.asc"
    dest.parent.mkdir()

    wrong = load_onprem().nodeSoftware.cuda.keyFingerprint  # a real fingerprint, of another key
    rc, result = apt_key(tmp_path, url=url, dest=str(dest), fingerprint=wrong)
    assert rc != 0 and result.get("failed") is True, result
    assert f"has fingerprint {right.upper()}, not {wrong}" in str(result["msg"]) and "refusing" in str(result["msg"])
    assert not dest.exists() and list(dest.parent.iterdir()) == []  # nothing trusted, no temporary file left

    spaced = " ".join(right[i : i + 4] for i in range(0, 40, 4)).lower()  # as fingerprints are often printed
    rc, result = apt_key(tmp_path, url=url, dest=str(dest), fingerprint=spaced)
    assert rc == 0 and result["changed"] is True, result
    with urllib.request.urlopen(url) as served:  # the repository's own key, byte for byte
        assert dest.read_bytes() == served.read()
    assert dest.stat().st_mode & 0o777 == 0o644
    rc, result = apt_key(tmp_path, url=url, dest=str(dest), fingerprint=right)
    assert rc == 0 and result["changed"] is False  # a second run changes nothing

    dest.write_text("a key someone swapped in\n")
    rc, result = apt_key(tmp_path, url=url, dest=str(dest), fingerprint=wrong)
    assert rc != 0 and dest.read_text() == "a key someone swapped in\n"  # a refused key never replaces the file


def test_catalog_fingerprints_are_full_and_cited() -> None:
    software = load_onprem().nodeSoftware
    for repository in (software.cuda, software.containerToolkit):
        assert len(repository.keyFingerprint) == 40 and int(repository.keyFingerprint, 16) >= 0
        assert repository.keySource is not None and repository.keySource.url.startswith("https://")


@pytest.mark.skipif(not Path("/usr/share/keyrings/debian-archive-keyring.gpg").is_file(), reason="no Debian archive keyring here")
def test_the_fingerprints_are_the_ones_gpg_shows(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "alicerce/ansible/library"))
    try:
        from alicerce_apt_key import primary_fingerprints
    finally:
        sys.path.pop(0)
    keyring = Path("/usr/share/keyrings/debian-archive-keyring.gpg")  # binary, several primary keys
    show = ["gpg", "--homedir", str(tmp_path), "--batch", "--show-keys", "--with-colons", str(keyring)]
    colons = subprocess.run(show, capture_output=True, text=True, check=True).stdout
    shown, key = [], ""
    for fields in (line.split(":") for line in colons.splitlines()):
        if fields[0] in ("pub", "sub"):
            key = fields[0]
        elif fields[0] == "fpr" and key == "pub":
            shown, key = [*shown, fields[9]], ""
    assert len(shown) > 1 and primary_fingerprints(keyring.read_bytes()) == shown
    with pytest.raises(ValueError, match="not an OpenPGP packet"):
        primary_fingerprints(b"not a key at all")
