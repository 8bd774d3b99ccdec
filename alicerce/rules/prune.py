"""The parts of a spec that parsed, so the cross-field rules can check them despite schema errors.

A schema error hides every cross-field error of its environment unless the rules run anyway. They
run on the document with the failing parts cut out: the smallest list item holding an error (a
pool, a tier, a quota), or the failing key where no list item holds it, going one level up when
that leaves a required field missing. A few rounds settle it; a document whose top-level sections
cannot be kept is left to its schema errors alone. Findings are mapped back to the original
positions, and findings that only name an item that was cut (``no node pool named X``) are
dropped: that item's own schema errors already say what is wrong with it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError

from alicerce.spec.errors import Path
from alicerce.spec.models import PlatformSpec
from alicerce.spec.record import field, record

ROUNDS = 6


@record(frozen=False)
class Pruned:
    """A schema-valid spec built from what parsed, and how to map its paths back."""

    spec: PlatformSpec
    maps: list[dict[Path, list[int]]] = field(default_factory=list)  # per round: list path -> original index of each kept item
    cut_names: set[str] = field(default_factory=set)  # names of the list items that were cut

    @property
    def shortened(self) -> set[Path]:
        """The lists that lost an item, as paths in the original document: a finding about such a list as a whole
        (no receiver that pages, where the pager was cut) may only repeat the cut item's own schema error."""
        return {self.original(path, rounds=i) for i, kept in enumerate(self.maps) for path in kept}

    def original(self, path: Path, rounds: int | None = None) -> Path:
        """``path`` in the pruned document (or in the document after the first ``rounds`` rounds of cuts), as a path
        in the original one."""
        for kept in reversed(self.maps[:rounds]):
            out: list[Any] = []
            for element in path:
                out.append(kept[tuple(out)][element] if isinstance(element, int) and tuple(out) in kept else element)
            path = tuple(out)
        return path


def _cut_points(error_paths: Iterable[Path], data: Any) -> set[Path]:
    """For each error, the path to remove: its deepest enclosing list item, else the key itself."""
    cuts: set[Path] = set()
    for path in error_paths:
        node = data
        depth = 0
        deepest_item = None
        for depth, element in enumerate(path):
            if isinstance(node, list) and isinstance(element, int) and element < len(node):
                deepest_item = depth
                node = node[element]
            elif isinstance(node, dict) and element in node:
                node = node[element]
            else:
                break
        else:
            depth = len(path)
        cut = path[: deepest_item + 1] if deepest_item is not None else path[: max(depth, 1)]
        cuts.add(cut)
    return cuts


def _remove(data: Any, cuts: set[Path]) -> tuple[dict[Path, list[int]], set[str]]:
    """Remove ``cuts`` from ``data`` in place; returns the kept indices of every list it shortened."""
    kept: dict[Path, list[int]] = {}
    names: set[str] = set()
    # deepest first, and within a list from the back, so earlier removals do not move later ones
    for cut in sorted(cuts, key=lambda p: (len(p), [str(e) for e in p]), reverse=True):
        parent = data
        for element in cut[:-1]:
            try:
                parent = parent[element]
            except (KeyError, IndexError, TypeError):
                parent = None
                break
        last = cut[-1]
        if isinstance(parent, list) and isinstance(last, int) and last < len(parent):
            if isinstance(parent[last], dict) and isinstance(parent[last].get("name"), str):
                names.add(parent[last]["name"])
            indices = kept.setdefault(cut[:-1], list(range(len(parent))))
            del parent[last]
            del indices[last]
        elif isinstance(parent, dict):
            parent.pop(last, None)
    return kept, names


def prune(data: dict[str, Any], error_paths: Callable[[ValidationError, Any], list[Path]], error: ValidationError) -> Pruned | None:
    """The schema-valid part of ``data`` (whose validation raised ``error``), or None when too little parses.

    ``error_paths`` turns a validation error of a document into the document paths it concerns.
    """
    work = copy.deepcopy(data)
    maps: list[dict[Path, list[int]]] = []
    cut_names: set[str] = set()
    previous: set[Path] = set()
    for _ in range(ROUNDS):
        paths = error_paths(error, work)
        cuts = _cut_points(paths, work)
        # a cut that did not help (a required field is now missing at the same place): go one level up
        cuts = {c[:-1] if c in previous and len(c) > 1 else c for c in cuts}
        if any(len(c) == 1 for c in cuts):
            return None  # a whole top-level section would go: nothing useful is left to check
        kept, names = _remove(work, cuts)
        maps.append(kept)
        cut_names |= names
        previous = cuts
        try:
            spec = PlatformSpec.model_validate(work)
        except ValidationError as again:
            error = again
            continue
        return Pruned(spec, maps, cut_names)
    return None
