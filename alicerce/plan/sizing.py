"""Workload sizing: from a declared workload to GPUs, memory, time, cost, storage and network.

Pure functions over the catalog and the spec's workload models; no I/O. Every figure carries its
formula and inputs (``Figure``) so `alicerce plan --explain` can show the arithmetic. The
assumptions (MFU, bytes per parameter, efficiency factors) live in catalog/data/sizing.yaml with
their sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic.alias_generators import to_camel

from alicerce.catalog import Catalog
from alicerce.catalog.models import Gpu, InstanceType, Sizing
from alicerce.spec.models import Workload

GIB = 2**30
DAY = 86400.0
DEFAULT_SEQUENCE = 4096
NODE_GPUS = 8
TP_DEGREES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Figure:
    """One computed number with how it was computed."""

    name: str
    value: float | None
    unit: str
    formula: str
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """Where a workload is sized for: its pool (if any) and the accelerator."""

    pool: str | None
    gpu: Gpu | None
    gpus_per_node: int
    instance: InstanceType | None  # the pool's AWS type, for prices


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
    cost_usd: float | None
    checkpoint_gib: float | None
    checkpoint_write_gbps: float | None
    dataset_read_gbps: float | None
    network_gbps_per_gpu: float | None
    rdma_required: bool | None
    replicas: int | None
    tokens_per_second_per_replica: float | None
    gpus_per_replica: int | None = None
    tensor_parallel: int | None = None
    sharing: str | None = None
    cpu_cores: int | None = None
    deadline_days: float | None = None
    fits: dict[str, int | None] = field(default_factory=dict)  # candidate GPU -> smallest count that fits
    figures: tuple[Figure, ...] = ()
    notes: tuple[str, ...] = ()

    JSON_FIELDS = (
        "name", "kind", "accelerator", "gpus", "min_gpus", "model_state_gib", "memory_per_gpu_gib", "gpu_hours",
        "wall_clock_days", "cost_usd", "checkpoint_gib", "checkpoint_write_gbps", "dataset_read_gbps",
        "network_gbps_per_gpu", "rdma_required", "replicas", "tokens_per_second_per_replica",
    )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """camelCase keys, like the spec and every other JSON document alicerce prints."""
        out: dict[str, Any] = {to_camel(name): _round(getattr(self, name)) for name in self.JSON_FIELDS}
        out.update(
            team=self.team, pool=self.pool, gpusPerReplica=self.gpus_per_replica, tensorParallel=self.tensor_parallel,
            sharing=self.sharing, cpuCores=self.cpu_cores, fits=self.fits, notes=list(self.notes),
        )  # fmt: skip
        return out


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3) if abs(value) < 1000 else round(value, 1)
    return value


# --------------------------------------------------------------------------------------------
# building blocks (each exact arithmetic, tested on its own)


def model_state_bytes(parameters: float, optimizer: str, sizing: Sizing) -> float:
    """Weights + gradients + optimizer state in mixed-precision training (ZeRO's 16 bytes/param for Adam)."""
    per_param: float = getattr(sizing.bytesPerParameter, optimizer).value
    return parameters * per_param


def sharded_bytes(total: float, ways: int) -> float:
    """ZeRO stage 3 / FSDP: every byte of model state lives on one of ``ways`` data-parallel GPUs."""
    return total / ways


def peak_tflops(gpu: Gpu, precision: str) -> float:
    t = gpu.tflops
    table = {"fp32": t.tf32 or t.fp32, "bf16": t.bf16, "fp16": t.fp16, "fp8": t.fp8, "int8": t.int8, "fp4": t.fp4, "int4": t.int8}
    return table.get(precision) or t.bf16


def usable_memory(gpu: Gpu, sizing: Sizing) -> float:
    """GPU memory in bytes left after CUDA context, NCCL buffers and fragmentation.

    Datacenter GPUs marketed as "80GB" carry 80 GiB, so the marketed figure is read as GiB.
    """
    return gpu.memoryGB * GIB * (1 - sizing.memoryReserveFraction.value)


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


def gpu_price_per_hour(gpu: Gpu, catalog: Catalog, instance: InstanceType | None) -> tuple[float | None, str | None]:
    """USD per GPU-hour: the pool's instance type, else the cheapest catalog type with this GPU."""
    if instance is not None and instance.gpus:
        return instance.price.usdPerHour / instance.gpus, instance.type
    offers = [i for i in catalog.instances if i.gpu == gpu.id and i.gpus]
    if not offers:
        return None, None
    best = min(offers, key=lambda i: i.price.usdPerHour / i.gpus)
    return best.price.usdPerHour / best.gpus, best.type


def _ceil_to(value: float, step: int) -> int:
    return max(step, math.ceil(value / step) * step)


# --------------------------------------------------------------------------------------------
# training and fine-tuning


@dataclass(frozen=True)
class TrainingMemory:
    state: float  # bytes of model state (whole model)
    activations: float  # bytes per GPU at tensor parallel 1 with full recomputation
    activations_no_recompute: float
    checkpoint: float
    trainable: float  # parameters with gradients


def training_memory(w: Workload, sizing: Sizing) -> TrainingMemory:
    assert w.model is not None
    n = float(w.model.parameters)
    layers, hidden = shape(n, w.model.layers, w.model.hidden_size, sizing)
    seq = w.sequence_length or DEFAULT_SEQUENCE
    act = sizing.activationBytes
    per_layer_tokens = seq * hidden
    with_recompute = layers * per_layer_tokens * act.fullRecompute + per_layer_tokens * act.noRecompute
    without = layers * per_layer_tokens * act.noRecompute
    if w.method in ("lora", "qlora"):
        trainable = n * sizing.loraTrainableFraction.value
        base = sizing.qloraBaseBytes.value if w.method == "qlora" else sizing.weightBytes.get(w.precision, 2)
        state = n * base + model_state_bytes(trainable, w.optimizer, sizing)
        checkpoint = trainable * getattr(sizing.bytesPerParameter.checkpoint, w.optimizer).value
    else:
        trainable = n
        state = model_state_bytes(n, w.optimizer, sizing)
        checkpoint = n * getattr(sizing.bytesPerParameter.checkpoint, w.optimizer).value
    return TrainingMemory(state, with_recompute, without, checkpoint, trainable)


def smallest_fit(state: float, activations: float, gpu: Gpu, sizing: Sizing, node_gpus: int) -> tuple[int, int] | None:
    """(GPUs, tensor-parallel degree) of the smallest layout that holds the job, or None.

    Model state is sharded over every GPU (ZeRO-3/FSDP); activations split across the tensor-
    parallel group inside a node.
    """
    usable = usable_memory(gpu, sizing)
    best: tuple[int, int] | None = None
    for tp in (d for d in TP_DEGREES if d <= node_gpus):
        free = usable - activations / tp
        if free <= 0:
            continue
        gpus = _ceil_to(state / free, tp)
        if best is None or gpus < best[0]:
            best = (gpus, tp)
    return best


def plan_training(w: Workload, place: Placement, catalog: Catalog, candidates: list[Gpu]) -> WorkloadPlan:
    sizing = catalog.sizing
    assert w.model is not None and w.tokens is not None and place.gpu is not None
    gpu = place.gpu
    figures: list[Figure] = []
    notes: list[str] = []
    mem = training_memory(w, sizing)
    active = float(w.model.active_parameters or w.model.parameters)
    flops_per = (sizing.loraFlopsPerParameterToken if w.method in ("lora", "qlora") else sizing.trainingFlopsPerParameterToken).value
    total_flops = flops_per * active * w.tokens
    figures.append(Figure("training compute", total_flops, "FLOP", f"{flops_per:g} x active parameters x tokens",
                          {"active parameters": active, "tokens": w.tokens}))  # fmt: skip
    mfu = w.mfu or getattr(sizing.mfu.training, gpu.architecture).value
    peak = peak_tflops(gpu, w.precision)
    per_gpu = peak * 1e12 * mfu
    figures.append(Figure("sustained FLOP/s per GPU", per_gpu, "FLOP/s", "peak x MFU",
                          {"peak TFLOP/s": peak, "precision": w.precision, "MFU": mfu, "gpu": gpu.id}))  # fmt: skip
    gpu_seconds = total_flops / per_gpu
    gpu_hours = gpu_seconds / 3600
    figures.append(Figure("GPU-hours", gpu_hours, "GPU-h", "compute / sustained FLOP/s / 3600", {}))
    figures.append(Figure("model state", mem.state / GIB, "GiB",
                          "parameters x bytes per parameter (weights + gradients + optimizer)",
                          {"parameters": w.model.parameters, "optimizer": w.optimizer, "method": w.method or "full"}))  # fmt: skip
    figures.append(Figure("activations per GPU (full recomputation)", mem.activations / GIB, "GiB",
                          "layers x seq x hidden x 2 B + one layer x seq x hidden x 34 B",
                          {"sequence": w.sequence_length or DEFAULT_SEQUENCE}))  # fmt: skip
    figures.append(Figure("activations per GPU (no recomputation)", mem.activations_no_recompute / GIB, "GiB",
                          "layers x seq x hidden x 34 B", {}))  # fmt: skip
    fits = {c.id: (f[0] if (f := smallest_fit(mem.state, mem.activations, c, sizing, place.gpus_per_node)) else None) for c in candidates}
    layout = smallest_fit(mem.state, mem.activations, gpu, sizing, place.gpus_per_node)
    if layout is None:
        notes.append(f"activations of one sequence do not fit on a {gpu.id} even split over {place.gpus_per_node} GPUs")
        return _empty(w, place, figures, notes, fits)
    min_gpus, tp = layout
    figures.append(Figure("smallest GPU count that fits", min_gpus, "GPUs",
                          "model state / (usable memory - activations / TP), rounded to the TP group",
                          {"usable GiB per GPU": usable_memory(gpu, sizing) / GIB, "tensor parallel": tp}))  # fmt: skip
    availability = w.hours_per_day / 24
    deadline = w.deadline
    if w.gpus is not None:
        gpus = w.gpus
        if gpus < min_gpus:
            notes.append(f"the pinned {gpus} GPUs cannot hold the job; at least {min_gpus} {gpu.id} are needed")
    elif deadline is not None:
        needed = math.ceil(gpu_seconds / (deadline * availability))
        gpus = _ceil_to(max(min_gpus, needed), place.gpus_per_node)
        figures.append(Figure("GPUs to meet the deadline", needed, "GPUs", "GPU-seconds / (deadline x hours per day / 24)",
                              {"deadline days": deadline / DAY}))  # fmt: skip
    else:
        gpus = _ceil_to(min_gpus, place.gpus_per_node)
    wall_days = gpu_seconds / gpus / availability / DAY
    figures.append(Figure("wall-clock", wall_days, "days", "GPU-seconds / GPUs / availability / 86400", {"gpus": gpus}))
    price, priced_by = gpu_price_per_hour(gpu, catalog, place.instance)
    cost = gpu_hours * price if price is not None else None
    if price is not None:
        figures.append(
            Figure("cost", cost, "USD", "GPU-hours x on-demand USD per GPU-hour", {"per GPU-hour": price, "instance": priced_by})
        )
    interval = w.checkpoint_interval or sizing.defaultCheckpointIntervalSeconds.value
    budget = sizing.checkpointStallBudget.value
    write = mem.checkpoint / (budget * interval) / 1e9
    figures.append(Figure("checkpoint write bandwidth", write, "GB/s", "checkpoint size / (stall budget x interval)",
                          {"checkpoint GiB": mem.checkpoint / GIB, "interval s": interval, "stall budget": budget}))  # fmt: skip
    tokens_per_second = gpus * per_gpu / (flops_per * active)
    bytes_per_token = w.dataset.bytes_per_token if w.dataset and w.dataset.bytes_per_token else sizing.defaultBytesPerToken.value
    read = tokens_per_second * bytes_per_token * sizing.dataReadHeadroom.value / 1e9
    figures.append(Figure("dataset read throughput", read, "GB/s", "tokens/s x bytes per token x headroom",
                          {"tokens/s": tokens_per_second, "bytes per token": bytes_per_token,
                           "headroom": sizing.dataReadHeadroom.value}))  # fmt: skip
    batch = w.global_batch_tokens or sizing.defaultGlobalBatchTokens.value
    step = batch / tokens_per_second
    dp = gpus // tp
    weight_bytes = sizing.weightBytes.get(w.precision, 2)
    exchanged = (3 if w.method not in ("lora", "qlora") else 2) * (w.model.parameters * weight_bytes / tp) * (dp - 1) / max(dp, 1)
    network = exchanged * 8 / (step * sizing.commOverlapFraction.value) / 1e9
    figures.append(Figure("network per GPU", network, "Gbit/s",
                          "ZeRO-3 traffic per step (all-gather x2 + reduce-scatter of weights / TP) x 8 / (step time x overlap)",
                          {"step seconds": step, "data parallel": dp, "global batch tokens": batch}))  # fmt: skip
    multi_node = gpus > place.gpus_per_node
    rdma = multi_node and network > sizing.tcpGbpsPerGpu.value
    return WorkloadPlan(
        name=w.name, kind=w.kind, team=w.team, pool=place.pool, accelerator=gpu.id, gpus=gpus, min_gpus=min_gpus,
        model_state_gib=mem.state / GIB, memory_per_gpu_gib=(sharded_bytes(mem.state, gpus) + mem.activations / tp) / GIB,
        gpu_hours=gpu_hours, wall_clock_days=wall_days, cost_usd=cost, checkpoint_gib=mem.checkpoint / GIB,
        checkpoint_write_gbps=write, dataset_read_gbps=read, network_gbps_per_gpu=network, rdma_required=rdma,
        replicas=None, tokens_per_second_per_replica=None, tensor_parallel=tp,
        deadline_days=deadline / DAY if deadline else None, fits=fits, figures=tuple(figures), notes=tuple(notes),
    )  # fmt: skip


def _empty(w: Workload, place: Placement, figures: list[Figure], notes: list[str], fits: dict[str, int | None]) -> WorkloadPlan:
    return WorkloadPlan(
        name=w.name, kind=w.kind, team=w.team, pool=place.pool, accelerator=place.gpu.id if place.gpu else None,
        gpus=None, min_gpus=None, model_state_gib=None, memory_per_gpu_gib=None, gpu_hours=None, wall_clock_days=None,
        cost_usd=None, checkpoint_gib=None, checkpoint_write_gbps=None, dataset_read_gbps=None, network_gbps_per_gpu=None,
        rdma_required=None, replicas=None, tokens_per_second_per_replica=None, fits=fits, figures=tuple(figures),
        notes=tuple(notes),
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# inference


@dataclass(frozen=True)
class ReplicaLayout:
    tp: int
    batch: int
    step_seconds: float
    tokens_per_second: float
    prefill_seconds: float
    requests_per_second: float
    memory_bytes: float


def _slo(target: Any) -> float | None:
    """The strictest percentile given (p99 before p95)."""
    if target is None:
        return None
    value: float | None = target.p99 if target.p99 is not None else target.p95
    return value


def replica_layout(w: Workload, gpu: Gpu, sizing: Sizing, node_gpus: int) -> tuple[ReplicaLayout | None, list[Figure]]:
    """The smallest tensor-parallel replica that holds the model and meets the latency SLOs."""
    assert w.model is not None and w.traffic is not None
    n = float(w.model.parameters)
    active = float(w.model.active_parameters or n)
    weights = n * sizing.weightBytes.get(w.precision, 2)
    layers, hidden = shape(n, w.model.layers, w.model.hidden_size, sizing)
    kv_bytes = 1.0 if w.precision in ("fp8", "int8", "fp4", "int4") else 2.0
    kv_token = 2 * layers * hidden * sizing.kvHeadFraction.value * kv_bytes
    seq = w.traffic.input_tokens + w.traffic.output_tokens
    kv_seq = kv_token * seq
    kv_avg = kv_token * (w.traffic.input_tokens + w.traffic.output_tokens / 2)
    bandwidth = gpu.memoryBandwidthGBps * 1e9 * sizing.decodeBandwidthEfficiency.value
    compute = peak_tflops(gpu, w.precision) * 1e12 * sizing.mfu.prefill.value
    tpot = _slo(w.latency.time_per_output_token) if w.latency else None
    ttft = _slo(w.latency.time_to_first_token) if w.latency else None
    figures = [
        Figure("weights", weights / GIB, "GiB", "parameters x bytes per weight", {"precision": w.precision}),
        Figure("KV cache per sequence", kv_seq / GIB, "GiB", "2 x layers x hidden x KV-head fraction x bytes x tokens",
               {"layers": layers, "hidden": hidden, "tokens": seq}),
    ]  # fmt: skip
    for tp in (d for d in TP_DEGREES if d <= node_gpus):
        memory = usable_memory(gpu, sizing) * tp
        if memory <= weights + kv_seq:
            continue
        batch = min(256, int((memory - weights) // kv_seq))
        if tpot is not None:
            batch = min(batch, int((tpot * tp * bandwidth - weights) // kv_avg))
        if batch < 1:
            continue
        step = (weights + batch * kv_avg) / (tp * bandwidth)
        prefill = 2 * active * w.traffic.input_tokens / (tp * compute)
        if ttft is not None and prefill > ttft:
            continue
        tps = batch / step
        rps = 1 / (w.traffic.output_tokens / tps + prefill)
        figures.append(Figure("decode step", step, "s", "(weights + batch x average KV) / (TP x HBM bandwidth x efficiency)",
                              {"tensor parallel": tp, "batch": batch}))  # fmt: skip
        figures.append(Figure("prefill per request", prefill, "s", "2 x active parameters x input tokens / (TP x peak x prefill MFU)", {}))
        figures.append(Figure("requests/s per replica", rps, "req/s", "1 / (output tokens / decode tokens/s + prefill time)", {}))
        return ReplicaLayout(tp, batch, step, tps, prefill, rps, weights + batch * kv_seq), figures
    return None, figures


def plan_inference(w: Workload, place: Placement, catalog: Catalog, candidates: list[Gpu]) -> WorkloadPlan:
    sizing = catalog.sizing
    assert w.model is not None and place.gpu is not None
    gpu = place.gpu
    notes: list[str] = []
    if w.traffic is None:  # batch inference without a declared load: one replica at full batch
        from alicerce.spec.models import Traffic

        w = w.model_copy(update={"traffic": Traffic.model_validate({"concurrency": 1, "inputTokens": 512, "outputTokens": 256})})
        notes.append("no traffic declared: sized one replica for 512-token prompts and 256-token outputs")
    assert w.traffic is not None
    fits: dict[str, int | None] = {}
    for candidate in candidates:
        found, _ = replica_layout(w, candidate, sizing, place.gpus_per_node)
        fits[candidate.id] = found.tp if found else None
    layout, figures = replica_layout(w, gpu, sizing, place.gpus_per_node)
    if layout is None:
        notes.append(f"no replica of up to {place.gpus_per_node} x {gpu.id} holds the model and meets the latency targets")
        return _empty(w, place, figures, notes, fits)
    if w.traffic.peak_rps is not None:
        replicas = max(1, math.ceil(w.traffic.peak_rps / layout.requests_per_second))
        load = w.traffic.peak_rps / (replicas * layout.requests_per_second)
    else:
        replicas = max(1, math.ceil((w.traffic.concurrency or 1) / layout.batch))
        load = (w.traffic.concurrency or 1) / (replicas * layout.batch)
    figures.append(Figure("replicas", replicas, "replicas", "ceil(peak requests/s / requests/s per replica)", {"load": load}))
    gpus = replicas * layout.tp
    hours = gpus * w.hours_per_day * sizing.hoursPerMonth.value / 24
    price, priced_by = gpu_price_per_hour(gpu, catalog, place.instance)
    cost = hours * price if price is not None else None
    if cost is not None:
        figures.append(Figure("monthly cost", cost, "USD", "GPUs x hours per month x USD per GPU-hour", {"instance": priced_by}))
    sharing = _sharing(w, gpu, layout, replicas=replicas, load=load, sizing=sizing)
    assert w.model is not None
    return WorkloadPlan(
        name=w.name, kind=w.kind, team=w.team, pool=place.pool, accelerator=gpu.id, gpus=gpus, min_gpus=layout.tp,
        model_state_gib=w.model.parameters * sizing.weightBytes.get(w.precision, 2) / GIB,
        memory_per_gpu_gib=layout.memory_bytes / layout.tp / GIB, gpu_hours=hours, wall_clock_days=None, cost_usd=cost,
        checkpoint_gib=None, checkpoint_write_gbps=None, dataset_read_gbps=None, network_gbps_per_gpu=None,
        rdma_required=False, replicas=replicas, tokens_per_second_per_replica=layout.tokens_per_second,
        gpus_per_replica=layout.tp, tensor_parallel=layout.tp, sharing=sharing, fits=fits, figures=tuple(figures),
        notes=tuple(notes),
    )  # fmt: skip


def _sharing(w: Workload, gpu: Gpu, layout: ReplicaLayout, *, replicas: int, load: float, sizing: Sizing) -> str | None:
    """MIG or time-slicing for a model too small to fill a GPU; None when whole GPUs are right."""
    if layout.tp != 1 or replicas != 1 or load >= 0.5:
        return None
    assert w.model is not None
    weights = w.model.parameters * sizing.weightBytes.get(w.precision, 2)
    kv_per_seq = (layout.memory_bytes - weights) / layout.batch
    need = (weights + max(1, math.ceil(load * layout.batch)) * kv_per_seq) / (1 - sizing.memoryReserveFraction.value)
    if gpu.mig is not None:
        for profile in sorted(gpu.mig.profiles, key=lambda p: (p.memoryGiB, p.slices)):
            if profile.slices < gpu.mig.computeSlices and profile.memoryGiB * GIB >= need:
                return f"mig {profile.name}"
        return None
    slices = max(2, min(8, int(1 / max(load, 0.125))))
    return f"time-slicing x{slices}"


# --------------------------------------------------------------------------------------------
# data preparation


def plan_data_prep(w: Workload, place: Placement, catalog: Catalog) -> WorkloadPlan:
    sizing = catalog.sizing
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
        model_state_gib=None, memory_per_gpu_gib=None, gpu_hours=None, wall_clock_days=budget / DAY, cost_usd=None,
        checkpoint_gib=None, checkpoint_write_gbps=None, dataset_read_gbps=read, network_gbps_per_gpu=None,
        rdma_required=None, replicas=None, tokens_per_second_per_replica=None, cpu_cores=cores, figures=figures,
        notes=tuple(notes),
    )  # fmt: skip


def plan_workload(w: Workload, place: Placement, catalog: Catalog, candidates: list[Gpu]) -> WorkloadPlan:
    """Size one workload on its placement."""
    if w.kind == "data-prep":
        return plan_data_prep(w, place, catalog)
    if place.gpu is None or w.model is None:
        return _empty(w, place, [], ["no GPU to size it for: give it an accelerator or a GPU pool"], {})
    if w.kind in ("training", "fine-tuning"):
        if w.tokens is None:
            return _empty(w, place, [], ["no tokens declared"], {})
        return plan_training(w, place, catalog, candidates)
    return plan_inference(w, place, catalog, candidates)
