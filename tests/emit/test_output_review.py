"""The output contract under a break-it review: what a user puts in or beside the tree survives.

These run :func:`write_tree` in-process on small trees (fast); the end-to-end cases of the contract
are in test_output_safety.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from alicerce.emit.errors import OutputError
from alicerce.emit.tree import MANIFEST, tree_changes, with_manifest, write_tree


def tree(**files: str) -> dict[str, str]:
    """A generated tree: ``a__b="x"`` is the file ``a/b`` holding ``x``, plus its manifest."""
    return with_manifest({name.replace("__", "/"): text for name, text in files.items()}, platform="p", environment="e")


OLD = tree(keep="1\n", sub__gone="2\n")
NEW = tree(keep="1\n")


@pytest.mark.parametrize("kind", ["folder", "symlink", "fifo"])
def test_an_obsolete_generated_path_the_user_replaced_is_kept_and_reported(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    write_tree(out, OLD)
    gone = out / "sub" / "gone"
    gone.unlink()
    if kind == "folder":
        gone.mkdir()
        (gone / "mine.txt").write_text("mine\n")
    elif kind == "symlink":
        gone.symlink_to("../keep")
    else:
        os.mkfifo(gone)
    assert tree_changes(out, NEW).edited == ("sub/gone",)
    with pytest.raises(OutputError, match="sub/gone"):
        write_tree(out, NEW)
    assert os.path.lexists(gone)
    report = write_tree(out, NEW, force=True)
    assert report.displaced == ["sub/gone"]
    assert os.path.lexists(out / str(report.displaced_to) / "sub" / "gone")
    assert (out / MANIFEST).read_text() == NEW[MANIFEST]
