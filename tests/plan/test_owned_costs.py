"""`costs.owned` is the name of owned sites' costs; `costs.onprem`, its old name, is still read (issue 27, item 4).

Both keys give the same plan; the hints name the key the spec uses (the new one when it gives none);
a spec that gives both is refused (AL350, located at the old key).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, alicerce

# a complete declaration (server price, cost of capital): no finding names the key the spec uses (PL311, PL319, PL325 do)
# a site that gives its own figures wherever the plan would otherwise name the key to set (PL319, PL325, PL329, PL353: hints
# that name the key the spec uses, costs.owned or costs.onprem, test_the_hint_names_the_key_the_spec_uses)
SITE_COSTS = {"site": "dc2", "pue": 1.25, "costOfCapital": 0.07, "staffFte": 2, "usdPerFteYear": 190000,
              "supportFractionPerYear": 0.12, "loadFraction": 0.75, "idleFraction": 0.25, "storageUsdPerGbps": 1500,
              "pools": [{"pool": "h200", "serverUsd": 420000, "networkUsd": 30000}]}  # fmt: skip


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return alicerce(*args, cwd=cwd, env={"ALICERCE_NO_CACHE": "1"}, timeout=300)


def _plan(tmp_path: Path, costs: dict[str, object] | None) -> dict[str, object]:
    spec = yaml.safe_load((ROOT / "examples/onprem-superpod.yaml").read_text(encoding="utf-8"))
    if costs is not None:
        spec["costs"] = costs
    (tmp_path / "platform.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    result = run("plan", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    return dict(json.loads(result.stdout))


def test_both_names_give_the_same_plan(tmp_path: Path) -> None:
    new, old = _plan(tmp_path, {"owned": [SITE_COSTS]}), _plan(tmp_path, {"onprem": [SITE_COSTS]})
    assert new == old
    assert new["monthlyCostUsd"] != _plan(tmp_path, None)["monthlyCostUsd"]  # the figures were read


@pytest.mark.parametrize(
    ("costs", "key"), [(None, "owned"), ({"onprem": [{"site": "dc2"}]}, "onprem"), ({"owned": [{"site": "dc2"}]}, "owned")]
)
def test_the_hint_names_the_key_the_spec_uses(tmp_path: Path, costs: dict[str, object] | None, key: str) -> None:
    messages = [f["message"] for f in _plan(tmp_path, costs)["findings"]]  # type: ignore[union-attr]
    assert any(f"set costs.{key}[dc2].pools[h200].serverUsd" in m for m in messages), messages


def test_both_keys_at_once_are_refused_at_the_old_one(tmp_path: Path) -> None:
    spec = yaml.safe_load((ROOT / "examples/onprem-superpod.yaml").read_text(encoding="utf-8"))
    spec["costs"] = {"owned": [SITE_COSTS], "onprem": [SITE_COSTS]}
    text = yaml.safe_dump(spec, sort_keys=False)
    (tmp_path / "platform.yaml").write_text(text, encoding="utf-8")
    result = run("validate", cwd=tmp_path)
    line = [n for n, row in enumerate(text.splitlines(), 1) if row == "  onprem:"][-1]  # costs.onprem: the last one
    assert result.returncode == 2
    assert f"platform.yaml:{line}:3: error[AL350]: costs.onprem: costs.onprem is the old name of costs.owned" in result.stdout
