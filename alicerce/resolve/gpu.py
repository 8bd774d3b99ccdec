"""GPU facts of a pool, decided once: the schedulable units its nodes offer and the kernel modules.

The units follow what the NVIDIA device plugin advertises (GPU Operator docs, "GPU sharing" and
"MIG support"): whole GPUs as ``nvidia.com/gpu``; with time-slicing, ``replicas`` devices per GPU
under the same name; with MIG, one device per GPU instance, named ``nvidia.com/mig-<profile>``
under the mixed strategy and ``nvidia.com/gpu`` under the single strategy.
"""

from __future__ import annotations

import re
from typing import Literal

from alicerce.catalog.models import Gpu
from alicerce.resolve.model import GpuDirect, GpuUnits, KernelModules
from alicerce.spec.models import Fabric, MigSharing, NodePool, TimeSlicing

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"


def gpu_config_labels(pool: NodePool) -> dict[str, str]:
    """Node labels that select a pool's MIG layout and device-plugin (time-slicing) config.

    The MIG manager and the device plugin read a node's config from these labels only (GPU Operator docs, "MIG
    support" and "Time-slicing GPUs"): a node without them keeps whole GPUs, whatever the ConfigMaps say. They are
    node labels of the pool on every target, so the node's own bootstrap (EKS node group, kubespray) sets them.
    """
    labels: dict[str, str] = {}
    if isinstance(pool.sharing, MigSharing):
        labels[MIG_CONFIG_LABEL] = mig_config_name(pool.name)
    if isinstance(pool.sharing, TimeSlicing):
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = device_plugin_config_name(pool.name)
    return labels


def mig_config_name(pool: str) -> str:
    """The MIG manager's config a node of ``pool`` selects (its nvidia.com/mig.config label)."""
    return f"alicerce-{pool}"


# the config a node without the selecting label gets (the GPU Operator's devicePlugin.config.default): whole GPUs. A GPU
# pool of this name would replace it with its own, and every unlabelled GPU node would take that pool's sharing (AL331)
DEVICE_PLUGIN_DEFAULT_CONFIG = "default"


def device_plugin_config_name(pool: str) -> str:
    """The device plugin's config a node of ``pool`` selects (its nvidia.com/device-plugin.config label)."""
    return pool


def gpu_units(pool: NodePool, mig_strategy: Literal["single", "mixed"]) -> GpuUnits | None:
    """What one node of ``pool`` offers to pods; None for pools without accelerators."""
    if pool.accelerator is None:
        return None
    gpus = pool.accelerator.count
    sharing = pool.sharing
    if isinstance(sharing, TimeSlicing):
        return GpuUnits(
            resources={GPU_RESOURCE: gpus * sharing.replicas}, per_gpu=sharing.replicas, gpu_share={GPU_RESOURCE: 1 / sharing.replicas}
        )
    if isinstance(sharing, MigSharing):
        per_gpu = sum(sharing.profiles.values())
        if mig_strategy == "single":
            return GpuUnits(resources={GPU_RESOURCE: gpus * per_gpu}, per_gpu=per_gpu, gpu_share={GPU_RESOURCE: 1 / per_gpu})
        resources = {f"{MIG_RESOURCE_PREFIX}{name}": gpus * count for name, count in sorted(sharing.profiles.items())}
        return GpuUnits(resources=resources, per_gpu=per_gpu, gpu_share=_mig_shares(sharing.profiles))
    return GpuUnits(resources={GPU_RESOURCE: gpus}, per_gpu=1, gpu_share={GPU_RESOURCE: 1.0})


def _mig_shares(profiles: dict[str, int]) -> dict[str, float]:
    """A mixed MIG layout's instances share their GPU by compute slices: the N of a profile `Ng.<memory>` (NVIDIA MIG
    user guide, "Supported MIG Profiles"), so a 3g.40gb beside a 4g.40gb is 3/7 of the GPU, and slices no profile
    uses are billed to those that are. A profile without a slice count (the catalog's own names) counts as one."""
    slices = {name: int(match.group(1)) if (match := re.match(r"(\d+)g\.", name)) else 1 for name in profiles}
    total = sum(slices[name] * count for name, count in profiles.items())
    # a layout of no instances is refused by AL216, after resolve has run
    return {f"{MIG_RESOURCE_PREFIX}{name}": slices[name] / total if total else 0.0 for name in sorted(profiles)}


def kernel_modules(gpu: Gpu | None, choice: Literal["auto", "open", "proprietary"]) -> KernelModules | None:
    """The NVIDIA kernel modules a GPU runs with: the spec's choice, else open modules from Turing on.

    NVIDIA's open GPU kernel modules support Turing and newer; Volta needs the proprietary ones
    (open-gpu-kernel-modules README, "Supported GPUs").
    """
    if gpu is None:
        return None
    if choice != "auto":
        return choice
    return "proprietary" if gpu.architecture == "volta" else "open"


def gpudirect_path(gpu: Gpu | None, modules: KernelModules | None, fabric: Fabric | None, host_stack: str | None) -> GpuDirect:
    """The GPUDirect RDMA path of an on-prem GPU pool, one for both driver owners (host role, GPU Operator).

    NVIDIA recommends DMA-BUF: it needs the open kernel modules and Linux 5.12 (every supported OS
    has a newer kernel) and no extra module. The legacy nvidia-peermem module works only against
    MLNX/DOCA-OFED's peer-memory symbols (built against inbox rdma-core it is a stub whose init fails),
    so proprietary modules get GPUDirect only with DOCA-OFED (cloud-native-docs gpu-operator-rdma.rst,
    "Common Prerequisites"; open-gpu-kernel-modules nvidia-peermem.Kbuild).
    """
    if gpu is None or fabric is None or host_stack is None or not fabric.gpu_direct_rdma:
        return "none"  # host_stack None: the target installs no RDMA software on its hosts (its resolver decides)
    if modules == "open":
        return "dmabuf"
    return "peermem" if host_stack == "doca-ofed" else "none"
