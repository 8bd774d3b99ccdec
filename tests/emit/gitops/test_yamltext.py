"""The generated YAML's shortcuts (memoized scalar analysis, one-chunk plain scalars) write PyYAML's exact text."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from alicerce.emit.gitops import yamltext


class _Reference(yaml.SafeDumper):
    """PyYAML as it ships, with only the list indentation the generated files use."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Reference.add_representer(str, _text)

# what trips a YAML emitter: indicators, spaces at either end, line breaks of every kind, words YAML reads as other
# types, non-ASCII text, and lines longer than the 1,000-column width (folded only at spaces)
tricky = st.sampled_from(
    ["", " ", "a b", " lead", "trail ", "a: b", "- x", "#c", "true", "null", "1e3", "0x10", "~", "é ü", "\u2028", "a\nb",
     "a \nb", "x" * 1200, "word " * 250, "'q'", '"d"', "{a}", "[b]", "&a", "*b", "!t", "%p", "@x", "`y`", "a\tb"]
)  # fmt: skip
scalars = st.one_of(tricky, st.text(max_size=40), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12) | tricky, inner, max_size=4)),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(documents)
def test_dump_writes_what_pyyaml_writes(data: Any) -> None:
    for sort_keys in (True, False):
        expected = yaml.dump(data, Dumper=_Reference, sort_keys=sort_keys, default_flow_style=False, allow_unicode=True, width=1000)
        assert yamltext.dump(data, sort_keys=sort_keys) == expected
