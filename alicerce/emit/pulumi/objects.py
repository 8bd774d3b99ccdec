"""Applies the desired in-cluster objects (alicerce.emit.kube.objects) as ConfigGroups.

Objects whose kinds come from an operator's CRDs (Kueue queues, monitoring rules) wait for that
operator's chart; the rest (namespaces, quotas, policies, priority classes) go first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes.yaml.v2 as k8syaml

from alicerce.emit.kube.objects import cluster_objects, group_by_crd_owner
from alicerce.emit.pulumi.component import Component
from alicerce.resolve.model import ResolvedPlatform


@dataclass(frozen=True)
class ObjectsArgs:
    objects: tuple[dict[str, Any], ...]
    operators: Mapping[str, pulumi.Resource]  # chart key -> installed chart (for CRD ordering)

    @classmethod
    def from_resolved(
        cls,
        rp: ResolvedPlatform,
        site: str,
        operators: Mapping[str, pulumi.Resource],
        volumes: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> ObjectsArgs:
        return cls(tuple(cluster_objects(rp, site, volumes)), operators)


class ClusterObjects(Component):
    def __init__(self, name: str, args: ObjectsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("alicerce:objects:ClusterObjects", name, opts)
        groups = group_by_crd_owner(args.objects)
        core = k8syaml.ConfigGroup(f"{name}-core", objs=groups.pop("", []), opts=self.child()) if "" in groups else None
        for owner, objs in sorted(groups.items()):
            depends: list[pulumi.Resource] = [r for r in (core, args.operators.get(owner)) if r is not None]
            k8syaml.ConfigGroup(f"{name}-{owner}", objs=objs, opts=self.child(depends_on=depends))
        self.register_outputs({"objects": len(args.objects)})
