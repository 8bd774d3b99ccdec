"""Every cross-field rule has passing and failing fixtures, and each behaves as its fixture says.

A fixture file ``alicerce/rules/fixtures/<ID>.yaml`` (package data, shown by `alicerce rules ID`)
holds ``pass`` and ``fail`` lists of cases; each case patches ``_base.yaml`` with the overlay
merge rules (maps merge, named lists merge by name, ``$patch: delete`` removes, null removes a
key). A passing case must leave the spec free of errors; a failing case must raise that rule (and
the error must point into one of the files).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from alicerce.rules import WARNING_RULES, all_rules
from alicerce.rules.examples import base_document, examples, fixture_ids, patched
from alicerce.rules.validate import check
from alicerce.targets.onprem.rules import _rail_name_problem
from tests.conftest import ROOT, TODAY
from tests.plan.test_platform_plan import FP8_ON_TWO_GENERATIONS


def _cases() -> list[tuple[str, str, int, str]]:
    return [(e.rule, e.kind, e.index, e.description) for rule_id in fixture_ids() for e in examples(rule_id)]


def test_base_fixture_is_valid() -> None:
    checked = check(base_document(), on=TODAY)
    assert checked.errors == []


def test_every_rule_has_passing_and_failing_fixtures() -> None:
    kinds: dict[str, set[str]] = {}
    for rule_id, kind, _, _ in _cases():
        kinds.setdefault(rule_id, set()).add(kind)
    missing = {rule: {"pass", "fail"} - kinds.get(rule, set()) for rule in all_rules()}
    assert {rule: sorted(m) for rule, m in missing.items() if m} == {}
    assert len(all_rules()) >= 25


def test_fixture_files_name_registered_rules() -> None:
    assert set(fixture_ids()) <= set(all_rules())


@pytest.mark.parametrize(("rule_id", "kind", "index", "description"), _cases())
def test_rule_fixture(rule_id: str, kind: str, index: int, description: str) -> None:
    checked = check(patched(rule_id, kind, index), on=TODAY)  # type: ignore[arg-type]
    rendered = [e.render() for e in checked.errors]
    if kind == "pass":
        assert rendered == [], description
        assert [e.render_warning() for e in checked.warnings if e.rule == rule_id] == [], description
    else:
        # a warning rule's findings are warnings, never errors (they do not fail validate)
        assert (rule_id in WARNING_RULES) == any(e.rule == rule_id for e in checked.warnings), description
        hits = [e for e in checked.errors + checked.warnings if e.rule == rule_id]
        assert hits, f"{description}: expected {rule_id}, got {rendered}"
        for error in hits:
            assert error.span.line >= 1
            assert Path(error.span.file).name in ("_base.yaml", f"{rule_id}.yaml")


def test_qlora_at_fp8_is_refused_once_on_every_gpu() -> None:
    """Review sizreview25 N3: QLoRA at fp8 was refused on an A100 (AL388, Transformer Engine's words) and accepted as a
    no-op on an H100, so a mixed pool set moved the job; AL330 refuses it on both, and AL388 does not repeat it."""
    for index in (0, 2):  # the H100 pool and the A100 pool (AL264 there too: the fixture team has no quota on it)
        checked = check(patched("AL330", "fail", index), on=TODAY)  # type: ignore[arg-type]
        rules = [e.rule for e in checked.errors]
        assert rules.count("AL330") == 1 and "AL388" not in rules, rules


def test_qlora_fp8_hint_names_lora_only_where_a_gpu_runs_fp8() -> None:
    """Review sizreview26 N7: AL330 told a QLoRA run at fp8 on an A100 pool to set method: lora to run its GEMMs in fp8,
    where `plan` then refuses fp8 on the A100 (PL303). The hint offers lora only where the GPU has fp8 tensor cores."""
    hints = {}
    for index in (0, 2):  # the H100 pool, the A100 pool
        checked = check(patched("AL330", "fail", index), on=TODAY)  # type: ignore[arg-type]
        (error,) = [e for e in checked.errors if e.rule == "AL330"]
        hints[index] = error.render()
    assert "or method: lora to run its GEMMs in fp8" in hints[0]
    assert "or method: lora" not in hints[2] and "none it may run on has them (infer: A100-SXM4-40GB)" in hints[2], hints[2]


# review sizreview28's repro: the plan tests' A100 and H100 training pools, the team's quota on the A100 pool only
_TWO_POOLS = (
    FP8_ON_TWO_GENERATIONS.split("workloads:\n")[0].replace(", {pool: h100, gpus: 128}]", "]")
    + """\
workloads:
  - name: ft
    kind: fine-tuning
    method: qlora
    team: ml
    precision: fp8
    model: {parameters: 8B, layers: 32, hiddenSize: 4096}
    tokens: 10B
    runsPerQuarter: 1
"""
)


def test_qlora_fp8_hint_reads_the_pools_al388_reads() -> None:
    """Review sizreview28 G1: AL330's hint read every training pool, not AL388's eligible ones (quotas, fine-tuning
    pools). A quota on the A100 pool only: it offered method: lora, and that LoRA run got AL388 (every pool it may run on
    refuses fp8). An H100 fine-tuning pool with quota: it said none of the A100s has fp8, where lora runs on the H100."""
    from alicerce.spec.loader import load_text

    def errors(text: str) -> list[str]:
        return [e.render() for e in check(load_text(text, "spec.yaml"), on=TODAY).errors]

    (quota,) = errors(_TWO_POOLS)
    assert "AL330" in quota and "none it may run on has them (a100: A100-SXM4-80GB)" in quota, quota
    lora = errors(_TWO_POOLS.replace("method: qlora", "method: lora"))
    assert [e.split("error[")[1][:5] for e in lora] == ["AL388"], lora  # the advice withheld is the one AL388 refuses
    ft = (_TWO_POOLS.replace("quotas: [{pool: a100, gpus: 128}]", "quotas: [{pool: a100, gpus: 128}, {pool: h100, gpus: 128}]")
          .replace("    purpose: training\n    accelerator: \"H100", "    purpose: fine-tuning\n    accelerator: \"H100"))  # fmt: skip
    (tuned,) = errors(ft)
    assert "AL330" in tuned and "or method: lora to run its GEMMs in fp8" in tuned, tuned
    assert errors(ft.replace("method: qlora", "method: lora")) == []  # the advice taken validates


def test_al330_and_al388_read_one_eligible_gpu_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review sizreview29 N2: AL330's hint and AL388 each built the GPUs of the pools a placed workload may run on; they
    agreed by construction only. One helper now decides it: what it answers, both rules read (here the H100 pool alone,
    where the team's quota gives only the A100: AL330 offers lora, and the lora twin passes AL388)."""
    from alicerce.catalog import load_catalog
    from alicerce.rules import sizing
    from alicerce.spec.loader import load_text

    def errors(text: str) -> list[str]:
        return [e.render() for e in check(load_text(text, "spec.yaml"), on=TODAY).errors]

    h100 = load_catalog().gpu("H100-SXM5-80GB")
    monkeypatch.setattr(sizing, "_eligible_gpus", lambda ctx, w: {"h100": h100})
    (quota,) = errors(_TWO_POOLS)
    assert "AL330" in quota and "or method: lora to run its GEMMs in fp8" in quota, quota
    assert errors(_TWO_POOLS.replace("method: qlora", "method: lora")) == []


def test_al390_judges_a_rank_only_where_the_plan_counts_the_adapters() -> None:
    """Review sizreview28 N2: without model.layers the plan takes loraTrainableFraction of the base and the rank counts
    nothing; AL383 says so, but AL390 still judged rank 2,048 against the default 8 KV heads
    once kvHeads was removed as told. The same predicate gates both (spec.models.workloads.adapters_uncounted); with
    layers declared AL390 stands."""
    from alicerce.spec.loader import load_text

    lora = _TWO_POOLS.replace("method: qlora", "method: lora").replace("precision: fp8", "adapter: {rank: 2048}")

    def rules(model: str) -> list[str]:
        text = lora.replace("model: {parameters: 8B, layers: 32, hiddenSize: 4096}", f"model: {model}")
        return sorted(e.rule for e in check(load_text(text, "spec.yaml"), on=TODAY).errors)

    # kvHeads is not called unread beside "declare model.layers": declaring them makes the plan read it (sizreview30 G2)
    assert rules("{parameters: 70B, hiddenSize: 8192, kvHeads: 64}") == ["AL383"]
    assert rules("{parameters: 70B, hiddenSize: 8192}") == ["AL383"]
    assert rules("{parameters: 70B, layers: 80, hiddenSize: 8192}") == ["AL390"]
    # a MoE on all linear layers without its routed experts: a fraction too
    assert "AL390" not in rules("{parameters: 70B, activeParameters: 7B, architecture: moe, layers: 80, hiddenSize: 8192}")


def test_al383_and_al282_read_the_plans_adapter_predicate() -> None:
    """Review sizreview29 N1: AL383 kept its own copies of when the plan counts a LoRA run's adapters. A MoE routing every
    token to all 8 experts validated at rank 100,000 (the plan took 1% of the base, saying the experts were undeclared);
    it is dense compute, and AL282 refuses it (alone: sizreview30 N1). A MoE without its experts on all linear layers
    has its adapter flagged (adapters_uncounted), and not its kvHeads: declaring the experts makes the plan read it."""
    from alicerce.spec.loader import load_text

    lora = _TWO_POOLS.replace("method: qlora", "method: lora").replace("precision: fp8", "adapter: {rank: 16}")
    moe = "{parameters: 30.5B, activeParameters: 3.3B, architecture: moe, layers: 48, hiddenSize: 2048, kvHeads: 4"

    def errors(model: str) -> list[str]:
        text = lora.replace("model: {parameters: 8B, layers: 32, hiddenSize: 4096}", f"model: {model}")
        return [e.render() for e in check(load_text(text, "spec.yaml"), on=TODAY).errors]

    # one wrong number, one error: AL383's "declare model.experts" beside declared experts went (review sizreview30 N1)
    every = errors(moe + ", experts: {total: 8, perToken: 8}}")
    assert len(every) == 1 and every[0].endswith(
        "error[AL282]: workloads[0].model.experts.perToken: each token is routed to all 8 experts: none is skipped, so the "
        "model computes as a dense one (lower perToken below total to the experts a router picks per token, or remove "
        "experts, activeParameters and architecture: moe)"), every  # fmt: skip
    # kvHeads is read once the experts are fixed: calling it unread here was sizreview27 R1's trap (review sizreview30 G2)
    undeclared = errors(moe + "}")
    assert len(undeclared) == 1 and "declare model.experts" in undeclared[0], undeclared
    # its own experts (top-8 of 128); 2 of 8 experts of 4.5B each would outgrow the 3.3B active (AL282: sizreview61 G1)
    assert errors(moe + ", experts: {total: 128, perToken: 8}}") == []
    assert "more than the 3.3B active" in "".join(errors(moe + ", experts: {total: 8, perToken: 2}}"))


def test_al393_warns_where_the_plan_warns_pl348_on_a_lora_moe_and_no_other_finding_does() -> None:
    """Review sizreview31 N2: a LoRA run on Qwen3-30B-A3B without model.experts and without an adapter block validated
    clean while `plan` took the adapters as 1% of the base (305M where r = 64 counts 3.39B) and warned PL348 only.
    AL393 warns there, from the plan's own predicate and with PL348's own hint, so the two cannot disagree; an adapter
    block has AL383's error and perToken = total AL282's instead. A warning: validate still passes."""
    from alicerce.plan.sizing import plan_training
    from alicerce.spec.loader import load_text
    from tests.plan.test_sizing import SIZING, on

    moe = "{parameters: 30.5B, activeParameters: 3.3B, architecture: moe, kvHeads: 4"
    shapes = ("", ", layers: 48, hiddenSize: 2048")
    experts = ("", ", experts: {total: 128, perToken: 8}", ", experts: {total: 8, perToken: 8}")
    seen: set[tuple[bool, bool]] = set()
    for method, adapter, shape, routed, arch in itertools.product(
        ("lora", "qlora"), ("", "adapter: {rank: 16}"), shapes, experts, ("moe", "dense")
    ):
        if arch == "dense" and routed:
            continue
        model = (moe if arch == "moe" else "{parameters: 8B, kvHeads: 8") + shape + routed + "}"
        text = _TWO_POOLS.replace("method: qlora", f"method: {method}").replace("precision: fp8", adapter or "runsPerQuarter: 1")
        text = text.replace("    runsPerQuarter: 1\n    model", "    model").replace(
            "model: {parameters: 8B, layers: 32, hiddenSize: 4096}", f"model: {model}")  # fmt: skip
        checked = check(load_text(text, "spec.yaml"), on=TODAY)
        warned = [e for e in checked.warnings if e.rule == "AL393"]
        assert checked.base is not None
        plan = plan_training(checked.base.workloads[0], on("H100-SXM5-80GB"), SIZING, [])
        estimated = [i for i in plan.issues if i.check == "PL348" and "taken as" in i.message]
        # AL383 on the adapter block asks for the fix already (AL383 on kvHeads does not), and so does AL282 where
        # perToken = total is all that keeps the adapters uncounted (without layers AL393 asks for them beside it)
        other = [e.rule for e in checked.errors if (e.rule == "AL282" and shape) or (e.rule == "AL383" and e.path[-1] == "adapter")]
        case = f"{method} {adapter} {model}"
        assert bool(warned) == (bool(estimated) and arch == "moe" and not other), (case, warned, estimated, other)
        if warned:
            assert not adapter, case
            assert estimated[0].message.endswith(f"; {warned[0].hint}"), (case, estimated[0].message, warned[0].hint)
            assert "(" not in str(warned[0].hint) and str(warned[0].path) == "('workloads', 0, 'model')", case
        seen.add((bool(warned), bool(estimated)))
    assert seen == {(True, True), (False, True), (False, False)}, seen
    # the repro: warned at the model, and valid
    text = _TWO_POOLS.replace("method: qlora", "method: lora").replace("    precision: fp8\n", "").replace(
        "model: {parameters: 8B, layers: 32, hiddenSize: 4096}", f"model: {moe}, layers: 48, hiddenSize: 2048}}")  # fmt: skip
    checked = check(load_text(text, "spec.yaml"), on=TODAY)
    assert checked.errors == [] and [w.render_warning() for w in checked.warnings] == [
        "spec.yaml:38:5: warning[AL393]: workloads[0].model: the plan takes the LoRA adapters as loraTrainableFraction, 1% "
        "of the base, because the routed experts (model.experts) are not declared: on a MoE the routed experts' gate, up "
        "and down hold nearly all of them, and r = 64 on all linear layers is 11% of Qwen3-30B-A3B, so the memory and GPUs "
        "may be short (`plan` warns PL348) (declare model.experts with total and the perToken a router picks below it, and "
        "model.layers and hiddenSize, to have them counted)"
    ]


def test_al383_keeps_kv_heads_that_fixing_the_specs_other_findings_makes_the_plan_read() -> None:
    """Review sizreview30 G2: Qwen3-30B-A3B (kvHeads 4, headDim 128, 48 layers, hidden 2,048; its HF config) on LoRA rank
    577 without its experts was told to declare model.experts and to remove kvHeads. Doing both validated; the true model
    (experts and kvHeads 4) gets AL390 (577 >= 4 x 128 = 512), which the removal hid behind the default 8 x 128. kvHeads
    is judged unread on a LoRA run only where no other finding's fix makes the plan read it, and says why in its terms."""
    from alicerce.spec.loader import load_text

    lora = _TWO_POOLS.replace("method: qlora", "method: lora").replace("precision: fp8", "adapter: {rank: 577}")

    def errors(model: str, text: str = lora) -> list[str]:
        text = text.replace("model: {parameters: 8B, layers: 32, hiddenSize: 4096}", f"model: {model}")
        return [e.render() for e in check(load_text(text, "spec.yaml"), on=TODAY).errors]

    qwen = "{parameters: 30.5B, activeParameters: 3.3B, architecture: moe, layers: 48, hiddenSize: 2048, headDim: 128, kvHeads: 4"
    no_experts = errors(qwen + "}")
    assert len(no_experts) == 1 and "declare model.experts" in no_experts[0], no_experts
    assert any("AL390" in e and "(4 KV heads x headDim 128), 512" in e for e in errors(qwen + ", experts: {total: 128, perToken: 8}}"))
    # without layers and hiddenSize the adapter block asks for them, and they make the plan read kvHeads
    shapeless = errors("{parameters: 8B, heads: 32, headDim: 128, kvHeads: 8}")
    assert len(shapeless) == 1 and "declare model.layers and model.hiddenSize" in shapeless[0], shapeless
    # tiedEmbeddings the same: the all-linear count reads it once the experts are declared, so removing it on AL383's word
    # changed the count the fix brings (3.403e9 to 3.376e9 on this shape; review sizreview31 N1)
    tied = errors(qwen + ", tiedEmbeddings: false}")
    assert len(tied) == 1 and "declare model.experts" in tied[0], tied
    assert errors(qwen + ", tiedEmbeddings: false, experts: {total: 128, perToken: 8}}", lora.replace("577", "64")) == []
    # with no adapter block asking for them kvHeads is unread, and the finding says so without contradicting itself
    bare = errors("{parameters: 8B, heads: 32, headDim: 128, kvHeads: 8}", lora.replace("    adapter: {rank: 577}\n", ""))
    kv = [e for e in bare if "kvHeads" in e]
    assert len(kv) == 1 and kv[0].endswith("(without model.layers and hiddenSize the adapters are a fraction of the base, not "
                                           "counted on the KV heads) (remove it, or declare model.layers and hiddenSize to "
                                           "count the adapters)"), bare  # fmt: skip


def test_al390_on_the_default_kv_heads_offers_to_declare_them() -> None:
    """Review sizreview28 N3: Llama-2-7B (32 query heads, 32 KV heads) at rank 1,024 without kvHeads was bound by the
    planner's default 8 KV heads x 128 = 1,024 and told only to lower the rank, in words that read "(8 KV heads where
    kvHeads is undeclared x headDim)". Its real KV width is 32 x 128 = 4,096: declaring kvHeads validates it, and the
    hint says so; with kvHeads declared the hint is the rank alone."""
    from alicerce.spec.loader import load_text

    lora = _TWO_POOLS.replace("method: qlora", "method: lora").replace("precision: fp8", "adapter: {rank: 1024}")

    def errors(model: str) -> list[str]:
        text = lora.replace("model: {parameters: 8B, layers: 32, hiddenSize: 4096}", f"model: {model}")
        return [e.render() for e in check(load_text(text, "spec.yaml"), on=TODAY).errors]

    (default,) = errors("{parameters: 6.74B, layers: 32, hiddenSize: 4096, heads: 32}")
    assert (
        "error[AL390]: workloads[0].adapter.rank: rank 1,024 is not below the KV width (8 KV heads, the planner's default "
        "with kvHeads undeclared, x headDim 128), 1,024: the adapted matrices' adapters hold more parameters than the "
        "matrices (r x (in + out) >= in x out) (a rank below 1,024, or declare model.kvHeads: a model with a KV head per "
        "query head has a KV width of heads x headDim)"
    ) in default, default
    assert errors("{parameters: 6.74B, layers: 32, hiddenSize: 4096, heads: 32, kvHeads: 32}") == []
    (gqa,) = errors("{parameters: 6.74B, layers: 32, hiddenSize: 4096, heads: 32, kvHeads: 8}")
    assert gqa.endswith("the KV width (8 KV heads x headDim 128), 1,024: the adapted matrices' adapters hold more parameters "
                        "than the matrices (r x (in + out) >= in x out) (a rank below 1,024)"), gqa  # fmt: skip


def test_a_rail_name_set_by_hand_is_refused_saying_the_role_renames_it() -> None:
    """obsreview38 G-2: AL392 refuses a name an operator set on purpose. It must: the rdma role's udev rule renames each
    adapter's RDMA device after its PCI address at each run (and when it appears), a hand-set name included, because
    rdma-core's rdma_rename spares only devices the kernel created under a user's name (rxe, siw). The finding says so,
    so the operator does not look for a way to keep the name."""
    checked = check(patched("AL392", "fail", 3), on=TODAY)  # type: ignore[arg-type]
    rendered = [e.render() for e in checked.errors if e.rule == "AL392"]
    assert len(rendered) == 8, rendered
    assert all("a name set by hand (rdma dev set)" in r and "rdma_rename spares only" in r for r in rendered), rendered[0]
    # obsreview40 N-4: the run renames it, the boot may not (a site rule sorting first names the device before ours)
    assert all("at each alicerce run" in r and "before 60-rdma-persistent-naming.rules" in r for r in rendered), rendered[0]


def test_an_infiniband_name_on_a_roce_fabric_reads_an_infiniband() -> None:
    """obsreview38 N-4: "is a InfiniBand device's name"."""
    assert _rail_name_problem("ibp24s0", "roce") == "ibp24s0 is an InfiniBand device's name, and the fabric is roce"
    assert _rail_name_problem("rocep24s0", "infiniband") == "rocep24s0 is a RoCE device's name, and the fabric is infiniband"


def test_al383_refuses_a_served_models_vocabulary() -> None:
    """Review sizreview49 D3: model.vocabulary on a serving workload validated and changed nothing (the served roofline
    reads the parameters, which hold the output head); on training it sets the fp32 logits, and stays."""
    from alicerce.spec.loader import load_text

    served = (
        _TWO_POOLS.split("workloads:\n")[0]
        + """\
workloads:
  - name: chat
    kind: inference
    team: ml
    model: {parameters: 8B, vocabulary: 256000}
    traffic: {peakRps: 5, inputTokens: 500, outputTokens: 200}
"""
    )

    def rules(text: str) -> list[str]:
        return sorted(e.rule for e in check(load_text(text, "spec.yaml"), on=TODAY).errors)

    assert rules(served) == ["AL383"]
    assert rules(served.replace(", vocabulary: 256000", "")) == []
    trained = _TWO_POOLS.replace("method: qlora", "method: lora").replace("precision: fp8", "precision: bf16")
    assert rules(trained.replace("hiddenSize: 4096}", "hiddenSize: 4096, vocabulary: 256000}")) == []


def test_pinned_replica_advice_counts_every_declared_degree() -> None:
    """Review sizreview61 D3: AL375 named stage counts that divide the pinned 20 GPUs at tensorParallel 8 (none does:
    8 x p never divides 20) and AL386 "a multiple of 3 GPUs" at tensorParallel 8 x contextParallel 3; every one, taken,
    met PL303 "does not divide the pinned N GPUs: each data-parallel replica spans whole groups of 24". The hint now
    counts the whole replica, and the count it names passes both."""
    from alicerce.spec.loader import load_text

    head = FP8_ON_TWO_GENERATIONS.split("workloads:\n")[0]
    run = ("workloads:\n  - name: pretrain\n    kind: training\n    team: ml\n    model: {parameters: 70B, layers: 80, hiddenSize: 8192}\n"
           "    tokens: 10B\n    runsPerQuarter: 1\n    sequenceLength: 98304\n    tensorParallel: 8\n")  # fmt: skip

    def told(extra: str) -> list[str]:
        return [f"{e.rule}: {e.render()}" for e in check(load_text(head + run + extra, "spec.yaml"), on=TODAY).errors]

    (staged,) = told("    pipelineParallel: 3\n    gpus: 20\n")
    assert staged.startswith("AL375") and "a replica of tensorParallel 8 x pipelineParallel 3 (24 GPUs)" in staged, staged
    assert "pin a multiple of 24 GPUs; no stage count divides 20 at tensorParallel 8" in staged, staged
    assert told("    pipelineParallel: 3\n    gpus: 24\n") == []
    (split,) = told("    contextParallel: 3\n    gpus: 40\n")
    assert split.startswith("AL386") and "(pin a multiple of 24 GPUs)" in split, split
    assert told("    contextParallel: 3\n    gpus: 48\n") == []
    # one finding for one count: under a pipeline AL375 reports the whole replica, context groups and all
    (both,) = told("    contextParallel: 3\n    pipelineParallel: 2\n    gpus: 40\n")
    assert both.startswith("AL375") and "(48 GPUs)" in both and "pin a multiple of 48 GPUs" in both, both
    # at a count the rest of the replica divides, the stage counts that fill it, as many as the layers allow
    (fits,) = told("    pipelineParallel: 3\n    gpus: 40\n")
    assert "use a stage count that divides 5: 1, 5" in fits, fits


def test_al372_names_the_degrees_of_the_declared_pools_node() -> None:
    """Review sizreview62 E2: AL372's degrees were bounded by the largest node of every pool of the workload's purpose, so
    a service declared on a pool of 4-GPU nodes was told TP 8, which PL322 refuses there. The declared pool's node bounds
    them."""
    import yaml

    from alicerce.spec.loader import load_text

    data = yaml.safe_load((ROOT / "platform.yaml").read_text())
    chat = next(w for w in data["workloads"] if w["name"] == "chat-70b")
    chat.update(pool="infer-l40s", tensorParallel=3)
    text = yaml.safe_dump(data, sort_keys=False)
    [told] = [e.render() for e in check(load_text(text, "p.yaml"), on=TODAY).errors if e.rule == "AL372"]
    assert told.endswith("(use a degree that divides both 64 and a node's 4 GPUs: 1, 2, 4)"), told
    # pinned by its accelerator, the pools of that GPU (review sizreview63 N3)
    del chat["pool"]
    chat["accelerator"] = "L40S-48GB"
    text = yaml.safe_dump(data, sort_keys=False)
    [told] = [e.render() for e in check(load_text(text, "p.yaml"), on=TODAY).errors if e.rule == "AL372"]
    assert told.endswith("(use a degree that divides both 64 and a node's 4 GPUs: 1, 2, 4)"), told
