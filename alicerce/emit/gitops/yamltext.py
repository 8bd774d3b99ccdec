"""Deterministic YAML text for generated files: block style, indented lists, multi-line strings as blocks."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # lists indented under their key (yamllint's default)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _text)


def dump(data: Any, *, sort_keys: bool = True) -> str:
    """YAML of ``data``; ``sort_keys=False`` keeps the mapping order given (workflows read top-down)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=sort_keys, default_flow_style=False, allow_unicode=True, width=1000)


def dump_all(documents: list[Any]) -> str:
    return "".join(f"---\n{dump(doc)}" for doc in documents)
