"""Environment overlays: the base spec with one environment's ``overrides`` merged in.

Merge rules (documented in README.md, tested in tests/spec/test_overlay.py):

1. Maps merge deeply: keys in the override win, other keys are kept.
2. An explicit ``null`` in the override removes the key.
3. Lists whose items are all maps with a ``name`` merge by name: a matching item merges deeply,
   a new item is appended, an item with ``$patch: delete`` (and its name) removes the match.
4. Any other list, and any scalar, is replaced whole.

Precedence, lowest first: catalog defaults < base spec < environment overrides. Every merged
value keeps the position it was written at, so an error inside an override points at the
override's own line.
"""

from __future__ import annotations

from typing import Any

from alicerce.spec.errors import Path, Span, SpecError, did_you_mean
from alicerce.spec.loader import Pos
from alicerce.spec.record import record

PATCH = "$patch"
FORBIDDEN = ("apiVersion", "kind", "environments")


@record
class AddedItem:
    """An override item whose name matched no base item, so it was added as a new one."""

    path: Path  # where it sits in the merged document
    name: str
    name_span: Span
    known: tuple[str, ...]  # the names it could have meant


def _named(items: list[Any]) -> bool:
    return all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in items)


class Merger:
    """Merges one override tree into the base, collecting errors.

    ``origin`` is where the override tree sits in its file (e.g. ``environments.dev.overrides``);
    error paths are that prefix plus the path inside the override.
    """

    def __init__(self, origin: Path = ()) -> None:
        self.errors: list[SpecError] = []
        self.added: list[AddedItem] = []
        self.origin = origin

    def merge(self, base: Any, base_pos: Pos, over: Any, over_pos: Pos, path: Path) -> tuple[Any, Pos]:
        if isinstance(base, dict) and isinstance(over, dict):
            return self._maps(base, base_pos, over, over_pos, path)
        if isinstance(base, list) and isinstance(over, list) and _named(base) and over and _named(over):
            return self._named_lists(base, base_pos, over, over_pos, path)
        return over, over_pos

    def _maps(self, base: dict[str, Any], base_pos: Pos, over: dict[str, Any], over_pos: Pos, path: Path) -> tuple[Any, Pos]:
        data = dict(base)
        # the merged mapping is reported where the override wrote it: that is what changed it
        pos = Pos(over_pos.span, dict(base_pos.children), dict(base_pos.keys))
        for key, value in over.items():
            child_over = over_pos.children[key]
            if value is None:
                data.pop(key, None)
                pos.children.pop(key, None)
                pos.keys.pop(key, None)
                continue
            if key in data:
                data[key], pos.children[key] = self.merge(data[key], base_pos.children[key], value, child_over, (*path, key))
            elif isinstance(value, list) and value and _named(value):
                data[key], pos.children[key] = self._named_lists([], Pos(child_over.span), value, child_over, (*path, key))
            else:
                data[key], pos.children[key] = value, child_over
            pos.keys[key] = over_pos.keys[key]
        return data, pos

    def _named_lists(
        self, base: list[dict[str, Any]], base_pos: Pos, over: list[dict[str, Any]], over_pos: Pos, path: Path
    ) -> tuple[Any, Pos]:
        items: list[tuple[dict[str, Any], Pos] | None] = [(item, base_pos.children[i]) for i, item in enumerate(base)]
        index = {item["name"]: i for i, item in enumerate(base)}
        added: dict[int, tuple[str, Span]] = {}  # slot in items -> (name, where the name is written)
        for j, item in enumerate(over):
            item_pos = over_pos.children[j]
            name = item["name"]
            patch = item.get(PATCH)
            if patch is not None and patch != "delete":
                self.errors.append(
                    SpecError(
                        item_pos.keys[PATCH],
                        "AL121",
                        (*self.origin, *path, j, PATCH),
                        f'unknown patch directive "{patch}"',
                        'the only directive is "$patch: delete"',
                        patch,
                    )
                )
                continue
            where = index.get(name)
            if patch == "delete":
                if where is None or items[where] is None:
                    self.errors.append(
                        SpecError(
                            item_pos.children["name"].span,
                            "AL122",
                            (*self.origin, *path, j, "name"),
                            f'"{name}" is not in the base list, so it cannot be deleted',
                            did_you_mean(name, [n for n, i in index.items() if items[i] is not None]),
                            name,
                        )
                    )
                else:
                    items[where] = None
                continue
            if where is None or items[where] is None:  # new, or re-added after a delete
                if where is None:
                    added[len(items)] = (name, item_pos.children["name"].span)
                index[name] = len(items)
                items.append((item, item_pos))
                continue
            current = items[where]
            assert current is not None
            merged, merged_pos = self._maps(current[0], current[1], item, item_pos, (*path, j))
            items[where] = (merged, merged_pos)
        data: list[Any] = []
        pos = Pos(over_pos.span if over else base_pos.span)
        known = tuple(str(item["name"]) for item in base)
        for slot, entry in enumerate(items):
            if entry is not None:
                if slot in added:
                    self.added.append(AddedItem((*path, len(data)), added[slot][0], added[slot][1], known))
                pos.children[len(data)] = entry[1]
                data.append(entry[0])
        return data, pos


def apply_overrides(
    base: dict[str, Any], base_pos: Pos, overrides: dict[str, Any], overrides_pos: Pos, env_path: Path
) -> tuple[dict[str, Any], Pos, list[SpecError], list[AddedItem]]:
    """The base document with one environment's overrides merged in, overlay errors, and the items it added."""
    merger = Merger(env_path)
    allowed: dict[str, Any] = {}
    for key, value in overrides.items():
        if key in FORBIDDEN:
            merger.errors.append(
                SpecError(
                    overrides_pos.keys[key],
                    "AL120",
                    (*env_path, key),
                    f"an environment cannot override {key}",
                    "change it in the base spec",
                    None,
                )
            )
        else:
            allowed[key] = value
    data, pos = merger.merge(base, base_pos, allowed, overrides_pos, ())
    return data, pos, merger.errors, merger.added
