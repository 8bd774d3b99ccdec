"""Where the generated trees live in git, and how Argo CD keeps a cluster in sync with them."""

from __future__ import annotations

from pydantic import Field, StrictBool

from alicerce.spec.base import SpecModel
from alicerce.spec.text import GitRevision, GitUrl, RepoPath, SecretName


class ArgoCdSync(SpecModel):
    """The automated sync policy of every Argo CD Application alicerce writes."""

    prune: StrictBool = Field(
        default=True, description="Delete objects that were removed from the generated tree (Argo CD syncPolicy.automated.prune)."
    )
    self_heal: StrictBool = Field(
        default=True,
        description="Undo changes made in the cluster by hand, back to the generated tree (Argo CD syncPolicy.automated.selfHeal).",
    )


class GitOps(SpecModel):
    """The repository that holds the generated trees: what Argo CD syncs from and what CI checks."""

    repository: GitUrl | None = Field(
        default=None,
        description="Git URL of the platform repository (https:// or ssh). Required by sites with delivery: argocd.",
        examples=["https://github.com/acme/ml-platform.git"],
    )
    revision: GitRevision = Field(default="main", description="Branch, tag or commit Argo CD follows.")
    folder: RepoPath = Field(
        default="generated",
        description="Folder of the repository holding one generated tree per environment: <folder>/<environment>/ "
        "(`alicerce generate --env ENV --out <folder>/ENV`).",
    )
    spec_file: RepoPath = Field(
        default="platform.yaml",
        description="Path of this spec file in the repository, as the generated CI workflows and pre-commit hooks name it.",
    )
    sync: ArgoCdSync = Field(default_factory=ArgoCdSync, description="Automated sync policy of the Argo CD Applications.")
    repository_secret: SecretName | None = Field(
        default=None,
        description="Name of the Pulumi secret config key holding an SSH private key or token for a private repository "
        "(never the key itself); Pulumi gives it to the Argo CD it installs.",
        examples=["gitopsRepositoryKey"],
    )
