"""checkov's AWS checks over the preview of every shipped spec: nothing fails outside the documented allowlist.

checkov is not a dependency of alicerce's venv: the test runs the ``checkov`` found in $CHECKOV, .cache/checkov (`make tools`) or PATH,
and under CI fails rather than skips without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.targets.aws.checkov_plan import plan_document

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ALLOWLIST = Path(__file__).with_name("checkov_allowlist.yaml")
IN_CI = os.environ.get("CI", "").lower() == "true"


def _checkov() -> str:
    found = (
        os.environ.get("CHECKOV")
        or shutil.which("checkov", path=str(ROOT / ".cache" / "checkov" / "bin"))  # make tools builds it there
        or shutil.which("checkov")
    )
    if found is None:
        if IN_CI:
            pytest.fail("checkov is not installed (make tools builds .cache/checkov from tests/tools/checkov/requirements.lock)")
        pytest.skip("checkov is not installed here (set CHECKOV=/path/to/checkov); CI runs it")
    return found


def test_the_preview_passes_checkovs_aws_checks_outside_the_allowlist(shipped: Any, tmp_path: Path) -> None:
    checkov = _checkov()
    _, result = shipped
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_document(result)))
    run = subprocess.run(
        [checkov, "-f", str(plan), "--framework", "terraform_plan", "-o", "json", "--quiet", "--skip-download"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads(run.stdout)
    assert report["summary"]["parsing_errors"] == 0 and report["summary"]["passed"] > 100
    allowed: dict[str, dict[str, Any]] = yaml.safe_load(ALLOWLIST.read_text())
    outside = [
        (f["check_id"], f["resource"], f["check_name"])
        for f in report["results"]["failed_checks"]
        if f["check_id"] not in allowed or f["resource"] not in allowed[f["check_id"]].get("resources", [f["resource"]])
    ]
    assert outside == []


def test_every_allowlisted_check_is_justified() -> None:
    allowed = yaml.safe_load(ALLOWLIST.read_text())
    assert allowed and all(len(entry["why"]) > 40 for entry in allowed.values())
