"""`alicerce plan` lists every Secret key the generated Alertmanager configuration reads (review obsreview23 F7): the
heartbeat receiver reads a key per environment and site, which nothing else told the user to create."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from alicerce.cli import build_app
from alicerce.emit.kube.operators import ALERTMANAGER_SECRETS, monitoring_values
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT

SPEC = ROOT / "platform.yaml"


def referenced(config: dict[str, Any]) -> set[tuple[str, str]]:
    """(Secret, key) of every *_file path an Alertmanager configuration reads under the mounted Secrets."""
    paths = re.findall(rf"{ALERTMANAGER_SECRETS}/([^/\"']+)/([^/\"']+?)[\"']", json.dumps(config))
    return set(paths)


def plan_json(spec: Path, env: str) -> dict[str, Any]:
    done = CliRunner().invoke(build_app(), ["plan", "--env", env, "--format", "json", str(spec)])
    assert done.exit_code == 0, done.output
    document: dict[str, Any] = json.loads(done.output)
    return document


def test_plan_lists_every_secret_key_the_generated_alertmanager_config_reads() -> None:
    """At each site of prod, the (Secret, key) pairs plan lists are exactly those the site's generated Alertmanager
    configuration reads: the heartbeat's url-prod-aws at aws and url-prod-dc1 at dc1, not the spec's bare `url`."""
    rp = validated(load_file(SPEC), "prod")
    listed = plan_json(SPEC, "prod")["alertSecrets"]
    for site in ("aws", "dc1"):
        config = monitoring_values(rp, rp.site(site))["alertmanager"]
        want = referenced(config["config"])
        assert {(s["secret"], s["key"]) for s in listed if s["site"] == site} == want
        assert {s for s, _ in want} == set(config["alertmanagerSpec"]["secrets"])  # the Secrets mounted, each listed
    heartbeat = [s for s in listed if s["heartbeat"]]
    assert {(s["site"], s["key"]) for s in heartbeat} == {("aws", "url-prod-aws"), ("dc1", "url-prod-dc1")}
    assert all(s["namespace"] == "monitoring" for s in listed)
    # located at the receiver's secret key in the spec
    line = next(i for i, text in enumerate(SPEC.read_text().splitlines(), 1) if "name: heartbeat, kind: webhook" in text)
    assert {s["location"].rsplit(":", 2)[1] for s in heartbeat} == {str(line)}


def test_plan_prints_them_and_locates_an_override(tmp_path: Path) -> None:
    """A receiver whose Secret an environment's overrides change (their lists merge by name) is located there; the
    text report prints the table."""
    data = yaml.safe_load(SPEC.read_text())
    overrides = data["environments"]["dev"].setdefault("overrides", {})
    overrides["monitoring"] = {"receivers": [{"name": "heartbeat", "secret": {"name": "dev-heartbeat", "key": "ping"}}]}
    spec = tmp_path / "platform.yaml"
    text = yaml.safe_dump(data, sort_keys=False)
    spec.write_text(text)
    listed = plan_json(spec, "dev")["alertSecrets"]
    heartbeat = [s for s in listed if s["heartbeat"]]
    assert [(s["secret"], s["key"]) for s in heartbeat] == [("dev-heartbeat", "ping-dev-aws")]
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "key: ping" in row)
    assert heartbeat[0]["location"] == f"{spec}:{line}:{text.splitlines()[line - 1].index('ping') + 1}"
    out = CliRunner().invoke(build_app(), ["plan", "--env", "dev", str(spec)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "Secrets to create" in out.output and "ping-dev-aws" in out.output
