"""Safe YAML loading that keeps the source position of every key and value.

The document is built straight from libyaml's event stream (pure-Python fallback when libyaml is
absent), so we decide what every scalar means and refuse what a spec never needs:

- scalars follow the YAML 1.2 core schema: ``yes``/``no``/``on`` stay strings, no implicit
  timestamps, ``0755`` is decimal;
- any tag beyond the core ones (``!!python/...``, ``!custom``) is an error, never executed;
- duplicate keys, complex keys, several documents, empty files, non-UTF-8 bytes, files over
  10 MiB, nesting deeper than :data:`MAX_DEPTH`, more than :data:`MAX_NODES` values (alias bombs)
  and keys or values longer than :data:`MAX_SCALAR` characters are errors with a position;
- only regular files are read (:mod:`alicerce.spec.source`): a directory, device or FIFO is an
  error, never a hang.
"""

from __future__ import annotations

import math
import re
from pathlib import Path as FsPath
from typing import Any

import yaml

from alicerce.spec.errors import Path, PathElement, Span, SpecError, SpecInvalid
from alicerce.spec.record import field, record
from alicerce.spec.source import MAX_BYTES, SourceTooLarge, UnreadableSource, read_regular_file

try:
    from yaml._yaml import CParser as _EventParser
except ImportError:  # pragma: no cover - libyaml missing: slower, same results
    from yaml.parser import Parser as _PyParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _EventParser(Reader, Scanner, _PyParser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _PyParser.__init__(self)


MAX_DEPTH = 32
MAX_NODES = 50_000  # the reference platform has ~1,500; this bounds work on hostile files
MAX_SCALAR = 4_096  # the longest free text the schema allows is 1,024; nothing needs more

_CORE = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {f"{_CORE}{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_ALLOWED_TAGS.add("!")

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"^[-+]?[0-9]+$")
_INT_OCT = re.compile(r"^0o[0-7]+$")
_INT_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")
# What YAML 1.1/1.2 forbid in a stream: C0 controls but tab, LF and CR; DEL; C1 controls but NEL;
# surrogates; U+FFFE/U+FFFF. libyaml refuses them too, without a line and column.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


@record(frozen=False)
class Pos:
    """Where a value sits in the source, and where its children and their keys sit."""

    span: Span
    children: dict[PathElement, Pos] = field(default_factory=dict)
    keys: dict[str, Span] = field(default_factory=dict)
    raw: str | None = None  # the source text of a plain scalar that did not resolve to str


@record
class Document:
    """A loaded YAML file: plain Python data and its position tree."""

    file: str
    data: Any
    pos: Pos


def locate(pos: Pos, path: Path, *, key: bool = False) -> tuple[Span, int]:
    """The span of the deepest existing node on ``path`` and how many elements matched.

    With ``key=True`` and a full match on a mapping entry, the key's own span is returned (an
    unknown key is reported where the key is written, not where its value starts).
    """
    node = pos
    for depth, element in enumerate(path):
        child = node.children.get(element)
        if child is None:
            return node.span, depth
        if key and depth == len(path) - 1 and isinstance(element, str) and element in node.keys:
            return node.keys[element], depth + 1
        node = child
    return node.span, len(path)


def node_at(pos: Pos, path: Path) -> Pos | None:
    node: Pos | None = pos
    for element in path:
        if node is None:
            return None
        node = node.children.get(element)
    return node


def resolve_plain(text: str) -> Any:
    """The YAML 1.2 core-schema value of a plain (unquoted) scalar."""
    if _NULL.match(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.match(text):
        return int(text, 10)
    if _INT_OCT.match(text):
        return int(text[2:], 8)
    if _INT_HEX.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return -math.inf if text.startswith("-") else math.inf
    if _NAN.match(text):
        return math.nan
    return text


def _span(file: str, mark: Any) -> Span:
    return Span(file, mark.line + 1, mark.column + 1)


@record
class Tagged:
    """A scalar carrying one of the local tags a caller of :func:`load_text` allowed (``!vault`` in a
    secrets file): kept as its tag and text, never constructed into anything."""

    tag: str
    value: str


class _Builder:
    """Turns one document's events into (data, Pos), collecting errors instead of stopping."""

    def __init__(self, parser: Any, file: str, tags: frozenset[str] = frozenset()) -> None:
        self.parser = parser
        self.file = file
        self.tags = tags
        self.errors: list[SpecError] = []
        self.anchors: dict[str, tuple[Any, Pos, int]] = {}
        self.nodes = 0

    def error(self, mark: Any, rule: str, path: Path, message: str, hint: str | None = None) -> None:
        self.errors.append(SpecError(_span(self.file, mark), rule, path, message, hint))

    def check_tag(self, event: Any, path: Path) -> bool:
        tag = event.tag
        if tag is None or tag in _ALLOWED_TAGS or tag in self.tags:
            return True
        self.error(
            event.start_mark,
            "AL003",
            path,
            f"YAML tag {tag.replace(_CORE, '!!')} is not allowed",
            "a platform spec is plain data: remove the tag",
        )
        return False

    def build(self, event: Any, path: Path, depth: int) -> tuple[Any, Pos, int]:
        """Build the node that starts with ``event``; returns (value, pos, expanded node count)."""
        if depth > MAX_DEPTH:
            self.error(
                event.start_mark,
                "AL005",
                path,
                f"nesting is deeper than {MAX_DEPTH} levels",
                "no real platform spec nests this deep",
            )
            raise _Abort
        if isinstance(event, yaml.AliasEvent):
            return self.alias(event, path)
        self.count(1, event, path)
        if isinstance(event, yaml.ScalarEvent):
            value, pos = self.scalar(event, path)
            result: tuple[Any, Pos, int] = (value, pos, 1)
        elif isinstance(event, yaml.SequenceStartEvent):
            result = self.sequence(event, path, depth)
        elif isinstance(event, yaml.MappingStartEvent):
            result = self.mapping(event, path, depth)
        else:  # pragma: no cover - libyaml never yields others here
            raise AssertionError(f"unexpected event {event!r}")
        if getattr(event, "anchor", None):
            self.anchors[event.anchor] = result
        return result

    def count(self, nodes: int, event: Any, path: Path) -> None:
        """Count values as they are built; an alias counts the whole subtree it repeats."""
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            self.error(
                event.start_mark,
                "AL004",
                path,
                f"the document holds more than {MAX_NODES} values",
                "aliases expanding exponentially (a 'billion laughs' file) are refused"
                if self.anchors
                else "a platform spec has a few thousand; is this the right file?",
            )
            raise _Abort

    def alias(self, event: Any, path: Path) -> tuple[Any, Pos, int]:
        anchor = self.anchors.get(event.anchor)
        if anchor is None:  # libyaml reports undefined aliases itself; kept for the fallback
            self.error(event.start_mark, "AL001", path, f"undefined alias *{event.anchor}")
            return None, Pos(_span(self.file, event.start_mark)), 1
        value, pos, nodes = anchor
        self.count(nodes, event, path)
        return value, pos, nodes

    def check_length(self, event: Any, path: Path) -> None:
        """Refuse a key or value too long for any field: it would only be copied into every error and output."""
        if len(event.value) > MAX_SCALAR:
            self.error(
                event.start_mark,
                "AL014",
                path,
                f"the value is {len(event.value):,} characters, over the {MAX_SCALAR:,}-character limit",
                "no field of a platform spec needs this much text; is this the right value?",
            )

    def scalar(self, event: Any, path: Path) -> tuple[Any, Pos]:
        span = _span(self.file, event.start_mark)
        self.check_length(event, path)
        if not self.check_tag(event, path):
            return event.value, Pos(span)
        tag = event.tag
        if tag in self.tags:
            return Tagged(tag, event.value), Pos(span)
        plain = event.style in (None, "") and tag in (None, "!") and event.implicit[0]
        if tag is not None and tag.startswith(_CORE) and tag != f"{_CORE}str":
            value = resolve_plain(event.value)
            expected = tag[len(_CORE) :]
            kinds: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "bool": (bool,), "null": (type(None),)}
            if not isinstance(value, kinds.get(expected, (object,))) or (expected == "int" and isinstance(value, bool)):
                self.error(event.start_mark, "AL003", path, f"{event.value!r} is not a valid !!{expected}")
            return value, Pos(span, raw=event.value)
        if plain:
            value = resolve_plain(event.value)
            return value, Pos(span, raw=None if isinstance(value, str) else event.value)
        return event.value, Pos(span)

    def sequence(self, event: Any, path: Path, depth: int) -> tuple[Any, Pos, int]:
        self.check_tag(event, path)
        pos = Pos(_span(self.file, event.start_mark))
        items: list[Any] = []
        nodes = 1
        while True:
            child = self.parser.get_event()
            if isinstance(child, yaml.SequenceEndEvent):
                break
            index = len(items)
            value, child_pos, child_nodes = self.build(child, (*path, index), depth + 1)
            items.append(value)
            pos.children[index] = child_pos
            nodes += child_nodes
        return items, pos, nodes

    def mapping(self, event: Any, path: Path, depth: int) -> tuple[Any, Pos, int]:
        self.check_tag(event, path)
        pos = Pos(_span(self.file, event.start_mark))
        result: dict[str, Any] = {}
        merges: list[tuple[Any, Pos, Any]] = []
        nodes = 1
        while True:
            key_event = self.parser.get_event()
            if isinstance(key_event, yaml.MappingEndEvent):
                break
            key_span = _span(self.file, key_event.start_mark)
            if not isinstance(key_event, yaml.ScalarEvent):
                self.error(
                    key_event.start_mark,
                    "AL011",
                    path,
                    "keys must be plain text",
                    "a mapping or list cannot be a key",
                )
                self.build(key_event, path, depth + 1)  # consume it
                self.build(self.parser.get_event(), path, depth + 1)
                continue
            key = key_event.value
            self.check_length(key_event, path)
            value_event = self.parser.get_event()
            is_merge = key == "<<" and key_event.style in (None, "") and key_event.tag is None
            child_path = path if is_merge else (*path, key)
            value, child_pos, child_nodes = self.build(value_event, child_path, depth + 1)
            nodes += child_nodes
            if is_merge:
                merges.append((value, child_pos, value_event.start_mark))
                continue
            if key in result:
                first = pos.keys[key]
                self.error(
                    key_event.start_mark,
                    "AL002",
                    (*path, key),
                    f'duplicate key "{key}"',
                    f"first defined at line {first.line}",
                )
                continue
            result[key] = value
            pos.children[key] = child_pos
            pos.keys[key] = key_span
        for value, merge_pos, mark in merges:
            self.merge(result, pos, value, merge_pos, mark=mark, path=path)
        return result, pos, nodes

    def merge(self, result: dict[str, Any], pos: Pos, value: Any, merge_pos: Pos, *, mark: Any, path: Path) -> None:
        """Apply a ``<<: *anchor`` merge key: explicit keys win over merged ones."""
        is_list = isinstance(value, list)
        pairs = [(item, merge_pos.children[i]) for i, item in enumerate(value)] if is_list else [(value, merge_pos)]
        for source, spos in pairs:
            if not isinstance(source, dict):
                self.error(mark, "AL003", path, "a merge key (<<) takes a mapping or a list of mappings")
                continue
            for key, item in source.items():
                if key not in result:
                    result[key] = item
                    pos.children[key] = spos.children[key]
                    pos.keys[key] = spos.keys[key]


class _Abort(Exception):
    """Stop building: the document is hostile or broken beyond useful further errors."""


def load_text(text: str, file: str, *, tags: frozenset[str] = frozenset()) -> Document:
    """Parse YAML text into a :class:`Document`, or raise :class:`SpecInvalid`.

    ``tags``: local tags (``!vault``) kept as :class:`Tagged` scalars instead of refused; every
    other limit stays, so a vars file read with them is as bounded as a spec.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    root_span = Span(file, 1, 1)
    bad = _UNPRINTABLE.search(text)
    if bad is not None:
        before = text[: bad.start()]
        line = before.count("\n") + 1
        column = bad.start() - (before.rfind("\n") + 1) + 1
        raise SpecInvalid(
            [
                SpecError(
                    Span(file, line, column),
                    "AL001",
                    (),
                    f"control character U+{ord(bad.group()):04X} is not allowed in YAML",
                    "remove it (often pasted from a terminal or a PDF)",
                )
            ]
        )
    parser = _EventParser(text)
    builder = _Builder(parser, file, tags)
    data: Any = None
    pos = Pos(root_span)
    documents = 0
    try:
        while True:
            event = parser.get_event()
            if isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents == 2:
                    builder.error(
                        event.start_mark,
                        "AL009",
                        (),
                        "the file holds more than one YAML document",
                        "keep one platform per file; remove the second '---'",
                    )
                    raise _Abort
                node_event = parser.get_event()
                data, pos, _ = builder.build(node_event, (), 0)
                parser.get_event()  # DocumentEndEvent
    except yaml.MarkedYAMLError as exc:
        builder.errors.append(_syntax_error(exc, file, text))
    except _Abort:
        pass
    if builder.errors:
        raise SpecInvalid(builder.errors)
    if documents == 0 or data is None:
        raise SpecInvalid(
            [SpecError(root_span, "AL008", (), "the file is empty", 'start with "apiVersion: alicerce.dev/v1" and "kind: Platform"')]
        )
    if not isinstance(data, dict):
        raise SpecInvalid(
            [SpecError(pos.span, "AL010", (), "the top level must be a mapping of keys", 'start with "apiVersion: alicerce.dev/v1"', data)]
        )
    return Document(file, data, pos)


def _syntax_error(exc: yaml.MarkedYAMLError, file: str, text: str) -> SpecError:
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = exc.problem or "invalid YAML"
    if exc.context:
        problem = f"{problem} ({exc.context}"
        start = exc.context_mark
        if start is not None and (start.line, start.column) != (line - 1, column - 1):
            problem += f" that started at line {start.line + 1}, column {start.column + 1}"
        problem += ")"
    hint = None
    lines = text.splitlines()
    offending = lines[line - 1][column - 1 : column] if line <= len(lines) else ""
    if "tab" in problem or offending == "\t":
        hint = "YAML indentation uses spaces, never tabs"
    elif "mapping values are not allowed" in problem:
        hint = "a colon inside a value needs quotes, or the indentation is off"
    elif "could not find expected ':'" in problem:
        hint = "check the indentation and the colon after each key"
    return SpecError(Span(file, line, column), "AL001", (), f"YAML syntax: {problem}", hint)


def load_file(path: str | FsPath, display: str | None = None) -> Document:
    """Read and parse a spec file with every guard; ``display`` names it in errors."""
    name = display or str(path)
    try:
        raw = read_regular_file(path, MAX_BYTES)
    except UnreadableSource as exc:
        raise SpecInvalid([SpecError(Span(name, 1, 1), "AL000", (), str(exc), exc.hint)]) from None
    except SourceTooLarge as exc:
        raise SpecInvalid(
            [
                SpecError(
                    Span(name, 1, 1),
                    "AL006",
                    (),
                    f"the file is {exc.size} bytes, over the 10 MiB limit",
                    "a platform spec is a few hundred lines; is this the right file?",
                )
            ]
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise SpecInvalid(
            [SpecError(Span(name, line, column), "AL007", (), f"byte 0x{raw[exc.start]:02x} is not valid UTF-8", "save the file as UTF-8")]
        ) from None
    return load_text(text, name)
