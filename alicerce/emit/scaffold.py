"""The starter spec `alicerce init` writes: a small valid platform to grow from (the repository around it: emit/repository.py)."""

from __future__ import annotations

import re
from importlib import resources

from alicerce.spec.models import DNS_LABEL
from alicerce.spec.schema import schema_text
from alicerce.targets import TARGETS


def starters() -> tuple[str, ...]:
    """The starters `alicerce init --target` offers: each registered target's own, then hybrid (AWS and on-prem)."""
    return (*(t.starter for t in TARGETS if t.starter is not None), "hybrid")


def starter_spec(name: str, starter: str = "aws") -> str:
    """The starter spec ``starter`` (templates/starters/<starter>.yaml, braces doubled) for the platform ``name``."""
    if starter not in starters():
        raise ValueError(f"no starter {starter!r}")  # the CLI offers only starters()
    text = resources.files("alicerce.emit").joinpath("templates", "starters", f"{starter}.yaml").read_text("utf-8")
    return text.format(name=name)


GITIGNORE = """\
# alicerce generate output, its lock file, and local caches
/out/
/.alicerce-apply/
.*.alicerce-*
.venv/
__pycache__/
"""


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a platform (a DNS-1123 label)."""
    return bool(re.match(DNS_LABEL, name)) and len(name) <= 63


def scaffold_files(name: str, starter: str = "aws") -> dict[str, str]:
    """Relative path -> text of a new platform repository."""
    if not valid_name(name):
        raise ValueError(f"not a DNS label: {name!r}")  # the CLI checks user input before it gets here
    return {
        "platform.yaml": starter_spec(name, starter),
        "schema/platform.schema.json": schema_text(),
        ".gitignore": GITIGNORE,
    }
