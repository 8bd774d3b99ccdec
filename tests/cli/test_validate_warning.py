"""A warning rule's finding is shown by validate and fails nothing (review sizreview31 N2).

A LoRA run on a mixture-of-experts model without model.experts and without an adapter block validated clean while
`plan` took its adapters as 1% of the base and warned PL348 only. AL393 warns at validate, located at the model, and
the spec stays valid (exit 0); with the experts declared there is no warning and the output is what it was.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from alicerce.cli.documents import DOCUMENTS
from tests.cli.test_gitops import sarif_validator
from tests.conftest import ROOT, alicerce

QWEN3_MOE: dict[str, Any] = {"parameters": "30.5B", "activeParameters": "3.3B", "architecture": "moe", "layers": 48, "hiddenSize": 2048}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, env={"ALICERCE_NO_CACHE": "1"}, timeout=120)


def _spec(tmp_path: Path, model: dict[str, Any]) -> int:
    spec = yaml.safe_load((ROOT / "examples/minimal.yaml").read_text(encoding="utf-8"))
    spec["workloads"] = [{"name": "ft", "kind": "fine-tuning", "method": "lora", "team": "ml", "tokens": "100M", "model": model}]
    text = yaml.safe_dump(spec, sort_keys=False)
    (tmp_path / "platform.yaml").write_text(text, encoding="utf-8")
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.strip() == "model:")


def test_a_lora_moe_without_experts_is_valid_with_a_located_warning(tmp_path: Path) -> None:
    line = _spec(tmp_path, QWEN3_MOE)
    text = run("validate", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    warning, valid = text.stderr.splitlines()
    assert warning.startswith(f"platform.yaml:{line}:3: warning[AL393]: workloads[0].model: the plan takes the LoRA "
                              "adapters as loraTrainableFraction, 1% of the base, because the routed experts"), warning  # fmt: skip
    assert warning.endswith("(declare model.experts with total and the perToken a router picks below it, and model.layers "
                            "and hiddenSize, to have them counted)"), warning  # fmt: skip
    assert valid == "platform.yaml: valid (environments: dev)"
    document = json.loads(run("validate", "--format", "json", cwd=tmp_path).stdout)
    jsonschema.Draft202012Validator(DOCUMENTS["validate"]()).validate(document)
    assert document["valid"] and document["errors"] == []
    assert [(n["rule"], n["path"], n["line"]) for n in document["notes"]] == [("AL393", "workloads[0].model", line)]


def test_sarif_carries_the_warning_as_a_located_result_of_level_warning(tmp_path: Path) -> None:
    """Code scanning reads only the SARIF log: a warning left out of it was never seen in a pull request. It is a
    result of level warning (exit 0 alone), and beside an error both are results (exit 2)."""
    line = _spec(tmp_path, QWEN3_MOE)
    sarif = run("validate", "--format", "sarif", cwd=tmp_path)
    assert sarif.returncode == 0, sarif.stderr
    log = json.loads(sarif.stdout)
    assert [e.message for e in sarif_validator().iter_errors(log)] == []
    (result,) = log["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (result["ruleId"], result["level"], region["startLine"], region["startColumn"]) == ("AL393", "warning", line, 3)
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["defaultConfiguration"] == {"level": "warning"}
    spec = yaml.safe_load((tmp_path / "platform.yaml").read_text(encoding="utf-8"))
    spec["workloads"][0]["team"] = "nobody"  # a cross-field error beside the warning
    (tmp_path / "platform.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    both = run("validate", "--format", "sarif", cwd=tmp_path)
    assert both.returncode == 2, both.stderr
    levels = {(r["ruleId"][:3], r["level"]) for r in json.loads(both.stdout)["runs"][0]["results"]}
    assert ("AL3", "warning") in levels and any(level == "error" for _, level in levels), levels


def test_declared_experts_get_no_warning(tmp_path: Path) -> None:
    _spec(tmp_path, {**QWEN3_MOE, "experts": {"total": 128, "perToken": 8}})
    assert run("validate", cwd=tmp_path).stderr == "platform.yaml: valid (environments: dev)\n"
    assert "notes" not in json.loads(run("validate", "--format", "json", cwd=tmp_path).stdout)
