"""`alicerce validate --format sarif`: every located error as SARIF 2.1.0, for GitHub code scanning.

One run, one result per error with the spec file, line and column, rules described from the rule table; a warning
rule's findings (validate exits 0 on them) are results of level ``warning``, so code scanning shows them beside the
errors instead of the log dropping them. Shaped by the OASIS SARIF 2.1.0 schema (tests validate against it) and by what
GitHub's ``upload-sarif`` needs: a ``results`` array even when empty, repository-relative URIs, one run per category.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from alicerce.rules import WARNING_RULES, all_rules
from alicerce.spec.errors import SpecError, format_path
from alicerce.spec.text import redacted

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://alicerce.dev"
# rule ids outside the cross-field table, by the hundred they fall in
FAMILIES = {
    "AL0": ("spec-syntax", "The file is readable YAML a spec can be loaded from."),
    "AL1": ("spec-schema", "The document matches the spec language (keys, types, environment overrides)."),
}


def _uri(file: str) -> str:
    """A repository-relative POSIX path when the file is below the current folder (what code scanning maps to lines)."""
    path = Path(file)
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            return path.as_uri()
    return PurePosixPath(*path.parts).as_posix() if path.parts else file


def _level(rule_id: str) -> str:
    return "warning" if rule_id in WARNING_RULES else "error"


def _rule(rule_id: str) -> dict[str, Any]:
    table = all_rules()
    if rule_id in table:
        rule = table[rule_id]
        name, summary, tags = rule.name, rule.summary, ["cross-field", *(["waivable"] if rule.waivable else [])]
        level = _level(rule_id)
    else:
        name, summary = FAMILIES.get(rule_id[:3], ("spec", "The platform spec is valid."))
        tags, level = [name], "error"
    return {
        "id": rule_id,
        "name": name,
        "shortDescription": {"text": summary},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": tags},
    }


def _result(error: SpecError, index: int) -> dict[str, Any]:
    text = error.message
    if error.path:
        text = f"{format_path(error.path)}: {text}"
    if error.environment:
        text = f"[env {error.environment}] {text}"
    if error.hint:
        text = f"{text} ({error.hint})"
    text = redacted(text)  # the last guard the text and JSON reports have too: code scanning shows it to every reader
    return {
        "ruleId": error.rule,
        "ruleIndex": index,
        "level": _level(error.rule),
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(error.span.file), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": max(error.span.line, 1), "startColumn": max(error.span.column, 1)},
                }
            }
        ],
        # stable across runs and unrelated edits: rule, file, spec path, message
        "partialFingerprints": {
            "alicerceError/v1": redacted(f"{error.rule}:{_uri(error.span.file)}:{format_path(error.path)}:{error.message}")
        },
    }


def render_sarif(errors: Sequence[SpecError], version: str, warnings: Sequence[SpecError] = ()) -> str:
    """The SARIF log of one validation: its errors, then its warnings (an empty ``results`` list when there are none)."""
    errors = [*errors, *warnings]
    ids = sorted({e.rule for e in errors})
    index = {rule_id: i for i, rule_id in enumerate(ids)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "alicerce",
                        "version": version,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(rule_id) for rule_id in ids],
                    }
                },
                "results": [_result(e, index[e.rule]) for e in errors],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
