"""Offline previews of the reference platform and of variants, shared by the component tests.

Each preview runs the real Pulumi program under the SDK's mock engine (no CLI, no network).
They are computed once per test session; a variant is platform.yaml with one change applied.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import ROOT

COVERED: dict[str, str] = {}  # resource type token -> the test that asserts facts about it


def covers(*types: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a test as asserting facts about these resource types (checked by test_every_type_is_asserted)."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        for t in types:
            COVERED.setdefault(t, fn.__name__)
        return fn

    return mark


def reference() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "platform.yaml").read_text())
    return data


def resolved(data: dict[str, Any], env: str, tmp: Path) -> ResolvedPlatform:
    path = tmp / "platform.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return validated(load_file(path, str(path)), env)


@functools.cache
def _preview(variant: str, env: str) -> Any:
    import tempfile

    from alicerce.emit.pulumi.program import build
    from alicerce.emit.pulumi.stack import StackSettings
    from alicerce.run.preview import OfflineSecrets, run_preview

    data = reference()
    settings = StackSettings()
    if variant.startswith("p5-"):  # not a capacity reservation any more: its reserved-node price no longer applies
        data["costs"]["cloud"] = [c for c in data["costs"]["cloud"] if c["pool"] != "train-p5"]
    if variant == "p5-on-demand":
        pool = next(p for p in data["nodePools"] if p["name"] == "train-p5")
        pool["aws"] = {"instanceType": "p5.48xlarge", "zone": "us-east-1b"}
        for tier in data["storage"]:  # the file systems move with it, explicitly (rule AL317 pins their zone)
            if tier["name"] in ("datasets", "checkpoints"):
                tier.setdefault("aws", {})["zone"] = "us-east-1b"
    elif variant == "p5-capacity-block":
        pool = next(p for p in data["nodePools"] if p["name"] == "train-p5")
        pool["aws"] = {
            "instanceType": "p5.48xlarge",
            "capacityType": "capacity-block",
            "capacityReservationId": "cr-0123456789abcdef0",
            "zone": "us-east-1a",
        }
    elif variant == "argocd":  # both prod sites delivered by Argo CD, from a private repository
        for site in data["environments"]["prod"]["sites"]:
            site["delivery"] = "argocd"
        data["gitops"]["repositorySecret"] = "gitopsRepositoryKey"
    elif variant == "key-alias":  # an existing platform key, named by its alias
        data["security"]["encryption"]["kmsKey"] = "alias/acme-ml-platform"
    elif variant == "eks-refusals":  # platform labels EKS refuses as node labels; EFS with provisioned throughput
        data["metadata"]["labels"] |= {"showback.finance.acme.example/chargeback-owning-department-of-record": "ai", "ticket": ""}
        home = next(t for t in data["storage"] if t["name"] == "home")
        home |= {"throughput": "300MBps", "aws": {"throughputMode": "provisioned"}}
    elif variant == "identity":
        settings = StackSettings(("arn:aws:iam::111111111111:role/platform-admins",), ("10.99.0.0/16",))
    with tempfile.TemporaryDirectory() as tmp:
        rp = resolved(copy.deepcopy(data), env, Path(tmp))
    return rp, run_preview(rp, lambda r: build(r, OfflineSecrets(), settings))


@pytest.fixture(scope="session")
def prod() -> Any:
    return _preview("reference", "prod")


@pytest.fixture(scope="session")
def dev() -> Any:
    return _preview("identity", "dev")


@pytest.fixture(scope="session")
def argocd() -> Any:
    return _preview("argocd", "prod")


@pytest.fixture(scope="session")
def p5_on_demand() -> Any:
    return _preview("p5-on-demand", "prod")


@pytest.fixture(scope="session")
def eks_refusals() -> Any:
    return _preview("eks-refusals", "prod")


@pytest.fixture(scope="session")
def p5_block() -> Any:
    return _preview("p5-capacity-block", "prod")


def all_previews() -> list[Any]:
    return [
        _preview(v, e)
        for v, e in (
            ("reference", "prod"),
            ("identity", "dev"),
            ("p5-on-demand", "prod"),
            ("p5-capacity-block", "prod"),
            ("argocd", "prod"),
        )
    ]
