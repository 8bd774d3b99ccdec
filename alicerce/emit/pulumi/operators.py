"""The operators of one cluster as Helm charts pinned to the catalog's bill of materials.

helm.v4.Chart lets Pulumi apply every rendered object itself, CRDs included, so upgrading a
chart upgrades its CRDs too (plain `helm upgrade` never does: gpu-operator issues 139, 186, 431).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.helm.v4 as helm
import pulumi_kubernetes.meta.v1 as meta

from alicerce.emit.kube.operators import Release, operator_namespace_labels, operator_releases
from alicerce.emit.pulumi.component import Component
from alicerce.resolve.model import ResolvedPlatform


@dataclass(frozen=True)
class OperatorsArgs:
    releases: tuple[Release, ...]  # dependencies first
    kubernetes_version: str

    @classmethod
    def from_resolved(cls, rp: ResolvedPlatform, site: str) -> OperatorsArgs:
        return cls(tuple(operator_releases(rp, site)), rp.versions.kubernetes)


class Operators(Component):
    charts: dict[str, helm.Chart]

    def __init__(self, name: str, args: OperatorsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:operators:Operators", name, opts)
        namespaces: dict[str, core.Namespace] = {}
        for ns in sorted({r.namespace for r in args.releases} - {"kube-system"}):
            namespaces[ns] = core.Namespace(
                f"{name}-ns-{ns}",
                metadata=meta.ObjectMetaArgs(name=ns, labels=operator_namespace_labels(ns, args.kubernetes_version)),
                opts=self.child(),
            )
        self.charts = {}
        for release in args.releases:
            depends: list[pulumi.Resource] = [self.charts[d] for d in release.depends_on if d in self.charts]
            if release.namespace in namespaces:
                depends.append(namespaces[release.namespace])
            self.charts[release.key] = helm.Chart(
                f"{name}-{release.key}",
                chart=release.chart_ref,
                version=release.version,
                namespace=release.namespace,
                repository_opts=helm.RepositoryOptsArgs(repo=release.repo_url) if release.repo_url else None,
                values=release.values,
                opts=self.child(depends_on=depends),
            )
        self.register_outputs({"releases": {r.key: r.version for r in args.releases}})
