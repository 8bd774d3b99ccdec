"""The catalog data: loads, is internally consistent, and carries the facts FACTS.md insists on."""

from __future__ import annotations

import pytest

from alicerce.catalog import load_catalog

CATALOG = load_catalog()

REQUIRED_GPUS = [
    "A100-SXM4-40GB",
    "A100-SXM4-80GB",
    "H100-SXM5-80GB",
    "H200-SXM-141GB",
    "B200-SXM-180GB",
    "L40S-48GB",
    "L4-24GB",
    "A10G-24GB",
    "H100-NVL-94GB",
    "H200-NVL-141GB",
    "L40-48GB",
]
REQUIRED_FAMILIES = ["p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "g5", "g6", "g6e", "gr6", "m6i", "m7i", "m7a", "c7i"]
EVERY_SIZE = {
    "g5": ["xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"],
    "g6": ["xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"],
    "g6e": ["xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"],
    "gr6": ["4xlarge", "8xlarge"],
}


def test_required_gpus_are_present_with_aliases() -> None:
    for gpu_id in REQUIRED_GPUS:
        assert CATALOG.gpu(gpu_id) is not None, gpu_id
    assert CATALOG.gpu("H100").id == "H100-SXM5-80GB"  # type: ignore[union-attr]
    assert CATALOG.gpu("a100-80gb").id == "A100-SXM4-80GB"  # type: ignore[union-attr]


def test_aliases_are_unique() -> None:
    names = [n.lower() for g in CATALOG.gpus for n in (g.id, *g.aliases)]
    assert len(names) == len(set(names))


def test_required_instance_families_are_present() -> None:
    families = {i.family for i in CATALOG.instances}
    assert set(REQUIRED_FAMILIES) <= families


def test_g_families_have_every_size_and_common_system_types_exist() -> None:
    """Issue 16: m6i.2xlarge and g6e.2xlarge were hard errors."""
    for family, sizes in EVERY_SIZE.items():
        assert [s for s in sizes if CATALOG.instance(f"{family}.{s}") is None] == [], family
    assert all(CATALOG.instance(t) is not None for t in ("m6i.2xlarge", "m7a.xlarge", "c7i.4xlarge", "m7i.large"))
    assert CATALOG.gpu("H100-NVL").id == "H100-NVL-94GB"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("instance", "efa"),
    # EFA per size from EC2 DescribeInstanceTypes (eksctl's generated table, SageMaker HyperPod's)
    [
        ("g5.12xlarge", 1),
        ("g6.12xlarge", 1),
        ("g5.4xlarge", 0),
        ("g6e.24xlarge", 2),
        ("g6e.48xlarge", 4),
        ("gr6.8xlarge", 1),
        ("m6i.32xlarge", 1),
        ("m7i.4xlarge", 0),
    ],
)
def test_g_family_efa_per_size(instance: str, efa: int) -> None:
    found = CATALOG.instance(instance)
    assert found is not None and (found.efa.maxInterfaces if found.efa else 0) == efa


def test_instances_name_catalog_gpus_and_have_sources() -> None:
    for instance in CATALOG.instances:
        assert instance.gpu is None or CATALOG.gpu(instance.gpu) is not None, instance.type
        assert (instance.gpu is None) == (instance.gpus == 0)
        assert instance.sources and instance.price.source.url.startswith("https://")


@pytest.mark.parametrize(
    ("instance", "efa"),
    [("p5.48xlarge", 32), ("p5e.48xlarge", 32), ("p5en.48xlarge", 16), ("p6-b200.48xlarge", 8), ("p4d.24xlarge", 4), ("p4de.24xlarge", 4)],
)
def test_efa_interface_counts_match_facts(instance: str, efa: int) -> None:
    found = CATALOG.instance(instance)
    assert found is not None and found.efa is not None and found.efa.maxInterfaces == efa


def test_mig_only_where_the_hardware_has_it() -> None:
    for gpu_id in ("L4-24GB", "L40S-48GB", "A10G-24GB"):
        assert CATALOG.gpu(gpu_id).mig is None  # type: ignore[union-attr]
    for gpu_id in ("A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200-SXM-180GB"):
        mig = CATALOG.gpu(gpu_id).mig  # type: ignore[union-attr]
        assert mig is not None and mig.maxInstances == 7
        assert all(p.slices * p.maxCount <= 7 for p in mig.profiles)


def test_bill_of_materials_is_consistent_with_the_matrix() -> None:
    v = CATALOG.versions
    bom = v.bom
    assert bom.kubernetes in v.kubernetes
    gpu_op = next(r for r in v.gpuOperator if r.version == bom.gpuOperator)
    assert bom.kubernetes in gpu_op.kubernetes and bom.driverBranch in gpu_op.driverBranches
    assert bom.driverVersion.startswith(bom.driverBranch + ".")
    kueue = next(r for r in v.kueue if r.version == bom.kueue)
    assert kueue.apiVersion == "v1beta2" and bom.kubernetes in kueue.kubernetes
    net = next(r for r in v.networkOperator if r.version == bom.networkOperator)
    assert bom.kubernetes in net.kubernetes
    for bad in v.incompatibilities:
        assert not (bad.gpuOperator == bom.gpuOperator and bad.networkOperator == bom.networkOperator)


def test_chart_pins_equal_the_bill_of_materials() -> None:
    from alicerce.resolve.platform import CHART_VERSION_KEYS

    bom = CATALOG.versions.bom.model_dump()
    # every operator chart is pinned by the bill of materials; Argo CD (installed for delivery: argocd) by its chart entry
    assert set(CATALOG.versions.charts) == {*CHART_VERSION_KEYS, "argo-cd"}
    for name, key in CHART_VERSION_KEYS.items():
        assert CATALOG.versions.charts[name].version == bom[key], name


def test_every_driver_branch_supporting_blackwell_has_open_modules() -> None:
    for branch in CATALOG.versions.driverBranches:
        if "blackwell" in branch.architectures:
            assert branch.openKernelModules


def test_every_sizing_assumption_names_a_known_source() -> None:
    sizing = CATALOG.sizing

    def sources(node: object) -> list[str]:
        if isinstance(node, dict):
            found = [node["source"]] if isinstance(node.get("source"), str) else []
            return found + [s for value in node.values() for s in sources(value)]
        return []

    used = sources(sizing.model_dump(exclude={"sources"}))
    assert used and set(used) <= set(sizing.sources)
    for key, citation in sizing.sources.items():
        assert citation.url is None if key == "default" else citation.url.startswith("https://")  # type: ignore[union-attr]


def test_a_gpu_has_fp8_tensor_cores_exactly_where_transformer_engine_runs_fp8() -> None:
    """AL388 refuses fp8 training below compute capability 8.9 (Transformer Engine's check_fp8_support) and the plan
    prices fp8 as bf16 where the GPU has no fp8 rate: both must name the same GPUs (review sizreview23 N4)."""
    from alicerce.catalog.models import FP8_TRAINING_CAPABILITY

    for gpu in CATALOG.gpus:
        capability = tuple(int(part) for part in gpu.computeCapability.split("."))
        assert (gpu.tflops.fp8 is not None) == (capability >= FP8_TRAINING_CAPABILITY), gpu.id


def test_an_fp8_refusal_names_the_stack_the_recipe_runs_on() -> None:
    """Review sizreview25 N5: fp8 under `fp8Recipe: generic` was refused in Transformer Engine's words, a stack the user
    did not declare; a generic recipe runs its GEMMs on torch._scaled_mm, which ATen refuses below 8.9 ("torch._scaled_mm
    is only supported on CUDA devices with compute capability >= 9.0 or 8.9", aten/src/ATen/native/cuda/Blas.cpp)."""
    a100 = CATALOG.gpu("A100-SXM4-80GB")
    generic, te = a100.training_refusal("fp8", "generic"), a100.training_refusal("fp8", "transformer-engine")
    assert generic is not None and "torch._scaled_mm" in generic and "Transformer Engine" not in generic
    assert te is not None and "Transformer Engine" in te and a100.training_refusal("fp8") == te
    assert CATALOG.gpu("L40S-48GB").training_refusal("fp8", "generic") is None


def test_the_h100_mig_sms_cite_an_h100_lgip() -> None:
    """Review sizreview27 R5: the H100 SXM5's profile SMs were derived from H200, H100 NVL and GH200 transcripts ("no public
    lgip of the H100 SXM5 found"), though Google Cloud's "Create Multi-Instance GPUs" prints one from an A3 VM: 1g.10gb
    16, 1g.20gb 26, 2g.20gb 32, 3g.40gb 60 SMs. The catalog cites it, and its figures are those."""
    h100 = load_catalog().gpu("H100-SXM5-80GB")
    assert h100 is not None and h100.mig is not None
    assert "https://cloud.google.com/compute/docs/gpus/create-gpu-vm-accelerator-optimized" in {s.url for s in h100.sources}
    printed = {"1g.10gb": 16, "1g.20gb": 26, "2g.20gb": 32, "3g.40gb": 60}
    assert {p.name: p.sms for p in h100.mig.profiles if p.name in printed} == printed


def test_b200_mig_memory_is_the_later_lgips() -> None:
    """Review sizreview28 N4: the B200's 1g.23gb held 21.0 GiB, called a conservative estimate, where the later
    `nvidia-smi mig -lgip` (NVIDIA/gpu-operator pull request 1351, NVIDIA/mig-parted pull request 187, 2025-03-20)
    lists 20.50 GiB (22.00 in pull request 1242 of 2025-01-29): 0.5 GiB above what a slice holds on the newer driver.
    The two-memory-slice profiles stay below the lgips' 44.25 GiB."""
    b200 = CATALOG.gpu("B200-SXM-180GB")
    assert b200 is not None and b200.mig is not None
    memory = {p.name: p.memoryGiB for p in b200.mig.profiles}
    assert memory["1g.23gb"] == 20.5
    assert memory["1g.45gb"] <= 44.25 and memory["2g.45gb"] <= 44.25


def test_a_cpu_node_packs_its_physical_cores() -> None:
    """Review sizreview61 G4: data preparation is sized one tokenizer process a core and was packed a process a vCPU, two
    to an x86 core's two threads. EC2's x86 types run two threads a core, M7a one (EC2 User Guide, 'Optimize CPU
    options')."""
    cores = {t: (i.vcpus, i.cores) for t in ("m7i.16xlarge", "m6i.8xlarge", "c7i.4xlarge", "m7a.16xlarge") if (i := CATALOG.instance(t))}
    assert cores == {"m7i.16xlarge": (64, 32), "m6i.8xlarge": (32, 16), "c7i.4xlarge": (16, 8), "m7a.16xlarge": (64, 64)}
