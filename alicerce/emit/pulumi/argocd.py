"""A site whose in-cluster layer Argo CD delivers (``delivery: argocd``): Pulumi installs Argo CD and the root.

Pulumi installs the pinned argo-cd chart with helm.v4.Chart, creates the Redis password Secret the
chart would create in a hook (helm.v4.Chart runs no hooks), gives Argo CD the repository credential
when the spec names one, and applies the site's root Application: from then on Argo CD syncs the
generated ``kubernetes/<site>/`` tree. The file-system volumes whose handles only Pulumi knows
(FSx, EFS) stay Pulumi-owned (see :mod:`alicerce.emit.gitops.argocd`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.helm.v4 as helm
import pulumi_kubernetes.meta.v1 as meta
import pulumi_kubernetes.yaml.v2 as k8syaml
import pulumi_random as random

from alicerce.catalog.models import Chart
from alicerce.emit.gitops.argocd import (
    ARGOCD_CHART,
    REDIS_SECRET,
    Repository,
    argocd_values,
    pulumi_owned_objects,
    root_application,
)
from alicerce.emit.kube.operators import operator_namespace_labels
from alicerce.emit.pulumi.component import Component
from alicerce.emit.pulumi.stack import Secrets
from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.namespaces import ARGOCD_NAMESPACE

REPOSITORY_SECRET_LABEL = "argocd.argoproj.io/secret-type"


@dataclass(frozen=True)
class ArgoCdArgs:
    chart: Chart
    values: dict[str, Any]
    namespace_labels: dict[str, str]
    root: dict[str, Any]  # the site's root Application
    repository: Repository
    repository_secret: str | None  # Pulumi secret config key of the repository credential
    volumes: tuple[dict[str, Any], ...]  # Pulumi-owned PersistentVolumes (file systems Pulumi created)

    @classmethod
    def from_resolved(cls, rp: ResolvedPlatform, site: str, volumes: Mapping[str, Mapping[str, Any]]) -> ArgoCdArgs:
        repo = Repository.of(rp, site)
        if repo is None:  # rule AL283 refuses the spec before this
            raise pulumi.RunError(f"site {site} has delivery: argocd but the spec sets no gitops.repository")
        return cls(
            chart=rp.charts[ARGOCD_CHART],
            values=argocd_values(rp.site(site).pools),
            namespace_labels=operator_namespace_labels(ARGOCD_NAMESPACE, rp.versions.kubernetes),
            root=root_application(rp, site, repo),
            repository=repo,
            repository_secret=rp.spec.gitops.repository_secret,
            volumes=tuple(pulumi_owned_objects(rp, site, volumes)),
        )


def repository_credential(url: str, credential: pulumi.Output[str]) -> dict[str, Any]:
    """The ``stringData`` of an Argo CD repository Secret: an SSH key for ssh URLs, else a token as password."""
    if url.startswith(("ssh://", "git@")):
        return {"type": "git", "url": url, "sshPrivateKey": credential}
    return {"type": "git", "url": url, "username": "git", "password": credential}


class ArgoCd(Component):
    def __init__(self, name: str, args: ArgoCdArgs, secrets: Secrets, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:argocd:ArgoCd", name, opts)
        namespace = core.Namespace(
            f"{name}-ns",
            metadata=meta.ObjectMetaArgs(name=ARGOCD_NAMESPACE, labels=args.namespace_labels),
            opts=self.child(),
        )
        password = random.RandomPassword(f"{name}-redis-password", length=32, special=False, opts=self.child())
        secret_name, secret_key = REDIS_SECRET
        redis = core.Secret(
            f"{name}-redis",
            metadata=meta.ObjectMetaArgs(name=secret_name, namespace=ARGOCD_NAMESPACE),
            string_data={secret_key: password.result},
            opts=self.child(depends_on=[namespace]),
        )
        before: list[pulumi.Resource] = [namespace, redis]
        if args.repository_secret is not None:
            before.append(
                core.Secret(
                    f"{name}-repository",
                    metadata=meta.ObjectMetaArgs(
                        name="alicerce-repository", namespace=ARGOCD_NAMESPACE, labels={REPOSITORY_SECRET_LABEL: "repository"}
                    ),
                    string_data=repository_credential(args.repository.url, secrets.secret(args.repository_secret)),
                    opts=self.child(depends_on=[namespace]),
                )
            )
        chart = helm.Chart(
            f"{name}-chart",
            name=ARGOCD_NAMESPACE,  # release "argocd": the chart's usual object names (argocd-server, argocd-repo-server)
            chart=args.chart.chart,
            version=args.chart.version,
            namespace=ARGOCD_NAMESPACE,
            repository_opts=helm.RepositoryOptsArgs(repo=args.chart.repository),
            values=args.values,
            opts=self.child(depends_on=before),
        )
        if args.volumes:
            k8syaml.ConfigGroup(f"{name}-volumes", objs=list(args.volumes), opts=self.child())
        # the Application CRD comes with the chart: the root waits for it
        k8s.apiextensions.CustomResource(
            f"{name}-root",
            api_version=args.root["apiVersion"],
            kind=args.root["kind"],
            metadata=args.root["metadata"],
            spec=args.root["spec"],
            opts=self.child(depends_on=[chart]),
        )
        self.register_outputs({"chart": args.chart.version, "root": args.root["metadata"]["name"]})
