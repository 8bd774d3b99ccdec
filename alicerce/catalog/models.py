"""Typed shape of the catalog data files under ``alicerce/catalog/data``.

The catalog holds facts that vendors change every quarter (GPU figures, instance types, prices,
version compatibility). They live in YAML data files, each fact next to its public source, and
these models only give them a checked, typed shape.
"""

from __future__ import annotations

import datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

Architecture = Literal["volta", "ampere", "ada", "hopper", "blackwell"]
"""NVIDIA GPU architectures the catalog knows, oldest first."""

# The first architecture whose driver reports a GPU's NVSwitch fabric state (NVML nvmlDeviceGetGpuFabricInfo: "For
# Hopper or newer fully supported devices", NVML API Reference Guide, Device Queries,
# https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html). DCGM field 170 (Fabric Manager status) is read
# from it, so an older GPU reads not_supported (0) there whatever Fabric Manager does (review obsreview28 G-1).
FABRIC_STATE_REPORTED_FROM: Architecture = "hopper"

# The lowest compute capability Transformer Engine trains in fp8 on: check_fp8_support answers "Device compute
# capability 8.9 or higher required for FP8 execution." below it (transformer_engine/pytorch/quantization.py
# _compute_fp8_support at v2.18, 27486e03; fp8.py at v0.10 already). NVFP4 needs SM100 (Blackwell): "NVFP4 requires
# SM100 (Blackwell) or later" (NVIDIA/TransformerEngine docs/features/low_precision_training/nvfp4).
FP8_TRAINING_CAPABILITY = (8, 9)
# A generic fp8 recipe (torchao float8 training) runs its GEMMs on torch._scaled_mm, and PyTorch's _scaled_mm_out_cuda
# checks the same bound: TORCH_CHECK(allowed_device, "torch._scaled_mm is only supported on CUDA devices with compute
# capability >= 9.0 or 8.9, or ROCm MI300+") (pytorch/pytorch aten/src/ATen/native/cuda/Blas.cpp).
GENERIC_FP8_REFUSAL = "torch._scaled_mm, the GEMM a generic recipe runs on, refuses fp8 below it"


class CatalogModel(BaseModel):
    # validators are built on first use: a catalog read back from the cache never needs them
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


class Source(CatalogModel):
    """Where a fact comes from: a public page, paper or data sheet."""

    title: str = Field(description="Human title of the source.")
    url: str = Field(description="Public address of the source.")


class Tflops(CatalogModel):
    """Dense (no structured sparsity) peak tensor throughput in TFLOP/s; null where unsupported."""

    fp32: float | None = Field(default=None, description="FP32 (non-tensor) TFLOP/s.")
    tf32: float | None = Field(default=None, description="TF32 tensor TFLOP/s, dense.")
    bf16: float = Field(description="BF16 tensor TFLOP/s, dense.")
    fp16: float = Field(description="FP16 tensor TFLOP/s, dense.")
    fp8: float | None = Field(default=None, description="FP8 tensor TFLOP/s, dense.")
    int8: float | None = Field(default=None, description="INT8 tensor TOP/s, dense.")
    fp4: float | None = Field(default=None, description="FP4 tensor TFLOP/s, dense.")


class MigProfile(CatalogModel):
    """One MIG GPU-instance profile of a GPU model."""

    name: str = Field(description="Profile name as nvidia-smi and mig-parted spell it, e.g. 1g.10gb.")
    slices: int = Field(description="Compute slices (of the GPU's computeSlices) the profile takes.")
    memoryGiB: float = Field(description="Framebuffer memory of one instance.")
    memorySlices: int | None = Field(
        default=None,
        description="Memory slices (of the GPU's memorySlices) the profile takes: its share of the framebuffer and of the HBM "
        "bandwidth ('Fraction of Memory' in NVIDIA's MIG user guide, supported MIG profiles). Default: its memoryGiB's "
        "share of the largest profile's.",
    )
    maxCount: int = Field(description="How many instances of this profile fit on one GPU.")
    sms: int | None = Field(
        default=None,
        ge=1,
        description="Streaming multiprocessors of one instance (the SM column of `nvidia-smi mig -lgip`): with the GPU's "
        "mig.sms, its share of the peak FLOP/s. Instances of one profile hold disjoint SMs, so sms x maxCount is at most "
        "mig.sms, and a one-memory-slice 1g is one compute slice's SMs, so its sms x computeSlices is too (AL287). "
        "Default: its compute slices x the SMs of the GPU's 1-slice profile with one memory slice, where "
        "mig.sms and that profile's sms are given; else its compute slices of the GPU's. AL287 refuses a GPU that lists sms "
        "on some profiles and can count the rest neither way: list sms on every profile, or on its one-memory-slice 1g.",
    )


class Mig(CatalogModel):
    """Multi-Instance GPU capability."""

    maxInstances: int = Field(description="Largest number of GPU instances on one GPU.")
    computeSlices: int = Field(description="Compute slices one GPU divides into; the profiles of one layout share them.")
    memorySlices: int | None = Field(
        default=None, description="Memory slices one GPU divides into (8 on A100, H100, H200 and B200; 4 on A30)."
    )
    sms: int | None = Field(
        default=None,
        ge=1,
        description="Streaming multiprocessors of the whole GPU outside MIG, the ones its peak FLOP/s are quoted for (H100 "
        "SXM: 132; A100: 108, of which MIG's 7g exposes 98).",
    )
    profiles: tuple[MigProfile, ...] = Field(description="Supported GPU-instance profiles.")

    def one_memory_slice(self, profile: MigProfile) -> bool:
        """Whether the profile holds one memory slice: its memorySlices, else its memory share nearer one slice than two
        (an H100's 1g.10gb at 9.75 of 79 GiB, not its 1g.20gb)."""
        if profile.memorySlices is not None:
            return profile.memorySlices == 1
        return self.memory_share(profile) * (self.memorySlices or self.computeSlices) < 1.5

    def sm_unit(self) -> MigProfile | None:
        """The profile a profile without its own SMs is counted in: the 1-slice profile with one memory slice (an H100's
        1g.10gb at 16 SMs). A two-memory-slice 1g is never the unit, present or alone: its SMs are no compute slice's (an
        H100's 1g.20gb has 26, and 3 x 26 planned a 3g at 78 of 132 SMs where the lgip gives 60: reviews sizreview28 D1,
        sizreview29 D1). Among twins (1g.10gb and 1g.10gb+me) the one listing SMs, then the fewest. None without one."""
        ones = [p for p in self.profiles if p.slices == 1 and self.one_memory_slice(p)]
        return min(ones, key=lambda p: (p.sms is None, p.sms or 0)) if ones else None

    def fallback_sms(self, profile: MigProfile) -> int | None:
        """The one rule for a profile without its own SMs: its compute slices x the unit's (sm_unit) SMs, uncapped, where the
        GPU's and the unit's SMs are known; else None (compute slices / computeSlices). AL287 checks it, x maxCount,
        against mig.sms, and refuses a GPU where it is None beside listed SMs (mixed_basis)."""
        unit = self.sm_unit()
        if self.sms is None or unit is None or unit.sms is None:
            return None
        return profile.slices * unit.sms

    def mixed_basis(self) -> MigProfile | None:
        """The first profile that would be planned on another basis than its siblings: with mig.sms and some profile's
        SMs listed, a profile without its own that fallback_sms cannot count sits at compute slices / 7 beside SM shares
        (an H100's 1g.10gb at 0.143 for the lgip's 16 / 132 = 0.121: review sizreview29 G2). AL287 refuses it."""
        if self.sms is None or all(p.sms is None for p in self.profiles):
            return None
        return next((p for p in self.profiles if p.sms is None and self.fallback_sms(p) is None), None)

    def profile_sms(self, profile: MigProfile) -> int | None:
        """The profile's SMs: its own (the SM column of `nvidia-smi mig -lgip`), else fallback_sms, never more than the
        whole GPU's (AL287 refuses a count past it; the cap keeps a share at most 1 on a catalog not yet validated). None
        without the GPU's SMs or a unit to count in. The fallback never exceeds a listed count: every lgip published has a
        profile at least slices x its one-memory-slice 1g's SMs (A100 14 x slices exactly; H100 / H200 3g 60 >= 48, 7g
        132 >= 112; B200 2g 36 = 2 x 18)."""
        if self.sms is None:
            return None
        if profile.sms is not None:
            return profile.sms
        fallback = self.fallback_sms(profile)
        return None if fallback is None else min(fallback, self.sms)

    def compute_share(self, profile: MigProfile) -> float:
        """The profile's share of the GPU's peak FLOP/s: its SMs (profile_sms) of the whole GPU's where known, else its
        compute slices of the GPU's. The SMs differ from slices / 7 (review sizreview26 G1): an H100's 1g.10gb has 16 of 132
        SMs (0.121, not 0.143), its 1g.20gb 26 (0.197), its 4g.40gb 64 (0.485, not 0.571); an A100's 7g 98 of 108."""
        sms = self.profile_sms(profile)
        if sms is not None and self.sms is not None:
            return sms / self.sms
        return profile.slices / self.computeSlices

    def compute_basis(self, profile: MigProfile) -> str:
        """What compute_share reads for the profile, for the notes and --explain."""
        sms = self.profile_sms(profile)
        fallback = self.fallback_sms(profile)
        unit = self.sm_unit()
        if sms is not None and profile.sms is None and fallback is not None and unit is not None:
            capped = ", capped at the whole GPU's" if sms < fallback else ""
            return (f"{sms} of {self.sms} SMs ({profile.slices} compute slices x the {unit.name}'s {unit.sms}{capped}: no SM "
                    "count is listed for it)")  # fmt: skip
        if sms is not None:
            return f"{sms} of {self.sms} SMs"
        return f"compute slices / {self.computeSlices}"

    def memory_share(self, profile: MigProfile) -> float:
        """The profile's share of the GPU's memory and HBM bandwidth: its memory slices of the GPU's, else its memory of
        the largest profile's (which holds every slice)."""
        if profile.memorySlices is not None and self.memorySlices is not None:
            return profile.memorySlices / self.memorySlices
        return profile.memoryGiB / max(p.memoryGiB for p in self.profiles)


class Interconnect(CatalogModel):
    """GPU-to-GPU interconnect of the usual server form of this GPU."""

    nvlinkGeneration: int | None = Field(description="NVLink generation; null for PCIe-only GPUs.")
    nvlinkBandwidthGBps: float | None = Field(description="Total bidirectional NVLink bandwidth per GPU in GB/s; null for PCIe-only.")
    nvswitch: bool = Field(description="Whether 8-GPU servers of this GPU use NVSwitch (needs Fabric Manager).")
    pcieGeneration: int = Field(description="PCIe generation of the host link.")

    @property
    def nvswitch_generation(self) -> int | None:
        """NVSwitch generation of the 8-GPU baseboard: one behind the NVLink generation (A100 NVLink 3 with
        second-generation NVSwitches, H100 4 with third, B200 5 with fourth; Fabric Manager user guide,
        "NVSwitch-Based Systems"); None without NVSwitch."""
        return self.nvlinkGeneration - 1 if self.nvswitch and self.nvlinkGeneration else None


class Gpu(CatalogModel):
    """An accelerator model with the figures sizing and validation rely on."""

    id: str = Field(description="Canonical id used in specs, e.g. H100-SXM5-80GB.")
    aliases: tuple[str, ...] = Field(default=(), description="Other names users may write.")
    vendor: Literal["nvidia"] = Field(description="Vendor.")
    architecture: Architecture = Field(description="GPU architecture.")
    computeCapability: str = Field(description="CUDA compute capability, e.g. '9.0'.")
    formFactor: Literal["SXM", "PCIe"] = Field(description="Module form factor.")
    memoryGB: float = Field(
        description="Memory as marketed ('80GB'); NVIDIA's figure is binary (an H100's 80 GB is 81,920 MiB of HBM), and the "
        "planner reads it as GiB."
    )
    inlineEcc: bool = Field(
        default=False,
        description="ECC kept in the memory itself (GDDR6 data-centre cards, on by default): CUDA sees 15/16 of it, an L40S's "
        "48 GiB as 46,068 MiB in nvidia-smi. HBM keeps its ECC beside the data and loses none.",
    )
    memoryBandwidthGBps: float = Field(description="Peak memory bandwidth in GB/s.")
    tflops: Tflops = Field(description="Dense peak throughput per precision.")
    tdpWatts: int = Field(description="Maximum board power in watts.")
    interconnect: Interconnect = Field(description="GPU interconnect.")
    mig: Mig | None = Field(default=None, description="MIG capability; null when not supported.")
    sources: tuple[Source, ...] = Field(min_length=1, description="Where these figures come from.")

    @property
    def reports_fabric_state(self) -> bool:
        """Whether the driver reports this GPU's NVSwitch fabric state (FABRIC_STATE_REPORTED_FROM and newer)."""
        order = get_args(Architecture)
        return order.index(self.architecture) >= order.index(FABRIC_STATE_REPORTED_FROM)

    def training_refusal(self, precision: str, fp8_recipe: str | None = None) -> str | None:
        """Why no training stack runs ``precision`` on this GPU (None where one does): validate refuses a declared GPU
        (AL388) and the plan a pool its placement would pick (review sizreview24 D1), on the same words. The stack named
        is the one the recipe declares: a generic recipe (torchao-style float8) runs its GEMMs on torch._scaled_mm,
        whose ATen kernel checks the same bound in its own words (review sizreview25 N5)."""
        capability = tuple(int(part) for part in self.computeCapability.split("."))
        if precision == "fp8" and capability < FP8_TRAINING_CAPABILITY:
            stack = GENERIC_FP8_REFUSAL if fp8_recipe == "generic" else "Transformer Engine refuses fp8 below it"
            return (f"fp8 training needs compute capability 8.9 or later (Ada, Hopper, Blackwell): {stack}, and {self.id} "
                    f"is {self.computeCapability}")  # fmt: skip
        if precision == "fp4" and self.tflops.fp4 is None:
            return f"fp4 training needs Blackwell: Transformer Engine refuses NVFP4 below SM100, and {self.id} has no fp4 tensor cores"
        return None

    @staticmethod
    def training_refusal_hint(precision: str) -> str:
        """What a refused training precision can change to: validate's AL388 and the plan's PL303 give the same."""
        return "set bf16, or run on a pool of GPUs with fp8 tensor cores" if precision == "fp8" else "set fp8, or run on a Blackwell pool"

    @property
    def memory_bytes(self) -> float:
        """Device memory CUDA can allocate: the marketed GiB, less the 1/16 inline ECC takes on GDDR6 cards (review
        sizreview4 gap: an L40S planned with 48 GiB where vLLM and TensorRT-LLM see 44.99)."""
        return self.memoryGB * 2**30 * (15 / 16 if self.inlineEcc else 1.0)


class LocalNvme(CatalogModel):
    count: int = Field(description="Number of instance-store NVMe devices.")
    sizeGB: int = Field(description="Size of each device in GB.")


class Efa(CatalogModel):
    maxInterfaces: int = Field(description="NetworkInfo.EfaInfo.MaximumEfaInterfaces.")
    networkCards: int = Field(description="Number of network cards.")
    enaOnlyCards: tuple[int, ...] = Field(default=(), description="Network card indexes that carry no EFA (e.g. card 0 on p6-b300).")


class Price(CatalogModel):
    usdPerHour: float = Field(description="On-demand Linux price per instance-hour in USD.")
    region: str = Field(description="Region the price was read for.")
    asOf: datetime.date = Field(description="Date the price was read.")
    source: Source = Field(description="Where the price comes from.")
    note: str | None = Field(default=None, description="Caveat, e.g. an estimate where AWS lists no on-demand price.")


class InstanceType(CatalogModel):
    """A cloud instance type offered for GPU or CPU node pools (the shipped catalog lists AWS's)."""

    type: str = Field(description="Instance type name, e.g. p5.48xlarge.")
    family: str = Field(description="Instance family, e.g. p5.")
    gpu: str | None = Field(description="Catalog GPU id; null for CPU-only types.")
    gpus: int = Field(description="GPUs per instance (0 for CPU-only).")
    vcpus: int = Field(description="vCPUs.")
    threadsPerCore: int = Field(
        default=2,
        ge=1,
        description="Threads (vCPUs) a physical core runs: 2 on EC2's x86 types, 1 on M7a and Graviton (EC2 User Guide, "
        "'Optimize CPU options': each vCPU is a thread of a CPU core, except T2, M7a, Mac and Graviton instances).",
    )
    memoryGiB: float = Field(description="Instance memory in GiB.")
    localNvme: LocalNvme | None = Field(description="Instance-store NVMe; null when none.")
    networkGbps: float = Field(description="Aggregate network bandwidth in Gbit/s.")
    efa: Efa | None = Field(description="EFA support; null when the type has no EFA.")
    gpuDirectRdma: bool = Field(description="Whether GPUDirect RDMA over EFA is supported.")
    price: Price = Field(description="On-demand price.")
    sources: tuple[Source, ...] = Field(min_length=1, description="Where the figures come from.")

    @property
    def cores(self) -> int:
        """Physical cores: what a data-preparation job's one-process-a-core rate packs (two tokenizer processes on a
        core's two threads do not run at twice one's rate; review sizreview61 G4)."""
        return max(1, self.vcpus // self.threadsPerCore)


class Chart(CatalogModel):
    """A Helm chart of the tested bill of materials."""

    repository: str = Field(description="Helm repository URL or OCI reference.")
    chart: str = Field(description="Chart name.")
    version: str = Field(description="Pinned chart version.")
    appVersion: str | None = Field(
        default=None, description="Version of the application the chart installs, where a test checks against it."
    )
    source: Source = Field(description="Release notes or chart index the pin was read from.")


class BillOfMaterials(CatalogModel):
    """The default, tested set of versions a spec gets when it pins none."""

    kubernetes: str = Field(description="Kubernetes minor version, e.g. '1.33'.")
    driverBranch: str = Field(description="NVIDIA datacenter driver branch, e.g. '580'.")
    driverVersion: str = Field(description="Full driver version of that branch.")
    gpuOperator: str = Field(description="NVIDIA GPU Operator version.")
    networkOperator: str = Field(description="NVIDIA Network Operator version.")
    kueue: str = Field(description="Kueue version.")
    kuberay: str = Field(description="KubeRay operator version.")
    trainingOperator: str = Field(description="Kubeflow training operator version.")
    kubePrometheusStack: str = Field(description="kube-prometheus-stack chart version.")
    efaDevicePlugin: str = Field(description="AWS EFA Kubernetes device plugin chart version.")
    fsxCsiDriver: str = Field(description="AWS FSx for Lustre CSI driver chart version.")
    clusterAutoscaler: str = Field(description="cluster-autoscaler chart version (EKS clusters).")
    awsLoadBalancerController: str = Field(description="AWS Load Balancer Controller chart version (EKS clusters).")
    cloudwatchExporter: str = Field(
        description="prometheus-yet-another-cloudwatch-exporter chart version (the storage KPIs of FSx and EFS tiers on EKS)."
    )


class Release(CatalogModel):
    """A released version of a component and the Kubernetes minors it supports."""

    version: str
    kubernetes: tuple[str, ...] = Field(description="Kubernetes minor versions supported.")
    source: Source


class DriverMatrix(CatalogModel):
    """The driver versions a GPU Operator release ships and supports (its component matrix)."""

    versions: tuple[str, ...] = Field(description="Driver versions the release lists, newest first.")
    recommended: str | None = Field(default=None, description="The version the matrix marks recommended (R).")
    source: Source


class GpuOperatorRelease(Release):
    driverBranches: tuple[str, ...] = Field(description="Driver branches the operator supports.")
    drivers: DriverMatrix | None = Field(
        default=None, description="Driver versions of the release's component matrix; null where the catalog has not read it."
    )


class NetworkOperatorComponents(CatalogModel):
    """Where a Network Operator release's component images live (all share one tag)."""

    repository: str = Field(description="Image registry path, e.g. nvcr.io/nvidia/mellanox.")
    version: str = Field(description="Image tag, e.g. network-operator-v26.1.0.")
    source: Source


class NetworkOperatorRelease(Release):
    components: NetworkOperatorComponents | None = Field(
        default=None, description="Component images for the NicClusterPolicy; unknown releases cannot drive on-prem RDMA."
    )


class DriverBranch(CatalogModel):
    branch: str
    latestVersion: str = Field(description="Newest release of the branch the catalog knows.")
    architectures: tuple[Architecture, ...] = Field(description="GPU architectures supported.")
    openKernelModules: bool = Field(description="Whether the open kernel modules are supported.")
    endOfLife: datetime.date | None = Field(default=None, description="End of support, if known.")
    source: Source


class KueueRelease(Release):
    apiVersion: str = Field(description="Kueue API group version served, e.g. v1beta2.")


class ContainerImage(CatalogModel):
    """A container image alicerce's own objects run, pinned by tag, with where the tag was read."""

    image: str = Field(description="Registry, repository and tag.")
    source: Source


class TrainerRuntimes(CatalogModel):
    """The images of the training runtimes alicerce emits for one Kubeflow Trainer release."""

    trainer: str = Field(description="Kubeflow Trainer release (the training-operator pin).")
    images: dict[str, ContainerImage] = Field(description="Runtime name -> image of its trainer container.")


class Incompatibility(CatalogModel):
    """A documented pair of versions that must not be combined (for a feature)."""

    gpuOperator: str | None = None
    networkOperator: str | None = None
    feature: str = Field(description="What breaks, e.g. rdma.")
    message: str = Field(description="Human explanation.")
    source: Source


class EksAddonRelease(CatalogModel):
    """The versions of one EKS managed add-on that AWS lists as the latest for each Kubernetes minor."""

    versions: dict[str, str] = Field(description="Kubernetes minor -> add-on version (vX.Y.Z-eksbuild.N).")
    source: Source


EksAddonPins = dict[str, EksAddonRelease]


class Versions(CatalogModel):
    bom: BillOfMaterials
    charts: dict[str, Chart]
    kubernetes: tuple[str, ...] = Field(description="Kubernetes minors alicerce supports.")
    gpuOperator: tuple[GpuOperatorRelease, ...]
    networkOperator: tuple[NetworkOperatorRelease, ...]
    driverBranches: tuple[DriverBranch, ...]
    kueue: tuple[KueueRelease, ...]
    incompatibilities: tuple[Incompatibility, ...] = ()
    eksAddons: EksAddonPins = Field(default_factory=dict, description="EKS managed add-on pins by add-on name.")
    trainerRuntimes: tuple[TrainerRuntimes, ...] = Field(default=(), description="Training runtime images per Kubeflow Trainer release.")
    images: dict[str, ContainerImage] = Field(default_factory=dict, description="Other images alicerce's own objects run, by role.")


class FsxOption(CatalogModel):
    """One FSx for Lustre deployment type, storage type and per-unit throughput, with size steps."""

    deploymentType: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]
    storageType: Literal["SSD", "HDD"]
    perUnit: int | None = Field(description="PerUnitStorageThroughput (MB/s/TiB); null for scratch types.")
    baselineMBpsPerTiB: int = Field(description="Throughput per TiB of storage this option delivers.")
    fixedGiB: tuple[int, ...] = Field(description="Allowed capacities below the first multiple.")
    multipleOfGiB: int = Field(description="Larger capacities are multiples of this many GiB.")
    kms: bool = Field(description="Whether a customer KMS key can be used.")
    usdPerGBMonth: float = Field(description="Storage price per GB-month in us-east-1.")


class Fsx(CatalogModel):
    sources: tuple[Source, ...]
    options: tuple[FsxOption, ...]


class Citation(CatalogModel):
    title: str
    url: str | None = Field(description="Public address; null for alicerce's own documented defaults.")


class Assumption(CatalogModel):
    """One sizing figure and the key of its source in ``Sizing.sources``."""

    value: float
    source: str


class ByArchitecture(CatalogModel):
    volta: Assumption
    ampere: Assumption
    ada: Assumption
    hopper: Assumption
    blackwell: Assumption


class PerGpuBatch(CatalogModel):
    referenceTokens: Assumption
    exponent: Assumption


class Fp8Gain(CatalogModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    transformer_engine: Assumption = Field(alias="transformer-engine")
    generic: Assumption


class PrecisionPair(CatalogModel):
    """One figure a source publishes for the same run in FP8 and in NVFP4."""

    fp8: float
    fp4: float


class StagesPair(CatalogModel):
    """The interleaved schedule's chunks a stage (VP) a source states for its FP8 and its NVFP4 run."""

    fp8: int
    fp4: int


class Fp4Run(CatalogModel):
    """One system's FP8 and NVFP4 runs of :class:`Fp4OverFp8`'s model in one source table, at the layout it states."""

    system: str  # as the source names it
    gpu: str  # the GPU plan sizes it on: a gpus.yaml id or one of calibration-training.yaml's GPUs
    gpus: int
    globalBatchSequences: int
    tensorParallel: int
    pipelineParallel: int
    virtualStages: StagesPair  # its interleaved schedule's chunks a stage (VP), per precision as the table states
    tokensPerSecondPerGpu: PrecisionPair


class Fp4Model(CatalogModel):
    """The shape of the model a source ran in FP8 and NVFP4 (the workload fields of the same names)."""

    parameters: float
    layers: int
    hiddenSize: int
    heads: int
    headDim: int
    vocabulary: int
    sequenceLength: int


class Fp4OverFp8(CatalogModel):
    """NVFP4 over FP8: the blocks' GEMM speed-up (``value``), fitted so the planner's step model reproduces the whole-step
    ratios of ``runs`` (calibrate.fit_fp4_over_fp8)."""

    value: float
    source: str
    model: Fp4Model
    runs: tuple[Fp4Run, ...]


class TrainingSizing(CatalogModel):
    """Factors of the training-throughput model (alicerce/plan/throughput.py)."""

    base: ByArchitecture
    perGpuBatch: PerGpuBatch
    fp8Gain: Fp8Gain
    fp4OverFp8: Fp4OverFp8
    moeRouting: Assumption
    expertsPerTokenDefault: Assumption
    fullRecompute: Assumption
    attentionFlops: Assumption  # attention FLOPs a token per layer x sequence x attention width, forward and backward
    # how much longer attention takes on Hopper with FlashAttention-2 (or an older portable kernel) than with a kernel
    # written for it (cuDNN fused attention, FlashAttention-3), which the NeMo, Megatron and MLPerf fit runs' stacks ran
    flashAttention2OnHopper: Assumption
    goodput: Assumption
    tpLinkEfficiency: Assumption  # of per-direction NVLink/PCIe bandwidth a large-message all-reduce reaches (bus bandwidth)


class PcieBandwidth(CatalogModel):
    gen3: float
    gen4: float
    gen5: float
    source: str

    def per_direction(self, generation: int) -> float:
        return {3: self.gen3, 4: self.gen4}.get(generation, self.gen5)


class InferenceSizing(CatalogModel):
    """Efficiencies of the inference roofline (alicerce/plan/roofline.py)."""

    prefillEfficiency: Assumption
    decodeComputeEfficiency: Assumption
    decodeBandwidthEfficiency: Assumption
    # per GPU: memory neither weights nor KV cache (activations, workspace, context), fitted (roofline.kv_pool_bytes)
    reservedGiB: Assumption
    # the engine's KV-cache memory fraction where the workload declares none (TensorRT-LLM free_gpu_memory_fraction,
    # vLLM gpu_memory_utilization: both default 0.9)
    kvMemoryFraction: Assumption
    linkEfficiency: Assumption
    stepOverheadSeconds: Assumption
    allReduceLatencySeconds: Assumption
    # NCCL's own latency model of a one-node LL all-reduce, base + 2 (tp - 1) hops: what runs it where vLLM's custom
    # all-reduce is off (more than two GPUs without NVLink between every pair)
    ncclAllReduceBaseSeconds: Assumption
    ncclPcieHopSeconds: Assumption
    maxBatch: Assumption
    maxBatchLargeGpu: Assumption  # vLLM's default cap on a GPU of largeGpuGiB or more that is not an A100
    largeGpuGiB: Assumption
    maxBatchedTokens: Assumption  # vLLM's default prompt tokens a step prefills beside its decodes (chunked prefill)
    maxBatchedTokensLargeGpu: Assumption
    tpotHeadroom: Assumption
    kvHeadsDefault: Assumption
    headDimDefault: Assumption
    pcieGBpsPerDirection: PcieBandwidth


class CheckpointBytes(CatalogModel):
    adamw: Assumption
    sgd: Assumption
    adafactor: Assumption


class BytesPerParameter(CatalogModel):
    adamw: Assumption
    sgd: Assumption
    adafactor: Assumption
    weights: Assumption  # of each optimizer's bytes, the 16-bit weights (ZeRO stage 2 leaves them unsharded)
    gradients: Assumption  # and the 16-bit gradients (stage 1 leaves both unsharded)
    fp32Gradients: Assumption  # the gradients stages 0-1 keep whole when they accumulate them in fp32 (bf16, fp8 training)
    checkpoint: CheckpointBytes


class ActivationBytes(CatalogModel):
    noRecompute: float
    fullRecompute: float
    unsplitWithoutSequenceParallel: float  # of noRecompute, what tensor parallelism without sequence parallelism leaves whole
    attentionScores: float  # x heads x sequence / hidden more per layer without FlashAttention
    logits: float  # x vocabulary per token of a sequence: the output layer's logits the loss keeps (fp32)
    source: str


class Sizing(CatalogModel):
    """Every assumption of the workload sizer, each with its source."""

    training: TrainingSizing
    inference: InferenceSizing
    bytesPerParameter: BytesPerParameter
    weightBytes: dict[str, float]
    qloraBaseBytes: Assumption
    loraRankDefault: Assumption
    loraTrainableFraction: Assumption
    loraFlopsPerParameterToken: Assumption
    trainingFlopsPerParameterToken: Assumption
    activationBytes: ActivationBytes
    hiddenPerLayer: Assumption
    vocabularyDefault: Assumption
    memoryReserveFraction: Assumption
    tcpGbpsPerGpu: Assumption
    commOverlapFraction: Assumption
    defaultGlobalBatchTokens: Assumption
    defaultCheckpointIntervalSeconds: Assumption
    checkpointStallBudget: Assumption
    defaultBytesPerToken: Assumption
    dataReadHeadroom: Assumption
    dataPrepMBpsPerCore: Assumption
    hoursPerMonth: Assumption
    sources: dict[str, Citation]


# --------------------------------------------------------------------------------------------
# calibration data (public training runs and serving results the sizing models are fitted to)


class Experts(CatalogModel):
    total: int
    perToken: int
    moeLayers: int
    routedAttention: bool = False  # a mixture of attention heads in every expert layer too (the spec's experts field)


class LatentAttentionLayout(CatalogModel):
    """Multi-head latent attention as a user declares it (`model.attention: {kind: mla, ...}` and `headDim`)."""

    heads: int
    headDim: int
    ropeHeadDim: int
    kvLoraRank: int


class SlidingWindowLayout(CatalogModel):
    """Sliding-window attention as a user declares it (`model.attention: {kind: sliding-window, window, globalLayers}`)."""

    window: int
    globalLayers: int = 0


class TrainingMeasurement(CatalogModel):
    gpuHours: float | None = None
    tokens: float | None = None
    tokensPerSecondPerGpu: float | None = None


class TrainingRun(CatalogModel):
    """One public training run or benchmark, with what was published about it."""

    id: str
    model: str
    parameters: float
    activeParameters: float | None = None
    layers: int
    hidden: int
    mla: LatentAttentionLayout | None = None  # the same attention as the user-declarable layout
    slidingWindow: SlidingWindowLayout | None = None  # sliding-window layers (and the global ones between them)
    # query heads and their dimension where heads x headDim is not the hidden size (the model's heads and headDim)
    heads: int | None = None
    headDim: int | None = None
    experts: Experts | None = None
    # the tokenizer's vocabulary, where its source gives it (the workload field model.vocabulary; else the catalog default)
    vocabulary: int | None = None
    sequenceLength: int
    gpu: str
    gpus: int
    gpusAssumed: bool = False
    globalBatchTokens: float
    globalBatchAssumed: bool = False
    precision: Literal["bf16", "fp16", "fp8", "fp4", "unknown"]
    fp8Recipe: Literal["transformer-engine", "generic"] | None = None
    recompute: Literal["full"] | None = None
    tensorParallelOverlap: bool = False  # the run's stack overlaps tensor-parallel all-reduces (the workload field)
    flashAttention: bool = True  # the run's stack stores no attention scores (the workload field flashAttention)
    # the attention kernel its source states it ran (the workload field attentionKernel); None: the GPU's own
    attentionKernel: Literal["native", "flash-attention-2"] | None = None
    sequenceParallel: bool = True  # the run's stack splits every activation over tensor parallelism (sequenceParallel)
    zeroStage: int | None = None  # what its data-parallel ranks shard, as its source states (the workload field zeroStage)
    pipelineParallel: int | None = None  # its pipeline stages, as its source states (pipelineParallel)
    pipelineVirtualStages: int | None = None  # its interleaved schedule's model chunks a stage (VP), as its source states
    contextParallel: int | None = None  # GPUs each sequence is split over, as its source states (contextParallel)
    expertParallel: int | None = None  # its expert-parallel group, as its source states (expertParallel)
    expertTensorParallel: int | None = None  # its expert layers' tensor-parallel degree, as its source states
    tensorParallel: int | None = None  # its tensor-parallel degree, as its source states (the workload field tensorParallel)
    reporting: Literal["gpuHours", "throughput", "timeToTrain"]
    measured: TrainingMeasurement
    basis: str
    role: Literal["fit", "holdout", "excluded", "unseen"]  # unseen: only in evaluation-unseen.yaml
    why: str | None = None
    caveat: str | None = None
    # the published table or measurement the figure comes from, the same under every address that republishes it (a
    # model card and its paper, two revisions of one benchmark page): leave-one-source-out and the unseen checks group by
    # it, never by the url, so one table under two urls is one source
    family: str
    source: Source


class CalibrationGpu(CatalogModel):
    """A GPU that calibration runs used but node pools cannot (not in gpus.yaml)."""

    id: str
    architecture: Architecture
    bf16Tflops: float
    nvlinkBandwidthGBps: float | None = Field(
        default=None, description="Its NVLink bandwidth where it differs from the catalog GPU with the same die (H800: 400 GB/s)."
    )
    source: Source


class TrainingCalibration(CatalogModel):
    read: datetime.date
    gpus: tuple[CalibrationGpu, ...] = ()
    runs: tuple[TrainingRun, ...]


class ServedModel(CatalogModel):
    name: str
    parameters: float
    activeParameters: float | None = None
    layers: int
    hidden: int
    kvHeads: int
    headDim: int


class ServingResult(CatalogModel):
    model: str
    gpu: str
    tp: int
    precision: Literal["bf16", "fp16", "fp8", "fp4"]
    isl: int
    osl: int
    tokensPerSecond: float
    batch: int | None = None  # a fixed batch (latency benchmark)
    concurrency: int | None = None  # closed-loop clients
    requestsPerSecond: float | None = None  # a fixed request rate
    latencyMs: float | None = None
    ttftMs: float | None = None
    itlMs: float | None = None
    requests: int | None = None  # a finite throughput run's request count (its ramp-up and drain are in the figure)


class ServingTable(CatalogModel):
    id: str
    engine: str
    regime: Literal["max-throughput", "latency-bound"]
    role: Literal["fit", "test", "unseen"]  # unseen: only in evaluation-unseen.yaml
    maxBatch: int
    # how the engine charged KV at admission (alicerce/plan/roofline.py, Admission): reserve for TensorRT-LLM's
    # default capacity scheduler, on-demand for vLLM
    kvAdmission: Literal["on-demand", "reserve"]
    # the engine's KV-cache pool in tokens a replica holds, where the source prints it (TensorRT-LLM: "Allocated ... for
    # max tokens in paged KV cache (N)"): what the planner's memory fraction is compared against, never fitted on
    kvPoolTokens: int | None = None
    # the engine's KV-cache memory fraction the source ran with (roofline.kv_pool_bytes), where it is not the default
    kvMemoryFraction: float | None = None
    note: str | None = None
    family: str  # the published table family (see TrainingRun.family): every column and revision of one page is one
    source: Source
    rows: tuple[ServingResult, ...]


class InferenceCalibration(CatalogModel):
    read: datetime.date
    models: dict[str, ServedModel]
    tables: tuple[ServingTable, ...]


class UnseenEvaluation(CatalogModel):
    """Public runs from sources no calibration row uses, for measuring the planner only (never fitted on)."""

    read: datetime.date
    sources: tuple[Source, ...]
    runs: tuple[TrainingRun, ...]
    # serving points from sources no calibration table cites, sized with the shipped efficiencies (never fitted on)
    servingModels: dict[str, ServedModel] = {}
    servingTables: tuple[ServingTable, ...] = ()


# --------------------------------------------------------------------------------------------
# prices beyond on-demand us-east-1, and the cost factors of owned capacity


class RegionFactors(CatalogModel):
    asOf: datetime.date
    source: Source
    note: str | None = None
    families: dict[str, dict[str, float]]


class SpotFractions(CatalogModel):
    asOf: datetime.date
    source: Source
    families: dict[str, dict[str, float]]
    # instance type -> its us-east-1 on-demand price in the same snapshot, where today's (instances.yaml) has moved
    # since: a Spot fraction is of the snapshot's price, a market price that did not follow a later list-price cut
    snapshotOnDemand: dict[str, float] = {}


class CapacityBlockPrice(CatalogModel):
    # null for a type the User Guide sells that has no row in the price table at all (p5en.48xlarge)
    usdPerHour: float | None = None
    regions: tuple[str, ...] = ()  # the regions the price table has a row for
    soldUnpriced: tuple[str, ...] = ()  # sold there (the User Guide) with no published price: left unpriced (PL311)


class BlockDurationStep(CatalogModel):
    upToHours: int  # durations up to this many hours are sold in steps of stepHours
    stepHours: int


class CapacityBlocks(CatalogModel):
    asOf: datetime.date
    source: Source
    # the date the source says its prices are next updated (AWS: "updated regularly based on trends in supply and
    # demand"): past it the plan says the price may be stale (PL346; review sizreview20 F7)
    reviewBy: datetime.date | None = None
    reviewNote: str | None = None  # what a re-read found, said with PL346
    types: dict[str, CapacityBlockPrice]
    durationSource: Source
    durationSteps: tuple[BlockDurationStep, ...]  # ascending upToHours; the last is the longest block sold
    instancesPerBlock: int  # the most instances one block holds (durationSource)
    instancesAcrossBlocks: int  # the most instances an account holds across its blocks (durationSource)


class DatedSource(CatalogModel):
    asOf: datetime.date
    source: Source


class StoragePrice(CatalogModel):
    """What one storage implementation bills per GB stored a month (its storage class's list price)."""

    usdPerGBMonth: float
    regions: tuple[str, ...]  # where that price holds; elsewhere the plan says the tier is unpriced
    what: str  # the storage class and tier the price is for, and what it leaves out (requests, transfer)
    # the volume tiers after the first: (GB from which a price holds, USD per GB-month), S3's "next 450 TB" and "over 500 TB"
    volumeTiers: tuple[tuple[float, float], ...] = ()

    def monthly_usd(self, gb: float) -> float:
        """A month of ``gb`` GB held: each GB at the price of the volume tier it falls in."""
        starts = [(0.0, self.usdPerGBMonth), *self.volumeTiers]
        ends = [start for start, _ in starts[1:]] + [float("inf")]
        return sum(max(0.0, min(gb, end) - start) * usd for (start, usd), end in zip(starts, ends, strict=True))


class StoragePrices(CatalogModel):
    """Storage billed by the bytes it holds (an object store, an elastic file system), by implementation name."""

    asOf: datetime.date
    sources: tuple[Source, ...]
    implementations: dict[str, StoragePrice]


class Prices(CatalogModel):
    regionFactors: RegionFactors
    spot: SpotFractions
    capacityBlocks: CapacityBlocks
    capacityReservations: DatedSource
    storage: StoragePrices


Trust = Literal["high", "medium", "low"]


class TcoFactor(CatalogModel):
    """One cost factor of owned capacity, with its date, trust and source."""

    value: float
    asOf: datetime.date
    trust: Trust
    source: Citation


class TcoPrice(CatalogModel):
    usd: float
    asOf: datetime.date
    trust: Trust
    source: Citation


class TcoNodePrice(TcoPrice):
    """A quote for one GPU server: ``gpus`` is the node it prices (a pool of smaller or larger nodes scales it per GPU)."""

    gpus: int = Field(ge=1)


class TcoFabricPrice(TcoPrice):
    """A compute fabric's share per node: ``rails`` is the fabric's rails it prices (a pool scales it per rail)."""

    rails: int = Field(ge=1)


class TcoPower(CatalogModel):
    kw: float
    asOf: datetime.date
    trust: Trust
    source: Citation


class TcoNodePower(TcoPower):
    """One node's maximum input power: ``gpus`` is the node it describes (a pool of other nodes scales it per GPU)."""

    gpus: int = Field(ge=1)


class Tco(CatalogModel):
    server: dict[str, TcoNodePrice]
    fabricPerNode: TcoFabricPrice
    nodePowerKw: dict[str, TcoNodePower]
    hostPowerKw: TcoNodePower
    loadFraction: TcoFactor
    idleFraction: TcoFactor
    lifeYears: TcoFactor
    pue: TcoFactor
    electricityUsdPerKwh: TcoFactor
    colocationUsdPerKwMonth: TcoFactor
    kwPerRack: TcoFactor
    supportFractionPerYear: TcoFactor
    nodesPerFte: TcoFactor
    usdPerFteYear: TcoFactor
    storageUsdPerTb: TcoFactor
    licenceUsdPerGpuYear: TcoFactor
