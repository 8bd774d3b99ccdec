"""The starter spec `alicerce init` writes: a small valid platform to grow from (the repository around it: emit/repository.py)."""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

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


# Examples `init --example` does not offer: mistakes.yaml is invalid on purpose (`make demo` shows its errors).
NOT_STARTERS = frozenset({"mistakes"})
MODELINE = re.compile(r"^# yaml-language-server: \$schema=\S+$", re.M)


def _examples_folder() -> Traversable:
    """The reference examples: shipped in the package by the wheel's build (setup.py), or the checkout's examples/."""
    shipped = resources.files("alicerce").joinpath("examples")
    return shipped if shipped.is_dir() else Path(__file__).resolve().parents[2] / "examples"


def examples() -> tuple[str, ...]:
    """The reference examples `alicerce init --example` starts from, by name (file name without .yaml)."""
    names = (f.name.removesuffix(".yaml") for f in _examples_folder().iterdir() if f.name.endswith(".yaml"))
    return tuple(sorted(n for n in names if n not in NOT_STARTERS))


def example_spec(name: str) -> str:
    """The reference example ``name``, its schema modeline pointing at the new repository's schema/ folder."""
    if name not in examples():
        raise ValueError(f"no example {name!r}")  # the CLI offers only examples()
    text = _examples_folder().joinpath(f"{name}.yaml").read_text("utf-8")
    return MODELINE.sub("# yaml-language-server: $schema=schema/platform.schema.json", text, count=1)


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
