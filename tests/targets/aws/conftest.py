"""Offline previews of every shipped spec and environment with an AWS site, computed once per session."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from alicerce.resolve.model import ResolvedPlatform
from alicerce.run.preview import PreviewResult
from tests.conftest import ROOT

# every shipped spec and environment that has an AWS site
SHIPPED = (
    ("platform.yaml", "dev"),
    ("platform.yaml", "prod"),
    ("examples/aws-only.yaml", "staging"),
    ("examples/aws-only.yaml", "prod"),
    ("examples/minimal.yaml", "dev"),
)
ADMIN = "arn:aws:iam::{account}:role/platform-admins"


@functools.cache
def shipped_preview(spec: str, env: str) -> tuple[ResolvedPlatform, PreviewResult]:
    from alicerce.emit.pulumi.program import build
    from alicerce.emit.pulumi.stack import StackSettings
    from alicerce.rules.validate import validated
    from alicerce.run.preview import OfflineSecrets, run_preview
    from alicerce.spec.loader import load_file

    rp = validated(load_file(ROOT / spec, spec), env)
    account = next(s.spec.account for s in rp.sites if s.spec.provider == "aws")  # type: ignore[union-attr]
    settings = StackSettings((ADMIN.format(account=account),))
    return rp, run_preview(rp, lambda r: build(r, OfflineSecrets(), settings))


@pytest.fixture(scope="session", params=SHIPPED, ids=[f"{s}:{e}" for s, e in SHIPPED])
def shipped(request: Any) -> tuple[ResolvedPlatform, PreviewResult]:
    return shipped_preview(*request.param)
