"""parliament (duo-labs' IAM policy linter) over alicerce's policy documents, with its false positives named.

parliament 1.6.4 imports ``pkg_resources`` only to locate its own data files; setuptools 81 and later
no longer ship that module, so a two-function stand-in that finds the files with importlib.resources
is installed before parliament is imported (nothing else of parliament changes).
"""

from __future__ import annotations

import importlib.resources
import json
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def _load_parliament() -> Any:
    if "pkg_resources" not in sys.modules:
        shim = types.ModuleType("pkg_resources")
        shim.resource_filename = lambda package, name: str(importlib.resources.files(package) / name)  # type: ignore[attr-defined]
        sys.modules["pkg_resources"] = shim
    import parliament

    return parliament


@dataclass(frozen=True)
class Finding:
    issue: str
    severity: str
    detail: str


# Findings that are wrong for the document kind, each with the reason (checked to still occur, so a
# suppression that no longer matches anything fails its test).
KEY_POLICY_FALSE_POSITIVES = {
    # "Resource": "*" in a key policy means "this key" (KMS developer guide, "Key policies in AWS KMS").
    "RESOURCE_STAR": "a key policy's Resource * is the key itself",
    # parliament types kms:EncryptionContext:* keys as String, but CloudWatch Logs' documented statement uses
    # ArnLike on kms:EncryptionContext:aws:logs:arn (CloudWatch Logs user guide, "Encrypt log data ... using AWS KMS").
    "MISMATCHED_TYPE": "ArnLike on kms:EncryptionContext:aws:logs:arn is AWS's own documented statement",
    # kms:Describe* in CloudWatch Logs' documented statement matches actions that carry no encryption context;
    # for them the Allow is inert, which is what the documented statement intends.
    "UNKNOWN_CONDITION_FOR_ACTION": "AWS's documented Logs statement conditions kms:Describe* on the encryption context",
}


def findings(doc: Mapping[str, Any]) -> list[Finding]:
    parliament = _load_parliament()
    policy = parliament.analyze_policy_string(json.dumps(doc), include_community_auditors=False)
    out = []
    for raw in policy.findings:
        f = parliament.enhance_finding(raw)
        out.append(Finding(f.issue, f.severity, json.dumps(f.detail, default=str, sort_keys=True)))
    return out
