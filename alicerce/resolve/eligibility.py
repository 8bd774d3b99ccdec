"""Which pools may run a workload: the purposes that run its kind, and the pools its team holds quota on.

Decided once here, for the placement (plan.placement compares every eligible pool) and for the rules that check a
workload before any placement (AL388 reads the GPUs of the pools the placement may pick).
"""

from __future__ import annotations

from alicerce.catalog.models import Gpu
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool
from alicerce.spec.models import Workload

# which pool purposes may run which workload kind, in order of preference
PURPOSES = {
    "training": ("training",),
    "fine-tuning": ("fine-tuning", "training"),
    "inference": ("inference",),
    "batch-inference": ("batch-inference", "inference"),
    "data-prep": ("data-prep",),
}


def quota_pools(w: Workload, platform: ResolvedPlatform) -> set[str] | None:
    """The GPU pools ``w``'s team holds quota on, or None where its team declares no quota at all (nothing to follow).

    Kueue admits a team's GPU job only on a pool its ClusterQueue has a flavor for, and that is a pool of its
    quotas (alicerce.emit.kube.kueue): elsewhere the job waits for ever."""
    team = next((t for t in platform.teams if t.name == w.team), None)
    if team is None or not team.quotas:
        return None
    return {q.pool for q in team.quotas}


def eligible(w: Workload, platform: ResolvedPlatform, pinned: Gpu | None) -> list[tuple[int, ResolvedPool]]:
    """(purpose rank, pool) of every pool that may run ``w``: CPU pools for data preparation, else the GPU pools
    of the right purpose (and accelerator, when pinned) its team holds quota on."""
    allowed = quota_pools(w, platform)
    out = []
    for rank, purpose in enumerate(PURPOSES[w.kind]):
        for pool in platform.pools:
            if pool.spec.purpose != purpose:
                continue
            if w.kind == "data-prep":
                if pool.gpu is None:
                    out.append((rank, pool))
                continue
            if pool.gpu is None or (pinned is not None and pool.gpu.id != pinned.id):
                continue
            if allowed is not None and pool.name not in allowed:
                continue
            out.append((rank, pool))
    return out
