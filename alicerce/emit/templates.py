"""The jinja2 environment of generated files: strict, no autoescape (not HTML), trailing newlines kept."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).resolve().parent / "templates"  # jinja2 sources of generated files, by subtree
ANSIBLE_SOURCE = Path(__file__).resolve().parents[1] / "ansible"  # alicerce's roles, modules and filters, copied as they are


@functools.cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)
