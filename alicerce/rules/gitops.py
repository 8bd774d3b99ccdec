"""GitOps: a site Argo CD delivers names the repository it syncs from, in a form Argo CD can clone."""

from __future__ import annotations

import re
from collections.abc import Iterable

from alicerce.rules.base import Finding, RuleContext, RuleSet, S

rules = RuleSet()

# what Argo CD clones: https or ssh URLs, or scp-like git@host:path
REPOSITORY = re.compile(r"^(https://[^\s/]+/\S+|ssh://\S+@[^\s/]+/\S+|git@[^\s:]+:\S+)$")


@rules.rule("AL283", "argocd-repository", "A site with delivery: argocd has a gitops.repository to sync from.")
def argocd_repository(ctx: RuleContext) -> Iterable[Finding]:
    if ctx.spec.gitops.repository is not None:
        return
    for i, site in enumerate(ctx.env.sites):
        if site.delivery == "argocd":
            yield Finding(
                S.environments[ctx.env_name].sites[i].delivery,
                f"site {site.name} is delivered by Argo CD, but the spec names no repository for it to sync from",
                "set gitops.repository to the git URL this spec and its generated trees are committed to",
                site.delivery,
            )


@rules.rule("AL284", "gitops-paths", "gitops.repository is a URL Argo CD can clone; gitops paths stay inside the repository.")
def gitops_paths(ctx: RuleContext) -> Iterable[Finding]:
    gitops = ctx.spec.gitops
    if gitops.repository is not None and not REPOSITORY.match(gitops.repository):
        yield Finding(
            S.gitops.repository,
            f'"{gitops.repository}" is not a git URL Argo CD can clone',
            "write https://host/org/repo.git, ssh://git@host/org/repo.git or git@host:org/repo.git",
            gitops.repository,
        )
    for path, value in ((S.gitops.folder, gitops.folder), (S.gitops.spec_file, gitops.spec_file)):
        parts = value.split("/")
        if value.startswith("/") or ".." in parts or any(not re.fullmatch(r"[A-Za-z0-9._-]*", p) for p in parts):
            yield Finding(
                path, f'"{value}" is not a relative path inside the repository', "write it like generated or infra/platform.yaml", value
            )
