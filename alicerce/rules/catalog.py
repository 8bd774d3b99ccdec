"""The spec's own catalog: entries that are new, and instance types whose GPUs are known."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.rules.base import Finding, RuleContext, RuleSet, S

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


@rules.rule("AL287", "user-gpu-mig-sms", "A MIG profile's SMs of the spec's catalog are given with the GPU's, and are at most them.")
def user_gpu_mig_sms(ctx: RuleContext) -> Iterable[Finding]:
    """A profile's SMs are its share of the GPU's peak FLOP/s only against the GPU's own (Mig.compute_share): a 1g
    profile at 200 SMs on a GPU of 98 planned a slice twice the GPU, and SMs without mig.sms were silently dropped for
    compute slices / 7 (review sizreview27 R4)."""
    for i, gpu in enumerate(ctx.spec.catalog.gpus):
        if gpu.mig is None:
            continue
        path = S.catalog.gpus[i].mig
        for j, profile in enumerate(gpu.mig.profiles):
            if profile.sms is None:
                continue
            if gpu.mig.sms is None:
                yield Finding(path.profiles[j].sms, f"{profile.name}'s sms are its share of the GPU's, and {gpu.id} gives no mig.sms: "
                              "they change nothing", "set mig.sms (the SMs of the whole GPU), or remove this", profile.sms)  # fmt: skip
            elif profile.sms > gpu.mig.sms:
                yield Finding(path.profiles[j].sms, f"{profile.name} has {profile.sms} SMs, more than the {gpu.mig.sms} of the whole "
                              f"{gpu.id} (mig.sms)", f"at most {gpu.mig.sms}: the SM column of `nvidia-smi mig -lgip`",
                              profile.sms)  # fmt: skip
