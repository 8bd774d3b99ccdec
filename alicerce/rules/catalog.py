"""The spec's own catalog: entries that are new, and instance types whose GPUs are known."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.catalog.models import Mig, MigProfile
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.paths import SpecPath

rules = RuleSet()


@rules.rule("AL285", "user-catalog-new", "The spec's own catalog entries use ids and aliases no other catalog entry has.")
def user_catalog_new(ctx: RuleContext) -> Iterable[Finding]:
    user = ctx.spec.catalog
    seen: dict[str, str] = {}  # lowercased GPU name -> the user GPU id that took it
    for i, gpu in enumerate(user.gpus):
        for j, name in enumerate((gpu.id, *gpu.aliases)):
            path = S.catalog.gpus[i].id if j == 0 else S.catalog.gpus[i].aliases[j - 1]
            known = ctx.catalog.gpu(name)
            if name.lower() in seen and seen[name.lower()] != gpu.id:
                yield Finding(path, f'"{name}" names two GPUs of the spec\'s catalog ({seen[name.lower()]} and {gpu.id})', None, name)
            elif known is not None and known.id not in ctx.catalog.user_ids:
                hint = f"use the built-in {known.id} (`alicerce catalog gpus`), or give this GPU an id of its own"
                yield Finding(path, f'"{name}" is already the built-in GPU {known.id}', hint, name)
            seen.setdefault(name.lower(), gpu.id)
    types: set[str] = set()
    for i, instance in enumerate(user.instance_types):
        path = S.catalog.instance_types[i].type
        if instance.type in types:
            yield Finding(path, f'instance type "{instance.type}" is declared twice in the spec\'s catalog', None, instance.type)
        elif not ctx.catalog.user_provided(instance.type):
            hint = "remove it: the built-in entry has its facts and sources (`alicerce catalog instances`)"
            yield Finding(path, f'"{instance.type}" is already a built-in instance type', hint, instance.type)
        types.add(instance.type)


@rules.rule(
    "AL286", "user-instance-gpu", "An instance type of the spec's catalog names a known GPU, and has GPUs exactly when it names one."
)
def user_instance_gpu(ctx: RuleContext) -> Iterable[Finding]:
    for i, instance in enumerate(ctx.spec.catalog.instance_types):
        if instance.gpu is None:
            if instance.gpus:
                yield Finding(
                    S.catalog.instance_types[i].gpus, f"{instance.type} has {instance.gpus} GPUs but names no gpu", "set gpu", instance.gpus
                )
            continue
        gpu = ctx.catalog.gpu(instance.gpu)
        if gpu is None:
            from alicerce.spec.errors import did_you_mean

            hint = did_you_mean(instance.gpu, ctx.catalog.gpu_names()) or "declare it under catalog.gpus"
            yield Finding(S.catalog.instance_types[i].gpu, f'unknown GPU "{instance.gpu}"', hint, instance.gpu)
        elif gpu.id != instance.gpu:
            yield Finding(S.catalog.instance_types[i].gpu, f'write the GPU\'s id "{gpu.id}", not an alias', f"gpu: {gpu.id}", instance.gpu)
        elif instance.gpus < 1:
            yield Finding(
                S.catalog.instance_types[i].gpus,
                f"{instance.type} names {gpu.id} but has {instance.gpus} GPUs",
                "at least 1",
                instance.gpus,
            )


@rules.rule(
    "AL287",
    "user-gpu-mig-sms",
    "A MIG profile's SMs of the spec's catalog are given with the GPU's, listed or countable on every profile once any is, "
    "its instances' SMs, listed or counted, fit in them, and twins (same compute and memory slices) list the same SMs.",
)
def user_gpu_mig_sms(ctx: RuleContext) -> Iterable[Finding]:
    """A profile's SMs are its share of the GPU's peak FLOP/s only against the GPU's own (Mig.compute_share): a 1g
    profile at 200 SMs on a GPU of 98 planned a slice twice the GPU, and SMs without mig.sms were silently dropped for
    compute slices / 7 (review sizreview27 R4). The maxCount instances of one profile run side by side on disjoint
    SMs, so a profile has at most mig.sms / maxCount (a 1g.24gb at 108 of 108 planned a 4g at 4x the GPU), and a
    profile without SMs is counted at its slices x the one-memory-slice 1g's (Mig.fallback_sms), which must fit too
    (review sizreview28 D1). One GPU has one basis: where some profile lists SMs, a profile neither listing nor countable
    is refused, not planned at slices / 7 beside them (review sizreview29 G2). The bound is per profile: an H100's
    two-memory-slice 1g.20gb has 26 SMs, above 132 / 7 but within 132 / 4; a one-memory-slice 1g is one compute slice,
    so its SMs x computeSlices fit too (review sizreview30 G1). A +me or +gfx twin has its profile's SMs: within the bound
    a mistyped twin was planned at its own share (review sizreview31 N4)."""
    for i, gpu in enumerate(ctx.spec.catalog.gpus):
        if gpu.mig is not None:
            yield from _mig_sms(gpu.mig, gpu.id, S.catalog.gpus[i].mig)


def _mig_sms(mig: Mig, gpu: str, path: SpecPath) -> Iterable[Finding]:
    unit = mig.sm_unit()
    # a unit that fails its own check is the one error: the counts made from it would repeat it
    unit_fits = unit is not None and unit.sms is not None and mig.sms is not None and _slice_fits(mig, unit)
    mixed = mig.mixed_basis()
    for j, profile in enumerate(mig.profiles):
        here = path.profiles[j]
        if profile.sms is None:
            if profile is mixed:
                yield Finding(here, f"{gpu} lists sms on some MIG profiles, and {profile.name} has none and no 1-slice profile "
                              "with one memory slice lists its sms to count them from: it would be planned at compute slices "
                              f"/ {mig.computeSlices} beside SM shares", "list sms on every profile, or on its "
                              "one-memory-slice 1g", profile.name)  # fmt: skip
            if unit_fits:
                yield from _counted_sms(mig, profile, gpu, here)
        elif mig.sms is None:
            yield Finding(here.sms, f"{profile.name}'s sms are its share of the GPU's, and {gpu} gives no mig.sms: "
                          "they change nothing", "set mig.sms (the SMs of the whole GPU), or remove this", profile.sms)  # fmt: skip
        elif profile.sms > mig.sms:
            yield Finding(here.sms, f"{profile.name} has {profile.sms} SMs, more than the {mig.sms} of the whole "
                          f"{gpu} (mig.sms)", f"at most {mig.sms}: the SM column of `nvidia-smi mig -lgip`",
                          profile.sms)  # fmt: skip
        elif profile.sms * profile.maxCount > mig.sms:
            yield Finding(here.sms, f"{profile.name}'s {profile.maxCount} instances (maxCount) at {profile.sms} SMs each need "
                          f"{profile.sms * profile.maxCount}, more than the {mig.sms} of the whole {gpu} (mig.sms): they run "
                          "on disjoint SMs", f"at most {mig.sms // profile.maxCount}: the SM column of `nvidia-smi mig -lgip`",
                          profile.sms)  # fmt: skip
        elif not _slice_fits(mig, profile):
            yield Finding(here.sms, f"{profile.name} is one compute slice (with one memory slice), and its {profile.sms} SMs x "
                          f"the {mig.computeSlices} compute slices of {gpu} make {profile.sms * mig.computeSlices}, more than its "
                          f"{mig.sms} (mig.sms): the other profiles are counted in these SMs", f"at most "
                          f"{mig.sms // mig.computeSlices}: the SM column of `nvidia-smi mig -lgip`", profile.sms)  # fmt: skip
        elif (twin := _twin(mig, profile)) is not None:
            yield Finding(here.sms, f"{profile.name} has {profile.sms} SMs, and {twin.name}, with the same {profile.slices} "
                          f"compute and {_memory_slices(mig, profile)} memory slices, has {twin.sms}: a +me or +gfx twin adds "
                          "media engines or graphics, not SMs", f"{twin.sms}, {twin.name}'s, or correct {twin.name}'s: the SM "
                          "column of `nvidia-smi mig -lgip`", profile.sms)  # fmt: skip


def _slice_fits(mig: Mig, profile: MigProfile) -> bool:
    """Whether a listed profile's SMs fit in the whole GPU's: x its maxCount instances (they run on disjoint SMs), and for
    a one-memory-slice 1g x the GPU's computeSlices too. That 1g is one compute slice's SMs, the unit the unlisted
    profiles are counted in (Mig.sm_unit), and a twin listed at maxCount 1 (1g.10gb+me) bounded it by nothing: at 132 of
    132 it planned a 1g as the whole GPU, at 26 (the 1g.20gb's copied) a 4g at 104 of 132 SMs where the lgip gives 64
    (review sizreview30 G1). Every published table meets it: A100 14 x 7 = 98 <= 108, H100 / H200 16 x 7 = 112 <= 132,
    B200 18 x 7 = 126 <= 148, A30 14 x 4 = 56 of 56."""
    sms, whole = profile.sms, mig.sms
    if sms is None or whole is None:
        return True
    per_slice = profile.slices == 1 and mig.one_memory_slice(profile)
    return sms * max(profile.maxCount, 1) <= whole and (not per_slice or sms * mig.computeSlices <= whole)


def _memory_slices(mig: Mig, profile: MigProfile) -> int:
    """The profile's memory slices: its memorySlices, else its memory share of the GPU's slices, rounded (an H100's
    1g.10gb at 9.75 of 79 GiB is one of 8, its 1g.20gb two)."""
    if profile.memorySlices is not None:
        return profile.memorySlices
    return round(mig.memory_share(profile) * (mig.memorySlices or mig.computeSlices))


def _twin(mig: Mig, profile: MigProfile) -> MigProfile | None:
    """The twin this profile's SMs should equal: the first profile with the same compute and memory slices that lists
    SMs, where they differ from this one's (one reference for every twin, so a mistyped twin is the one error, not the
    rows after it too). A twin (1g.10gb and 1g.10gb+me) is the same slice with media engines or graphics added, at the
    same SMs: the MIG User Guide's tables give a +me the fraction of SMs of its profile
    (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html: A30 1g.6gb and 1g.6gb+me 1/4
    each), and so do the lgips published (H200 1g.18gb and +me at 16, NVIDIA/mig-parted #120; RTX PRO 6000 1g.24gb,
    +me, +gfx, +me.all at 46, GoogleCloudPlatform/container-engine-accelerators #564). The bound of _slice_fits leaves a
    twin mig.sms // computeSlices, above the lgip's (B200 21 where it gives 18, +17%), and a twin's SMs are its share of
    the GPU's FLOP/s (review sizreview31 N4)."""
    key = (profile.slices, _memory_slices(mig, profile))
    for other in mig.profiles:
        if other is profile:
            return None
        if other.sms is not None and (other.slices, _memory_slices(mig, other)) == key:
            return other if other.sms != profile.sms else None
    return None


def _counted_sms(mig: Mig, profile: MigProfile, gpu: str, here: SpecPath) -> Iterable[Finding]:
    """A counted profile's maxCount instances run on disjoint SMs like a listed one's (review sizreview29 G1: a 1g twin at
    132 SMs counted its seven-instance sibling at 132 each, 924 of 132)."""
    unit, counted, whole = mig.sm_unit(), mig.fallback_sms(profile), mig.sms
    instances = max(profile.maxCount, 1)
    if unit is None or counted is None or whole is None or counted * instances <= whole:
        return
    need = f"count {counted}" if instances == 1 else f"count {counted} an instance, {counted * instances} for its {instances} (maxCount)"
    yield Finding(here, f"{profile.name} lists no sms, and its {profile.slices} compute slices x the {unit.name}'s {unit.sms} "
                  f"SMs {need}, more than the {whole} of the whole {gpu} (mig.sms)",
                  f"give {profile.name} its sms (the SM column of `nvidia-smi mig -lgip`)", profile.name)  # fmt: skip
