"""The reference platform and variants of it, resolved, for the GitOps tests."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from alicerce.catalog import load_catalog
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import DATA, ROOT

UPSTREAM = DATA / "upstream"


def reference_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "platform.yaml").read_text("utf-8"))
    return data


def resolve(data: dict[str, Any], env: str) -> ResolvedPlatform:
    return validated(load_text(yaml.safe_dump(data, sort_keys=False), "platform.yaml"), env)


@functools.cache
def reference(env: str) -> ResolvedPlatform:
    return resolve(reference_data(), env)


def variant(change: Callable[[dict[str, Any]], None], env: str = "prod") -> ResolvedPlatform:
    """The reference platform with ``change`` applied to its data."""
    data = copy.deepcopy(reference_data())
    change(data)
    return resolve(data, env)


def site(data: dict[str, Any], env: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in data["environments"][env]["sites"] if s["name"] == name)
    return found


def pool(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in data["nodePools"] if p["name"] == name)
    return found


def argocd_app_version() -> str:
    version = load_catalog().versions.charts["argo-cd"].appVersion
    assert version is not None
    return version


def application_schema(strict: bool = True) -> dict[str, Any]:
    """The vendored Application CRD schema of the pinned Argo CD; ``strict`` refuses fields the CRD does not
    declare (the API server would prune them silently), except under preserve-unknown-fields."""
    path = UPSTREAM / "argocd" / argocd_app_version() / "crds" / "argoproj.io_applications_v1alpha1.schema.json"
    schema: dict[str, Any] = json.loads(path.read_text("utf-8"))
    if strict:
        _close(schema)
    return schema


def _close(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)


def chart_facts(name: str, version: str, file: str) -> Any:
    return json.loads((UPSTREAM / name / version / file).read_text("utf-8"))


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
