"""The Pulumi program: one environment of the platform spec, built site by site.

``__main__.py`` calls :func:`main`, which reads the stack config (``alicerce:spec``, default
``platform.yaml``, relative to the Pulumi project's folder; ``alicerce:environment``, default the
stack name), resolves that environment and calls :func:`build`. A platform repository's
``__main__.py`` imports :func:`main` from the installed package: no alicerce checkout is needed.
``alicerce preview`` calls :func:`build` under Pulumi's mock engine. Secrets come only from Pulumi
secret config (an on-prem kubeconfig from the key its site names).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from alicerce.emit.pulumi.objects import ClusterObjects, ObjectsArgs
from alicerce.emit.pulumi.operators import Operators, OperatorsArgs
from alicerce.emit.pulumi.stack import ConfigSecrets, Secrets, SiteBuild, StackSettings
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.targets.aws import build as aws_build
from alicerce.targets.onprem import build as onprem_build

Builder = Callable[[ResolvedPlatform, ResolvedSite, Secrets, StackSettings], SiteBuild]
# the build step of every target, by the spec's `provider` value (the one list to extend for a new target)
BUILDERS: dict[str, Builder] = {"aws": aws_build.build_site, "onprem": onprem_build.build_site}


def _kubernetes_layer(
    rp: ResolvedPlatform,
    site: str,
    kube: k8s.Provider,
    after: list[pulumi.Resource],
    volumes: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    opts = pulumi.ResourceOptions(providers={"kubernetes": kube}, depends_on=after)
    operators = Operators(f"{site}-operators", OperatorsArgs.from_resolved(rp, site), opts)
    ClusterObjects(
        f"{site}-objects",
        ObjectsArgs.from_resolved(rp, site, operators.charts, volumes),
        pulumi.ResourceOptions(providers={"kubernetes": kube}, depends_on=after),
    )


def build(rp: ResolvedPlatform, secrets: Secrets, settings: StackSettings | None = None) -> dict[str, Any]:
    """Declare every resource of the environment; returns the stack outputs (not yet exported)."""
    settings = settings or StackSettings()
    sites: dict[str, SiteBuild] = {}
    for site in rp.sites:
        built = BUILDERS[site.provider](rp, site, secrets, settings)
        _kubernetes_layer(rp, site.name, built.kube, built.after, built.volumes)
        sites[site.name] = built
    kubeconfigs: Mapping[str, pulumi.Output[str]] = {n: s.kubeconfig for n, s in sites.items() if s.kubeconfig is not None}
    return {
        "environment": rp.environment,
        "clusters": {n: s.cluster for n, s in sites.items()},
        "kubeconfigs": pulumi.Output.secret(kubeconfigs),
        "nodePools": {n: s.node_pools for n, s in sites.items()},
        "storage": {n: s.storage for n, s in sites.items() if s.storage},
    }


def spec_location(spec: str) -> Path:
    """``alicerce:spec`` read relative to the folder of Pulumi.yaml, whatever folder the program runs in
    (Pulumi runs it in the project's ``main`` folder, which a project may move)."""
    path = Path(spec)
    if path.is_absolute():
        return path
    root = pulumi.get_root_directory()
    # the mock engine answers a placeholder ("root_directory"): the working folder then
    return Path(root) / path if root and Path(root).is_dir() else path


def main() -> None:
    """Entry point of ``pulumi up``/``pulumi preview`` (see ``__main__.py``)."""
    from alicerce.rules.validate import validated
    from alicerce.spec.errors import SpecInvalid, render_report
    from alicerce.spec.loader import load_file

    config = pulumi.Config("alicerce")
    spec = config.get("spec") or "platform.yaml"
    env = config.get("environment") or pulumi.get_stack()
    try:
        rp = validated(load_file(spec_location(spec), spec), env)
    except SpecInvalid as exc:
        out, err = render_report(exc.errors, False)
        raise pulumi.RunError(f"{spec} is not valid for environment {env}:\n{out}{err}") from None
    for key, value in build(rp, ConfigSecrets(config), StackSettings.from_config(config)).items():
        pulumi.export(key, value)
