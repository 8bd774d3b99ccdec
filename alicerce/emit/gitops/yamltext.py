"""Deterministic YAML text for generated files: block style, indented lists, multi-line strings as blocks."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml
from yaml.emitter import Emitter, ScalarAnalysis

_LINE_BREAKS = "\n\x85\u2028\u2029"


@lru_cache(maxsize=65536)
def _analysis(scalar: str, allow_unicode: bool) -> ScalarAnalysis:
    """PyYAML's analysis of a scalar, which depends on its text and ``allow_unicode`` alone: a generated tree repeats
    the same keys and values thousands of times, and analysing each was a third of `alicerce generate`'s time."""
    probe = Emitter.__new__(Emitter)
    probe.allow_unicode = allow_unicode
    return Emitter.analyze_scalar(probe, scalar)


class IndentedDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, byte for byte, with lists indented under their key (yamllint's default).

    Two shortcuts leave the text unchanged: the scalar analysis is memoized (the emitter only reads it), and a plain
    scalar with no space or line break, which PyYAML's loop writes as one chunk, is written as one chunk directly."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def analyze_scalar(self, scalar: str) -> ScalarAnalysis:
        return _analysis(scalar, bool(self.allow_unicode))

    def write_plain(self, text: str, split: bool = True) -> None:
        if self.encoding or " " in text or any(ch in text for ch in _LINE_BREAKS):
            super().write_plain(text, split)
            return
        if self.root_context:
            self.open_ended = True
        if not text:
            return
        if not self.whitespace:
            self.column += 1
            self.stream.write(" ")
        self.whitespace = False
        self.indention = False
        self.column += len(text)
        self.stream.write(text)


class _Dumper(IndentedDumper):
    pass


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
