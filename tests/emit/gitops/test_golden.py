"""Golden trees of the reference platform, and byte-identical output on any machine (issue 13).

tests/data/golden/reference/<env>/ holds the GitOps subtrees (kubernetes/, monitoring/, ci/,
reports/) that `alicerce generate --env <env> platform.yaml` writes. After an intended change,
regenerate them and review the diff:

    .venv/bin/python -m tests.emit.gitops.test_golden
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from alicerce.emit.tree import render_tree
from tests.conftest import DATA, ROOT
from tests.emit.gitops.helpers import files_under, reference

GOLDEN = DATA / "golden" / "reference"
SUBTREES = ("ci", "kubernetes", "monitoring", "reports")
ENVS = ("dev", "prod")


def gitops_files(env: str) -> dict[str, str]:
    return {path: text for path, text in render_tree(reference(env), list(SUBTREES)).items() if path.split("/", 1)[0] in SUBTREES}


@pytest.mark.parametrize("env", ENVS)
def test_the_reference_trees_equal_the_golden_trees(env: str) -> None:
    golden = files_under(GOLDEN / env)
    produced = {path: text.encode("utf-8") for path, text in gitops_files(env).items()}
    assert sorted(produced) == sorted(golden), "files added or removed: regenerate with `python -m tests.emit.gitops.test_golden`"
    changed = [path for path in produced if produced[path] != golden[path]]
    assert changed == [], "regenerate with `python -m tests.emit.gitops.test_golden` and review the diff"


def _generate(out: Path, env: dict[str, str]) -> dict[str, bytes]:
    command = [sys.executable, "-m", "alicerce", "generate", "--env", "prod", "--out", str(out), str(ROOT / "platform.yaml")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=out.parent, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return files_under(out)


def test_generate_is_byte_identical_across_hash_seeds_time_zones_and_locales(tmp_path: Path) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "TZ", "PYTHONHASHSEED"))}
    runs = [
        {"PYTHONHASHSEED": "0", "TZ": "UTC", "LC_ALL": "C", "LANG": "C"},
        {"PYTHONHASHSEED": "4242", "TZ": "Pacific/Kiritimati", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
    ]
    trees = []
    for i, extra in enumerate(runs):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        trees.append(_generate(folder / "out", {**base, **extra}))
    assert trees[0] == trees[1]
    assert {p.split("/", 1)[0] for p in trees[0]} >= {*SUBTREES, "ansible", ".alicerce"}


def regenerate() -> None:
    for env in ENVS:
        target = GOLDEN / env
        shutil.rmtree(target, ignore_errors=True)
        for path, text in gitops_files(env).items():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            (target / path).write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    regenerate()
