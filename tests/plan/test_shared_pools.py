"""Serving on a pool whose GPUs are shared (nodePools[].sharing): a replica runs in one MIG instance or one time
slice, sized on its share of the GPU, and a model no part holds is refused there (review sizreview35 D-D: a 15 GiB model
was sized on whole H100s of a pool cut into 1g.10gb instances, with no finding)."""

from __future__ import annotations

import pytest
from rich.console import Console

from alicerce.catalog import load_catalog
from alicerce.cli.output import camel_keys
from alicerce.cli.plan_report import print_plan
from alicerce.plan.platform import SizingPlan, _replica_rate, plan_platform
from alicerce.plan.pools import pool_units
from alicerce.plan.sizing import mig_slice, replica_layout, time_slice
from alicerce.resolve.model import ResolvedPlatform
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_text
from tests.conftest import TODAY

CATALOG = load_catalog()

SPEC = """\
apiVersion: alicerce.dev/v1
kind: Platform
metadata: {name: shared, owner: a@example.com, costCenter: CC-0000}
environments:
  prod:
    tier: development
    sites:
      - {name: aws, provider: aws, account: "123456789012", region: us-east-1, zones: [us-east-1a, us-east-1b], vpcCidr: 10.0.0.0/16}
nodePools:
  - {name: system, site: aws, purpose: system, aws: {instanceType: m7i.2xlarge}, scaling: {min: 2, max: 3}}
  - {name: sliced, site: aws, purpose: inference, accelerator: "H100-SXM5-80GB:8", aws: {instanceType: p5.48xlarge, zone: us-east-1a},
     scaling: {min: 0, max: 4}, sharing: SHARING, taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]}
tenancy:
  teams:
    - {name: ml, groups: [ml-engineers], quotas: [{pool: sliced, gpus: QUOTA}]}
storage:
  - {name: lake, class: object, purpose: datasets, site: aws}
workloads:
  - {name: small, kind: inference, team: ml, model: {parameters: 1B}, precision: bf16,
     traffic: {peakRps: 20, inputTokens: 500, outputTokens: 200}}
  - {name: big, kind: inference, team: ml, model: {parameters: 8B}, precision: bf16,
     traffic: {peakRps: 5, inputTokens: 500, outputTokens: 200}}
"""


def _time_sliced_big(declared: str) -> SizingPlan:
    """The plan of SPEC on 4-way time-sliced GPUs, with ``declared`` fields added to the big service."""
    text = SPEC.replace("SHARING", "{mode: time-slicing, replicas: 4}").replace("QUOTA", "128")
    line = "precision: bf16,\n     traffic: {peakRps: 5"
    assert line in text
    text = text.replace(line, line.replace("bf16,", f"bf16, {declared},"))
    return plan_platform(validated(load_text(text, "shared.yaml"), "prod"), today=TODAY)


def _plan(sharing: str, quota: int) -> tuple[ResolvedPlatform, SizingPlan]:
    text = SPEC.replace("SHARING", sharing).replace("QUOTA", str(quota))
    platform = validated(load_text(text, "shared.yaml"), "prod")
    return platform, plan_platform(platform, today=TODAY)


def test_a_mig_pool_serves_from_its_instances_and_refuses_a_model_none_holds() -> None:
    platform, plan = _plan('{mode: mig, profiles: {"1g.10gb": 7}}', 224)
    small, big = (next(w for w in plan.workloads if w.name == n) for n in ("small", "big"))
    # the 1B model (2 GiB of weights) runs in 1g.10gb instances, sized on one's share of the H100
    assert small.sharing == "mig 1g.10gb" and small.sharing_declared and small.tensor_parallel == 1
    h100 = next(g for g in CATALOG.gpus if g.id == "H100-SXM5-80GB")
    workload = next(w for w in platform.spec.workloads if w.name == "small")
    on_slice, _ = replica_layout(workload, mig_slice(h100, "1g.10gb"), CATALOG.sizing, 1, tp=1)
    assert on_slice is not None and small.tokens_per_second_per_replica == pytest.approx(on_slice.tokens_per_second)
    whole, _ = replica_layout(workload, h100, CATALOG.sizing, 1, tp=1)
    assert whole is not None and on_slice.tokens_per_second < whole.tokens_per_second
    # its instances hold physical GPUs seven to a GPU
    rp = next(p for p in platform.pools if p.name == "sliced")
    assert small.gpus is not None and pool_units(small, rp) == -(-small.gpus // 7)
    # the 8B model's 16 GB of bf16 weights fit no 10 GB instance: refused there, not sized on whole GPUs
    assert big.gpus is None
    (finding,) = [f for f in plan.findings if f.subject == "big" and f.check == "PL303"]
    assert "no MIG instance (1g.10gb) of pool sliced's H100-SXM5-80GB holds a replica" in finding.message


def test_a_mixed_mig_layout_counts_the_gpus_by_the_instances_of_its_profile() -> None:
    """3g.40gb + 2g.20gb + 2 x 1g.10gb on each GPU: the 8B model's replicas take the smallest instance that holds one
    and its KV cache, the 3g.40gb, one a GPU, so they hold as many GPUs as they are, not a quarter of that (the pool's 4
    units a GPU); the 1B model's take a 1g.10gb, two a GPU."""
    platform, plan = _plan('{mode: mig, profiles: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}', 128)
    small, big = (next(w for w in plan.workloads if w.name == n) for n in ("small", "big"))
    assert big.sharing == "mig 3g.40gb" and small.sharing == "mig 1g.10gb"
    rp = next(p for p in platform.pools if p.name == "sliced")
    assert big.gpus is not None and pool_units(big, rp) == big.gpus
    assert small.gpus is not None and pool_units(small, rp) == -(-small.gpus // 2)


def test_a_time_sliced_pool_sizes_a_replica_on_its_slice() -> None:
    """Time-slicing isolates neither compute nor memory: four pods on an H100 each have a quarter of its compute and
    bandwidth, and each sees its whole memory, so the engine's memory fraction is of the whole GPU and the four must
    share it: 0.9 / 4 where undeclared, which the notes say to start the engine with (review sizreview39 D3)."""
    platform, plan = _plan("{mode: time-slicing, replicas: 4}", 128)
    small, big = (next(w for w in plan.workloads if w.name == n) for n in ("small", "big"))
    assert small.sharing == big.sharing == "time-slicing x4"
    h100 = next(g for g in CATALOG.gpus if g.id == "H100-SXM5-80GB")
    workload = next(w for w in platform.spec.workloads if w.name == "big").model_copy(update={"kv_memory_fraction": 0.225})
    quarter, _ = replica_layout(workload, time_slice(h100, 4), CATALOG.sizing, 1, tp=1)
    assert quarter is not None and big.tokens_per_second_per_replica == pytest.approx(quarter.tokens_per_second)
    assert any("--gpu-memory-utilization 0.225" in note for note in big.notes)
    rp = next(p for p in platform.pools if p.name == "sliced")
    assert big.gpus is not None and pool_units(big, rp) == -(-big.gpus // 4)
    # the fraction declared as the engine takes it sizes the same replica
    again = _time_sliced_big("kvMemoryFraction: 0.225")
    assert next(w for w in again.workloads if w.name == "big").tokens_per_second_per_replica == big.tokens_per_second_per_replica


def test_a_memory_fraction_the_pods_sharing_a_gpu_cannot_all_take_is_refused() -> None:
    """0.9 of the GPU's memory for each of the 4 pods a time-sliced GPU holds: the second fails to start; at 0.25 the
    fourth does (review sizreview40 D4)."""
    plan = _time_sliced_big("kvMemoryFraction: 0.9")
    (finding,) = [f for f in plan.findings if f.subject == "big" and f.check == "PL352"]
    # a quarter each, less the memory the last pod holds outside its share (its CUDA context) before vLLM checks
    assert "set it to 0.24 or less" in finding.message


def test_tensor_parallel_on_a_shared_pool_is_refused() -> None:
    plan = _time_sliced_big("tensorParallel: 2")
    (finding,) = [f for f in plan.findings if f.subject == "big" and f.check == "PL322"]
    assert "whose GPUs are shared (time slice (4 a GPU))" in finding.message


def test_services_on_shared_gpus_pack_onto_the_nodes_they_share() -> None:
    """Review sizreview39 D2: each service on a shared pool took the batch path and started a node of its own; two
    services whose instances fill 2 of a node's 8 GPUs billed two p5 nodes, $80,358, where one holds them ($40,179)."""
    _, plan = _plan('{mode: mig, profiles: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}', 128)
    pool = next(p for p in plan.pools if p.name == "sliced")
    assert pool.workloads == ("small", "big") and pool.monthly_cost_usd == pytest.approx(730 * 55.04)
    assert plan.placements["big"].startswith("sliced: adds $0")


def test_services_on_shared_gpus_share_the_gpus_and_are_charged_their_parts() -> None:
    """Four services of one time slice each on a 4-way sliced pool of one-L4 nodes fill one GPU together, as the
    scheduler places any pod on any free slice: each rounded up alone, the plan sized and billed the pool at four nodes
    and charged each service a whole GPU, four times what the cost rules (a slice weighed 1/4 of its GPU) charge."""
    services = "".join(
        f"  - {{name: chat{i}, kind: inference, team: ml, model: {{parameters: 1B}}, precision: bf16,\n"
        f"     traffic: {{peakRps: 0.2, inputTokens: 500, outputTokens: 200}}}}\n"
        for i in range(4)
    )
    text = (SPEC.replace("SHARING", "{mode: time-slicing, replicas: 4}").replace("QUOTA", "16")
            .replace('accelerator: "H100-SXM5-80GB:8", aws: {instanceType: p5.48xlarge',
                     'accelerator: "L4-24GB:1", aws: {instanceType: g6.xlarge')
            .replace("scaling: {min: 0, max: 4}", "scaling: {min: 0, max: 8}"))  # fmt: skip
    text = text[: text.index("workloads:\n") + len("workloads:\n")] + services
    platform = validated(load_text(text, "shared.yaml"), "prod")
    plan = plan_platform(platform, today=TODAY)
    chats = [w for w in plan.workloads if w.name.startswith("chat")]
    assert [(w.gpus, w.sharing) for w in chats] == [(1, "time-slicing x4")] * 4
    pool = next(p for p in plan.pools if p.name == "sliced")
    assert (pool.peak_gpus, pool.recommended_min, pool.recommended_max) == (1, 1, 1)
    assert pool.billed_usd_per_gpu_hour is not None  # a rented one-GPU node: its price an hour
    assert pool.monthly_cost_usd == pytest.approx(730 * pool.billed_usd_per_gpu_hour)  # one node's month
    rp = next(p for p in platform.pools if p.name == "sliced")
    assert rp.gpu_units is not None and rp.gpu_units.gpu_share == {"nvidia.com/gpu": 0.25}  # what the cost rules weigh a slice by
    for w in chats:  # a slice's month at a quarter of the GPU's billed rate
        assert w.showback_usd == pytest.approx(730 * 0.25 * pool.billed_usd_per_gpu_hour, rel=1e-3)


@pytest.mark.parametrize(("sharing", "part", "share"), [
    ("{mode: time-slicing, replicas: 4}", "nvidia.com/gpu", 0.25),
    ('{mode: mig, profiles: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}', "nvidia.com/mig-3g.40gb", 3 / 7),
])  # fmt: skip
def test_the_plan_prints_a_shared_services_hours_as_the_whole_gpus_it_is_charged_for(
    sharing: str, part: str, share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review sizreview53 D4: a service in 16 time slices printed 16 GPUs and 11,680 GPU-h, and showback $20,090, which
    the legend and the JSON units called those GPU-hours at the pool's billed rate: 2,920 whole-GPU hours were charged.
    The parts stay the GPUs count (what the replicas are scheduled on); GPU-h are whole GPUs' hours, and the table says
    how many whole GPUs the parts are."""
    platform, plan = _plan(sharing, 128)
    rp = next(p for p in platform.pools if p.name == "sliced")
    assert rp.gpu_units is not None and rp.gpu_units.gpu_share[part] == pytest.approx(share)  # as the cost rules weigh it
    pool = next(p for p in plan.pools if p.name == "sliced")
    assert pool.billed_usd_per_gpu_hour is not None
    document = camel_keys(plan.to_json())
    assert "whole GPUs" in document["units"]["gpuHours"]
    big = next(w for w in document["workloads"] if w["name"] == "big")
    assert big["gpus"] >= 1 and big["gpuShare"] == pytest.approx(share, abs=1e-3)  # rounded as every JSON figure
    assert big["gpuHours"] == pytest.approx(big["gpus"] * share * 730, rel=1e-3)  # always on, a 730-hour month
    assert big["showbackUsd"] == pytest.approx(big["gpuHours"] * pool.billed_usd_per_gpu_hour, rel=1e-3)
    monkeypatch.delenv("COLUMNS", raising=False)  # the table as a pipe prints it: one row a line
    console = Console(record=True, width=400)
    print_plan(console, plan)
    (row,) = [line for line in console.export_text().splitlines() if line.split()[:2] == ["big", "serve"]]  # its table row
    assert f" {big['gpus']} = {big['gpus'] * share:.3g} " in row and f"{big['gpuHours']:,.0f}" in row


def test_pl331_on_a_mig_pool_names_the_instance_vllm_sizes_its_defaults_by() -> None:
    """Review sizreview53 G5: PL331 said "max-num-batched-tokens 2048 on H100-SXM5-80GB", the 40 GB instance's default
    named after the 80 GB GPU (whose default is 8,192), and counted the latency's extra instances as GPUs."""
    text = SPEC.replace("SHARING", '{mode: mig, profiles: {"3g.40gb": 2}}').replace("QUOTA", "64")
    text = text[: text.index("workloads:\n") + len("workloads:\n")] + (
        "  - {name: small, kind: inference, team: ml, model: {parameters: 8B, layers: 32, hiddenSize: 4096}, precision: fp8,\n"
        "     kvCachePrecision: fp8, traffic: {peakRps: 10, inputTokens: 1000, outputTokens: 200},\n"
        "     latency: {timePerOutputToken: {p99: 50ms}}}\n"
    )
    plan = plan_platform(validated(load_text(text, "shared.yaml"), "prod"), today=TODAY)
    [told] = [f.message for f in plan.findings if f.check == "PL331"]
    assert "max-num-batched-tokens 2048 on H100-SXM5-80GB's 3g.40gb MIG instance)" in told
    assert " MIG instance for the latency target;" in told or " MIG instances for the latency target" in told


def _one_slice_services(names: list[str], pool: str, *, batch: bool = False) -> SizingPlan:
    """SPEC's 4-way sliced pool as ``pool`` (a nodePools entry's accelerator, aws and scaling fields), with one-slice services of
    the 1B model, ``names`` (team:name), and ``batch``: a one-slice nightly job for team ds, 8 hours a day."""
    lines = [
        f"  - {{name: {n}, kind: inference, team: {t}, model: {{parameters: 1B}}, precision: bf16,\n"
        f"     traffic: {{peakRps: 0.2, inputTokens: 500, outputTokens: 200}}}}\n"
        for t, n in (x.split(":") for x in names)
    ]
    if batch:
        lines.append(
            "  - {name: nightly, kind: batch-inference, team: ds, model: {parameters: 1B}, precision: bf16, hoursPerDay: 8,\n"
            "     traffic: {peakRps: 0.2, inputTokens: 500, outputTokens: 200}}\n"
        )
    ds = "16}]}\n    - {name: ds, groups: [ds-engineers], quotas: [{pool: sliced, gpus: 16"
    text = (SPEC.replace("SHARING", "{mode: time-slicing, replicas: 4}").replace("QUOTA", ds)
            .replace(P5_NODES, pool))  # fmt: skip
    text = text[: text.index("workloads:\n") + len("workloads:\n")] + "".join(lines)
    return plan_platform(validated(load_text(text, "shared.yaml"), "prod"), today=TODAY)


P5_NODES = 'accelerator: "H100-SXM5-80GB:8", aws: {instanceType: p5.48xlarge, zone: us-east-1a},\n     scaling: {min: 0, max: 4}'
L4_NODES = 'accelerator: "L4-24GB:1", aws: {instanceType: g6.xlarge}, scaling: {min: 0, max: 8}'
BLOCKS = ('accelerator: "H100-SXM5-80GB:8", aws: {instanceType: p5.48xlarge, capacityType: capacity-block, '
          'capacityReservationId: cr-0a1b2c3d4e5f60718, zone: us-east-1a}, scaling: {min: 0, max: 2}')  # fmt: skip


def test_batch_work_rides_the_slices_the_services_leave_free() -> None:
    """Review sharedreview D2: a one-slice nightly job beside three one-slice services on a sliced pool of one-L4 nodes
    started a node of its own ("adds $196") where the fourth slice of their GPU was free."""
    plan = _one_slice_services(["ml:a1", "ml:a2", "ml:a3"], L4_NODES, batch=True)
    pool = next(p for p in plan.pools if p.name == "sliced")
    assert pool.billed_usd_per_gpu_hour is not None
    assert pool.monthly_cost_usd == pytest.approx(730 * pool.billed_usd_per_gpu_hour)  # one node, the month round
    assert plan.placements["nightly"].startswith("sliced: adds $0")
    nightly = next(w for w in plan.workloads if w.name == "nightly")
    assert nightly.gpu_hours is not None
    assert nightly.showback_usd == pytest.approx(nightly.gpu_hours * 0.25 * pool.billed_usd_per_gpu_hour)


def test_on_capacity_blocks_services_sharing_a_node_split_its_blocks_and_are_charged_them() -> None:
    """Review sharedreview D1, D3: three one-slice services on one Capacity Block node. Each pays a third of the node's
    blocks, and the rate its pods are charged at gives that from the quarter GPU a slice is billed as (the rate was set
    on whole GPU-hours, so the cost rules and the team split charged a quarter of it); the second and third add $0 to
    the month, which placement said was $28,711 each."""
    plan = _one_slice_services(["ml:a1", "ml:a2", "ds:b1"], BLOCKS)
    pool = next(p for p in plan.pools if p.name == "sliced")
    assert pool.monthly_cost_usd is not None
    services = [w for w in plan.workloads if w.pool == "sliced"]
    for w in services:
        assert w.cost_usd == pytest.approx(pool.monthly_cost_usd / 3)
        assert w.gpu_hours is not None and w.billed_usd_per_gpu_hour is not None
        assert w.gpu_hours * 0.25 * w.billed_usd_per_gpu_hour == pytest.approx(w.cost_usd)  # what the cost rules charge
    assert plan.showback["ml"] == pytest.approx(2 * pool.monthly_cost_usd / 3)
    assert plan.showback["ds"] == pytest.approx(pool.monthly_cost_usd / 3)
    assert plan.placements["a1"].startswith("sliced: adds $28,711")
    assert plan.placements["a2"].startswith("sliced: adds $0") and plan.placements["b1"].startswith("sliced: adds $0")


def test_a_mixed_mig_layout_packs_each_profiles_instances_onto_the_same_gpus() -> None:
    """Every GPU of a 3g.40gb + 2g.20gb + 2 x 1g.10gb layout offers all four instances at once: one service's 3g.40gb
    and another's two 1g.10gb sit on one GPU, not on one GPU each."""
    platform, plan = _plan('{mode: mig, profiles: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}', 128)
    small, big = (next(w for w in plan.workloads if w.name == n) for n in ("small", "big"))
    rp = next(p for p in platform.pools if p.name == "sliced")
    assert small.gpus is not None and big.gpus is not None
    packed = max(big.gpus, -(-small.gpus // 2))
    assert packed < pool_units(big, rp) + pool_units(small, rp)
    assert next(p for p in plan.pools if p.name == "sliced").peak_gpus == packed


def test_a_service_that_holds_more_gpus_in_parts_than_whole_is_a_finding() -> None:
    """Each time slice holds its own copy of the weights and the engine's reserved memory in its quarter of the
    memory, and reads the weights every step at a quarter of the bandwidth: the 8B model's 5 requests/s take 13 slices,
    4 H100s, where one engine on a whole H100 serves them. PL354 says so; where the parts hold no more GPUs than whole
    ones would (the 1B model in one slice; 2 of 7 MIG instances on one GPU) it is silent."""
    platform, plan = _plan("{mode: time-slicing, replicas: 4}", 128)
    big = next(w for w in plan.workloads if w.name == "big")
    rp = next(p for p in platform.pools if p.name == "sliced")
    assert big.replicas == 13 and pool_units(big, rp) == 4
    (finding,) = [f for f in plan.findings if f.check == "PL354"]
    assert finding.subject == "big"
    # what one replica is, where a finding explains a shortfall: a slice, not "one replica of 1 GPUs"
    assert _replica_rate(big).startswith(": one replica in one time-slicing x4 unit serves 0.41 req/s")
    assert finding.message.startswith("its 13 replicas (time-slicing x4 on pool sliced) hold 4 H100-SXM5-80GB GPUs, where "
                                      "engines on whole GPUs of the same model serve it on 1")  # fmt: skip
    _, mig = _plan('{mode: mig, profiles: {"1g.10gb": 7}}', 224)
    assert not [f for f in mig.findings if f.check == "PL354"]


def test_the_whole_gpu_side_runs_the_engine_at_its_own_memory_fraction() -> None:
    """Review sizreview45 D1: the 0.225 a 4-way time-sliced pool's engines are started with (the notes say so) is a
    slice's share of the GPU; read on a whole H100 it left room for 2 sequences, and the whole side needed as many GPUs
    as the slices, so PL354 went quiet. Declared or not, the whole side is the engine's default."""
    plan = _time_sliced_big("kvMemoryFraction: 0.225")
    (finding,) = [f for f in plan.findings if f.check == "PL354"]
    assert "serve it on 1 (a batch of 2.3 a part, 696 on a whole GPU)" in finding.message
    # --explain shows the layout it compares with (review sizreview45 G5)
    big = next(w for w in plan.workloads if w.name == "big")
    (note,) = [n for n in big.notes if "(PL354)" in n]
    assert note.startswith("on whole H100-SXM5-80GB GPUs (PL354): 1 GPU, 1 replica of 1 GPU at a batch of 696, ")


def test_placement_counts_a_services_parts_as_the_gpus_they_fill() -> None:
    """Review sizreview45 D3: a service's 13 MIG instances, seven to a GPU, fill 2 of one p5's 8 GPUs; placement set the
    13 against the 8 free GPUs and said it does not fit ("needs 13 GPUs, 8 free")."""
    text = (SPEC.replace("SHARING", '{mode: mig, profiles: {"1g.10gb": 7}}').replace("QUOTA", "56")
            .replace("scaling: {min: 0, max: 4}", "scaling: {min: 1, max: 1}")
            .replace("traffic: {peakRps: 20, inputTokens: 500", "traffic: {peakRps: 200, inputTokens: 500"))  # fmt: skip
    plan = plan_platform(validated(load_text(text, "shared.yaml"), "prod"), today=TODAY)
    small = next(w for w in plan.workloads if w.name == "small")
    assert small.gpus == 13 and small.sharing == "mig 1g.10gb"
    assert "needs 13 GPUs" not in plan.placements["small"] and "adds $0" in plan.placements["small"]


@pytest.mark.parametrize(("quota", "borrowing", "check", "says"), [
    (5, "", "PL341", "runs only on 8 GPUs borrowed from the cohort"),
    (10, "", "PL341", "raise tenancy.teams[ml].quotas[0].gpus to 13"),
    (10, ", borrowingLimit: 1", "PL340", "borrowing limit of 1: Kueue never admits it (raise tenancy.teams[ml].quotas[0].gpus or "
     "borrowingLimit to fit 13, or serve less at once: a lower peak rate or looser latency targets take fewer replicas)"),
])  # fmt: skip
def test_a_services_parts_are_held_against_its_teams_quota_in_full(quota: int, borrowing: str, check: str, says: str) -> None:
    """Review sizreview46 1: a service's 13 MIG instances were capped at the pool's 8 physical GPUs before the quota
    (which counts instances) was checked: quota 10 read within it, and quota 5 was told to rise to 8."""
    text = (SPEC.replace("SHARING", '{mode: mig, profiles: {"1g.10gb": 7}}').replace("QUOTA", f"{quota}{borrowing}")
            .replace("scaling: {min: 0, max: 4}", "scaling: {min: 1, max: 1}")
            .replace("traffic: {peakRps: 20, inputTokens: 500", "traffic: {peakRps: 200, inputTokens: 500"))  # fmt: skip
    plan = plan_platform(validated(load_text(text, "shared.yaml"), "prod"), today=TODAY)
    (finding,) = [f for f in plan.findings if f.subject == "small" and f.check in ("PL340", "PL341")]
    assert finding.check == check and "is sized at 13 GPUs" in finding.message and says in finding.message


def test_between_two_pools_that_add_the_same_the_one_holding_less_compute_wins() -> None:
    """Review sizreview45 G4: beside the 4-way time-sliced pool, a whole-GPU p5 pool adds the same $40,179 for the 8B
    service (a node either way); the pool declared first won, and PL354 then said its 13 slices hold 4 H100s where one
    whole H100 serves it. Placement now takes the option holding fewer GPUs' worth of compute."""
    whole = ('  - {name: whole, site: aws, purpose: inference, accelerator: "H100-SXM5-80GB:8", '
             'aws: {instanceType: p5.48xlarge, zone: us-east-1a},\n     scaling: {min: 0, max: 1}, '
             'taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]}\n')  # fmt: skip
    text = SPEC.replace("SHARING", "{mode: time-slicing, replicas: 4}").replace("QUOTA", "128}, {pool: whole, gpus: 8")
    small = (
        "  - {name: small, kind: inference, team: ml, model: {parameters: 1B}, precision: bf16,\n"
        "     traffic: {peakRps: 20, inputTokens: 500, outputTokens: 200}}\n"
    )
    assert small in text
    text = text.replace("tenancy:\n", whole + "tenancy:\n").replace(small, "")  # the big service alone: no node started yet
    plan = plan_platform(validated(load_text(text, "shared.yaml"), "prod"), today=TODAY)
    big = next(w for w in plan.workloads if w.name == "big")
    assert big.pool == "whole" and big.gpus == 1
    assert plan.placements["big"].startswith("whole: adds $") and "Also considered: sliced: adds $" in plan.placements["big"]
    assert not [f for f in plan.findings if f.check == "PL354"]


@pytest.mark.parametrize("a100_first", [False, True])
def test_a_run_between_two_paid_pools_takes_the_one_it_finishes_on_soonest(a100_first: bool) -> None:
    """Review sizreview47: the least-compute tie-break sent a LoRA fine-tune from an always-on p5 to an always-on p4d
    (8 days where 3 do), since it counted the GPUs held and not for how long; and which pool "adds $0" by 1e-12 of
    float noise decided it. Among equal costs a run takes the pool it finishes on soonest, whichever is listed first
    (sizreview48 G2) and whatever its token count, and "$0" never prints as "$-0"."""
    for tokens in ("1B", "3B", "24B"):
        text = (SPEC.replace("purpose: inference", "purpose: training").replace("SHARING", "{mode: none}")
                .replace("QUOTA", "32}, {pool: a100, gpus: 32")
                .replace("scaling: {min: 0, max: 4}", "scaling: {min: 1, max: 4}").replace("sliced", "h100"))  # fmt: skip
        a100 = ('  - {name: a100, site: aws, purpose: training, accelerator: "A100-SXM4-40GB:8", '
                'aws: {instanceType: p4d.24xlarge, zone: us-east-1a},\n     scaling: {min: 1, max: 4}, '
                'taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]}\n')  # fmt: skip
        head, _ = text.split("workloads:\n")
        if a100_first:
            head = head.replace("  - {name: h100,", a100 + "  - {name: h100,")
        else:
            head = head.replace("tenancy:\n", a100 + "tenancy:\n")
        text = head + (
            "workloads:\n  - {name: ft, kind: fine-tuning, team: ml, model: {parameters: 8B}, method: lora, "
            f"tokens: {tokens}, deadline: 20d, gpus: 8}}\n")  # fmt: skip
        plan = plan_platform(validated(load_text(text, "shared.yaml"), "prod"), today=TODAY)
        assert plan.placements["ft"].startswith("h100: meets the 20-day deadline"), (tokens, plan.placements["ft"])
        assert "adds $0 (paid already" in plan.placements["ft"] and "$-0" not in plan.placements["ft"]
