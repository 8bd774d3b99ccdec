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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from alicerce.emit.kube.operators import operator_releases
from alicerce.emit.pulumi.argocd import ArgoCd, ArgoCdArgs
from alicerce.emit.pulumi.objects import ClusterObjects, ObjectsArgs
from alicerce.emit.pulumi.operators import Operators, OperatorsArgs
from alicerce.emit.pulumi.stack import CLOUD, KUBERNETES, ConfigSecrets, KubeSite, Secrets, SiteBuild, StackSettings
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.targets import TARGETS, stage_module


@dataclass(frozen=True)
class TargetBuild:
    """A target's two layers: its cloud resources of a site, and its Kubernetes layer from the cloud layer's handoff."""

    cloud: Callable[[ResolvedPlatform, ResolvedSite, Secrets, StackSettings], SiteBuild]
    kubernetes: Callable[[ResolvedPlatform, ResolvedSite, pulumi.Output[Any], Secrets], KubeSite]
    # the (region, account) the offline preview's mock engine answers with for a site of this target (ARNs, caller
    # identity); None where the target has no cloud account (its build module defines no preview_identity)
    preview_identity: Callable[[ResolvedSite], tuple[str, str]] | None = None


def _build(module: str) -> TargetBuild:
    loaded = stage_module(module)
    return TargetBuild(loaded.build_site, loaded.kube_site, getattr(loaded, "preview_identity", None))


# the build step of every registered target, by the spec's `provider` value
BUILDERS: dict[str, TargetBuild] = {t.name: _build(t.build) for t in TARGETS}


def _kubernetes_layer(rp: ResolvedPlatform, site: str, layer: KubeSite, after: list[pulumi.Resource], secrets: Secrets) -> None:
    opts = pulumi.ResourceOptions(providers={"kubernetes": layer.kube}, depends_on=after)
    if rp.site(site).spec.delivery == "argocd":
        # Argo CD syncs the generated tree (operators and objects): Pulumi installs Argo CD and the root
        # Application, plus what only Pulumi knows: the target's cloud-coupled controllers (autoscaler,
        # load balancer controller) and the volumes of the file systems it created
        ArgoCd(f"{site}-argocd", ArgoCdArgs.from_resolved(rp, site, layer.volumes), secrets, opts)
        if layer.releases:
            Operators(f"{site}-controllers", OperatorsArgs(layer.releases, rp.versions.kubernetes), opts)
        return
    releases = (*operator_releases(rp, site), *layer.releases)
    operators = Operators(f"{site}-operators", OperatorsArgs(releases, rp.versions.kubernetes), opts)
    ClusterObjects(
        f"{site}-objects",
        ObjectsArgs.from_resolved(rp, site, operators.charts, layer.volumes),
        pulumi.ResourceOptions(providers={"kubernetes": layer.kube}, depends_on=after),
    )


def _site_handoff(site: str) -> Callable[[Any], Any]:
    return lambda handoff: (handoff or {}).get(site, {})


def cloud_stack_name(rp: ResolvedPlatform, settings: StackSettings) -> str:
    """The stack holding the cloud layer a kubernetes-only stack builds on: alicerce:cloudStack, else the
    environment's own stack in this project and organization."""
    # self-managed backends (file, S3) name every organization "organization"
    return settings.cloud_stack or f"{pulumi.get_organization() or 'organization'}/{pulumi.get_project()}/{rp.environment}"


def build(rp: ResolvedPlatform, secrets: Secrets, settings: StackSettings | None = None) -> dict[str, Any]:
    """Declare every resource of the environment's layers this stack holds; returns the stack outputs (not yet exported)."""
    settings = settings or StackSettings()
    outputs: dict[str, Any] = {"environment": rp.environment, "layers": list(settings.layers)}
    sites: dict[str, SiteBuild] = {}
    if CLOUD in settings.layers:
        for site in rp.sites:
            sites[site.name] = BUILDERS[site.provider].cloud(rp, site, secrets, settings)
        kubeconfigs: Mapping[str, pulumi.Output[str]] = {n: s.kubeconfig for n, s in sites.items() if s.kubeconfig is not None}
        outputs |= {
            "clusters": {n: s.cluster for n, s in sites.items()},
            "kubeconfigs": pulumi.Output.secret(kubeconfigs),
            "nodePools": {n: s.node_pools for n, s in sites.items()},
            "storage": {n: s.storage for n, s in sites.items() if s.storage},
            # what a kubernetes-only stack of this environment reads through its StackReference
            "handoff": {n: s.handoff for n, s in sites.items()},
        }
    if KUBERNETES in settings.layers:
        reference: pulumi.StackReference | None = None
        for site in rp.sites:
            if site.name in sites:  # both layers in this stack: wait for the nodes, add-ons and file systems
                handoff = pulumi.Output.from_input(sites[site.name].handoff)
                after = sites[site.name].after
            elif site.capabilities.nodes_by_ansible:  # an existing cluster: the cloud layer hands nothing on
                handoff, after = pulumi.Output.from_input({}), []
            else:
                reference = reference or pulumi.StackReference(f"{rp.environment}-cloud", stack_name=cloud_stack_name(rp, settings))
                handoff = reference.get_output("handoff").apply(_site_handoff(site.name))
                after = []
            layer = BUILDERS[site.provider].kubernetes(rp, site, handoff, secrets)
            _kubernetes_layer(rp, site.name, layer, after, secrets)
    return outputs


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
    settings = StackSettings.from_config(config)
    if problems := settings.problems(rp):
        raise pulumi.RunError(f"stack {pulumi.get_stack()} cannot deploy environment {env}:\n" + "\n".join(f"- {p}" for p in problems))
    for key, value in build(rp, ConfigSecrets(config), settings).items():
        pulumi.export(key, value)
