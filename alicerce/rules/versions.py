"""Versions: known to the catalog, mutually compatible, and able to drive every GPU in use."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from alicerce.catalog.models import Release
from alicerce.resolve.versions import VERSION_KEYS
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean
from alicerce.spec.models import MigSharing
from alicerce.spec.paths import SpecPath

rules = RuleSet()
# YAML key -> spec field of every pinnable version
VERSION_FIELDS = {key: name for name, key in VERSION_KEYS.items()}


def _path(key: str) -> SpecPath:
    """Where the version with YAML key ``key`` is written (positions fall back to the versions block, or the top,
    when it comes from the bill of materials)."""
    path: SpecPath = getattr(S.versions, VERSION_FIELDS[key])
    return path


def _known(ctx: RuleContext) -> dict[str, list[str]]:
    v = ctx.catalog.versions
    return {
        "kubernetes": list(v.kubernetes),
        "driverBranch": [d.branch for d in v.driverBranches],
        "gpuOperator": [r.version for r in v.gpuOperator],
        "networkOperator": [r.version for r in v.networkOperator],
        "kueue": [r.version for r in v.kueue],
    }


@rules.rule("AL250", "versions-known", "Pinned versions are ones the catalog's compatibility matrix knows.")
def versions_known(ctx: RuleContext) -> Iterable[Finding]:
    pinned = ctx.spec.versions.model_dump(by_alias=True, exclude_none=True)
    for key, choices in _known(ctx).items():
        value = pinned.get(key)
        if value is not None and value not in choices:
            newest = ", ".join(choices[-4:])
            yield Finding(
                _path(key), f'{key} "{value}" is not in the compatibility matrix', did_you_mean(value, choices) or f"known: {newest}", value
            )
    branch = ctx.resolved.versions.driverBranch
    driver = pinned.get("driverVersion")
    if driver is not None and branch is not None and not driver.startswith(f"{branch}."):
        yield Finding(
            _path("driverVersion"), f"driver {driver} is not on branch {branch}", f"pin a {branch}.x release or change driverBranch", driver
        )


@rules.rule("AL251", "versions-compatible", "Kubernetes, GPU Operator, driver branch, Network Operator and Kueue work together.")
def versions_compatible(ctx: RuleContext) -> Iterable[Finding]:
    v = ctx.resolved.versions
    matrix = ctx.catalog.versions
    kube = v.kubernetes
    ops = ctx.spec.operators
    gpu_op = next((r for r in matrix.gpuOperator if r.version == v.gpuOperator), None)
    if gpu_op is not None and ops.gpu_operator.enabled:
        if kube not in gpu_op.kubernetes:
            yield Finding(
                _path("gpuOperator"),
                f"GPU Operator {gpu_op.version} does not support Kubernetes {kube}",
                f"it supports {', '.join(gpu_op.kubernetes)}",
                gpu_op.version,
            )
        branch = v.driverBranch
        if branch not in gpu_op.driverBranches:
            yield Finding(
                _path("driverBranch"),
                f"GPU Operator {gpu_op.version} does not support driver branch {branch}",
                f"it supports {', '.join(gpu_op.driverBranches)}",
                branch,
            )
    releases: list[tuple[str, str, Sequence[Release], bool]] = [
        ("networkOperator", "Network Operator", matrix.networkOperator, ops.network_operator.enabled),
        ("kueue", "Kueue", matrix.kueue, ops.kueue.enabled),
    ]
    for key, label, known, enabled in releases:
        release = next((r for r in known if r.version == getattr(v, key)), None)
        if release is not None and enabled and kube not in release.kubernetes:
            yield Finding(
                _path(key),
                f"{label} {release.version} does not support Kubernetes {kube}",
                f"it supports {', '.join(release.kubernetes)}",
                release.version,
            )
    rdma = any(f.gpu_direct_rdma for f in ctx.spec.networks.fabrics)
    for bad in matrix.incompatibilities:
        if bad.gpuOperator not in (None, v.gpuOperator) or bad.networkOperator not in (None, v.networkOperator):
            continue
        if bad.feature == "rdma" and not rdma:
            continue
        key = "networkOperator" if bad.networkOperator else "gpuOperator"
        yield Finding(_path(key), bad.message, f"see {bad.source.url}", getattr(v, key))


@rules.rule("AL252", "driver-supports-gpus", "The driver branch supports every GPU architecture in use, with the kernel modules it needs.")
def driver_supports(ctx: RuleContext) -> Iterable[Finding]:
    v = ctx.resolved.versions
    branch = next((d for d in ctx.catalog.versions.driverBranches if d.branch == v.driverBranch), None)
    if branch is None:
        return
    module_type = ctx.spec.operators.gpu_operator.kernel_module_type
    for i, pool in ctx.indexed_pools():
        if pool.accelerator is None or pool.site not in ctx.sites:
            continue
        gpu = ctx.catalog.gpu(pool.accelerator.model)
        if gpu is None:
            continue
        if gpu.architecture not in branch.architectures:
            newer = [d.branch for d in ctx.catalog.versions.driverBranches if gpu.architecture in d.architectures]
            yield Finding(
                S.node_pools[i].accelerator,
                f"driver branch {branch.branch} does not support {gpu.architecture} GPUs ({gpu.id})",
                f"use driver branch {' or '.join(newer) or 'a newer one'}",
                pool.accelerator.model,
            )
        if gpu.architecture == "blackwell" and module_type == "proprietary":
            yield Finding(
                S.operators.gpu_operator.kernel_module_type,
                f"{gpu.id} (pool {pool.name}) needs the open kernel modules",
                "set kernelModuleType: open (or auto)",
                module_type,
            )


@rules.rule("AL253", "operator-dependencies", "Features in use have their operator enabled (GPU Operator, Kueue, Network Operator).")
def operator_dependencies(ctx: RuleContext) -> Iterable[Finding]:
    ops = ctx.spec.operators
    in_env = [p for p in ctx.spec.node_pools if p.site in ctx.sites]
    if not ops.gpu_operator.enabled and any(p.accelerator is not None for p in in_env):
        yield Finding(
            S.operators.gpu_operator.enabled,
            "GPU pools need the GPU Operator (device plugin, DCGM, MIG manager)",
            "enable it",
            False,
        )
    if not ops.kueue.enabled and any(t.quotas for t in ctx.spec.tenancy.teams):
        yield Finding(
            S.operators.kueue.enabled,
            "team GPU quotas are enforced by Kueue, which is disabled",
            "enable kueue or remove the quotas",
            False,
        )
    # pools reaching their fabric through host adapters (InfiniBand, RoCE), which the Network Operator serves
    onprem_rdma = any(p.rdma is not None and p.rdma.technology != "efa" for p in ctx.resolved.pools)
    if not ops.network_operator.enabled and onprem_rdma:
        yield Finding(S.operators.network_operator.enabled, "on-prem RDMA pools need the Network Operator", "enable networkOperator", False)
    version = ctx.resolved.versions.networkOperator
    releases = ctx.catalog.versions.networkOperator
    release = next((r for r in releases if r.version == version), None)
    if ops.network_operator.enabled and onprem_rdma and release is not None and release.components is None:
        usable = [r.version for r in releases if r.components is not None]
        yield Finding(
            _path("networkOperator"),
            f"Network Operator {version}: the catalog knows no component images for its NicClusterPolicy (RDMA device plugin, Multus)",
            f"pin one of: {', '.join(usable)}",
            version,
        )
    if ops.gpu_operator.mig_strategy == "single":
        for i, pool in ctx.indexed_pools():
            if pool.site in ctx.sites and isinstance(pool.sharing, MigSharing) and len(pool.sharing.profiles) > 1:
                yield Finding(
                    S.node_pools[i].sharing.profiles,
                    "migStrategy single needs one profile per GPU",
                    "set operators.gpuOperator.migStrategy: mixed",
                    resource=pool.name,
                )


@rules.rule("AL254", "driver-in-operator-matrix", "A driver the GPU Operator installs is one its release's component matrix lists.")
def driver_in_matrix(ctx: RuleContext) -> Iterable[Finding]:
    v = ctx.resolved.versions
    release = next((r for r in ctx.catalog.versions.gpuOperator if r.version == v.gpuOperator), None)
    if not ctx.spec.operators.gpu_operator.enabled or release is None or release.drivers is None:
        return  # a release whose matrix the catalog has not read is reported by nothing here (the catalog says which)
    operator_sites = [s.name for s in ctx.resolved.sites if s.software.gpu_driver == "operator" and any(p.gpu for p in s.pools)]
    if operator_sites and v.driverVersion not in release.drivers.versions:
        branch = [d for d in release.drivers.versions if d.startswith(f"{v.driverBranch}.")]
        yield Finding(
            _path("driverVersion"),
            f"GPU Operator {release.version} does not ship driver {v.driverVersion} (it installs the driver at "
            f"{', '.join(operator_sites)})",
            f"pin one of its {v.driverBranch} drivers: {', '.join(branch) or 'none'} (see {release.drivers.source.url})",
            v.driverVersion,
        )


@rules.rule("AL255", "trainer-runtimes-known", "The pinned Kubeflow Trainer has training runtime images in the catalog.")
def trainer_runtimes_known(ctx: RuleContext) -> Iterable[Finding]:
    version = ctx.resolved.versions.trainingOperator
    if ctx.spec.operators.training_operator.enabled and ctx.resolved.trainer_runtimes is None:
        known = [r.trainer for r in ctx.catalog.versions.trainerRuntimes]
        yield Finding(
            _path("trainingOperator"),
            f"Kubeflow Trainer {version}: the catalog knows no images for its training runtimes (the chart installs none without hooks)",
            f"pin one of: {', '.join(known)}",
            version,
        )
