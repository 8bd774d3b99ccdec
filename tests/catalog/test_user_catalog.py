"""Issue 16, item 6: a spec declares GPUs and instance types the built-in catalog lacks.

They are checked with the built-in models (facts and sources), known to every rule, used by
sizing, and marked user-provided in `show`, `plan` and `catalog`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file, load_text
from tests.conftest import ALICERCE, ROOT

EXAMPLE = ROOT / "examples" / "user-catalog.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """A pipe without COLUMNS: tables print one line per row."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([str(ALICERCE), *args], cwd=ROOT, capture_output=True, text=True, env=env, check=False, timeout=120)


def test_user_entries_resolve_like_built_in_ones() -> None:
    platform = validated(load_file(EXAMPLE), "lab")
    pool = platform.pool("infer-a30")
    assert pool.gpu is not None and pool.gpu.id == "A30-24GB" and pool.gpus_per_node == 4
    assert platform.pool("system").instance is not None and platform.pool("system").instance.vcpus == 16  # type: ignore[union-attr]
    assert platform.catalog.user_ids == {"A30-24GB", "c6i.4xlarge"}


def test_outputs_mark_user_provided_entries() -> None:
    shown = yaml.safe_load(run("show", str(EXAMPLE)).stdout)
    pools = {p["name"]: p["resolved"] for p in shown["nodePools"]}
    assert (pools["infer-a30"]["userCatalog"], pools["system"]["userCatalog"], pools["lab-system"]["userCatalog"]) == (
        ["A30-24GB"],
        ["c6i.4xlarge"],
        [],
    )
    plan = json.loads(run("plan", str(EXAMPLE), "--format", "json").stdout)
    assert plan["userCatalog"] == ["A30-24GB", "c6i.4xlarge"]
    assert "A30-24GB (user catalog)" in run("plan", str(EXAMPLE)).stdout
    gpus = json.loads(run("catalog", "gpus", "--spec", str(EXAMPLE), "--format", "json").stdout)["gpus"]
    assert {g["id"]: g["origin"] for g in gpus}["A30-24GB"] == "user"
    assert {g["origin"] for g in gpus if g["id"] != "A30-24GB"} == {"built-in"}
    table = run("catalog", "instances", "--spec", str(EXAMPLE)).stdout
    (row,) = [line for line in table.splitlines() if line.startswith("c6i.4xlarge ")]
    assert " user " in row


def test_user_entries_are_validated_like_built_in_ones(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("      memoryBandwidthGBps: 933\n", "      memoryBandwidthGBs: 933\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    result = run("validate", str(spec))
    assert result.returncode == 2
    assert 'catalog.gpus[0].memoryBandwidthGBs: unknown key "memoryBandwidthGBs" (did you mean "memoryBandwidthGBps"?)' in result.stdout


def test_a_clash_with_a_built_in_id_is_an_error() -> None:
    text = EXAMPLE.read_text().replace("aliases: [A30]", "aliases: [A30, L40S]")
    document = load_text(text, "spec.yaml")
    from alicerce.rules.validate import check

    errors = [e.render() for e in check(document).errors]
    assert errors == [
        'spec.yaml:35:22: error[AL285]: catalog.gpus[0].aliases[1]: "L40S" is already the built-in GPU L40S-48GB'
        " (use the built-in L40S-48GB (`alicerce catalog gpus`), or give this GPU an id of its own)"
    ]


def test_a_profiles_sms_are_read_against_the_gpus(tmp_path: Path) -> None:
    """Review sizreview27 R4: a 1g profile's 200 SMs on a GPU of 98 planned a slice twice the GPU (compute_share 2.04),
    and a profile's SMs without mig.sms were dropped for compute slices / 4 in silence: both are located errors, exit 2."""
    over = (
        EXAMPLE.read_text()
        .replace("        memorySlices: 4  #", "        sms: 56\n        memorySlices: 4  #")
        .replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 4, sms: 200}")
    )
    spec = tmp_path / "over.yaml"
    spec.write_text(over)
    result = run("validate", str(spec))
    assert result.returncode == 2, result.stdout
    assert "error[AL287]: catalog.gpus[0].mig.profiles[0].sms: 1g.6gb has 200 SMs, more than the 56 of the whole A30-24GB" in result.stdout
    alone = EXAMPLE.read_text().replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 4, sms: 14}")
    spec.write_text(alone)
    result = run("validate", str(spec))
    assert result.returncode == 2, result.stdout
    assert "error[AL287]: catalog.gpus[0].mig.profiles[0].sms: 1g.6gb's sms are its share of the GPU's" in result.stdout


def _al287(text: str) -> list[str]:
    from alicerce.rules.validate import check

    return [e.render() for e in check(load_text(text, "spec.yaml")).errors if "AL287" in e.render()]


def test_a_profiles_instances_and_its_counted_sms_fit_in_the_gpus() -> None:
    """Review sizreview28 D1: a 1g.24gb at mig.sms 108 of 108 was accepted and planned a 4g at 4x the GPU, and a profile
    without SMs counted at slices x a 1g's was never checked (a 7g at 182 of 108). A profile's maxCount instances run on
    disjoint SMs, so sms x maxCount is at most mig.sms; a profile without SMs counted past mig.sms is an error too. The
    bound is per profile: a 1g at 14 x 4 = 56 of an A30's 56 is fine."""
    with_sms = EXAMPLE.read_text().replace("        memorySlices: 4  #", "        sms: 56\n        memorySlices: 4  #")
    assert _al287(with_sms.replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 4, sms: 14}")) == []
    whole = _al287(with_sms.replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 4, sms: 56}"))
    assert whole == [
        "spec.yaml:52:91: error[AL287]: catalog.gpus[0].mig.profiles[0].sms: 1g.6gb's 4 instances (maxCount) at 56 SMs each "
        "need 224, more than the 56 of the whole A30-24GB (mig.sms): they run on disjoint SMs (at most 14: the SM column of "
        "`nvidia-smi mig -lgip`)"
    ], whole
    # two 1g instances at 20 SMs fit (40 of 56), but the 1g is one compute slice of 4: 80 of 56, the one error (the 2g
    # and 4g counted from it would repeat it; review sizreview30 G1: a 1g's SMs x computeSlices)
    wide = _al287(with_sms.replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 2, sms: 20}"))
    assert len(wide) == 1 and ("profiles[0].sms: 1g.6gb is one compute slice (with one memory slice), and its 20 SMs x the "
                               "4 compute slices of A30-24GB make 80, more than its 56") in wide[0], wide  # fmt: skip
    # the 2g.12gb's instances, counted at 2 x 14 = 28 each, x a maxCount mistyped 3: 84 of 56 (review sizreview29 G1:
    # counted SMs x maxCount too)
    fourteen = with_sms.replace("memorySlices: 1, maxCount: 4}", "memorySlices: 1, maxCount: 4, sms: 14}")
    counted = _al287(fourteen.replace("memorySlices: 2, maxCount: 2}", "memorySlices: 2, maxCount: 3}"))
    assert len(counted) == 1 and ("catalog.gpus[0].mig.profiles[1]: 2g.12gb lists no sms, and its 2 compute slices x the "
                                  "1g.6gb's 14 SMs count 28 an instance, 84 for its 3 (maxCount), more than the 56 of the "
                                  "whole A30-24GB") in counted[0], counted  # fmt: skip


def test_a_gpu_with_some_profiles_sms_counts_the_rest_from_its_one_memory_slice_1g_or_is_refused() -> None:
    """Review sizreview29 D1 / G2: a user H100 (mig.sms 132) listing the real 1g.20gb (26 SMs, two memory slices) and 7g
    (132), without a 1g.10gb, counted its 3g at 3 x 26 = 78 SMs (0.591, the lgip's 60 give 0.455) and planned a 3g the
    real one can't serve. A two-memory-slice 1g is no unit, and a GPU listing some profiles' SMs but unable to count the
    rest from a one-memory-slice 1g would mix SM shares with slices / 7: AL287 refuses it at the first such profile."""
    from alicerce.catalog.models import Mig, MigProfile

    subset = (ROOT / "tests" / "catalog" / "data" / "mig-h100x-subset.yaml").read_text()
    found = _al287(subset)
    assert len(found) == 1 and "catalog.gpus[0].mig.profiles[1]: H100X-80GB lists sms on some MIG profiles, and 2g.20gb" in found[0]
    assert found[0].endswith("(list sms on every profile, or on its one-memory-slice 1g)"), found
    mig = Mig.model_validate(yaml.safe_load(subset)["catalog"]["gpus"][0]["mig"])
    assert mig.sm_unit() is None and mig.fallback_sms(mig.profiles[2]) is None and mig.mixed_basis() == mig.profiles[1]
    # adding the real 1g.10gb (16 SMs, one memory slice) makes it the unit: 3g at 48, within the lgip's 60
    ten = "- {name: 1g.10gb, slices: 1, memoryGiB: 9.75, memorySlices: 1, maxCount: 7, sms: 16}\n          "
    fixed = subset.replace("- {name: 1g.20gb", ten + "- {name: 1g.20gb")
    assert _al287(fixed) == []
    mig = Mig.model_validate(yaml.safe_load(fixed)["catalog"]["gpus"][0]["mig"])
    assert mig.profile_sms(mig.profiles[3]) == 48 and mig.mixed_basis() is None
    # without memorySlices a 1g's memory share decides: 9.75 of 79 GiB is one slice of 8, 19.75 two
    bare = Mig(maxInstances=7, computeSlices=7, memorySlices=8, sms=132, profiles=(
        MigProfile(name="1g.20gb", slices=1, memoryGiB=19.75, maxCount=4, sms=26),
        MigProfile(name="1g.10gb", slices=1, memoryGiB=9.75, maxCount=7, sms=16),
        MigProfile(name="7g.80gb", slices=7, memoryGiB=79, maxCount=1)))  # fmt: skip
    assert bare.sm_unit() == bare.profiles[1] and bare.profile_sms(bare.profiles[2]) == 112


def test_no_built_in_gpu_mixes_mig_sm_bases() -> None:
    """Every built-in GPU with mig.sms either lists every profile's SMs or counts the rest from its one-memory-slice 1g."""
    from alicerce.catalog import load_catalog
    from alicerce.rules.base import S
    from alicerce.rules.catalog import _mig_sms

    checked = 0
    for gpu in load_catalog().gpus:
        if gpu.mig is not None and gpu.mig.sms is not None:
            assert gpu.mig.mixed_basis() is None, gpu.id
            assert list(_mig_sms(gpu.mig, gpu.id, S.catalog.gpus[0].mig)) == [], gpu.id
            checked += 1
    assert checked >= 6


def test_every_one_memory_slice_1g_fits_the_gpus_compute_slices() -> None:
    """Review sizreview30 G1: the x maxCount check bounded a wrong 1g only through a sibling with many instances. An
    H100-like GPU (132 SMs) listing 1g.10gb+me (maxCount 1) at 26, the 1g.20gb's copied, beside 1g.20gb 26, an unlisted
    4g and 7g 132 validated and planned a 4g.40gb at 4 x 26 = 104 of 132 SMs (0.788; the lgip's 64 give 0.485); and a
    listed 1g.10gb at 16 beside a +me at 132 validated with the +me at the whole GPU. A one-memory-slice 1g is one compute
    slice's SMs: x the GPU's computeSlices it fits in mig.sms. The real tables do (A100 14 x 7 = 98 <= 108, H100 / H200
    16 x 7 = 112 <= 132, B200 18 x 7 = 126 <= 148; A30 14 x 4 = 56 of 56 in the test above)."""
    from alicerce.catalog import load_catalog
    from alicerce.catalog.models import Mig, MigProfile
    from alicerce.rules.base import S
    from alicerce.rules.catalog import _mig_sms

    def found(*profiles: MigProfile) -> list[str]:
        mig = Mig(maxInstances=7, computeSlices=7, memorySlices=8, sms=132, profiles=profiles)
        return [f"{'.'.join(map(str, f.path.path))}: {f.message}" for f in _mig_sms(mig, "X", S.catalog.gpus[0].mig)]

    me = MigProfile(name="1g.10gb+me", slices=1, memoryGiB=9.75, memorySlices=1, maxCount=1, sms=26)
    twenty = MigProfile(name="1g.20gb", slices=1, memoryGiB=19.75, memorySlices=2, maxCount=4, sms=26)
    four = MigProfile(name="4g.40gb", slices=4, memoryGiB=39.5, memorySlices=4, maxCount=1)
    seven = MigProfile(name="7g.80gb", slices=7, memoryGiB=79, memorySlices=8, maxCount=1, sms=132)
    wrong = found(me, twenty, four, seven)
    assert wrong == ["catalog.gpus.0.mig.profiles.0.sms: 1g.10gb+me is one compute slice (with one memory slice), and "
                     "its 26 SMs x the 7 compute slices of X make 182, more than its 132 (mig.sms): the other profiles are "
                     "counted in these SMs"], wrong  # fmt: skip
    assert found(me.model_copy(update={"sms": 16}), twenty, four, seven) == []
    # the listed 1g.10gb at the lgip's 16 is the unit; its +me twin at 132 is still refused, on its own row
    ten = MigProfile(name="1g.10gb", slices=1, memoryGiB=9.75, memorySlices=1, maxCount=7, sms=16)
    after_hint = found(ten, me.model_copy(update={"sms": 132}), seven)
    assert len(after_hint) == 1 and after_hint[0].startswith("catalog.gpus.0.mig.profiles.1.sms: 1g.10gb+me"), after_hint
    # the two-memory-slice 1g.20gb at 26 is not one compute slice's SMs (26 x 7 = 182 > 132 is the real H100's)
    assert found(ten, twenty, seven) == []
    checked = 0
    for gpu in load_catalog().gpus:
        if gpu.mig is not None and gpu.mig.sms is not None:
            for p in gpu.mig.profiles:
                if p.slices == 1 and gpu.mig.one_memory_slice(p) and p.sms is not None:
                    assert p.sms * gpu.mig.computeSlices <= gpu.mig.sms, (gpu.id, p.name)
                    checked += 1
    assert checked >= 6


def test_a_counted_profiles_instances_fit_in_the_gpu() -> None:
    """Review sizreview29 G1: AL287 checked a counted profile for one instance. An H100-like GPU (132 SMs) whose 1g.10gb+me
    twin (maxCount 1) lists 132 SMs counted the 1g.10gb (maxCount 7) at 132 each, 924 of 132, and planned every 1g at
    the whole GPU; at 30 SMs, 210 of 132 (the lgip's 16 give 112). At 16 it fits."""
    from alicerce.catalog.models import Mig, MigProfile
    from alicerce.rules.base import S
    from alicerce.rules.catalog import _mig_sms

    def twin(me: int) -> list[str]:
        mig = Mig(maxInstances=7, computeSlices=7, memorySlices=8, sms=132, profiles=(
            MigProfile(name="1g.10gb", slices=1, memoryGiB=9.75, memorySlices=1, maxCount=7),
            MigProfile(name="1g.10gb+me", slices=1, memoryGiB=9.75, memorySlices=1, maxCount=1, sms=me),
            MigProfile(name="7g.80gb", slices=7, memoryGiB=79, memorySlices=8, maxCount=1, sms=132)))  # fmt: skip
        return [f.message for f in _mig_sms(mig, "X", S.catalog.gpus[0].mig)]

    # the finding sits on the row whose number is wrong, the +me twin, not on the 1g.10gb counted from it: told to give
    # the 1g.10gb its 16, the twin passed at 132 x maxCount 1 and every +me was planned as the whole GPU (sizreview30 G1)
    assert twin(132) == ["1g.10gb+me is one compute slice (with one memory slice), and its 132 SMs x the 7 compute slices "
                         "of X make 924, more than its 132 (mig.sms): the other profiles are counted in these SMs"]  # fmt: skip
    assert len(twin(30)) == 1 and "make 210" in twin(30)[0]
    assert twin(16) == [] and twin(18) == [] and len(twin(19)) == 1  # 18 x 7 = 126 <= 132 < 19 x 7 = 133


def test_mig_twins_with_other_sms_are_refused() -> None:
    """Review sizreview31 N4: a +me twin (same compute and memory slices) mistyped at mig.sms // computeSlices passed the
    one-slice bound (B200: 21 where the lgip gives 18, +17%) and was planned at that share. A twin's SMs are its
    profile's (MIG User Guide, Supported MIG Profiles: A30 1g.6gb and 1g.6gb+me 1/4 of the SMs each); the published
    tables with twins stay valid."""
    from alicerce.catalog.models import Mig, MigProfile
    from alicerce.rules.base import S
    from alicerce.rules.catalog import _mig_sms

    def found(sms: int, rows: list[tuple[str, int, float, int | None, int, int | None]], slices: int = 7) -> list[str]:
        mig = Mig(maxInstances=slices, computeSlices=slices, memorySlices=None if rows[0][3] is None else 8 if slices == 7 else 4,
                  sms=sms, profiles=tuple(MigProfile(name=n, slices=s, memoryGiB=g, memorySlices=m, maxCount=c, sms=x)
                                          for n, s, g, m, c, x in rows))  # fmt: skip
        return [f"{'.'.join(map(str, f.path.path))}: {f.message} ({f.hint})" for f in _mig_sms(mig, "X", S.catalog.gpus[0].mig)]

    b200 = [("1g.23gb", 1, 23.0, 1, 7, 18), ("1g.23gb+me", 1, 23.0, 1, 1, 21), ("1g.45gb", 1, 44.5, 2, 4, 26),
            ("7g.180gb", 7, 178.5, 8, 1, 148)]  # fmt: skip
    assert found(148, b200) == [
        "catalog.gpus.0.mig.profiles.1.sms: 1g.23gb+me has 21 SMs, and 1g.23gb, with the same 1 compute and 1 memory "
        "slices, has 18: a +me or +gfx twin adds media engines or graphics, not SMs (18, 1g.23gb's, or correct 1g.23gb's: "
        "the SM column of `nvidia-smi mig -lgip`)"
    ]
    # at 18 it is the lgip's; the two-memory-slice 1g.45gb at 26 is no twin of the 1g.23gb (memory slices told apart
    # by memorySlices, or without them by the memory share)
    assert found(148, [r if r[0] != "1g.23gb+me" else (*r[:5], 18) for r in b200]) == []
    bare = [(n, s, g, None, c, x) for n, s, g, _, c, x in b200]
    assert len(found(148, bare)) == 1 and "1g.23gb+me has 21 SMs" in found(148, bare)[0]
    assert found(148, [r if r[0] != "1g.23gb+me" else (*r[:5], 18) for r in bare]) == []
    # published tables with twins: A30 (MIG User Guide), H200 (NVIDIA/mig-parted #120), RTX PRO 6000 Blackwell
    # (GoogleCloudPlatform/container-engine-accelerators #564: every 1g row at 46 of 188 SMs)
    a30 = [("1g.6gb", 1, 5.75, 1, 4, 14), ("1g.6gb+me", 1, 5.75, 1, 1, 14), ("2g.12gb", 2, 11.75, 2, 2, 28),
           ("2g.12gb+me", 2, 11.75, 2, 1, 28), ("4g.24gb", 4, 23.5, 4, 1, 56)]  # fmt: skip
    h200 = [("1g.18gb", 1, 16.0, 1, 7, 16), ("1g.18gb+me", 1, 16.0, 1, 1, 16), ("1g.35gb", 1, 32.25, 2, 4, 26),
            ("2g.35gb", 2, 32.25, 2, 3, 32), ("3g.71gb", 3, 69.5, 4, 2, 60), ("4g.71gb", 4, 69.5, 4, 1, 64),
            ("7g.141gb", 7, 139.0, 8, 1, 132)]  # fmt: skip
    rtx = [("1g.24gb", 1, 23.62, 1, 4, 46), ("1g.24gb+me", 1, 23.62, 1, 1, 46), ("1g.24gb+gfx", 1, 23.62, 1, 4, 46),
           ("1g.24gb+me.all", 1, 23.62, 1, 1, 46), ("2g.48gb", 2, 47.5, 2, 2, None), ("4g.96gb", 4, 95.0, 4, 1, None)]  # fmt: skip
    for whole, rows, slices in ((56, a30, 4), (132, h200, 7), (188, rtx, 4)):
        assert found(whole, rows, slices) == [], rows[0]
        assert found(whole, [(n, s, g, None, c, x) for n, s, g, _, c, x in rows], slices) == [], rows[0]
    # the +gfx mistyped 47 (188 // 4, within the one-slice bound) is refused at its row, named after the 1g.24gb
    gfx = found(188, [r if r[0] != "1g.24gb+gfx" else (*r[:5], 47) for r in rtx], 4)
    assert len(gfx) == 1 and gfx[0].startswith("catalog.gpus.0.mig.profiles.2.sms: 1g.24gb+gfx has 47 SMs, and 1g.24gb,"), gfx
    from alicerce.catalog import load_catalog

    tables = [gpu for gpu in load_catalog().gpus if gpu.mig is not None]
    assert len(tables) >= 8 and all(list(_mig_sms(g.mig, g.id, S.catalog.gpus[0].mig)) == [] for g in tables if g.mig)
