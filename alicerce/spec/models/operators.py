"""The in-cluster operators, each switchable and tunable."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field, StrictBool, field_validator

from alicerce.spec.base import SpecModel
from alicerce.spec.units import Duration


class Operator(SpecModel):
    """An in-cluster operator installed from its pinned Helm chart."""

    enabled: StrictBool = Field(default=True, description="Install it.")
    values: dict[str, Any] = Field(
        default_factory=dict,
        description="Helm values merged over alicerce's own. Never what selects the code the chart runs or what it may do "
        "on the node (images, registries, tags, pull secrets, extra containers or objects, host namespaces and paths, "
        "security contexts, driver package sources): rule AL322 refuses those.",
    )

    @field_validator("values")
    @classmethod
    def _finite(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Helm values are numbers Go reads: .inf and .nan have no JSON form (Kubernetes objects are JSON) and an
        integer past 64 bits overflows; resolved.json wrote null for them while the Argo CD Application kept .inf."""
        problems = []
        for path, number in _numbers(values, ()):
            where = ".".join(map(str, path))
            if isinstance(number, float) and not math.isfinite(number):
                problems.append(f"{where} is {number}")
            elif isinstance(number, int) and not -(2**63) <= number < 2**63:
                problems.append(f"{where} has {len(str(abs(number)))} digits")
        if problems:
            raise ValueError(
                f"{'; '.join(problems[:5])}: Helm values are finite numbers and integers of 64 bits at most "
                "(.inf, .nan and 1e400 have no JSON form, and Go overflows past 64 bits)"
            )
        return values


def _numbers(data: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], int | float]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _numbers(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _numbers(value, (*path, index))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield path, data


# What a chart value may not select (rule AL322). The operators' DaemonSets run privileged on every node (GPU
# Operator: driver, toolkit, device plugin, DCGM; Network Operator: OFED driver; kube-prometheus-stack: node exporter
# with the host's / mounted) and their controllers hold cluster-wide permissions, so a value that picks their image,
# adds a container or object, or loosens their isolation turns spec text into root on every node. Key names, matched
# without case at any depth, from the operators' vendored values (tests/data/upstream/<chart>/<version>/values.json).
IMAGE_KEYS = frozenset({"tag", "version", "digest", "sha", "imagepullsecrets", "pullsecrets"})
IMAGE_SUFFIXES = ("image", "images", "repository", "registry")
WORKLOAD_KEYS = frozenset(
    {
        "command",
        "operatorcommand",
        "lifecycle",
        "lifecyclehooks",
        "containers",
        "initcontainer",
        "initcontainers",
        "extracontainers",
        "extrainitcontainers",
        "sidecars",
        "headsidecarcontainers",
        "workersidecarcontainers",
        "extraobjects",
        "extramanifests",
        "extradeploy",
        "extraclusterrolerules",
        "extrarolerules",
        "additionalrulesforclusterrole",
    }
)
HOST_KEYS_ALLOWED = frozenset({"host", "hosts", "hostnames", "hostdomain"})  # DNS names (ingress), not host access
ISOLATION_KEYS = frozenset(
    {
        "privileged",
        "capabilities",
        "allowprivilegeescalation",
        "runasuser",
        "runasgroup",
        "runasnonroot",
        "seccompprofile",
        "selinuxoptions",
        "apparmorprofile",
        "readonlyrootfilesystem",
        "procmount",
        "psa",
        "pspenabled",
        "pspuseapparmor",
    }
)
SOURCE_KEYS = frozenset({"repoconfig", "certconfig", "kernelmoduleconfig"})  # package repositories, CAs, modprobe.d


def unsafe_value(key: str) -> str | None:
    """What a chart value under ``key`` would select that the spec may not (None when the key is harmless)."""
    k = key.lower()
    if k in IMAGE_KEYS or k.endswith(IMAGE_SUFFIXES):
        return "the image a pod runs"
    if k in WORKLOAD_KEYS:
        return "a command, container or object the chart runs"
    if (k.startswith("host") and k not in HOST_KEYS_ALLOWED) or k.endswith(("volumes", "volumemounts", "mounts")):
        return "the host's namespaces, paths or volumes a pod reaches"
    if "securitycontext" in k or k in ISOLATION_KEYS:
        return "a pod's security settings"
    if k in SOURCE_KEYS:
        return "the package sources, certificates or kernel module settings of a driver container"
    return None


def unsafe_values(values: Any, parts: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every key of ``values`` (a chart's Helm values) that :func:`unsafe_value` refuses, with its path and what it selects."""
    if isinstance(values, dict):
        for key, value in values.items():
            what = unsafe_value(key) if isinstance(key, str) else None
            if what is not None:
                yield (*parts, key), what
            else:
                yield from unsafe_values(value, (*parts, key))
    elif isinstance(values, list):
        for index, item in enumerate(values):
            yield from unsafe_values(item, (*parts, index))


class GpuOperator(Operator):
    kernel_module_type: Literal["auto", "open", "proprietary"] = Field(
        default="auto", description="NVIDIA kernel modules to use (driver.kernelModuleType)."
    )
    mig_strategy: Literal["single", "mixed"] = Field(default="mixed", description="How MIG devices are advertised.")
    dcgm_service_monitor: StrictBool = Field(default=True, description="Scrape DCGM exporter through a ServiceMonitor.")


class Kueue(Operator):
    pods_ready_timeout: Duration | None = Field(
        default=None,
        gt=0,
        description="How long an admitted workload may wait for all its pods to be ready before Kueue evicts and requeues it "
        "(waitForPodsReady.timeout). Default: the longest start-up budget of the site's pool purposes (2h with training pools).",
        examples=["2h"],
    )


class Operators(SpecModel):
    """Which operators run in every cluster, each switchable and tunable."""

    gpu_operator: GpuOperator = Field(default_factory=GpuOperator, description="NVIDIA GPU Operator.")
    network_operator: Operator = Field(default_factory=Operator, description="NVIDIA Network Operator (on-prem RDMA).")
    kueue: Kueue = Field(default_factory=Kueue, description="Kueue job queueing and quotas.")
    kuberay: Operator = Field(default_factory=Operator, description="KubeRay operator.")
    training_operator: Operator = Field(default_factory=Operator, description="Kubeflow training operator.")
    monitoring: Operator = Field(default_factory=Operator, description="kube-prometheus-stack.")
