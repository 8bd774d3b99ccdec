"""The workloads the platform exists for; sizing reads these."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, StrictInt

from alicerce.spec.base import Name, Precision, SpecModel, WorkloadKind
from alicerce.spec.text import CatalogId
from alicerce.spec.units import ByteSize, Count, Duration

# Upper bounds far past any real job (the largest models have ~2e12 parameters and trained on ~4e13
# tokens): beyond them a figure is a typo, and the sizing arithmetic would overflow to infinity.
MAX_PARAMETERS = 10**16
MAX_TOKENS = 10**18
MAX_RATE = 10**9
MAX_SEQUENCE = 10**8
MAX_LAYERS = 10**4  # the deepest published transformers have a few hundred layers
MAX_WIDTH = 10**6  # hidden sizes, heads and experts: tens of thousands at most today
MAX_GPUS = 10**6  # the largest clusters built hold a few hundred thousand GPUs
MAX_VOCABULARY = 10**7  # tokenizers hold 32,000 to 262,144 tokens today
DEFAULT_SEQUENCE = 4096  # tokens per sequence of a training run that declares none
MAX_INPUTS = 64  # a stage consumes a few datasets or models; past this the list is a mistake

# What each kind's output can feed, the chain dataset -> data-prep -> training -> fine-tuning -> serving that the
# lead-time KPI measures (rule AL225): a data-prep job writes a dataset, which a data-prep, training, fine-tuning or
# batch-inference job reads; training and fine-tuning write a model, which later training (continued pre-training),
# fine-tuning or serving loads; batch inference writes data (synthetic data, distillation targets, embeddings), which
# data-prep, training or fine-tuning reads; an online inference service answers requests and writes nothing another
# workload consumes.
FEEDS: dict[str, tuple[str, ...]] = {
    "data-prep": ("data-prep", "training", "fine-tuning", "batch-inference"),
    "training": ("training", "fine-tuning", "inference", "batch-inference"),
    "fine-tuning": ("fine-tuning", "inference", "batch-inference"),
    "batch-inference": ("data-prep", "training", "fine-tuning"),
    "inference": (),
}


class Experts(SpecModel):
    """The experts of a mixture-of-experts model (all resident in memory, a few routed per token)."""

    total: StrictInt = Field(ge=2, le=MAX_WIDTH, description="Routed experts per MoE layer.", examples=[256])
    per_token: StrictInt = Field(
        ge=1, le=MAX_WIDTH, description="Experts each token is routed to (top-k), fewer than total (AL282).", examples=[8]
    )
    layers: StrictInt | None = Field(default=None, ge=1, le=MAX_LAYERS, description="Layers with experts; default: every layer.")
    routed_attention: StrictBool = Field(
        default=False,
        description="Each expert layer's attention is routed too, a mixture of attention heads (JetMoE: query and output "
        "projections as experts, top-k of the same experts count): training counts the tokens dispatched to the attention "
        "experts beside those dispatched to the MLP experts (twice the routed volume). Serving does not read it.",
    )


class LatentAttention(SpecModel):
    """Multi-head latent attention (DeepSeek-V2/V3): each token and layer caches one compressed KV latent
    and one RoPE key shared by all heads, (kvLoraRank + ropeHeadDim) elements, instead of keys and values per head."""

    kind: Literal["mla"] = Field(description="Multi-head latent attention.")
    kv_lora_rank: StrictInt = Field(ge=1, le=MAX_WIDTH, description="Width of the compressed KV latent (DeepSeek-V3: 512).", examples=[512])
    rope_head_dim: StrictInt = Field(
        ge=0, le=MAX_WIDTH, description="Width of the decoupled RoPE key the heads share (DeepSeek-V3: 64).", examples=[64]
    )
    heads: StrictInt | None = Field(
        default=None, ge=1, le=MAX_WIDTH, description="Query heads (DeepSeek-V3: 128): with headDim they set the attention FLOPs width."
    )


class SlidingWindowAttention(SpecModel):
    """Sliding-window attention (Mistral 7B, Gemma 2/3): most layers attend to, and cache, only the last `window` tokens."""

    kind: Literal["sliding-window"] = Field(description="Sliding-window attention.")
    window: StrictInt = Field(ge=1, le=MAX_SEQUENCE, description="Tokens a sliding layer attends to and caches (Mistral 7B: 4096).")
    global_layers: StrictInt = Field(
        default=0, ge=0, le=MAX_LAYERS, description="Layers attending to the whole context (interleaved local/global models); default none."
    )


class Model(SpecModel):
    parameters: Count = Field(ge=1, le=MAX_PARAMETERS, description="Total parameters, e.g. 70B.")
    architecture: Literal["dense", "moe"] = Field(default="dense", description="Dense or mixture-of-experts.")
    active_parameters: Count | None = Field(default=None, ge=1, le=MAX_PARAMETERS, description="Parameters active per token (MoE).")
    experts: Experts | None = Field(
        default=None,
        description="MoE routing; in training the all-to-all volume per active parameter sets the MoE efficiency (default "
        "top-8); in serving, the experts a decode step's tokens touch set the weights it reads.",
    )
    layers: StrictInt | None = Field(
        default=None, ge=1, le=MAX_LAYERS, description="Transformer layers (for KV-cache and activation sizing)."
    )
    hidden_size: StrictInt | None = Field(default=None, ge=1, le=MAX_WIDTH, description="Hidden dimension.")
    kv_heads: StrictInt | None = Field(
        default=None, ge=1, le=MAX_WIDTH, description="Key/value heads per layer (KV-cache size); default 8."
    )
    head_dim: StrictInt | None = Field(default=None, ge=1, le=MAX_WIDTH, description="Dimension of one attention head; default 128.")
    heads: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_WIDTH,
        description="Query attention heads per layer, where heads x headDim is not the hidden size (Qwen3-30B-A3B: 32 "
        "heads of 128 on a hidden size of 2,048; Gemma 2 9B: 16 of 256 on 3,584): attention's FLOPs a token run over "
        "heads x headDim, and training stores scores per head. Default hiddenSize / headDim. An `mla` layout declares "
        "its heads in attention.heads.",
        examples=[32],
    )
    vocabulary: StrictInt | None = Field(
        default=None,
        ge=0,
        le=MAX_VOCABULARY,
        description="Tokens in the tokenizer's vocabulary: a training step keeps the logits of every token of a sequence "
        "(vocabulary x 4 bytes a token, fp32 for the loss); default 128,256 (Llama 3); 0 for a model without a "
        "language-model head (vision, diffusion, regression). Training and fine-tuning only: serving reads the head in "
        "the parameters.",
        examples=[128256],
    )
    tied_embeddings: StrictBool | None = Field(
        default=None,
        description="Whether the output head shares the input embedding's matrix (config.json tie_word_embeddings: Gemma, "
        "Llama 3.2 1B / 3B, Qwen2.5 0.5B-3B): one vocabulary x hidden matrix, not two. Read by QLoRA runs, whose "
        "embeddings stay 16-bit, and by LoRA runs counted on all linear layers (layers and hiddenSize declared), whose FFN "
        "width is inferred from the parameters the embeddings leave; elsewhere it changes nothing (AL383). Default: untied.",
        examples=[True],
    )
    attention: LatentAttention | SlidingWindowAttention | None = Field(
        default=None,
        discriminator="kind",
        description="Attention layout when not grouped-query: `mla` (latent KV cache) or `sliding-window`; sets the KV cache "
        "and the attention FLOPs.",
    )


class Dataset(SpecModel):
    size: ByteSize = Field(description="Dataset size.")
    bytes_per_token: float | None = Field(default=None, gt=0, le=2**20, description="Stored bytes per training token.")
    bytes_per_sample: ByteSize | None = Field(
        default=None,
        gt=0,
        description="Stored bytes per sample (non-text: an image, a clip); training reads one sample per sequence, so "
        "bytes per token = this / sequenceLength.",
    )
    tier: Name | None = Field(default=None, description="Storage tier it is read from.")


class Traffic(SpecModel):
    peak_rps: float | None = Field(default=None, gt=0, le=MAX_RATE, description="Peak requests per second.")
    mean_rps: float | None = Field(
        default=None, gt=0, le=MAX_RATE,
        description="Mean requests per second over the month, at most the peak (default: the peak, around the clock). "
        "Replicas are sized for the peak; the tokens a month and the cost per million tokens are at this rate.",
    )  # fmt: skip
    concurrency: StrictInt | None = Field(default=None, ge=1, le=MAX_RATE, description="Peak concurrent requests.")
    input_tokens: StrictInt = Field(ge=1, le=MAX_SEQUENCE, description="Mean prompt tokens.")
    output_tokens: StrictInt = Field(ge=1, le=MAX_SEQUENCE, description="Mean generated tokens.")


class LatencyTarget(SpecModel):
    p95: Duration | None = Field(default=None, gt=0, description="95th percentile.")
    p99: Duration | None = Field(default=None, gt=0, description="99th percentile.")


class Latency(SpecModel):
    time_to_first_token: LatencyTarget | None = Field(default=None, description="Time to first token.")
    time_per_output_token: LatencyTarget | None = Field(default=None, description="Time per output token.")


class Growth(SpecModel):
    """How a workload's demand grows: training tokens per run, serving traffic, data-prep volume."""

    per_quarter: float = Field(
        gt=-1, le=10, description="Growth per quarter, compounding (0.25: +25% a quarter; negative shrinks).", examples=[0.25]
    )


class Adapter(SpecModel):
    """The LoRA adapters of a lora or qlora fine-tuning run, as PEFT's LoraConfig declares them (r, target_modules)."""

    rank: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_WIDTH,
        description="LoRA rank r of every adapted matrix: each adds r x (in + out) trainable parameters. Default 64, the "
        "QLoRA paper's r on every linear layer (Dettmers et al. 2023, arXiv 2305.14314; artidoro/qlora qlora.py "
        "lora_r); PEFT's own LoraConfig default is 8.",
        examples=[16],
    )
    targets: Literal["all-linear", "attention"] = Field(
        default="all-linear",
        description="Matrices adapted in every layer: `all-linear` (PEFT's target_modules='all-linear': q, k, v, o and "
        "the FFN's gate, up and down, every routed expert's among them; not the output head) or `attention` (q, k, v "
        "and o only). The count needs model.layers and model.hiddenSize; without them the adapters are 1% of the base.",
    )


class Workload(SpecModel):
    """A job or service the platform exists for; sizing reads these."""

    name: Name = Field(description="Workload name.")
    kind: WorkloadKind = Field(description="What it does.")
    team: Name = Field(description="Owning team.")
    pool: Name | None = Field(default=None, description="Node pool it runs on; chosen by sizing when omitted.")
    model: Model | None = Field(default=None, description="The model trained or served.")
    precision: Precision = Field(default="bf16", description="Numeric precision of weights and compute.")
    optimizer: Literal["adamw", "sgd", "adafactor"] = Field(default="adamw", description="Optimizer (training).")
    method: Literal["full", "lora", "qlora"] | None = Field(default=None, description="Fine-tuning method.")
    adapter: Adapter | None = Field(
        default=None,
        description="LoRA rank and adapted matrices of a lora or qlora run: they set the trainable parameters, the "
        "adapters' optimizer state and the checkpoint. Default rank 64 on all linear layers.",
    )
    tokens: Count | None = Field(default=None, ge=1, le=MAX_TOKENS, description="Training tokens, e.g. 2T.")
    sequence_length: StrictInt | None = Field(
        default=None, ge=1, le=MAX_SEQUENCE, description=f"Tokens per sequence; training default {DEFAULT_SEQUENCE:,}."
    )
    global_batch_tokens: Count | None = Field(default=None, ge=1, le=MAX_TOKENS, description="Tokens per optimizer step.")
    deadline: Duration | None = Field(
        default=None,
        ge=1,
        description="Target wall-clock time from submission, e.g. 30d: time waiting behind other runs on its pool "
        "counts, so a run that cannot be sure to meet it in the pool's queue is planned beside them.",
    )
    accelerator: CatalogId | None = Field(default=None, description="Pinned accelerator (catalog id or alias).")
    gpus: StrictInt | None = Field(default=None, ge=1, le=MAX_GPUS, description="Pinned GPU count.")
    mfu: float | None = Field(
        default=None, gt=0, le=1, description="Model FLOPs utilisation to assume (replaces the calibrated throughput model)."
    )
    fp8_recipe: Literal["transformer-engine", "generic"] | None = Field(
        default=None,
        # no figure restated here: the gains are refitted (review sizreview20 F2 found 1.7x / 1.1x after 1.896 / 1.175 shipped)
        description="fp8 training stack: Transformer Engine/NeMo class or generic PyTorch float8, each with its own "
        "measured speed-up of the transformer blocks' GEMMs over bf16 (the larger on Transformer Engine; the figures are "
        "training.fp8Gain in the catalog's sizing.yaml, printed by `alicerce plan --explain`); default: between the two.",
    )
    tensor_parallel_overlap: bool | None = Field(
        default=None,
        description="Training: the framework overlaps tensor-parallel all-reduces with the GEMMs around them (Transformer "
        "Engine userbuffers: Megatron-Core/NeMo `tp_comm_overlap`), so a tensor-parallel layout pays no link time. "
        "Default: false, the all-reduces are exposed (Megatron-LM without it, DeepSpeed, PyTorch FSDP + DTensor).",
    )
    flash_attention: bool | None = Field(
        default=None,
        description="Training: the stack computes attention without storing its score matrices (FlashAttention, cuDNN fused "
        "attention). false: each layer keeps 5 x heads x sequence^2 bytes per sequence of scores, softmax and dropout mask "
        "(Korthikanti et al. 2022, arXiv 2205.05198, Table 2), so long sequences need recomputation or wider tensor "
        "parallelism. Default: true.",
    )
    attention_kernel: Literal["native", "flash-attention-2"] | None = Field(
        default=None,
        description="Training: the attention kernel the stack runs. native: one written for the GPU's architecture "
        "(Transformer Engine's cuDNN fused attention or FlashAttention-3 on Hopper; FlashAttention-2 on Ampere and Ada), "
        "what the calibration's NeMo, Megatron and MLPerf runs ran. flash-attention-2: FlashAttention-2 everywhere, as "
        "Hugging Face's attn_implementation='flash_attention_2' and PyTorch's SDPA on Hopper before cuDNN's backend came "
        "first run: on Hopper it uses none of the asynchronous copies and warpgroup MMAs FlashAttention-3 does, which "
        "runs its forward 1.5-2.0x and its backward 1.5-1.75x its speed (Shah et al. 2024, arXiv 2407.08608), so the "
        "attention term takes training.flashAttention2OnHopper times as long (`alicerce plan --explain` prints it). "
        "Nothing changes on Ampere and Ada, whose own kernel FlashAttention-2 is, nor on Blackwell, where no public figure "
        "compares the two. FlashAttention's older Triton kernel is slower still, on every GPU; this prices it as "
        "FlashAttention-2. Default: native.",
    )
    sequence_parallel: bool | None = Field(
        default=None,
        description="Training: the stack splits the layer norms' and dropouts' activations across the tensor-parallel group "
        "(Megatron sequence parallelism, Korthikanti et al. 2022). false: 10 of each layer's 34 bytes per token x hidden stay "
        "whole on every tensor-parallel GPU (Megatron-LM and Megatron-DeepSpeed before 2022, DeepSpeed). Default: true.",
    )
    zero_stage: StrictInt | None = Field(
        default=None,
        ge=0,
        le=3,
        description="Training: how far the data-parallel ranks shard model state (Rajbhandari et al. 2020, arXiv 1910.02054). "
        "3 (FSDP): weights, gradients and optimizer state; 2: gradients and optimizer state; 1 (Megatron's distributed "
        "optimizer): optimizer state only, bf16 weights and the gradients, accumulated in fp32 (fp16 in an fp16 run), kept "
        "whole on each data-parallel replica of the tensor x pipeline group; 0: nothing sharded. Sets memory per GPU and "
        "the data-parallel traffic. Default: 3.",
    )
    gradient_reduction: Literal["fp32", "16-bit"] | None = Field(
        default=None,
        description="Training: the type the data-parallel gradients are reduced in, a share of the traffic. At ZeRO-2 or 3, "
        "fp32: torchtitan's FSDP2 (training.mixed_precision_reduce, float32 by default) and Megatron; 16-bit: Hugging Face "
        "Trainer and accelerate FSDP, DeepSpeed (reduce_dtype the run's 16-bit type); default fp32 for training, 16-bit "
        "for fine-tuning. At ZeRO 0-1 the gradients accumulate and reduce in fp32 (Megatron-LM for bf16) unless 16-bit "
        "says --grad-reduce-in-bf16, whose gradient buffer is 16-bit too.",
    )
    pipeline_parallel: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_LAYERS,
        description="Training: pipeline stages, each holding layers / stages of the model (Megatron 1F1B schedule). Model "
        "state unsharded by ZeRO splits over tensor x pipeline GPUs; each step idles (stages - 1) / (microbatches + stages "
        "- 1) in the pipeline bubble, microbatches being one sequence each of the data-parallel rank's share of the global "
        "batch (Narayanan et al. 2021, arXiv 2104.04473, Sec. 2.2); the interleaved schedule (pipelineVirtualStages) "
        "shrinks it. Default: 1.",
    )
    pipeline_virtual_stages: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_LAYERS,
        description="Training with pipelineParallel: model chunks each pipeline stage holds in the interleaved 1F1B "
        "schedule (Megatron-Core virtual_pipeline_model_parallel_size, NeMo and Megatron-Bridge's VP column; Megatron-LM "
        "--num-layers-per-virtual-pipeline-stage is layers / (pipelineParallel x this)). The bubble shrinks to (stages - 1) "
        "/ (virtual stages x microbatches) of the ideal step (Narayanan et al. 2021, arXiv 2104.04473, Sec. 2.2.2). "
        "Default: 1, the plain 1F1B schedule.",
        examples=[8],
    )
    context_parallel: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_GPUS,
        description="Training long sequences: GPUs each sequence is split over (Megatron-Core --context-parallel-size, ring "
        "attention passing keys and values between them; Llama 3 405B trained its 131,072-token stage on 16, arXiv "
        "2407.21783 Table 4). Every activation, the logits too, splits over them; a data-parallel replica of the model spans "
        "tensor x context x pipeline GPUs. The ring's traffic overlaps the attention it feeds and is not charged. Default: 1.",
        examples=[16],
    )
    expert_parallel: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_WIDTH,
        description="Training a mixture of experts: GPUs each MoE layer's experts are spread over (Megatron-Core "
        "--expert-model-parallel-size; DeepSeek-V2 ran 8, DeepSeek-V3 64, arXiv 2405.04434 Sec. 3.1.3 and 2412.19437 Sec. "
        "3.2). Each GPU syncs its own experts over the data-parallel replicas of them. The group spans expertParallel x "
        "expertTensorParallel consecutive GPUs (expertTensorParallel defaults to tensorParallel: Megatron-Core's "
        "tp-ep-dp-pp expert grid), and the all-to-all that takes each token to its experts and back crosses the fabric "
        "for the part of that span off the GPU's node, 1 - GPUs a node / (EP x expert TP) of it: it stays on NVLink only "
        "where EP x expert TP is at most the GPUs a node. Default: the widest group that divides both the experts and the "
        "data-parallel x context-parallel ranks (GPUs / (TP x PP): Megatron-Core's expert grid has no context axis), "
        "gcd(experts, ranks).",
        examples=[8],
    )
    expert_tensor_parallel: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_WIDTH,
        description="Training a mixture of experts with expertParallel declared: the tensor-parallel degree of the expert "
        "layers (Megatron-Core --expert-tensor-parallel-size, MoE Parallel Folding: megatron/core/transformer/moe/README.md; "
        "arXiv 2504.14960). The expert layers fold EP x this degree over the TP x CP x DP GPUs of a pipeline stage, so "
        "only it x expertParallel x pipelineParallel must divide the GPUs, and each GPU holds 1 / (EP x this) of the "
        "routed experts; the degree divides the GPUs a node (PL322), as tensorParallel does. Megatron-Bridge's Qwen3-235B "
        "ran TP 2, PP 8, EP 32 with 1 on 256 H100 (its 25.11 table; "
        "Megatron-MoE-ModelZoo best_practice/Qwen3 lists ETP 1). Default: tensorParallel, Megatron-Core's default.",
        examples=[1],
    )
    checkpoint_interval: Duration | None = Field(default=None, gt=0, description="Time between checkpoints.")
    dataset: Dataset | None = Field(default=None, description="Input data.")
    inputs: list[Name] = Field(
        default_factory=list,
        max_length=MAX_INPUTS,
        description="The workloads whose output this one consumes: the data-prep job that wrote its dataset, the training "
        "run whose model it fine-tunes or serves. Declares the chain dataset -> data-prep -> training -> fine-tuning -> "
        "serving, whose lead time an inference workload's KPI measures (workload:model_lead_time:seconds) and "
        "`alicerce plan` targets. Each name is a workload of the spec; no cycles; a kind feeds only the kinds that read "
        "its output (rules AL223-AL225).",
        examples=[["tokenize-corpus"]],
    )
    traffic: Traffic | None = Field(default=None, description="Inference traffic.")
    latency: Latency | None = Field(default=None, description="Inference latency SLOs.")
    runs_per_quarter: float | None = Field(
        default=None,
        ge=0.01,
        le=10**4,
        description="Training and fine-tuning: runs started per quarter (1: one run a quarter; 0.25: one a year; at least one "
        "a century); a pool is busy runs x wall-clock of each quarter. Default: one run a month (busy all month when a run "
        "lasts longer).",
        examples=[1],
    )
    max_batch: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_RATE,
        description="Serving: the engine's cap on sequences in flight per replica (vLLM --max-num-seqs, TensorRT-LLM "
        "max_batch_size). Default: vLLM's, 1,024 on a GPU of 70 GiB or more that is not an A100, else 256.",
    )
    tensor_parallel: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_WIDTH,
        description="Serving: the replica's tensor-parallel degree. Training and fine-tuning: the tensor-parallel degree the "
        "stack runs (Megatron-Core --tensor-model-parallel-size), inside one node; a data-parallel replica spans it x "
        "contextParallel x pipelineParallel GPUs (Llama 3.1 405B: 8, arXiv 2407.21783 Table 4). Default: serving, the one "
        "that serves the load on the fewest GPUs; training, of the degrees a node holds and the heads allow, the one with "
        "the shortest step that fits.",
    )
    kv_cache_precision: Literal["bf16", "fp16", "fp8", "int8"] | None = Field(
        default=None,
        description="Serving: the KV cache's element type (vLLM --kv-cache-dtype, TensorRT-LLM's KV cache quantisation). "
        "Default: 16-bit, the engines' default for every model (vLLM's `auto` is the model's activation type, bf16 for an "
        "fp8 checkpoint; an 8-bit cache is an engine flag): declare fp8 where the serving engine sets it. Attention runs in "
        "the cache's type: at the fp8 peak over an fp8 cache (FlashAttention 3 on Hopper, TensorRT-LLM's FP8 FMHA), at "
        "the 16-bit peak otherwise.",
    )
    kv_admission: Literal["on-demand", "reserve"] = Field(
        default="on-demand",
        description="Serving: how the engine charges a sequence against its KV cache. on-demand: blocks for the tokens it "
        "holds now, the newest sequence preempted when the cache is full (vLLM), so a replica holds prompt + half the "
        "output per sequence on average; reserve: prompt + output reserved when a request is admitted, never evicted "
        "(TensorRT-LLM's default GUARANTEED_NO_EVICT). Default: on-demand (the planner's defaults are vLLM's).",
    )
    kv_memory_fraction: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Serving: the engine's KV-cache memory fraction. With kvAdmission reserve, TensorRT-LLM's "
        "kv_cache_free_gpu_mem_fraction: the share of memory free after weights and activations; with on-demand, vLLM's "
        "--gpu-memory-utilization (SGLang's --mem-fraction-static): the share of each GPU's whole memory for weights, "
        "activations and KV cache. Default: 0.9, both engines' default.",
    )
    hours_per_day: float = Field(
        default=24, ge=0.1, le=24,
        description="Hours a day the workload runs (training, fine-tuning, batch inference, data preparation; an online "
        "inference service runs around the clock).",
    )  # fmt: skip
    growth: Growth | None = Field(default=None, description="Demand growth; `alicerce plan` forecasts capacity and cost with it.")


# why adapters_uncounted finds the adapters uncounted: named, so that a rule asks which reason it is and does not work it
# out again from the model's fields (review sizreview31 N1, N2)
UNSHAPED = "the spec gives no model.layers and hiddenSize to count r x (in + out) on"
EXPERTS_UNDECLARED = "the routed experts (model.experts) are not declared"
EVERY_EXPERT = "every token is routed to all of them (model.experts perToken = total)"


def adapters_uncounted(w: Workload) -> str | None:
    """Why a LoRA / QLoRA run's adapters are loraTrainableFraction of the base rather than counted as r x (in + out) on
    the model's shape (plan.sizing.adapter_parameters), or None where they are counted: the one predicate the plan counts
    on and AL390 reads to judge the rank (review sizreview28 N2); AL383 judges the fields the count reads once the
    spec's other findings are fixed (rules.sizing._counted_once_fixed)."""
    model = w.model
    if model is None or model.layers is None or model.hidden_size is None:
        return UNSHAPED
    targets = w.adapter.targets if w.adapter is not None else "all-linear"
    experts = model.experts
    if model.architecture == "moe" and targets == "all-linear" and experts is None:
        return EXPERTS_UNDECLARED
    if model.architecture == "moe" and targets == "all-linear" and experts is not None and experts.total <= experts.per_token:
        # AL282 refuses it; the plan of an unchecked spec must still not divide by total - perToken
        return EVERY_EXPERT
    return None


def adapters_count_fix(w: Workload) -> str | None:
    """What to declare to have a LoRA run's adapters counted on the model's shape where adapters_uncounted takes them as
    loraTrainableFraction of the base, else None: the one answer `plan`'s PL348 and `validate`'s AL393 give (review
    sizreview31 N2: validate said nothing where the plan warned). No parentheses: a hint is shown in them."""
    if adapters_uncounted(w) is None:
        return None
    if w.model is not None and w.model.architecture == "moe":
        return (
            "declare model.experts with total and the perToken a router picks below it, and model.layers and hiddenSize, "
            "to have them counted"
        )
    return "declare model.layers and hiddenSize to have them counted"


def model_chains(workloads: list[Workload]) -> dict[str, tuple[str, ...]]:
    """Each inference workload that declares inputs -> every workload its model comes from (its inputs, theirs, ...),
    each stage after every stage of the chain that consumes it: what the lead-time KPI walks back from the rollout and
    `alicerce plan` sums. Names no workload defines and cycles are left out (rules AL223, AL224 report them)."""
    inputs = {w.name: tuple(w.inputs) for w in workloads}
    out: dict[str, tuple[str, ...]] = {}
    for w in workloads:
        if w.kind != "inference" or not w.inputs:
            continue
        stages: list[str] = []
        frontier = [n for n in w.inputs if n in inputs]
        while frontier:
            name = frontier.pop(0)
            if name not in stages and name != w.name:
                stages.append(name)
                frontier += [n for n in inputs[name] if n in inputs]
        out[w.name] = tuple(_consumers_first(stages, inputs))
    return out


def _consumers_first(stages: list[str], inputs: dict[str, tuple[str, ...]]) -> list[str]:
    """``stages`` ordered so that each comes after every stage of the chain that consumes it (a cycle: as listed)."""
    done: list[str] = []
    for _ in stages:
        for stage in stages:
            waiting = [c for c in stages if stage in inputs[c] and c not in done and c != stage]
            if stage not in done and not waiting:
                done.append(stage)
    return done + [s for s in stages if s not in done]


def chain_days(served: str, workloads: list[Workload], days: dict[str, float | None]) -> float | None:
    """The planned wall-clock of the longest path of stages that feed ``served`` (stages on parallel paths run at the
    same time), from each stage's ``days``; None where a stage has no figure."""
    inputs = {w.name: tuple(w.inputs) for w in workloads}

    def longest(name: str, seen: frozenset[str]) -> float | None:
        paths = [longest(n, seen | {n}) for n in inputs.get(name, ()) if n in inputs and n not in seen]
        if any(p is None for p in paths):
            return None
        own = 0.0 if name == served else days.get(name)
        return None if own is None else own + max((p for p in paths if p is not None), default=0.0)

    return longest(served, frozenset({served}))
