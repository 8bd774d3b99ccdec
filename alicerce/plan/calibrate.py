"""Fit the sizing models to public runs and measure them on the runs the fit never saw.

Training: the throughput model (alicerce/plan/throughput.py) is linear in the logarithms of its
fitted dense factors, so they are fitted by ordinary least squares on log(measured / predicted) over
the dense runs; the MoE routing constant is then a one-dimensional search over the MoE runs with
them in place (two stages: an MoE stack's overhead is not read as every dense model's efficiency). Inference: the
roofline's efficiencies (alicerce/plan/roofline.py) are fitted by Nelder-Mead on the squared log
errors. Both use only the rows marked ``fit`` in the calibration files; ``holdout``/``test`` rows are
for measuring. Pure Python: the planner never runs this, the calibration test and README table do.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from alicerce.catalog import Catalog
from alicerce.catalog.models import (
    Architecture,
    Fp4Run,
    Gpu,
    ServedModel,
    ServingResult,
    ServingTable,
    Sizing,
    TrainingRun,
)
from alicerce.plan.roofline import (
    Efficiencies,
    Replica,
    ServedShape,
    efficiencies,
    gpu_hardware,
    replica_performance,
    token_interval_seconds,
)
from alicerce.plan.sizing import (
    Placement,
    attention_width,
    kv_bytes,
    plan_workload,
    streaming_bandwidth,
    tp_bridge,
    tp_link_bytes_per_second,
    training_layout,
    training_memory,
    usable_memory,
    vocabulary_of,
)
from alicerce.plan.throughput import TrainingJob, attention_kernel_slowdown, routed_layers, tokens_per_gpu_step, training_factors
from alicerce.spec.models import Workload

GIB = 2**30
FITTED_ARCHITECTURES: tuple[Architecture, ...] = ("ampere", "hopper", "blackwell")

# --------------------------------------------------------------------------------------------
# training


def run_architecture(run: TrainingRun, catalog: Catalog) -> tuple[Architecture, float]:
    """(architecture, dense BF16 TFLOP/s) of the run's GPU, from gpus.yaml or the calibration file."""
    gpu = catalog.gpu(run.gpu)
    if gpu is not None:
        return gpu.architecture, gpu.tflops.bf16
    extra = next(g for g in catalog.training_calibration.gpus if g.id == run.gpu)
    return extra.architecture, extra.bf16Tflops


def run_job(run: TrainingRun, catalog: Catalog, sizing: Sizing) -> TrainingJob:
    """The run as the throughput model sees it. Its tensor-parallel degree and recomputed share are the ones the planner
    picks from what the run's spec declares (sizing.training_layout), so the fit sees the layouts `plan` sizes; a row
    that states its recomputation (BLOOM's full recomputation) keeps it, at the tensor-parallel degree it states (else 1)."""
    architecture, _ = run_architecture(run, catalog)
    attention = attention_width(run_workload(run), run.layers, run.hidden, sizing)
    job = TrainingJob(
        architecture=architecture,
        active_parameters=run.activeParameters or run.parameters,
        layers=run.layers,
        hidden=run.hidden,
        sequence=run.sequenceLength,
        gpus=run.gpus,
        global_batch_tokens=run.globalBatchTokens,
        precision="bf16" if run.precision in ("fp16", "unknown") else run.precision,
        # the attention term's width and span from the layout the run declares, by the function `plan` runs
        attention_dim=attention[0],
        attention_sequence=attention[1],
        attention_slowdown=attention_kernel_slowdown(run.attentionKernel, architecture, sizing),
        fp8_recipe=run.fp8Recipe,
        experts_per_token=run.experts.perToken if run.experts else None,
        moe_layers=routed_layers(run.experts.moeLayers, routed_attention=run.experts.routedAttention) if run.experts else None,
        full_recompute=run.recompute == "full",
        production_run=run.reporting == "gpuHours",
        pipeline_parallel=run.pipelineParallel or 1,
        virtual_stages=run.pipelineVirtualStages or 1,
        context_parallel=run.contextParallel or 1,
        zero_stage=3 if run.zeroStage is None else run.zeroStage,
    )
    gpu = run_gpu(run, catalog)
    if gpu is None:
        return job
    job = replace(job, tp_link_bytes_per_second=tp_link_bytes_per_second(gpu, sizing), peak_flops=gpu.tflops.bf16 * 1e12,
                  tp_overlapped=run.tensorParallelOverlap, **tp_bridge(gpu, sizing),
                  hbm_bytes_per_second=streaming_bandwidth(gpu, sizing), vocabulary=vocabulary_of(run_workload(run), sizing))  # fmt: skip
    if run.recompute is not None:
        return replace(job, tensor_parallel=run.tensorParallel or 1, recompute_fraction=1.0)
    w = run_workload(run)
    node = 4 if gpu.id == "GB200" else 8  # GB200 NVL72 trays hold 4 GPUs
    return training_layout(job, training_memory(w, sizing), node, usable_memory(gpu, sizing), sizing)


def measured_mfu(run: TrainingRun, catalog: Catalog) -> float:
    """Published throughput on the model's yardstick: 6 x N_active x tokens/s per GPU / BF16 peak."""
    _, peak = run_architecture(run, catalog)
    m = run.measured
    if m.tokensPerSecondPerGpu is not None:
        per_gpu = m.tokensPerSecondPerGpu
    else:
        assert m.gpuHours is not None and m.tokens is not None
        per_gpu = m.tokens / (m.gpuHours * 3600)
    return 6 * (run.activeParameters or run.parameters) * per_gpu / (peak * 1e12)


def predicted_mfu(run: TrainingRun, catalog: Catalog, sizing: Sizing, moe_routing: float | None = None) -> float:
    return math.prod(f.value for f in training_factors(run_job(run, catalog, sizing), sizing, moe_routing=moe_routing))


@dataclass(frozen=True)
class TrainingFit:
    base: dict[str, float]
    per_gpu_batch_exponent: float
    fp8_transformer_engine: float
    fp8_generic: float
    moe_routing: float
    runs: int
    undetermined: tuple[str, ...] = ()  # unknowns no fit run determines: left at the catalog's value

    def apply(self, sizing: Sizing) -> Sizing:
        """``sizing`` with the fitted values in place of the catalog's."""
        t = sizing.training

        def a(old: object, value: float) -> object:
            return old.model_copy(update={"value": value})  # type: ignore[attr-defined]

        base = t.base.model_copy(update={k: a(getattr(t.base, k), v) for k, v in self.base.items()})
        training = t.model_copy(
            update={
                "base": base,
                "perGpuBatch": t.perGpuBatch.model_copy(update={"exponent": a(t.perGpuBatch.exponent, self.per_gpu_batch_exponent)}),
                "fp8Gain": t.fp8Gain.model_copy(
                    update={
                        "transformer_engine": a(t.fp8Gain.transformer_engine, self.fp8_transformer_engine),
                        "generic": a(t.fp8Gain.generic, self.fp8_generic),
                    }
                ),
                "moeRouting": a(t.moeRouting, self.moe_routing),
            }
        )
        return sizing.model_copy(update={"training": training})


def _solve(rows: list[list[float]], targets: list[float]) -> list[float]:
    """Least squares by the normal equations (a handful of unknowns), Gauss-Jordan with pivoting."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] + [sum(r[i] * y for r, y in zip(rows, targets, strict=True))] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        if abs(a[col][col]) < 1e-12:
            raise ValueError(f"the fit runs do not determine unknown {col}")
        for r in range(n):
            if r != col:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
    return [a[i][n] / a[i][i] for i in range(n)]


def fit_training(runs: Sequence[TrainingRun], catalog: Catalog, sizing: Sizing) -> TrainingFit:
    """Fit base per architecture, the per-GPU-batch exponent and both fp8 gains on the dense fit runs, then the MoE
    constant on the MoE fit runs with those in place (:func:`fit_moe_routing`).

    Two stages (issue 23, sizmoe2): the MoE overhead differs by stack (Megatron-Bridge's alltoall rows need 10,000-16,000,
    its HybridEP rows 3,000-4,000, throughput.py's notes), so one routing constant leaves MoE residuals of 30% and more; fitted
    jointly they moved the dense constants (bf16 MoE rows took hopper 0.5015 -> 0.4923 and the exponent 0.0575 -> 0.0465),
    an MoE stack's overhead read as every dense model's efficiency. Fitted on dense rows the dense constants stay as
    shipped."""
    fit = [r for r in runs if r.role == "fit"]
    dense = [r for r in fit if r.experts is None]
    reference = sizing.training.perGpuBatch.referenceTokens.value
    names = [*(f"base {a}" for a in FITTED_ARCHITECTURES), "exponent", "fp8 transformer-engine", "fp8 generic"]
    fixed = {"attention", "fp8 outside the GEMMs", "recomputation", "tensor parallel", "pipeline bubble", "goodput"}
    jobs = [(run_job(run, catalog, sizing), measured_mfu(run, catalog)) for run in dense]
    rows, targets = [], []
    for job, measured in jobs:
        known = math.prod(f.value for f in training_factors(job, sizing) if f.name in fixed)
        per_gpu = tokens_per_gpu_step(job)  # what the factor reads (review sizreview20 F6)
        rows.append(
            [
                *(1.0 if job.architecture == a else 0.0 for a in FITTED_ARCHITECTURES),
                math.log(min(1.0, per_gpu / reference)),
                1.0 if job.precision == "fp8" and job.fp8_recipe == "transformer-engine" else 0.0,
                1.0 if job.precision == "fp8" and job.fp8_recipe == "generic" else 0.0,
            ]
        )
        targets.append(math.log(measured / known))
    t = sizing.training
    shipped = [*(math.log(getattr(t.base, a).value) for a in FITTED_ARCHITECTURES), t.perGpuBatch.exponent.value,
               math.log(t.fp8Gain.transformer_engine.value), math.log(t.fp8Gain.generic.value)]  # fmt: skip
    # an unknown no fit run touches (generic fp8 once its only source is left out) keeps the catalog's
    # value, and the fit says so: runs that need it are then not measured on an unseen source
    skipped = [i for i in range(len(names)) if not any(r[i] for r in rows)]
    used = [i for i in range(len(names)) if i not in skipped]
    residual = [y - sum(r[i] * shipped[i] for i in skipped) for r, y in zip(rows, targets, strict=True)]
    x = list(shipped)
    for i, v in zip(used, _solve([[r[i] for i in used] for r in rows], residual), strict=True):
        x[i] = v
    values = dict(zip(names, x, strict=True))
    dense_fit = TrainingFit(
        base={a: math.exp(values[f"base {a}"]) for a in FITTED_ARCHITECTURES},
        per_gpu_batch_exponent=values["exponent"],
        fp8_transformer_engine=math.exp(values["fp8 transformer-engine"]),
        fp8_generic=math.exp(values["fp8 generic"]),
        moe_routing=t.moeRouting.value,
        runs=len(dense),
        undetermined=tuple(names[i] for i in skipped),
    )
    moe_runs = [r for r in fit if r.experts is not None]
    if not moe_runs:  # no MoE run to fit the routing constant on
        return replace(dense_fit, undetermined=(*dense_fit.undetermined, "moe routing"))
    return replace(dense_fit, moe_routing=fit_moe_routing(moe_runs, catalog, dense_fit.apply(sizing)), runs=len(fit))


def fit_moe_routing(runs: Sequence[TrainingRun], catalog: Catalog, sizing: Sizing) -> float:
    """The MoE constant that minimises the MoE runs' squared log errors with every other constant as ``sizing`` has it: a
    grid of 500 from 0 to 60,000, then of 50 around the best point (the factor is monotonic in it; the runs' layouts
    and measured MFUs do not depend on it, so they are worked out once)."""
    jobs = [(run_job(run, catalog, sizing), measured_mfu(run, catalog)) for run in runs]

    def loss(k: float) -> float:
        return sum(math.log(math.prod(f.value for f in training_factors(j, sizing, moe_routing=k)) / m) ** 2 for j, m in jobs)

    coarse = min((k * 500.0 for k in range(121)), key=loss)
    return min((max(0.0, coarse + d * 50.0) for d in range(-10, 11)), key=loss)


@dataclass(frozen=True)
class RunError:
    run: TrainingRun
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def training_errors(runs: Sequence[TrainingRun], catalog: Catalog, sizing: Sizing) -> list[RunError]:
    return [RunError(r, measured_mfu(r, catalog), predicted_mfu(r, catalog, sizing)) for r in runs]


# --------------------------------------------------------------------------------------------
# inference


def row_batch(row: ServingResult, table: ServingTable) -> float:
    """The batch a result ran at: a fixed batch or concurrency, Little's law at a fixed rate, else the engine cap."""
    if row.batch is not None:
        return float(row.batch)
    if row.concurrency is not None:
        return float(row.concurrency)
    if row.requestsPerSecond is not None and row.ttftMs is not None and row.itlMs is not None:
        return max(1.0, row.requestsPerSecond * (row.ttftMs + row.osl * row.itlMs) / 1000)
    return float(table.maxBatch)


def predict_row(row: ServingResult, table: ServingTable, catalog: Catalog, sizing: Sizing, eff: Efficiencies) -> float | None:
    """The row's compared figure as the roofline predicts it (see :func:`measured_row`)."""
    return _predict(row, table, _replica(row, table, catalog, sizing, eff))


def engine_kv_cache(precision: str) -> str | None:
    """The KV cache the published engines ran with, as a spec declares it: 8-bit for fp8 and fp4 models (the fit's
    assumption since the first calibration: NVIDIA's FP8 checkpoints carry an FP8 KV-cache quantisation; not stated
    per table), else the 16-bit default. Declared, as the planner's own default is 16-bit (vLLM's `auto`)."""
    return "fp8" if precision in ("fp8", "fp4") else None


def _replica(row: ServingResult, table: ServingTable, catalog: Catalog, sizing: Sizing, eff: Efficiencies) -> Replica:
    model = catalog.inference_calibration.models[row.model]
    gpu = catalog.gpu(row.gpu)
    assert gpu is not None, row.gpu
    shape = ServedShape(
        model.parameters, model.activeParameters or model.parameters, model.layers, model.hidden, model.kvHeads, model.headDim
    )
    return Replica(
        shape,
        row.tp,
        gpu_hardware(gpu, row.precision, sizing, engine_kv_cache(row.precision)),
        eff,
        sizing.weightBytes[row.precision],
        kv_bytes(row.precision, engine_kv_cache(row.precision)),
        table.kvAdmission,
        table.kvMemoryFraction or sizing.inference.kvMemoryFraction.value,
    )


def _predict(row: ServingResult, table: ServingTable, replica: Replica) -> float | None:
    perf = replica_performance(replica, row.isl, row.osl, batch_cap=row_batch(row, table))
    if perf is None:
        return None
    if row.requestsPerSecond is not None:  # one stream's tokens/s: the decode step plus the prefills it shares
        return 1 / token_interval_seconds(replica, row.isl, row.osl, perf.batch)
    return perf.tokens_per_second


def measured_row(row: ServingResult) -> float:
    """Output tokens/s of the replica; at a fixed request rate (where that is just the offered load) the
    tokens/s of one stream, 1 / inter-token latency, at the in-flight batch."""
    if row.requestsPerSecond is not None and row.itlMs is not None:
        return 1000 / row.itlMs
    return row.tokensPerSecond


@dataclass(frozen=True)
class RowError:
    table: ServingTable
    row: ServingResult
    predicted: float | None

    @property
    def measured(self) -> float:
        return measured_row(self.row)

    @property
    def error(self) -> float:
        if self.predicted is None:
            return -1.0  # the model says it does not fit: a total miss
        return (self.predicted - self.measured) / self.measured


def inference_errors(tables: Sequence[ServingTable], catalog: Catalog, sizing: Sizing, eff: Efficiencies | None = None) -> list[RowError]:
    eff = eff or efficiencies(sizing)
    return [RowError(t, r, predict_row(r, t, catalog, sizing, eff)) for t in tables for r in t.rows]


FITTED_EFFICIENCIES = ("prefill", "decode_compute", "bandwidth", "reserved_bytes", "link")
_BOUNDS = {
    "prefill": (0.1, 1.0),
    "decode_compute": (0.1, 1.0),
    "bandwidth": (0.3, 0.95),
    "reserved_bytes": (0.0, 24.0 * GIB),  # per GPU: activations, workspace, context
    "link": (0.1, 1.0),
}


def nelder_mead(f: Callable[[list[float]], float], x0: list[float], *, steps: int = 600, scale: float = 0.5) -> list[float]:
    """Minimise ``f`` from ``x0`` (a small, deterministic Nelder-Mead)."""
    n = len(x0)
    simplex = [x0] + [[x + (scale if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)]
    values = [f(p) for p in simplex]
    for _ in range(steps):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (p - b) for b, p in zip(best, q, strict=True)] for q in simplex[1:]]
                values = [values[0]] + [f(p) for p in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def fit_inference(tables: Sequence[ServingTable], catalog: Catalog, sizing: Sizing) -> Efficiencies:
    """Fit the five efficiencies to the ``fit`` tables (overhead and all-reduce latency stay as catalogued)."""
    fit = [t for t in tables if t.role == "fit"]
    start = efficiencies(sizing)

    def unpack(z: list[float]) -> Efficiencies:
        values = {}
        for name, v in zip(FITTED_EFFICIENCIES, z, strict=True):
            lo, hi = _BOUNDS[name]
            values[name] = lo + (hi - lo) / (1 + math.exp(-v))
        return replace(start, **values)

    # what a row's replica is apart from the efficiencies (the model's shape, the GPU, the byte sizes) is worked out
    # once, not at each of the ~2,700 points the search tries; each point only puts its efficiencies in
    rows = [(row, table, _replica(row, table, catalog, sizing, start), measured_row(row)) for table in fit for row in table.rows]

    def loss(z: list[float]) -> float:
        eff = unpack(z)
        total = 0.0
        for row, table, r, measured in rows:
            predicted = _predict(row, table, Replica(r.shape, r.tp, r.hw, eff, r.bytes_per_weight, r.kv_bytes, r.admission, r.kv_fraction))
            total += math.log(predicted / measured) ** 2 if predicted else 1.0
        return total

    def logit(name: str, value: float) -> float:
        lo, hi = _BOUNDS[name]
        share = min(max((value - lo) / (hi - lo), 1e-6), 1 - 1e-6)
        return math.log(share / (1 - share))

    z0 = [logit(name, getattr(start, name)) for name in FITTED_EFFICIENCIES]
    return unpack(nelder_mead(loss, z0))


def summary(errors: Sequence[float]) -> dict[str, float]:
    absolute = [abs(e) for e in errors]
    return {
        "n": len(absolute),
        "median": statistics.median(absolute),
        "mean": statistics.fmean(absolute),
        "max": max(absolute),
        "within25": sum(a <= 0.25 for a in absolute) / len(absolute),
    }


# --------------------------------------------------------------------------------------------
# the planner's own path (issue 23): a run declared as a user would, sized by plan_workload


def run_workload(run: TrainingRun) -> Workload:
    """The run as a `workloads[]` entry: only fields a user can declare (the attention layout, not a width; no
    framework label beyond `fp8Recipe`; no recomputation choice: the planner decides it as for a user)."""
    model: dict[str, object] = {"parameters": run.parameters, "layers": run.layers, "hiddenSize": run.hidden}
    if run.mla is not None:
        mla = run.mla
        attention = {"kind": "mla", "heads": mla.heads, "ropeHeadDim": mla.ropeHeadDim, "kvLoraRank": mla.kvLoraRank}
        model.update(headDim=mla.headDim, attention=attention)
    if run.slidingWindow is not None:
        window = run.slidingWindow
        model["attention"] = {"kind": "sliding-window", "window": window.window, "globalLayers": window.globalLayers}
    if run.heads is not None:
        model.update(heads=run.heads, headDim=run.headDim)
    if run.vocabulary is not None:
        model.update(vocabulary=run.vocabulary)
    if run.experts is not None:
        model.update(architecture="moe", activeParameters=run.activeParameters or run.parameters,
                     experts={"total": run.experts.total, "perToken": run.experts.perToken, "layers": run.experts.moeLayers,
                              "routedAttention": run.experts.routedAttention})  # fmt: skip
    gpus = run.gpus
    spec: dict[str, object] = {
        "name": "run", "kind": "training", "team": "calibration", "model": model,
        "precision": "bf16" if run.precision in ("fp16", "unknown") else run.precision,
        "tokens": max(1, round(run.globalBatchTokens * 100)), "sequenceLength": run.sequenceLength,
        "globalBatchTokens": max(1, round(run.globalBatchTokens)), "accelerator": run.gpu, "gpus": gpus,
    }  # fmt: skip
    if run.fp8Recipe is not None:
        spec["fp8Recipe"] = run.fp8Recipe
    if run.tensorParallelOverlap:
        spec["tensorParallelOverlap"] = True
    if not run.flashAttention:
        spec["flashAttention"] = False
    if run.attentionKernel is not None:
        spec["attentionKernel"] = run.attentionKernel
    if not run.sequenceParallel:
        spec["sequenceParallel"] = False
    if run.zeroStage is not None:
        spec["zeroStage"] = run.zeroStage
    if run.pipelineParallel is not None:
        spec["pipelineParallel"] = run.pipelineParallel
    if run.pipelineVirtualStages is not None:
        spec["pipelineVirtualStages"] = run.pipelineVirtualStages
    if run.expertParallel is not None:
        spec["expertParallel"] = run.expertParallel
    if run.expertTensorParallel is not None:
        spec["expertTensorParallel"] = run.expertTensorParallel
    if run.contextParallel is not None:
        spec["contextParallel"] = run.contextParallel
    if run.tensorParallel is not None:  # the degree its source states, through the field a team declares (issue 23)
        spec["tensorParallel"] = run.tensorParallel
    return Workload.model_validate(spec)


def run_gpu(run: TrainingRun, catalog: Catalog) -> Gpu | None:
    """The run's GPU as a user would declare it: from gpus.yaml, or for a calibration-only GPU (H800, GB200)
    a user-catalog entry of the catalog GPU with the same die at the calibration file's BF16 peak (and NVLink
    bandwidth, where the file gives one)."""
    gpu = catalog.gpu(run.gpu)
    if gpu is not None:
        return gpu
    extra = next((g for g in catalog.training_calibration.gpus if g.id == run.gpu), None)
    sibling = {"H800-SXM5-80GB": "H100-SXM5-80GB", "GB200": "B200-SXM-180GB"}.get(run.gpu)
    base = catalog.gpu(sibling) if sibling else None
    if extra is None or base is None:
        return None
    update: dict[str, object] = {"id": extra.id, "tflops": base.tflops.model_copy(update={"bf16": extra.bf16Tflops})}
    if extra.nvlinkBandwidthGBps is not None:  # the H800: the H100's die with NVLink cut to 400 GB/s
        update["interconnect"] = base.interconnect.model_copy(update={"nvlinkBandwidthGBps": extra.nvlinkBandwidthGBps})
    return base.model_copy(update=update)


def planned_mfu(run: TrainingRun, catalog: Catalog, sizing: Sizing) -> float | None:
    """The MFU `alicerce plan` sizes the run at, through plan_workload on :func:`run_workload`; a benchmark's
    steady state leaves out goodput (the planner's production-run factor). None: the planner cannot size it
    (a GPU outside the catalog)."""
    gpu = run_gpu(run, catalog)
    if gpu is None:
        return None
    node = 4 if gpu.id == "GB200" else 8  # GB200 NVL72 trays hold 4 GPUs
    plan = plan_workload(run_workload(run), Placement(None, gpu, node), sizing, [gpu])
    if plan.mfu is None:
        return None
    if run.reporting == "gpuHours":
        return plan.mfu
    return plan.mfu / sizing.training.goodput.value


def fp4_pair(run: Fp4Run, sizing: Sizing) -> tuple[TrainingRun, TrainingRun]:
    """One of fp4OverFp8's source systems as its FP8 and its NVFP4 calibration row, each at the layout its table states
    (Transformer Engine runs both recipes)."""
    ratio = sizing.training.fp4OverFp8
    m = ratio.model
    citation = sizing.sources[ratio.source]
    common: dict[str, object] = {
        "model": "fp4OverFp8's model", "parameters": m.parameters, "layers": m.layers, "hidden": m.hiddenSize,
        "heads": m.heads, "headDim": m.headDim, "vocabulary": m.vocabulary, "sequenceLength": m.sequenceLength,
        "gpu": run.gpu, "gpus": run.gpus, "globalBatchTokens": float(run.globalBatchSequences * m.sequenceLength),
        "tensorParallel": run.tensorParallel, "pipelineParallel": run.pipelineParallel, "tensorParallelOverlap": True,
        "fp8Recipe": "transformer-engine", "reporting": "throughput", "basis": "tokens/s per GPU as published",
        "role": "excluded", "family": ratio.source, "source": {"title": citation.title, "url": citation.url},
    }  # fmt: skip

    def row(precision: str, stages: int, tokens: float) -> TrainingRun:
        own = {"precision": precision, "pipelineVirtualStages": stages, "measured": {"tokensPerSecondPerGpu": tokens}}
        return TrainingRun.model_validate(common | own | {"id": f"{run.system}-{precision}"})

    return (
        row("fp8", run.virtualStages.fp8, run.tokensPerSecondPerGpu.fp8),
        row("fp4", run.virtualStages.fp4, run.tokensPerSecondPerGpu.fp4),
    )


def planned_fp4_step_ratio(run: Fp4Run, catalog: Catalog, sizing: Sizing) -> float:
    """NVFP4 over FP8 as `plan` sizes the source's two runs: the step ratio the source's tokens/s measure."""
    fp8, fp4 = fp4_pair(run, sizing)
    a, b = planned_mfu(fp8, catalog, sizing), planned_mfu(fp4, catalog, sizing)
    assert a is not None and b is not None, f"{run.gpu} is neither in gpus.yaml nor among calibration-training.yaml's GPUs"
    return b / a


def with_fp4_over_fp8(sizing: Sizing, value: float) -> Sizing:
    t = sizing.training
    ratio = t.fp4OverFp8.model_copy(update={"value": value})
    return sizing.model_copy(update={"training": t.model_copy(update={"fp4OverFp8": ratio})})


def fit_fp4_over_fp8(catalog: Catalog, sizing: Sizing) -> float:
    """The NVFP4/FP8 GEMM ratio at which `plan`'s step ratios of fp4OverFp8's runs match the source's on the geometric
    mean (review sizreview23 D2: the source's step ratio, read as the GEMMs', planned its own 405B at 1.29x fp8). The
    planned step ratio rises with the GEMM ratio, so bisection finds it; everything else as ``sizing`` has it."""
    runs = sizing.training.fp4OverFp8.runs

    def excess(value: float) -> float:
        s = with_fp4_over_fp8(sizing, value)
        measured = (math.log(r.tokensPerSecondPerGpu.fp4 / r.tokensPerSecondPerGpu.fp8) for r in runs)
        return sum(math.log(planned_fp4_step_ratio(r, catalog, s)) for r in runs) - sum(measured)

    low, high = 1.0, 4.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if excess(mid) < 0 else (low, mid)
    return (low + high) / 2


def serving_workload(
    row: ServingResult, table: ServingTable, catalog: Catalog, *, engine: bool = True, models: Mapping[str, ServedModel] | None = None
) -> Workload:
    """A published serving point as a user would declare it: the model's shape, the precision, the prompt and
    output lengths, the load (closed-loop clients as concurrency; a throughput run as more requests than any
    replica serves) and, with ``engine``, the engine's configuration a team knows (tensor-parallel degree, batch cap,
    how it admits KV; without it the planner picks the degree that serves the load on the fewest GPUs, caps the batch at
    vLLM's default for the GPU (sizing.default_batch_cap: 1,024 on a large non-A100 GPU, else 256) and admits KV on
    demand, as vLLM does). ``models``: where the row's model shape is (the unseen set carries its own; default the
    calibration file's)."""
    model = (catalog.inference_calibration.models if models is None else models)[row.model]
    spec: dict[str, object] = {
        "parameters": model.parameters, "layers": model.layers, "hiddenSize": model.hidden, "kvHeads": model.kvHeads,
        "headDim": model.headDim,
    }  # fmt: skip
    if model.activeParameters and model.activeParameters < model.parameters:
        spec.update(architecture="moe", activeParameters=model.activeParameters)
    clients = row.batch or row.concurrency
    load = {"concurrency": clients} if clients else {"peakRps": 10**6}  # a throughput run: more than any replica holds
    traffic = {**load, "inputTokens": row.isl, "outputTokens": row.osl}
    precision = "bf16" if row.precision == "fp16" else row.precision
    declared: dict[str, object] = {"maxBatch": table.maxBatch, "tensorParallel": row.tp, "kvAdmission": table.kvAdmission} if engine else {}
    if engine and table.kvMemoryFraction is not None:  # the KV-cache memory fraction the source ran with
        declared["kvMemoryFraction"] = table.kvMemoryFraction
    if engine and (cache := engine_kv_cache(precision)) is not None:
        declared["kvCachePrecision"] = cache
    return Workload.model_validate(
        {"name": "serve", "kind": "inference", "team": "calibration", "model": spec, "precision": precision, "traffic": traffic,
         **declared}
    )  # fmt: skip


def planned_serving(
    row: ServingResult,
    table: ServingTable,
    catalog: Catalog,
    sizing: Sizing,
    *,
    engine: bool = True,
    models: Mapping[str, ServedModel] | None = None,
) -> float | None:
    """Output tokens/s per GPU that `alicerce plan` (plan_inference) expects for the point: at full load for a
    throughput run, at the declared clients for a closed-loop run. None: the planner sizes no replica."""
    gpu = catalog.gpu(row.gpu)
    assert gpu is not None, row.gpu
    w = serving_workload(row, table, catalog, engine=engine, models=models)
    plan = plan_workload(w, Placement(None, gpu, 8), sizing, [gpu])
    if plan.gpus is None or plan.tokens_per_second_per_replica is None or plan.tokens_per_month is None:
        return None
    if row.batch is None and row.concurrency is None:  # a throughput run: one replica at its full batch
        return plan.tokens_per_second_per_replica / (plan.gpus_per_replica or 1)
    per_second = plan.tokens_per_month / (3600 * sizing.hoursPerMonth.value) * row.osl / (row.isl + row.osl)
    return per_second / plan.gpus


def measured_serving(row: ServingResult) -> float:
    """Published output tokens/s per GPU of the point."""
    return row.tokensPerSecond / row.tp
