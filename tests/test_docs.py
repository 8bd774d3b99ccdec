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
    # a heading straight after a list item renders as the item's text in some viewers (review sizreview29 N3)
    lines = changelog.splitlines()
    unspaced = [n + 1 for n, line in enumerate(lines) if line.startswith("#") and n > 0 and lines[n - 1].strip()]
    assert unspaced == [], f"CHANGELOG.md headings without a blank line before them, at lines {unspaced}"


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


def test_the_readme_cost_figures_are_what_plan_prints() -> None:
    """The README's paragraph on the reference platform's month quotes plan's figures: a default or price change
    that moves them fails here instead of leaving the README behind (it said $392,715 while plan said $392,551)."""
    from alicerce.plan.platform import plan_platform
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_file
    from tests.conftest import TODAY

    plan = plan_platform(validated(load_file(ROOT / "platform.yaml", "platform.yaml"), "prod"), today=TODAY)
    pool = next(p for p in plan.pools if p.name == "onprem-h100")
    cost, (option,) = pool.owned_cost, plan.own_vs_rent
    assert cost is not None
    by = {o.purchase: o for o in option.options}
    text = " ".join((ROOT / "README.md").read_text("utf-8").split())
    quoted = (
        f"the 32 owned H100 nodes cost ${cost.monthly_usd:,.0f} a month at {cost.utilization:.0%} utilisation",
        f"${cost.usd_per_gpu_hour():.2f} per used GPU-hour",
        f"capex ${cost.items['capex']:,.0f}", f"support ${cost.items['support']:,.0f}",
        f"space ${cost.items['space']:,.0f}", f"power ${cost.items['power']:,.0f}", f"staff ${cost.items['staff']:,.0f}",
        f"owning wins above {option.wins(by['on-demand'])[0]:.0%} utilisation",
        f"cheaper below {option.wins(by['capacity-block'])[0]:.0%}",
        f"Prod costs ${plan.monthly_cost_usd:,.0f} a month in all",
    )  # fmt: skip
    assert [q for q in quoted if q not in text] == []


def test_the_readme_names_the_plan_check_ids_there_are() -> None:
    """Review sizreview22 N2: the README said plan ids are PL300-PL330 and PL340-PL342 where `plan --checks` listed
    PL300-PL347. The range it names is the registry's, and the registry has no gap inside it."""
    from alicerce.plan.findings import CHECKS

    ids = sorted(int(c[2:]) for c in CHECKS)
    assert ids == list(range(ids[0], ids[-1] + 1)), "a gap in the plan check ids: name the ranges in the README"
    text = " ".join((ROOT / "README.md").read_text("utf-8").split())
    (named,) = re.findall(r"Plan findings carry ids (`PL\d+`-`PL\d+`)", text)
    assert named == f"`PL{ids[0]}`-`PL{ids[-1]}`"
