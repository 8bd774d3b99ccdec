"""Issue 16, item 6: a spec declares GPUs and instance types the built-in catalog lacks.

They are checked with the built-in models (facts and sources), known to every rule, used by
sizing, and marked user-provided in `show`, `plan` and `catalog`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file, load_text
from tests.conftest import ALICERCE, ROOT

EXAMPLE = ROOT / "examples" / "user-catalog.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """A pipe without COLUMNS: tables print one line per row."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([str(ALICERCE), *args], cwd=ROOT, capture_output=True, text=True, env=env, check=False, timeout=120)


def test_user_entries_resolve_like_built_in_ones() -> None:
    platform = validated(load_file(EXAMPLE), "lab")
    pool = platform.pool("infer-a30")
    assert pool.gpu is not None and pool.gpu.id == "A30-24GB" and pool.gpus_per_node == 4
    assert platform.pool("system").instance is not None and platform.pool("system").instance.vcpus == 16  # type: ignore[union-attr]
    assert platform.catalog.user_ids == {"A30-24GB", "c6i.4xlarge"}


def test_outputs_mark_user_provided_entries() -> None:
    shown = yaml.safe_load(run("show", str(EXAMPLE)).stdout)
    pools = {p["name"]: p["resolved"] for p in shown["nodePools"]}
    assert (pools["infer-a30"]["userCatalog"], pools["system"]["userCatalog"], pools["lab-system"]["userCatalog"]) == (
        ["A30-24GB"],
        ["c6i.4xlarge"],
        [],
    )
    plan = json.loads(run("plan", str(EXAMPLE), "--format", "json").stdout)
    assert plan["userCatalog"] == ["A30-24GB", "c6i.4xlarge"]
    assert "A30-24GB (user catalog)" in run("plan", str(EXAMPLE)).stdout
    gpus = json.loads(run("catalog", "gpus", "--spec", str(EXAMPLE), "--format", "json").stdout)["gpus"]
    assert {g["id"]: g["origin"] for g in gpus}["A30-24GB"] == "user"
    assert {g["origin"] for g in gpus if g["id"] != "A30-24GB"} == {"built-in"}
    table = run("catalog", "instances", "--spec", str(EXAMPLE)).stdout
    (row,) = [line for line in table.splitlines() if line.startswith("c6i.4xlarge ")]
    assert " user " in row


def test_user_entries_are_validated_like_built_in_ones(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("      memoryBandwidthGBps: 933\n", "      memoryBandwidthGBs: 933\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    result = run("validate", str(spec))
    assert result.returncode == 2
    assert 'catalog.gpus[0].memoryBandwidthGBs: unknown key "memoryBandwidthGBs" (did you mean "memoryBandwidthGBps"?)' in result.stdout


def test_a_clash_with_a_built_in_id_is_an_error() -> None:
    text = EXAMPLE.read_text().replace("aliases: [A30]", "aliases: [A30, L40S]")
    document = load_text(text, "spec.yaml")
    from alicerce.rules.validate import check

    errors = [e.render() for e in check(document).errors]
    assert errors == [
        'spec.yaml:35:22: error[AL285]: catalog.gpus[0].aliases[1]: "L40S" is already the built-in GPU L40S-48GB'
        " (use the built-in L40S-48GB (`alicerce catalog gpus`), or give this GPU an id of its own)"
    ]


def test_a_profiles_sms_are_read_against_the_gpus(tmp_path: Path) -> None:
    """Review sizreview27 R4: a 1g profile's 200 SMs on a GPU of 98 planned a slice twice the GPU (compute_share 2.04),
    and a profile's SMs without mig.sms were dropped for compute slices / 4 in silence: both are located errors, exit 2."""
    over = (
        EXAMPLE.read_text()
        .replace("        memorySlices: 4  #", "        sms: 56\n        memorySlices: 4  #")
        .replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 4, sms: 200}")
    )
    spec = tmp_path / "over.yaml"
    spec.write_text(over)
    result = run("validate", str(spec))
    assert result.returncode == 2, result.stdout
    assert "error[AL287]: catalog.gpus[0].mig.profiles[0].sms: 1g.6gb has 200 SMs, more than the 56 of the whole A30-24GB" in result.stdout
    alone = EXAMPLE.read_text().replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 4, sms: 14}")
    spec.write_text(alone)
    result = run("validate", str(spec))
    assert result.returncode == 2, result.stdout
    assert "error[AL287]: catalog.gpus[0].mig.profiles[0].sms: 1g.6gb's sms are its share of the GPU's" in result.stdout
