"""How long a request waits for its prefill on a replica that prefills other requests too.

A replica's prefills share its compute: a prompt that arrives while another is prefilling waits for it (vLLM's
chunked prefill batches prompts into the same steps, which stretches each by the other's work; the total is the same).
With requests arriving at random (Poisson) at ``arrival`` a second and each prefill taking ``S`` seconds, the replica's
prefill work is an M/D/1 queue at utilisation rho = arrival x S, whose waiting-time distribution is known exactly
(A. K. Erlang 1909; G. J. Franx, "A simple solution for the M/D/c waiting time distribution", Oper. Res. Letters 29
(2001) 221-229, and C. D. Crommelin 1932, at c = 1). Erlang's closed form
P(W <= t) = (1 - rho) sum_{k <= t/S} [arrival (k S - t)]^k / k! exp(-arrival (k S - t)) alternates in sign and its
terms grow like exp(arrival x t), so double precision loses it at high load and long budgets (rho 0.95 at 40 prefills:
terms of 1e16). The equivalent form used here has positive terms only: with t = k S + u (0 <= u < S), a request waits
at most t exactly when the prompts queued (not in service) at S - u before its arrival plus those arriving in between
number at most k, so P(W <= t) = sum_{j <= k} Poisson(arrival (S - u))[j] x P(N <= k - j + 1), N the number of prompts
at the replica (in service or queued) at a random time. N's distribution is that of the M/G/1 embedded chain at
departures (D. G. Kendall 1953; the same at a random time for Poisson arrivals), computed from the chain's cut
equations, whose terms are all positive: pi_j e^-rho = pi_0 A(j) + sum_{1 <= i < j} pi_i A(j - i + 1), A(i) the
probability that i or more prompts arrive during one prefill. A deterministic prefill bounds the wait more tightly
than an exponential tail: a lone request ahead delays a prompt by at most one prefill, so waits past S need two or more
ahead (the exponential approximation used before was 2-3.5x pessimistic there and low below one prefill: review
sizreview18 F1). A latency target's percentile then bounds the share allowed past it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

# Poisson terms below this add nothing a 1% or 5% allowance can see (and keep the sums a few dozen terms long)
_NEGLIGIBLE = 1e-18


def share_waiting_longer(arrival: float, prefill_seconds: float, budget_seconds: float) -> float:
    """The share of requests that wait more than ``budget_seconds`` for their prefill to start (1 when saturated)."""
    rho = arrival * prefill_seconds
    if rho >= 1:
        return 1.0
    if budget_seconds <= 0:
        return rho
    if rho <= 0:
        return 0.0
    lattice = budget_seconds / prefill_seconds
    whole = math.floor(lattice)
    if _kingman_bound(rho, lattice) < _NEGLIGIBLE:  # past any allowance a plan holds: no need for the long sum
        return 0.0
    within = _queue_cdf(rho, whole + 1)
    # arrivals in the (S - u) before the request, u the budget's part of a prefill
    mean = arrival * (prefill_seconds - (budget_seconds - whole * prefill_seconds))
    total, term, j = 0.0, math.exp(-mean), 0
    while j <= whole:
        total += term * within[whole - j + 1]
        j += 1
        term *= mean / j
        if term < _NEGLIGIBLE:
            break
    return min(1.0, max(0.0, 1.0 - total))


def _kingman_bound(rho: float, prefills: float) -> float:
    """Kingman's bound P(W > t) <= exp(-g t) (J. F. C. Kingman 1970), g S the positive root of rho (e^x - 1) = x:
    it lets a long budget skip the lattice sum once the wait past it is negligible."""

    def excess(x: float) -> float:  # negative between 0 and the root (convex, slope rho - 1 at 0)
        return rho * math.expm1(x) - x

    high = 1.0
    while excess(high) <= 0:
        high *= 2
    low = 0.0
    for _ in range(60):
        middle = (low + high) / 2
        if excess(middle) < 0:
            low = middle
        else:
            high = middle
    return math.exp(-low * prefills)


def _queue_cdf(rho: float, top: int) -> list[float]:
    """P(N <= n) for n = 0..top: prompts at an M/D/1 replica (in service or queued) at a random time."""
    # a_i: i prompts arrive during one prefill (Poisson rho); tails[i]: i or more
    pmf = [math.exp(-rho)]
    while pmf[-1] > _NEGLIGIBLE or len(pmf) <= 2:
        pmf.append(pmf[-1] * rho / len(pmf))
    tails = [0.0] * (len(pmf) + 1)
    for i in range(len(pmf) - 1, -1, -1):
        tails[i] = tails[i + 1] + pmf[i]
    width = len(pmf)

    def tail(i: int) -> float:
        return tails[i] if i < width else 0.0

    pi = [1.0 - rho]
    for j in range(1, top + 1):
        flow = pi[0] * tail(j) + sum(pi[i] * tail(j - i + 1) for i in range(max(1, j - width), j))
        pi.append(flow / pmf[0])
    cdf, running = [], 0.0
    for p in pi:
        running += p
        cdf.append(min(1.0, running))
    return cdf


def share_in_prefill_steps(arrival: float, prefill_seconds: float, step_seconds: float, chunks: int) -> float:
    """The share of a replica's inter-token intervals that fall in a step carrying a prompt's prefill chunk.

    vLLM V1 schedules the running sequences' decodes and the waiting prompts' prefill chunks into one step (chunked
    prefill, a token budget a step: vllm/v1/core/sched/scheduler.py), and records one inter-token interval per running
    sequence per step (vllm/v1/metrics/stats.py IterationStats.update_from_output), so a step that prefills stalls every
    running sequence by the chunk's work. Each of ``arrival`` prompts a second takes ``chunks`` such steps; the replica
    spends arrival x (chunks x step + prefill) of each second in them and decodes the rest in ``step_seconds`` steps.
    Every step records the same running batch, so the share of intervals is the share of steps:
    arrival x chunks / (arrival x chunks + (1 - arrival x (chunks x step + prefill)) / step). Prompts that share a step
    are counted as separate steps (a little pessimistic at high arrival rates; review sizreview18 F4's simulation)."""
    slow = arrival * chunks
    busy = arrival * (chunks * step_seconds + prefill_seconds)
    if busy >= 1:
        return 1.0
    return slow / (slow + (1 - busy) / step_seconds)


def fewest_replicas(peak_rps: float, share: Callable[[float], float], allowed: float, start: int) -> int:
    """The fewest replicas, from ``start``, at which ``share`` (of each replica's arrival rate) is at most ``allowed``;
    ``share`` falls as the arrival rate does."""
    if share(peak_rps / start) <= allowed:
        return start
    low, high = start, start
    while share(peak_rps / high) > allowed:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if share(peak_rps / middle) > allowed:
            low = middle
        else:
            high = middle
    return high
