"""Which labels a PromQL expression's result may carry, and which label matchers of a query name a label its series
never has (review obsreview22 F6: the dashboard test read metric names only, so a panel filtered on a label nobody
produces, `team:gpus_allocated:sum{pool="x"}` of a `sum by (team)` record, passed while it showed "No data" for ever).

A small Pratt parser over PromQL's tokens, enough for the expressions alicerce generates: aggregations keep their
``by`` labels (or drop their ``without`` ones), a vector-vector operation keeps its left side's labels (its right
side's with ``group_right``) plus the ``group_left``/``group_right`` list, ``or`` either side's, ``label_replace`` and
``label_join`` add their target, ``histogram_quantile`` drops ``le``, other functions keep their vector argument's. A
series whose labels are not known (an exporter without vendored label facts) reads as "any label", never as a miss.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(
    r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')'
    r"|(?P<number>(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)(?:[smhdwy]|ms)?(?:\d+(?:[smhdwy]|ms))*(?!\w))"
    r"|(?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r"|(?P<op>==|!=|>=|<=|=~|!~|[-+*/%^<>(){}\[\],=:@]))"
)
AGGREGATIONS = {"sum", "avg", "min", "max", "count", "group", "stddev", "stdvar", "topk", "bottomk", "quantile",
                "count_values", "limitk", "limit_ratio"}  # fmt: skip
PRECEDENCE = {"or": 1, "and": 2, "unless": 2, "==": 3, "!=": 3, ">": 3, "<": 3, ">=": 3, "<=": 3,
              "+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "atan2": 5, "^": 6}  # fmt: skip
SCALAR_FUNCTIONS = {"scalar", "time", "pi"}
NO_LABELS = {"vector", "absent", "absent_over_time"}  # absent's labels are its equality matchers': none read here


@dataclass(frozen=True)
class Value:
    scalar: bool
    labels: frozenset[str] | None = None  # None: not known, any label may be there


ANY = Value(False, None)


@dataclass
class Selector:
    name: str | None
    matched: tuple[str, ...]  # the label names its matchers test (not __name__)


@dataclass
class _Parser:
    tokens: list[tuple[str, str]]
    known: Mapping[str, frozenset[str] | None]
    added: Mapping[str, str]  # a rewritten label_replace/label_join call -> the label it adds
    selectors: list[Selector] = field(default_factory=list)
    at: int = 0

    def peek(self, offset: int = 0) -> tuple[str, str]:
        i = self.at + offset
        return self.tokens[i] if i < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None) -> str:
        kind, text = self.peek()
        assert kind != "end" and (value is None or text == value), (value, self.tokens[self.at :])
        self.at += 1
        return text

    def names(self) -> list[str]:
        """A parenthesised list of label names."""
        self.take("(")
        out = []
        while self.peek()[1] != ")":
            out.append(self.take())
            if self.peek()[1] == ",":
                self.take(",")
        self.take(")")
        return out

    def expr(self, floor: int = 0) -> Value:
        left = self.unary()
        while True:
            kind, op = self.peek()
            prec = PRECEDENCE.get(op) if kind in ("op", "ident") else None
            if prec is None or prec <= floor - (op == "^"):
                return left
            self.take()
            matching: tuple[str, list[str]] | None = None
            extra: list[str] = []
            side = ""  # one-to-one
            if self.peek()[1] == "bool":
                self.take()
            if self.peek()[1] in ("on", "ignoring"):
                matching = (self.take(), self.names())
            if self.peek()[1] in ("group_left", "group_right"):
                side = "right" if self.take() == "group_right" else "left"
                extra = self.names() if self.peek()[1] == "(" else []
            right = self.expr(prec)
            left = _binary(op, left, right, matching=matching, side=side, extra=extra)

    def unary(self) -> Value:
        if self.peek()[1] in ("-", "+"):
            self.take()
        value = self.primary()
        while self.peek()[1] in ("[", "offset", "@"):
            if self.take() == "[":
                while self.take() != "]":
                    pass
            else:
                self.take()  # the duration or timestamp (a `-` sign, then it, for a negative offset), or start()/end()
                if self.tokens[self.at - 1][1] == "-":
                    self.take()
                if self.peek()[1] == "(":
                    self.take("(")
                    self.take(")")
        return value

    def primary(self) -> Value:
        kind, text = self.peek()
        if kind in ("number", "string") or (kind == "ident" and text.lower() in ("inf", "nan")):
            self.take()
            return Value(True)
        if text == "(":
            self.take()
            inner = self.expr()
            self.take(")")
            return inner
        if text == "{":
            return self.selector(None)
        if kind == "ident" and (self.peek(1)[1] == "(" or (text in AGGREGATIONS and self.peek(1)[1] in ("by", "without"))):
            return self.call(self.take())
        if kind == "ident":
            return self.selector(self.take())
        raise AssertionError(f"unexpected {text!r} in {self.tokens}")

    def selector(self, name: str | None) -> Value:
        matched: list[str] = []
        if self.peek()[1] == "{":
            self.take("{")
            while self.peek()[1] != "}":
                label = self.take()
                self.take()  # the operator
                value = self.take()
                if label == "__name__" and self.tokens[self.at - 2][1] == "=":
                    name = value.strip("\"'")
                elif label != "__name__":
                    matched.append(label)
                if self.peek()[1] == ",":
                    self.take(",")
            self.take("}")
        self.selectors.append(Selector(name, tuple(matched)))
        return Value(False, self.known.get(name)) if name else ANY

    def call(self, function: str) -> Value:
        grouping: tuple[str, list[str]] | None = None
        if self.peek()[1] in ("by", "without"):
            grouping = (self.take(), self.names())
        self.take("(")
        args: list[Value] = []
        while self.peek()[1] != ")":
            args.append(self.expr())
            if self.peek()[1] == ",":
                self.take(",")
        self.take(")")
        if function in AGGREGATIONS and self.peek()[1] in ("by", "without"):
            grouping = (self.take(), self.names())
        if function in self.added:
            inner = args[0]
            return Value(False, None if inner.labels is None else inner.labels | {self.added[function]})
        return _function(function, args, grouping)


def _binary(op: str, left: Value, right: Value, *, matching: tuple[str, list[str]] | None, side: str, extra: list[str]) -> Value:
    """Prometheus v3 promql/engine.go resultMetric: one-to-one keeps the ``on`` labels only (drops the ``ignoring``
    ones); group_left keeps the left side's and adds the listed ones, group_right the right side's."""
    if left.scalar and right.scalar:
        return Value(True)
    if left.scalar or right.scalar:
        return right if left.scalar else left
    if op == "or":
        return Value(False, None if left.labels is None or right.labels is None else left.labels | right.labels)
    if op in ("and", "unless"):
        return left
    if not side:
        if matching and matching[0] == "on":
            return Value(False, frozenset(matching[1]))
        dropped = set(matching[1]) if matching else set()
        return Value(False, None if left.labels is None else left.labels - dropped)
    kept = right if side == "right" else left
    return Value(False, None if kept.labels is None else kept.labels | set(extra))


def _function(function: str, args: list[Value], grouping: tuple[str, list[str]] | None) -> Value:
    vectors = [a for a in args if not a.scalar]
    inner = vectors[0] if vectors else ANY
    if function in AGGREGATIONS:
        if grouping and grouping[0] == "by":
            return Value(False, frozenset(grouping[1]))
        if grouping:  # without
            return Value(False, None if inner.labels is None else inner.labels - set(grouping[1]))
        if function in ("topk", "bottomk", "limitk", "limit_ratio"):
            return inner
        return Value(False, frozenset())
    if function in SCALAR_FUNCTIONS:
        return Value(True)
    if function in NO_LABELS:
        return Value(False, frozenset())
    if function == "histogram_quantile":
        return Value(False, None if inner.labels is None else inner.labels - {"le"})
    return inner


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, at = [], 0
    expr = expr.rstrip()
    while at < len(expr):
        match = _TOKEN.match(expr, at)
        assert match and match.end() > at, expr[at:]
        kind = match.lastgroup or "op"
        out.append((kind, match.group(kind)))
        at = match.end()
    return out


_LABEL_REPLACE = re.compile(r"\blabel_(?:replace|join)\s*\(")


def labels_of(expr: str, known: Mapping[str, frozenset[str] | None]) -> tuple[Value, list[Selector]]:
    """The labels the expression's result may carry, and the selectors it reads."""
    tokens, added = _prepared(expr)
    parser = _Parser(list(tokens), known, dict(added))
    value = parser.expr()
    assert parser.peek()[0] == "end", parser.tokens[parser.at :]
    return value, parser.selectors


@functools.cache
def _prepared(expr: str) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The expression's tokens, its ``label_replace``/``label_join`` calls rewritten innermost first as a call of an
    alias of their source, and each alias with the label it adds."""
    added: dict[str, str] = {}
    while (match := _last(_LABEL_REPLACE, expr)) is not None:
        start, args_at = match.start(), match.end()
        depth, i = 1, args_at
        while depth:
            depth += {"(": 1, ")": -1}.get(expr[i], 0)
            i += 1
        body = expr[args_at : i - 1]
        source, target = _split_args(body)[:2]
        alias = f"alicerce_label_added_{len(added)}"
        added[alias] = target.strip().strip("\"'")
        expr = f"{expr[:start]}{alias}({source}){expr[i:]}"
    return tuple(_tokens(expr)), tuple(added.items())


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None


def _split_args(body: str) -> list[str]:
    out, depth, current, quote = [], 0, "", ""
    for ch in body:
        if quote:
            current += ch
            quote = "" if ch == quote and not current.endswith("\\" + ch) else quote
            continue
        if ch in "\"'":
            quote = ch
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    return [*out, current]


def record_labels(groups: Iterable[dict[str, Any]], exporters: Mapping[str, frozenset[str] | None]) -> dict[str, frozenset[str] | None]:
    """Each recording rule's output labels (its expression's, plus its own ``labels``), in rule order, then again until
    nothing changes (a record may read one written in a later group). A record written by several rules (one per
    pool, per site) may carry the labels of any of them."""
    rules = [r for g in groups for r in g["rules"] if "record" in r]
    known: dict[str, frozenset[str] | None] = dict(exporters)
    for _ in range(len(rules) + 1):
        before = dict(known)
        written: dict[str, frozenset[str] | None] = {}
        for rule in rules:
            value, _ = labels_of(rule["expr"], known)
            labels = None if value.labels is None else value.labels | set(rule.get("labels", {}))
            name = rule["record"]
            if name in written:
                labels = None if labels is None or written[name] is None else labels | written[name]  # type: ignore[operator]
            written[name] = labels
        known = {**dict(exporters), **written}
        if known == before:
            break
    return {name: known[name] for name in {r["record"] for r in rules}}


def unlabelled(exprs: Iterable[str], known: Mapping[str, frozenset[str] | None]) -> dict[str, set[tuple[str, str]]]:
    """Expression -> (series, label) of each matcher on a label that series never carries."""
    out: dict[str, set[tuple[str, str]]] = {}
    for expr in exprs:
        _, selectors = labels_of(expr, known)
        missing = {
            (s.name, label)
            for s in selectors
            if s.name is not None and known.get(s.name) is not None
            for label in s.matched
            if label not in known[s.name]  # type: ignore[operator]
        }
        if missing:
            out[expr] = missing
    return out
