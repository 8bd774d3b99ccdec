"""A PagerDuty integration key or a Slack webhook URL pasted where a receiver names its Secret is refused as secret
material (AL276, or AL104 where the field's grammar sees it first), located, and never echoed (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alicerce.cli import build_app, run
from tests.conftest import ROOT

PAGERDUTY = "e93facc04764012d7bfb002500d5d1a6"  # the shape of an Events API v2 integration key
SLACK = "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/cccccccccccccccccccccccc"
RECEIVER = "secret: {name: alertmanager-pagerduty, key: routing-key}"


@pytest.mark.parametrize(
    ("replacement", "path"),
    [
        (f"secret: {{name: alertmanager-pagerduty, key: {PAGERDUTY}}}", "monitoring.receivers[0].secret.key"),
        (f"secret: {{name: {PAGERDUTY}, key: routing-key}}", "monitoring.receivers[0].secret.name"),
        (f'secret: {{name: alertmanager-pagerduty, key: "{SLACK}"}}', "monitoring.receivers[0].secret.key"),
    ],
)
def test_a_pasted_receiver_credential_is_refused_and_never_echoed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], replacement: str, path: str
) -> None:
    text = (ROOT / "platform.yaml").read_text()
    assert RECEIVER in text
    spec = tmp_path / "platform.yaml"
    spec.write_text(text.replace(RECEIVER, replacement))
    assert run(build_app(), ["validate", str(spec)]) == 2
    plain = capsys.readouterr()
    assert run(build_app(), ["validate", str(spec), "--format", "json"]) == 2
    as_json = capsys.readouterr()
    errors = json.loads(as_json.out)["errors"]
    assert {(e["path"], e["rule"] in ("AL104", "AL276")) for e in errors} == {(path, True)}, errors
    assert "looks like a" in errors[0]["message"]
    for output in (plain.out, plain.err, as_json.out, as_json.err):
        assert PAGERDUTY not in output and "T0AAAAAAA/B0BBBBBBB" not in output


def test_sarif_redacts_secret_material_as_the_other_reports_do() -> None:
    """Security review of issue 22: text and JSON reports pass every message through `redacted`; SARIF, uploaded to
    code scanning where every reader of the repository sees it, did not."""
    from alicerce.rules.sarif import render_sarif
    from alicerce.spec.errors import Span, SpecError

    error = SpecError(Span("platform.yaml", 3, 5), "AL104", ("metadata", "owner"), f'"{PAGERDUTY}" is wrong', f"not {SLACK}")
    document = render_sarif([error], "0.0.0")
    assert PAGERDUTY not in document and "T0AAAAAAA" not in document
    assert "<redacted>" in json.loads(document)["runs"][0]["results"][0]["message"]["text"]


def test_a_pagerduty_heartbeat_is_refused_where_it_is_declared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review obsreview22 F10: Watchdog always fires and never resolves; a PagerDuty routing key opens an incident for it
    at install, kept open, and nothing pages when it stops. A heartbeat is a webhook to a dead man's switch."""
    text = (ROOT / "platform.yaml").read_text()
    beat = "{name: heartbeat, kind: webhook, secret: {name: alertmanager-heartbeat, key: url}, heartbeat: true}"
    assert beat in text
    spec = tmp_path / "platform.yaml"
    spec.write_text(text.replace(beat, beat.replace("kind: webhook", "kind: pagerduty")))
    assert run(build_app(), ["validate", str(spec), "--format", "json"]) == 2
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert [(e["rule"], e["path"]) for e in errors] == [("AL321", "monitoring.receivers[2].kind")], errors
    assert errors[0]["line"] == text[: text.index(beat)].count("\n") + 1 and "never resolves" in errors[0]["message"]


def test_a_slack_heartbeat_is_refused_where_it_is_declared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review obsreview25 G4: a Slack heartbeat satisfied AL325, posting Watchdog every minute (1,440 messages a day per
    site) to a channel that raises nothing when the posts stop. A heartbeat is a webhook to a dead man's switch."""
    text = (ROOT / "platform.yaml").read_text()
    beat = "{name: heartbeat, kind: webhook, secret: {name: alertmanager-heartbeat, key: url}, heartbeat: true}"
    assert beat in text
    spec = tmp_path / "platform.yaml"
    spec.write_text(text.replace(beat, beat.replace("kind: webhook", "kind: slack")))
    assert run(build_app(), ["validate", str(spec), "--format", "json"]) == 2
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert [(e["rule"], e["path"]) for e in errors] == [("AL321", "monitoring.receivers[2].kind")], errors
    assert errors[0]["line"] == text[: text.index(beat)].count("\n") + 1
    assert "nothing notices" in errors[0]["message"] and "kind: webhook" in errors[0]["hint"]
