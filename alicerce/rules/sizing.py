"""Sizing inputs: the `costs` section names real owned sites and rented pools; MoE routing is consistent."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.spec.errors import did_you_mean, one_of

rules = RuleSet()


def _deleted_here(ctx: RuleContext, section: str) -> set[str]:
    """Names this environment's overrides delete from a named list (costs may still price them elsewhere)."""
    items: Any = (ctx.env.overrides or {}).get(section) or []
    return {i["name"] for i in items if isinstance(i, dict) and i.get("$patch") == "delete" and isinstance(i.get("name"), str)}


@rules.rule("AL350", "owned-costs-key", "Owned sites' costs are listed under costs.owned, or its old name costs.onprem: not both.")
def owned_costs_key(ctx: RuleContext) -> Iterable[Finding]:
    costs = ctx.spec.costs
    if costs.owned and costs.onprem:
        yield Finding(S.costs.onprem, "costs.onprem is the old name of costs.owned: the spec gives both", "move its entries under owned",
                      key=True)  # fmt: skip


@rules.rule("AL281", "cost-references", "Cost inputs name an owned site of the environment and pools of the right kind.")
def cost_references(ctx: RuleContext) -> Iterable[Finding]:
    costs = ctx.spec.costs
    pools = {p.name: p for p in ctx.resolved.pools}
    known_pools = set(ctx.pools) | _deleted_here(ctx, "nodePools")
    all_sites = ctx.every_site
    owned = [(S.costs.owned[i], entry) for i, entry in enumerate(costs.owned)]
    for path, entry in [*owned, *((S.costs.onprem[i], entry) for i, entry in enumerate(costs.onprem))]:
        if entry.site not in all_sites:
            yield Finding(path.site, f'no site "{entry.site}" in any environment', did_you_mean(entry.site, all_sites), entry.site)
            continue
        if entry.site not in ctx.sites:
            continue  # another environment's site
        site = ctx.resolved.site(entry.site)
        if not site.capabilities.owned:
            yield Finding(path.site, f"site {entry.site} is rented ({site.capabilities.label}): price its pools under costs.cloud",
                          "move the entry to costs.cloud", entry.site)  # fmt: skip
            continue
        for j, pool_costs in enumerate(entry.pools):
            pool = pools.get(pool_costs.pool)
            if pool_costs.pool not in known_pools:
                yield Finding(path.pools[j].pool, f'no node pool "{pool_costs.pool}"',
                              did_you_mean(pool_costs.pool, known_pools) or one_of(known_pools), pool_costs.pool)  # fmt: skip
            elif pool is not None and pool.site.name != entry.site:
                yield Finding(path.pools[j].pool, f"pool {pool.name} is at site {pool.site.name}, not {entry.site}",
                              f"list it under the entry for {pool.site.name}", pool_costs.pool)  # fmt: skip
    for i, cloud in enumerate(costs.cloud):
        path = S.costs.cloud[i]
        pool = pools.get(cloud.pool)
        if cloud.pool not in known_pools:
            yield Finding(
                path.pool, f'no node pool "{cloud.pool}"', did_you_mean(cloud.pool, known_pools) or one_of(known_pools), cloud.pool
            )
            continue
        if pool is None:
            continue  # deleted in this environment
        if pool.owned:
            yield Finding(path.pool, f"pool {pool.name} is owned, not rented: its costs go under costs.{costs.owned_key}", None, cloud.pool)
            continue
        if cloud.reserved_nodes is not None:
            kind = pool.spec.aws.capacity_type if pool.spec.aws else "on-demand"
            if kind != "capacity-reservation":
                yield Finding(path.reserved_nodes, f"pool {pool.name} buys {kind} capacity, not a capacity reservation",
                              "remove reservedNodes", cloud.reserved_nodes)  # fmt: skip
            elif cloud.reserved_nodes > pool.spec.scaling.max:
                yield Finding(path.reserved_nodes, f"{cloud.reserved_nodes} reserved instances but the pool scales to "
                              f"{pool.spec.scaling.max}: the rest would be paid for and never used", "lower it or raise scaling.max",
                              cloud.reserved_nodes)  # fmt: skip


@rules.rule("AL282", "moe-experts", "Expert routing belongs to mixture-of-experts models and routes to experts that exist.")
def moe_experts(ctx: RuleContext) -> Iterable[Finding]:
    for i, w in enumerate(ctx.spec.workloads):
        model = w.model
        if model is None or model.experts is None:
            continue
        path = S.workloads[i].model.experts
        experts = model.experts
        if model.architecture != "moe":
            yield Finding(path, "experts apply to a mixture-of-experts model", "set architecture: moe", key=True, resource=w.name)
        if experts.per_token > experts.total:
            yield Finding(path.per_token, f"each token is routed to {experts.per_token} of only {experts.total} experts",
                          "perToken must not exceed total", experts.per_token, resource=w.name)  # fmt: skip
        if experts.layers is not None and model.layers is not None and experts.layers > model.layers:
            yield Finding(path.layers, f"{experts.layers} expert layers in a {model.layers}-layer model", None, experts.layers,
                          resource=w.name)  # fmt: skip
