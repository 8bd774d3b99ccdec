"""The on-prem target's rules: fabrics that say their transport."""

from __future__ import annotations

from collections.abc import Iterable

from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.models import OnpremSite

rules = RuleSet()


@rules.rule("AL242", "fabric-target", "A fabric used at an on-prem site says whether it is InfiniBand or RoCE.")
def fabric_target(ctx: RuleContext) -> Iterable[Finding]:
    fabrics = {f.name: (i, f) for i, f in enumerate(ctx.spec.networks.fabrics)}
    for i, pool in ctx.indexed_pools():
        if pool.fabric is None or pool.fabric not in fabrics:
            continue
        f, fabric = fabrics[pool.fabric]
        if isinstance(ctx.pool_site(pool), OnpremSite) and fabric.onprem is None:
            yield Finding(
                S.networks.fabrics[f],
                f'fabric "{fabric.name}" is used by on-prem pool "{pool.name}" but has no onprem section',
                "add onprem: {technology: infiniband} (or roce)",
                resource=fabric.name,
            )
        if pool.onprem is not None and pool.onprem.hcas is not None and pool.onprem.hcas < fabric.rails:
            yield Finding(
                S.node_pools[i].onprem.hcas,
                f"{pool.onprem.hcas} adapters per host cannot serve {fabric.rails} rails",
                f"set hcas to at least {fabric.rails} or lower the fabric's rails",
                pool.onprem.hcas,
            )
