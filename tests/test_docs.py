"""Issue 16, item 8: the spec reference is written from the models and committed fresh; the README,
the docs and the license stay inside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from alicerce.spec.docs import pages, sections
from alicerce.spec.schema import schema_text
from tests.conftest import ROOT

DOCS = ROOT / "docs" / "spec"
PAGES = pages()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_committed_spec_docs_are_fresh(name: str) -> None:
    committed = DOCS / name
    assert committed.is_file() and committed.read_text("utf-8") == PAGES[name], "run `make docs` and commit docs/spec/"


def test_no_stale_pages() -> None:
    assert sorted(p.name for p in DOCS.glob("*.md")) == sorted(PAGES)


def test_every_field_of_the_schema_is_documented() -> None:
    import json

    schema = json.loads(schema_text())
    text = "\n".join(PAGES.values())
    for name, model in schema["$defs"].items():
        for key in model.get("properties", {}):
            assert f"| `{key}` |" in text, f"{name}.{key}"
    assert set(sections()) == set(schema["properties"])


def _links(markdown: Path) -> list[str]:
    return re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", markdown.read_text("utf-8"))


@pytest.mark.parametrize("document", ["README.md", "CHANGELOG.md", *(f"docs/spec/{p}" for p in sorted(PAGES))])
def test_links_stay_inside_the_repository_and_resolve(document: str) -> None:
    """The README once linked ../shared/design, outside the repository a user clones."""
    source = ROOT / document
    for link in _links(source):
        if re.match(r"[a-z]+://", link):
            continue
        target = (source.parent / link).resolve()
        assert target.is_relative_to(ROOT) and target.exists(), f"{document}: {link}"


def test_license_and_changelog() -> None:
    license_text = (ROOT / "LICENSE").read_text("utf-8")
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    changelog = (ROOT / "CHANGELOG.md").read_text("utf-8")
    assert "--json" in changelog and "--format json" in changelog  # the alias and its removal are announced


def test_docs_command_prints_one_section() -> None:
    alicerce = Path(sys.executable).with_name("alicerce")
    result = subprocess.run([str(alicerce), "docs", "nodePools"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout == PAGES["nodePools.md"]


def test_docs_output_replaces_a_link_in_a_page_s_place_and_never_writes_through_it(tmp_path: Path) -> None:
    """Security review of issue 22: `alicerce docs --output DIR` wrote each page through a link in its place (a link
    `operators.md -> ~/.bashrc` overwrote that file); the pages are alicerce's own, so the link itself is replaced."""
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "operators.md").symlink_to(outside)
    done = subprocess.run(
        [sys.executable, "-m", "alicerce", "docs", "--output", str(folder)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert outside.read_text() == "mine\n"
    page = folder / "operators.md"
    assert not page.is_symlink() and page.read_text("utf-8") == PAGES["operators.md"]
