"""Sizing inputs: the `costs` section names real owned sites and rented pools; MoE routing is consistent."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from alicerce.catalog.models import Gpu
from alicerce.resolve.eligibility import eligible
from alicerce.resolve.model import ResolvedPool
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean, one_of
from alicerce.spec.heads import tensor_parallel_refusals
from alicerce.spec.models.costs import OnpremSiteCosts
from alicerce.spec.models.storage import ParallelFsTier
from alicerce.spec.models.workloads import (
    DEFAULT_SEQUENCE,
    EXPERTS_UNDECLARED,
    UNSHAPED,
    LatentAttention,
    Model,
    SlidingWindowAttention,
    Workload,
    adapters_count_fix,
    adapters_uncounted,
)
from alicerce.spec.paths import SpecPath
from alicerce.spec.units import format_bytes

rules = RuleSet()


def _deleted_here(ctx: RuleContext, section: str) -> set[str]:
    """Names this environment's overrides delete from a named list (costs may still price them elsewhere)."""
    items: Any = (ctx.env.overrides or {}).get(section) or []
    return {i["name"] for i in items if isinstance(i, dict) and i.get("$patch") == "delete" and isinstance(i.get("name"), str)}


@rules.rule("AL350", "owned-costs-key", "Owned sites' costs are listed under costs.owned, or its old name costs.onprem: not both.")
def owned_costs_key(ctx: RuleContext) -> Iterable[Finding]:
    costs = ctx.spec.costs
    if costs.owned and costs.onprem:
        yield Finding(S.costs.onprem, "costs.onprem is the old name of costs.owned: the spec gives both", "move its entries under owned",
                      key=True)  # fmt: skip


def owned_cost_entries(ctx: RuleContext) -> list[tuple[Any, OnpremSiteCosts]]:
    """(spec path, entry) of every owned site's costs, under costs.owned or under its old name (AL350)."""
    costs = ctx.spec.costs
    owned = [(S.costs.owned[i], entry) for i, entry in enumerate(costs.owned)]
    return [*owned, *((S.costs.onprem[i], entry) for i, entry in enumerate(costs.onprem))]


@rules.rule("AL281", "cost-references", "Cost inputs name an owned site of the environment and pools of the right kind.")
def cost_references(ctx: RuleContext) -> Iterable[Finding]:
    costs = ctx.spec.costs
    pools = {p.name: p for p in ctx.resolved.pools}
    known_pools = set(ctx.pools) | _deleted_here(ctx, "nodePools")
    all_sites = ctx.every_site
    for path, entry in owned_cost_entries(ctx):
        if entry.site not in all_sites:
            yield Finding(path.site, f'no site "{entry.site}" in any environment', did_you_mean(entry.site, all_sites), entry.site)
            continue
        if entry.site not in ctx.sites:
            continue  # another environment's site
        site = ctx.resolved.site(entry.site)
        if not site.capabilities.owned:
            yield Finding(path.site, f"site {entry.site} is rented ({site.capabilities.label}): price its pools under costs.cloud",
                          "move the entry to costs.cloud", entry.site)  # fmt: skip
            continue
        for j, pool_costs in enumerate(entry.pools):
            pool = pools.get(pool_costs.pool)
            if pool_costs.pool not in known_pools:
                yield Finding(path.pools[j].pool, f'no node pool "{pool_costs.pool}"',
                              did_you_mean(pool_costs.pool, known_pools) or one_of(known_pools), pool_costs.pool)  # fmt: skip
            elif pool is not None and pool.site.name != entry.site:
                yield Finding(path.pools[j].pool, f"pool {pool.name} is at site {pool.site.name}, not {entry.site}",
                              f"list it under the entry for {pool.site.name}", pool_costs.pool)  # fmt: skip
    for i, cloud in enumerate(costs.cloud):
        path = S.costs.cloud[i]
        pool = pools.get(cloud.pool)
        if cloud.pool not in known_pools:
            yield Finding(
                path.pool, f'no node pool "{cloud.pool}"', did_you_mean(cloud.pool, known_pools) or one_of(known_pools), cloud.pool
            )
            continue
        if pool is None:
            continue  # deleted in this environment
        if pool.owned:
            yield Finding(path.pool, f"pool {pool.name} is owned, not rented: its costs go under costs.{costs.owned_key}", None, cloud.pool)
            continue
        kind = pool.capacity_type
        if cloud.savings_plan_discount is not None and kind in ("spot", "capacity-block"):
            # Savings Plans and Reserved Instances discount on-demand rates (reservations bill at on-demand, so they apply);
            # Spot and Capacity Blocks are bought at their own prices, which no such commitment lowers
            yield Finding(path.savings_plan_discount, f"pool {pool.name} buys {kind} capacity, which a Savings Plan or Reserved "
                          "Instances do not discount", "remove savingsPlanDiscount, or set usdPerHour to the price you pay",
                          cloud.savings_plan_discount)  # fmt: skip
        if cloud.reserved_nodes is not None:
            if kind != "capacity-reservation":
                yield Finding(path.reserved_nodes, f"pool {pool.name} buys {kind} capacity, not a capacity reservation",
                              "remove reservedNodes", cloud.reserved_nodes)  # fmt: skip
            elif cloud.reserved_nodes > pool.spec.scaling.max:
                yield Finding(path.reserved_nodes, f"{cloud.reserved_nodes} reserved instances but the pool scales to "
                              f"{pool.spec.scaling.max}: the rest would be paid for and never used", "lower it or raise scaling.max",
                              cloud.reserved_nodes)  # fmt: skip


@rules.rule("AL282", "moe-experts", "Expert routing belongs to mixture-of-experts models and routes to experts that exist.")
def moe_experts(ctx: RuleContext) -> Iterable[Finding]:
    for i, w in enumerate(ctx.spec.workloads):
        model = w.model
        if model is None or model.experts is None:
            continue
        path = S.workloads[i].model.experts
        experts = model.experts
        if model.architecture != "moe":
            yield Finding(path, "experts apply to a mixture-of-experts model", "set architecture: moe", key=True, resource=w.name)
        if experts.per_token > experts.total:
            yield Finding(path.per_token, f"each token is routed to {experts.per_token} of only {experts.total} experts",
                          "perToken must not exceed total", experts.per_token, resource=w.name)  # fmt: skip
        elif experts.per_token == experts.total:
            # every token through every expert skips none: the model's compute is dense, its active parameters all of
            # them, and the routed experts' size (parameters - activeParameters) / (total - perToken) has no divisor
            # (review sizreview29 N1: the plan said the experts were "not declared" and AL383 / AL390 kept silent)
            yield Finding(path.per_token, f"each token is routed to all {experts.total} experts: none is skipped, so the model "
                          "computes as a dense one", "lower perToken below total to the experts a router picks per token, "
                          "or remove experts, activeParameters and architecture: moe", experts.per_token, resource=w.name)  # fmt: skip
        if experts.layers is not None and model.layers is not None and experts.layers > model.layers:
            yield Finding(path.layers, f"{experts.layers} expert layers in a {model.layers}-layer model", None, experts.layers,
                          resource=w.name)  # fmt: skip
        yield from _experts_fit_the_parameters(path.per_token, w, model)


def _billions(count: float) -> str:
    return f"{count / 1e9:,.{1 if abs(count) < 1e11 else 0}f}B"


def _experts_fit_the_parameters(path: SpecPath, w: Workload, model: Model) -> Iterable[Finding]:
    """An expert is (parameters - activeParameters) / (total - perToken), and what is left of the active parameters once a
    token's perToken experts are taken out, the attention, embeddings and shared experts, cannot be negative: Mixtral 8x7B
    (46.7B, 12.9B active, 8 experts) declared top-6 is experts of 16.9B and -88.5B outside them, a model that does not
    exist, which sizing planned by clamping the rest to 0 (review sizreview61 G1). The most experts a token the
    parameters allow: perToken <= activeParameters x total / parameters."""
    experts = model.experts
    if experts is None or model.active_parameters is None or experts.per_token >= experts.total:
        return
    total, active = float(model.parameters), float(model.active_parameters)
    expert = (total - active) / (experts.total - experts.per_token)
    rest = active - experts.per_token * expert
    if total > active and rest < 0:
        # not one expert of that size fits the active parameters: the sizes, not perToken, are wrong (review sizreview62)
        most = math.floor(active * experts.total / total)
        if most < 1:
            yield Finding(path, f"an expert of {_billions(expert)} parameters is more than the {_billions(active)} active: no "
                          "token can run one", "the parameters and activeParameters the model card gives", experts.per_token,
                          resource=w.name)  # fmt: skip
            return
        yield Finding(path, f"{experts.per_token} of {experts.total} experts a token make each expert ({_billions(total)} - "
                      f"{_billions(active)}) / {experts.total - experts.per_token} = {_billions(expert)} parameters, and "
                      f"{experts.per_token} of them more than the {_billions(active)} active: {_billions(rest)} would be "
                      "left for attention and embeddings",
                      f"at most {most} experts a token at these parameters, perToken <= activeParameters x total / "
                      "parameters; or the parameters and activeParameters the model card gives", experts.per_token,
                      resource=w.name)  # fmt: skip


SERVING = ("inference", "batch-inference")  # what plan_inference sizes: the kinds a serving engine's knobs apply to
SCHEDULED = ("training", "fine-tuning")  # what plan_training sizes: the kinds a run schedule applies to


@rules.rule("AL394", "data-prep-pool", "A data-preparation job pinned to a pool runs on a CPU pool, the cores it is sized in.")
def data_prep_pool(ctx: RuleContext) -> Iterable[Finding]:
    """Data preparation is sized in CPU cores and priced on a CPU pool's vCPUs; pinned to a GPU pool it was priced at $0
    and its pods, asking for no GPU and tolerating no GPU taint, would not schedule there (review sizreview35 D-F)."""
    gpu_pools = {p.name for p in ctx.resolved.pools if p.gpu is not None}
    cpu_pools = sorted(p.name for p in ctx.resolved.pools if p.gpu is None and p.spec.purpose == "data-prep")
    for i, w in enumerate(ctx.spec.workloads):
        if w.kind == "data-prep" and w.pool in gpu_pools:
            fix = f"pin a data-prep pool, {' or '.join(cpu_pools)}, or none" if cpu_pools else "add a CPU pool with `purpose: data-prep`"
            why = f"{w.name} is sized in CPU cores, and pool {w.pool} is a GPU pool"
            hint = f"{fix}; a GPU data-preparation job is sized as batch-inference or training"
            yield Finding(S.workloads[i].pool, why, hint, w.pool, resource=w.name)


@rules.rule("AL370", "workload-fields-apply", "A workload declares only the fields sizing reads for its kind.")
def workload_fields_apply(ctx: RuleContext) -> Iterable[Finding]:
    """Serving knobs on a training job, or a run schedule on a service, were accepted and never read: the user believes
    they shaped the plan."""
    for i, w in enumerate(ctx.spec.workloads):
        path = S.workloads[i]
        if w.kind not in SERVING:
            # a training run's tensor-parallel degree is its layout (issue 23); the batch cap is an engine's alone
            serving_only = [("max_batch", w.max_batch)] + ([] if w.kind in SCHEDULED else [("tensor_parallel", w.tensor_parallel)])
            for field, value in serving_only:
                if value is not None:
                    yield Finding(getattr(path, field), f"{w.kind} workloads are not served by an engine: sizing ignores it",
                                  f"remove it; it applies to {' and '.join(SERVING)} workloads", key=True, resource=w.name)  # fmt: skip
        if w.kind not in SCHEDULED and w.runs_per_quarter is not None:
            yield Finding(path.runs_per_quarter, f"{w.kind} workloads have no runs to schedule: sizing ignores it",
                          f"remove it; it applies to {' and '.join(SCHEDULED)} workloads", key=True, resource=w.name)  # fmt: skip
        if w.kind not in SCHEDULED and w.tensor_parallel_overlap is not None:
            yield Finding(path.tensor_parallel_overlap, f"{w.kind} workloads have no training step to overlap: sizing ignores it",
                          f"remove it; it applies to {' and '.join(SCHEDULED)} workloads", key=True, resource=w.name)  # fmt: skip


@rules.rule("AL375", "pipeline-layout", "A training pipeline's stages and virtual stages each hold a layer and fill the pinned GPUs.")
def pipeline_layout(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron's pipeline splits the model's layers over ``pipelineParallel`` stages and every data-parallel replica
    of the model spans tensor x pipeline GPUs: a stage without a layer does not exist, and pinned GPUs that are not whole
    pipelines leave GPUs idle (Megatron-LM asserts the world size divides by tensor x pipeline; the planner finds no
    layout and sizes a slower one). ``pipelineVirtualStages`` splits each stage into chunks of the interleaved schedule,
    which needs a pipeline to interleave and layers that divide into pipeline x virtual chunks."""
    for i, w in enumerate(ctx.spec.workloads):
        if w.kind not in SCHEDULED:
            continue  # on another kind AL380 reports it
        yield from _virtual_stages(i, w)
        stages = w.pipeline_parallel
        if stages is None or stages == 1:
            continue
        path = S.workloads[i].pipeline_parallel
        if w.model is not None and w.model.layers is not None and stages > w.model.layers:
            yield Finding(path, f"pipelineParallel {stages} splits a {w.model.layers}-layer model: a stage would hold no layer",
                          f"at most {w.model.layers} stages", stages, resource=w.name)  # fmt: skip
        if w.gpus is not None and w.gpus % _replica(w):
            yield _pinned_replicas(path, w, stages, "whole pipelines")


def _virtual_stages(i: int, w: Workload) -> Iterable[Finding]:
    """The interleaved schedule's model chunks: pipeline x virtual of them, each holding something. Megatron-Core runs
    chunks of unequal layers: --pipeline-model-parallel-layout (MCore v0.13, "Flexible Asymmetric Virtual Pipeline
    Parallelism with Custom Pipeline Layout", megatron/core/transformer/moe/README.md) places each layer, the embedding
    and the loss in a chunk of its own choosing, and its check (megatron/core/transformer/
    pipeline_parallel_layer_layout.py, PipelineParallelLayerLayout) asks only that the chunks divide by the pipeline
    stages, the embedding come first and the loss last, once each, and the decoder layers number the model's:
    DeepSeek-V3's 61 layers run at PP 16 x VP 2 ("Et*3|(tt|)*29,m|L") and at PP 4 and PP 8 x VP 4 in Megatron-Bridge's
    25.11 table. This check refused any split where the layers (or one or two more) did not divide by pipeline x
    virtual (review sizreview20 F5). What is left: more chunks than the layers, the embedding and the loss leaves a
    chunk with nothing to run but its share of the bubble."""
    virtual = w.pipeline_virtual_stages
    if virtual is None or virtual == 1:
        return
    path = S.workloads[i].pipeline_virtual_stages
    stages = w.pipeline_parallel or 1
    if stages == 1:
        yield Finding(path, f"pipelineVirtualStages {virtual} interleaves the stages of a pipeline, and the workload declares "
                      "none: without pipelineParallel there is no bubble to shrink", "declare pipelineParallel of 2 or more "
                      "stages beside it, or remove it", virtual, resource=w.name)  # fmt: skip
        return
    layers = w.model.layers if w.model is not None else None
    chunks = stages * virtual
    if layers is not None and chunks > layers + 2:
        most = (layers + 2) // stages
        yield Finding(path, f"pipelineParallel {stages} x pipelineVirtualStages {virtual} = {chunks} model chunks for "
                      f"{layers} layers, the embedding and the loss: a chunk of the interleaved schedule would hold nothing "
                      "(Megatron-Core's layout runs an empty chunk, which shrinks no bubble; the plan would price one it does "
                      "not give)",
                      f"at most {most} virtual stages at {stages} stages", virtual, resource=w.name)  # fmt: skip


@rules.rule("AL386", "context-layout", "A context-parallel group splits each sequence evenly and fills the pinned GPUs.")
def context_layout(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron-Core splits each sequence into 2 x CP chunks and gives each GPU of the group two (the causal mask's
    load balance: get_batch_on_this_cp_rank), so the sequence divides by 2 x CP; every data-parallel replica spans
    tensor x context x pipeline GPUs, so pinned GPUs are whole context groups of whole pipelines."""
    for i, w in enumerate(ctx.spec.workloads):
        cp = w.context_parallel
        if cp is None or cp == 1 or w.kind not in SCHEDULED:
            continue  # on another kind AL380 reports it
        path = S.workloads[i].context_parallel
        sequence = w.sequence_length or DEFAULT_SEQUENCE  # what sizing splits when none is declared (review sizreview9 F7)
        if sequence % (2 * cp):
            yield Finding(path, f"contextParallel {cp} splits each sequence into {2 * cp} chunks: {sequence:,} tokens do not "
                          "divide evenly", f"a sequenceLength that is a multiple of {2 * cp}, or a group that divides "
                          f"{sequence // 2:,}", cp, resource=w.name)  # fmt: skip
        # under a pipeline AL375 reports the whole replica, context groups and all (one finding for one count)
        if w.gpus is not None and w.gpus % _replica(w) and (w.pipeline_parallel or 1) == 1:
            yield _pinned_replicas(path, w, cp, "whole context groups")


@rules.rule("AL227", "batch-holds-a-sequence", "A training job's global batch holds at least one whole sequence.")
def batch_holds_a_sequence(ctx: RuleContext) -> Iterable[Finding]:
    """An optimizer step trains whole sequences (Megatron-LM's --global-batch-size counts sequences): a batch of fewer
    tokens than one sequence has none to split over the data-parallel ranks. Sizing came out as PL303 "the global
    batch's 0 sequences", unlocated (review sizreview21 N4)."""
    for i, w in enumerate(ctx.spec.workloads):
        batch = w.global_batch_tokens
        if batch is None or w.kind not in SCHEDULED:
            continue  # on another kind AL380 reports it
        sequence = w.sequence_length or DEFAULT_SEQUENCE  # what sizing reads when none is declared
        if batch < sequence:
            yield Finding(S.workloads[i].global_batch_tokens, f"globalBatchTokens {batch:,} is less than one sequence of "
                          f"{sequence:,} tokens{'' if w.sequence_length else ' (the default sequenceLength)'}: a step trains "
                          "whole sequences", f"at least {sequence:,} tokens, a multiple of the sequence length", batch,
                          resource=w.name)  # fmt: skip


@rules.rule("AL376", "expert-layout", "A declared expert-parallel group spreads a mixture of experts' experts over whole GPUs.")
def expert_layout(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron-Core spreads each MoE layer's experts over ``expertParallel`` GPUs and asserts the experts divide by it
    (num_moe_experts % expert_model_parallel_size == 0): a dense model has no experts to spread, and a group wider than
    the experts, or one that does not divide them, leaves a GPU without a whole share. An expert layers' own
    tensor-parallel degree (expertTensorParallel, MoE Parallel Folding) folds with a declared group: sizing reads it
    only beside expertParallel."""
    for i, w in enumerate(ctx.spec.workloads):
        if w.expert_tensor_parallel is not None and w.expert_parallel is None and w.kind in SCHEDULED:
            yield Finding(S.workloads[i].expert_tensor_parallel, f"expertTensorParallel {w.expert_tensor_parallel} without "
                          "expertParallel: the folded expert layout is the two together", "declare expertParallel too, or "
                          "remove it", w.expert_tensor_parallel, resource=w.name)  # fmt: skip
        ep = w.expert_parallel
        if ep is None or w.kind not in SCHEDULED or w.model is None:
            continue  # on another kind AL380 reports it
        path = S.workloads[i].expert_parallel
        experts = w.model.experts
        if w.model.architecture != "moe" or experts is None:
            yield Finding(path, f"expertParallel {ep} on a model with no experts declared: sizing ignores it",
                          "declare model.architecture: moe and model.experts, or remove it", ep, resource=w.name)  # fmt: skip
        elif ep > 1 and experts.total % ep:
            yield Finding(path, f"expertParallel {ep} does not divide the model's {experts.total} experts: each GPU of the "
                          "group holds a whole share of them", f"a divisor of {experts.total}: {_divisors(experts.total)}",
                          ep, resource=w.name)  # fmt: skip


@rules.rule(
    "AL371",
    "attention-layout",
    "A sliding-window model's global layers are layers of the model; an mla layout declares its heads once; heads that "
    "are not the hidden size's come with their headDim.",
)
def attention_layout(ctx: RuleContext) -> Iterable[Finding]:
    head_dim_default = int(ctx.catalog.sizing.inference.headDimDefault.value)
    for i, w in enumerate(ctx.spec.workloads):
        model = w.model
        declared_alone = model is not None and model.heads is not None and model.head_dim is None
        if declared_alone and model is not None and model.heads is not None and not isinstance(model.attention, LatentAttention):
            # heads are declared where heads x headDim is not the hidden size: with the default headDim the attention
            # term silently ran over 16 x 128 = 2,048 of Gemma 2 9B's 4,096 (review sizreview17 F9)
            width = model.heads * head_dim_default
            if model.hidden_size is not None and width != model.hidden_size:
                yield Finding(S.workloads[i].model.heads, f"heads {model.heads} x the default headDim {head_dim_default} = {width:,} is "
                              f"not the hidden size {model.hidden_size:,}, and attention runs over heads x headDim",
                              "declare headDim (Gemma 2 9B: 256), or leave heads out where heads x headDim is the hidden size",
                              model.heads, resource=w.name)  # fmt: skip
        if model is not None and model.heads is not None and isinstance(model.attention, LatentAttention):
            # MLA's query heads are its own (attention.heads): two head counts would size one attention twice
            yield Finding(S.workloads[i].model.heads, f"heads {model.heads} beside an mla attention layout, whose query heads "
                          "are attention.heads", "declare the heads once, in attention.heads", model.heads, resource=w.name)  # fmt: skip
        if model is None or not isinstance(model.attention, SlidingWindowAttention) or model.layers is None:
            continue
        if model.attention.global_layers > model.layers:
            yield Finding(S.workloads[i].model.attention.global_layers,
                          f"{model.attention.global_layers} global layers in a {model.layers}-layer model",
                          f"at most {model.layers}", model.attention.global_layers, resource=w.name)  # fmt: skip


@rules.rule("AL372", "tensor-parallel-heads", "A declared tensor-parallel degree divides the model's attention heads.")
def tensor_parallel_heads(ctx: RuleContext) -> Iterable[Finding]:
    """Tensor parallelism gives each GPU whole heads: vLLM's QKVParallelLinear divides the query heads by the degree and
    either the KV heads by the degree or the degree by the KV heads (replicating each), and refuses to start otherwise."""
    head_dim_default = int(ctx.catalog.sizing.inference.headDimDefault.value)
    for i, w in enumerate(ctx.spec.workloads):
        tp, model = w.tensor_parallel, w.model
        if tp is None or model is None or w.kind not in (*SERVING, *SCHEDULED):
            continue
        # the declared pool's node, else the largest of the pools it may run on (review sizreview62 E2: TP 8 named for
        # a workload pinned to a pool of 4-GPU nodes)
        pinned = ctx.catalog.gpu(w.accelerator) if w.accelerator else None  # its accelerator's pools (sizreview63 N3)
        pools = [p for p in ctx.resolved.pools if p.name == w.pool] or [p for _, p in eligible(w, ctx.resolved, pinned)]
        nodes = [pool.gpus_per_node for pool in pools if pool.gpu is not None]
        node = max(nodes) if nodes else None
        for why, hint in tensor_parallel_refusals(model, tp, head_dim_default, serving=w.kind in SERVING, node=node):
            yield Finding(S.workloads[i].tensor_parallel, f"tensorParallel {tp} {why}", hint, tp, resource=w.name)


def _divisors(n: int, most: int = 64) -> str:
    return ", ".join(str(d) for d in range(1, min(n, most) + 1) if n % d == 0)


def _replica(w: Workload) -> int:
    """GPUs a data-parallel replica spans: tensor x context x pipeline (Megatron-LM asserts the world size divides by
    them; the planner's PL303 checks the same group)."""
    return (w.tensor_parallel or 1) * (w.context_parallel or 1) * (w.pipeline_parallel or 1)


def _pinned_replicas(path: SpecPath, w: Workload, value: int, spans: str) -> Finding:
    """AL375 / AL386: pinned GPUs that are not whole replicas, with every declared degree of the replica in the count it
    must divide (review sizreview61 D3: "a stage count that divides 20" at tensorParallel 8, where none does, and "a
    multiple of 3 GPUs" at contextParallel 3 x tensorParallel 8, both met PL303 "groups of 24")."""
    assert w.gpus is not None
    degrees = (("tensorParallel", w.tensor_parallel), ("contextParallel", w.context_parallel), ("pipelineParallel", w.pipeline_parallel))
    named = [f"{field} {d}" for field, d in degrees if d is not None and d > 1]
    group, replica = _replica(w), " x ".join(named)
    hint = f"pin a multiple of {group} GPUs"
    stages, others = w.pipeline_parallel or 1, group // (w.pipeline_parallel or 1)
    if stages > 1 and w.gpus % others == 0:
        layers = w.model.layers if w.model is not None and w.model.layers else 64
        hint += f", or use a stage count that divides {w.gpus // others}: {_divisors(w.gpus // others, layers)}"
    elif stages > 1:  # no stage count fills the count: the rest of the replica does not divide it
        hint += f"; no stage count divides {w.gpus:,} at {' x '.join(named[:-1])}"
    head = replica if len(named) == 1 else f"a replica of {replica} ({group} GPUs)"
    return Finding(path, f"{head} does not divide the pinned {w.gpus:,} GPUs: each data-parallel replica of the model spans "
                   f"{spans}", hint, value, resource=w.name)  # fmt: skip


DATA_PREP = ("data-prep",)
GPU_KINDS = (*SCHEDULED, *SERVING)
# Each workload field that only some kinds read (alicerce/plan/sizing.py: plan_training, plan_inference and
# plan_data_prep; alicerce/plan/platform.py for the dataset's tier), the kinds that read it, and what to do instead
# on another kind. pool, growth, name, team and kind are read for every kind; method, tensorParallel,
# maxBatch and runsPerQuarter have their own rules (AL280, AL370).
_READ_BY: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("model", GPU_KINDS, "data preparation is sized in CPU cores from dataset.size"),
    ("precision", GPU_KINDS, "data preparation is sized in CPU cores from dataset.size"),
    ("accelerator", GPU_KINDS, "data preparation runs on CPU pools"),
    ("optimizer", SCHEDULED, "a served model keeps no optimizer state"),
    ("tokens", SCHEDULED, "serving load is traffic; data preparation's is dataset.size"),
    ("sequence_length", SCHEDULED, "a request's lengths are traffic.inputTokens and traffic.outputTokens"),
    ("global_batch_tokens", SCHEDULED, "the engine's batch cap is maxBatch"),
    ("gpus", SCHEDULED, "serving replicas follow from traffic, a replica's GPUs from tensorParallel"),
    ("mfu", SCHEDULED, "serving speed comes from the roofline (tensorParallel, maxBatch, latency)"),
    ("fp8_recipe", SCHEDULED, "serving at fp8 needs only precision: fp8"),
    ("checkpoint_interval", SCHEDULED, "only training writes checkpoints"),
    ("deadline", (*SCHEDULED, *DATA_PREP), "serving is sized from traffic: declare the rate (peakRps) that finishes in time"),
    ("dataset", (*SCHEDULED, *DATA_PREP), "a service's input is its traffic"),
    ("traffic", SERVING, "training is sized from tokens; data preparation from dataset.size"),
    ("latency", SERVING, "training is sized from tokens and deadline"),
    ("kv_cache_precision", SERVING, "training keeps no KV cache"),
    ("kv_admission", SERVING, "training keeps no KV cache"),
    ("kv_memory_fraction", SERVING, "training keeps no KV cache"),
    ("flash_attention", SCHEDULED, "serving engines size the KV cache, not training activations"),
    ("attention_kernel", SCHEDULED, "the serving roofline's efficiencies are fitted on each engine's own kernels"),
    ("sequence_parallel", SCHEDULED, "serving engines size the KV cache, not training activations"),
    ("zero_stage", SCHEDULED, "a served model keeps no gradients or optimizer state to shard"),
    ("gradient_reduction", SCHEDULED, "a served model reduces no gradients"),
    ("pipeline_parallel", SCHEDULED, "a replica's GPUs are its tensorParallel degree"),
    ("pipeline_virtual_stages", SCHEDULED, "a replica's GPUs are its tensorParallel degree"),
    ("expert_parallel", SCHEDULED, "a replica's GPUs are its tensorParallel degree"),
    ("expert_tensor_parallel", SCHEDULED, "a replica's GPUs are its tensorParallel degree"),
    ("context_parallel", SCHEDULED, "a served prompt's KV cache is sized whole per replica"),
    # an online service's replicas run around the clock and hold their nodes all month (alicerce.plan.growth
    # _always_on): hoursPerDay halved its plan cost and showback only (review sizreview5 F7)
    (
        "hours_per_day",
        (*SCHEDULED, "batch-inference", *DATA_PREP),
        "an online service's replicas run around the clock; work that runs part of the day is batch-inference",
    ),
)


def _kinds(kinds: tuple[str, ...]) -> str:
    return ", ".join(kinds[:-1]) + f" and {kinds[-1]}" if len(kinds) > 1 else kinds[0]


@rules.rule("AL380", "workload-field-kind", "Every field a workload declares is one sizing reads for the workload's kind.")
def workload_field_kind(ctx: RuleContext) -> Iterable[Finding]:
    """A field that sizing reads for other kinds only was accepted and did nothing: the user believes it shaped the plan
    (a deadline on a service, traffic on a training run). Defaults (precision bf16, optimizer adamw) are not declared."""
    for i, w in enumerate(ctx.spec.workloads):
        declared = w.model_fields_set
        for field, kinds, instead in _READ_BY:
            if field in declared and getattr(w, field) is not None and w.kind not in kinds:
                article = "an" if w.kind[0] in "aeiou" else "a"
                yield Finding(getattr(S.workloads[i], field), f"sizing reads it for {_kinds(kinds)} workloads only: on {article} "
                              f"{w.kind} workload it changes nothing", f"remove it; {instead}", key=True, resource=w.name)  # fmt: skip


@rules.rule("AL381", "fp8-recipe-read", "fp8Recipe goes with fp8 precision and with the throughput model it tunes.")
def fp8_recipe_read(ctx: RuleContext) -> Iterable[Finding]:
    """The recipe picks the fp8 gain of the training throughput model (alicerce/plan/throughput.py): at another precision
    no gain applies, and a declared mfu replaces the throughput model whole."""
    for i, w in enumerate(ctx.spec.workloads):
        if w.fp8_recipe is None or w.kind not in SCHEDULED:
            continue  # on another kind AL380 reports it
        path = S.workloads[i].fp8_recipe
        if w.precision != "fp8":
            yield Finding(path, f"fp8Recipe picks the fp8 speed-up, but the workload trains at {w.precision}: it changes nothing",
                          "set precision: fp8, or remove fp8Recipe", key=True, resource=w.name)  # fmt: skip
        elif w.mfu is not None:
            yield Finding(path, f"mfu {w.mfu:g} replaces the throughput model the recipe tunes: fp8Recipe changes nothing",
                          "remove one of mfu and fp8Recipe", key=True, resource=w.name)  # fmt: skip


@rules.rule("AL388", "training-precision-runs", "A training precision is one a training stack runs on the workload's GPU.")
def training_precision_runs(ctx: RuleContext) -> Iterable[Finding]:
    """int8 and int4 are no training recipes (Transformer Engine's are fp8 and, on Blackwell, NVFP4 and MXFP8; int8 and
    int4 are serving and optimizer-state formats; QLoRA's 4-bit base computes in bf16), and NVFP4 training needs
    Blackwell: Transformer Engine asserts compute capability 10.0 or later (NVIDIA/TransformerEngine
    docs/features/low_precision_training/nvfp4 examples: "NVFP4 requires SM100 (Blackwell) or later"). The plan priced
    int8 as bf16 and fp4 on Hopper as fp8 at Transformer Engine's gain, both silently (review sizreview22 N1). fp8 needs
    compute capability 8.9 (Ada) or later: Transformer Engine's check_fp8_support answers "Device compute capability 8.9
    or higher required for FP8 execution." below it (transformer_engine/pytorch/quantization.py _compute_fp8_support at
    v2.18, 27486e03; fp8.py at v0.10 already), and the plan priced fp8 on an A100 as bf16 silently (review sizreview23
    N4). The GPU is the declared pool's (a pin that differs was read instead: sizreview25 D1), else the pinned
    accelerator's; a pool the placement picks is the plan's to refuse (PL303, the same words: Gpu.training_refusal)."""
    pools = {p.name: p for p in ctx.resolved.pools}
    for i, w in enumerate(ctx.spec.workloads):
        if w.kind not in SCHEDULED or w.precision not in ("int8", "int4", "fp8", "fp4") or _qlora_low_precision(w):
            continue  # QLoRA at fp8 / fp4 is AL330's, on every GPU
        path = S.workloads[i].precision
        if w.precision in ("int8", "int4"):  # int4 was planned as bf16, silently (review sizreview58 D3)
            yield Finding(path, f"{w.precision} is no training precision: no training stack runs its GEMMs in {w.precision} "
                          "(Transformer Engine's recipes are fp8, and NVFP4 / MXFP8 on Blackwell)",
                          "set bf16, or fp8 on a GPU with fp8 tensor cores; a 4-bit frozen base is method: qlora at bf16",
                          w.precision, resource=w.name)  # fmt: skip
            continue
        gpu = _start_gpu(ctx, w, pools)
        if gpu is None:
            yield from _refused_everywhere(ctx, w, i)
            continue
        refusal = gpu.training_refusal(w.precision, w.fp8_recipe)
        if refusal is not None:
            yield Finding(path, refusal, Gpu.training_refusal_hint(w.precision), w.precision, resource=w.name)


def _start_gpu(ctx: RuleContext, w: Workload, pools: dict[str, ResolvedPool]) -> Gpu | None:
    """The GPU a training workload starts on: its declared pool's (a pinned accelerator that differs is PL302's
    warning), else the pinned accelerator's; None where the placement picks among the eligible pools."""
    pool = pools.get(w.pool or "")
    if pool is not None and pool.gpu is not None:
        return pool.gpu
    return ctx.catalog.gpu(w.accelerator) if w.accelerator else None


def _training_gpus(ctx: RuleContext, w: Workload, pools: dict[str, ResolvedPool]) -> dict[str, Gpu]:
    """Where AL388 looks for a GPU that runs a precision, by the pool (or pin) it names, and AL330's hint with it: the
    start GPU, else every pool the placement may pick (_eligible_gpus)."""
    gpu = _start_gpu(ctx, w, pools)
    if gpu is not None:
        pool = pools.get(w.pool or "")
        return {pool.name if pool is not None and pool.gpu is gpu else "accelerator": gpu}
    return _eligible_gpus(ctx, w)


def _eligible_gpus(ctx: RuleContext, w: Workload) -> dict[str, Gpu]:
    """The GPU of every pool the placement may pick for a workload that names none (resolve.eligibility: the purposes
    that run its kind, the pools its team holds quota on), by pool: the one place AL330's hint and AL388 read it
    (review sizreview29 N2: each built it)."""
    return {pool.name: pool.gpu for _, pool in eligible(w, ctx.resolved, None) if pool.gpu is not None}


def _refused_everywhere(ctx: RuleContext, w: Workload, index: int) -> Iterable[Finding]:
    """AL388 for a workload the placement places: refused where every pool it may pick refuses the precision (the plan
    tries them all and its PL303 names each: plan.placement._all_refused). Review sizreview26 N7: fp8 LoRA on an
    A100-only platform validated, then `plan` refused it; one pool that runs it is the placement's to pick."""
    gpus = _eligible_gpus(ctx, w)
    refusals = {name: gpu.training_refusal(w.precision, w.fp8_recipe) for name, gpu in gpus.items()}
    if not refusals or any(r is None for r in refusals.values()):
        return  # no pool runs its kind (PL301's), or one runs the precision
    first = next(iter(refusals.values()))
    assert first is not None
    where = f"; every pool it may run on refuses it ({', '.join(f'{n}: {gpus[n].id}' for n in refusals)})"
    yield Finding(S.workloads[index].precision, first + where, Gpu.training_refusal_hint(w.precision), w.precision,
                  resource=w.name)  # fmt: skip


def _qlora_low_precision(w: Workload) -> bool:
    return w.kind in SCHEDULED and w.method == "qlora" and w.precision in ("fp8", "fp4")


@rules.rule("AL330", "qlora-precision", "A QLoRA fine-tune declares no fp8 or fp4 precision, which its GEMMs never run in.")
def qlora_precision(ctx: RuleContext) -> Iterable[Finding]:
    """QLoRA stores the frozen base in 4 bits and dequantises it to its 16-bit computation type (BFloat16) for every
    forward and backward GEMM (Dettmers et al., "QLoRA", arXiv 2305.14314 Sec. 3): an fp8 or fp4 precision is never
    the GEMMs' and gains nothing, and the plan priced it at the bf16 yardstick. It was refused on an A100 (AL388, in
    Transformer Engine's words) and accepted as a no-op on an H100, so in a mixed pool set the refusal moved the job
    (review sizreview25 N3): refused on every GPU instead, as any field that changes nothing is (AL383)."""
    pools = {p.name: p for p in ctx.resolved.pools}
    for i, w in enumerate(ctx.spec.workloads):
        if _qlora_low_precision(w):
            # a LoRA run's GEMMs run fp8 (fp4) only on a GPU with those tensor cores: where none of the GPUs AL388 reads
            # has them, the hint says so (review sizreview26 N7: an A100-only platform was told to set method: lora,
            # then `plan` refused fp8 there, PL303); the GPUs are AL388's own (review sizreview28 G1: a hint read every
            # training pool, ignoring quotas and fine-tuning pools, and led into AL388 or denied an eligible H100)
            gpus = _training_gpus(ctx, w, pools)
            lora = any(g.training_refusal(w.precision, w.fp8_recipe) is None for g in gpus.values()) or not gpus
            where = ", ".join(f"{name}: {g.id}" for name, g in gpus.items())
            hint = (f"set bf16, or method: lora to run its GEMMs in {w.precision}" if lora else
                    f"set bf16: method: lora would run its GEMMs in {w.precision} only on a GPU with {w.precision} tensor "
                    f"cores, and none it may run on has them ({where})")  # fmt: skip
            yield Finding(S.workloads[i].precision, f"QLoRA dequantises its 4-bit base to 16 bits for every GEMM: {w.precision} "
                          "changes nothing here", hint, w.precision, resource=w.name)  # fmt: skip


def _narrowest_adapted(w: Workload, head_dim_default: int, kv_heads_default: int) -> tuple[int, str, str] | None:
    """The narrowest side of the matrices a LoRA run adapts, its name and the hint past it: the hidden size, the KV width
    (kvHeads x headDim, at the planner's default KV heads where undeclared: the width it counts, review sizreview27 R1)
    or MLA's KV latent; None where the plan does not count the adapters on the shape (adapters_uncounted: no layers,
    or a MoE on all linear layers without its experts), and the rank changes no count (review sizreview28 N2: AL390
    judged a rank AL383 called unread)."""
    model = w.model
    if model is None or model.hidden_size is None or adapters_uncounted(w) is not None:
        return None
    below = "a rank below {width:,}"
    sides = [(model.hidden_size, "the hidden size", below)]
    if isinstance(model.attention, LatentAttention):
        sides.append((model.attention.kv_lora_rank, "MLA's KV latent (kvLoraRank)", below))
    else:
        head_dim = model.head_dim or head_dim_default
        if model.kv_heads is not None:
            sides.append((model.kv_heads * head_dim, f"the KV width ({model.kv_heads} KV heads x headDim {head_dim})", below))
        else:
            # the planner's default is a grouped-query model's 8 KV heads; a multi-head model has one a query head, and
            # its rank may be wider (review sizreview28 N3: Llama-2-7B at rank 1,024 was told only to lower it)
            sides.append((kv_heads_default * head_dim, f"the KV width ({kv_heads_default} KV heads, the planner's default with "
                          f"kvHeads undeclared, x headDim {head_dim})", below + ", or declare model.kvHeads: a model with a KV "
                          "head per query head has a KV width of heads x headDim"))  # fmt: skip
    width, name, hint = min(sides, key=lambda side: side[0])
    return width, name, hint.format(width=width)


@rules.rule("AL390", "adapter-rank-low", "A LoRA adapter's rank is below the width of every matrix it adapts.")
def adapter_rank_low(ctx: RuleContext) -> Iterable[Finding]:
    """LoRA's update is B (out x r) A (r x in), low-rank where r < min(in, out) (Hu et al. 2021, arXiv 2106.09685 section
    4.1); at r >= min(in, out) the two factors hold r x (in + out) >= in x out parameters, more than the matrix they
    adapt. Review sizreview26 N4: rank 65,536 on Llama-3-70B planned 848B adapters, 1,202% of the base, on 208 GPUs."""
    head_dim_default = int(ctx.catalog.sizing.inference.headDimDefault.value)
    kv_heads_default = int(ctx.catalog.sizing.inference.kvHeadsDefault.value)
    for i, w in enumerate(ctx.spec.workloads):
        if w.adapter is None or w.adapter.rank is None or w.method not in ("lora", "qlora"):
            continue
        narrowest = _narrowest_adapted(w, head_dim_default, kv_heads_default)
        if narrowest is not None and w.adapter.rank >= narrowest[0]:
            width, name, hint = narrowest
            yield Finding(S.workloads[i].adapter.rank, f"rank {w.adapter.rank:,} is not below {name}, {width:,}: the adapted "
                          "matrices' adapters hold more parameters than the matrices (r x (in + out) >= in x out)",
                          hint, w.adapter.rank, resource=w.name)  # fmt: skip


@rules.rule("AL382", "dataset-bytes-read", "A dataset's stored bytes are given once, on a workload that reads them.")
def dataset_bytes_read(ctx: RuleContext) -> Iterable[Finding]:
    """Training reads its dataset at tokens/s x bytes per token, where bytesPerSample counts as bytes per token x sequence
    (one sample a sequence); data preparation reads the whole dataset.size and neither rate."""
    for i, w in enumerate(ctx.spec.workloads):
        dataset = w.dataset
        if dataset is None or w.kind in SERVING:
            continue  # on a service AL380 reports the whole dataset
        path = S.workloads[i].dataset
        given = [f for f in ("bytes_per_token", "bytes_per_sample") if getattr(dataset, f) is not None]
        if w.kind in DATA_PREP:
            for f in given:
                yield Finding(getattr(path, f), "data preparation is sized from dataset.size over the deadline: it changes nothing",
                              "remove it", key=True, resource=w.name)  # fmt: skip
        elif len(given) == 2:
            yield Finding(path.bytes_per_sample, "bytesPerToken and bytesPerSample both set the read rate: bytesPerToken wins and "
                          "this changes nothing", "keep one: bytesPerSample is bytesPerToken x sequenceLength", key=True,
                          resource=w.name)  # fmt: skip


def _dataset_tiers(ctx: RuleContext) -> Iterable[tuple[int, int, Any]]:
    """(workload index, dataset size, tier) for each workload that reads a dataset from a declared tier of this
    environment (an unknown tier is AL206's; a tier the environment drops has nothing to hold it)."""
    for i, w in enumerate(ctx.spec.workloads):
        if w.dataset is None or w.dataset.tier is None or w.kind in SERVING:
            continue  # on a service AL380 reports the whole dataset
        tier = ctx.tiers.get(w.dataset.tier)
        if tier is not None:
            yield i, int(w.dataset.size), tier


@rules.rule("AL373", "dataset-fits-tier", "A dataset fits the capacity of the storage tier it is read from.")
def dataset_fits_tier(ctx: RuleContext) -> Iterable[Finding]:
    """The tier is sized from its declared capacity (resolve sizes FSx from it, on-prem it is the file system's size): a
    dataset larger than that cannot be stored there, and the run fails on its first full epoch, not at validate."""
    for i, size, tier in _dataset_tiers(ctx):
        capacity = getattr(tier, "capacity", None)
        if capacity is not None and size > capacity:
            yield Finding(S.workloads[i].dataset.size, f"dataset of {format_bytes(size)} is read from tier {tier.name!r}, which "
                          f"holds {format_bytes(int(capacity))}", f"raise storage {tier.name!r} capacity to at least "
                          f"{format_bytes(size)}, or read the dataset from a larger tier", size, resource=tier.name)  # fmt: skip


@rules.rule("AL374", "dataset-fits-cache", "A dataset read from an object tier fits the file system that caches that tier.", waivable=True)
def dataset_fits_cache(ctx: RuleContext) -> Iterable[Finding]:
    """A parallel file system linked to an object tier (``source``) loads files on first read and keeps them: nodes
    read the dataset through it, so a cache smaller than the dataset fills before an epoch ends and every later read
    goes back to the object store (or fails when the file system is full). Waivable: a team streaming from the object
    store on purpose accepts that. Training and fine-tuning only: they read the dataset once an epoch, where a cache
    pays; data preparation reads it once and may stream it from the object store."""
    caches = [t for t in ctx.spec.storage if isinstance(t, ParallelFsTier) and t.source is not None]
    for i, size, tier in _dataset_tiers(ctx):
        if ctx.spec.workloads[i].kind not in SCHEDULED:
            continue
        for cache in (c for c in caches if c.source == tier.name and size > c.capacity):
            yield Finding(S.workloads[i].dataset.size, f"dataset of {format_bytes(size)} is read from tier {tier.name!r} through "
                          f"file system {cache.name!r}, which caches it and holds {format_bytes(int(cache.capacity))}: the "
                          "working set does not fit and reads fall back to the object store",
                          f"raise storage {cache.name!r} capacity to at least {format_bytes(size)}, or waive AL374 where the "
                          "dataset streams from the object store", size, resource=cache.name)  # fmt: skip


@rules.rule("AL377", "mean-rate-under-peak", "A service's mean request rate is at most its peak.")
def mean_rate_under_peak(ctx: RuleContext) -> Iterable[Finding]:
    """The replicas are sized for the peak and the tokens a month counted at the mean: a mean above the peak would
    count tokens the replicas cannot serve, and price each below what it costs."""
    for i, w in enumerate(ctx.spec.workloads):
        traffic = w.traffic
        if traffic is not None and traffic.mean_rps is not None and traffic.peak_rps is not None and traffic.mean_rps > traffic.peak_rps:
            yield Finding(S.workloads[i].traffic.mean_rps, f"mean {traffic.mean_rps:g} requests/s is above the {traffic.peak_rps:g} "
                          "peak the replicas are sized for", "raise peakRps to the busiest minute's rate, or lower meanRps to "
                          "the month's average", traffic.mean_rps, resource=w.name)  # fmt: skip


@rules.rule("AL389", "power-draw-order", "An owned site's idle power draw is below its draw at full GPU load.")
def power_draw_order(ctx: RuleContext) -> Iterable[Finding]:
    """The month's power is the idle draw plus the forecast utilisation's share of load minus idle (alicerce.plan.tco):
    an idle draw above the load draw makes power fall as the GPUs get busier, and placement priced an owned job below
    zero ("adds $-3 (owned: power only)"; review sizreview24 D2). A field left out reads the catalog's default."""
    for path, entry in owned_cost_entries(ctx):
        if entry.idle_fraction is None and entry.load_fraction is None:
            continue
        tco = ctx.catalog.tco
        load = entry.load_fraction if entry.load_fraction is not None else tco.loadFraction.value
        idle = entry.idle_fraction if entry.idle_fraction is not None else tco.idleFraction.value
        if idle >= load:
            at, value = (path.idle_fraction, idle) if entry.idle_fraction is not None else (path.load_fraction, load)
            trend = "fall" if idle > load else "stay flat"
            yield Finding(at, f"site {entry.site} draws {idle:g} of its maximum power idle and {load:g} at full GPU load: "
                          f"power would {trend} as its GPUs get busier", "set idleFraction below loadFraction", value)  # fmt: skip


def _adapter_shadowed(w: Workload, i: int) -> Iterable[Finding]:
    """An adapter block sizing cannot read: on a run that trains no adapters, or on a model whose shape does not give the
    matrices to count r x (in + out) on (the plan falls back to 1% of the base: plan.sizing.adapter_parameters)."""
    path, model = S.workloads[i], w.model
    if w.adapter is None or model is None:
        return
    if w.method not in ("lora", "qlora"):
        yield Finding(path.adapter, f"adapter is read by a lora or qlora run only: method {w.method or 'unset'} trains no "
                      "adapters", "remove it, or set method: lora or qlora", key=True, resource=w.name)  # fmt: skip
    elif (why := adapters_uncounted(w)) == UNSHAPED:
        yield Finding(path.adapter, "the adapters' count needs the model's layers and hiddenSize: without them the plan takes "
                      "1% of the base and adapter changes nothing", "declare model.layers and model.hiddenSize",
                      key=True, resource=w.name)  # fmt: skip
    elif why == EXPERTS_UNDECLARED:  # a MoE on all linear layers without its routed experts
        yield Finding(path.adapter, f"the routed experts' adapters are counted from model.experts, and {why}: the plan takes "
                      "1% of the base and adapter changes nothing", "declare model.experts: total, and the perToken a "
                      "router picks below it", key=True, resource=w.name)  # fmt: skip
    # else counted (None), or the experts are declared with perToken at or past total (EVERY_EXPERT): AL282 says so, and
    # fixing it has the adapters counted; a second finding asked to declare experts already declared (review sizreview30
    # N1). The reason is read, not worked out again from the model's fields (review sizreview31 N1)


def _counted_once_fixed(w: Workload) -> bool:
    """Whether a LoRA run's adapters are counted as r x (in + out) on the model's shape, or will be once the spec's other
    findings are fixed (plan.sizing.adapter_parameters): a model with layers and hiddenSize, or an adapter block AL383
    asks them for. A MoE without its routed experts, or with perToken = total, is counted again after the fix, so a
    field read then is not "unread" now: removing it on that word changed the count the fix brings (review sizreview30
    G2 for kvHeads, sizreview31 N1 for tiedEmbeddings). What asks for the fix: AL282 on perToken = total; AL383 on an
    adapter block, and without one the warning AL393, which names what `plan`'s PL348 names (adapters_count_fix):
    model.experts, layers and hiddenSize (review sizreview31 N2: validate said nothing there)."""
    model = w.model
    shaped = model is not None and model.layers is not None and model.hidden_size is not None
    return shaped or w.adapter is not None


def _reads_tied_embeddings(w: Workload) -> bool:
    """Whether the plan reads model.tiedEmbeddings (plan.sizing.embedding_matrices), or will once the spec's other
    findings are fixed: QLoRA keeps the embeddings 16-bit (training_memory), and a LoRA run's count on all linear layers
    takes the FFN width from what the embeddings leave (adapter_parameters); attention-only adapters, or a count that
    stays loraTrainableFraction (no layers or hiddenSize, and no adapter block asking for them), never read it (review
    sizreview27 R6)."""
    model = w.model
    if model is None or w.kind not in SCHEDULED or w.method not in ("lora", "qlora"):
        return False
    if w.method == "qlora":
        return True
    targets = w.adapter.targets if w.adapter is not None else "all-linear"
    return targets == "all-linear" and _counted_once_fixed(w)


def _reads_kv_heads(w: Workload) -> bool:
    """Whether a LoRA run reads model.kvHeads, or will once the spec's other findings are fixed: its k and v adapters are
    r x (hidden + kvHeads x headDim) (MLA's read kvLoraRank instead). A kvHeads removed on the word "changes nothing"
    left AL390 bounding the rank by the default 8 KV heads once the fix had the adapters counted (review sizreview30
    G2, the trap of sizreview27 R1)."""
    model = w.model
    if model is None or w.method not in ("lora", "qlora") or isinstance(model.attention, LatentAttention):
        return False
    return _counted_once_fixed(w)


def _kv_heads_unread(w: Workload, model: Model, i: int) -> Finding:
    """AL383 on a trained model's kvHeads, saying why in the run's own terms (a LoRA run's k and v adapters read it in
    general, so telling a LoRA run so beside "remove it" contradicted itself: review sizreview30 G2)."""
    at = S.workloads[i].model.kv_heads
    if w.method not in ("lora", "qlora"):
        why, hint = "it sizes a served model's KV cache and a LoRA run's k and v adapters", "remove it"
    elif isinstance(model.attention, LatentAttention):
        why, hint = "multi-head latent attention's k and v adapters are sized by its kvLoraRank", "remove it"
    else:  # no layers or hiddenSize, and no adapter block asking for them: the adapters are loraTrainableFraction
        why = "without model.layers and hiddenSize the adapters are a fraction of the base, not counted on the KV heads"
        hint = "remove it, or declare model.layers and hiddenSize to count the adapters"
    return Finding(at, f"training throughput and memory do not depend on the KV heads: kvHeads changes nothing here ({why})",
                   hint, key=True, resource=w.name)  # fmt: skip


@rules.rule("AL383", "field-shadowed", "No declared field is one that another declared field, or the workload's kind, leaves unread.")
def field_shadowed(ctx: RuleContext) -> Iterable[Finding]:
    """Fields sizing never reads in their place: closed-loop clients beside a request rate (the rate sizes the replicas)
    and the attention heads of a trained model (the throughput model reads layers, width and the attention layout;
    headDim only for MLA) unless LoRA adapters are counted on them; an adapter block a run cannot read. A served
    MoE's expert layout is read: the experts a decode step's tokens touch; not where they sit (experts.layers) nor
    whether attention is routed too (experts.routedAttention); nor is a served model's vocabulary."""
    for i, w in enumerate(ctx.spec.workloads):
        path = S.workloads[i]
        if w.traffic is not None and w.traffic.peak_rps is not None and w.traffic.concurrency is not None:
            yield Finding(path.traffic.concurrency, "peakRps sizes the replicas: concurrency beside it changes nothing",
                          "keep one: peakRps for an open-loop request rate, concurrency for closed-loop clients", key=True,
                          resource=w.name)  # fmt: skip
        model = w.model
        if model is None:
            continue
        if w.kind in SERVING and model.experts is not None and model.experts.layers is not None:
            # serving reads the routed experts' count and top-k (the experts a decode step's tokens touch), not where
            # they sit (review sizreview11 F10)
            yield Finding(path.model.experts.layers, "serving reads experts.total and perToken: experts.layers changes nothing "
                          "here (it sets training's all-to-all volume)", "remove it", key=True, resource=w.name)  # fmt: skip
        if w.kind in SERVING and model.experts is not None and model.experts.routed_attention:
            # the serving model reads no routing volume (review sizreview24 N1)
            yield Finding(path.model.experts.routed_attention, "serving does not read routedAttention: it changes nothing here "
                          "(it adds training's routed volume)", "remove it", key=True, resource=w.name)  # fmt: skip
        if w.kind in SERVING and model.vocabulary is not None:
            # the served roofline reads the parameters, which hold the output head: a decode step's logits GEMM is in
            # its 2 x parameters a token, and the engine's logits buffer in the reserved memory (review sizreview49 D3)
            yield Finding(path.model.vocabulary, "serving does not read vocabulary: the output head is in the parameters, "
                          "and it changes nothing here (it sets training's fp32 logits and LoRA's embedding matrices)",
                          "remove it", key=True, resource=w.name)  # fmt: skip
        yield from _adapter_shadowed(w, i)
        yield from _attention_kernel_shadowed(w, i)
        if model.tied_embeddings is not None and not _reads_tied_embeddings(w):
            yield Finding(path.model.tied_embeddings, "tiedEmbeddings is read by a qlora run (its 16-bit embeddings) and by a lora "
                          "run's adapters counted on all linear layers (layers and hiddenSize declared, a MoE's experts too): "
                          "it changes nothing here", "remove it", key=True, resource=w.name)  # fmt: skip
        # a LoRA run's k and v adapters are r x (hidden + kvHeads x headDim) each (plan.sizing.adapter_parameters), and
        # AL390 bounds its rank by that KV width: read on every counted LoRA run. On all linear layers the count is the
        # same whatever the attention widths (the FFN width is what the attention leaves: review sizreview26 N1), but
        # calling kvHeads unread there had the user remove it and AL390 then bound the rank by the default 8 KV heads,
        # not the model's (review sizreview27 R1)
        lora = _reads_kv_heads(w)
        if w.kind in SCHEDULED and not lora:
            if model.kv_heads is not None:
                yield _kv_heads_unread(w, model, i)
            # with declared query heads training reads headDim too: attention's width is heads x headDim (Gemma 2 9B: 16 x
            # 256 on 3,584; plan.sizing.attention_width)
            if model.head_dim is not None and model.heads is None and not isinstance(model.attention, LatentAttention):
                yield Finding(path.model.head_dim, "training reads headDim only for multi-head latent attention or declared heads "
                              "(its FLOPs width): it changes nothing here", "remove it, or declare heads or attention: {kind: mla, ...}",
                              key=True, resource=w.name)  # fmt: skip


def _attention_kernel_shadowed(w: Workload, i: int) -> Iterable[Finding]:
    """attentionKernel prices a fused kernel's speed (plan.throughput.attention_kernel_slowdown): a stack that stores
    the score matrices (flashAttention: false) runs no fused kernel, and a declared mfu replaces the throughput model
    whose attention term the kernel sets. On another kind AL380 reports it."""
    if w.attention_kernel is None or w.kind not in SCHEDULED:
        return
    path = S.workloads[i].attention_kernel
    if w.flash_attention is False:
        yield Finding(path, "flashAttention: false stores the attention scores: no fused kernel runs, and attentionKernel "
                      "changes nothing", "remove one of the two", key=True, resource=w.name)  # fmt: skip
    elif w.mfu is not None:
        yield Finding(path, f"mfu {w.mfu:g} replaces the throughput model whose attention term the kernel sets: "
                      "attentionKernel changes nothing", "remove one of mfu and attentionKernel", key=True, resource=w.name)  # fmt: skip
    elif w.attention_kernel == "flash-attention-2" and w.precision == "fp32":
        # FlashAttention-2 runs fp16 and bf16 only (flash_attn_interface asserts it; PyTorch's SDPA picks another backend
        # for fp32): the term would price a kernel the run cannot take (review sizreview54)
        yield Finding(path, "FlashAttention-2 runs fp16 and bf16 only: an fp32 run's attention takes another kernel",
                      "train in bf16, or remove attentionKernel", key=True, resource=w.name)  # fmt: skip


# the widest ratio of declared parameters to a dense model's shape, 12 x layers x hiddenSize^2 (+ its embeddings), among
# published models: 0.63x to 3.05x over 45 cards (Llama 3.x, Gemma 1-3, Qwen2.5/3, Phi-3/4, Mistral, Falcon, OLMo 2,
# SmolLM2, GPT-2; review sizreview63), the widest Gemma 3 270M without its 262k-token embeddings; a dropped digit
# (hiddenSize 819 for 8192) is 80x off, a slipped one (6,144 for 8,192 on a 70B) 1.8x, which no band can tell
SHAPE_RATIO_LIMIT = 3.5


@rules.rule(
    "AL395",
    "model-shape-parameters",
    "Warns where a model's layers and hiddenSize hold far more or fewer parameters than it declares (a MoE's active ones).",
    warning=True,
)
def model_shape_parameters(ctx: RuleContext) -> Iterable[Finding]:
    """A dense transformer's blocks hold about 12 x layers x hiddenSize^2 parameters (attention 4 h^2, an MLP of 4 h or a
    gated one of 8/3 h: 8 h^2), beside vocabulary x hiddenSize an embedding matrix. The plan reads layers and hiddenSize
    for activations and attention FLOPs and parameters for everything else, so a typo in one (hiddenSize 819 on a 70B)
    planned a quarter fewer GPU-hours with no word (review sizreview62 H2). A mixture of experts computes with its active
    parameters, a dense model's worth a token (DeepSeek-V3 12 x 61 x 7,168^2 = 37.6B for 37B active, Mixtral 8x7B 6.4B
    for 12.9B), so those are what its shape is held against (review sizreview63 G1: hiddenSize 409 on a 235B-A22B moved
    the plan 2.2x). A warning: unusual shapes exist."""
    for i, w in enumerate(ctx.spec.workloads):
        model = w.model
        if model is None or not model.layers or not model.hidden_size:
            continue
        declared = float(model.parameters) if model.architecture == "dense" else model.active_parameters
        if declared is None:
            continue  # a MoE without its active parameters: AL280 asks for them where the plan needs them
        blocks = 12 * model.layers * model.hidden_size**2
        embeddings = (model.vocabulary or 0) * model.hidden_size * (1 if model.tied_embeddings else 2)
        ratio = float(declared) / (blocks + embeddings)
        if 1 / SHAPE_RATIO_LIMIT <= ratio <= SHAPE_RATIO_LIMIT:
            continue
        shape = f"{model.layers} layers of hiddenSize {model.hidden_size:,}"
        yield Finding(S.workloads[i].model.hidden_size, f"{shape} hold about {_billions(blocks + embeddings)} parameters "
                      f"(12 x layers x hiddenSize^2{' + embeddings' if embeddings else ''}), {ratio:,.1f}x fewer than the "
                      f"declared {_billions(float(declared))}{' active' if model.architecture == 'moe' else ''}" if ratio > 1 else
                      f"{shape} hold about {_billions(blocks + embeddings)} parameters (12 x layers x hiddenSize^2), "
                      f"{1 / ratio:,.1f}x more than the declared {_billions(float(declared))}"
                      f"{' active' if model.architecture == 'moe' else ''}",
                      "check parameters, layers and hiddenSize against the model card: Llama 3 70B is 70B, 80 layers of 8,192",
                      model.hidden_size, resource=w.name)  # fmt: skip


@rules.rule(
    "AL393",
    "lora-moe-adapters-estimated",
    "Warns where a LoRA run on a mixture-of-experts model without an adapter block has its adapters estimated, not counted "
    "on the model's shape.",
    warning=True,
)
def lora_moe_adapters_estimated(ctx: RuleContext) -> Iterable[Finding]:
    """A LoRA run's adapters on a MoE are nearly all the routed experts' (r = 64 on all linear layers: 11% of
    Qwen3-30B-A3B's 30.5B); without model.experts, or layers and hiddenSize, the plan takes loraTrainableFraction of the
    base (1%) and warns PL348, and validate said nothing: an adapter block gets AL383, a run without one passed clean
    (review sizreview31 N2). The same predicate (adapters_uncounted) and the same hint (adapters_count_fix) as PL348. A
    warning: the spec plans, on a count that may be short. perToken = total is AL282's error, not repeated here."""
    fraction = ctx.catalog.sizing.loraTrainableFraction.value
    for i, w in enumerate(ctx.spec.workloads):
        model = w.model
        if model is None or model.architecture != "moe" or w.kind not in SCHEDULED or w.method not in ("lora", "qlora"):
            continue
        why = adapters_uncounted(w)
        if w.adapter is not None or why not in (UNSHAPED, EXPERTS_UNDECLARED):
            continue  # counted; AL383 on the adapter block; or AL282
        yield Finding(S.workloads[i].model, f"the plan takes the LoRA adapters as loraTrainableFraction, {fraction:.0%} of the "
                      f"base, because {why}: on a MoE the routed experts' gate, up and down hold nearly all of them, and r = "
                      "64 on all linear layers is 11% of Qwen3-30B-A3B, so the memory and GPUs may be short (`plan` warns "
                      "PL348)", adapters_count_fix(w), key=True, resource=w.name)  # fmt: skip
