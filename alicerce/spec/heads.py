"""The tensor-parallel degrees a model's attention heads allow: one rule for the planner's own choice and AL372's check
of a declared degree (review sizreview17 F7: the planner picked TP 8 for 10 KV heads, which vLLM refuses to load)."""

from __future__ import annotations

import math

from alicerce.spec.models.workloads import LatentAttention, Model


def query_heads(model: Model, head_dim_default: int) -> tuple[int | None, str]:
    """The model's query heads and where the figure comes from; None when the spec does not tell."""
    if isinstance(model.attention, LatentAttention) and model.attention.heads is not None:
        return model.attention.heads, "attention.heads"
    if model.heads is not None:
        return model.heads, "heads"
    if model.hidden_size is None:
        return None, ""
    head_dim = model.head_dim or head_dim_default
    if model.hidden_size % head_dim:
        return None, ""
    where = "headDim" if model.head_dim else f"the default headDim {head_dim}: declare headDim if it differs"
    return model.hidden_size // head_dim, f"hiddenSize {model.hidden_size} / {where}"


def tensor_parallel_refusals(
    model: Model, tp: int, head_dim_default: int, *, serving: bool, node: int | None = None
) -> list[tuple[str, str]]:
    """(why, hint) of each reason the engine refuses tensor parallel ``tp`` for ``model``'s heads; none where it starts
    it (or the spec does not tell the heads).

    Both engines give each GPU whole query heads: vLLM's QKVParallelLinear divides them by the degree (model attention,
    e.g. vllm/model_executor/models/llama.py LlamaAttention: ``total_num_heads % tp_size == 0``) and Megatron-Core's
    Attention too (megatron/core/transformer/attention.py: ``divide(num_attention_heads, world_size)``). KV heads: vLLM
    divides them by the degree or replicates each over degree / KV heads GPUs (``total_num_kv_heads % tp_size`` below
    the degree, ``tp_size % total_num_kv_heads`` above); training never reads them (AL383 refuses kvHeads there), and
    Megatron-Core's query groups default to the heads. ``node``: the most GPUs a node of the pools it may run on holds,
    which the degrees the hint names stay within (a group wider than a node is PL322's error; review sizreview61: "1, 2,
    4, 8, 16, 32" on 8-GPU nodes)."""
    refusals = []
    heads, source = query_heads(model, head_dim_default)
    if heads is not None and heads % tp:
        # a node holds whole groups of it (sizing.node_degrees: PL322 otherwise)
        hint = f"use a degree that divides {heads}: {divisors(heads)}"
        if node is not None:
            hint = f"use a degree that divides both {heads} and a node's {node} GPUs: {divisors(math.gcd(heads, node))}"
        refusals.append((f"does not divide the model's {heads} attention heads ({source})", hint))
    kv = None if isinstance(model.attention, LatentAttention) else model.kv_heads  # MLA's latent is shared by all heads
    if serving and kv is not None and (kv % tp if tp < kv else tp % kv):
        refusals.append((f"neither divides the model's {kv} KV heads nor is a multiple of them", f"use a divisor or a multiple of {kv}"))
    return refusals


def legal_degrees(model: Model, degrees: tuple[int, ...], head_dim_default: int, *, serving: bool) -> tuple[int, ...]:
    """Of ``degrees``, those the engine starts for ``model``'s heads (TP 1 always: every head on one GPU)."""
    return tuple(d for d in degrees if d == 1 or not tensor_parallel_refusals(model, d, head_dim_default, serving=serving))


def divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, min(n, 64) + 1) if n % d == 0)
