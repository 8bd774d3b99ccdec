"""checkov's AWS checks over the preview of every shipped spec: nothing fails outside the documented allowlist.

checkov is not a dependency of alicerce's venv: the test runs the ``checkov`` found in $CHECKOV, .cache/checkov (`make tools`) or PATH,
and under CI fails rather than skips without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.targets.aws.checkov_plan import plan_document
from tests.targets.aws.conftest import SHIPPED, shipped_preview

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


def test_the_previews_pass_checkovs_aws_checks_outside_the_allowlist(tmp_path: Path) -> None:
    """One checkov run over the plans of every shipped spec and environment: checkov's start-up (~2.5 of a run's
    ~3.3 CPU-s) is paid once, not once per plan. Each plan is still checked (over 100 checks passed in each) and a
    finding outside the allowlist names its spec and environment."""
    checkov = _checkov()
    plans: dict[str, str] = {}  # plan file name -> spec:env
    for spec, env in SHIPPED:
        plan = tmp_path / f"{spec.replace('/', '_')}-{env}.json"
        plan.write_text(json.dumps(plan_document(shipped_preview(spec, env)[1])))
        plans[plan.name] = f"{spec}:{env}"
    run = subprocess.run(
        # not --quiet: the passed checks name their file too
        [checkov, *(arg for name in plans for arg in ("-f", str(tmp_path / name))), "--framework", "terraform_plan", "-o", "json",
         "--skip-download"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    report = json.loads(run.stdout)  # one framework: one report, each result naming its file
    assert report["summary"]["parsing_errors"] == 0, run.stderr[-2000:]
    passed = Counter(Path(check["file_path"]).name for check in report["results"]["passed_checks"])
    assert all(passed[name] > 100 for name in plans), {plans[name]: passed[name] for name in plans}
    allowed: dict[str, dict[str, Any]] = yaml.safe_load(ALLOWLIST.read_text())
    outside = [
        (plans[Path(f["file_path"]).name], f["check_id"], f["resource"], f["check_name"])
        for f in report["results"]["failed_checks"]
        if f["check_id"] not in allowed or f["resource"] not in allowed[f["check_id"]].get("resources", [f["resource"]])
    ]
    assert outside == []


def test_every_allowlisted_check_is_justified() -> None:
    allowed = yaml.safe_load(ALLOWLIST.read_text())
    assert allowed and all(len(entry["why"]) > 40 for entry in allowed.values())
