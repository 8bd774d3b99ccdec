"""How long a request waits for its prefill on a replica that prefills other requests too.

A replica's prefills share its compute: a prompt that arrives while another is prefilling waits for it (vLLM's
chunked prefill batches prompts into the same steps, which stretches each by the other's work; the total is the same).
With requests arriving at random (Poisson) at ``arrival`` a second and each prefill taking ``S`` seconds, the replica's
prefill work is an M/D/1 queue at utilisation rho = arrival x S. Its mean wait is rho x S / (2 (1 - rho))
(Pollaczek-Khinchine; L. Kleinrock, Queueing Systems vol. 1, 1975, sec. 5.6); a share rho of requests waits at all.
The tail is taken as exponential with the conditional mean S / (2 (1 - rho)): P(wait > t) ~ rho exp(-2 (1 - rho) t / S),
the usual approximation of an M/G/1 wait tail. A latency target's percentile then bounds the share allowed past it.
"""

from __future__ import annotations

import math


def share_waiting_longer(arrival: float, prefill_seconds: float, budget_seconds: float) -> float:
    """The share of requests that wait more than ``budget_seconds`` for their prefill to start (1 when saturated)."""
    rho = arrival * prefill_seconds
    if rho >= 1:
        return 1.0
    if budget_seconds <= 0:
        return rho
    return rho * math.exp(-2 * (1 - rho) * budget_seconds / prefill_seconds)


def replicas_within(peak_rps: float, prefill_seconds: float, budget_seconds: float, allowed: float, start: int) -> int:
    """The fewest replicas, from ``start``, at which no more than ``allowed`` of requests wait past the budget."""
    if share_waiting_longer(peak_rps / start, prefill_seconds, budget_seconds) <= allowed:
        return start
    low, high = start, start
    while share_waiting_longer(peak_rps / high, prefill_seconds, budget_seconds) > allowed:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if share_waiting_longer(peak_rps / middle, prefill_seconds, budget_seconds) > allowed:
            low = middle
        else:
            high = middle
    return high
