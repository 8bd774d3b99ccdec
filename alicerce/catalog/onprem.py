"""Typed access to ``data/onprem.yaml``: the kubespray release and node software repositories of on-prem sites."""

from __future__ import annotations

import functools

from pydantic import Field

from alicerce.catalog import PACKAGE, _read, cached
from alicerce.catalog.models import CatalogModel, Source


class KubesprayRelease(CatalogModel):
    """The pinned kubespray release and what it needs to run."""

    tag: str = Field(description="Release tag.")
    commit: str = Field(description="Commit the tag names (pinned: tags can move).")
    repository: str = Field(description="Git repository.")
    collection: str = Field(description="Ansible collection name (playbooks as <collection>.cluster).")
    python: dict[str, str] = Field(description="Its requirements.txt: Python package -> exact version.")
    ansibleCore: str = Field(description="ansible-core range its playbooks accept.")
    kubernetes: dict[str, str] = Field(description="Kubernetes minor -> newest patch the release can install.")
    source: Source


class Repository(CatalogModel):
    version: str = ""
    repository: str = ""
    key: str = ""
    keyFingerprint: str = Field(default="", description="Full fingerprint of the signing key; the roles refuse a key without it.")
    keySource: Source | None = Field(default=None, description="Where the fingerprint is published.")
    architectures: dict[str, str] = Field(default_factory=dict, description="Ansible architecture -> repository path segment.")
    source: Source


class NodeSoftware(CatalogModel):
    doca: Repository
    cuda: Repository
    containerToolkit: Repository
    beegfs: Repository
    lustre: Repository


class OnpremStack(CatalogModel):
    kubespray: KubesprayRelease
    nodeSoftware: NodeSoftware


class _OnpremFile(OnpremStack):
    schemaVersion: int


@functools.cache
def load_onprem() -> OnpremStack:
    """The packaged on-prem stack facts, parsed and checked once, then read back from the cache folder."""
    return cached("onprem", ("data/onprem.yaml", "onprem.py", "models.py"), lambda: _OnpremFile.model_validate(_read("onprem.yaml")))


def kubespray_lock(release: KubesprayRelease) -> str:
    """The hashed lock of ``release``'s environment (``data/kubespray/<tag>/requirements.lock``, see its SOURCE.yaml):
    its requirements.txt pins and everything they install, each with the sha256 of its file, for
    ``pip install --require-hashes``."""
    # read from the package's folder, as the other data files are: importlib.resources would load its readers on
    # every cold `validate` that imports this module (zipfile, tempfile, shutil and the compression modules)
    return (PACKAGE / "data" / "kubespray" / release.tag / "requirements.lock").read_text("utf-8")
