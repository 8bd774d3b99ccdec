#!/usr/bin/python
"""Install an apt repository signing key only when its fingerprint is the one alicerce's catalog publishes."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: alicerce_apt_key
short_description: Download a repository signing key, check its fingerprint, then install it
description:
  - Downloads I(url), computes the fingerprint of each primary key in it (the OpenPGP fingerprint gpg shows:
    SHA-1 of a version 4 key packet, SHA-256 of a version 6 one; RFC 9580 section 5.5.4) and installs it at
    I(dest) only when one of them is I(fingerprint); otherwise it fails naming both, and I(dest) is left as it
    was. The file is replaced in one rename. Nothing but Python runs on the node (minimal systems ship
    gpgv, which cannot list a key, but no gpg).
options:
  url:
    description: Where the key is published (ASCII-armoured or binary OpenPGP).
    type: str
    required: true
  dest:
    description: The keyring file apt's C(Signed-By) names.
    type: path
    required: true
  fingerprint:
    description: The full fingerprint the key must have, 40 hex digits (64 for a version 6 key); spaces and case do not matter.
    type: str
    required: true
author:
  - alicerce
"""

EXAMPLES = r"""
- name: Install the CUDA repository signing key
  alicerce_apt_key:
    url: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/3bf863cc.pub
    dest: /etc/apt/keyrings/alicerce-nvidia-cuda.asc
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
"""

RETURN = r"""
fingerprints:
  description: Fingerprints of the primary keys in the downloaded file.
  returned: always
  type: list
  elements: str
"""

import base64  # noqa: E402  (Ansible modules document themselves before importing)
import binascii  # noqa: E402
import hashlib  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.urls import fetch_url  # noqa: E402

MAX_KEY_BYTES = 1 << 20  # a keyring is kilobytes; anything larger is not a key


def _dearmor(data: bytes) -> bytes:
    """The binary packets of an ASCII-armoured key (armor headers and the CRC line dropped); binary input as it is."""
    text = data.decode("ascii", "replace")
    if "-----BEGIN PGP PUBLIC KEY BLOCK-----" not in text:
        return data
    body = text.split("-----BEGIN PGP PUBLIC KEY BLOCK-----", 1)[1].split("-----END PGP PUBLIC KEY BLOCK-----", 1)[0]
    lines = [line.strip() for line in body.strip("\r\n").splitlines()]
    if "" in lines and all(":" in line for line in lines[: lines.index("")]):
        lines = lines[lines.index("") + 1 :]  # armor headers (Version: ...) end at the first blank line
    return base64.b64decode("".join(line.strip() for line in lines if line.strip() and not line.startswith("=")), validate=True)


def primary_fingerprints(data: bytes) -> list[str]:
    """The fingerprint of each primary key (packet tag 6) in ``data``, upper-case hex; raises ValueError on a malformed one."""
    packets = _dearmor(data)
    found: list[str] = []
    at = 0
    while at < len(packets):
        header = packets[at]
        if not header & 0x80:
            raise ValueError("not an OpenPGP packet")
        if header & 0x40:  # new format
            tag, first = header & 0x3F, packets[at + 1]
            if first < 192:
                length, at = first, at + 2
            elif first < 224:
                length, at = ((first - 192) << 8) + packets[at + 2] + 192, at + 3
            elif first == 255:
                length, at = int.from_bytes(packets[at + 2 : at + 6], "big"), at + 6
            else:
                raise ValueError("partial body lengths do not occur in keys")
        else:  # old format
            tag, kind = (header >> 2) & 0x0F, header & 0x03
            if kind == 3:
                length, at = len(packets) - at - 1, at + 1
            else:
                size = (1, 2, 4)[kind]
                length, at = int.from_bytes(packets[at + 1 : at + 1 + size], "big"), at + 1 + size
        body = packets[at : at + length]
        if len(body) != length:
            raise ValueError("truncated packet")
        at += length
        if tag == 6 and body[:1] == b"\x04":
            # a version 4 fingerprint is SHA-1 by definition (RFC 9580 5.5.4.2); what it guards is equality, not secrecy
            found.append(hashlib.sha1(b"\x99" + length.to_bytes(2, "big") + body).hexdigest().upper())
        elif tag == 6 and body[:1] == b"\x06":
            found.append(hashlib.sha256(b"\x9b" + length.to_bytes(4, "big") + body).hexdigest().upper())
    return found


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "fingerprint": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    url, dest = module.params["url"], module.params["dest"]
    wanted = re.sub(r"\s", "", module.params["fingerprint"]).upper()
    if not re.fullmatch(r"[0-9A-F]{40}|[0-9A-F]{64}", wanted):
        module.fail_json(msg=f"fingerprint {module.params['fingerprint']!r} is not a full OpenPGP fingerprint (40 or 64 hex digits)")
    response, info = fetch_url(module, url)
    if response is None or info.get("status") != 200:
        module.fail_json(msg=f"cannot download the signing key {url}: {info.get('msg', info.get('status'))}")
    data = response.read(MAX_KEY_BYTES + 1)
    if len(data) > MAX_KEY_BYTES:
        module.fail_json(msg=f"{url} is over {MAX_KEY_BYTES} bytes: not a signing key")
    try:
        found = primary_fingerprints(data)
    except (ValueError, IndexError, binascii.Error) as exc:
        found, why = [], str(exc)
    else:
        why = "no primary key"
    if wanted not in found:
        shown = ", ".join(found) or f"none ({why})"
        module.fail_json(msg=f"the signing key at {url} has fingerprint {shown}, not {wanted}: refusing to trust it", fingerprints=found)
    try:
        with open(dest, "rb") as current:
            same = current.read() == data
    except OSError:
        same = False
    if same or module.check_mode:
        module.exit_json(changed=not same, fingerprints=found)
    fd, tmp = tempfile.mkstemp(prefix=".alicerce-key-", dir=os.path.dirname(dest) or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        module.atomic_move(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    module.exit_json(changed=True, fingerprints=found)


if __name__ == "__main__":
    main()
