"""Accuracy of `alicerce plan`'s training sizing on sources it never saw (issue 23).

Every public run of alicerce/catalog/data/calibration-training.yaml (roles `fit` and `holdout`) is
declared as a user would declare it (:func:`alicerce.plan.calibrate.run_workload`: parameters, layers,
width, experts, precision, fp8 stack, sequence, global batch, GPU and count; no attention width, no
recomputation choice) and sized by `plan_workload`, the function `alicerce plan` runs. The constants
it is sized with are refitted with the runs of its own source left out (leave one source out: a whole
model card, paper or benchmark table at a time, grouped by the table's `family`, so a table republished under two
addresses is left out whole), so every figure below is the error on an unseen
source, not an interpolation between siblings of the same table. Nothing is tuned on these errors.

    .venv/bin/python bench/sizing_accuracy.py            # the tables
    .venv/bin/python bench/sizing_accuracy.py --readme   # also rewrite the README's block

Serving: every published point of calibration-inference.yaml is declared as a user would (model shape,
precision, prompt and output tokens, the clients of a closed-loop run; and, in the first set, the
engine's tensor-parallel degree and batch cap, `tensorParallel` and `maxBatch`) and sized by
`plan_workload`; the second set leaves the engine configuration to the planner's defaults (the degree that serves
the load on the fewest GPUs, vLLM's default batch cap for the GPU: sizing.default_batch_cap). The figure is output
tokens/s per GPU, what `plan` prints, against the published one. The roofline's efficiencies come from one table (role
`fit`); a `test` table is labelled an unseen source only where its `family` (the published page, any revision or GPU
column of it) is not the fit table's: TensorRT-LLM perf-overview's A100, L40S and 1.0 tables are not. Fixed-request-rate
points (Triton) are left out: at a fixed rate a replica's output is the offered load, which says nothing about sizing.

Serving, unseen set: the serving tables of evaluation-unseen.yaml (sources no calibration table cites) are sized the
same two ways with the shipped efficiencies, and their errors printed split as max-throughput vs latency-bound.

Limits (said, not hidden): the goodput factor is set by hand from the Llama 3.1 405B card and is not
refitted when that source is left out; rows marked `excluded` in the calibration file are reported
apart.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from alicerce.catalog import Catalog, load_catalog  # noqa: E402
from alicerce.catalog.models import ServingTable, Sizing, TrainingRun  # noqa: E402
from alicerce.plan.calibrate import (  # noqa: E402
    fit_training,
    measured_mfu,
    measured_serving,
    planned_mfu,
    planned_serving,
    serving_workload,
)
from alicerce.plan.roofline import Replica, efficiencies, gpu_hardware, kv_batch_limit  # noqa: E402
from alicerce.plan.sizing import kv_bytes, served_shape  # noqa: E402
from alicerce.plan.throughput import FP8_CAST_BYTES_PER_ELEMENT, FP8_CAST_ELEMENTS_PER_HIDDEN  # noqa: E402

BEGIN = "<!-- bench/sizing_accuracy.py: begin -->"
END = "<!-- bench/sizing_accuracy.py: end -->"
# The README's formula paragraph, its constants read from sizing.yaml: typed by hand they drifted from every refit
# (review sizreview20 F2: 0.0526, 1.81/1.10 and 14,000 stood where 0.0575, 1.896/1.175 and 13,000 shipped).
FORMULA_BEGIN = "<!-- bench/sizing_accuracy.py formula: begin -->"
FORMULA_END = "<!-- bench/sizing_accuracy.py formula: end -->"
# the README formula's product: the names of the factors throughput.training_factors returns, in its order
FORMULA_PRODUCT = ("base[architecture]", "attention", "per-GPU batch", "precision", "fp8 outside the GEMMs",
                   "mixture of experts", "recomputation", "network", "tensor parallel", "QLoRA dequantisation",
                   "pipeline bubble", "pipeline balance", "goodput")  # fmt: skip


@dataclass(frozen=True)
class Row:
    run: TrainingRun
    measured: float
    planned: float | None  # None: the planner cannot size it
    own_source: str = ""  # a constant it needs that only its own source determines (then not an unseen-source figure)

    @property
    def error(self) -> float:
        return -1.0 if self.planned is None else (self.planned - self.measured) / self.measured

    @property
    def kind(self) -> str:
        return "MoE" if self.run.experts is not None else "dense"


def source_groups(runs: Sequence[TrainingRun]) -> dict[str, list[TrainingRun]]:
    """The runs by source identity: the published table or measurement (``family``), not the address, so one table
    republished under two urls (a model card and its paper) is left out whole (review sizreview2 D3)."""
    groups: dict[str, list[TrainingRun]] = defaultdict(list)
    for run in runs:
        groups[run.family].append(run)
    return dict(groups)


def fitted_without(family: str, runs: Sequence[TrainingRun]) -> list[TrainingRun]:
    """The runs the constants are refitted on while ``family``'s runs are measured: every other source's."""
    return [r for r in runs if r.family != family]


def unseen_source_rows(catalog: Catalog) -> list[Row]:
    """Each fit or held-out run sized by the planner with constants fitted on every other source."""
    runs = [r for r in catalog.training_calibration.runs if r.role != "excluded"]
    rows: list[Row] = []
    for family, own in sorted(source_groups(runs).items()):
        fit = fit_training(fitted_without(family, catalog.training_calibration.runs), catalog, catalog.sizing)
        sizing = fit.apply(catalog.sizing)
        for run in own:
            needs = {"moe routing"} if run.experts is not None else set()
            if run.precision == "fp8":
                needs.add(f"fp8 {run.fp8Recipe}" if run.fp8Recipe else "fp8 transformer-engine")
            leak = ", ".join(sorted(needs & set(fit.undetermined)))
            rows.append(Row(run, measured_mfu(run, catalog), planned_mfu(run, catalog, sizing), leak))
    return rows


def shipped_rows(catalog: Catalog, role: str) -> list[Row]:
    """Runs of ``role`` sized by the planner with the shipped constants (sizing.yaml)."""
    return [
        Row(r, measured_mfu(r, catalog), planned_mfu(r, catalog, catalog.sizing))
        for r in catalog.training_calibration.runs
        if r.role == role
    ]


def unseen_rows(catalog: Catalog) -> list[Row]:
    """Every run of evaluation-unseen.yaml sized by the planner with the shipped constants: no calibration row shares its
    source, so nothing in sizing.yaml was fitted on it and no refit is needed to keep it unseen."""
    return [Row(r, measured_mfu(r, catalog), planned_mfu(r, catalog, catalog.sizing)) for r in catalog.unseen_evaluation.runs]


LONG_SEQUENCE = 16384  # at and above it attention FLOPs, which 6N leaves out, are most of a small model's work


def unseen_groups(rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """The unseen set split by what the planner models differently (a partition: every run is in exactly one)."""
    moe = [r for r in rows if r.kind == "MoE"]
    dense = [r for r in rows if r.kind == "dense"]
    fp8 = [r for r in dense if r.run.precision == "fp8"]
    long = [r for r in dense if r.run.precision != "fp8" and r.run.sequenceLength >= LONG_SEQUENCE]
    rest = [r for r in dense if r.run.precision != "fp8" and r.run.sequenceLength < LONG_SEQUENCE]
    return [
        (f"unseen set, dense bf16, sequences under {LONG_SEQUENCE:,}", rest),
        (f"unseen set, dense bf16, sequences of {LONG_SEQUENCE:,} and more", long),
        ("unseen set, dense fp8", fp8),
        ("unseen set, MoE", moe),
        ("unseen set, all runs", rows),
    ]


def by_source_median(errors: Sequence[tuple[str, float]]) -> float:
    """The median over sources of each source's median absolute error: every source weighs one, however many rows it
    publishes (review sizreview18 F10: 213 of the 220 unseen dense rows are llm-foundry's one table, so the row-weighted
    median is that table's figure)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for family, error in errors:
        groups[family].append(abs(error))
    return statistics.median(statistics.median(g) for g in groups.values())


def _line(label: str, rows: list[Row]) -> str:
    errors = [abs(r.error) for r in rows]
    signed = statistics.median(r.error for r in rows)
    within = sum(e <= 0.25 for e in errors) / len(errors)
    sources = by_source_median([(r.run.family, r.error) for r in rows])
    return (
        f"| {label} | {len(rows)} | {len({r.run.family for r in rows})} | {statistics.median(errors):.1%} | {sources:.1%} "
        f"| {signed:+.1%} | {statistics.fmean(errors):.1%} | {max(errors):.0%} | {within:.0%} |"
    )


def serving_source(table: ServingTable, catalog: Catalog) -> str:
    """How a calibration table stands to the fit: the fit table itself, another table of a fitted source (another GPU
    column or a later revision of the same page, review sizreview2 D2: not unseen), or an unseen source, one whose
    family no efficiency was fitted on."""
    if table.role == "fit":
        return "fit"
    fitted = {t.family for t in catalog.inference_calibration.tables if t.role == "fit"}
    return "the fit's source, another table" if table.family in fitted else "unseen source"


def serving_lines(catalog: Catalog, *, engine: bool) -> list[str]:
    lines = []
    for table in catalog.inference_calibration.tables:
        rows = [r for r in table.rows if r.requestsPerSecond is None]
        if not rows:
            continue
        errors = []
        for row in rows:
            planned = planned_serving(row, table, catalog, catalog.sizing, engine=engine)
            errors.append(-1.0 if planned is None else (planned - measured_serving(row)) / measured_serving(row))
        absolute = [abs(e) for e in errors]
        how = "engine config declared" if engine else "planner's defaults"
        label = f"serving, {table.regime}: {table.id} ({serving_source(table, catalog)}; {how})"
        lines.append(
            f"| {label} | {len(rows)} | 1 | {statistics.median(absolute):.1%} | {statistics.median(absolute):.1%} "
            f"| {statistics.median(errors):+.1%} | {statistics.fmean(absolute):.1%} | {max(absolute):.0%} "
            f"| {sum(a <= 0.25 for a in absolute) / len(absolute):.0%} |"
        )
    return lines


def unseen_serving_errors(catalog: Catalog, *, engine: bool) -> dict[str, list[tuple[str, float]]]:
    """Every serving point of evaluation-unseen.yaml sized by `plan_workload` with the shipped efficiencies, split by
    regime (max-throughput, latency-bound): (source family, signed error of output tokens/s per GPU) each."""
    unseen = catalog.unseen_evaluation
    out: dict[str, list[tuple[str, float]]] = {"max-throughput": [], "latency-bound": []}
    for table in unseen.servingTables:
        for row in table.rows:
            planned = planned_serving(row, table, catalog, catalog.sizing, engine=engine, models=unseen.servingModels)
            measured = measured_serving(row)
            out[table.regime].append((table.family, -1.0 if planned is None else (planned - measured) / measured))
    return out


def unseen_serving_lines(catalog: Catalog) -> list[str]:
    lines = []
    for engine in (True, False):
        how = "engine config declared" if engine else "planner's defaults"
        for regime, points in unseen_serving_errors(catalog, engine=engine).items():
            label = f"serving, unseen set, {regime} ({how})"
            if not points:  # said, not hidden: the set holds no point of this regime yet
                lines.append(f"| {label} | 0 | 0 | - | - | - | - | - | - |")
                continue
            errors = [e for _, e in points]
            absolute = [abs(e) for e in errors]
            lines.append(
                f"| {label} | {len(points)} | {len({u for u, _ in points})} | {statistics.median(absolute):.1%} "
                f"| {by_source_median(points):.1%} | {statistics.median(errors):+.1%} | {statistics.fmean(absolute):.1%} "
                f"| {max(absolute):.0%} "
                f"| {sum(a <= 0.25 for a in absolute) / len(absolute):.0%} |"
            )
    return lines


@dataclass(frozen=True)
class PoolPoint:
    """One unseen max-throughput point beside what its source prints about the engine: the planner's KV-limited batch,
    the batch the engine's printed KV pool holds (whole 64-token blocks, GUARANTEED_NO_EVICT reserving prompt + output),
    and how many waves of that batch its finite run of ``requests`` takes."""

    isl: int
    osl: int
    error: float
    planned_batch: float
    engine_batch: int
    waves: int


TRTLLM_BLOCK_TOKENS = 64  # "Number of tokens per block: 64." in every result file of the sweep (TensorRT-LLM's default)


def unseen_pool_points(catalog: Catalog) -> list[PoolPoint]:
    """The unseen max-throughput points whose source prints the engine's KV pool and request count, sized by the
    roofline `plan` runs with the engine declared. A diagnostic of the residual's cause, never an input to a constant."""
    unseen, sizing = catalog.unseen_evaluation, catalog.sizing
    points = []
    for table in unseen.servingTables:
        if table.regime != "max-throughput" or table.kvPoolTokens is None:
            continue
        for row in table.rows:
            if row.requests is None:
                continue
            gpu = catalog.gpu(row.gpu)
            assert gpu is not None, row.gpu
            w = serving_workload(row, table, catalog, models=unseen.servingModels)
            replica = Replica(
                served_shape(w, sizing), row.tp, gpu_hardware(gpu, w.precision, sizing), efficiencies(sizing),
                sizing.weightBytes.get(w.precision, 2), kv_bytes(w.precision, w.kv_cache_precision), w.kv_admission,
                w.kv_memory_fraction or sizing.inference.kvMemoryFraction.value,
            )  # fmt: skip
            blocks = -(-(row.isl + row.osl) // TRTLLM_BLOCK_TOKENS)
            engine = min(table.maxBatch, table.kvPoolTokens // (blocks * TRTLLM_BLOCK_TOKENS))
            planned = planned_serving(row, table, catalog, sizing, models=unseen.servingModels)
            error = -1.0 if planned is None else (planned - measured_serving(row)) / measured_serving(row)
            batch = min(float(table.maxBatch), kv_batch_limit(replica, row.isl, row.osl))
            points.append(PoolPoint(row.isl, row.osl, error, batch, engine, -(-row.requests // engine)))
    return points


def pool_lines(points: list[PoolPoint]) -> list[str]:
    """The unseen max-throughput residual by output length, beside the planner's KV batch over the engine's and the
    waves each finite run takes (README: why the residual follows the output length)."""
    if not points:
        return []
    out = [
        "",
        "<details><summary>Unseen max-throughput serving by output length (engine declared): the planner's KV-limited "
        "batch against the batch the engine's printed KV pool holds, and the waves of that batch each finite run "
        "takes</summary>",
        "",
        "| output tokens | points | median error | planned / engine KV batch | waves (median, range) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for osl in sorted({p.osl for p in points}):
        group = [p for p in points if p.osl == osl]
        waves = [p.waves for p in group]
        ratio = statistics.median(p.planned_batch / p.engine_batch for p in group)
        out.append(
            f"| {osl:,} | {len(group)} | {statistics.median(p.error for p in group):+.0%} | {ratio:.2f} "
            f"| {statistics.median(waves):g} ({min(waves)}-{max(waves)}) |"
        )
    return [*out, "", "</details>"]


def tables(catalog: Catalog) -> str:
    unseen = unseen_source_rows(catalog)
    unseen_set = unseen_rows(catalog)
    lines = [
        "| set (plan's own path) | runs or points | sources | median abs. error | median of sources' medians | median error "
        "| mean abs. error | worst | within 25% |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        _line("training, dense: each source unseen", [r for r in unseen if r.kind == "dense" and not r.own_source]),
        _line("training, MoE: each source unseen", [r for r in unseen if r.kind == "MoE" and not r.own_source]),
        _line("training: a constant only its own source sets", [r for r in unseen if r.own_source]),
        _line("training, excluded runs (shipped constants)", shipped_rows(catalog, "excluded")),
        *(_line(f"training, {label}", group) for label, group in unseen_groups(unseen_set) if group),
        *serving_lines(catalog, engine=True),
        *serving_lines(catalog, engine=False),
        *unseen_serving_lines(catalog),
    ]
    detail = _details(
        "Every run, its source left out of the fit (MFU on the 6N / BF16-peak yardstick)",
        ("run", "kind", "GPUs", "measured MFU", "planned", "error", "constant only its own source sets"),
        [(r, [r.run.id, r.kind, f"{r.run.gpus:,} {r.run.gpu}"], [r.own_source]) for r in unseen],
    )
    detail += _details(
        "Every run of the unseen set (evaluation-unseen.yaml; shipped constants; MFU on the 6N / BF16-peak yardstick)",
        ("run", "kind", "sequence", "GPUs", "precision", "measured MFU", "planned", "error"),
        [(r, [r.run.id, r.kind, f"{r.run.sequenceLength:,}", f"{r.run.gpus:,} {r.run.gpu}", r.run.precision], []) for r in unseen_set],
    )
    detail += _unseen_serving_details(catalog)
    detail += pool_lines(unseen_pool_points(catalog))
    return "\n".join(lines + detail)


def _unseen_serving_details(catalog: Catalog) -> list[str]:
    """A collapsed table of every unseen serving point: output tokens/s per GPU published and planned, with the engine
    declared and with the planner's defaults."""
    unseen = catalog.unseen_evaluation
    out = [
        "",
        "<details><summary>Every serving point of the unseen set (evaluation-unseen.yaml; shipped efficiencies; "
        "output tokens/s per GPU)</summary>",
        "",
        "| table | regime | GPUs | input | output | measured | planned, engine declared | error | planned, defaults | error |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for table in unseen.servingTables:
        for row in table.rows:
            measured = measured_serving(row)
            cells = [table.id, table.regime, f"{row.tp} {row.gpu}", f"{row.isl:,}", f"{row.osl:,}", f"{measured:,.0f}"]
            for engine in (True, False):
                planned = planned_serving(row, table, catalog, catalog.sizing, engine=engine, models=unseen.servingModels)
                cells += ["-", "-100%"] if planned is None else [f"{planned:,.0f}", f"{(planned - measured) / measured:+.0%}"]
            out.append("| " + " | ".join(cells) + " |")
    return [*out, "", "</details>"]


def _details(summary: str, header: tuple[str, ...], rows: list[tuple[Row, list[str], list[str]]]) -> list[str]:
    """A collapsed table of runs, worst under-prediction first: the given leading cells, measured and planned MFU, the
    error, then the trailing cells."""
    out = ["", f"<details><summary>{summary}</summary>", "", "| " + " | ".join(header) + " |"]
    out.append("|" + "|".join("---:" if h in ("GPUs", "sequence", "measured MFU", "planned", "error") else "---" for h in header) + "|")
    for r, lead, trail in sorted(rows, key=lambda x: x[0].error):
        planned = "-" if r.planned is None else f"{r.planned:.3f}"
        out.append("| " + " | ".join([*lead, f"{r.measured:.3f}", planned, f"{r.error:+.0%}", *trail]) + " |")
    return [*out, "", "</details>"]


def formula_terms(sizing: Sizing) -> dict[str, str]:
    """The formula's terms as the README prints them, keyed by the factor `--explain` names (and the helper quantities a,
    e, c, speed-up): a test evaluates them on a row and compares each with the factor the code prints, so the prose
    cannot drift from the code (review sizreview21 F3: attention lost its 12 / 6, the bubble was not in the product)."""
    t = sizing.training
    cast = FP8_CAST_ELEMENTS_PER_HIDDEN * FP8_CAST_BYTES_PER_ELEMENT
    return {
        "a": f"{t.attentionFlops.value:g} / f x layers x sequence x width / active parameters x kernel",
        "attention": "1 / (1 + a)",
        "attention, fp8": "1 / (1 + gain x a)",
        "per-GPU batch": f"min(1, tokens per GPU per step / {t.perGpuBatch.referenceTokens.value:,.0f}) ^ {t.perGpuBatch.exponent.value}",
        "e": "vocabulary x hidden / active parameters",
        "c": f"{cast} x hidden x layers / HBM / (f x active parameters / (peak x base))",
        "fp8 outside the GEMMs": "(1 + gain x a) / ((1 - e) + gain x (e + a + c))",
        "speed-up": "gain x (1 + a) / ((1 - e) + gain x (e + a + c))",
        "mixture of experts": f"1 / (1 + {t.moeRouting.value:,.0f} x experts per token x hidden x MoE layers / active parameters"
        " x speed-up / (1 + a) x 6 / f)",
        "recomputation": f"1 / (1 + share x 6 x (1 / {t.fullRecompute.value} - 1) / f)",
        "pipeline bubble": "v x m / (v x m + p - 1)",
        "h": "mixture of experts x vocabulary x hidden x layers / (max(active parameters - 2 x vocabulary x hidden, active"
        " parameters / 2) / gain + a x active parameters)",
        "k": "max(0, (layers - (p - 1) x h) / p)",
        "pipeline balance": "(layers + h) / p / min(max(ceil((layers - floor(k)) / (p - 1)), floor(k) + h), max(ceil((layers -"
        " ceil(k)) / (p - 1)), ceil(k) + h))",
    }


def formula(catalog: Catalog) -> str:
    """The README's training-throughput formula with every constant it restates read from the shipped sizing.yaml, its
    product the factors `--explain` prints in their order (:data:`FORMULA_PRODUCT`), and the count of the runs it was
    fitted and checked on read from calibration-training.yaml (review sizreview23 N2: the prose said 90 where the file
    held 95)."""
    sizing = catalog.sizing
    t, qlora_bytes = sizing.training, sizing.qloraBaseBytes.value + 4.0  # as sizing.qlora_dequantisation counts it
    x = formula_terms(sizing)
    runs = catalog.training_calibration.runs
    roles = {role: sum(r.role == role for r in runs) for role in ("fit", "holdout", "excluded")}
    return f"""\
`MFU = {" x ".join(FORMULA_PRODUCT)}`, on the dense BF16 peak (so an fp8 speed-up is a measured factor, not a doubled
peak); each name is a factor `--explain` prints, in its order, and a factor that does not apply is 1. `f` is the job's
FLOPs a token over its active parameters: 6, and 4 for LoRA/QLoRA (the frozen base computes no weight gradients).
Attention is physics: `attention = {x["attention"]}` with `a = {x["a"]}` ({t.attentionFlops.value:g} = the full,
non-causal FLOPs of the scores and their weighted sum, forward and backward, against the `f` a parameter the yardstick
counts; width is the attention's query-key width, sequence the span it attends over, a sliding window's where shorter;
`kernel` is 1 but for FlashAttention-2 on Hopper, {t.flashAttention2OnHopper.value:g} (`attentionKernel`: it uses none of
Hopper's asynchronous copies or warpgroup MMAs, and FlashAttention-3 runs its forward pass 1.5-2.0x and its backward
1.5-1.75x faster, arXiv 2407.08608: a third and two thirds of the term's time at the midpoints)); the
per-GPU-batch factor `{x["per-GPU batch"]}` is the scaling loss (on a fixed global batch, more GPUs never lower
GPU-hours); fp8 gains are {t.fp8Gain.transformer_engine.value} on Transformer Engine / NeMo-class stacks and
{t.fp8Gain.generic.value} on generic PyTorch float8 (`fp8Recipe`; between the two when unknown), on the transformer
blocks' GEMMs only: attention stays 16-bit (an fp8 job's attention term is `{x["attention, fp8"]}`), and so do the
output head and the casts into fp8 (Amdahl's law, `fp8 outside the GEMMs = {x["fp8 outside the GEMMs"]}`, the head's
share of the FLOPs `e = {x["e"]}` and the casts' HBM time `c = {x["c"]}`); the MoE factor is
`mixture of experts = {x["mixture of experts"]}` (all-to-all volume, permutation and small expert GEMMs: a share of
the GEMMs' 6N time, so weighed against the compute with attention in it, `1 + a`, the same at any sequence length and
attention kernel, and a time that keeps its bf16 length while fp8 shortens the whole compute by
`speed-up = {x["speed-up"]}`, 1 in bf16 and in fp32, whose
4-byte tokens and TF32 expert GEMMs slow the overhead with the compute, and a LoRA job runs f / 6 of the full run's
compute beside the same dispatches); recomputing a share of the layers costs
`{x["recomputation"]}` (full recomputation: 8N instead of 6N); QLoRA pays for dequantising its 4-bit base before every
GEMM (`QLoRA dequantisation = 1 / (1 + passes x {qlora_bytes} B a weight x peak x efficiency x held / (HBM x f x tokens a
micro-batch))`, about 8-12% at 4,096-token sequences on an H100; litgpt's published LoRA vs NF4 times on Llama 2 7B at
micro-batch 1 differ by 1.56x; `held` is 1 for a dense model, and a mixture of experts dequantises every expert it holds
that a token reaches, `held = (shared + routed x TP / (EP x expert TP)) / active parameters`); a pool without RDMA
caps throughput by its link (`network`). Tensor parallelism is physics
too: Megatron's 2 all-reduces a layer forward and 2 backward (plus 2 per recomputed layer) of `hidden x 2 B` a token,
`2 (t - 1) / t` of it per GPU, over the GPU's NVLink or PCIe bandwidth a direction at NCCL's bus-bandwidth share
({t.tpLinkEfficiency.value}, nccl-tests issue 212), against the token's compute time: `1 / (1 + link seconds / compute
seconds)`, nothing where the stack overlaps them (`tensorParallelOverlap`, set on the calibration runs of NeMo,
Megatron-Bridge and NVIDIA's MLPerf GPT-3 and Llama 3.1 405B recipes). A declared pipeline idles its fill and drain:
`pipeline bubble = {x["pipeline bubble"]}` (p stages, m microbatches of one sequence a data-parallel rank, v virtual
stages of the interleaved schedule), and its heaviest stage paces it: `pipeline balance = {x["pipeline balance"]}` (whole
layers a stage, the last one also running the output head, `h = {x["h"]}` layers' time: its 16-bit GEMM against a
layer's GEMMs, sped up by an fp8 `gain`, and attention, and a MoE's layers' routing time (the MoE factor, 1 for a
dense model); the embedding lookup and the loss cost ~0; the best split of
whole layers, the last stage `k = {x["k"]}` of them rounded either way and the head, as Megatron-Core's
pipeline_model_parallel_layout can place them; its default even split is no better). The planner picks the tensor-parallel
degree and the recomputed layers a run would: of the degrees that fit memory (each with the fewest recomputed layers it
needs), the one with the shortest step; the fit sees the same layouts. Production runs keep {t.goodput.value:.0%}
goodput (read from the Llama 3.1 405B card's GPU-hours against the model's steady state for that run, so it is `fit`,
never held out; the paper reports more than 90% effective training time). `--explain` prints every factor with its
source; the factors live in `alicerce/catalog/data/sizing.yaml`, and this paragraph's constants and terms are read from it
(`bench/sizing_accuracy.py --readme`; tests/plan/test_calibration.py evaluates the terms on DeepSeek-V3 against the
factors `--explain` prints).

The runs are `alicerce/catalog/data/calibration-training.yaml` ({len(runs)} public runs: {roles["fit"]} `fit`,
{roles["holdout"]} `holdout` and {roles["excluded"]} excluded, each exclusion saying why; model cards, papers, MLPerf Training
v4.1-v5.1, NeMo/Megatron-Bridge and Megatron-Core tables, each with its source)."""


def _replace_block(text: str, begin: str, end: str, block: str) -> str:
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + block + "\n" + text[stop:]


def main(argv: list[str]) -> int:
    catalog = load_catalog()
    text = tables(catalog)
    print(text)
    if "--readme" in argv:
        readme = ROOT / "README.md"
        current = _replace_block(readme.read_text("utf-8"), BEGIN, END, text)
        current = _replace_block(current, FORMULA_BEGIN, FORMULA_END, formula(catalog))
        readme.write_text(current, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
