"""A GPU named by an alias resolves to one part: validate says which, as a note (issue 27, "smaller").

`H100` means the SXM5 part; a user who meant the PCIe card sees it at validate, located at the
accelerator, while the spec stays valid (exit 0). A spec that names the part gets no note, and its
output is what it was.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import yaml

from alicerce.cli.documents import DOCUMENTS
from tests.conftest import ROOT, alicerce


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, env={"ALICERCE_NO_CACHE": "1"}, timeout=120)


def _spec(tmp_path: Path, accelerator: str) -> None:
    spec = yaml.safe_load((ROOT / "examples/minimal.yaml").read_text(encoding="utf-8"))
    spec["nodePools"][1]["accelerator"] = accelerator
    (tmp_path / "platform.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def test_an_alias_gets_a_located_note_naming_the_part(tmp_path: Path) -> None:
    _spec(tmp_path, "L4:1")
    line = next(n for n, text in enumerate((tmp_path / "platform.yaml").read_text().splitlines(), 1) if "accelerator: L4:1" in text)
    text = run("validate", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stderr.splitlines() == [
        f'platform.yaml:{line}:16: note: nodePools[1].accelerator: "L4" is an alias of L4-24GB '
        "(write L4-24GB:1, or the id of the part you meant from `alicerce catalog gpus`)",
        "platform.yaml: valid (environments: dev)",
    ]
    document = json.loads(run("validate", "--format", "json", cwd=tmp_path).stdout)
    jsonschema.Draft202012Validator(DOCUMENTS["validate"]()).validate(document)
    notes = [(n["path"], n["value"], n["line"]) for n in document["notes"]]
    assert document["valid"] and notes == [("nodePools[1].accelerator", "L4", line)]


def test_the_parts_id_gets_no_note(tmp_path: Path) -> None:
    _spec(tmp_path, "L4-24GB:1")
    assert run("validate", cwd=tmp_path).stderr == "platform.yaml: valid (environments: dev)\n"
    assert "notes" not in json.loads(run("validate", "--format", "json", cwd=tmp_path).stdout)
