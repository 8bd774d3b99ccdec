"""Workload sizing: from a declared workload to GPUs, memory, time, storage and network.

Pure functions over the catalog and the spec's workload models; no I/O and no prices (pricing and
TCO are alicerce/plan/pricing.py and tco.py). Every figure carries its formula, inputs and, for the
throughput and roofline models, each factor with its source (``Figure``), so `alicerce plan
--explain` can show the arithmetic. Problems are typed :class:`Issue` values with a plan check id.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from alicerce.catalog.models import Gpu, Mig, MigProfile, Sizing
from alicerce.plan.figures import Factor, Figure, deadline_text, rounded
from alicerce.plan.queueing import fewest_replicas, share_of_slow_steps, share_past_first_token
from alicerce.plan.roofline import (
    Replica,
    ReplicaPerformance,
    ServedShape,
    efficiencies,
    gpu_hardware,
    kv_batch_limit,
    kv_tokens_admitted,
    prefill_seconds,
    replica_performance,
    step_seconds,
    token_interval_seconds,
)
from alicerce.plan.throughput import (
    ExpertWeights,
    TrainingJob,
    attention_kernel_slowdown,
    batch_sequences,
    first_stage_in_flight,
    microbatch_group,
    moe_routing_ratio,
    routed_layers,
    training_mfu,
)
from alicerce.spec.heads import legal_degrees
from alicerce.spec.models import LatentAttention, MigSharing, SlidingWindowAttention, TimeSlicing, Traffic, Workload
from alicerce.spec.models.workloads import DEFAULT_SEQUENCE, adapters_count_fix, adapters_uncounted

GIB = 2**30
DAY = 86400.0
NODE_GPUS = 8
TP_DEGREES = (1, 2, 4, 8)


def node_degrees(node_gpus: int, allowed: tuple[int, ...] = TP_DEGREES) -> tuple[int, ...]:
    """The tensor-parallel degrees a training run can use on nodes of ``node_gpus``: those a node holds whole groups of.
    Ranks fill nodes in order, so on a 10-GPU server TP 8 put two groups of every five across two nodes, their
    all-reduces over the fabric, costed at the node's link (review sizreview12 F7). ``allowed``: the degrees the model's
    heads allow (heads.legal_degrees: a 28-head model at TP 8 does not start; review sizreview17 F7)."""
    return tuple(d for d in allowed if d <= node_gpus and node_gpus % d == 0)


@dataclass(frozen=True)
class Issue:
    """A problem the sizing found, under a plan check id (alicerce/plan/findings.py)."""

    check: str
    message: str
    field: str | None = None  # the workload's field it is about, where one declared field is (the plan locates it: PL322)


@dataclass(frozen=True)
class Placement:
    """Where a workload is sized for: its pool (if any), the accelerator and the pool's network."""

    pool: str | None
    gpu: Gpu | None
    gpus_per_node: int
    network_gbps_per_gpu: float | None = None  # what the pool's fabric (or plain TCP) gives each GPU
    capacity_gpus: int | None = None  # GPUs at the pool's max size
    # the GPU the pool's nodes have, where a pinned accelerator differs (PL302): what a training stack starts on
    pool_gpu: Gpu | None = None
    # how the pool's GPUs are shared (nodePools[].sharing), where they are: a replica runs in one MIG instance or one
    # time slice, whatever whole GPUs would do (review sizreview35 D-D)
    shared: MigSharing | TimeSlicing | None = None


@dataclass(frozen=True)
class WorkloadPlan:
    name: str
    kind: str
    team: str
    pool: str | None
    accelerator: str | None
    gpus: int | None
    min_gpus: int | None
    model_state_gib: float | None
    memory_per_gpu_gib: float | None
    gpu_hours: float | None
    wall_clock_days: float | None
    checkpoint_gib: float | None
    checkpoint_write_gbps: float | None
    dataset_read_gbps: float | None
    network_gbps_per_gpu: float | None
    rdma_required: bool | None
    replicas: int | None
    tokens_per_second_per_replica: float | None
    cost_usd: float | None = None  # filled by the platform plan from the pool's price (training: whole run; serving: a month)
    # what showback (the cost rules, `alicerce costs`) will charge the same GPU-hours at the pool's billed rate (on
    # Capacity Blocks at its own blocks' rate, billed_usd_per_gpu_hour): on an owned pool the month over installed
    # GPU-hours, so less than cost_usd, which also carries the pool's idle time
    showback_usd: float | None = None
    # what the cost rules charge one GPU-hour it holds where that is its own, not its pool's: on Capacity Blocks, the
    # blocks its own schedule buys over the GPU-hours it holds (alicerce.plan.platform; review sizreview19 F3)
    billed_usd_per_gpu_hour: float | None = None
    mfu: float | None = None
    gpus_per_replica: int | None = None
    tensor_parallel: int | None = None
    sharing: str | None = None
    # ``sharing`` is the pool's own (its GPUs are cut so already: nodePools[].sharing), not a recommendation
    sharing_declared: bool = False
    # the physical GPU each of ``gpus`` is: on a shared pool a MIG instance its compute slices' share, a time slice 1 /
    # the slices a GPU (alicerce.plan.pools.gpu_equivalents, what the cost rules weigh a pod by); 1 on whole GPUs.
    # ``gpus`` and ``gpu_hours`` count the parts a replica is scheduled on; the report and JSON print whole-GPU hours, so
    # that showback is their hours at the billed rate (review sizreview53 D4: 16 slices printed 11,680 GPU-h, showback
    # charged 2,920)
    gpu_share: float = 1.0
    # a service its pool cannot hold (PL305): cost and showback are the pool's month, its GPU-hours the sized ones
    cost_capped: bool = False
    # training: the GPUs its count steps in (TP x CP x PP and the expert grid), the most of a pool it can run on being a
    # multiple of them (review sizreview60 D3: "pin 40 or fewer" for a run of 32-GPU groups)
    group_gpus: int = 1
    # training planned wider than its pool at max size: its wall-clock days sized on the pool's fastest count a layout
    # runs it on (PL304, PL306, PL337, PL338 and the KPIs read them: platform.wall_clock_on_pool); None where it fits
    # the pool or no layout runs it there
    pool_days: float | None = None
    pool_gpus: int | None = None  # the count pool_days is sized on
    cpu_cores: int | None = None
    deadline_days: float | None = None
    tokens_per_month: float | None = None  # serving at its mean rate (the peak where none is declared): input + output tokens
    runs_per_quarter: float | None = None  # training: the declared schedule (None: one run a month)
    # training, data preparation: hours of each wall-clock day the run holds its GPUs; batch inference: hours it runs a day
    hours_per_day: float = 24.0
    fits: dict[str, int | None] = field(default_factory=dict)  # candidate GPU -> smallest count that fits
    figures: tuple[Figure, ...] = ()
    notes: tuple[str, ...] = ()
    issues: tuple[Issue, ...] = ()

    JSON_FIELDS = (
        "name", "kind", "accelerator", "gpus", "min_gpus", "model_state_gib", "memory_per_gpu_gib", "gpu_hours",
        "wall_clock_days", "cost_usd", "showback_usd", "checkpoint_gib", "checkpoint_write_gbps", "dataset_read_gbps",
        "network_gbps_per_gpu", "rdma_required", "replicas", "tokens_per_second_per_replica", "mfu",
    )  # fmt: skip

    @property
    def runnable(self) -> bool:
        """Whether the plan could size it at all (GPU workloads: a GPU count; data prep: cores)."""
        return self.gpus is not None or self.cpu_cores is not None

    @property
    def whole_gpu_hours(self) -> float | None:
        """GPU-hours of whole GPUs: a shared pool's parts weighed by the GPU each is (what cost and showback charge)."""
        return None if self.gpu_hours is None else self.gpu_hours * self.gpu_share

    def to_json(self, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {name: rounded(getattr(self, name)) for name in self.JSON_FIELDS}
        out.update(
            gpu_hours=rounded(self.whole_gpu_hours), gpu_share=rounded(self.gpu_share), cost_capped=self.cost_capped,
            team=self.team, pool=self.pool,
            gpus_per_replica=self.gpus_per_replica, tensor_parallel=self.tensor_parallel, sharing=self.sharing,
            cpu_cores=self.cpu_cores, fits=self.fits, notes=list(self.notes),
        )  # fmt: skip
        if explain:
            out["figures"] = [f.to_json() for f in self.figures]
        return out


# --------------------------------------------------------------------------------------------
# building blocks (each exact arithmetic, tested on its own)


def model_state_bytes(parameters: float, optimizer: str, sizing: Sizing) -> float:
    """Weights + gradients + optimizer state in mixed-precision training (ZeRO's 16 bytes/param for Adam)."""
    per_param: float = getattr(sizing.bytesPerParameter, optimizer).value
    return parameters * per_param


# The share of a step a plain 1F1B bubble may idle before PL330 asks for the schedule: alicerce's default, not a
# published threshold. Narayanan et al. 2021 (arXiv 2104.04473, Sec. 2.2.1) keep the bubble small by running many more
# microbatches than stages (m >> p); at m = 4p the plain schedule idles (p - 1) / (5p - 1) of a step, just under a
# fifth (17.9% at p = 8: review sizreview54 D7).
PLAIN_BUBBLE_WARN = 0.2


# whether a layout at the run's GPUs can start: (stages, ZeRO stage) -> its state, one sequence's activations fully
# recomputed and a sequence of the batch on every data-parallel rank fit (PL330's stage advice; review sizreview59 D1, D4)
StageFits = Callable[[int, int], bool]


def _no_pipeline(w: Workload, fits: StageFits) -> str:
    """The advice to drop the pipeline where the GPUs can run without one, with zeroStage 3 where only it holds the
    state then (review sizreview57 G3: taken at ZeRO-1 it met PL303); "" where they cannot (review sizreview59 D1: with
    fewer microbatches than stages no pipeline leaves each rank less than a sequence, a run that cannot start)."""
    declared = zero_stage(w)
    if fits(1, declared):
        return "no pipeline at these GPUs"
    if declared < 3 and fits(1, 3):
        return "no pipeline at these GPUs (at zeroStage 3, which its state needs without one)"
    return ""


def _plain_bubble_fixes(
    w: Workload, pipeline: int, microbatches: float, tokens_a_microbatch_round: float, group: int, *, fits: StageFits
) -> str:
    """What brings a plain 1F1B bubble under :data:`PLAIN_BUBBLE_WARN` at the same GPUs: a batch of at least
    (1 - w) / w x (p - 1) microbatches a pipeline, or fewer stages. At p' stages each pipeline runs m' = k p' microbatches
    (k = m / p: the data-parallel ranks grow as the stages shrink), idling (p' - 1) / ((k + 1) p' - 1), within w for p' <=
    (1 - w) / (1 - w (k + 1)) (review sizreview56 D1: "fewer stages do not help" was wrong; D2: fewer GPUs miss a deadline
    the planner sized them for). ``tokens_a_microbatch_round``: the tokens one microbatch a pipeline adds to the batch;
    at a pinned count (``w.gpus``) only a stage count whose TP x CP x PP ``group`` divides it (AL375; review sizreview57
    D1), and only one that ``fits`` the run at these GPUs (review sizreview59 D4: 5 stages of a 70B at TP 1 kept 78.2 GiB)."""
    limit = PLAIN_BUBBLE_WARN  # the docstring's w
    needed = _within_a_fifth(pipeline, 1)
    batch = f"a globalBatchTokens of at least {needed * tokens_a_microbatch_round:,.0f} ({needed} microbatches a pipeline)"
    k = microbatches / pipeline
    # a hair under the exact bound: at k = 3.2, 0.8 / 0.16 is 5 stages idling exactly a fifth, 4.999... in floats
    # (review sizreview57 G1)
    most = math.floor((1 - limit) / (1 - limit * (k + 1)) + 1e-9) if limit * (k + 1) < 1 else pipeline - 1
    declared = zero_stage(w)
    viable = (p for p in range(min(most, pipeline - 1), 1, -1) if (not w.gpus or w.gpus % (group * p) == 0) and fits(p, declared))
    stages = next(viable, None)
    # a stage held gathered is ZeRO-1's state, which zeroStage 1 sizes the recomputation of (PL355; review sizreview60 G1)
    gathered = " with zeroStage 1" if declared >= 2 else ""
    fewer = f"at most {stages} stages at these GPUs{gathered}" if stages is not None else _no_pipeline(w, fits)
    return f"{batch}, or {fewer}" if fewer else batch


def _within_a_fifth(pipeline: int, other: float) -> int:
    """The fewest of one factor of v x m (chunks a stage, or microbatches a pipeline) that, with ``other`` the other,
    bring a bubble of (p - 1) / (v m + p - 1) within :data:`PLAIN_BUBBLE_WARN`: (1 - w) / w x (p - 1) / other."""
    return math.ceil((1 - PLAIN_BUBBLE_WARN) / PLAIN_BUBBLE_WARN * (pipeline - 1) / other - 1e-9)


def _interleaved_bubble_fixes(w: Workload, pipeline: int, virtual: int, microbatches: float, tokens_a_microbatch_round: float) -> str:
    """What brings an interleaved bubble, (p - 1) / (v m + p - 1), under :data:`PLAIN_BUBBLE_WARN` at the same GPUs: v
    chunks a stage of at least (1 - w) / w x (p - 1) / m, where the layers, the embedding and the loss give the p x v
    chunks a layer each (AL375), or a batch of at least (1 - w) / w x (p - 1) / v microbatches a pipeline."""
    assert w.model is not None
    chunks, needed = _within_a_fifth(pipeline, microbatches), _within_a_fifth(pipeline, virtual)
    batch = f"a globalBatchTokens of at least {needed * tokens_a_microbatch_round:,.0f} ({needed} microbatches a pipeline)"
    if chunks > virtual and (not w.model.layers or pipeline * chunks <= w.model.layers + 2):
        return f"pipelineVirtualStages {chunks}, or {batch}"
    return batch


def _bubble_idle(run: _Run) -> float | None:
    """What the run's pipeline bubble factor idles of a step; None without one (no pipeline, or a declared MFU, which
    carries no factors)."""
    bubble = next((f.value for f in run.factors if f.name == "pipeline bubble"), None)
    return None if bubble is None else 1 - bubble


def checkpoint_bytes(w: Workload, sizing: Sizing) -> float:
    """Bytes a trained parameter takes in a checkpoint: the weights and the optimizer state, no gradients. Mixed
    precision saves its 16-bit weights beside the fp32 master copy (AdamW: 2 + 12); an fp32 run has no 16-bit copy,
    its fp32 weights are the master (AdamW: 4 + 8 = 12; review sizreview53 D6: 14 sized its checkpoints 17% high)."""
    per = sizing.bytesPerParameter
    saved: float = getattr(per.checkpoint, w.optimizer).value
    return saved - per.weights.value if w.precision == "fp32" else saved


def sharded_bytes(total: float, ways: int) -> float:
    """ZeRO stage 3 / FSDP: every byte of model state lives on one of ``ways`` data-parallel GPUs."""
    return total / ways


def usable_memory(gpu: Gpu, sizing: Sizing) -> float:
    """GPU memory in bytes left after CUDA context, NCCL buffers and fragmentation.

    Datacenter GPUs marketed as "80GB" carry 80 GiB, so the marketed figure is read as GiB.
    """
    return gpu.memory_bytes * (1 - sizing.memoryReserveFraction.value)


def shape(parameters: float, layers: int | None, hidden: int | None, sizing: Sizing) -> tuple[int, int]:
    """(layers, hidden) of a dense transformer: given, or derived from params ~ 12 L h^2."""
    if layers and hidden:
        return layers, hidden
    ratio = sizing.hiddenPerLayer.value
    if hidden:
        return max(1, round(parameters / (12 * hidden**2))), hidden
    if layers:
        return layers, max(64, round(math.sqrt(parameters / (12 * layers))))
    derived_layers = max(1, round((parameters / (12 * ratio**2)) ** (1 / 3)))
    return derived_layers, max(64, round(ratio * derived_layers))


def _ceil_to(value: float, step: int) -> int:
    return max(step, math.ceil(value / step) * step)


# --------------------------------------------------------------------------------------------
# training and fine-tuning


@dataclass(frozen=True)
class TrainingMemory:
    state: float  # bytes of model state (whole model; every expert of a MoE is resident)
    activations: float  # bytes per GPU at tensor parallel 1 with full recomputation
    activations_no_recompute: float
    checkpoint: float
    trainable: float  # parameters with gradients
    unsplit: float = 0.0  # of activations_no_recompute, the bytes tensor parallelism leaves whole (no sequence parallelism)
    unsplit_recompute: float = 0.0  # of activations, the same under full recomputation
    weights: float = 0.0  # of state, the 16-bit weights (frozen base included): ZeRO stages 0-2 keep them whole per replica
    gradients: float = 0.0  # of state, the 16-bit gradients: ZeRO stages 0-1 keep them whole per replica
    fp32_gradients: float = 0.0  # what stages 0-1 keep beyond them: the gradients accumulated in fp32
    fp32_main_gradients: float = 0.0  # fp16 at stages 0-1: the optimizer's fp32 copy of them, sharded at stage 1
    # a MoE's routed experts' share of the parameters, and the declared expert-parallel group that spreads them: what
    # a replica keeps whole of them (below ZeRO-3) is 1 / EP of them a GPU (Megatron-Core expert_model_parallel_size;
    # DeepSeek-V3 ran EP 64, ZeRO-1, no TP: arXiv 2412.19437 Sec. 3.2; every expert counted whole on each GPU forced
    # TP 8 on such layouts: review sizreview10 F12)
    routed_share: float = 0.0
    expert_parallel: int = 1
    # ZeRO-3 (FSDP) gathers each layer whole for its forward and backward: the layer it computes and the one it
    # prefetches, 16-bit; in backward the layer's 16-bit gradients and, reducing in fp32, the fp32 copy its reduce-scatter
    # takes in (torch.distributed.fsdp FSDP2 foreach_reduce: reduce_scatter_input in reduce_dtype, the unsharded
    # gradients of the unit). Bytes at TP 1; the plan filled a GPU to 71.7 of 72 GiB without them (review sizreview10 F4)
    working_set: float = 0.0
    working_routed: float = 0.0  # of a layer's working set, its routed experts' at EP 1 (what the expert group spreads)
    experts: int = 0  # a MoE's routed experts, where declared
    expert_parallel_declared: bool = False
    # the expert layers' own tensor-parallel degree (workloads[].expertTensorParallel, Megatron-Core
    # --expert-tensor-parallel-size; MoE Parallel Folding, megatron/core/transformer/moe/README.md): None is Megatron-Core's
    # default, the attention's degree. The expert grid is it x EP x PP, folded over the TP x CP x DP GPUs of a stage, so
    # Megatron-Bridge's Qwen3-235B (TP 2, PP 8, EP 32, expert TP 1) runs on 256 GPUs, not 512 (review sizreview20 F11)
    expert_tensor_parallel: int | None = None
    tp_degrees: tuple[int, ...] = TP_DEGREES  # the degrees the model's heads allow (heads.legal_degrees)
    # of activations and activations_no_recompute, what no pipeline schedule holds more of: the loss's fp32 logits of one
    # sequence (split over TP) and, under recomputation, the one layer recomputed at a time (its part tensor parallelism
    # splits, and the part it leaves whole without sequence parallelism)
    logits: float = 0.0
    recompute_working: float = 0.0
    recompute_working_unsplit: float = 0.0
    # the pipeline whose first stage holds more than one sequence's activations under the interleaved schedule
    # (throughput.first_stage_in_flight; review sizreview20 F4): stages, virtual stages, context-parallel degree and the
    # global batch's sequences the stack splits (throughput.batch_sequences), whose share a rank is its microbatches
    pipeline: int = 1
    virtual_stages: int = 1
    context: int = 1
    sequences: float = 0.0

    def in_flight(self, tp: int, gpus: int | None = None) -> float:
        """Sequences' worth of every layer's activations the first stage holds at ``gpus`` GPUs of tensor-parallel degree
        ``tp`` (throughput.first_stage_in_flight, at the microbatch group the bubble's schedule runs): 1 for 1F1B, e.g.
        1 + 15 / 128 = 1.117 for Llama 3.1 405B's PP 16 x v 8 at 16 microbatches. ``gpus`` None: the count is not chosen
        yet, the default group of p (no cap)."""
        ranks = gpus // (tp * self.context * self.pipeline) if gpus else 0
        m = self.sequences / ranks if ranks and self.sequences else None
        return first_stage_in_flight(self.pipeline, self.virtual_stages, m)

    def expert_tp(self, tp: int) -> int:
        """The expert layers' tensor-parallel degree at attention degree ``tp``: the declared one, else ``tp``."""
        return self.expert_tensor_parallel or tp

    def expert_grid(self, tp: int, pipeline: int = 1) -> int:
        """GPUs of one whole expert grid at attention degree ``tp``: expert TP x EP x PP (Megatron-Core
        initialize_model_parallel: the world size must divide by expert_tensor_parallel_size x expert_model_parallel_size
        x pipeline_model_parallel_size; with expert TP = TP, the grid EP x TP x PP)."""
        return self.expert_tp(tp) * self.expert_parallel * pipeline

    def expert_spread(self, ranks: int | None = None) -> int:
        """The expert-parallel group that spreads the routed experts over ``ranks`` = GPUs / (TP x PP), the data-parallel
        x context-parallel ranks: the declared group, else expert_parallel_degree over them (the network figure reads the
        same); where the ranks are not known yet (the fewest GPUs that hold the run), the widest, every expert its own."""
        if self.expert_parallel_declared:
            return self.expert_parallel
        return expert_parallel_degree(None, self.experts, ranks or self.experts or 1)

    def working_at(self, zero_stage: int, tp: int, ranks: int | None = None) -> float:
        """Bytes a GPU holds beyond its shard of the state while ZeRO ``zero_stage`` runs a layer, at tensor parallel ``tp``
        over ``ranks`` = GPUs / (TP x PP): a layer's routed experts spread over the expert-parallel group the network figure
        reads too (expert_spread)."""
        if zero_stage < 3:
            return 0.0
        return self.working_set / max(1, tp) + self.working_routed / self.expert_spread(ranks) / max(1, self.expert_tp(tp))

    def state_at(self, zero_stage: int) -> float:
        """Bytes of model state in all at ``zero_stage``: stages 0-1 keep the gradients they all-reduce in fp32 (Megatron's
        bf16 default, accumulate_allreduce_grads_in_fp32; its distributed optimizer: 6 + 12 / d bytes a parameter, not
        4 + 12 / d: Megatron-LM docs/source/api-guide/dist_optimizer.md; review sizreview8 F1), and an fp16 run's
        optimizer an fp32 copy of its fp16 ones (the same table: 20 bytes, 4 + 16 / d distributed; review sizreview9 F3)."""
        fp32 = self.fp32_gradients + self.fp32_main_gradients if zero_stage <= 1 else 0.0
        return self.state + fp32

    def state_per_gpu(self, gpus: int, model_parallel: int = 1, zero_stage: int = 3, tp: int | None = None) -> float:
        """Model-state bytes on one GPU: what ZeRO ``zero_stage`` shards over all ``gpus`` (the data-parallel ranks of
        each model-parallel shard), the rest split over the ``model_parallel`` (tensor x pipeline) GPUs of one replica
        only (Rajbhandari et al. 2020, Sec. 5.1: P_os keeps 2 + 2 bytes a parameter, P_os+g 2, P_os+g+p none), its
        routed experts also over the expert-parallel group (and over the expert layers' own tensor-parallel degree in
        place of ``tp``, the attention's, where one is declared)."""
        kept, group = self.unsharded(zero_stage), max(1, model_parallel)
        # the expert grid, EP x TP x PP, must divide the GPUs (Megatron-Core initialize_model_parallel); a count it does
        # not divide spreads no experts (a Mixtral at EP 8 "fit" 8 GPUs at 72 GiB where its state alone needs 98:
        # review sizreview11 F1). An undeclared group spreads them too, as wide as the count's ranks allow: kept whole
        # below ZeRO-3, a Qwen3-235B-like run at ZeRO-1 held 56.6 GiB a GPU where the network figure spread them over 32
        # (review sizreview17 F8)
        grid = self.expert_grid(tp, group // tp) if tp else self.expert_parallel * group
        spread = self.expert_spread(gpus // group) if gpus % grid == 0 else 1
        return self.held_whole(zero_stage, spread, tp) / group + (self.state_at(zero_stage) - kept) / max(1, gpus)

    def held_whole(self, zero_stage: int, spread: int | None = None, tp: int | None = None) -> float:
        """Of what ZeRO ``zero_stage`` leaves whole on a replica, what one model-parallel shard of it holds before the
        tensor and pipeline split: the routed experts 1 / EP of theirs (``spread``, the declared group by default, none
        where undeclared), x ``tp`` / expert TP where the expert layers declare their own degree (the caller splits it
        all by ``tp``)."""
        ep = self.expert_parallel if spread is None else spread
        folded = tp / self.expert_tp(tp) if tp else 1.0
        return self.unsharded(zero_stage) * (1 - self.routed_share + self.routed_share / ep * folded)

    def unsharded(self, zero_stage: int) -> float:
        """Bytes of model state ZeRO ``zero_stage`` leaves whole on each data-parallel replica."""
        if zero_stage == 0:
            return self.state_at(0)
        whole = {1: self.weights + self.gradients + self.fp32_gradients, 2: self.weights}.get(zero_stage, 0.0)
        return whole

    def activations_at(self, tp: int, recomputed: float = 0.0, gpus: int | None = None) -> float:
        """Activation bytes per GPU at tensor parallel ``tp`` with a share ``recomputed`` of the layers recomputed: the
        split part over ``tp``, the unsplit part whole on every GPU of the group (Korthikanti et al. 2022, Table 2); the
        layers' part x the sequences the first pipeline stage holds in flight at ``gpus`` GPUs (in_flight), the logits and
        the recomputed layer once."""
        kept = self.unsplit + (self.activations_no_recompute - self.unsplit) / tp
        full = self.unsplit_recompute + (self.activations - self.unsplit_recompute) / tp
        once = (self.logits + recomputed * self.recompute_working) / tp + recomputed * self.recompute_working_unsplit
        layers = (1 - recomputed) * kept + recomputed * full - once
        return self.in_flight(tp, gpus) * layers + once


def embedding_matrices(w: Workload) -> int:
    """The vocabulary x hidden matrices a model holds: the input embedding and the output head, one where they are tied
    (review sizreview26 N2: counted twice, the inferred FFN of Gemma-2B came out narrow and its all-linear adapters 21%
    short, r x vocabulary)."""
    assert w.model is not None
    return 1 if w.model.tied_embeddings else 2


def vocabulary_of(w: Workload, sizing: Sizing) -> float:
    """The logits' width: the declared vocabulary (0: no language-model head), else Llama 3's (review sizreview9 F17)."""
    assert w.model is not None
    return sizing.vocabularyDefault.value if w.model.vocabulary is None else float(w.model.vocabulary)


@dataclass(frozen=True)
class AdapterCount:
    """A LoRA / QLoRA run's trainable adapter parameters and how they were counted (the --explain figure)."""

    parameters: float
    rank: int
    targets: str
    counted: bool  # False: the spec gives no shape to count on, and the adapters are loraTrainableFraction of the base
    why: str  # what was counted, or why the fraction stands
    inputs: dict[str, Any] = field(default_factory=dict)
    expert_width: float | None = None  # a MoE's routed experts' FFN width as the parameters give it, unrounded


def adapter_parameters(w: Workload, sizing: Sizing) -> AdapterCount:
    """The adapters' parameters: r x (in + out) per adapted matrix per layer (LoRA's A is r x in and B out x r: Hu et
    al. 2021, arXiv 2106.09685 section 4.1), on the declared shape (review sizreview23 G2: a fixed 1% of the base was
    3.4x r = 16 on Llama-3-70B). q and o map hidden to the query width (heads x headDim) and back, k and v hidden to
    the KV width (kvHeads x headDim); all-linear adds the FFN's gate, up and down (hidden to the FFN width and back),
    the width derived from the parameters the attention and the embedding and head (one if tiedEmbeddings) leave (3 x hidden x width a
    layer: a gated FFN). A MoE adapts every routed expert's three matrices (transformers 4.x Mixtral / Qwen-MoE
    modelling code: one nn.Linear each, which PEFT's all-linear matches), an expert's width from the routed share of
    the parameters; its shared experts and dense layers' FFNs count as one FFN a layer of the width the remainder
    gives. Not counted: the router (r x (hidden + experts) a layer, under 1% of them) and the output head, which
    all-linear leaves out. MLA's attention is its five projections (_mla_projections). Without layers and hiddenSize,
    or for a MoE on all-linear without its routed experts declared, the adapters are loraTrainableFraction of the base
    (PL348 says how far short that may be)."""
    assert w.model is not None
    model = w.model
    n = float(model.parameters)
    rank = w.adapter.rank if w.adapter is not None and w.adapter.rank is not None else int(sizing.loraRankDefault.value)
    targets = w.adapter.targets if w.adapter is not None else "all-linear"
    fraction = sizing.loraTrainableFraction.value
    experts = model.experts
    moe = model.architecture == "moe"
    missing = adapters_uncounted(w)
    if missing is not None:
        return AdapterCount(n * fraction, rank, targets, False, f"loraTrainableFraction {fraction:g} x parameters: {missing}",
                            {"parameters": n, "fraction": fraction})  # fmt: skip
    assert model.layers is not None and model.hidden_size is not None
    layers, hidden = model.layers, model.hidden_size
    head = model.head_dim or int(sizing.inference.headDimDefault.value)
    query = attention_heads(w, hidden, sizing) * head
    inputs: dict[str, Any] = {"rank": rank, "targets": targets, "layers": layers, "hidden": hidden}
    if isinstance(model.attention, LatentAttention):
        matrices = _mla_projections(model.attention, hidden, attention_heads(w, hidden, sizing), head)
        inputs |= {"query width": int(query), "KV latent": model.attention.kv_lora_rank,
                   "q latent (assumed)": 3 * model.attention.kv_lora_rank}  # fmt: skip
        what = "MLA's q down, q up, KV down, KV up and o"
    else:
        kv = (model.kv_heads or int(sizing.inference.kvHeadsDefault.value)) * head
        matrices = [(hidden, query), (query, hidden), (hidden, kv), (hidden, kv)]  # q, o, k, v
        inputs |= {"query width": int(query), "KV width": kv}
        what = "q, k, v, o"
    per_layer = layers * sum(a + b for a, b in matrices)
    if targets == "all-linear":
        embeddings = embedding_matrices(w) * vocabulary_of(w, sizing) * hidden
        attention_weights = layers * sum(a * b for a, b in matrices)
        if moe:
            assert experts is not None
            moe_layers = experts.layers or layers
            routed = n - shared_parameters(w)
            expert_width = routed / (experts.total * moe_layers * 3 * hidden)
            rest = max(0.0, shared_parameters(w) - embeddings - attention_weights)
            width = rest / (layers * 3 * hidden)
            per_layer += experts.total * moe_layers * 3 * (hidden + expert_width)
            # the whole width the parameters hold: the share of the router and norms they carry is no column (Qwen3-30B-A3B
            # infers 768.6 for its 768, DeepSeek-V3 2,049.7 for 2,048; review sizreview28 N1: round() gave 769)
            inputs |= {"expert FFN width": math.floor(expert_width), "routed experts": experts.total, "MoE layers": moe_layers}
            what += f", gate, up, down of each of {experts.total} routed experts"
        else:
            width = max(0.0, (n - embeddings - attention_weights) / (layers * 3 * hidden))
        # a remainder under an eighth of the hidden size is norms, the router and the parameters' rounding, not an FFN
        # (the narrowest shared expert published, DeepSeek-V3's 2,048 on 7,168, is 2/7 of it)
        if width >= hidden / 8:
            per_layer += layers * 3 * (hidden + width)
            inputs["FFN width"] = round(width)
            what += ", the FFN's gate, up, down" if not moe else " and the shared FFN's"
    count = rank * per_layer
    inputs["share of the base"] = f"{count / n:.3%}"
    routed_width = expert_width if moe and targets == "all-linear" else None
    return AdapterCount(count, rank, targets, True, f"rank x (in + out) of {what} in every layer", inputs, routed_width)


def _adapters_estimated(w: Workload, adapters: AdapterCount) -> Issue:
    """PL348: adapters taken as a share of the base, and how far short of the default rank on all linear layers that can
    be: on a MoE the routed experts hold nearly all of them (review sizreview26 D2; by hand, r = 64 on all linear
    layers: Qwen3-30B-A3B 3.39B, 11% of its 30.5B, DeepSeek-V3 26.78B, 4.0%, with its 58 MoE layers declared
    (experts.layers; 27.84B, 4.1%, where every layer is taken as MoE, the default); a dense Llama-2-7B 160M, 2.4%)."""
    assert w.model is not None
    share = adapters.parameters / float(w.model.parameters)
    if w.model.architecture == "moe":
        far = ("on a MoE the routed experts' gate, up and down hold nearly all of them: r = 64 on all linear layers is "
               "4.0% of DeepSeek-V3 (its 58 MoE layers declared) and 11% of Qwen3-30B-A3B, 4 to 11 times this")  # fmt: skip
    else:
        far = "r = 64 on all linear layers is 2.4% of Llama-2-7B, 2.4 times this"
    fix = adapters_count_fix(w)  # validate's AL393 gives the same (review sizreview31 N2)
    return Issue("PL348", f"the LoRA adapters are taken as {share:.0%} of the base ({adapters.parameters / 1e9:.3g}B: "
                 f"{adapters.why.split(': ', 1)[-1]}), and their optimizer state with them; {far}: the memory and "
                 f"GPUs may be short; {fix}", "model")  # fmt: skip


def _mla_projections(attention: LatentAttention, hidden: int, heads: float, head: int) -> list[tuple[float, float]]:
    """MLA's linear layers a layer, (in, out) each (DeepSeek-V2, arXiv 2405.04434 section 2.1.2; the
    DeepseekV3Attention of transformers 4.x: q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj, nn.Linear each,
    which PEFT's all-linear matches): q down to its latent and up to heads x (headDim + ropeHeadDim); KV down to the
    latent and the shared RoPE key; KV up to heads x (headDim key + headDim value); o from heads x headDim back. The
    spec declares no q latent: taken as 3 x kvLoraRank, DeepSeek-V2's and V3's 1,536 on 512 (their config.json
    q_lora_rank, kv_lora_rank), the wider guess: a model without q compression (V2-Lite) has 2 x 1,536 fewer a layer,
    3% of V3's attention adapters. The key's nope and the value take headDim (V3: 128 each)."""
    q_latent = 3 * attention.kv_lora_rank
    return [
        (hidden, q_latent),
        (q_latent, heads * (head + attention.rope_head_dim)),
        (hidden, attention.kv_lora_rank + attention.rope_head_dim),
        (attention.kv_lora_rank, heads * 2 * head),
        (heads * head, hidden),
    ]


def training_memory(w: Workload, sizing: Sizing) -> TrainingMemory:
    assert w.model is not None
    n = float(w.model.parameters)
    layers, hidden = shape(n, w.model.layers, w.model.hidden_size, sizing)
    seq = w.sequence_length or DEFAULT_SEQUENCE
    act = sizing.activationBytes
    # context parallelism gives each GPU of the group a slice of the sequence, and of every activation with it
    shard = seq / (w.context_parallel or 1)
    # Korthikanti's bytes count 16-bit tensors (and 1-byte dropout masks): an fp32 run keeps twice them (review
    # sizreview8 F15: its memory came out half, and the plan skipped the recomputation or TP it needs)
    element = sizing.weightBytes["fp32"] / sizing.weightBytes["bf16"] if w.precision == "fp32" else 1.0
    per_layer_tokens = shard * hidden * element
    per_layer = act.noRecompute
    if w.flash_attention is False:
        # the attention scores, softmax and dropout mask of every head: 5 x heads x s^2 bytes a sequence, i.e.
        # 5 x heads x s / hidden per token x hidden (Korthikanti et al. 2022, Table 2)
        per_layer += act.attentionScores * attention_heads(w, hidden, sizing) * seq / hidden
    # without sequence parallelism the layer norms' and dropouts' share stays whole on each tensor-parallel GPU, and so
    # does each layer's input kept under full recomputation
    unsplit_layer = 0.0 if w.sequence_parallel is not False else act.unsplitWithoutSequenceParallel
    unsplit_input = 0.0 if w.sequence_parallel is not False else layers * per_layer_tokens * act.fullRecompute
    # the loss's fp32 logits of the sequence: split with the vocabulary over tensor parallelism, never recomputed
    vocabulary = vocabulary_of(w, sizing)
    logits = shard * vocabulary * act.logits
    batch = float(w.global_batch_tokens or sizing.defaultGlobalBatchTokens.value)
    with_recompute = layers * per_layer_tokens * act.fullRecompute + per_layer_tokens * per_layer + logits
    without = layers * per_layer_tokens * per_layer + logits
    if w.method in ("lora", "qlora"):
        trainable = adapter_parameters(w, sizing).parameters
        # an fp8 (fp4) run keeps its frozen base 16-bit and casts per GEMM, as it gathers it (review sizreview9 F13)
        frozen = n * max(sizing.bytesPerParameter.weights.value, sizing.weightBytes.get(w.precision, 2))
        if w.method == "qlora":
            # bitsandbytes quantises the linear layers only: the input embedding and the output head (untied: vocabulary x
            # hidden each) stay 16-bit (transformers' replace_with_bnb_linear, get_keys_to_not_convert; review sizreview8
            # F2: Llama 3 8B's 1.05B of them at 4 bits took its state 29% low)
            embeddings = min(n, embedding_matrices(w) * vocabulary * hidden)
            # ... at 16 bits (32 for an fp32 run) whatever the declared precision: bitsandbytes computes in 16 bits
            # (review sizreview10 F10: 1 B at fp8)
            kept = max(sizing.bytesPerParameter.weights.value, sizing.weightBytes.get(w.precision, 2))
            frozen = (n - embeddings) * sizing.qloraBaseBytes.value + embeddings * kept
        state = frozen + model_state_bytes(trainable, w.optimizer, sizing)
        checkpoint = trainable * checkpoint_bytes(w, sizing)
    else:
        trainable = n
        state = model_state_bytes(n, w.optimizer, sizing)
        checkpoint = n * checkpoint_bytes(w, sizing)
        frozen = 0.0
    per = sizing.bytesPerParameter
    # of the state, what each replica keeps whole below ZeRO-3: mixed precision's 16-bit weights and gradients, with
    # the gradients accumulated in fp32 at stages 0-1 (fp16 runs keep fp16 ones); an fp32 run has no 16-bit copy: its
    # fp32 weights and gradients, the same total (Megatron-LM dist_optimizer.md: fp32 param, fp32 grads 8 + 8/d;
    # review sizreview9 F2: the 16-bit split kept an fp32 run's state 24-47% low per GPU at stages 1-2)
    kept_weight, kept_gradient = per.weights.value, per.gradients.value
    if w.precision == "fp32":
        kept_weight = kept_gradient = sizing.weightBytes["fp32"]
    # ... unless the run reduces them in 16 bits (Megatron --grad-reduce-in-bf16: its gradient buffer is the
    # parameters' type, megatron/core/distributed/distributed_data_parallel.py; review sizreview11 F4) with the
    # distributed optimizer: at ZeRO-0 Megatron's optimizer copies every 16-bit gradient to a fresh fp32 one each step
    # (megatron/core/optimizer/optimizer.py Float16OptimizerWithFloat16Params _copy_model_grads_to_main_grads) beside
    # the 16-bit buffer, which persists: 4 bytes a parameter beyond it, not 2 (reviews sizreview12 F4, sizreview14 F9)
    mixed = w.precision not in ("fp16", "fp32")
    extra = 0.0
    if mixed and w.gradient_reduction != "16-bit":
        extra = per.fp32Gradients.value - per.gradients.value
    elif mixed and zero_stage(w) == 0:
        extra = per.fp32Gradients.value
    main = per.fp32Gradients.value if w.precision == "fp16" else 0.0
    experts = w.model.experts.total if w.model.architecture == "moe" and w.model.experts else 0
    moe_routed = (n - shared_parameters(w)) / n if experts else 0.0
    # an undeclared group spreads them too, as the count's ranks allow (TrainingMemory.expert_spread)
    routed = moe_routed if w.model.architecture == "moe" and (w.expert_parallel is None or w.expert_parallel > 1) else 0.0
    weights, gradients = frozen + trainable * kept_weight, trainable * kept_gradient
    reduced = trainable * sizing.weightBytes["fp32"] if reduces_in_fp32(w) and w.precision != "fp32" else 0.0
    layer = (2 * weights + gradients + reduced) / layers  # a layer's share of them
    return TrainingMemory(state, with_recompute, without, checkpoint, trainable, unsplit=layers * per_layer_tokens * unsplit_layer,
                          unsplit_recompute=unsplit_input + per_layer_tokens * unsplit_layer,
                          weights=weights, gradients=gradients, fp32_gradients=trainable * extra, fp32_main_gradients=trainable * main,
                          routed_share=routed, expert_parallel=w.expert_parallel or 1, working_set=layer * (1 - moe_routed),
                          working_routed=layer * moe_routed, experts=experts,
                          expert_parallel_declared=w.expert_parallel is not None,
                          expert_tensor_parallel=declared_expert_tp(w),
                          tp_degrees=training_degrees(w, sizing), logits=logits,
                          recompute_working=per_layer_tokens * (per_layer - unsplit_layer),
                          recompute_working_unsplit=per_layer_tokens * unsplit_layer,
                          pipeline=w.pipeline_parallel or 1, virtual_stages=w.pipeline_virtual_stages or 1,
                          context=w.context_parallel or 1, sequences=batch_sequences(batch, seq))  # fmt: skip


def declared_expert_tp(w: Workload) -> int | None:
    """The expert layers' own tensor-parallel degree, read with a declared expert group only; None: the attention's
    (Megatron-Core's default, TrainingMemory.expert_tp)."""
    return w.expert_tensor_parallel if w.expert_parallel is not None else None


def training_degrees(w: Workload, sizing: Sizing) -> tuple[int, ...]:
    """The tensor-parallel degrees a training run may take: the declared one (workloads[].tensorParallel: the layout a
    team runs, Llama 3.1 405B's TP 8 of arXiv 2407.21783 Table 4), else those the model's heads allow (issue 23: the
    calibration rows declare their published degree through the same field)."""
    assert w.model is not None
    if w.tensor_parallel is not None:
        return (w.tensor_parallel,)
    return legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=False)


def expert_parallel_degree(declared: int | None, experts: int, dp: int) -> int:
    """The expert-parallel group: the declared one (workloads[].expertParallel), else the widest the stack starts over
    ``dp`` ranks, GPUs / (TP x PP): a divisor of the experts (Megatron-Core megatron/core/transformer/moe/moe_layer.py
    BaseMoELayer: num_moe_experts % ep_size == 0) and of the ranks (megatron/core/parallel_state.py
    initialize_model_parallel, "Build expert rank generator": the world divides by expert-TP x EP x PP, expert TP being
    TP by default, and the expert grid has no context axis, so the group spans the data-parallel x context-parallel
    ranks: with CP 2 and 33 data-parallel ranks, 256 experts spread over gcd(256, 66) = 2, not 1; review sizreview17 F8),
    every expert on its own rank as far as both go: 256 experts over 53 ranks spread over none (min(256, 53) = 53 was a
    group Megatron refuses: review sizreview15 F3). Memory and the network read the same (review sizreview11 F8)."""
    return declared or max(1, math.gcd(experts or dp, dp))


def shared_parameters(w: Workload) -> float:
    """A MoE's parameters outside its routed experts (attention, embeddings, shared experts): the active ones less k
    routed experts' worth, an expert being (total - active) / (experts - k); every active one where the experts are not
    declared."""
    assert w.model is not None
    total = float(w.model.parameters)
    active = float(w.model.active_parameters or total)
    experts = w.model.experts
    if experts is None or experts.total <= experts.per_token:
        return active
    per_expert = max(0.0, total - active) / (experts.total - experts.per_token)
    return max(0.0, active - experts.per_token * per_expert)


def expert_weights(w: Workload) -> ExpertWeights | None:
    """A MoE's weights beside its active ones, as the throughput model reads them (QLoRA dequantises every expert a GPU
    holds: review sizreview22 F3); None for a dense model or experts not declared."""
    assert w.model is not None
    experts = w.model.experts
    if w.model.architecture != "moe" or experts is None:
        return None
    return ExpertWeights(float(w.model.parameters), shared_parameters(w), experts.total, w.expert_parallel, declared_expert_tp(w))


def reduces_in_fp32(w: Workload) -> bool:
    """Whether the run's data-parallel gradients cross the network in fp32. Stages 0-1 accumulate them in fp32 and
    reduce them so (Megatron-LM forces accumulate_allreduce_grads_in_fp32 for bf16 unless --grad-reduce-in-bf16,
    megatron/training/arguments.py; fp16 runs reduce fp16). At stages 2-3 the stack decides (workloads[].
    gradientReduction): torchtitan's FSDP2 reduces in training.mixed_precision_reduce, float32 by default (review
    sizreview9 F11: a quarter of the traffic was missing), the fine-tuning stacks most teams run in their 16-bit type
    (Hugging Face Trainer and accelerate FSDP MixedPrecision(reduce_dtype=dtype), DeepSpeed: review sizreview10 F6).
    Default: fp32 for training, 16-bit for fine-tuning."""
    if w.precision == "fp32":
        return True
    if zero_stage(w) <= 1 and w.gradient_reduction is None:
        return w.precision != "fp16"
    declared = w.gradient_reduction or ("fp32" if w.kind == "training" else "16-bit")
    return declared == "fp32"


def zero_stage(w: Workload) -> int:
    """The declared ZeRO stage; 3 (FSDP: every byte of model state sharded over every GPU) by default."""
    return 3 if w.zero_stage is None else w.zero_stage


def passes_stage(w: Workload, stage: int) -> int:
    """The ZeRO stage whose data-parallel passes a step of ``w`` at ``stage`` makes: the stage, but under a pipeline
    stages 2 and 3 move what 1 does, a gather and a reduction once a step. torchtitan, the stack that runs FSDP with
    pipeline parallelism, keeps a stage's weights gathered after the forward (parallelize.py: reshard_after_forward =
    not pp_enabled, "to avoid per-microbatch all-gathers"), and PyTorch's pipeline schedules keep them gathered through
    every backward and accumulate the gradients whole, reducing them once after the last micro-batch
    (torch.distributed.pipelining stage.py, backward_maybe_with_nosync: set_reshard_after_backward(False),
    set_requires_gradient_sync(False)); DeepSpeed's pipeline engine refuses stages 2 and 3 (runtime/pipe/engine.py:
    "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"). Charging ZeRO-3's two gathers every micro-batch
    under a pipeline raised PL321 / PL324 on ~100x the gather traffic (review sizreview49 D1). Memory still holds the
    declared stage (README, "Sizing from workloads")."""
    return held_stage(stage, w.pipeline_parallel or 1)


def held_stage(stage: int, pipeline: int) -> int:
    """The ZeRO stage a layout of ``pipeline`` stages holds and moves at a declared ``stage`` (passes_stage): 1 for
    stages 2 and 3 under a pipeline, whose stage is held gathered for the step; the stage itself without one."""
    return 1 if stage >= 2 and pipeline > 1 else stage


def _traffic_advice(pipeline: int, zero1: str = "zeroStage 1") -> str:
    """What cuts a dense run's data-parallel traffic (PL324): under a pipeline every ZeRO stage already moves it once a
    step, so only a smaller shard or fewer steps do (review sizreview50 D3: it advised zeroStage 1, which moved the same).
    ``zero1``: the ZeRO-1 advice, with the layout its state needs at these GPUs where it outgrows them alone
    (_zero1_advice; review sizreview58 G3: "zeroStage 1", taken alone, met PL303)."""
    if pipeline > 1:
        return ("under the pipeline every ZeRO stage moves them once a step: a wider tensorParallel or pipelineParallel (a "
                "smaller shard a GPU), a larger globalBatchTokens (fewer steps), fewer GPUs (a longer step each) or a "
                "faster fabric")  # fmt: skip
    return (f"ZeRO-3 and 2 move the weights or gradients every micro-batch, {zero1} once a step, and pipelineParallel "
            "splits them over its stages and holds a stage's weights gathered for the step (once a step at any stage)")  # fmt: skip


def _zero1_advice(w: Workload, mem: TrainingMemory, gpu: Gpu, sizing: Sizing, place: Placement, *, tp: int, gpus: int) -> str:
    """PL324's ZeRO-1 advice: where ZeRO-1 at these GPUs does not hold the run without a pipeline (its weights and fp32
    gradients whole on each rank), with the layouts that do, as PL303 would name them (a 405B at ZeRO-1:
    pipelineParallel 3), or that no one change does (review sizreview60 D4: a fallback was spliced in as a layout)."""
    usable, context = usable_memory(gpu, sizing), w.context_parallel or 1
    if zero_stage(w) <= 1 or mem.state_per_gpu(gpus, tp, 1, tp) + mem.activations_at(tp, 1.0, gpus) <= usable:
        return "zeroStage 1"
    assert w.model is not None
    heads = legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=False)
    fixes = _state_fixes(mem, usable, node_gpus=place.gpus_per_node, pipeline=1, zero_stage=1,
                         widest_tp=max(node_degrees(place.gpus_per_node, heads)), gpus=gpus, context=context,
                         layers=w.model.layers, most=place.capacity_gpus)  # fmt: skip
    layouts = " or ".join(f for f, field in fixes if field != "zeroStage")
    if not layouts:
        return "zeroStage 1 (whose state no one change of tensorParallel or pipelineParallel holds at these GPUs)"
    return f"zeroStage 1 (with {layouts}, which its state needs at these GPUs)"


def zero_label(w: Workload) -> str:
    """The stage as the network finding prints it: "ZeRO-3", or "ZeRO-3, moved once a step under the pipeline"."""
    declared = zero_stage(w)
    return f"ZeRO-{declared}" if passes_stage(w, declared) == declared else f"ZeRO-{declared}, moved once a step under the pipeline"


def attention_heads(w: Workload, hidden: int, sizing: Sizing) -> float:
    """Query heads a layer stores scores for: MLA's or the model's declared heads, else hidden / head dimension."""
    assert w.model is not None
    attention = w.model.attention
    if isinstance(attention, LatentAttention) and attention.heads is not None:
        return attention.heads
    if w.model.heads is not None:
        return w.model.heads
    return hidden / (w.model.head_dim or sizing.inference.headDimDefault.value)


def smallest_fit(
    mem: TrainingMemory, gpu: Gpu, sizing: Sizing, node_gpus: int, *, pipeline: int = 1, zero_stage: int = 3, context: int = 1
) -> tuple[int, int] | None:
    """(GPUs, tensor-parallel degree) of the smallest layout that holds the job, or None.

    What ZeRO ``zero_stage`` shards lives on one of every GPU; the rest splits over the tensor x ``pipeline`` GPUs of
    a replica; activations split across the tensor-parallel group inside a node (a 1F1B pipeline's first stage holds
    ``pipeline`` microbatches of its layers / ``pipeline`` layers: one sequence's activations of every layer, as without
    a pipeline; Narayanan et al. 2021, Sec. 2.2.1). Counts are multiples of tensor x ``context`` x pipeline (the context
    group holds whole copies of the unsharded state, like data-parallel ranks).
    """
    best: tuple[int, int] | None = None
    for tp, gpus in fewest_by_degree(mem, gpu, sizing, node_gpus, pipeline=pipeline, zero_stage=zero_stage, context=context).items():
        if best is None or gpus < best[0]:
            best = (gpus, tp)
    return best


def fewest_by_degree(
    mem: TrainingMemory, gpu: Gpu, sizing: Sizing, node_gpus: int, *, pipeline: int = 1, zero_stage: int = 3, context: int = 1
) -> dict[int, int]:
    """Each tensor-parallel degree's fewest GPUs that hold the job (smallest_fit), for the degrees that hold it at all."""
    usable = usable_memory(gpu, sizing)
    fewest: dict[int, int] = {}
    for tp in node_degrees(node_gpus, mem.tp_degrees):
        group = tp * pipeline
        whole = math.lcm(group * context, mem.expert_grid(tp, pipeline))  # whole replicas and whole expert grids
        gpus = _fewest_held(mem, usable, zero_stage, tp, whole, group)
        if gpus is not None:
            fewest[tp] = gpus
    return fewest


def _fewest_held(mem: TrainingMemory, usable: float, zero_stage: int, tp: int, whole: int, group: int) -> int | None:  # noqa: PLR0917
    """The fewest GPUs, in ``whole``s, whose share of the state ZeRO ``zero_stage`` keeps whole and of what it
    shards, working set and activations under full recomputation fit ``usable`` bytes a GPU at tensor parallel
    ``tp`` (``group`` = TP x PP GPUs a model-parallel shard), or None where none does. The interleaved schedule's
    activations shrink with the microbatches a rank runs, so with the count (TrainingMemory.in_flight; review
    sizreview20 F4). An undeclared expert group spreads a MoE's experts over what the count's own ranks allow
    (TrainingMemory.expert_spread): from the count every expert on its own rank would need, up to the first whose
    ranks' group holds it (at most as many steps as experts: a multiple of them spreads them all). Sized with all
    256 spread, 424 GPUs kept them over none at 53 ranks and the plan refused the count it had named (review
    sizreview15 F3)."""
    sharded = mem.state_at(zero_stage) - mem.unsharded(zero_stage)

    def left(gpus: int | None) -> float:
        ranks = gpus // group if gpus else None
        spread, room = mem.expert_spread(ranks), usable - mem.activations_at(tp, 1.0, gpus)
        return room - mem.held_whole(zero_stage, spread, tp) / group - mem.working_at(zero_stage, tp, ranks)

    free = left(None)  # the widest spread at the default microbatch group: the first count to try
    if free <= 0:
        return None
    gpus = _ceil_to(sharded / free, whole)
    # the ranks step through a multiple of the experts; the in-flight activations shrink over a few more steps
    for _ in range(max(1, mem.experts) * whole // group + 1 + 16 * (mem.virtual_stages > 1)):
        kept = left(gpus)
        if kept > 0 and sharded / gpus <= kept * (1 + 1e-12):
            return gpus
        gpus += whole
    return None


def _overflow(
    mem: TrainingMemory,
    gpu: Gpu,
    sizing: Sizing,
    *,
    node_gpus: int,
    pipeline: int,
    zero_stage: int,
    widest_tp: int,
    gpus: int | None = None,
    context: int = 1,
    layers: int | None = None,
    declared: int | None = None,
    most: int | None = None,
) -> Issue:
    """PL303 when no layout holds the job, at the widest tensor-parallel degree: which part overflows, and what shrinks
    it (it always blamed one sequence's activations, where the state ZeRO keeps whole overflowed: a 405B at ZeRO-1 was
    told to shorten its sequences; review sizreview10 F2), located at the field that shrinks it (sizreview23 N1).

    Each fix is named with the value that holds the job (_state_fixes). ``declared``: a ZeRO-2 or 3 under a pipeline,
    whose stage is held gathered, ZeRO-1's state (``zero_stage`` 1; passes_stage)."""
    tp = max(node_degrees(node_gpus, mem.tp_degrees))
    usable, activations = usable_memory(gpu, sizing), mem.activations_at(tp, 1.0)
    whole = mem.held_whole(zero_stage, mem.expert_spread(), tp) / (tp * pipeline) + mem.working_at(zero_stage, tp)
    # what ZeRO shards, over the GPUs the job has (pinned) or can have (the pool's): at ZeRO-3 most of what a GPU keeps
    # (review sizreview61 D2: 1.0 GiB of gathered layers and 2.0 of activations "exceeded" 72 GiB, the 130.4 GiB shard
    # of a 70B over the pool's 8 GPUs unsaid, and shorter sequences were advised)
    at = gpus or most
    shard = (mem.state_at(zero_stage) - mem.unsharded(zero_stage)) / at if at else 0.0
    kept = "the layers ZeRO-3 gathers" if zero_stage >= 3 else f"the state ZeRO-{zero_stage} keeps whole"
    if declared is not None:
        kept = f"the stage ZeRO-{declared} holds gathered under the pipeline (ZeRO-1's state)"
    if shard > 0:
        kept = (f"ZeRO-3's shard of the state over {at:,} GPUs and the layers it gathers" if zero_stage >= 3 else
                f"{kept} and its shard of the rest over {at:,} GPUs")  # fmt: skip
    parts = (
        f"at TP {tp} x PP {pipeline}, one sequence's activations ({activations / GIB:.1f} GiB with full recomputation) "
        f"and {kept} on each GPU ({(whole + shard) / GIB:.1f} GiB) exceed the {usable / GIB:.0f} GiB a {gpu.id} gives"
    )
    if whole < activations:
        # each change that splits the activations enough where the state leaves room (review sizreview61 D2: at ZeRO-3
        # on a pool of the pinned 8 GPUs, "shorter sequences" where the state's shard alone overflowed), with its count
        options: list[tuple[str, str]] = [("shorter sequences", "sequenceLength")] if whole + shard < usable else []
        # a wider tensor-parallel group splits them too (review sizreview60 D4: TP 4 held a 70B at the pinned 16)
        options += [(f, field) for f, field in _state_fixes(mem, usable, node_gpus=node_gpus, pipeline=pipeline,
                                                            zero_stage=zero_stage, widest_tp=widest_tp, gpus=gpus, context=context,
                                                            layers=layers, most=most)
                    if field == "tensorParallel"][:1]  # fmt: skip
        # the context-parallel degree whose split of the activations fits beside the state (review sizreview59 G1: named
        # without a value, and the obvious one did not hold), at the fewest GPUs from the pinned count up, within the
        # pool, whose shard of the state fits beside it
        split = next((c for c in (2, 4, 8, 16, 32, 64) if whole + activations / c <= usable), None)
        if split is not None:
            count = _held_count(mem, usable, tp, pipeline, zero_stage, context=context, gpus=gpus, most=most, split=split)
            if count is not None:
                options.append((f"contextParallel {context * split}" + (f" on {count:,} GPUs" if gpus and count != gpus else ""),
                                "contextParallel"))  # fmt: skip
        if options:
            verb = "splits" if len(options) == 1 and options[0][1] != "sequenceLength" else "split"
            return Issue("PL303", f"{parts}: {' or '.join(f for f, _ in options)} {verb} the activations", options[0][1])

    fixes = _state_fixes(mem, usable, node_gpus=node_gpus, pipeline=pipeline, zero_stage=zero_stage, widest_tp=widest_tp,
                         gpus=gpus, context=context, layers=layers, most=most)  # fmt: skip
    if not fixes:
        # only one change at a time is tried: say so, not that no layout holds it (review sizreview60 D1: ZeRO-3 at TP 8
        # held it on the pool's 16 GPUs), and what two changes give
        within = f" within {most:,} GPUs" if most else ""
        sharded, within_pool = _sharded_fallback(mem, usable, pipeline=pipeline, widest_tp=widest_tp, context=context,
                                                 gpus=gpus, most=most)  # fmt: skip
        # what this layout keeps a GPU (the figure above), or ZeRO-3 at the GPUs it can have where that keeps less and
        # still more than this GPU gives (where it gives enough, the layout above is the fix)
        need, layout = whole + shard + activations, ""
        if at and (sharded_need := _sharded_need(mem, widest_tp, context, at)) is not None and usable < sharded_need[0] < need:
            need, layout = sharded_need[0], f"zeroStage 3 at tensorParallel {sharded_need[1]} on {at:,} GPUs; "
        memory = f"a GPU that leaves at least {need / GIB:.1f} GiB for training ({layout}a {gpu.id} leaves {usable / GIB:.0f})"
        return Issue("PL303", f"{parts}: no one change of zeroStage, tensorParallel or pipelineParallel holds it{within}; "
                     f"{sharded + ', or ' if sharded else ''}{memory}", "zeroStage" if within_pool else "accelerator")  # fmt: skip
    declare = " (with zeroStage 1, which sizes the recomputation it needs: PL355)" if declared is not None else ""
    return Issue("PL303", f"{parts}: {' or '.join(f for f, _ in fixes)} shards that state{declare}", fixes[0][1])


def _sharded_fallback(
    mem: TrainingMemory, usable: float, *, pipeline: int, widest_tp: int, context: int, gpus: int | None, most: int | None
) -> tuple[str, bool]:
    """PL303's two-change fix where no one change holds the job: ZeRO-3 at the tensor-parallel degree that holds it on
    the fewest GPUs, without a pipeline (a stage is held gathered under one), with the count where it differs from the
    pinned one and where it is past the pool's; "" where no count holds it. Second: whether it holds within the pool
    (review sizreview61 D1: "zeroStage 3 with a wider tensorParallel" was named where ZeRO-3's shard of a 70B over the
    pool's 8 GPUs alone was 130.4 GiB, and taken was PL303 again)."""
    held = ((n, d) for d in TP_DEGREES if d <= widest_tp
            if (n := _held_count(mem, usable, d, 1, 3, context=context, gpus=gpus, most=None)) is not None)  # fmt: skip
    best = min(held, default=None)
    if best is None:
        return "", False
    n, d = best
    layout = f"zeroStage 3 at tensorParallel {d}" + (" without a pipeline" if pipeline > 1 else "")
    if most is not None and n > most:
        return f"{layout} holds it on {n:,} GPUs, past the {most:,} the pool gives", False
    return layout + (f" on {n:,} GPUs" if gpus and n != gpus else "") + " holds it", True


def _sharded_need(mem: TrainingMemory, widest_tp: int, context: int, gpus: int) -> tuple[float, int] | None:
    """(bytes a GPU keeps, tensor-parallel degree) of the ZeRO-3 layout without a pipeline that keeps the least on
    ``gpus`` GPUs, one sequence's activations fully recomputed; None where no degree divides the count."""
    kept = [(mem.state_per_gpu(gpus, d, 3, d) + mem.working_at(3, d, gpus // d) + mem.activations_at(d, 1.0, gpus), d)
            for d in TP_DEGREES if d <= widest_tp and gpus % (d * context) == 0]  # fmt: skip
    return min(kept, default=None)


def _held_count(
    m: TrainingMemory,
    usable: float,
    d: int,
    p: int,
    stage: int,
    *,
    context: int,
    gpus: int | None,
    most: int | None,
    split: int = 1,
) -> int | None:
    """The fewest GPUs at which layout (TP ``d``, PP ``p``, ZeRO ``stage``) holds the job on ``usable`` bytes a GPU: whole
    groups of it from the pinned ``gpus`` (unpinned, from one group) up to ``most``, the pool's, whose shard of what ZeRO
    spreads fits beside what each rank keeps whole and one sequence's activations fully recomputed; None where none does.
    Unpinned too: a stage whose whole part left 0.08 GiB needed 9,590 GPUs for the rest (review sizreview60 D6).
    ``split``: a context-parallel degree beside the declared ``context`` that splits the sequence's activations further
    (PL303's activation fix; review sizreview60 D2: "contextParallel 8" at the pinned 16 needed 40)."""
    activations = m.activations_at(d, 1.0) / split
    whole = m.held_whole(stage, m.expert_spread(), d) / (d * p) + m.working_at(stage, d) + activations
    if whole > usable:
        return None
    # whole replicas and whole expert grids (Megatron-Core's world divides by ETP x EP x PP: review sizreview60 D5,
    # "zeroStage 3 on 54 GPUs" for an EP 8 run that starts on 56)
    group = math.lcm(d * context * split * p, m.expert_grid(d, p))
    first, last = -(-(gpus or group) // group), (most or (gpus or group) * 64 if gpus else most or group * 4096) // group

    def fits(k: int) -> bool:
        n = k * group
        return m.state_per_gpu(n, d * p, stage, d) + m.working_at(stage, d, n // (d * p)) + activations <= usable

    if first > last:
        return None
    if fits(first):
        return first * group
    # more ranks shard more: the first count that fits, by doubling then bisection (a handful of sizings)
    low, high = first, first * 2
    while high < last and not fits(high):
        low, high = high, high * 2
    if not fits(min(high, last)):
        return None
    high = min(high, last)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return high * group


def _state_fixes(
    mem: TrainingMemory,
    usable: float,
    *,
    node_gpus: int,
    pipeline: int,
    zero_stage: int,
    widest_tp: int,
    gpus: int | None,
    context: int,
    layers: int | None,
    most: int | None = None,
) -> list[tuple[str, str]]:
    """(advice, field) of each change that alone holds the job's state and one sequence's activations fully recomputed
    on ``usable`` bytes a GPU (PL303, PL355): the lowest ZeRO stage, the narrowest wider tensor-parallel degree (the
    attention's and, where the expert layers declare their own, theirs), the fewest pipeline stages; at a pinned count
    each with the fewest GPUs from that count up at which it holds (its group divides them, and what ZeRO shards over
    them fits), and no more than ``most``, the pool's (review sizreview59 D6: "tensorParallel 4 on 48 GPUs" on a 40-GPU
    pool). More GPUs alone are never one: what overflows is what every data-parallel rank keeps whole (review
    sizreview58 D4, D5: "more GPUs than the pinned 12", and "a wider tensorParallel" for experts only
    expertTensorParallel splits, taken, met the same error). A pipeline named at ZeRO-2 or 3 holds its stage gathered,
    ZeRO-1's state (passes_stage; review sizreview59 D7: "pipelineParallel 19 on 19 GPUs" at ZeRO-2 needed 38)."""
    tp = max(node_degrees(node_gpus, mem.tp_degrees))
    activations = mem.activations_at(tp, 1.0)

    def count(m: TrainingMemory, d: int, p: int, stage: int) -> int | None:
        return _held_count(m, usable, d, p, stage, context=context, gpus=gpus, most=most)

    def named(field: str, value: int, n: int) -> tuple[str, str]:
        return (f"{field} {value}" + (f" on {n:,} GPUs" if gpus and n != gpus else ""), field)  # unpinned, plan sizes it

    fixes: list[tuple[str, str]] = []
    if pipeline == 1 and zero_stage < 3:
        # a higher stage, only without a pipeline (a stage holds its layers gathered for the step under one, PL355) and
        # below ZeRO-3 (review sizreview53 D2, D5); the one on the fewest GPUs, then the lowest (review sizreview59 G2:
        # "zeroStage 2 on 344 GPUs" where ZeRO-3 holds at the pinned 64)
        stage = min(((n if gpus else 0, z, n) for z in range(zero_stage + 1, 4) if (n := count(mem, tp, 1, z)) is not None), default=None)
        if stage is not None:
            fixes.append(named("zeroStage", stage[1], stage[2]))
    elif zero_stage == 0:
        # ZeRO-1 shards the optimizer and gathers nothing under a pipeline (review sizreview54), named where what it keeps
        # fits (sizreview55 D2: a 70B at TP 1 x PP 2 keeps 195.6 GiB at ZeRO-1 too); at a pinned count it shards the
        # optimizer over that count's ranks only (one rank: nothing; review sizreview56 D4)
        zero1 = (mem.state_per_gpu(gpus, tp * pipeline, 1, tp) if gpus else
                 mem.held_whole(1, mem.expert_spread(), tp) / (tp * pipeline))  # fmt: skip
        if zero1 + mem.working_at(1, tp) + activations <= usable:
            fixes.append(("zeroStage 1", "zeroStage"))

    def fewest(field: str, held: dict[int, int | None], suffix: str = "") -> None:
        """Of the values that hold the job, at a pinned count the one on the fewest GPUs, then the smallest (PP 4 on it
        before PP 3 on more); unpinned the smallest."""
        # unpinned, the smallest change that holds within the pool (the planner sizes the count)
        best = min(((n if gpus else 0, v, n) for v, n in held.items() if n is not None), default=None)
        if best is not None:
            text, name = named(field, best[1], best[2])
            fixes.append((text + suffix, name))

    fewest("tensorParallel", {d: count(mem, d, pipeline, zero_stage) for d in TP_DEGREES if tp < d <= widest_tp})
    if mem.expert_tensor_parallel is not None:  # the experts' own degree, which a wider attention degree leaves alone
        wider = (e for e in TP_DEGREES if mem.expert_tensor_parallel < e <= max(node_degrees(node_gpus)))
        fewest("expertTensorParallel", {e: count(replace(mem, expert_tensor_parallel=e), tp, pipeline, zero_stage) for e in wider})
    # a stage keeps at least one layer (AL375)
    # what a pipeline holds of the declared stage, and the stage that sizes its recomputation so (PL355)
    staged = held_stage(zero_stage, 2)  # any pipeline
    fewest("pipelineParallel", {p: count(mem, tp, p, staged) for p in range(pipeline + 1, (layers or 128) + 1)},
           " with zeroStage 1" if staged != zero_stage else "")  # fmt: skip
    return fixes


@dataclass(frozen=True)
class _Run:
    """One candidate GPU count and what the throughput model makes of it."""

    gpus: int
    tp: int
    mfu: float
    factors: tuple[Factor, ...]
    recompute: bool
    network_need_gbps: float
    recompute_fraction: float = 0.0  # share of layers recomputed (1: full recomputation)
    # what network_need_gbps is made of, as --explain prints it (review sizreview32 D-1: the line's inputs alone did not
    # reproduce it; the step, the overlap and the fp32 gradients were the code's)
    network_inputs: tuple[tuple[str, float], ...] = ()


def attention_width(w: Workload, layers: int, hidden: int, sizing: Sizing) -> tuple[int | None, float | None]:
    """(attention FLOPs width, effective sequence) of the throughput model's attention term, from the declared layout.

    MLA: query-key products run over head dim + RoPE key per head, value products over head dim, so the width is
    heads x (head dim + RoPE dim / 2) (DeepSeek-V3: 128 x (128 + 32) = 20,480). Sliding window: causal attention
    over a window W of a sequence S costs (2W - W^2 / S) / S of full causal attention, so a sliding layer counts
    2W - W^2 / S tokens; global layers count S."""
    assert w.model is not None
    attention = w.model.attention
    sequence = w.sequence_length or DEFAULT_SEQUENCE
    head = w.model.head_dim or int(sizing.inference.headDimDefault.value)
    if isinstance(attention, LatentAttention) and attention.heads is not None:
        return round(attention.heads * (head + attention.rope_head_dim / 2)), None
    # declared query heads whose width is not the hidden size (Qwen3's MoE models: twice it)
    width = w.model.heads * head if w.model.heads is not None and w.model.heads * head != hidden else None
    if isinstance(attention, SlidingWindowAttention) and attention.window < sequence:
        window = attention.window
        full = min(attention.global_layers, layers)
        effective = (full * sequence + (layers - full) * (2 * window - window**2 / sequence)) / layers
        return width, effective
    return width, None


def micro_batches(job: TrainingJob, dp: int) -> float:
    """Micro-batches a data-parallel rank runs a step: the memory model holds one sequence's activations per rank, so
    the sequences the stack splits (batch_sequences) / dp."""
    return max(1.0, batch_sequences(job.global_batch_tokens, job.sequence) / dp)


def data_parallel_passes(zero_stage: int, rounds: float) -> tuple[float, float]:
    """(weight gathers, gradient reductions) a step makes over the data-parallel ranks, each a pass of the parameters:
    ZeRO-3 (DeepSpeed stage 3, FSDP) gathers the sharded weights for the forward and the backward of every micro-batch
    and reduce-scatters its gradients (counting one round a step understated llm-pretrain's need ~35x: review
    sizreview2 D7); stage 2 keeps only its shard of the gradients, so it reduce-scatters after every backward too
    (DeepSpeed issue 2252) and gathers the updated weights once; stage 1 (Megatron's distributed optimizer) reduce-
    scatters the accumulated gradients and gathers the weights once a step; stage 0 all-reduces the gradients (two
    passes) once (review sizreview8 F7: stage 2 was counted once a step, 17x low)."""
    return {3: (2 * rounds, rounds), 2: (1.0, rounds), 1: (1.0, 1.0)}.get(zero_stage, (0.0, 2.0))


def base_gathers(w: Workload, job: TrainingJob, rounds: float) -> float:
    """Gathers a step of a LoRA / QLoRA run's frozen base: ZeRO-3 (FSDP) shards it and gathers it for the forward and the
    backward of every micro-batch, once a step under a pipeline (passes_stage); below stage 3 it stays whole."""
    if job.zero_stage < 3:
        return 0.0
    return 2 * rounds if passes_stage(w, job.zero_stage) == 3 else 1.0


@dataclass(frozen=True)
class StepTraffic:
    """What one GPU sends across nodes a step, and a mixture of experts' parts of it as --explain prints them (review
    sizreview33 D-1: the data-parallel ranks and bytes a parameter did not reproduce a MoE run's figure)."""

    total: float
    parts: tuple[tuple[str, float], ...] = ()


def network_bytes_per_step(
    w: Workload, job: TrainingJob, *, tp: int, node_gpus: int, gather_bytes: float, grad_bytes: float,
    adapter: tuple[float, float] | None = None,
) -> float:  # fmt: skip
    """Bytes one GPU sends across nodes each step (:func:`network_traffic`)."""
    return network_traffic(w, job, tp=tp, node_gpus=node_gpus, gather_bytes=gather_bytes, grad_bytes=grad_bytes, adapter=adapter).total


def network_traffic(
    w: Workload, job: TrainingJob, *, tp: int, node_gpus: int, gather_bytes: float, grad_bytes: float,
    adapter: tuple[float, float] | None = None,
) -> StepTraffic:  # fmt: skip
    """Bytes one GPU sends across nodes each step.

    Dense: (gathers x ``gather_bytes`` + reductions x ``grad_bytes``) (:func:`data_parallel_passes`) x parameters /
    (TP x PP) x (dp - 1) / dp over the dp = GPUs / (TP x PP) data-parallel ranks. LoRA / QLoRA (``adapter``: trainable
    parameters and the frozen base's bytes per parameter): only the adapters have gradients; ZeRO-3 (FSDP) shards the
    frozen base too and gathers it for the forward and the backward of every micro-batch, beside the adapters' passes
    (review sizreview4 D5: the plan charged the whole model's all-reduce once a step). A mixture of
    experts runs expert parallelism (Megatron-Core, DeepSpeed-MoE, DeepSeek-V3's EP): the experts are spread
    over EP ranks (declared as ``expertParallel``, else gcd(experts, dp): expert_parallel_degree), so a GPU syncs the
    shared (attention, dense, shared-expert) parameters over dp and only its own experts over the dp / EP replicas of
    them, not a gather of every parameter; on top, the all-to-all moves each token's hidden state to its top-k experts and back, forward and
    backward (4 x tokens per GPU x k x hidden x MoE layers x 2 bytes, 4 in fp32), for the share of experts off the node: one copy
    an off-node expert (MOE_DISPATCH_ASSUMED)."""
    assert w.model is not None
    gpus = job.gpus
    group = tp * job.pipeline_parallel  # a pipeline stage holds layers / PP of the model
    dp = max(1, gpus // group)
    total = float(w.model.parameters)
    # the ranks of a context group run the same micro-batch, each its slice of the sequence: a rank runs tokens /
    # (sequence x dp / CP) of them (review sizreview9 F1); the shards and their (dp - 1) / dp span dp x CP
    rounds = micro_batches(job, max(1, dp // job.context_parallel))
    gathers, reductions = data_parallel_passes(passes_stage(w, job.zero_stage), rounds)
    per_parameter = gathers * gather_bytes + reductions * grad_bytes  # bytes a parameter crosses a step
    moe = w.model.architecture == "moe" and bool(job.experts_per_token)
    if not moe:
        if adapter is None:
            return StepTraffic(per_parameter * total / group * (dp - 1) / dp)
        trainable, base_bytes = adapter
        gathered = base_gathers(w, job, rounds) * total * base_bytes
        return StepTraffic((gathered + per_parameter * trainable) / group * (dp - 1) / dp)
    active, routed_per_token = job.active_parameters, job.experts_per_token or 0
    experts = w.model.experts.total if w.model.experts else None
    # routed experts unknown: every parameter beyond the active ones is an expert's
    shared = shared_parameters(w) if experts is not None and experts > routed_per_token else active
    ep = expert_parallel_degree(w.expert_parallel, experts or dp, dp)
    # the expert grid, as Megatron-Core lays it out (parallel_state.initialize_model_parallel: the expert layers' TP
    # is the attention's unless declared; a GPU holds routed / (expert TP x EP x PP) of the experts, as
    # TrainingMemory.expert_grid, and syncs them over the GPUs / (expert TP x EP x PP) copies of that shard). The
    # expert TP divisor was missing, so a TP 4 run synced 4x the expert weights it holds (review sizreview21 F1)
    etp = declared_expert_tp(w) or tp
    grid = etp * ep * job.pipeline_parallel
    replicas = max(1, gpus // grid)
    # a parameter's share of the traffic: the shared ones over the dp ranks of their shard, the experts over the copies
    # of theirs. ZeRO-3 gathers the shared weights and its experts' every micro-batch as a dense run does (review
    # sizreview4 D2: once a step understated a DeepSeek-like run ~15x and PL321 never fired)
    spread = (shared / group) * (dp - 1) / dp + (total - shared) / grid * (replicas - 1) / replicas
    if adapter is None:
        sync = per_parameter * spread
    else:
        # LoRA / QLoRA: the frozen base is gathered where ZeRO-3 shards it, held by the expert group as a full run's
        # is; only the adapters reduce, spread as the weights they adapt are (an expert's adapters live with it). The
        # adapter branch returned before the MoE one, so a fine-tune of a MoE moved no all-to-all at ZeRO 0-2
        # (DeepSeek-V3: 4 Gbit/s for ~615) and gathered every expert at ZeRO-3 (17,307 for ~1,040: review sizreview21 F6)
        trainable, base_bytes = adapter
        gathered = base_gathers(w, job, rounds) * base_bytes * spread
        sync = gathered + per_parameter * trainable * spread / total
    # experts on the GPU's own node are reached over NVLink; each off-node expert a token routes to is one fabric copy of
    # it, as Megatron-Core's "alltoall" token dispatcher sends them (megatron/training/arguments.py
    # --moe-token-dispatcher-type, the one its help recommends with expert parallelism). A DeepEP-class dispatcher (the
    # "flex" one with the deepep backend; DeepSeek-V3's node-limited routing, arXiv 2412.19437 Sec. 3.2.2) sends a token
    # once per destination node and forwards it over NVLink, often in fp8: no spec field says which dispatcher runs, so
    # the figure (and PL321) is an upper bound for those (review sizreview16 F6: MOE_DISPATCH_ASSUMED says so)
    # an expert group is expert TP x EP consecutive ranks (the order tp-ep-dp-pp of Megatron-Core's expert RankGenerator)
    off_node = max(0.0, 1 - node_gpus / (ep * etp))
    # an fp32 run's tokens are 4 bytes (the throughput model's MoE factor says so too: review sizreview21 N2), else 2
    token_bytes = 4 if job.precision == "fp32" else 2
    routed = moe_routing_ratio(job) * active  # k x hidden x MoE layers
    tokens = job.global_batch_tokens / gpus
    all_to_all = 4 * routed * token_bytes * tokens * off_node
    parts = (
        ("expert parallel", ep),
        ("shared parameters", shared),
        ("expert grid GPUs (expert TP x EP x PP)", grid),
        ("copies of an expert shard", replicas),
        ("weight sync bytes", sync),
        ("all-to-all bytes = 4 x k x hidden x MoE layers x token bytes x tokens a GPU x off-node share", all_to_all),
        ("k x hidden x MoE layers", routed),
        ("token bytes", token_bytes),
        ("tokens a GPU", tokens),
        ("off-node share = 1 - node GPUs / (EP x expert TP)", off_node),
    )
    return StepTraffic(sync + all_to_all, parts)


def dataset_bytes_per_token(w: Workload, sizing: Sizing) -> float:
    """Stored bytes read per training token: declared, or a sample's bytes over the sequence it fills (one sample a
    sequence: an image's patches, a clip's frames), else the catalog's default for tokenised text."""
    dataset = w.dataset
    if dataset is not None and dataset.bytes_per_token:
        return dataset.bytes_per_token
    if dataset is not None and dataset.bytes_per_sample:
        return float(dataset.bytes_per_sample) / (w.sequence_length or DEFAULT_SEQUENCE)
    return sizing.defaultBytesPerToken.value


def _training_run(  # noqa: PLR0917 - the job's parts, each needed
    w: Workload, place: Placement, sizing: Sizing, mem: TrainingMemory, gpus: int, tp: int, flops_per: float, active: float
) -> _Run:
    """The job at ``gpus`` GPUs: recomputation if activations need it, the network's share, the MFU."""
    assert w.model is not None and place.gpu is not None
    gpu = place.gpu
    moe = w.model.architecture == "moe"
    # a MoE's layers and width are those of a dense model of its active size (Mixtral 8x7B: 32 x 4096)
    layers, hidden = shape(active if moe else float(w.model.parameters), w.model.layers, w.model.hidden_size, sizing)
    experts = w.model.experts
    attention_dim, attention_sequence = attention_width(w, layers, hidden, sizing)
    dequant = qlora_dequantisation(w, gpu, sizing)
    job = TrainingJob(
        architecture=gpu.architecture,
        active_parameters=active,
        layers=layers,
        hidden=hidden,
        sequence=w.sequence_length or DEFAULT_SEQUENCE,
        gpus=gpus,
        global_batch_tokens=float(w.global_batch_tokens or sizing.defaultGlobalBatchTokens.value),
        # a QLoRA base is dequantised to 16 bits for every GEMM (bitsandbytes Linear4bit): no fp8 or fp4 gain to have
        # (review sizreview10 F10: fp8 read 1.39x faster)
        precision="bf16" if w.method == "qlora" and w.precision in ("fp8", "fp4") else w.precision,
        fp8_recipe=w.fp8_recipe,
        fp8_supported=gpu.tflops.fp8 is not None,
        fp4_supported=gpu.tflops.fp4 is not None,
        # a pin without fp8 tensor cores on a pool whose GPU has them: the job runs fp8 there, sized for the pin (PL302)
        fp8_on_pool=place.pool_gpu is not None and place.pool_gpu.tflops.fp8 is not None,
        experts_per_token=(experts.per_token if experts else int(sizing.training.expertsPerTokenDefault.value)) if moe else None,
        moe_layers=routed_layers(experts.layers or layers, routed_attention=experts.routed_attention) if experts else None,
        full_recompute=True,
        recompute_fraction=1.0,
        flops_per_token=flops_per,
        attention_dim=attention_dim,
        attention_sequence=attention_sequence,
        attention_slowdown=attention_kernel_slowdown(w.attention_kernel, gpu.architecture, sizing),
        tensor_parallel=tp,
        tp_link_bytes_per_second=tp_link_bytes_per_second(gpu, sizing),
        **tp_bridge(gpu, sizing),
        tp_overlapped=bool(w.tensor_parallel_overlap),
        peak_flops=gpu.tflops.bf16 * 1e12,
        pipeline_parallel=w.pipeline_parallel or 1,
        virtual_stages=w.pipeline_virtual_stages or 1,
        context_parallel=w.context_parallel or 1,
        zero_stage=zero_stage(w),
        dequant_bytes_per_weight=dequant[0],
        hbm_bytes_per_second=dequant[1] or streaming_bandwidth(gpu, sizing),
        vocabulary=vocabulary_of(w, sizing),
        expert_weights=expert_weights(w),
    )
    job = training_layout(job, mem, place.gpus_per_node, usable_memory(gpu, sizing), sizing)
    tp, fraction = job.tensor_parallel, job.recompute_fraction
    recompute = fraction >= 1
    # a declared MFU replaces the throughput model, not the traffic: its step still moves the same bytes (it once
    # returned here with no network need, so the fabric findings could never fire: review sizreview2 D9)
    # a declared MFU stands for the whole run like the modelled one (GPU-hours divide by it), so its steps run at
    # MFU / goodput too
    mfu = w.mfu / sizing.training.goodput.value if w.mfu is not None else productive_mfu(job, sizing)
    # the traffic each step must move per GPU: ZeRO-3 (all-gather twice, reduce-scatter) over data
    # parallel ranks, plus the MoE all-to-all (dispatch and combine, forward and backward)
    # the step of the batch the stack runs, its whole sequences (batch_sequences: a "16M" batch is 2,048 x 8,192 tokens),
    # as the micro-batches and the bubble count it (review sizreview58 G4: the decimal batch read the need 4.9% high)
    step = (
        batch_sequences(job.global_batch_tokens, job.sequence) * job.sequence / (gpus * gpu.tflops.bf16 * 1e12 * mfu / (flops_per * active))
    )
    weight_bytes = sizing.weightBytes.get(w.precision, 2)
    # an fp8 (fp4) run keeps 16-bit weights and casts them per GEMM: its data-parallel gathers move 16-bit weights
    # (torchao Float8LinearConfig enable_fsdp_float8_all_gather False, Megatron-Core without --fp8-param-gather;
    # review sizreview8 F8b: 1 byte a parameter halved an fp8 run's need and kept PL324 quiet)
    gather_bytes = max(sizing.bytesPerParameter.weights.value, weight_bytes)
    grad_bytes = gather_bytes
    if reduces_in_fp32(w):
        grad_bytes = max(grad_bytes, sizing.bytesPerParameter.fp32Gradients.value)
    adapter = None
    if w.method in ("lora", "qlora"):
        # the frozen base's bytes a parameter as memory holds them (QLoRA's 16-bit embedding and head among them: review
        # sizreview9 F4); the weights whole per replica are the frozen base plus the adapters' (as many as their gradients)
        adapter = (mem.trainable, (mem.weights - mem.gradients) / float(w.model.parameters))
    traffic = network_traffic(
        w, job, tp=tp, node_gpus=place.gpus_per_node, gather_bytes=gather_bytes, grad_bytes=grad_bytes, adapter=adapter
    )
    exchanged = traffic.total
    need = exchanged * 8 / (step * sizing.commOverlapFraction.value) / 1e9
    dp = max(1, gpus // (tp * job.pipeline_parallel))
    inputs = (
        ("bytes a GPU sends a step", exchanged),
        ("data-parallel ranks", dp),
        # a context group's ranks share each micro-batch (review sizreview33 N-1: 16 a rank read as over 32 ranks)
        *((("context parallel", job.context_parallel),) if job.context_parallel > 1 else ()),
        ("micro-batches a rank", micro_batches(job, max(1, dp // job.context_parallel))),
        ("gather bytes a parameter", gather_bytes),
        ("gradient bytes a parameter", grad_bytes),
        ("step s", step),
        ("overlap", sizing.commOverlapFraction.value),
        *traffic.parts,
    )
    if w.mfu is not None:
        mfu_factor = (Factor("mfu", w.mfu, "spec", "workloads[].mfu replaces the throughput model"),)
        return _Run(gpus, tp, w.mfu, mfu_factor, recompute, need, fraction, inputs)
    # Only a pool without an RDMA fabric caps throughput here: on RDMA, published runs overlap their traffic
    # with tensor and pipeline parallelism this ZeRO-3 estimate does not model (it would over-penalise them).
    available = place.network_gbps_per_gpu  # None: no pool yet, so no network to judge
    capped = available is not None and available <= sizing.tcpGbpsPerGpu.value and gpus > place.gpus_per_node and need > 0
    share = min(1.0, available / need) if capped and available is not None else 1.0
    if share < 1:
        job = TrainingJob(**{**job.__dict__, "network_share": share})
    mfu, factors = training_mfu(job, sizing)
    return _Run(gpus, tp, mfu, factors, recompute, need, fraction, inputs)


def productive_mfu(job: TrainingJob, sizing: Sizing) -> float:
    """The MFU of the steps themselves: the modelled MFU before goodput. Goodput stretches the run's wall time with
    restarts, failures and evaluations, which are not steps and move no gradient traffic, so a step's traffic must be
    spread over the productive step (dividing by the goodput-stretched step took it 6% low: review sizreview3 D3)."""
    mfu, factors = training_mfu(job, sizing)
    return mfu / math.prod(f.value for f in factors if f.name == "goodput")


# The least share of its GPUs a bigger count must turn into speed for the deadline search to take it: past it, GPUs
# cost four times what they save (a 405B at 131k tokens and a 10-day deadline went to 248k GPUs at 1% MFU). At half,
# the search stopped short of counts that met reachable deadlines at 45% (review sizreview12 F1)
MIN_SCALING = 0.25


def _deadline_run(
    at: Callable[[int], _Run],
    seconds: Callable[[_Run], float],
    admissible: Callable[[_Run], bool],
    *,
    start: int,
    step: int,
    budget: float | None,
) -> _Run:
    """The run at the smallest multiple of ``step`` from ``start`` whose GPU-seconds over its GPUs fit ``budget`` at its
    own MFU (it moves with the count: smaller per-GPU batches, recomputation no longer needed), or, where more GPUs no
    longer pay (each added GPU shortens the run by less than MIN_SCALING of its share) or the stack refuses the count
    (``admissible``), the count where the search stops: PL337 says the deadline costs more than that. Without the
    guards a run whose MFU falls as it grows (per-rank batch below one, the pipeline bubble) grew its count each round,
    to 1.2e27 GPUs (review sizreview11 F9)."""

    def pays(small: _Run, big: _Run) -> bool:
        return _pays_off(seconds, small, big) and admissible(big)

    run = at(start)
    if budget is None:
        return run
    seen: set[int] = set()
    for _ in range(40):
        target = max(start, _ceil_to(math.ceil(seconds(run) / budget), step))
        if target == run.gpus:
            break
        if target in seen:  # oscillating between two counts: take the larger
            return at(max(target, run.gpus))
        seen.add(run.gpus)
        candidate = at(target)
        if target > run.gpus and not pays(run, candidate):
            break  # the jump does not pay: step up below while it does
        run = candidate
    # never hand back a count that misses while adding GPUs still pays: `pays` ends the climb (the scaling guard, the
    # batch's bound); a cap of 60 steps of a sixteenth stopped a 70B at 3,032 GPUs and 4.24 days where 7,168 met 1.9
    # (review sizreview14 F1). 400 steps grow a count 3e10-fold
    for _ in range(400):
        if seconds(run) / run.gpus <= budget * 1.000001:
            break
        # a few steps ahead, against this count: one count's dip (a layout its granule forces) stopped a 70B at 1,960
        # GPUs and 6.4 days where 8,192 took 1.9 (review sizreview14 F1)
        ahead, probe = None, run
        for _ in range(LOOKAHEAD):
            probe = at(probe.gpus + _ceil_to(probe.gpus / 16, step))
            if pays(run, probe):
                ahead = probe
                break
        if ahead is None:
            break  # communication- or batch-bound: more GPUs no longer shorten the run
        run = ahead
    return run


LOOKAHEAD = 4  # steps of a sixteenth the deadline search looks past a count that does not pay

# What the MoE all-to-all figure assumes of the token dispatcher, said wherever the figure is (network per GPU, PL321,
# the README's sizing section): no spec field names the dispatcher (review sizreview16 F6)
MOE_DISPATCH_ASSUMED = (
    "the all-to-all counted at one fabric copy of a token per off-node expert it routes to (Megatron-Core's alltoall "
    "dispatcher): an upper bound where a DeepEP-class dispatcher sends one per destination node, and fp8 dispatch half that"
)


def _pays_off(seconds: Callable[[_Run], float], small: _Run, big: _Run) -> bool:
    """Whether ``big`` turns at least MIN_SCALING of its added GPUs' share into speed over ``small`` (the deadline
    search's guard)."""
    wall_small, wall_big = seconds(small) / small.gpus, seconds(big) / big.gpus
    return big.gpus > small.gpus and wall_small / wall_big >= 1 + MIN_SCALING * (big.gpus / small.gpus - 1)


def late_days(days: float, deadline_days: float) -> str:
    """Days past a deadline, with the decimals that show they are past it (1.9036 against 1.9 read "1.90")."""
    for digits in (2, 3, 4):
        if round(days, digits) > deadline_days:
            return f"{days:.{digits}f}"
    return f"{days:.4f}"


def _splits_batch(sequences: float, ranks: int) -> bool:
    """Whether ``ranks`` data-parallel ranks split the global batch's ``sequences``: Megatron's micro-batch calculator
    asserts global batch % (micro-batch x data-parallel) == 0 (megatron/core/num_microbatches_calculator.py
    ConstantNumMicroBatchesCalculator), so at a micro-batch of one the ranks divide a whole batch; a batch that is not a
    whole number of sequences is cut to one by the stack anyway (_uneven_batch), so there only a sequence a rank counts
    (review sizreview19 F5: 384 and 448 ranks were named for 512 sequences)."""
    if ranks > sequences:
        return False
    return not sequences.is_integer() or int(sequences) % ranks == 0


def _batch_ceiling(sequences: float, granule: int, model_parallel: int) -> int:
    """The most GPUs, in whole ``granule``s, whose data-parallel ranks (``model_parallel`` GPUs each) each keep at least
    one of the global batch's ``sequences``: Megatron's micro-batch calculator refuses fewer."""
    return int(sequences) * model_parallel // granule * granule


def _deadline_bought(  # noqa: PLR0917 - the search's parts
    at: Callable[[int], _Run],
    seconds: Callable[[_Run], float],
    above: int,
    ceiling: int,
    step: int,
    budget: float,
    admissible: Callable[[_Run], bool] = lambda _: True,
) -> _Run | None:
    """Past where the deadline search stopped (``above`` GPUs), the run at about the fewest GPUs, in whole ``step``s up
    to ``ceiling``, that meets ``budget`` wall-clock seconds (counts a sixteenth apart) and the stack starts
    (``admissible``), or None where none does."""
    n = above
    while n < ceiling:
        n = min(ceiling, _ceil_to(max(n + 1, math.ceil(n * 17 / 16)), step))
        run = at(n)
        if seconds(run) / run.gpus <= budget * 1.000001 and admissible(run):
            return run
    return None


def _fewest_meeting(
    at: Callable[[int], _Run], meets: Callable[[_Run], bool], *, start: int, top: int, step: int, edges: list[int]
) -> _Run | None:
    """The run at the fewest GPUs, in whole ``step``s from ``start`` up to ``top``, that ``meets`` the deadline, or None.
    The counts fall in bands at ``edges`` (where the batch takes a degree away: MFU drops as the count passes one); in a
    band more GPUs run faster, so a band meets where its top count does, from the lowest, and bisection finds its fewest.
    """
    low = start - step  # the counts at or below it are out
    for edge in [*sorted(e for e in set(edges) if start <= e < top), top]:
        if edge <= low:
            continue
        run = at(edge)
        if meets(run):
            below, above = low // step, edge // step  # in steps: ``below`` misses (or is out), ``above`` meets
            while above - below > 1:
                middle = (below + above) // 2
                probe = at(middle * step)
                below, above, run = (below, middle, probe) if meets(probe) else (middle, above, run)
            return run
        low = edge
    return None


def tp_link_bytes_per_second(gpu: Gpu, sizing: Sizing) -> float:
    """What one GPU's tensor-parallel all-reduces move per second: the per-direction NVLink (SXM) or PCIe bandwidth of
    the catalog GPU times the bus-bandwidth share NCCL reaches on large messages (training.tpLinkEfficiency)."""
    return gpu_hardware(gpu, "bf16", sizing).link_bytes_per_second * sizing.training.tpLinkEfficiency.value


def tp_bridge(gpu: Gpu, sizing: Sizing) -> dict[str, Any]:
    """The TrainingJob fields of a GPU whose pairs share an NVLink bridge (H100 NVL), at the same NCCL share; none
    else."""
    hardware = gpu_hardware(gpu, "bf16", sizing)
    if hardware.bridge_bytes_per_second is None:
        return {}
    return {"tp_bridge_bytes_per_second": hardware.bridge_bytes_per_second * sizing.training.tpLinkEfficiency.value,
            "tp_bridge_gpus": hardware.bridge_gpus}  # fmt: skip


def training_layout(job: TrainingJob, mem: TrainingMemory, node_gpus: int, usable: float, sizing: Sizing) -> TrainingJob:
    """The tensor-parallel degree and recomputed share a run would pick: of the degrees that divide the GPUs inside a
    node, each with the fewest recomputed layers that make it fit, the one with the shortest step (highest MFU: tensor
    parallelism pays its all-reduces, recomputation its extra forward pass); ties go to the smaller degree. ``job``
    brings the degree to fall back on when nothing fits (full recomputation there). Only degrees whose data-parallel
    ranks each keep a sequence of the global batch, where one does: Megatron's micro-batch calculator refuses the rest
    (review sizreview14 F2: a 70B at 122 sequences was planned at TP 4, 244 ranks, and "met" a deadline only TP 8 runs)."""
    best: tuple[float, int, TrainingJob] | None = None
    sequences = batch_sequences(job.global_batch_tokens, job.sequence)
    whole = job.context_parallel * job.pipeline_parallel
    # the expert grid, EP x TP x PP, must divide the count too (review sizreview12 F2), and picks the degrees before
    # the batch does: the other way round the batch dropped the one degree the grid allows and the layout fell into
    # "nothing fits", full recomputation at a tenth of the GPU's memory (review sizreview15 F6)
    degrees = [d for d in node_degrees(node_gpus, mem.tp_degrees)
               if job.gpus % (d * whole) == 0 and job.gpus % mem.expert_grid(d, job.pipeline_parallel) == 0]  # fmt: skip
    degrees = [d for d in degrees if job.gpus // (d * whole) <= sequences] or degrees
    for d in degrees:
        # the experts spread over the data-parallel x context-parallel ranks: Megatron-Core's expert grid (ETP x EP x PP,
        # ETP = TP by default) has no context axis (review sizreview17 F8)
        spans = job.gpus // (d * job.pipeline_parallel)
        state = mem.state_per_gpu(job.gpus, d * job.pipeline_parallel, job.zero_stage, d) + mem.working_at(job.zero_stage, d, spans)
        fits_without = state + mem.activations_at(d, gpus=job.gpus) <= usable
        fraction = 0.0 if fits_without else recompute_share(mem, job.layers, state, d, usable, job.gpus)
        if fraction is None:
            continue
        candidate = replace(job, tensor_parallel=d, recompute_fraction=fraction, full_recompute=fraction >= 1)
        mfu, _ = training_mfu(candidate, sizing)
        if best is None or mfu > best[0] * (1 + 1e-12):
            best = (mfu, d, candidate)
    if best is not None:
        return best[2]
    # nothing fits (memory: full recomputation; where no degree's expert grid divides the count, the plan's PL303 says
    # so): keep the degree it came with where it divides the GPUs, else the largest that does (a layout the stack can
    # start: Megatron refuses a world size TP x CP x PP does not divide; review sizreview9 F9)
    if job.gpus % (job.tensor_parallel * whole):
        fallback = max((d for d in node_degrees(node_gpus, mem.tp_degrees) if job.gpus % (d * whole) == 0), default=1)
        return replace(job, tensor_parallel=fallback)
    return job


def _etp_label(mem: TrainingMemory, tp: int) -> str:
    """The expert grid's tensor-parallel term as PL303 names it: the attention's degree, or the expert layers' own."""
    return f"expert TP {mem.expert_tensor_parallel}" if mem.expert_tensor_parallel else f"TP {tp}"


def _fitting_counts(mem: TrainingMemory, min_gpus: int, tp: int, granule: int, *, node: int, pipeline: int) -> str:
    """PL303's hint on the counts that hold the job. With the expert group undeclared it is gcd(experts, ranks)
    (expert_parallel_degree), so whole granules are not enough: 520 GPUs of a 2T MoE (256 experts) are a multiple of 8
    and at least 512, yet spread the experts over 8 and do not hold it (review sizreview17 F5). Counts whose ranks, at
    the fewest GPUs' degree, are a multiple of that layout's group hold it: the group is no narrower, the shard no
    larger. The ranks are GPUs / (TP x ``pipeline``), data-parallel x context-parallel: the expert grid has no context
    axis (TrainingMemory.expert_spread)."""
    if mem.expert_parallel_declared or mem.experts <= 1:
        return f"use a multiple of {granule} GPUs, at least {_ceil_to(min_gpus, granule)}"
    group = expert_parallel_degree(None, mem.experts, max(1, min_gpus // (tp * pipeline)))
    step = math.lcm(node, granule, tp * pipeline * group)
    return (f"the undeclared expert group is the widest that divides both the {mem.experts} experts and the data-parallel "
            f"x context-parallel ranks: declare expertParallel, or use a multiple of {step} GPUs (those ranks at TP {tp} a "
            f"multiple of {group}), at least {_ceil_to(min_gpus, step)}")  # fmt: skip


def _batch_legal_counts(
    mem: TrainingMemory, gpus: int, sequences: float, min_gpus: int, *, node: int, context: int, pipeline: int,
    runs: Callable[[int], int | None],
) -> list[tuple[int, int]]:  # fmt: skip
    """The nearest GPU counts below and above ``gpus``, with a tensor-parallel degree each, whose declared expert grid
    (EP x TP x PP) and replicas (TP x CP x PP) divide them, whose data-parallel ranks split the batch's ``sequences``
    (_splits_batch), and that the stack runs (``runs``: the degree its layout takes, None where it does not hold the job
    or its ranks do not split the batch): what PL303 names where a pinned count's grid leaves none."""
    below: tuple[int, int] | None = None
    above: tuple[int, int] | None = None
    for d in node_degrees(node, mem.tp_degrees):
        replica = d * context * pipeline
        step = math.lcm(node, replica, mem.expert_grid(d, pipeline))
        ceiling = _batch_ceiling(sequences, step, replica)
        splitting = [n for n in range(step, ceiling + 1, step) if _splits_batch(sequences, n // replica)]
        low = max((n for n in splitting if max(step, min_gpus) <= n <= gpus), default=None)
        if low is not None and (below is None or low > below[0]):
            below = (low, d)
        high = min((n for n in splitting if n > gpus), default=None)
        if high is not None and (above is None or high < above[0]):
            above = (high, d)
    counts = [c[0] for c in (below, above) if c is not None]
    taken = [(n, runs(n)) for n in counts]
    return [(n, d) for n, d in taken if d is not None]


def _uneven_batch(tokens: float, declared: float, sequences: float, ranks: int) -> str:
    """The note on a global batch of ``declared`` sequences that ``ranks`` data-parallel ranks do not split evenly, naming
    the batch the run takes. Megatron's micro-batch calculator asserts the global batch (in sequences) divides by
    micro-batch x data-parallel ranks (megatron/core/num_microbatches_calculator.py ConstantNumMicroBatchesCalculator),
    and every stack runs ranks x local batch: the nearest multiple (review sizreview13 F3), or the binary count a decimal
    batch stands for (batch_sequences) where the ranks split it (review sizreview15 F4: the note was silent where they
    outnumbered the declared sequences)."""
    head = f"the global batch of {declared:,.6g} sequences does not split evenly over {ranks} data-parallel ranks"
    stands = f"the {sequences:,.0f} sequences ({tokens * 2**20 / 1e6:,.0f} tokens) its decimal {tokens / 1e6:g}M tokens stand for"
    if sequences != declared and sequences % ranks == 0:
        return f"{head}: the stack runs {stands}, {sequences / ranks:g} a rank"
    # the multiples around the count the throughput model reads, the binary one where a decimal batch stands for it
    # (review sizreview32 N-1: 448 or 504 around a decimal 4M's 488.3 while the model ran 512 a step)
    below, above = math.floor(sequences / ranks) * ranks, math.ceil(sequences / ranks) * ranks
    runs = f"{below:,} or {above:,}" if below else f"{above:,}"
    if sequences != declared:
        return f"{head}: the stack runs a multiple of {ranks} around {stands}: {runs} sequences"
    return f"{head}: the stack runs a multiple of {ranks} ({runs} sequences)"


def recompute_share(  # noqa: PLR0917 - the layout's parts
    mem: TrainingMemory, layers: int, state: float, tp: int, usable: float, gpus: int | None = None
) -> float | None:
    """The smallest share of the layers (whole layers) whose activations must be recomputed for the job to fit next to
    ``state`` bytes of model state a GPU at tensor parallel ``tp`` on ``gpus`` GPUs; None when even full recomputation
    does not fit. Activations of a share f: (1 - f) x without recomputation + f x with full recomputation, both over TP
    (linear in f: TrainingMemory.activations_at)."""
    free = usable - state
    full, none = mem.activations_at(tp, 1.0, gpus), mem.activations_at(tp, 0.0, gpus)
    if free <= 0 or full > free:
        return None
    saved = none - full
    if saved <= 0:
        return 1.0
    share = (none - free) / saved
    return min(1.0, max(0.0, math.ceil(share * layers - 1e-9) / layers))


def _even_rank(w: Workload, adapters: AdapterCount) -> int:
    """The largest rank whose adapters hold no more parameters than the base: the count is linear in the rank."""
    assert w.model is not None
    return math.floor(float(w.model.parameters) * adapters.rank / adapters.parameters)


def _adapters_exceed_base(w: Workload, adapters: AdapterCount) -> Issue:
    """PL350: a rank below every adapted width can still train more parameters than the base holds: a matrix's two
    factors r x (in + out) pass in x out from r = in x out / (in + out), half the width of a square one (review
    sizreview28 N1: Qwen3-30B-A3B's 2,048 x 768 experts from r ~ 559, rank 768 planned adapters 133% of the base)."""
    assert w.model is not None
    base, even = float(w.model.parameters), _even_rank(w, adapters)
    return Issue("PL350", f"rank {adapters.rank:,} trains {adapters.parameters / 1e9:,.2f}B adapter parameters, "
                 f"{adapters.parameters / base:.1%} of the base's {base / 1e9:,.2f}B: more than full fine-tuning would "
                 f"train; a rank of {even:,} or less keeps them below the base (or fine-tune in full)", "adapter")  # fmt: skip


def precision_refusal(refusal: str, precision: str, pools: tuple[str, ...]) -> Issue:
    """PL303 for a training precision the GPU of ``pools[0]`` cannot run, naming every pool that refuses it (where the
    placement weighed several, all refusing: review sizreview25 N6) and AL388's hint."""
    others = f", nor on {', '.join(pools[1:])}" if pools[1:] else ""
    hint = Gpu.training_refusal_hint(precision)
    return Issue("PL303", f"{refusal}: it cannot train on {pools[0]}{others} ({hint})", "precision")


def plan_training(w: Workload, place: Placement, sizing: Sizing, candidates: list[Gpu]) -> WorkloadPlan:
    assert w.model is not None and w.tokens is not None and place.gpu is not None
    gpu = place.gpu
    figures: list[Figure] = []
    notes: list[str] = []
    issues: list[Issue] = []
    mem = training_memory(w, sizing)
    active = float(w.model.active_parameters or w.model.parameters)
    flops_per = (sizing.loraFlopsPerParameterToken if w.method in ("lora", "qlora") else sizing.trainingFlopsPerParameterToken).value
    total_flops = flops_per * active * w.tokens
    figures.append(Figure("training compute", total_flops, "FLOP", f"{flops_per:g} x active parameters x tokens",
                          {"active parameters": active, "tokens": w.tokens}))  # fmt: skip
    # at the declared stage: stages 0-1 keep the gradients in fp32 beside it (review sizreview9 F6: the figure left them out)
    figures.append(Figure("model state", mem.state_at(zero_stage(w)) / GIB, "GiB",
                          "parameters x bytes per parameter (weights + gradients + optimizer; every expert resident; "
                          "ZeRO stages 0-1: the gradients in fp32)",
                          {"parameters": w.model.parameters, "optimizer": w.optimizer, "method": w.method or "full",
                           "ZeRO stage": zero_stage(w)}))  # fmt: skip
    if w.method in ("lora", "qlora"):
        adapters = adapter_parameters(w, sizing)
        figures.append(Figure("LoRA adapter parameters", adapters.parameters, "parameters", adapters.why, adapters.inputs))
        # the whole width the parameters hold (review sizreview28 N1: rank 768 passed a width rounded up to 769)
        expert_width = math.floor(adapters.expert_width) if adapters.expert_width is not None else None
        if not adapters.counted:
            issues.append(_adapters_estimated(w, adapters))
        elif expert_width is not None and adapters.rank >= expert_width:
            # AL390's bound on the width only the plan derives: the routed experts hold nearly all of a MoE's adapters
            # (review sizreview27 R2: rank 1,024 on Qwen3-30B-A3B's 768-wide experts planned adapters 177% of the base)
            issues.append(Issue("PL349", f"rank {adapters.rank:,} is not below the routed experts' FFN width, {expert_width:,} "
                                "(from the parameters they hold): their adapters hold more parameters than the experts "
                                f"(r x (in + out) >= in x out); set adapter.rank below {expert_width:,} (at most "
                                f"{_even_rank(w, adapters):,} keeps the adapters below the base)", "adapter"))  # fmt: skip
        elif adapters.parameters > float(w.model.parameters):
            issues.append(_adapters_exceed_base(w, adapters))
        elif adapters.targets == "attention" and w.model.kv_heads is None and not isinstance(w.model.attention, LatentAttention):
            # review sizreview26 N3: the k and v adapters at the default 8 KV heads, an MHA model's all silently short
            kv = int(sizing.inference.kvHeadsDefault.value)
            issues.append(Issue("PL348", f"the k and v adapters are counted at {kv} KV heads (model.kvHeads undeclared): a "
                                f"multi-head model has as many as query heads, and its attention adapters are more (Llama-2-7B "
                                "r = 16: 16.8M, counted 13.6M); declare model.kvHeads", "model"))  # fmt: skip
    # every term over the context-parallel group, which splits each sequence (review sizreview9 F15: the value was
    # divided, the formula and inputs did not say so)
    figures.append(Figure("activations per GPU (full recomputation)", mem.activations / GIB, "GiB",
                          "(layers x seq x hidden x 2 B + one layer x seq x hidden x (34 B, + 5 x heads x seq / hidden B "
                          "without FlashAttention) + seq x vocabulary x 4 B of fp32 logits) / context parallel",
                          {"sequence": w.sequence_length or DEFAULT_SEQUENCE, "flash attention": w.flash_attention is not False,
                           "sequence parallel": w.sequence_parallel is not False, "context parallel": w.context_parallel or 1,
                           "vocabulary": int(vocabulary_of(w, sizing))}))  # fmt: skip
    pipeline, zero, context = w.pipeline_parallel or 1, zero_stage(w), w.context_parallel or 1
    refusal = (place.pool_gpu or gpu).training_refusal(w.precision, w.fp8_recipe)
    if refusal is not None:
        # validate refuses a declared GPU (AL388); a pool the placement weighs was priced as bf16 (or fp4 as fp8) and could
        # be picked, where the training stack refuses to start (review sizreview24 D1): a job that cannot run here
        issues.append(precision_refusal(refusal, w.precision, (place.pool or "this pool",)))
        # it stops here, as a job no layout holds does: days, GPU-hours and MFU of a run that never starts, and a
        # precision factor that says it "runs as bf16" beside the refusal, were false (review sizreview25 N1)
        return _empty(w, place, figures, notes, {}, issues)
    if place.shared is not None:
        # a training run is sized and scheduled on whole GPUs (nvidia.com/gpu); a pool whose GPUs are cut into MIG
        # instances or time slices exposes those instead, so its pods would not schedule there (review sizreview63 G2:
        # an 8B LoRA pinned to a 3g.40gb pool was planned on whole 80 GB H100s, silently)
        parts = "MIG instances" if isinstance(place.shared, MigSharing) else "time slices"
        issues.append(Issue("PL303", f"pool {place.pool or 'its'} shares its {gpu.id} GPUs as {parts}: a training run is sized "
                            "on whole GPUs, which the pool does not expose; pin a pool of whole GPUs", "pool"))  # fmt: skip
        return _empty(w, place, figures, notes, {}, issues)
    declared_tp = w.tensor_parallel
    if declared_tp is not None and not node_degrees(place.gpus_per_node, (declared_tp,)):
        # a declared degree the node does not hold whole groups of: its all-reduces would cross the fabric (node_degrees)
        issues.append(Issue("PL322", f"tensorParallel {declared_tp} puts a tensor-parallel group on {declared_tp} GPUs of one node, but "
                            f"{place.pool or 'its'} nodes have {place.gpus_per_node} x {gpu.id}: use a degree that divides "
                            f"{place.gpus_per_node}", "tensorParallel"))  # fmt: skip
        return _empty(w, place, figures, notes, {}, issues)
    expert_tp = declared_expert_tp(w)
    if expert_tp is not None and not node_degrees(place.gpus_per_node, (expert_tp,)):
        # the expert layers' own degree is bounded as the attention's: Megatron-Core lays the expert grid out tp-ep-dp-pp
        # (parallel_state.initialize_model_parallel), its tensor-parallel group on consecutive ranks, so a degree a node
        # does not hold whole groups of runs the expert GEMMs' collectives over the fabric (review sizreview21 N1)
        issues.append(Issue("PL322", f"expertTensorParallel {expert_tp} puts an expert tensor-parallel group on {expert_tp} GPUs "
                            f"of one node, but {place.pool or 'its'} nodes have {place.gpus_per_node} x {gpu.id}: use a "
                            f"degree that divides {place.gpus_per_node}", "expertTensorParallel"))  # fmt: skip
        return _empty(w, place, figures, notes, {}, issues)
    if declared_tp is not None and w.gpus is not None and w.gpus % (declared_tp * context * pipeline):
        issues.append(Issue("PL303", f"tensorParallel {declared_tp} x contextParallel {context} x pipelineParallel {pipeline} does "
                            f"not divide the pinned {w.gpus} GPUs: each data-parallel replica spans whole groups of "
                            f"{declared_tp * context * pipeline}", "gpus"))  # fmt: skip
        return _empty(w, place, figures, notes, {}, issues)
    # each degree's fewest GPUs that hold the job: the smallest layout, and the expert grids the search steps in below
    held_from = fewest_by_degree(mem, gpu, sizing, place.gpus_per_node, pipeline=pipeline, zero_stage=zero, context=context)
    if passes_stage(w, zero) != zero:
        # ZeRO-2 and 3 under a pipeline hold each stage gathered for the step (passes_stage), ZeRO-1's state: at no fewer
        # GPUs than hold that with every layer recomputed, where PL355's fixes can reach (review sizreview58 D2: a 70B
        # at TP 2 x PP 4 was planned on 24 GPUs where it holds 89.5 of 72 GiB fully recomputed, and every fix PL355
        # named, taken, planned fewer). Memory and recomputation still count the declared stage: the calibration's
        # Megatron pipeline runs, declared at the default stage, recompute no more than they did
        staged = fewest_by_degree(mem, gpu, sizing, place.gpus_per_node, pipeline=pipeline, zero_stage=1, context=context)
        held_from = {d: max(n, staged[d]) for d, n in held_from.items() if d in staged}
    layout = min(((n, d) for d, n in held_from.items()), default=None)
    fits = {c.id: (layout[0] if layout else None) if c.id == gpu.id else
                  (f[0] if (f := smallest_fit(mem, c, sizing, place.gpus_per_node, pipeline=pipeline, zero_stage=zero,
                                              context=context)) else None)
            for c in candidates}  # fmt: skip
    if layout is None:
        # the widest degree the model's heads allow in a node, which a declared tensorParallel may narrow
        heads = legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=False)
        held_gathered = passes_stage(w, zero) != zero  # what overflows is the stage held gathered (staged above)
        issues.append(_overflow(mem, gpu, sizing, node_gpus=place.gpus_per_node, pipeline=pipeline,
                                zero_stage=1 if held_gathered else zero, widest_tp=max(node_degrees(place.gpus_per_node, heads)),
                                gpus=w.gpus, context=context, layers=w.model.layers, declared=zero if held_gathered else None,
                                most=place.capacity_gpus))  # fmt: skip
        return _empty(w, place, figures, notes, fits, issues)
    min_gpus, tp = layout
    min_tp = tp
    figures.append(Figure("smallest GPU count that fits", min_gpus, "GPUs",
                          "state ZeRO shards / (usable memory - activations / TP - state it keeps / (TP x PP)), rounded to "
                          "TP x CP x PP", {"usable GiB per GPU": usable_memory(gpu, sizing) / GIB, "tensor parallel": tp,
                                           "context parallel": context, "pipeline parallel": pipeline, "ZeRO stage": zero}))  # fmt: skip
    peak = gpu.tflops.bf16 * 1e12
    # whole nodes, and whole replicas of the smallest layout that fits (TP x CP x PP GPUs: 864 GPUs at CP 16 held 6.75
    # replicas of TP 8, review sizreview9 F9; a PP 16 run stepped in 16s at TP 8, review sizreview10 F5), at the degree
    # that fits, not the widest (an 8B run at TP 2 x CP 2 fits one node; it was sized on two: review sizreview10 F3)
    # an undeclared expert group is gcd(experts, GPUs / (TP x PP)), so memory and MFU jump with the count's factors and
    # the searches below, each assuming more GPUs run no slower, landed above counts that meet (a 1,354B MoE with 16
    # experts planned 1,168 GPUs for 200 days where 848 meet; with the group spread below ZeRO-3 too, 10 of 195 sweep
    # plans, up to 2.5x: review sizreview17 F2, F8). At each degree, counts whose ranks are a multiple of the group of
    # its fewest GPUs that hold the job spread the experts no narrower (that group divides the experts and the ranks,
    # so their gcd) and shard no more: the search steps in whole expert grids of it, as of a declared group, the way a
    # team picks a count for its group
    grids = dict.fromkeys(node_degrees(place.gpus_per_node, mem.tp_degrees), mem.expert_parallel)
    if not mem.expert_parallel_declared and mem.experts > 1:
        grids = {d: expert_parallel_degree(None, mem.experts, max(1, n // (d * pipeline))) for d, n in held_from.items()}

    def grid_of(d: int) -> int:
        """GPUs of degree ``d``'s whole expert grid (EP x expert TP x PP), the group its counts step in."""
        return grids.get(d, mem.expert_parallel) * pipeline * mem.expert_tp(d)

    granule = math.lcm(place.gpus_per_node, pipeline * context * tp, grid_of(tp))
    availability = w.hours_per_day / 24
    deadline = w.deadline

    def seconds(run: _Run) -> float:
        return total_flops / (peak * run.mfu)

    def held(run: _Run) -> float:
        """Bytes a GPU holds in ``run``'s layout (more than the GPU gives where no layout of its count fits)."""
        spans = max(1, run.gpus // (run.tp * pipeline))  # the ranks the experts spread over (DP x CP)
        return (mem.state_per_gpu(run.gpus, run.tp * pipeline, zero, run.tp) + mem.working_at(zero, run.tp, spans)
                + mem.activations_at(run.tp, run.recompute_fraction, run.gpus))  # fmt: skip

    def holds(run: _Run) -> bool:
        return held(run) <= usable_memory(gpu, sizing) * (1 + 1e-9)

    if w.gpus is not None:
        if w.gpus < min_gpus:
            # too few to start: no plan of it, as for a count no layout divides below; where the pool cannot give the
            # count, what holds the job at the pinned one (review sizreview60 D4: "at least 22" on a 16-GPU pool, where TP
            # 4 holds it at 16)
            if place.capacity_gpus is not None and min_gpus > place.capacity_gpus:
                head_degrees = legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=False)
                issues.append(_overflow(mem, gpu, sizing, node_gpus=place.gpus_per_node, pipeline=pipeline, zero_stage=zero,
                                        widest_tp=max(node_degrees(place.gpus_per_node, head_degrees)), gpus=w.gpus, context=context,
                                        layers=w.model.layers, most=place.capacity_gpus))  # fmt: skip
            elif mem.expert_parallel_declared and (grid := mem.expert_grid(tp, pipeline)) > w.gpus:
                # not memory: one whole expert grid is more than the count (review sizreview61 nit: "cannot hold the job"
                # for a 16B MoE at EP 8 x TP 2 on 12, whose state fits 12)
                issues.append(Issue("PL303", f"the pinned {w.gpus} GPUs are fewer than one expert grid (EP {mem.expert_parallel} "
                                    f"x {_etp_label(mem, tp)} x PP {pipeline}, {grid} GPUs): at least {min_gpus} {gpu.id} "
                                    "are needed", "gpus"))  # fmt: skip
            else:
                issues.append(Issue("PL303", f"the pinned {w.gpus} GPUs cannot hold the job; at least {min_gpus} {gpu.id} are "
                                    "needed", "gpus"))  # fmt: skip
            return _empty(w, place, figures, notes, fits, issues)
        run = _training_run(w, place, sizing, mem, w.gpus, tp, flops_per, active)
    else:
        # each tensor-parallel degree's granule: a count only a slow degree divides can meet a deadline in fewer GPUs
        # and more GPU-hours than the next count a fast one divides (405B at CP 16: 928 GPUs at TP 2, 431k GPU-hours,
        # where 1,024 at TP 8 take 357k; review sizreview11 F6)
        node = place.gpus_per_node
        # whole expert grids too (EP x TP x PP); with the group undeclared, every degree that holds the job steps in its
        # own (a 2T MoE holds at 512 GPUs at TP 4 only, and meets 150 days at 768 at TP 2, 384 ranks)
        narrowest = tp if mem.expert_parallel_declared or mem.experts <= 1 else min(grids, default=tp)
        granules = sorted({math.lcm(node, pipeline * context * d, grid_of(d))
                           for d in node_degrees(node, mem.tp_degrees) if d >= narrowest})  # fmt: skip
        limit = deadline * availability if deadline else None

        batch = float(w.global_batch_tokens or sizing.defaultGlobalBatchTokens.value)
        # what the stack splits, as the layout and the notes read it (a decimal 4M is the 1,024 sequences of 4,096 it
        # stands for: the bound and PL338 read 976.56 and called 1.95 days out of reach where 8,192 GPUs take 1.91;
        # review sizreview17 F1)
        sequences = batch_sequences(batch, w.sequence_length or DEFAULT_SEQUENCE)
        # the sequences a data-parallel rank needs: one. The interleaved schedule runs at any microbatch count
        # (throughput.pipeline_factor: Megatron-Core's microbatch group in [p, m], Llama 3's schedule below p), so it no
        # longer asks for a microbatch a stage (issue 23; it did since review sizreview15 F1)
        per_rank = 1

        widest = max(node_degrees(node, mem.tp_degrees))

        def admissible(run: _Run) -> bool:
            # some layout gives each data-parallel rank at least one sequence of the global batch, the widest tensor
            # groups the fewest ranks (a 70B at a 4M batch was sized at 16,024 GPUs, 0.12 sequences a rank: review
            # sizreview12 F6; judged at the degree the run picked, the bound cut reachable deadlines: sizreview13 F2, F10)
            # and it holds the job: an undeclared expert group spreads the experts over what the count's ranks allow
            # (a 2T MoE at 1,864 GPUs spreads its 256 over 8: review sizreview15 F3). The layout's own degree keeps a
            # sequence a rank too, and its expert grid divides the count: the widest degree alone passed 1,600 GPUs of
            # an EP 64 MoE whose grid only TP 1 divides, 1,600 ranks for 512 sequences (review sizreview17 F3)
            if run.gpus // (run.tp * context * pipeline) > sequences or run.gpus % mem.expert_grid(run.tp, pipeline):
                return False
            return run.gpus // (widest * context * pipeline) * per_rank <= sequences and holds(run)

        priced: dict[int, _Run] = {}  # the searches below visit many counts twice: each is priced once

        def at(n: int) -> _Run:
            if n not in priced:
                priced[n] = _training_run(w, place, sizing, mem, n, tp, flops_per, active)
            return priced[n]

        def sized(step: int) -> _Run:
            return _deadline_run(at, seconds, admissible, start=_ceil_to(min_gpus, step), step=step, budget=limit)

        options = [sized(step) for step in granules]
        if deadline is None:
            run = min(options, key=lambda r: (r.gpus, seconds(r)))
        else:
            budget = deadline * availability

            def meets(r: _Run) -> bool:
                return seconds(r) / r.gpus <= budget * 1.000001 and admissible(r)

            # only counts the stack starts: the fixed point's downward steps are unchecked (a 1,150B MoE at EP 64 "met"
            # 50 days at 5,504 GPUs, TP 1, 5,504 ranks for 2,048 sequences: review sizreview17 F3)
            met = [r for r in options if meets(r)]

            # once the batch takes a degree away as the count grows, MFU is not monotone in it: the counts fall in bands
            # up to where a degree keeps a sequence a rank, and the fixed point from above landed past a band that meets
            # (a 70B at 1,024 sequences got 4,528 GPUs at TP 8 where 4,096 at TP 4 meet in less: review sizreview15 F9)
            fine = granules[0]
            spread = sequences / per_rank
            edges = [_batch_ceiling(spread, fine, d * context * pipeline) for d in node_degrees(node, mem.tp_degrees) if d >= narrowest]
            if met:
                best = min(met, key=lambda r: (seconds(r), r.gpus))
                if any(_ceil_to(min_gpus, fine) <= e < best.gpus for e in edges):
                    fewer = _fewest_meeting(at, meets, start=_ceil_to(min_gpus, fine), top=best.gpus, step=fine, edges=edges)
                    met += [fewer] if fewer is not None else []
            run = min(met, key=lambda r: (seconds(r), r.gpus)) if met else min(options, key=lambda r: seconds(r) / r.gpus)
            if not met:
                # the climb can stop where MFU falls with the count (the batch's bands; until issue 23 also an
                # interleaved schedule priced 1F1B off whole groups of microbatches: review sizreview15 F1):
                # a count past it that meets the deadline and pays by the same guard is the plan, the fewest such
                # (where none meets it, the batch's ceiling when it pays: the fastest count that runs). Its lookahead
                # also jumps past a band's top, the band's fastest count: one that misses and pays is where it stops
                # (a 2B at 512 sequences stopped at 1,968 GPUs, 4.61 days, where 2,048 take 4.44: review sizreview15 F5)
                step = math.lcm(node, pipeline * context * widest, grid_of(widest))
                top = _batch_ceiling(sequences / per_rank, step, widest * context * pipeline)
                for edge in sorted(e for e in set(edges) if run.gpus < e <= top):
                    band = at(edge)
                    if admissible(band) and not meets(band) and _pays_off(seconds, run, band):
                        run = band
                # the fewest past the stop that meets AND pays: judged on the first count that meets alone, a 2B was
                # planned to miss 4.3 days at 2,048 GPUs where 2,864 meet and pay, and 4.1 days took 2,968 where
                # 2,864 do (review sizreview17 F6)
                stop = run

                def buys(r: _Run) -> bool:
                    return admissible(r) and _pays_off(seconds, stop, r)

                found = _deadline_bought(at, seconds, run.gpus, top, step, budget, buys)
                if found is None and top > run.gpus and meets(at(top)) and buys(at(top)):
                    found = at(top)
                if found is not None:
                    fewer = _fewest_meeting(at, lambda r: meets(r) and buys(r), start=run.gpus + fine, top=found.gpus, step=fine,
                                            edges=edges)  # fmt: skip
                    run = fewer or found
            # an undeclared expert group (gcd(experts, ranks)) or an interleaved schedule makes MFU jump with the
            # count's factors: the searches above, each assuming more GPUs run faster, can land above a count they
            # priced that meets for less (a 2T MoE at 150 days took 944 GPUs and 3.00M GPU-hours where 768, priced on
            # the way, meet with 2.67M: review sizreview17 F2). Every priced count that meets is a candidate; where the
            # plan misses, one that meets with fewer GPUs or pays by the guard
            meeting = [r for r in priced.values() if meets(r) and (meets(run) or r.gpus < run.gpus or _pays_off(seconds, run, r))]
            if meeting:
                # the fewest GPU-hours that meet, ties to fewer GPUs: the sweep's plans left above a count that meets
                # (review sizreview17) all take fewer GPU-hours than it (a 256B MoE with 60 experts at ZeRO-1 on B200
                # plans 240 GPUs for 200 days, 711,708 GPU-hours, where 160 meet with 722,778)
                run = min([run, *meeting] if meets(run) else meeting, key=lambda r: (seconds(r), r.gpus))
            # the fixed point can stop a step above the fewest count of its band that meets (a 70B at 4.35 days took
            # 3,112 GPUs where 3,104 meet: review sizreview17 F12): step down while a count meets for no more GPU-hours,
            # in the granules of every degree that holds the job somewhere, and with the group undeclared in whole
            # replicas (a narrower group than the search's grid holds where the shard has shrunk): a 908B MoE at EP 32
            # took 512 GPUs for 100 days where 416 (TP 1's granule, 32) meet for the same GPU-hours, a 522B with 60
            # experts 320 where 280 (TP 2, 140 ranks, EP 20) do (review sizreview17's sweep)
            downs = sorted({math.lcm(node, pipeline * context * d, mem.expert_grid(d, pipeline)) for d in held_from})
            if meets(run):
                # from the fewest count that, at this count's GPU-seconds, is at most 1% late (MFU moves less than that
                # between neighbours; fewer are not priced, which kept the bench within its time: bench/plan_speed.py)
                # up, the first in each granule that meets for no more GPU-seconds. A scan, not a walk down that stops
                # at the first count that fails: with the group undeclared the counts between fall in and out of
                # holding the job (a 522B with 60 experts: 312 GPUs spread them over 12 and need TP 8, 280 over 20)
                lowest = seconds(run) / (budget * 1.01)
                for g in downs:
                    n = max(_ceil_to(lowest, g), _ceil_to(min_gpus, g))
                    for _ in range(40):
                        if n >= run.gpus:
                            break
                        lower = at(n)
                        if meets(lower) and seconds(lower) <= seconds(run) * 1.000001:
                            run = lower
                            break
                        n += g
            # what the search does, said as it is (review sizreview58 G8: "smallest count" read as the fewest GPUs that
            # meet, where the plan takes the fewest GPU-hours of the counts it prices)
            figures.append(Figure("GPUs to meet the deadline", run.gpus, "GPUs",
                                  "of the counts of whole replicas priced with GPU-seconds(GPUs) / GPUs <= deadline x hours per "
                                  "day / 24, over the tensor-parallel degrees, the one with the fewest GPU-hours (ties: fewer "
                                  "GPUs); fewer GPUs can meet it for more GPU-hours",
                                  {"deadline days": deadline / DAY}))  # fmt: skip
    gpus, tp = run.gpus, run.tp
    ranks = max(1, gpus // (tp * context * pipeline))
    pinned = "gpus" if w.gpus is not None else None  # a count plan chose is no field of the spec
    if gpus % mem.expert_grid(tp, pipeline):
        # Megatron-Core refuses a world size its expert grid does not divide (a 7B MoE at EP 8 pinned at 12 GPUs was
        # planned at TP 1: review sizreview13 F9)
        dividing = [d for d in node_degrees(place.gpus_per_node, mem.tp_degrees)
                    if gpus % mem.expert_grid(d, pipeline) == 0 and gpus % (d * context * pipeline) == 0]  # fmt: skip
        # a degree whose grid divides the count but not holding the job is what refused it: said, not a wider degree's
        # grid (1T MoE at EP 16 on 272 GPUs was told EP 16 x TP 2 does not divide them, where TP 1's does and overflows:
        # review sizreview17 F11)
        why = f"the expert grid (EP {mem.expert_parallel} x {_etp_label(mem, tp)} x PP {pipeline}) does not divide {gpus} GPUs"
        if dividing:
            d = max(dividing)
            spans = max(1, gpus // (d * pipeline))
            kept = mem.state_per_gpu(gpus, d * pipeline, zero, d) + mem.working_at(zero, d, spans) + mem.activations_at(d, 1.0, gpus)
            why = (f"the expert grid (EP {mem.expert_parallel} x {_etp_label(mem, d)} x PP {pipeline}) divides {gpus} GPUs but keeps "
                   f"{kept / GIB:.1f} GiB a GPU of the {usable_memory(gpu, sizing) / GIB:.0f} a {gpu.id} gives, and no wider "
                   "degree's grid divides them")  # fmt: skip
        issues.append(Issue("PL303", f"{why}; use a multiple of {granule} GPUs, at least {_ceil_to(min_gpus, granule)}", pinned))
        return _empty(w, place, figures, notes, fits, issues)
    stack_sequences = batch_sequences(float(w.global_batch_tokens or sizing.defaultGlobalBatchTokens.value),
                                      w.sequence_length or DEFAULT_SEQUENCE)  # fmt: skip
    if w.gpus is not None and mem.expert_parallel > 1 and ranks > stack_sequences:
        # the declared expert grid left only degrees whose data-parallel ranks outnumber the batch's sequences: Megatron's
        # batch calculator asserts global batch % (micro-batch x data-parallel) == 0, one sequence a rank at least
        # (megatron/core/num_microbatches_calculator.py ConstantNumMicroBatchesCalculator, built from megatron/training/
        # arguments.py's global and micro batch sizes), so the run does not start: an error naming the nearest counts
        # that do, not a warning (a 100B MoE at EP 64 pinned on 1,600 GPUs ran TP 1, 1,600 ranks for 512 sequences:
        # review sizreview17 F3)
        def runs_legally(n: int) -> int | None:
            r = _training_run(w, place, sizing, mem, n, tp, flops_per, active)
            legal = _splits_batch(stack_sequences, n // (r.tp * context * pipeline)) and n % mem.expert_grid(r.tp, pipeline) == 0
            return r.tp if legal and holds(r) else None

        legal = _batch_legal_counts(mem, gpus, stack_sequences, min_gpus, node=place.gpus_per_node, context=context,
                                    pipeline=pipeline, runs=runs_legally)  # fmt: skip
        dividing = [d for d in node_degrees(place.gpus_per_node, mem.tp_degrees)
                    if gpus % mem.expert_grid(d, pipeline) == 0 and gpus % (d * context * pipeline) == 0]  # fmt: skip
        nearest = " or ".join(f"{n} GPUs (TP {d}, {n // (d * context * pipeline)} ranks)" for n, d in legal)
        hint = f"the nearest counts that run: {nearest}" if legal else "no count runs it: raise globalBatchTokens"
        widest_grid = max(dividing, default=tp)
        etp = f"expert TP {mem.expert_tensor_parallel}" if mem.expert_tensor_parallel else "TP"
        fewest = gpus // (widest_grid * context * pipeline)
        issues.append(Issue("PL303", f"{gpus} GPUs leave {fewest} data-parallel ranks at TP {widest_grid}, the widest degree whose "
                            f"expert grid (EP {mem.expert_parallel} x {etp} x PP {pipeline}) divides them, for the global batch's "
                            f"{stack_sequences:,.0f} sequences: Megatron's batch calculator refuses a rank less than one "
                            f"sequence; {hint}", "gpus"))  # fmt: skip
        return _empty(w, place, figures, notes, fits, issues)
    if not holds(run):
        # no degree that divides the count holds the job (a pinned count no fitting layout divides): a run that cannot
        # start is no plan (it was priced at up to 413 GiB a GPU: review sizreview10 F5)
        hint = _fitting_counts(mem, min_gpus, min_tp, granule, node=place.gpus_per_node, pipeline=pipeline)
        issues.append(Issue("PL303", f"no tensor-parallel degree that divides {gpus} GPUs (x CP {context} x PP {pipeline}) holds the "
                            f"job: TP {tp} keeps {held(run) / GIB:.1f} GiB a GPU of the {usable_memory(gpu, sizing) / GIB:.0f} a "
                            f"{gpu.id} gives; {hint}", pinned))  # fmt: skip
        return _empty(w, place, figures, notes, fits, issues)
    gpu_seconds = seconds(run)
    gpu_hours = gpu_seconds / 3600
    # the layout the factors were taken at, chosen or declared (review sizreview33 N-3: only -f json said TP 1 where the
    # smallest fitting count's line said 2)
    chosen: dict[str, Any] = {"gpu": gpu.id, "gpus": gpus, "tensor parallel": run.tp, "pipeline parallel": pipeline,
                              "ZeRO stage": zero}  # fmt: skip
    if context > 1:
        chosen["context parallel"] = context
    if (w.pipeline_virtual_stages or 1) > 1:
        chosen["virtual stages"] = w.pipeline_virtual_stages
    figures.append(Figure("MFU", run.mfu, "of dense BF16 peak", "product of the factors below", chosen, run.factors))
    figures.append(Figure("GPU-hours", gpu_hours, "GPU-h", "compute / (BF16 peak x MFU) / 3600", {"BF16 peak TFLOP/s": gpu.tflops.bf16}))
    wall_days = gpu_seconds / gpus / availability / DAY
    # where the run is planned wider than its pool, its days there sized at the pool's whole groups (its layout may
    # differ there: a larger share of the batch a GPU, another degree), which PL304, PL338 and the lead-time KPI read
    # (review sizreview62 E1: the planned GPU-hours spread over the pool's 4,096 GPUs said 5.06 days where they take 4.27)
    pool_days, pool_gpus = _on_pool(w, place, mem, gpus, min_gpus, min_tp, lambda r: holds(r) and r.gpus // (r.tp * context * pipeline)
                                    <= stack_sequences, days=lambda r: seconds(r) / r.gpus / availability / DAY,
                                    run_at=lambda n, d: _training_run(w, place, sizing, mem, n, d, flops_per, active))  # fmt: skip
    group = math.lcm(run.tp * context * pipeline, mem.expert_grid(run.tp, pipeline))
    if w.gpus is None and deadline is not None and wall_days * DAY > deadline * 1.000001:
        # the search stopped where more GPUs stop paying, or where a data-parallel rank would get less than a sequence:
        # the deadline is bought dearly (PL337, naming the count that buys it) or not at all (PL338, an error: a warning
        # let `--fail-on error` pass a deadline missed 30-fold; review sizreview13 F4). It was sized at 1.2e27 GPUs
        # (review sizreview11 F9), and said as an error though pinning more met it (review sizreview12 F1)
        step = math.lcm(node, pipeline * context * widest, grid_of(widest))
        ceiling = _batch_ceiling(sequences / per_rank, step, widest * context * pipeline)
        bought = _deadline_bought(at, seconds, run.gpus, ceiling, step, deadline * availability, admissible)
        if bought is not None:  # the fewest that meet, not the first of counts a sixteenth apart (review sizreview15 F5)
            bought = _fewest_meeting(at, meets, start=run.gpus + fine, top=bought.gpus, step=fine, edges=edges) or bought
        late = f"misses the {deadline_text(deadline / DAY)} deadline at {gpus} GPUs ({late_days(wall_days, deadline / DAY)} days)"
        if bought is None:
            keep = "one sequence" if per_rank == 1 else f"{per_rank} sequences (the interleaved schedule's microbatch a stage)"
            widest_run = f"more GPUs leave a data-parallel rank less than {keep} of the global batch"
            if ceiling > gpus:
                at_most = late_days(seconds(at(ceiling)) / ceiling / availability / DAY, deadline / DAY)
                widest_run = (f"at {ceiling} GPUs, the most whose data-parallel ranks each keep {keep} of the global "
                              f"batch at TP {widest}, it takes {at_most} days")  # fmt: skip
            fix = "extend the deadline or raise globalBatchTokens"
            pool = place.capacity_gpus
            if pool is not None and pool_days is not None and pool_gpus is not None and pool <= ceiling:
                # the pool, not the batch, bounds the count: a larger batch lets more ranks run than the pool has (review
                # sizreview61 G3: "raise globalBatchTokens" on a 4,096-GPU pool, taken, was PL338 at 125,000 GPUs)
                due = math.ceil(pool_days * 100 - 1e-9) / 100  # a deadline its days there meet
                fix = (f"extend the deadline to at least {due:.2f} days, its pace on the {pool_gpus:,} GPUs pool "
                       f"{place.pool} holds at most (sized there), or a larger pool with a larger globalBatchTokens")  # fmt: skip
            issues.append(Issue("PL338", f"{late}, and no count meets it: {widest_run} (Megatron refuses a rank less than one "
                                f"sequence); {fix}"))  # fmt: skip
        else:
            extra = seconds(bought) / seconds(run) - 1
            pinning = (f"pinning {bought.gpus} GPUs meets it in {seconds(bought) / bought.gpus / availability / DAY:.2f} days "
                       f"for {extra:.0%} more GPU-hours, or extend the deadline")  # fmt: skip
            if place.capacity_gpus is not None and bought.gpus > place.capacity_gpus:
                # a count past the pool is no advice (review sizreview63 N6: 968 GPUs named on a pool of 16); the deadline
                # its planned count meets, within the pool, is
                due = math.ceil((pool_days or wall_days) * 100 - 1e-9) / 100
                pinning = (f"extend the deadline to at least {due:.2f} days (pinning {bought.gpus} GPUs would meet it, past "
                           f"the {place.capacity_gpus:,} GPUs pool {place.pool} gives)")  # fmt: skip
            issues.append(Issue("PL337", f"{late}: beyond them each added GPU shortens the run by less than {MIN_SCALING:.0%} "
                                f"of its share; {pinning}"))  # fmt: skip
    if w.gpus is not None and deadline is not None and wall_days * DAY > deadline * 1.000001:
        # a pinned count too slow for the run's own deadline had no finding (review sizreview21 F4: 10 days against 1,
        # and `--fail-on warning` passed): the count this layout's pace needs, in whole grids, is a floor (MFU falls as
        # the count grows); leaving the count to plan sizes it for the deadline (PL337, PL338 where none meets it)
        grid = math.lcm(place.gpus_per_node, tp * context * pipeline, mem.expert_grid(tp, pipeline))
        floor = _ceil_to(gpus * wall_days * DAY / deadline, grid)
        needs = f"at this layout's pace it needs at least {floor:,} GPUs (more where MFU falls with the count)"
        # the count plan sizes without the pin, where it meets the deadline: the floor, taken, missed it again as MFU fell
        # (review sizreview58 G1: 1,088 GPUs took 34.6 days of 30; plan sizes 1,312)
        free = plan_training(w.model_copy(update={"gpus": None}), place, sizing, candidates)
        if free.gpus and free.wall_clock_days and free.wall_clock_days * DAY <= deadline * 1.000001:
            needs = f"{free.gpus:,} GPUs meet it in {free.wall_clock_days:.1f} days, the count plan sizes for it"
        issues.append(Issue("PL339", f"misses the {deadline_text(deadline / DAY)} deadline at the pinned {gpus} GPUs "
                            f"({late_days(wall_days, deadline / DAY)} days): {needs}; remove gpus to let plan size the run "
                            "for its deadline, or extend the deadline", "gpus"))  # fmt: skip
    figures.append(Figure("wall-clock", wall_days, "days", "GPU-seconds / GPUs / availability / 86400", {"gpus": gpus}))
    if run.recompute_fraction >= 1:
        notes.append(f"activations need full recomputation at {gpus} GPUs (x{sizing.training.fullRecompute.value:g} throughput)")
    elif run.recompute_fraction > 0:
        notes.append(f"activations of {run.recompute_fraction:.0%} of the layers are recomputed at {gpus} GPUs to fit memory")
    batch_tokens = float(w.global_batch_tokens or sizing.defaultGlobalBatchTokens.value)
    declared = batch_tokens / (w.sequence_length or DEFAULT_SEQUENCE)
    # what the stack splits (a decimal batch's binary count: batch_sequences), which the throughput model's microbatches
    # (PL330) read too (throughput.microbatches: Llama 3.1 405B's "16M" is 16 sequences a rank at DP 128, not 15.3)
    sequences = batch_sequences(batch_tokens, w.sequence_length or DEFAULT_SEQUENCE)
    sequences_per_rank = sequences / ranks
    if sequences < ranks:
        issues.append(Issue("PL312", f"the global batch gives {sequences_per_rank:.2f} sequences per data-parallel rank at {gpus} GPUs: "
                            "below one, published runs fall well short of the model (strong-scaling floor)"))  # fmt: skip
    if sequences >= ranks and (declared % ranks or not declared.is_integer()):
        notes.append(_uneven_batch(batch_tokens, declared, sequences, ranks))

    def stage_fits(stages: int, stage: int) -> bool:
        """Whether ``stages`` stages at ZeRO ``stage`` run at these GPUs (StageFits): every rank a sequence, and the
        state (a stage held gathered under a pipeline at ZeRO-2 or 3) with one sequence's activations fully recomputed."""
        group = tp * context * stages
        if (w.gpus and gpus % group) or sequences < gpus // group:  # unpinned, the planner re-sizes to whole groups
            return False
        held = held_stage(stage, stages)
        kept = mem.state_per_gpu(gpus, tp * stages, held, tp) + mem.working_at(held, tp, gpus // (tp * stages))
        return kept + mem.activations_at(tp, 1.0, gpus) <= usable_memory(gpu, sizing)

    if pipeline > 1 and sequences_per_rank < pipeline:
        # the bubble throughput.pipeline_factor charges (Narayanan et al. 2021, Sec. 2.2): with fewer microbatches than
        # stages the interleaved schedule runs only on a stack that allows it (Llama 3's, arXiv 2407.21783 Sec. 3.3.2;
        # Megatron-Core refuses it: review sizreview14 F3), and pays the rounds' dependency bubbles there
        # (a declared MFU carries no factors: the plain 1F1B bubble)
        factored = _bubble_idle(run)
        idle = factored if factored is not None else (pipeline - 1) / (max(sequences_per_rank, 1e-9) + pipeline - 1)
        refused = ""
        microbatch_round = ranks * (w.sequence_length or DEFAULT_SEQUENCE)  # the tokens a microbatch a pipeline adds
        if (w.pipeline_virtual_stages or 1) > 1:
            refused = (" (the interleaved schedule runs there on Llama 3's schedule, each chunk's round waiting for the "
                       "microbatch to come round the stages; Megatron-Core refuses fewer microbatches than stages)")  # fmt: skip
            # as many microbatches as stages clear it, and as many as bring the interleaved bubble within a fifth (taken at
            # as many as stages, 8 stages of 2 chunks idled 7 / 23 = 30%: PL330 again); fewer stages keep each pipeline's
            # microbatches under its stages (the ranks grow with them), so only no pipeline does
            virtual = w.pipeline_virtual_stages or 1
            needed = max(pipeline, _within_a_fifth(pipeline, virtual))
            fixes = (f"a globalBatchTokens of at least {needed * microbatch_round:,.0f} ("
                     + ("as many microbatches as stages)" if needed == pipeline else
                        f"{needed} microbatches a pipeline: as many as its stages, and its bubble within a fifth)"))  # fmt: skip
            fixes += f", or {flat}" if (flat := _no_pipeline(w, stage_fits)) else ""
        else:  # the plain schedule then idles (p - 1) / (m + p - 1): the batch that brings that under a fifth
            fixes = _plain_bubble_fixes(w, pipeline, sequences_per_rank, microbatch_round, tp * context, fits=stage_fits)
        # fewer GPUs (more microbatches a rank) were named too, and miss the deadline the planner sized the GPUs for
        # (review sizreview57 G2)
        issues.append(Issue("PL330", f"the global batch gives each {pipeline}-stage pipeline {sequences_per_rank:,.1f} microbatches of "
                            f"one sequence a step: fewer than its stages, so the pipeline bubble idles {idle:.0%} of each step"
                            f"{refused}: {fixes}", "globalBatchTokens"))  # fmt: skip
    elif pipeline > 1 and (w.pipeline_virtual_stages or 1) == 1 and (idle := _bubble_idle(run) or 0.0) > PLAIN_BUBBLE_WARN:
        # enough microbatches, but as few as the stages: the plain 1F1B schedule idles (p - 1) / (m + p - 1), near half at
        # m = p. Published runs at such layouts interleave (Llama 3.1 405B's Table 4 layout, TP 8 x PP 16 with 16
        # microbatches a rank, planned 2.1x the card's GPU-hours without its schedule and no finding said why: review
        # sizreview53 D1)
        # the interleaved schedule needs whole layers a chunk, at most p x v chunks for the layers, the embedding and the
        # loss (AL375): where even two chunks a stage do not fit it is no advice (review sizreview54 D6)
        interleaves = 2 * pipeline <= w.model.layers + 2 if w.model.layers else True
        fixes = _plain_bubble_fixes(w, pipeline, sequences_per_rank, ranks * (w.sequence_length or DEFAULT_SEQUENCE), tp * context,
                                    fits=stage_fits)  # fmt: skip
        if interleaves:
            # the chunks that bring the bubble within a fifth, where the layers give them one each (else the most they
            # do, which PL330 follows with a batch: the interleaved bubble's own warning)
            chunks = _within_a_fifth(pipeline, sequences_per_rank)
            chunks = max(2, min(chunks, (w.model.layers + 2) // pipeline if w.model.layers else chunks))
            fixes = (f"declare pipelineVirtualStages {chunks} where the stack interleaves its stages (Megatron-Core's "
                     f"virtual pipeline; the bubble shrinks by that factor), or {fixes}")  # fmt: skip
        else:
            fixes += f" (the {w.model.layers} layers leave no room for an interleaved schedule's two chunks a stage)"
        issues.append(Issue("PL330", f"the plain 1F1B schedule of a {pipeline}-stage pipeline over {sequences_per_rank:,.1f} "
                            f"microbatches a step idles {idle:.0%} of each step in its bubble: {fixes}",
                            "pipelineVirtualStages" if interleaves else "globalBatchTokens"))  # fmt: skip
    elif pipeline > 1 and (virtual := w.pipeline_virtual_stages or 1) > 1 and (idle := _bubble_idle(run) or 0.0) > PLAIN_BUBBLE_WARN:
        # interleaved too, the bubble idles (p - 1) / (v m + p - 1): a 16-stage pipeline of 2 chunks over 16 microbatches
        # idles 32% of each step, and nothing said so (the plain schedule's warning only)
        fixes = _interleaved_bubble_fixes(w, pipeline, virtual, sequences_per_rank, ranks * (w.sequence_length or DEFAULT_SEQUENCE))
        field = "pipelineVirtualStages" if fixes.startswith("pipelineVirtualStages") else "globalBatchTokens"
        issues.append(Issue("PL330", f"the interleaved schedule of a {pipeline}-stage pipeline, {virtual} chunks a stage over "
                            f"{sequences_per_rank:,.1f} microbatches a step, idles {idle:.0%} of each step in its bubble: "
                            f"{fixes}", field))  # fmt: skip
    if w.model.architecture == "moe" and active < 10e9:
        issues.append(Issue("PL316", f"a fine-grained MoE ({active / 1e9:.1f}B active) sits at the edge of the calibration data"))
    if w.model.architecture == "moe" and w.mfu is None:
        # one MoE constant, fitted on Megatron-Core's stacks only: the unseen set's other stacks (ScatterMoE, MegaBlocks,
        # no expert parallelism) run from 0.7x to 1.9x the planned rate (README, "Sizing from workloads": "training, unseen set,
        # MoE"; issue 23)
        notes.append("its MoE overhead is Megatron-Core's (alltoall, DeepEP or HybridEP dispatch), the only MoE stacks "
                     "fitted: other stacks run up to about 2x faster or 1.5x slower than planned; declare mfu where one "
                     "is measured")  # fmt: skip
    attention = w.model.attention
    sequence = w.sequence_length or DEFAULT_SEQUENCE
    if isinstance(attention, SlidingWindowAttention) and attention.window >= sequence:
        # every layer then attends to the whole sequence: sized as full attention, which the user may not expect
        given = "sequenceLength" if w.sequence_length else "the default sequence length"
        issues.append(Issue("PL323", f"the {attention.window:,}-token sliding window covers {given} ({sequence:,} tokens): every layer "
                            "attends to the whole sequence and the window changes nothing in this plan"))  # fmt: skip
    if w.precision in ("fp8", "fp4") and w.method == "qlora":
        notes.append(f"QLoRA dequantises its 4-bit base to 16 bits for every GEMM: {w.precision} gains nothing here")
    elif w.precision == "fp4" and refusal is None:  # a GPU that cannot run fp4 applies no ratio (review sizreview25 N2)
        issues.append(Issue("PL317", "fp4 training speed-up is one published ratio, not validated on held-out runs"))
    interval = w.checkpoint_interval or sizing.defaultCheckpointIntervalSeconds.value
    budget = sizing.checkpointStallBudget.value
    write = mem.checkpoint / (budget * interval) / 1e9
    figures.append(Figure("checkpoint write bandwidth", write, "GB/s", "checkpoint size / (stall budget x interval)",
                          {"checkpoint GiB": mem.checkpoint / GIB, "interval s": interval, "stall budget": budget}))  # fmt: skip
    tokens_per_second = gpus * peak * run.mfu / (flops_per * active)
    bytes_per_token = dataset_bytes_per_token(w, sizing)
    read = tokens_per_second * bytes_per_token * sizing.dataReadHeadroom.value / 1e9
    figures.append(Figure("dataset read throughput", read, "GB/s", "tokens/s x bytes per token x headroom",
                          {"tokens/s": tokens_per_second, "bytes per token": bytes_per_token,
                           "headroom": sizing.dataReadHeadroom.value}))  # fmt: skip
    # a run inside one node moves all of it over NVLink or PCIe: the pool's fabric figure does not apply
    carried = {"available Gbit/s": place.network_gbps_per_gpu} if gpus > place.gpus_per_node else {"one node": "NVLink/PCIe, no fabric"}
    figures.append(Figure("network per GPU", run.network_need_gbps, "Gbit/s",
                          "(data-parallel traffic of weights / (TP x PP): at ZeRO-3 2 gathers and a reduction each micro-batch, at 2 "
                          "a reduction each micro-batch and a gather, at 1 (and at 2 or 3 under a pipeline) a reduction and a "
                          "gather, at 0 an all-reduce, once a step; LoRA: the adapters' gradients, and at ZeRO-3 the frozen "
                          "base's two gathers each micro-batch (one a step under a pipeline); MoE: shared weights "
                          "over dp, own experts over dp / EP, and the off-node all-to-all) per step x 8 / (step time x overlap)"
                          + (f"; {MOE_DISPATCH_ASSUMED}" if w.model.architecture == "moe" else ""),
                          {**carried, "global batch tokens": batch_tokens,
                           "tokens the stack runs a step": sequences * (w.sequence_length or DEFAULT_SEQUENCE),
                           **dict(run.network_inputs)}))  # fmt: skip
    quarter_days = 3 * sizing.hoursPerMonth.value / 24
    if w.runs_per_quarter is not None:
        runs = w.runs_per_quarter
        share = runs * wall_days / quarter_days
        figures.append(Figure("busy share of its GPUs", min(1.0, share) * availability, "of each quarter",
                              "runs per quarter x wall-clock days / days per quarter (3 x hours per month / 24) x hours per "
                              "day / 24", {"runs per quarter": runs, "wall-clock days": wall_days, "days per quarter": quarter_days,
                                           "hours per day": w.hours_per_day}))  # fmt: skip
        if share > 1:
            issues.append(Issue("PL320", f"{runs:g} runs a quarter of {wall_days:.0f} days each take {share * quarter_days:.0f} days "
                                f"of a {quarter_days:.0f}-day quarter: they overlap, holding {share:.1f}x the {gpus} GPUs"))  # fmt: skip
    available = place.network_gbps_per_gpu
    rdma_pool = available is not None and available > sizing.tcpGbpsPerGpu.value  # without RDMA: PL309
    if w.model.architecture == "moe" and gpus > place.gpus_per_node and rdma_pool and run.network_need_gbps > (available or 0.0):
        issues.append(Issue("PL321", f"expert-parallel all-to-all and weight sync need {run.network_need_gbps:.0f} Gbit/s per GPU "
                                f"at {gpus} GPUs; the pool's fabric gives {available:.0f}: throughput falls below the plan "
                                f"({MOE_DISPATCH_ASSUMED})"))  # fmt: skip
    elif w.model.architecture != "moe" and gpus > place.gpus_per_node and rdma_pool and run.network_need_gbps > (available or 0.0):
        # the throughput model is not capped here (published runs on RDMA overlap more than this ZeRO-3 estimate assumes,
        # through pipeline parallelism and larger batches), so the plan says the fabric is short instead of staying silent
        issues.append(Issue("PL324", f"data-parallel weight gathers and gradient reduction ({zero_label(w)}, weights / (TP {tp} "
                                f"x PP {pipeline})) need "
                                f"{run.network_need_gbps:.0f} Gbit/s per GPU at {gpus} GPUs; the pool's fabric gives {available:.0f}: "
                                f"throughput falls below the plan unless the traffic is cut: "
                                f"{_traffic_advice(pipeline, _zero1_advice(w, mem, gpu, sizing, place, tp=tp, gpus=gpus))}"))  # fmt: skip
    activations = mem.activations_at(tp, run.recompute_fraction, gpus)
    if pipeline > 1 and mem.virtual_stages > 1:
        # the interleaved schedule's first stage holds more than one sequence's activations of every layer (review
        # sizreview20 F4): said, with the group its bubble's schedule runs, so a hand check redoes the memory per GPU
        m = mem.sequences / max(1, gpus // (tp * context * pipeline))
        figures.append(Figure("first stage's in-flight activations", mem.in_flight(tp, gpus), "x one sequence of every layer",
                              "min((p - 1) x 2 + (v - 1) x N + 1, v x m) / (p x v): Megatron-Core's interleaved warmup "
                              "(schedules.py get_pp_rank_microbatches) plus the forward before the first backward, chunks "
                              "of layers / (p x v); N the smallest legal microbatch group (in [p, m], m mod N 0 or >= p); "
                              "x the layers' activations, the logits and recomputed layer once",
                              {"p": pipeline, "v": mem.virtual_stages, "m": m, "N": microbatch_group(pipeline, m)}))  # fmt: skip
    multi_node = gpus > place.gpus_per_node
    fabric = run.network_need_gbps if multi_node else 0.0  # inside one node NVLink or PCIe carries it (review sizreview7 F1)
    rdma = multi_node and run.network_need_gbps > sizing.tcpGbpsPerGpu.value
    spans = gpus // (tp * pipeline)
    counted = mem.state_per_gpu(gpus, tp * pipeline, zero, tp) + mem.working_at(zero, tp, spans) + activations
    stage_held = mem.state_per_gpu(gpus, tp * pipeline, 1, tp) if passes_stage(w, zero) != zero else 0.0  # ZeRO-1's state
    gathered, usable = stage_held + activations, usable_memory(gpu, sizing)
    if stage_held and gathered > counted:
        # the network figure's layout holds its stage gathered, which memory does not count (README, Sizing from
        # workloads): said with its size, so a layout near the limit is not taken for one that fits (review sizreview50
        # G4); where it does not fit at the planned recomputation, a warning (sizreview51 G3). A stage smaller than
        # ZeRO-3's per-layer working set holds no more gathered: nothing to say (sizreview51 D2)
        said = (f"ZeRO-{zero} under the pipeline holds each stage's weights gathered and its gradients whole for the step, "
                f"as torchtitan runs it and as its traffic is counted: {gathered / GIB:.1f} GiB a GPU of {usable / GIB:.0f} "
                f"usable, where memory counts {counted / GIB:.1f}")  # fmt: skip
        if gathered > usable:
            # zeroStage 1 sizes it with recomputation; where even every layer recomputed leaves it too big, that advice
            # would meet PL303 pointing back at a higher stage (review sizreview52 D1): a smaller stage a GPU then
            least = stage_held + mem.activations_at(tp, 1.0, gpus)
            if least > usable and w.gpus is None and w.model.architecture == "moe" and w.expert_parallel is None:
                # a MoE's expert group follows the GPU count: ZeRO-1 planned for itself may pick a count whose ranks
                # spread the experts where this one's cannot (184 GPUs at TP 2 x PP 4 are 23 ranks, a prime: every
                # expert on every GPU; zeroStage 1 plans 192, EP 8, and fits: review sizreview53 D3)
                zero1 = plan_training(w.model_copy(update={"zero_stage": 1}), place, sizing, candidates)
                if zero1.gpus and not any(i.check in ("PL303", "PL355") for i in zero1.issues):
                    least = usable
            # the fixes named hold the gathered stage, ZeRO-1's state, at full recomputation: a wider layout at ZeRO-3 is
            # sized on its shards again and recomputes too little (review sizreview58 D2: each taken, PL355 again)
            fix = "declare zeroStage 1 to size memory as it runs (the plan then recomputes to fit, and says how long it takes)"
            if least > usable:
                heads = legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=False)
                staged_fixes = _state_fixes(mem, usable, node_gpus=place.gpus_per_node, pipeline=pipeline, zero_stage=1,
                                            widest_tp=max(node_degrees(place.gpus_per_node, heads)), gpus=w.gpus,
                                            context=context, layers=w.model.layers, most=place.capacity_gpus)  # fmt: skip
                with_layout = " or ".join(f for f, _ in staged_fixes) or "a GPU with more memory"
                fix = f"even with every layer recomputed it holds {least / GIB:.1f} GiB: declare zeroStage 1 with {with_layout}"
            issues.append(Issue("PL355", f"{said}: it does not fit at the planned recomputation; {fix}", "zeroStage"))
        else:
            notes.append(f"{said}: declare zeroStage 1 to size memory so")
    return WorkloadPlan(
        name=w.name, kind=w.kind, team=w.team, pool=place.pool, accelerator=gpu.id, gpus=gpus, min_gpus=min_gpus,
        model_state_gib=mem.state_at(zero) / GIB,
        memory_per_gpu_gib=counted / GIB,
        gpu_hours=gpu_hours, wall_clock_days=wall_days, hours_per_day=w.hours_per_day, checkpoint_gib=mem.checkpoint / GIB,
        checkpoint_write_gbps=write, dataset_read_gbps=read, network_gbps_per_gpu=fabric, rdma_required=rdma,
        replicas=None, tokens_per_second_per_replica=None, mfu=run.mfu, tensor_parallel=tp,
        deadline_days=deadline / DAY if deadline else None, fits=fits, figures=tuple(figures), notes=tuple(notes),
        issues=tuple(issues), runs_per_quarter=w.runs_per_quarter, group_gpus=group, pool_days=pool_days, pool_gpus=pool_gpus,
    )  # fmt: skip


def _on_pool(  # noqa: PLR0917 - the sizing's parts, called once
    w: Workload,
    place: Placement,
    mem: TrainingMemory,
    planned: int,
    min_gpus: int,
    min_tp: int,
    runs: Callable[[_Run], bool],
    *,
    days: Callable[[_Run], float],
    run_at: Callable[[int, int], _Run],
) -> tuple[float | None, int | None]:
    """(days, GPUs) of a run planned wider than its pool at max size, sized on the pool's GPUs: at each degree from the
    narrowest that holds the job, the counts of whole groups (and expert grids) within the pool whose run ``runs`` (it
    holds, and every rank has a sequence of the batch), the fastest of them (the largest where they tie); (None, None)
    where the run fits the pool or no layout runs it there. Review sizreview62 E1: the planned GPU-hours spread over
    the pool said 5.06 days where they take 4.27; sizreview63 N1, N2: the planned degree's group (TP 8 x PP 5 = 40 on a
    24-GPU pool) or the declared expert grid (72 GPUs, where an undeclared group holds only 64) left it unsized."""
    cap, pipeline, context = place.capacity_gpus, w.pipeline_parallel or 1, w.context_parallel or 1
    if cap is None or planned <= cap:
        return None, None
    best: tuple[float, int] | None = None
    for d in node_degrees(place.gpus_per_node, mem.tp_degrees):
        group = math.lcm(d * context * pipeline, mem.expert_grid(d, pipeline))
        if d < min_tp or cap < group:
            continue
        # the counts of whole groups within the pool that hold it (an undeclared expert group spreads by the count's
        # ranks: 72 GPUs of a 128-expert run keep every expert, 64 hold it), the fastest (more GPUs can run slower off
        # an RDMA fabric: review sizreview63 N7); the pool's top 64 steps, not every count
        for n in range(cap // group * group, max(min_gpus, group) - 1, -group)[:64]:
            run = run_at(n, d)
            if runs(run) and (best is None or days(run) < best[0] - 1e-12):
                best = (days(run), n)
    return (best[0], best[1]) if best else (None, None)


def _empty(  # noqa: PLR0917 - what a sizing knew before it stopped
    w: Workload, place: Placement, figures: list[Figure], notes: list[str], fits: dict[str, int | None], issues: list[Issue]
) -> WorkloadPlan:
    return WorkloadPlan(
        name=w.name, kind=w.kind, team=w.team, pool=place.pool, accelerator=place.gpu.id if place.gpu else None,
        gpus=None, min_gpus=None, model_state_gib=None, memory_per_gpu_gib=None, gpu_hours=None, wall_clock_days=None,
        checkpoint_gib=None, checkpoint_write_gbps=None, dataset_read_gbps=None, network_gbps_per_gpu=None,
        rdma_required=None, replicas=None, tokens_per_second_per_replica=None, fits=fits, figures=tuple(figures),
        notes=tuple(notes), issues=tuple(issues),
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# inference


def _slo(target: Any) -> float | None:
    """The strictest percentile given (p99 before p95)."""
    if target is None:
        return None
    value: float | None = target.p99 if target.p99 is not None else target.p95
    return value


def served_shape(w: Workload, sizing: Sizing) -> ServedShape:
    assert w.model is not None
    n = float(w.model.parameters)
    layers, hidden = shape(n, w.model.layers, w.model.hidden_size, sizing)
    inf = sizing.inference
    attention = w.model.attention
    return ServedShape(
        parameters=n,
        active_parameters=float(w.model.active_parameters or n),
        layers=layers,
        hidden=hidden,
        kv_heads=w.model.kv_heads or int(inf.kvHeadsDefault.value),
        head_dim=w.model.head_dim or int(inf.headDimDefault.value),
        kv_latent=attention.kv_lora_rank + attention.rope_head_dim if isinstance(attention, LatentAttention) else None,
        window=attention.window if isinstance(attention, SlidingWindowAttention) else None,
        global_layers=attention.global_layers if isinstance(attention, SlidingWindowAttention) else 0,
        attention_width=attention_width(w, layers, hidden, sizing)[0],
        experts=(experts.total, experts.per_token) if (experts := w.model.experts) is not None else None,
        shared_parameters=shared_parameters(w) if w.model.experts is not None else None,
    )


def kv_bytes(precision: str, declared: str | None = None) -> float:
    """KV-cache bytes per element: the declared cache type, else 16-bit whatever the weights: vLLM's default
    kv-cache-dtype `auto` is the model's activation type (bf16 for an fp8 checkpoint) and an 8-bit cache is its
    `--kv-cache-dtype fp8` (docs/features/quantization/quantized_kvcache.md); TensorRT-LLM's PyTorch flow likewise
    takes `--kv_cache_dtype fp8` beside an FP8 checkpoint (examples/pytorch/README.md). An 8-bit default for fp8
    models planned 44% fewer replicas than a default vLLM deployment sustains (review sizreview5 F2). An fp32 model's
    default cache is fp32."""
    if declared is not None:
        return 1.0 if declared in ("fp8", "int8") else 2.0
    # `auto` is the model's type: an fp32 model's cache is fp32, as its attention (roofline.gpu_hardware; review
    # sizreview51 D1: 2 bytes here beside attention at tf32)
    return 4.0 if precision == "fp32" else 2.0


def _gpus_for_load(w: Workload, tp: int, perf: ReplicaPerformance, gpu: Gpu, sizing: Sizing) -> int:
    """GPUs the declared load takes at this degree: replicas for the peak rate and its latency percentiles (or the
    clients at a full batch) x TP."""
    assert w.traffic is not None
    if w.traffic.peak_rps is not None:
        replicas = max(1, math.ceil(w.traffic.peak_rps / perf.requests_per_second))
        return max(_replicas_for_ttft(w, perf, gpu, sizing, replicas), _replicas_for_tpot(w, perf, gpu, sizing, replicas)) * tp
    return math.ceil((w.traffic.concurrency or 1) / perf.batch) * tp


def default_batch_cap(gpu: Gpu, sizing: Sizing) -> float:
    """vLLM's default max-num-seqs on this GPU: 1,024 on one of 70 GiB or more that is not an A100, else 256 (its
    get_batch_defaults; the planner's 256 everywhere undersold an H100 replica of short requests: review sizreview5 F5)."""
    inf = sizing.inference
    large = gpu.memoryGB * 1e9 / GIB >= inf.largeGpuGiB.value and "A100" not in gpu.id
    return inf.maxBatchLargeGpu.value if large else inf.maxBatch.value


def default_chunk_tokens(gpu: Gpu, sizing: Sizing) -> int:
    """vLLM's default max-num-batched-tokens for its OpenAI server on this GPU (the same get_batch_defaults split as
    the batch cap): the tokens one step may schedule, decodes first, the rest for prompts' prefill chunks."""
    inf = sizing.inference
    large = gpu.memoryGB * 1e9 / GIB >= inf.largeGpuGiB.value and "A100" not in gpu.id
    return int(inf.maxBatchedTokensLargeGpu.value if large else inf.maxBatchedTokens.value)


def replica_layout(
    w: Workload, gpu: Gpu, sizing: Sizing, node_gpus: int, *, clients: float | None = None, tp: int | None = None
) -> tuple[ReplicaPerformance | None, list[Figure]]:
    """The tensor-parallel replica that holds the model, meets the latency SLOs and serves the declared load on the
    fewest GPUs (the smaller degree on a tie): the smallest that fits was often the dearest, a 70B fp8 on one 80 GB GPU
    keeping 11 GiB of KV cache, 36 GPUs where TP 2's 88 GiB serve the load on 14 (review sizreview5 F1). ``tp`` keeps a
    degree already chosen; with ``clients`` (closed-loop clients a replica serves) its batch is at most that many."""
    assert w.model is not None and w.traffic is not None
    shape_ = served_shape(w, sizing)
    inf = sizing.inference
    eff = efficiencies(sizing)
    bytes_per_weight = sizing.weightBytes.get(w.precision, 2)
    tpot = _slo(w.latency.time_per_output_token) if w.latency else None
    ttft = _slo(w.latency.time_to_first_token) if w.latency else None
    isl, osl = w.traffic.input_tokens, w.traffic.output_tokens
    # the tokens the engine charges a sequence against its KV pool: its whole length where admission reserves it,
    # else the prompt plus half the output it holds on average (roofline.kv_tokens_admitted)
    admitted = kv_tokens_admitted(isl, osl, w.kv_admission)
    kv_fraction = w.kv_memory_fraction or inf.kvMemoryFraction.value
    per_layer = shape_.kv_per_token_layer(kv_bytes(w.precision, w.kv_cache_precision))
    kv_inputs: dict[str, float]
    if shape_.kv_latent is not None:
        kv_formula, kv_inputs = "layers x (KV latent + RoPE key) x bytes x tokens (MLA)", {"KV latent + RoPE key": shape_.kv_latent}
    else:
        kv_formula = "2 x layers x KV heads x head dim x bytes x tokens"
        kv_inputs = {"KV heads": shape_.kv_heads, "head dim": shape_.head_dim}
    if shape_.window is not None:
        kv_formula += "; sliding layers hold at most their window"
        kv_inputs |= {"window": shape_.window, "global layers": shape_.global_layers}
    figures = [
        Figure("weights", shape_.parameters * bytes_per_weight / GIB, "GiB", "parameters x bytes per weight", {"precision": w.precision}),
        Figure("KV cache per sequence", per_layer * shape_.attended(admitted) / GIB, "GiB", kv_formula,
               {"layers": shape_.layers, **kv_inputs, "tokens": admitted, "admission": w.kv_admission}),
    ]  # fmt: skip
    factors = (
        Factor("prefill compute efficiency", eff.prefill, inf.prefillEfficiency.source),
        Factor("decode compute efficiency", eff.decode_compute, inf.decodeComputeEfficiency.source),
        Factor("HBM bandwidth efficiency", eff.bandwidth, inf.decodeBandwidthEfficiency.source),
        Factor("engine's KV-cache memory fraction", kv_fraction, "spec" if w.kv_memory_fraction else inf.kvMemoryFraction.source),
        Factor("reserved memory per GPU (GiB)", eff.reserved_bytes / GIB, inf.reservedGiB.source),
        Factor("tensor-parallel link efficiency", eff.link, inf.linkEfficiency.source),
        Factor("decode step overhead (s)", eff.step_overhead, inf.stepOverheadSeconds.source),
    )
    headroom = inf.tpotHeadroom.value
    engine_cap = float(w.max_batch) if w.max_batch is not None else default_batch_cap(gpu, sizing)
    # tensor parallelism all-reduces every layer over NVLink/PCIe inside one node, and a pod's GPUs come from one node:
    # a declared degree obeys the same bound as the ones tried (PL322 reports a declared degree past it)
    pinned = tp if tp is not None else w.tensor_parallel
    # only degrees the model's heads allow (vLLM refuses the rest: a 10-KV-head model was planned at TP 8, review
    # sizreview17 F7); a declared one AL372 judges
    allowed = legal_degrees(w.model, TP_DEGREES, int(inf.headDimDefault.value), serving=True)
    degrees = [d for d in ([pinned] if pinned is not None else allowed) if d <= node_gpus]
    feasible: list[tuple[int, int, ReplicaPerformance]] = []  # (GPUs for the load, degree, performance)
    for degree in degrees:
        replica = _replica(w, gpu, sizing, degree)
        cap = engine_cap if clients is None else min(engine_cap, clients)
        perf = replica_performance(replica, isl, osl, batch_cap=cap, tpot=tpot * headroom if tpot is not None else None)
        if perf is not None and (ttft is None or perf.prefill_seconds <= ttft):
            feasible.append((_gpus_for_load(w, degree, perf, gpu, sizing), degree, perf))
    if feasible:
        _, tp, perf = min(feasible, key=lambda f: (f[0], f[1]))
        if len(feasible) > 1:
            figures.append(Figure("tensor parallel", tp, "GPUs a replica", "the degree that serves the load on the fewest GPUs "
                                  "(ties: the smaller)", {f"GPUs at TP {d}": n for n, d, _ in feasible}))  # fmt: skip
        figures.append(Figure("batch per replica", perf.batch, "sequences",
                              "min(engine cap, KV memory limit, largest batch with step + batch x prefill / output tokens "
                              "<= headroom x TPOT target)",
                              {"tensor parallel": tp, "KV memory limit": perf.kv_batch_limit,
                               "engine cap": engine_cap}))  # fmt: skip
        figures.append(Figure("decode step", perf.step_seconds, "s",
                              "(weights read + batch x KV) / (TP x HBM x e) + compute / (TP x peak x e) + all-reduce + overhead; "
                              "attention at the KV cache type's peak",
                              {"tensor parallel": tp, "batch": perf.batch}, factors))  # fmt: skip
        figures.append(Figure("prefill per request", perf.prefill_seconds, "s",
                              "(2 x active params x input / peak + attention / the KV cache type's peak) / (TP x e) + all-reduce",
                              {"input tokens": isl}))  # fmt: skip
        figures.append(Figure("tokens/s per replica", perf.tokens_per_second, "output tokens/s",
                              "output tokens / (prefill + output tokens x step / batch)", {}))  # fmt: skip
        figures.append(Figure("requests/s per replica", perf.requests_per_second, "req/s", "tokens/s per replica / output tokens", {}))
        return perf, figures
    return None, figures


def _replica(w: Workload, gpu: Gpu, sizing: Sizing, degree: int) -> Replica:
    """One replica of ``w`` at a tensor-parallel degree on ``gpu``, as the roofline sees it."""
    kv_fraction = w.kv_memory_fraction or sizing.inference.kvMemoryFraction.value
    return Replica(served_shape(w, sizing), degree, gpu_hardware(gpu, w.precision, sizing, w.kv_cache_precision), efficiencies(sizing),
                   sizing.weightBytes.get(w.precision, 2), kv_bytes(w.precision, w.kv_cache_precision), w.kv_admission,
                   kv_fraction)  # fmt: skip


def _latency_shortfall(
    w: Workload, gpu: Gpu, sizing: Sizing, node_gpus: int, fits: dict[str, int | None], *, shared: bool, capacity: int | None = None
) -> str:
    """Which latency target the fastest replica that holds the model misses, by how much, and what would meet it
    (review sizreview18 F6: PL303 named neither): its single stream's time a token against the allowed share of the
    TPOT target, its lone prefill against the TTFT target; fp8 weights, another degree or another GPU where the plan
    finds one that meets them."""
    assert w.model is not None and w.traffic is not None
    isl, osl = w.traffic.input_tokens, w.traffic.output_tokens
    allowed = legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=True)
    degrees = [d for d in ([w.tensor_parallel] if w.tensor_parallel is not None else allowed) if d <= node_gpus]
    holding = [r for r in (_replica(w, gpu, sizing, d) for d in degrees) if kv_batch_limit(r, isl, osl) >= 1]
    if not holding:
        default = sizing.inference.kvMemoryFraction.value
        if not shared and w.kv_memory_fraction is not None and w.kv_memory_fraction < default:
            # the engine's share of memory is the user's to raise where it alone is short (review sizreview53 G3); not on
            # a shared pool, where the pods a GPU holds split it
            roomier = w.model_copy(update={"kv_memory_fraction": None})
            if any(kv_batch_limit(_replica(roomier, gpu, sizing, d), isl, osl) >= 1 for d in degrees):
                return (f": none holds its weights and one sequence's KV cache in the {w.kv_memory_fraction:.3g} of its GPUs' "
                        f"memory kvMemoryFraction gives the engine; at the default {default:g} one does")  # fmt: skip
        # what would hold one: fp8 weights on this GPU, or another GPU the plan found (review sizreview58 G10: the
        # latency branch named them, this one nothing)
        holders: list[str] = []
        # the least quantisation that holds it (review sizreview61 G2: an fp8 671B that int4 holds on 8 H100s got none)
        for precision, weights in _smaller_weights(w, gpu):
            smaller = w.model_copy(update={"precision": precision})
            held = next((d for d in degrees if kv_batch_limit(_replica(smaller, gpu, sizing, d), isl, osl) >= 1), None)
            if held is not None:
                holders.append(f"{weights} (at TP {held})")
                break
        holders += [f"a replica on {other} at TP {degree}" for other, degree in fits.items() if degree is not None and other != gpu.id]
        return ": none holds its weights and one sequence's KV cache" + (f"; {', '.join(holders)} would" if holders else "")
    fastest = min(holding, key=lambda r: token_interval_seconds(r, isl, osl, 1.0))
    headroom = sizing.inference.tpotHeadroom.value
    misses: list[str] = []
    tpot, ttft = (_slo(w.latency.time_per_output_token), _slo(w.latency.time_to_first_token)) if w.latency else (None, None)
    one = token_interval_seconds(fastest, isl, osl, 1.0)
    if tpot is not None and one > headroom * tpot:
        misses.append(f"time per output token {tpot * 1000:g} ms: a single stream at TP {fastest.tp} takes {one * 1000:.1f} ms "
                      f"a token (a {step_seconds(fastest, isl, osl, 1.0) * 1000:.1f} ms decode step and its prefill over "
                      f"{osl} output tokens), where {headroom:.0%} of the target, {headroom * tpot * 1000:.0f} ms, is "
                      "allowed (tpotHeadroom)")  # fmt: skip
    prefill = prefill_seconds(fastest, isl)
    if ttft is not None and prefill > ttft:
        misses.append(f"time to first token {ttft * 1000:g} ms: a lone {isl:,}-token prompt's prefill takes "
                      f"{prefill * 1000:.0f} ms at TP {fastest.tp}")  # fmt: skip
    if not misses:
        return ""
    meets: list[str] = []
    for precision, weights in _smaller_weights(w, gpu):  # the least quantisation that meets them
        smaller = w.model_copy(update={"precision": precision})
        quantised, _ = replica_layout(smaller, gpu, sizing, node_gpus)
        if quantised is not None:
            meets.append(f"{weights} (at TP {quantised.tp}{_at_peak(smaller, quantised, gpu, sizing, capacity=capacity)})")
            break
    if w.tensor_parallel is not None:
        any_degree = w.model_copy(update={"tensor_parallel": None})
        free, _ = replica_layout(any_degree, gpu, sizing, node_gpus)
        if free is not None:
            meets.append(f"tensor parallel {free.tp}{_at_peak(any_degree, free, gpu, sizing, first=True, capacity=capacity)}")
    meets += [f"a replica on {other} at TP {degree}" for other, degree in fits.items() if degree is not None and other != gpu.id]
    target = "them" if len(misses) > 1 else "it"
    lone = " for a lone request" if w.traffic.peak_rps is not None else ""  # the load's replicas each option names
    remedy = f"; {', '.join(meets)} would meet {target}{lone}" if meets else f"; a looser target would meet {target}"
    return ": " + "; ".join(misses) + remedy


def _smaller_weights(w: Workload, gpu: Gpu) -> list[tuple[str, str]]:
    """(precision, how PL303 names it) of each serving precision with smaller weights than ``w``'s, least quantised first:
    fp8 where the GPU computes in it, else int8, then int4, both weight-only (GPTQ, AWQ at 4 bits: what the roofline
    serves them as, roofline.kv_bytes keeping activations and the cache 16-bit)."""
    order = ["fp8" if gpu.tflops.fp8 else "int8", "int4"] if w.precision in ("bf16", "fp16") else ["int4"]
    if w.precision not in ("bf16", "fp16", "fp8", "int8"):
        return []
    # AWQ quantises to 4 bits only (AutoAWQ, vLLM's awq); 8-bit weight-only is GPTQ's or a W8A16 checkpoint's
    names = {"fp8": "fp8 weights", "int8": "GPTQ or W8A16 int8 weights", "int4": "AWQ or GPTQ int4 weights"}
    return [(p, names[p]) for p in order]


def _at_peak(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, *, first: bool = False, capacity: int | None = None) -> str:
    """What a layout that meets the latency targets for a lone request takes at the declared peak: the replicas of its
    rate and of its percentiles, each replica's queue fed a random share of the requests, as a Kubernetes Service
    spreads them (review sizreview58 D1: "tensor parallel 8 would meet it", taken, needed 2,573 replicas where the rate
    takes 63: a 100,000-token prompt's 6.1 s prefill queues behind others within a 10 s p99)."""
    if w.traffic is None or w.traffic.peak_rps is None:
        return ""
    rate = max(1, math.ceil(w.traffic.peak_rps / layout.requests_per_second))
    total = max(rate, _replicas_for_ttft(w, layout, gpu, sizing, rate), _replicas_for_tpot(w, layout, gpu, sizing, rate))
    lead = " (" if first else ", "
    text = f"{lead}{total:,} {'replica' if total == 1 else 'replicas'} of {_count(layout.tp, 'GPU')} at the peak"
    if total > rate:
        text += f": {rate:,} for the rate, the rest for the percentiles with requests spread at random over them"
    if capacity is not None and total * layout.tp > capacity:  # taken, PL305 (review sizreview59 G3)
        text += f", past the pool's {capacity:,} GPUs"
    return text + (")" if first else "")


def qlora_dequantisation(w: Workload, gpu: Gpu, sizing: Sizing) -> tuple[float, float | None]:
    """What a QLoRA job's dequantising passes move a frozen weight (the NF4 block read, qloraBaseBytes, and the 16-bit
    copy written and read back by the GEMM, 2 + 2 B) and the HBM bandwidth they run at (the GPU's, at the serving
    roofline's calibrated bandwidth efficiency); nothing for other methods (review sizreview18 F5)."""
    if w.method != "qlora":
        return 0.0, None
    return sizing.qloraBaseBytes.value + 4.0, streaming_bandwidth(gpu, sizing)


def streaming_bandwidth(gpu: Gpu, sizing: Sizing) -> float:
    """Bytes a second a memory-bound kernel streams through HBM: the GPU's bandwidth at the serving roofline's
    calibrated bandwidth efficiency (QLoRA's dequantising passes, fp8's casts)."""
    return gpu.memoryBandwidthGBps * 1e9 * sizing.inference.decodeBandwidthEfficiency.value


def smallest_degree(w: Workload, gpu: Gpu, sizing: Sizing, node_gpus: int) -> int | None:
    """The fewest GPUs a replica of ``w`` needs on ``gpu`` (what fits, whatever serves the load cheapest)."""
    assert w.model is not None
    allowed = legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=True)
    for degree in [w.tensor_parallel] if w.tensor_parallel is not None else allowed:
        if degree <= node_gpus and replica_layout(w, gpu, sizing, node_gpus, tp=degree)[0] is not None:
            return degree
    return None


def plan_inference(w: Workload, place: Placement, sizing: Sizing, candidates: list[Gpu]) -> WorkloadPlan:
    assert w.model is not None and place.gpu is not None
    gpu = place.gpu
    notes: list[str] = []
    undeclared = w.traffic is None
    if w.traffic is None:  # batch inference without a declared load: one replica at full batch
        w = w.model_copy(update={"traffic": Traffic.model_validate({"concurrency": 1, "inputTokens": 512, "outputTokens": 256})})
        notes.append("no traffic declared: sized one replica for 512-token prompts and 256-token outputs, busy at its full "
                     "batch for the job's hours a day (its tokens a month and cost per token count that)")  # fmt: skip
    assert w.traffic is not None
    declared_clients = w.traffic.peak_rps is None and not undeclared  # closed-loop clients the spec declares
    fits: dict[str, int | None] = {}
    for candidate in candidates:
        fits[candidate.id] = smallest_degree(w, candidate, sizing, place.gpus_per_node)
    if w.tensor_parallel is not None and w.tensor_parallel > place.gpus_per_node:
        tp = w.tensor_parallel
        issue = Issue("PL322", f"tensorParallel {tp} puts one replica on {tp} GPUs of one node, but {place.pool or 'its'} "
                      f"nodes have {place.gpus_per_node} x {gpu.id}: tensor parallelism stays within a node", "tensorParallel")  # fmt: skip
        return _empty(w, place, [], notes, fits, [issue])
    if place.shared is not None and (w.tensor_parallel or 1) > 1:
        issue = Issue("PL322", f"tensorParallel {w.tensor_parallel} on pool {place.pool or 'its'}, whose GPUs are shared "
                      f"({_units_text(place.shared)}): a replica runs in one part of a GPU, and tensor parallelism spans "
                      "whole GPUs", "tensorParallel")  # fmt: skip
        return _empty(w, place, [], notes, fits, [issue])
    instance, whole = None, gpu
    if place.shared is not None:
        # the pool's GPUs are shared: a replica runs in one MIG instance or one time slice, sized on its share of the
        # compute, the bandwidth and the memory; whole GPUs are not there to be had (review sizreview35 D-D: a 15 GiB
        # model was sized on whole H100s of a pool cut into 1g.10gb instances, with no finding)
        if isinstance(place.shared, TimeSlicing) and (w.kv_memory_fraction or 0.0) > _sliced_fraction(gpu, place.shared, sizing) + 1e-9:
            slices, most = place.shared.replicas, math.floor(_sliced_fraction(gpu, place.shared, sizing) * 1000) / 1000
            issue = Issue("PL352", f"kvMemoryFraction {w.kv_memory_fraction:g} on pool {place.pool or 'its'}, whose GPUs are "
                          f"time-sliced {slices} ways: each of the {slices} pods a GPU holds asks that share of its whole "
                          f"memory (vLLM's --gpu-memory-utilization), and the last to start finds less free; set it to "
                          f"{most:g} or less", "kvMemoryFraction")  # fmt: skip
            return _empty(w, place, [], notes, fits, [issue])
        unit = _pool_unit(w, gpu, place.shared, sizing)
        if unit is None:
            issue = Issue("PL303", f"no {_units_text(place.shared)} of pool {place.pool or 'its'}'s {gpu.id} holds a "
                          "replica of the model and meets its latency targets: serve it from a pool of whole GPUs, or "
                          "share the pool's GPUs in larger parts")  # fmt: skip
            return _empty(w, place, [], notes, fits, [issue])
        instance, gpu, w = unit
        place = replace(place, gpu=gpu, gpus_per_node=1)
        # the part's figures, for the roofline lines to be rebuilt by hand (review sizreview40 G2)
        notes.append(f"runs each replica in one {instance} unit of pool {place.pool or 'its'}: sized on its share of "
                     f"the GPU, {gpu.tflops.bf16:,.1f} dense bf16 TFLOP/s, {gpu.memoryBandwidthGBps:,.0f} GB/s of HBM "
                     f"bandwidth and {gpu.memory_bytes / GIB:g} GiB of memory"
                     + (" (each pod sees the whole GPU's)" if isinstance(place.shared, TimeSlicing) else ""))  # fmt: skip
        if isinstance(place.shared, TimeSlicing):
            notes.append(f"each pod sees the whole GPU's memory: start the engine with --gpu-memory-utilization "
                         f"{w.kv_memory_fraction:.3g} (kvMemoryFraction), so the {place.shared.replicas} pods a GPU holds "
                         "fit it together")  # fmt: skip
    assert w.traffic is not None  # the time-sliced copy keeps it
    # the device vLLM sizes its defaults by: a MIG instance reports its own memory, a time slice the whole GPU's
    # (review sizreview53 G5: "on H100-SXM5-80GB" for the 2,048 tokens of a 40 GB instance)
    on_mig = instance is not None and instance.startswith("mig ")
    device = f"{gpu.id}'s {instance.removeprefix('mig ')} MIG instance" if instance and on_mig else gpu.id
    part = "GPU" if instance is None else "MIG instance" if on_mig else "time slice"  # what a replica's GPUs are
    layout, figures = replica_layout(w, gpu, sizing, place.gpus_per_node)
    budget = default_chunk_tokens(gpu, sizing)
    if w.max_batch is not None and w.max_batch > budget:
        # every running sequence decodes a token a step within the step's token budget: vLLM refuses max_num_seqs above
        # max_num_batched_tokens (vllm/config/scheduler.py SchedulerConfig: "max_num_batched_tokens ... must be greater
        # than or equal to max_num_seqs"), and the plan left a step 1 token of room for prompts (review sizreview35 G-1)
        issue = Issue("PL351", f"maxBatch {w.max_batch:,} is above the {budget:,} tokens vLLM's steps carry on {device} "
                      "(max-num-batched-tokens): the engine refuses to start with more running sequences than that; lower "
                      f"maxBatch to {budget:,} or less", "maxBatch")  # fmt: skip
        return _empty(w, place, figures, notes, fits, [issue])
    if layout is None:
        # the degrees the heads rule out are no replica either: said, so the user does not look for a bigger node
        # (review sizreview17 F7)
        allowed = legal_degrees(w.model, TP_DEGREES, int(sizing.inference.headDimDefault.value), serving=True) if w.model else TP_DEGREES
        heads = ""
        if w.tensor_parallel is None and allowed != TP_DEGREES:
            heads = f" (the model's heads allow tensor parallel {', '.join(map(str, allowed))} only: vLLM splits heads whole)"
        short = _latency_shortfall(w, gpu, sizing, place.gpus_per_node, fits, shared=place.shared is not None, capacity=place.capacity_gpus)
        issue = Issue("PL303", f"no replica of up to {place.gpus_per_node} x {gpu.id} holds the model and meets the latency "
                      f"targets{heads}{short}")  # fmt: skip
        return _empty(w, place, figures, notes, fits, [issue])
    by_throughput = None
    if w.traffic.peak_rps is not None:
        by_throughput = max(1, math.ceil(w.traffic.peak_rps / layout.requests_per_second))
        # a declared time-to-first-token percentile sizes the replicas too: a prompt that arrives while another
        # prefills waits for it (review sizreview16 F11: 5 replicas were budgeted where the p99 needs 8)
        # so does a time-per-output-token percentile: a step that prefills a prompt stalls every running sequence,
        # and the SLI counts each step (review sizreview18 F4: at the rate's 5 replicas 1.6% of the reference's
        # intervals ran past its p99)
        replicas = max(
            by_throughput,
            _replicas_for_ttft(w, layout, gpu, sizing, by_throughput),
            _replicas_for_tpot(w, layout, gpu, sizing, by_throughput),
        )
        load = w.traffic.peak_rps / (replicas * layout.requests_per_second)
        rps = w.traffic.peak_rps
    else:
        clients = w.traffic.concurrency or 1
        replicas = max(1, math.ceil(clients / layout.batch))
        if declared_clients and clients / replicas < layout.batch:
            # closed-loop clients keep clients / replicas sequences in flight on each replica: its rate at that batch,
            # not its full-batch rate scaled down (a decode step does not shrink in proportion to the batch)
            layout, figures = replica_layout(w, gpu, sizing, place.gpus_per_node, clients=clients / replicas, tp=layout.tp)
            assert layout is not None  # a smaller batch only eases memory and latency
        # a batch job with no declared load is one replica kept at the full batch it was sized at while it runs: its
        # tokens are what that replica delivers, not one sequence's share of it (review sizreview18 F3: counted at
        # load 1/256, its tokens cost $25.83 a million where the replica it buys serves them at $0.10)
        load = 1.0 if undeclared else clients / (replicas * layout.batch)
        rps = load * replicas * layout.requests_per_second
    inputs = {"load": load} if by_throughput in (None, replicas) else {"load": load, "replicas for the rate": by_throughput}
    figures.append(Figure("replicas", replicas, "replicas", "ceil(peak requests/s / requests/s per replica), or more where the "
                          "latency percentiles need them", inputs))  # fmt: skip
    issues = _latency_replicas(
        w, layout, gpu, sizing, replicas=replicas, by_throughput=by_throughput, figures=figures, device=device, part=part
    )
    gpus = replicas * layout.tp
    hours = gpus * w.hours_per_day * sizing.hoursPerMonth.value / 24
    # the tokens a month are served at the mean rate where one is declared: the replicas for the peak cost the same
    # all month, and a per-token cost at the peak, around the clock, was a floor off-peak hours never reach (review
    # sizreview5 F4)
    # A service sized by its clients (concurrency) has no peak rate AL377 holds the mean under: the mean is at most
    # what its replicas serve (review sizreview7 F4: meanRps 50 on replicas serving 0.71 req/s priced tokens at $0.06/M)
    mean = min(w.traffic.mean_rps, rps) if w.traffic.mean_rps is not None else rps
    tokens_month = mean * (w.traffic.input_tokens + w.traffic.output_tokens) * 3600 * w.hours_per_day * sizing.hoursPerMonth.value / 24
    sharing, slower = (instance, []) if instance else _sharing(w, gpu, layout, replicas=replicas, load=load, sizing=sizing)
    chosen = _mig_profile(whole, sharing)
    if chosen is not None and whole.mig is not None and chosen.sms is None:
        # a profile no lgip lists the SMs of is sized on a fallback the user should see (review sizreview27 R3)
        notes.append(f"MIG {chosen.name} is sized on {whole.mig.compute_basis(chosen)} of the compute and "
                     f"{_memory_basis(whole.mig, chosen)}")  # fmt: skip
    if slower and gpu.mig is not None:
        verb = "holds" if len(slower) == 1 else "hold"
        mig = gpu.mig
        bases = "; ".join(f"{name}: {mig.compute_basis(p)}, {_memory_basis(mig, p)}"
                          for name in slower for p in mig.profiles if p.name == name)  # fmt: skip
        notes.append(f"MIG {', '.join(slower)} {verb} the model but not its latency targets or load on a slice's share of "
                     f"the compute and the HBM bandwidth ({bases}: reviews sizreview23 G3, sizreview26 G1)")  # fmt: skip
    layout_memory = layout.weights_bytes + layout.batch * layout.kv_bytes_per_sequence
    return WorkloadPlan(
        name=w.name, kind=w.kind, team=w.team, pool=place.pool, accelerator=gpu.id, gpus=gpus, min_gpus=layout.tp,
        model_state_gib=layout.weights_bytes / GIB,
        memory_per_gpu_gib=layout_memory / layout.tp / GIB,
        gpu_hours=hours, wall_clock_days=None, hours_per_day=w.hours_per_day, checkpoint_gib=None, checkpoint_write_gbps=None,
        dataset_read_gbps=None, network_gbps_per_gpu=None, rdma_required=False, replicas=replicas,
        tokens_per_second_per_replica=layout.tokens_per_second,
        gpus_per_replica=layout.tp, tensor_parallel=layout.tp, sharing=sharing, sharing_declared=instance is not None,
        tokens_per_month=tokens_month, fits=fits,
        figures=tuple(figures), notes=tuple(notes), issues=tuple(issues),
    )  # fmt: skip


def _ttft_target(w: Workload, layout: ReplicaPerformance) -> tuple[int, float] | None:
    """(percentile, target s) of a declared time-to-first-token percentile at a peak rate, or None."""
    target = w.latency.time_to_first_token if w.latency else None
    if target is None or w.traffic is None or w.traffic.peak_rps is None:
        return None
    ttft = _slo(target)
    if ttft is None or ttft <= layout.prefill_seconds:  # a lone prompt misses it: the layout search says so (PL303)
        return None
    return (99 if target.p99 is not None else 95), ttft


@dataclass(frozen=True)
class _PromptSteps:
    """The engine steps a prompt rides at one arrival rate a replica, as vLLM V1 composes them."""

    step: float  # s: a decode step at the batch the rate keeps
    chunks: int  # steps its prefill takes: ceil(prompt / room), room the step's token budget less the decodes
    room: int  # prompt tokens a step carries beside the decodes
    service: float  # s: its prefill and a decode step a chunk
    next_chunk: float  # s: the next waiting prompt's chunk that fills the rest of the step finishing this one
    running: float  # sequences decoding on average (Little's law)


def _prompt_steps(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, arrival: float) -> _PromptSteps:
    """The steps that carry a prompt at ``arrival`` prompts a second a replica. vLLM V1 schedules the running sequences'
    decodes first and fills the rest of the step's token budget (max-num-batched-tokens) with waiting prompts' chunks,
    oldest first and as many as fit (vllm/v1/core/sched/scheduler.py, schedule(): the running loop before the waiting
    loop, while token_budget > 0), so each of a prompt's steps also decodes every running sequence, and the step that
    finishes it carries the next waiting prompt's first chunk: 2,048 - 3 decodes - 1,500 = 545 tokens, 131 ms, for the
    reference chat-70b. The running batch is the one ``arrival`` prompts a second keep: Little's law over a sequence's
    output tokens, each an interval of a decode step and its share of the prompts' prefill (token_interval_seconds), at
    most the planned batch; replicas added for latency run smaller batches than the rate's, and their shorter steps."""
    assert w.traffic is not None
    replica = _replica(w, gpu, sizing, layout.tp)
    isl, osl = w.traffic.input_tokens, w.traffic.output_tokens
    running = 0.0
    for _ in range(64):  # the fixed point from below: the interval grows with the batch, slower than the batch
        running = min(layout.batch, arrival * osl * token_interval_seconds(replica, isl, osl, max(1.0, running)))
    batch = max(1.0, running)
    step = step_seconds(replica, isl, osl, batch)
    room = max(1, default_chunk_tokens(gpu, sizing) - math.ceil(batch))
    chunks = math.ceil(isl / room)
    tail = isl - (chunks - 1) * room  # the final chunk's tokens
    next_chunk = layout.prefill_seconds * min(isl, room - tail) / isl
    return _PromptSteps(step, chunks, room, layout.prefill_seconds + chunks * step, next_chunk, running)


def _ttft_share(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, *, target: float, arrival: float) -> float:
    """The share of prompts past ``target`` s at ``arrival`` a replica, the steps composed as vLLM composes them: the
    rest of the step running when a prompt arrives, the full steps of the prompts ahead of it, and its final step with
    the next prompts' chunks (alicerce.plan.queueing.share_past_first_token; review sizreview19 F2: an M/D/1 of whole
    prompts with a prefill and one decode step as service planned 6 replicas for the reference chat-70b's TTFT, where
    a simulation of the scheduler needs 8). The engine is idle, and a prompt starts at once, e^-running of the time
    no prompt waits (the running sequences Poisson, as in any M/G/infinity)."""
    assert w.traffic is not None
    steps = _prompt_steps(w, layout, gpu, sizing, arrival)
    isl = w.traffic.input_tokens
    return share_past_first_token(arrival, isl, steps.room, steps.step, layout.prefill_seconds / isl, target,
                                  -math.expm1(-steps.running))  # fmt: skip


def _ttft_floor(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, target: float) -> float:
    """The share past ``target`` with next to no other prompt: what no number of replicas lowers."""
    assert w.traffic is not None and w.traffic.peak_rps is not None
    return _ttft_share(w, layout, gpu, sizing, target=target, arrival=w.traffic.peak_rps * 1e-9)


def _ttft_floor_holds(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing) -> bool:
    """Whether a lone prompt on an idle replica meets the declared time-to-first-token percentile: its prefill and the
    decode steps it rides within the target. _replicas_for_ttft answers ``start`` where it does not (no count of replicas
    meets it), so a caller that reads ``start`` as "meets it" must ask this first (review sizreview26 D1: a 1g.10gb slice
    on which every 2,800-token prompt missed a 100 ms p99 was recommended)."""
    ttft = _ttft_target(w, layout)
    if ttft is None or w.traffic is None or w.traffic.peak_rps is None:
        return True
    percentile, target = ttft
    return _ttft_floor(w, layout, gpu, sizing, target) <= 1 - percentile / 100


def _replicas_for_ttft(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, start: int) -> int:
    """The fewest replicas, from ``start``, at which the declared time-to-first-token percentile holds under random
    arrivals: a prompt that arrives while another prefills waits for it, and its time to first token is that wait
    plus the steps carrying its own prefill (_ttft_share; alicerce.plan.queueing, M/D/1)."""
    ttft = _ttft_target(w, layout)
    if ttft is None or w.traffic is None or w.traffic.peak_rps is None:
        return start
    percentile, target = ttft
    if _ttft_floor(w, layout, gpu, sizing, target) > 1 - percentile / 100:
        return start  # replicas cannot meet it (PL331 says so)
    return fewest_replicas(w.traffic.peak_rps, lambda arrival: _ttft_share(w, layout, gpu, sizing, target=target, arrival=arrival),
                           1 - percentile / 100, start)  # fmt: skip


@dataclass(frozen=True)
class _PrefillStall:
    """A time-per-output-token percentile that steps carrying prompts' prefill chunks outlast."""

    percentile: int
    target: float  # s
    budget_tokens: int  # the engine's max-num-batched-tokens
    mixed_step: float  # s: a decode step of the planned batch plus one chunk of a prefill
    full_step: float  # s: a decode step of the planned batch whose budget is full of prompts' chunks

    def within(self, step: float, per_token: float) -> int:
        """Prompt tokens a step of ``step`` s of decodes may carry and stay within the target."""
        return max(0, math.floor((self.target - step) / per_token))


def _tpot_stall(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing) -> _PrefillStall | None:
    """The prefill-carrying steps of a declared time-per-output-token percentile at a peak rate, where they can outlast it.

    The SLI (vLLM's inter-token latency histogram, alicerce.catalog.alerts) records one interval per running sequence
    per step; vLLM V1 schedules the running decodes first and fills the rest of the step's token budget
    (max-num-batched-tokens) with waiting prompts' chunks, several prompts' where they fit, so a step lasts the decode
    step plus the prefill of up to budget - batch tokens. None where no target or peak rate is declared, or even a step
    whose budget is full of prompt tokens stays within the target: one prompt's chunk within it is not enough, since
    short prompts arriving together share a step (review sizreview19 F1)."""
    target = w.latency.time_per_output_token if w.latency else None
    tpot = _slo(target)
    if target is None or tpot is None or w.traffic is None or w.traffic.peak_rps is None:
        return None
    isl = w.traffic.input_tokens
    budget = default_chunk_tokens(gpu, sizing)
    room = max(1, budget - math.ceil(layout.batch))
    chunks = math.ceil(isl / room)
    per_token = layout.prefill_seconds / isl
    full = layout.step_seconds + room * per_token
    if full <= tpot:
        return None
    mixed = layout.step_seconds + layout.prefill_seconds / chunks
    return _PrefillStall(99 if target.p99 is not None else 95, tpot, budget, mixed, full)


def _intervals_past(  # noqa: PLR0917 - the replica, its GPU and the rate, each needed
    w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, stall: _PrefillStall, arrival: float
) -> float:
    """The share of inter-token intervals in steps past the target: the share of steps carrying more prompt tokens than
    fit within it, the steps packed as vLLM packs them (alicerce.plan.queueing.share_of_slow_steps), each a decode step
    of the batch ``arrival`` keeps running and its room for prompts, as the time to first token reads them
    (_prompt_steps). At the planned (saturated) batch's step, 18.7 ms where 7 req/s keep 17 sequences at 9.5 ms, an 8B
    service read 1.50% of intervals past 50 ms on one replica and bought two; a simulation of the scheduler gives 0.54%
    (review sizreview35 D-A)."""
    assert w.traffic is not None
    isl = w.traffic.input_tokens
    steps = _prompt_steps(w, layout, gpu, sizing, arrival)
    return share_of_slow_steps(arrival, isl, steps.room, steps.step, layout.prefill_seconds / isl, stall.target)


def _replicas_for_tpot(w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, start: int) -> int:
    """The fewest replicas, from ``start``, at which no more than the percentile's allowance of inter-token intervals
    fall in steps that carry more prompt tokens than the target allows (_intervals_past)."""
    stall = _tpot_stall(w, layout, gpu, sizing)
    if stall is None or w.traffic is None or w.traffic.peak_rps is None:
        return start
    allowed = 1 - stall.percentile / 100
    return fewest_replicas(w.traffic.peak_rps, lambda arrival: _intervals_past(w, layout, gpu, sizing, stall, arrival), allowed, start)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _latency_replicas(
    w: Workload, layout: ReplicaPerformance, gpu: Gpu, sizing: Sizing, *, replicas: int, by_throughput: int | None,
    figures: list[Figure], device: str, part: str = "GPU",
) -> list[Issue]:  # fmt: skip
    """PL331: the replicas the latency percentiles need beyond the ones throughput needs, which target needs them and
    what they cost: meeting a p99 by replicas alone can take many times the GPUs, where a looser target, shorter
    prompts, a smaller prefill chunk or a faster prefill is the cheaper answer, and that is the user's call; the plan
    sizes what the spec declares. ``device``: the GPU or MIG instance the engine runs on, as the finding names it;
    ``part``: what a replica's units are (GPU, MIG instance, time slice)."""
    if w.traffic is None or w.traffic.peak_rps is None or by_throughput is None:
        return []
    peak = w.traffic.peak_rps
    reasons: list[str] = []
    issues: list[Issue] = []
    ttft = _ttft_target(w, layout)
    if ttft is not None:
        percentile, target = ttft
        steps = _prompt_steps(w, layout, gpu, sizing, peak / replicas)
        late = _ttft_share(w, layout, gpu, sizing, target=target, arrival=peak / replicas)
        figures.append(Figure("requests past the TTFT target", late, "share",
                              "P(rest of the step running at arrival + the full steps of the prompt tokens ahead + its final "
                              "step, with the chunks of prompts arrived behind it > target): the prompt tokens waiting at "
                              "each step's start as a Markov chain, each step decoding the batch the rate keeps and "
                              "carrying up to max-num-batched-tokens less the decodes of prompt tokens, oldest first, at "
                              "the peak rate over the replicas",
                              {"prefill utilisation": peak / replicas * steps.service, "prefill + decode step s": steps.service,
                               "next prompt's chunk s": steps.next_chunk, "running batch": steps.running,
                               "target s": target}))  # fmt: skip
        floor = _ttft_floor(w, layout, gpu, sizing, target)
        if floor > 1 - percentile / 100:
            alone = _prompt_steps(w, layout, gpu, sizing, peak * 1e-9)  # one sequence decoding: its own
            lone = "its step" if alone.chunks == 1 else f"its {alone.chunks} steps"
            issues.append(Issue("PL303", f"p{percentile} time to first token {target * 1000:g} ms: a lone prompt's "
                                f"{layout.prefill_seconds * 1000:.0f} ms prefill and the decode of {lone} take "
                                f"{alone.service * 1000:.0f} ms on an idle replica, so {floor:.1%} of prompts miss it whatever "
                                "the replicas: a looser target, shorter prompts or a faster prefill would meet it"))  # fmt: skip
        elif _replicas_for_ttft(w, layout, gpu, sizing, by_throughput) > by_throughput:
            before = _ttft_share(w, layout, gpu, sizing, target=target, arrival=peak / by_throughput)
            rides = _prompt_steps(w, layout, gpu, sizing, peak / by_throughput)
            step = rides.service - layout.prefill_seconds
            decode = "decode step it rides" if rides.chunks == 1 else f"{rides.chunks} decode steps it rides"
            reasons.append(f"p{percentile} time to first token {target * 1000:g} ms leaves "
                           f"{max(0.0, target - rides.service) * 1000:.0f} ms after its "
                           f"{layout.prefill_seconds * 1000:.0f} ms prefill and the {step * 1000:.0f} ms {decode}, less "
                           f"the {rides.next_chunk * 1000:.0f} ms of the next prompt's chunk its last step carries where "
                           f"one waits (at {_count(by_throughput, 'replica')} about "
                           f"{before:.1%} of requests arrive while other prompts prefill and wait past it; "
                           f"{_replicas_for_ttft(w, layout, gpu, sizing, by_throughput)} hold it): a looser target, shorter prompts or a "
                           "faster prefill (more tensor parallelism, GPUs joined by NVLink) would save them")  # fmt: skip
    stall = _tpot_stall(w, layout, gpu, sizing)
    if stall is not None:
        past = _intervals_past(w, layout, gpu, sizing, stall, peak / replicas)
        # the chain runs at the batch the arrival keeps (review sizreview35 D-A); the stall's figures are the planned batch's
        running = _prompt_steps(w, layout, gpu, sizing, peak / replicas)
        per_token = layout.prefill_seconds / w.traffic.input_tokens
        figures.append(Figure("inter-token intervals past the TPOT target", past, "share",
                              "the share of steps carrying more prompt tokens than fit within the target beside the decode "
                              "step of the batch the arrival keeps running, the waiting prompts' chunks packed into each "
                              "step's room oldest first (a Markov chain over the prompt tokens waiting at each step), every "
                              "running sequence's interval in them",
                              {"arrival per replica": peak / replicas, "running batch": running.running,
                               "decode step at it s": running.step, "room for prompt tokens": running.room,
                               "prefill s a prompt token": per_token,
                               "prompt tokens within the target": stall.within(running.step, per_token),
                               "chunks a prompt": running.chunks, "max-num-batched-tokens": stall.budget_tokens,
                               "step with a chunk at the planned batch s": stall.mixed_step,
                               "full step at the planned batch s": stall.full_step, "target s": stall.target}))  # fmt: skip
        needed = _replicas_for_tpot(w, layout, gpu, sizing, by_throughput)
        if needed > by_throughput:
            before = _intervals_past(w, layout, gpu, sizing, stall, peak / by_throughput)
            # the steps at the batch the throughput's replicas keep running, the ones the share is taken at
            at = _prompt_steps(w, layout, gpu, sizing, peak / by_throughput)
            chunks = "one step" if at.chunks == 1 else f"{at.chunks} steps"
            within = stall.within(at.step, per_token)
            reasons.append(f"p{stall.percentile} time per output token {stall.target * 1000:g} ms: a step that prefills a "
                           f"{w.traffic.input_tokens:,}-token prompt ({chunks} at vLLM's default max-num-batched-tokens "
                           f"{stall.budget_tokens} on {device}) lasts {(at.step + layout.prefill_seconds / at.chunks) * 1000:.0f} "
                           f"ms, one full of prompts' chunks {(at.step + at.room * per_token) * 1000:.0f} ms, and a step "
                           f"carrying more than {within:,} prompt tokens outlasts the target; every running "
                           f"sequence records it as an inter-token interval (at {_count(by_throughput, 'replica')} {before:.2%} of "
                           f"intervals, {1 - stall.percentile / 100:.0%} allowed; {needed} hold it): a smaller "
                           "max-num-batched-tokens (a full step within the target), a looser target or a faster "
                           "prefill would save them")  # fmt: skip
    if replicas <= by_throughput or not reasons:
        return issues
    extra = (replicas - by_throughput) * layout.tp
    return [*issues, Issue("PL331", f"sized at {replicas} replicas, where throughput needs {by_throughput}: {_count(extra, part)} for the "
                  f"latency {'targets' if len(reasons) > 1 else 'target'}; " + "; ".join(reasons))]  # fmt: skip


def _sharing(
    w: Workload, gpu: Gpu, layout: ReplicaPerformance, *, replicas: int, load: float, sizing: Sizing
) -> tuple[str | None, list[str]]:
    """MIG or time-slicing for a model too small to fill a GPU (None when whole GPUs are right), and the smaller MIG
    profiles that hold the model but are too slow for it."""
    if layout.tp != 1 or replicas != 1 or load >= 0.5:
        return None, []
    assert w.traffic is not None
    kv = max(1, math.ceil(load * layout.batch)) * layout.kv_bytes_per_sequence
    need = (layout.weights_bytes + kv) / (1 - sizing.memoryReserveFraction.value)
    if gpu.mig is not None:
        # the slice must carry the replica's load too: its compute slices of the GPU's (a replica at 30% of a GPU's load
        # on a 1/7 slice queued from the start: review sizreview10 F7), and meet its latency targets on its own share of
        # the compute and of the HBM bandwidth (review sizreview23 G3); time-slicing shares the whole GPU
        computing = gpu.mig.computeSlices
        slower: list[str] = []
        for profile in sorted(gpu.mig.profiles, key=lambda p: (p.memoryGiB, p.slices)):
            share = gpu.mig.compute_share(profile)
            if profile.slices < computing and profile.memoryGiB * GIB >= need and share >= load:
                if _serves_on_slice(w, mig_slice(gpu, profile.name), sizing):
                    return f"mig {profile.name}", slower
                slower.append(profile.name)
        return None, slower
    slices = max(2, min(8, int(1 / max(load, 0.125))))
    return f"time-slicing x{slices}", []


def _mig_profile(gpu: Gpu, sharing: str | None) -> MigProfile | None:
    """The MIG profile a sharing recommendation names ("mig 1g.10gb"), or None."""
    if gpu.mig is None or sharing is None or not sharing.startswith("mig "):
        return None
    name = sharing.removeprefix("mig ")
    return next((p for p in gpu.mig.profiles if p.name == name), None)


def _memory_basis(mig: Mig, profile: MigProfile) -> str:
    """What Mig.memory_share reads for the profile, for the notes (review sizreview26 N5: "memory slices / its memory
    share" where a user catalog gives no memory slices)."""
    if profile.memorySlices is not None and mig.memorySlices is not None:
        return f"{profile.memorySlices} of {mig.memorySlices} memory slices"
    return f"{profile.memoryGiB:g} of {max(p.memoryGiB for p in mig.profiles):g} GiB"


def mig_slice(gpu: Gpu, profile_name: str) -> Gpu:
    """The GPU a MIG instance is to the roofline: its SMs' share of the peak FLOP/s (Mig.compute_share), its memory slices' share
    of the HBM bandwidth (each memory slice is 1/8 of the framebuffer with its memory controllers: NVIDIA MIG user guide,
    "Concepts" and "Supported MIG Profiles", the 1g.10gb of an H100 80GB 1/8 of the memory and 16 of its 132 SMs) and its
    framebuffer; vLLM sizes its batch and chunk defaults by the memory the device reports, the slice's."""
    assert gpu.mig is not None
    profile = next(p for p in gpu.mig.profiles if p.name == profile_name)
    compute = gpu.mig.compute_share(profile)
    t = gpu.tflops
    tflops = t.model_copy(update={k: (v * compute if v is not None else None) for k, v in t.model_dump().items()})
    return gpu.model_copy(update={"tflops": tflops, "memoryGB": profile.memoryGiB, "inlineEcc": False, "mig": None,
                                  "memoryBandwidthGBps": gpu.memoryBandwidthGBps * gpu.mig.memory_share(profile)})  # fmt: skip


def _pool_unit(w: Workload, gpu: Gpu, shared: MigSharing | TimeSlicing, sizing: Sizing) -> tuple[str, Gpu, Workload] | None:
    """The part of a shared pool's GPU a replica of ``w`` runs in, as its sharing names it ("mig 1g.10gb",
    "time-slicing x4"), the GPU that part is to the roofline, and ``w`` as it is sized there; None where no part holds
    the model and meets its latency targets (its load is spread over as many as it needs). A MIG pool: the smallest of
    its instances that does. A time-sliced pool: a slice of the whole GPU's compute and bandwidth, shared by the pods
    that fill it (the device plugin isolates neither: NVIDIA k8s-device-plugin README, "Shared Access to GPUs with CUDA
    Time-Slicing"); each pod sees the GPU's whole memory, so the engine's memory fraction (kvMemoryFraction, vLLM's
    --gpu-memory-utilization) is of the whole GPU: where undeclared, the default over the pods that share it (0.9 / 4:
    0.225), which the plan's notes tell the user to start the engine with (review sizreview39 D3: sized on a quarter
    of the memory at 0.9, a declared 0.225 was read as 0.225 of the quarter)."""
    if isinstance(shared, TimeSlicing):
        default = min(sizing.inference.kvMemoryFraction.value / shared.replicas, _sliced_fraction(gpu, shared, sizing))
        fraction = w.kv_memory_fraction or default
        sized = w.model_copy(update={"kv_memory_fraction": fraction})
        part = time_slice(gpu, shared.replicas)
        layout, _ = replica_layout(sized, part, sizing, 1, tp=1)
        return (f"time-slicing x{shared.replicas}", part, sized) if layout is not None else None
    if gpu.mig is None:
        return None
    known = {p.name: p for p in gpu.mig.profiles}
    for name in sorted((n for n in shared.profiles if n in known), key=lambda n: (known[n].memoryGiB, known[n].slices)):
        part = mig_slice(gpu, name)
        if replica_layout(w, part, sizing, 1, tp=1)[0] is not None:
            return f"mig {name}", part, w
    return None


def _sliced_fraction(gpu: Gpu, shared: TimeSlicing, sizing: Sizing) -> float:
    """The most of a time-sliced GPU's memory each of its pods' engines may ask for: vLLM refuses to start where the free
    memory is below its fraction of the whole at start-up (its worker's init_device: "Free memory on device ... on
    startup is less than desired GPU memory utilization"), and the last pod to start finds the others' shares taken
    and its own CUDA context made, outside its share; that is taken as the catalog's memory a GPU holds that is neither
    weights nor KV cache (inference.reservedGiB, the CUDA context in it), a bound on the safe side (review sizreview40
    D4: 1/4 each let the fourth pod fail)."""
    return (1 - sizing.inference.reservedGiB.value * GIB / gpu.memory_bytes) / shared.replicas


def _units_text(shared: MigSharing | TimeSlicing) -> str:
    """The parts a shared pool's GPUs are in: "MIG instance (1g.10gb)", "time slice (4 a GPU)"."""
    if isinstance(shared, TimeSlicing):
        return f"time slice ({shared.replicas} a GPU)"
    return f"MIG instance ({', '.join(shared.profiles)})"


def time_slice(gpu: Gpu, slices: int) -> Gpu:
    """The GPU one of ``slices`` time slices is to the roofline when its neighbours are busy: a share of the peak FLOP/s
    and of the HBM bandwidth (time-slicing isolates neither); its memory is the whole GPU's, which each pod sees, and
    the engine's memory fraction divides (:func:`_pool_unit`)."""
    t = gpu.tflops
    tflops = t.model_copy(update={k: (v / slices if v is not None else None) for k, v in t.model_dump().items()})
    return gpu.model_copy(update={"tflops": tflops, "mig": None, "memoryBandwidthGBps": gpu.memoryBandwidthGBps / slices})


def _serves_on_slice(w: Workload, slice_gpu: Gpu, sizing: Sizing) -> bool:
    """Whether one replica on the slice holds the model, meets the latency targets (the decode step from its weights and
    KV over the slice's bandwidth, the prefill from its compute: replica_layout) and serves the whole load with the
    replicas the TTFT and TPOT percentiles need at one."""
    assert w.traffic is not None
    clients = w.traffic.concurrency if w.traffic.peak_rps is None else None
    layout, _ = replica_layout(w, slice_gpu, sizing, 1, clients=clients, tp=1)
    if layout is None:
        return False
    if w.traffic.peak_rps is None:
        return (clients or 1) <= layout.batch
    return (
        w.traffic.peak_rps <= layout.requests_per_second
        and _ttft_floor_holds(w, layout, slice_gpu, sizing)
        and _replicas_for_ttft(w, layout, slice_gpu, sizing, 1) == 1
        and _replicas_for_tpot(w, layout, slice_gpu, sizing, 1) == 1
    )


# --------------------------------------------------------------------------------------------
# data preparation


def plan_data_prep(w: Workload, place: Placement, sizing: Sizing) -> WorkloadPlan:
    notes: list[str] = []
    size = float(w.dataset.size) if w.dataset else 0.0
    budget = w.deadline or DAY
    if w.deadline is None:
        notes.append("no deadline: sized to process the dataset in one day")
    availability = w.hours_per_day / 24
    read = size / (budget * availability) / 1e9
    cores = max(1, math.ceil(read * 1e3 / sizing.dataPrepMBpsPerCore.value))
    figures = (
        Figure("read throughput", read, "GB/s", "dataset size / (time budget x availability)", {"dataset GiB": size / GIB}),
        Figure("CPU cores", cores, "cores", "throughput / MB/s per core", {"MB/s per core": sizing.dataPrepMBpsPerCore.value}),
    )
    return WorkloadPlan(
        name=w.name, kind=w.kind, team=w.team, pool=place.pool, accelerator=None, gpus=None, min_gpus=None,
        model_state_gib=None, memory_per_gpu_gib=None, gpu_hours=None, wall_clock_days=budget / DAY,
        checkpoint_gib=None, checkpoint_write_gbps=None, dataset_read_gbps=read, network_gbps_per_gpu=None,
        rdma_required=None, replicas=None, tokens_per_second_per_replica=None, cpu_cores=cores, figures=figures,
        notes=tuple(notes), deadline_days=w.deadline / DAY if w.deadline else None, hours_per_day=w.hours_per_day,
    )  # fmt: skip


def plan_workload(w: Workload, place: Placement, sizing: Sizing, candidates: list[Gpu]) -> WorkloadPlan:
    """Size one workload on its placement."""
    if w.kind == "data-prep":
        return plan_data_prep(w, place, sizing)
    if place.gpu is None or w.model is None:
        return _empty(w, place, [], [], {}, [Issue("PL303", "no GPU to size it for: give it an accelerator or a GPU pool")])
    if w.kind in ("training", "fine-tuning"):
        if w.tokens is None:
            return _empty(w, place, [], [], {}, [Issue("PL303", "no tokens declared")])
        return plan_training(w, place, sizing, candidates)
    return plan_inference(w, place, sizing, candidates)
