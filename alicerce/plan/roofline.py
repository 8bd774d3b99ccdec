"""Inference as a roofline with measured efficiencies.

One replica is ``tp`` GPUs joined by tensor parallelism. For requests of ``isl`` prompt and ``osl``
generated tokens::

    W       = parameters x bytes per weight             every expert resident
    kv      = 2 x layers x KV heads x head dim x KV bytes   per token
              (MLA: layers x (KV latent + RoPE key) x KV bytes; sliding layers hold at most their window)
              held by the replica kv x copies: tp / KV heads where fewer heads than GPUs, tp for MLA's latent
    B       = min(batch cap, pool / (kv x admitted), latency limit)
              pool: the engine's KV-cache pool (``kv_pool_bytes``): TensorRT-LLM takes a fraction f of the memory
              free after weights and its reserved memory R (activations, workspace, context), f x (tp x (memory - R)
              - W); vLLM and SGLang a fraction f of each GPU's whole memory, less weights and R: tp x (f x memory - R) - W
              admitted: the tokens a sequence holds in the engine's KV accounting (see ``kv_tokens_admitted``):
              isl + osl where the engine reserves a request's whole length when it admits it (TensorRT-LLM's
              default GUARANTEED_NO_EVICT), isl + osl/2 where it allocates blocks as tokens arrive and preempts
              when full (vLLM): then the batch holds, on average, what the decode step reads
              latency limit: step(B) + B x prefill / osl <= TPOT target (prefills share the replica)
    c_tok   = 2 all-reduces x layers x hidden x 2 bytes x 2(tp-1)/tp / (link bandwidth x e_link)
    prefill = (2 x N_active x isl / peak + 2 x layers x isl^2 x hidden / peak_kv) / (tp x e_prefill) + isl x c_tok x e_link / e_bus
              peak_kv: attention runs in the KV cache's type (``gpu_hardware``), the weights' GEMMs at ``peak``
              a prompt's all-reduces carry megabytes: NCCL's bus bandwidth e_bus (training.tpLinkEfficiency), not e_link
    step(B) = (W_read + B x kv x (isl + osl/2)) / (tp x HBM bandwidth x e_hbm)          weights and KV read
            + (2 x N_active x B / peak + 4 x layers x B x (isl + osl/2) x hidden / peak_kv) / (tp x e_decode)
                                                                                   the compute ceiling
            + B x c_tok + 2 x layers x all-reduce latency (tp > 1) + step overhead
    tokens/s per replica = osl / (prefill + osl x step(B) / B)

``W_read`` of a mixture of experts counts the experts a batch of B tokens touches. Prefill and decode
are each bounded by compute and by memory bandwidth; the batch is bounded by KV-cache memory and by
the time-per-token target. Efficiencies are fitted to published serving results
(catalog/data/calibration-inference.yaml, alicerce/plan/calibrate.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from alicerce.catalog.models import Gpu, Sizing

GIB = 2**30

# How a serving engine charges a sequence against its KV-cache pool when it admits it:
# - "on-demand": vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py, Scheduler.schedule) allocates a request's
#   blocks for the tokens it computes this step (allocate_slots(request, num_new_tokens)); a waiting request enters
#   when its prompt's blocks are free, and a running one that finds no free block preempts the newest running
#   request (self.running.pop(), recomputed later). The pool is shared by what sequences hold NOW.
# - "reserve": TensorRT-LLM's default capacity scheduler, GUARANTEED_NO_EVICT, admits a request only when the
#   blocks of its prompt plus its maximum output are free, and never evicts (TensorRT-LLM docs, "Useful Runtime
#   Options": Capacity Scheduler Policy).
Admission = Literal["on-demand", "reserve"]


def kv_tokens_read(isl: float, osl: float) -> float:
    """Tokens of KV a decoding sequence holds, averaged over its life: the prompt plus half its output. Sequences
    in a continuously batched replica are spread evenly over their output, so this is also the mean a step reads."""
    return isl + osl / 2


def kv_tokens_admitted(isl: float, osl: float, admission: Admission) -> float:
    """Tokens of KV the engine charges a sequence in flight against its pool: its whole length where admission
    reserves it, else what it holds on average (the pool fills with what sequences hold, and the newest sequence is
    preempted when a step finds it full, so the batch the pool sustains is pool / mean held)."""
    return isl + osl if admission == "reserve" else kv_tokens_read(isl, osl)


@dataclass(frozen=True)
class ServedShape:
    """The model as the roofline sees it."""

    parameters: float
    active_parameters: float
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    kv_latent: int | None = None  # multi-head latent attention: elements cached per token and layer (rank + RoPE key)
    window: int | None = None  # sliding-window attention: tokens a sliding layer attends to and caches
    global_layers: int = 0  # layers that still attend to the whole context
    # attention's FLOPs width where it is not the hidden size: MLA's heads x (head dim + RoPE dim / 2), the training
    # path's figure (sizing.attention_width; review sizreview3 D4: serving used the hidden size for the same model)
    attention_width: int | None = None
    # a MoE's expert layout where the spec declares it (model.experts): its routed experts (total, per token) and the
    # parameters every token reads (attention, dense layers, shared experts)
    experts: tuple[int, int] | None = None
    shared_parameters: float | None = None

    @property
    def attention_hidden(self) -> int:
        return self.attention_width or self.hidden

    def kv_per_token_layer(self, kv_bytes: float) -> float:
        """KV-cache bytes of one token in one layer: keys and values per KV head, or MLA's shared latent
        (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1: (d_c + d_h^R) elements per token and layer)."""
        if self.kv_latent is not None:
            return self.kv_latent * kv_bytes
        return 2 * self.kv_heads * self.head_dim * kv_bytes

    def attended(self, tokens: float) -> float:
        """Token-layers of KV a sequence of ``tokens`` holds, over layers: ``layers x tokens`` unless sliding
        layers keep only their window."""
        if self.window is None:
            return self.layers * tokens
        full = min(self.global_layers, self.layers)
        return full * tokens + (self.layers - full) * min(tokens, self.window)

    def prompt_attended(self, tokens: float) -> float:
        """Token-layers a prompt's tokens attend to on average, scaled so full causal attention counts ``layers x
        tokens`` (the prefill term 2 x tokens x this x width): a causal token i of a sliding layer attends min(i, W),
        so the layer costs 2W - W^2 / tokens, not W (the training path's figure, sizing.attention_width; review
        sizreview3 D9)."""
        if self.window is None or tokens <= self.window:
            return self.layers * tokens
        full = min(self.global_layers, self.layers)
        return full * tokens + (self.layers - full) * (2 * self.window - self.window**2 / tokens)


@dataclass(frozen=True)
class ReplicaHardware:
    """One GPU of the replica and its link to the others."""

    memory_bytes: float
    hbm_bytes_per_second: float
    peak_flops: float  # dense, at the serving precision
    link_bytes_per_second: float  # per direction, NVLink or PCIe
    # every GPU pair on NVLink (an SXM board): vLLM's custom all-reduce runs at any TP; without it, only up to TP 2
    fully_connected: bool = True
    # a PCIe card's NVLink bridge: its per-direction bandwidth, taken by a group the bridge spans (review sizreview3 D6)
    bridge_bytes_per_second: float | None = None
    # dense FLOP/s of attention over the KV cache, which runs in the cache's type, not the weights' (gpu_hardware); None:
    # peak_flops
    attention_flops: float | None = None
    bridge_gpus: int = 0

    @property
    def attention_peak(self) -> float:
        return self.attention_flops or self.peak_flops

    def tp_link(self, tp: int) -> float:
        """Per-direction bytes/s of a ``tp``-GPU group's all-reduces: the NVLink bridge where it spans the group."""
        if self.bridge_bytes_per_second is not None and tp <= self.bridge_gpus:
            return self.bridge_bytes_per_second
        return self.link_bytes_per_second


@dataclass(frozen=True)
class Efficiencies:
    prefill: float
    decode_compute: float
    bandwidth: float
    # per GPU: memory that is neither weights nor KV cache (the engine's activations and workspace, the CUDA context);
    # fitted, since the engines size it from build settings (max tokens a step, batch) a spec does not carry
    reserved_bytes: float
    link: float
    step_overhead: float
    all_reduce_latency: float  # vLLM's custom all-reduce of a decode step's few KB
    nccl_base: float = 0.0  # NCCL's all-reduce where the custom one is off: base + 2 (tp - 1) x a PCIe hop
    nccl_pcie_hop: float = 0.0
    prefill_link: float = 0.0  # of the link bandwidth a prompt's megabyte all-reduces reach (NCCL's bus bandwidth)


@dataclass(frozen=True)
class ReplicaPerformance:
    tp: int
    batch: float
    kv_batch_limit: float
    step_seconds: float
    prefill_seconds: float
    tokens_per_second: float
    weights_bytes: float
    kv_bytes_per_sequence: float  # as the engine charges a sequence in flight (``kv_tokens_admitted``), over all its GPUs

    output_tokens: int

    @property
    def requests_per_second(self) -> float:
        return self.tokens_per_second / self.output_tokens


@dataclass(frozen=True)
class Replica:
    """One replica: the model, its tensor-parallel degree, the GPUs and the efficiencies they reach."""

    shape: ServedShape
    tp: int
    hw: ReplicaHardware
    eff: Efficiencies
    bytes_per_weight: float
    kv_bytes: float
    admission: Admission = "on-demand"  # how the engine charges KV at admission (``kv_tokens_admitted``)
    kv_fraction: float = 0.9  # the engine's KV-cache memory fraction (``kv_pool_bytes``)

    @property
    def weights(self) -> float:
        return self.shape.parameters * self.bytes_per_weight

    @property
    def kv_per_token_layer(self) -> float:
        return self.shape.kv_per_token_layer(self.kv_bytes)

    def kv_sequence(self, tokens: float) -> float:
        """KV-cache bytes of one sequence of ``tokens`` (sliding layers hold at most their window)."""
        return self.kv_per_token_layer * self.shape.attended(tokens)

    @property
    def kv_copies(self) -> float:
        """How many times the replica's GPUs together hold one sequence's KV cache. Tensor parallelism splits the cache
        by KV head, so a layout with fewer KV heads than GPUs repeats them: vLLM gives each rank max(1, heads / tp) heads
        (vllm/model_executor/models/llama.py: "the number of KV heads is less than TP size, so we replicate"), tp / heads
        copies; MLA's latent has no head dimension and every rank holds and reads all of it (DeepSeek-V2, arXiv
        2405.04434, Sec. 2.1; vLLM recommends data-parallel attention for MLA for this reason), tp copies. Review
        sizreview3 D4."""
        if self.shape.kv_latent is not None:
            return float(self.tp)
        return max(1.0, self.tp / max(1, self.shape.kv_heads))

    def kv_held(self, tokens: float) -> float:
        """KV-cache bytes the replica's GPUs hold together for one sequence of ``tokens``."""
        return self.kv_sequence(tokens) * self.kv_copies

    @property
    def kv_per_token(self) -> float:
        """KV-cache bytes per token of a sequence with every layer holding it (the dense figure)."""
        return self.shape.layers * self.kv_per_token_layer


def all_reduce_seconds_per_token(r: Replica) -> float:
    """Tensor-parallel all-reduce time per token: two per layer of the hidden state in 16-bit."""
    if r.tp <= 1:
        return 0.0
    return 2 * r.shape.layers * r.shape.hidden * 2 * 2 * (r.tp - 1) / r.tp / (r.hw.tp_link(r.tp) * r.eff.link)


def prefill_seconds(r: Replica, isl: int) -> float:
    shape = r.shape
    # attention over the prompt: isl x the tokens each attends to, per layer (a sliding layer: 2W - W^2 / isl)
    linear = 2 * shape.active_parameters * isl / r.hw.peak_flops
    attention = 2 * isl * shape.prompt_attended(isl) * shape.attention_hidden / r.hw.attention_peak
    compute = (linear + attention) / (r.tp * r.eff.prefill)
    # a prompt's all-reduces carry isl x hidden x 2 bytes each, megabytes, which NCCL moves at its bus bandwidth, not at
    # the small-message efficiency of a decode step's few KB (``prefill_link``; the decode figure where none is set)
    link = r.eff.prefill_link or r.eff.link
    return compute + isl * all_reduce_seconds_per_token(r) * r.eff.link / link


def weights_read(r: Replica, batch: float) -> float:
    """Bytes of weights one decode step reads: all of a dense model; of a MoE, what every token reads and the routed
    experts its ``batch`` tokens touch, each routing k of E: shared + routed x (1 - (1 - k / E) ^ batch). Without the
    layout, the active parameters and the share of the rest the other tokens touch. It read active + (n - active) x
    active / n for one token, 1.9x what a DeepSeek-V3 token reads, and spread the shared weights as routed (review
    sizreview10 F8: a latency-bound DeepSeek-V3 took 88 H200s where 56 serve it)."""
    shape, n, active = r.shape, r.shape.parameters, r.shape.active_parameters
    if active >= n:
        return n * r.bytes_per_weight
    tokens = max(batch, 1.0)
    if shape.experts is not None and shape.shared_parameters is not None:
        total, k = shape.experts
        routed: float = (n - shape.shared_parameters) * (1 - (1 - k / total) ** tokens)
        return r.bytes_per_weight * (shape.shared_parameters + routed)
    touched: float = 1 - (1 - active / n) ** (tokens - 1)
    return r.bytes_per_weight * (active + (n - active) * touched)


def step_seconds(r: Replica, isl: int, osl: int, batch: float) -> float:
    """One decode step of ``batch`` sequences: memory reads, the compute ceiling, all-reduces, overhead."""
    shape, eff = r.shape, r.eff
    context = kv_tokens_read(isl, osl)
    memory = (weights_read(r, batch) + batch * r.kv_held(context)) / (r.tp * r.hw.hbm_bytes_per_second * eff.bandwidth)
    linear = 2 * shape.active_parameters * batch / r.hw.peak_flops
    attention = 4 * batch * shape.attended(context) * shape.attention_hidden / r.hw.attention_peak
    compute = (linear + attention) / (r.tp * eff.decode_compute)
    latency = 2 * shape.layers * all_reduce_latency(r)
    return memory + compute + batch * all_reduce_seconds_per_token(r) + latency + eff.step_overhead


def all_reduce_latency(r: Replica) -> float:
    """Seconds one decode-step all-reduce (a few KB) takes regardless of its size: vLLM's custom all-reduce where it
    runs (every GPU pair on NVLink, or at most 2 GPUs), else NCCL's one-node LL ring over PCIe, whose latency grows with
    the hops (vLLM custom_all_reduce.py: off on more than two PCIe-only GPUs)."""
    if r.tp <= 1:
        return 0.0
    if r.tp <= 2 or r.hw.fully_connected:
        return r.eff.all_reduce_latency
    return r.eff.nccl_base + 2 * (r.tp - 1) * r.eff.nccl_pcie_hop


def token_interval_seconds(r: Replica, isl: int, osl: int, batch: float) -> float:
    """Mean time between a sequence's output tokens when new requests' prefills share the replica.

    In steady state a replica spends ``osl x step + batch x prefill`` to move ``batch`` sequences through
    ``osl`` tokens each (the throughput formula), so each sequence waits ``step + batch x prefill / osl``
    per token: the decode step alone understates it wherever prefill is long (PCIe tensor parallel, long
    prompts). This is what a time-per-output-token target bounds."""
    return step_seconds(r, isl, osl, batch) + batch * prefill_seconds(r, isl) / osl


def kv_pool_bytes(r: Replica) -> float:
    """The replica's KV-cache pool, as its engine sizes it (0 when the weights and reserved memory alone do not fit).

    - TensorRT-LLM (``reserve``, its GUARANTEED_NO_EVICT default): KvCacheConfig.free_gpu_memory_fraction of the memory
      free once the weights and the engine's activations are in place, default 0.90 (TensorRT-LLM
      docs/source/performance/perf-overview.md at v0.17 and v1.0: "the default setting of 0.90"; the unseen 0.16 sweep
      prints "KV Memory Percentage: 90.00%").
    - vLLM (``on-demand``): gpu_memory_utilization of each GPU's whole memory, default 0.9, less the weights and the
      activation peak of its profiling run (vllm/worker/worker.py, determine_num_available_blocks: total x utilization
      - peak memory); SGLang's mem_fraction_static likewise of the whole memory."""
    memory, reserved, f = r.hw.memory_bytes, r.eff.reserved_bytes, r.kv_fraction
    if r.admission == "reserve":  # a share of what is free
        return max(0.0, f * (r.tp * (memory - reserved) - r.weights))
    return max(0.0, r.tp * (f * memory - reserved) - r.weights)  # a share of the whole memory


def kv_batch_limit(r: Replica, isl: int, osl: int) -> float:
    """Sequences whose KV cache, as the engine charges it at admission, fits in the engine's pool."""
    return kv_pool_bytes(r) / r.kv_held(kv_tokens_admitted(isl, osl, r.admission))


def latency_batch_limit(r: Replica, isl: int, osl: int, tpot: float) -> float:
    """Largest batch whose time per output token (decode step and shared prefill) stays within ``tpot``
    seconds (0 when even one sequence is too slow)."""
    one = token_interval_seconds(r, isl, osl, 1.0)
    if one > tpot:
        return 0.0
    if r.shape.active_parameters >= r.shape.parameters:  # dense: the interval is linear in the batch
        slope = token_interval_seconds(r, isl, osl, 2.0) - one
        return 1.0 + (tpot - one) / slope if slope > 0 else math.inf
    low, high = 1.0, 2.0  # MoE: more experts are read as the batch grows; bisect the monotone interval
    while token_interval_seconds(r, isl, osl, high) <= tpot and high < 1e6:
        low, high = high, high * 2
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (mid, high) if token_interval_seconds(r, isl, osl, mid) <= tpot else (low, mid)
    return low


def replica_performance(r: Replica, isl: int, osl: int, *, batch_cap: float, tpot: float | None = None) -> ReplicaPerformance | None:
    """Throughput of one replica at the largest batch memory, the cap and the latency target allow."""
    by_memory = kv_batch_limit(r, isl, osl)
    batch = min(batch_cap, by_memory)
    if tpot is not None:
        batch = min(batch, latency_batch_limit(r, isl, osl, tpot))
    if batch < 1:
        return None
    step = step_seconds(r, isl, osl, batch)
    prefill = prefill_seconds(r, isl)
    tokens = osl / (prefill + osl * step / batch)
    kv_sequence = r.kv_held(kv_tokens_admitted(isl, osl, r.admission))  # sliding layers hold at most their window
    return ReplicaPerformance(r.tp, batch, by_memory, step, prefill, tokens, r.weights, kv_sequence, osl)


def gpu_hardware(gpu: Gpu, precision: str, sizing: Sizing, kv_cache: str | None = None) -> ReplicaHardware:
    """The roofline's view of a catalog GPU at a serving precision and KV-cache type (``kv_cache``, as declared)."""
    t = gpu.tflops
    # int8/int4 serve as weight-only quantisation (AWQ, GPTQ; kv_bytes keeps their activations and cache 16-bit): the
    # kernels dequantise to 16 bits and run the 16-bit tensor cores, so their peak is bf16's, not the int8 rate (review
    # sizreview3 D11; vLLM's Marlin/AWQ kernels compute in fp16/bf16)
    peak = {"fp8": t.fp8, "fp4": t.fp4, "fp32": t.tf32}.get(precision) or t.bf16
    # attention runs in the KV cache's type, whatever the weights': over an fp8 cache the fp8 kernels (TensorRT-LLM's
    # FP8 context FMHA; vLLM: "When using the Flash Attention 3 backend with FP8 KV cache, attention operations are also
    # performed in the quantized (FP8) domain", docs/features/quantization/quantized_kvcache.md), over a 16-bit one
    # (vLLM's default `auto` for a 16-bit, 8-bit or 4-bit model; a declared bf16, fp16 or int8 one) the 16-bit kernels,
    # and an fp32 model's default cache is fp32 (sizing.kv_bytes: 4 bytes).
    # It ran at the weights' peak, so an fp8 model with a 16-bit cache attended twice as fast as its kernels do (review
    # sizreview49 D2), and a bf16 model with an fp8 cache at half the speed (sizreview50 D2). No engine attends in fp4.
    attention = (t.fp8 if kv_cache == "fp8" else None) or (t.tf32 if precision == "fp32" and kv_cache is None else None) or t.bf16
    ic = gpu.interconnect
    nvlink = ic.nvlinkBandwidthGBps if gpu.formFactor == "SXM" else None  # an SXM board: NVLink to every peer
    link = nvlink / 2 if nvlink else sizing.inference.pcieGBpsPerDirection.per_direction(ic.pcieGeneration)
    # a PCIe card with NVLink (H100 PCIe/NVL, H200 NVL) takes a bridge that joins at least a pair (2-way; H200 NVL also
    # 4-way, which a server need not have): a TP 2 group all-reduces over it, a wider one crosses PCIe
    bridged = ic.nvlinkBandwidthGBps if gpu.formFactor != "SXM" and ic.nvlinkBandwidthGBps else None
    return ReplicaHardware(
        gpu.memory_bytes, gpu.memoryBandwidthGBps * 1e9, peak * 1e12, link * 1e9, fully_connected=bool(nvlink),
        bridge_bytes_per_second=bridged / 2 * 1e9 if bridged else None, bridge_gpus=2 if bridged else 0,
        attention_flops=attention * 1e12,
    )  # fmt: skip


def efficiencies(sizing: Sizing) -> Efficiencies:
    i = sizing.inference
    return Efficiencies(
        prefill=i.prefillEfficiency.value,
        decode_compute=i.decodeComputeEfficiency.value,
        bandwidth=i.decodeBandwidthEfficiency.value,
        reserved_bytes=i.reservedGiB.value * GIB,
        link=i.linkEfficiency.value,
        step_overhead=i.stepOverheadSeconds.value,
        all_reduce_latency=i.allReduceLatencySeconds.value,
        nccl_base=i.ncclAllReduceBaseSeconds.value,
        nccl_pcie_hop=i.ncclPcieHopSeconds.value,
        prefill_link=sizing.training.tpLinkEfficiency.value,
    )
