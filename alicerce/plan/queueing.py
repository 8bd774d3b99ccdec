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
from dataclasses import dataclass
from functools import cache

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


@dataclass(frozen=True)
class _Chain:
    """The stationary distribution of the prompt tokens waiting at an engine step's start (share_of_slow_steps)."""

    unit: float  # tokens a lattice step
    prompt: int  # lattice steps a prompt
    room: int  # lattice steps a step's budget for prompts
    idle: float  # the chance a decode step with no prompt waiting sees one arrive: an idle stretch lasts 1 / idle steps
    mass: tuple[tuple[int, float], ...]  # (tokens waiting in lattice steps, share of the chain's visits)


@cache  # a plan asks the same replica's chain at the same rates for each degree, quarter and target it weighs
def _waiting_tokens(arrival: float, prompt_tokens: int, room_tokens: int, step_seconds: float, token_seconds: float) -> _Chain:
    """The chain of share_of_slow_steps: the tokens waiting at each step's start, a step carrying min(waiting, room)."""
    unit = _lattice(prompt_tokens, room_tokens)
    prompt, room = max(1, round(prompt_tokens / unit)), max(1, round(room_tokens / unit))
    top = room + 8 * prompt  # past it the mass is lumped at the top (a longer queue is as slow)
    # an empty queue runs decode steps until a step in which prompts arrive: 1 / q steps, q = 1 - e^(-arrival x step),
    # then k >= 1 prompts with probability Poisson(k) / q; the chain visits it once per idle stretch
    idle = -math.expm1(-arrival * step_seconds)
    moves: dict[int, list[tuple[int, float]]] = {}

    def leaving(x: int) -> list[tuple[int, float]]:  # (next state, probability) from x
        carried = min(x, room)
        mean = arrival * (step_seconds + carried * unit * token_seconds)
        term, k, left = math.exp(-mean), 0, 1.0
        if x == 0:  # the step in which the first prompts arrive: at least one
            term, k = term * mean / idle, 1
        out: list[tuple[int, float]] = []
        while True:
            y = min(top, x - carried + k * prompt)
            left -= term
            if left < 1e-12 or k > 200:  # the rest of the Poisson tail goes to the last state
                out.append((y, term + max(0.0, left)))
                return out
            out.append((y, term))
            k += 1
            term *= mean / k

    mass: dict[int, float] = {0: 1.0}
    for sweep in range(4000):
        after: dict[int, float] = {}
        for x, p in mass.items():
            if x not in moves:
                moves[x] = leaving(x)
            for y, q in moves[x]:
                after[y] = after.get(y, 0.0) + p * q
        # the lazy chain (a fifth stays put) has the same stationary distribution and no period: a long prompt's chunks
        # cycle through the same states, where plain iteration oscillates
        for x, p in mass.items():
            after[x] = 0.8 * after.get(x, 0.0) + 0.2 * p
        for x in after.keys() - mass.keys():
            after[x] *= 0.8
        kept = {x: p for x, p in after.items() if p > _NEGLIGIBLE}
        total = sum(kept.values())
        kept = {x: p / total for x, p in kept.items()}
        done = sweep % 8 == 7 and sum(abs(kept.get(x, 0.0) - mass.get(x, 0.0)) for x in kept.keys() | mass.keys()) < 1e-8
        mass = kept
        if done:
            break
    return _Chain(unit, prompt, room, idle, tuple(sorted(mass.items())))


def _lattice(prompt_tokens: int, room_tokens: int) -> float:
    """Tokens a lattice step of the prompt-token chain: the shorter of a prompt and the room in 16 to 32 equal steps,
    the count that puts the longer nearest a whole number of them (1,500 and 2,042 tokens: 1,500 / 17, room 23.14)."""
    short, long = min(prompt_tokens, room_tokens), max(prompt_tokens, room_tokens)
    n = min(range(16, 33), key=lambda k: abs(long * k / short - round(long * k / short)) / (long * k / short))
    return short / n


@cache  # a plan asks the same replica's share at the same rates for each degree and quarter it weighs
def share_of_slow_steps(  # noqa: PLR0917 - the replica's step and its prompts, each needed
    arrival: float, prompt_tokens: int, room_tokens: int, step_seconds: float, token_seconds: float, target: float
) -> float:
    """The share of a replica's engine steps that outlast ``target`` seconds, every prompt's prefill chunks packed into
    the steps as vLLM V1 packs them.

    Each step decodes the running sequences first and then spends the rest of its token budget, ``room_tokens``
    (max-num-batched-tokens less the decodes), on the waiting prompts' tokens, oldest first, several prompts' chunks in
    one step where they fit (vllm/v1/core/sched/scheduler.py, schedule(): the running loop, then the waiting loop, while
    token_budget > 0; vLLM's "Optimization and Tuning" guide, chunked prefill: decodes are batched first, pending
    prefills fill the rest of max_num_batched_tokens and the one that does not fit is chunked; SchedulerConfig:
    max_num_batched_tokens is the tokens processed in a single iteration, docs.vllm.ai v0.10.2 vllm.config.scheduler).
    A step carrying c prompt tokens lasts ``step_seconds + c x token_seconds``, and every running
    sequence records it as one inter-token interval (vllm/v1/metrics/stats.py), so the share of intervals past the
    target is the share of steps that carry more than (target - step) / token_seconds prompt tokens. Counting each
    prompt's chunk as a step of its own (share_in_prefill_steps) missed the steps where short prompts' chunks add up,
    and a step with a long prompt's chunk and the next prompt's (review sizreview19 F1).

    The prompt tokens waiting at a step's start form a Markov chain over steps: a step carrying c = min(x, room) of
    the x waiting lasts D(c), during which Poisson(arrival x D(c)) prompts of ``prompt_tokens`` arrive, so
    x' = x - c + prompt_tokens x Poisson(arrival x D(c)). Its stationary distribution, by iteration from an empty queue
    on a lattice of 16 to 32 steps of the shorter of a prompt and the room (the count that rounds the longer least),
    gives the share of steps with c past the bound; an empty queue's run of decode steps is one state weighted by its
    expected length. 1 where the prompts' work fills the replica. Against a discrete-event simulation of that scheduler
    it is within a few percent of the share (5.23% against 5.22% for 300-token prompts at 20 a second on an 8B H100
    replica, 1.56% against 1.63% for the reference chat-70b at 5 replicas); for prompts of several chunks at a batch
    below one it is some 15% low, the simulation's intervals falling more often in the steps that follow a prefill."""
    if step_seconds > target:
        return 1.0
    if arrival <= 0:
        return 0.0
    bound = (target - step_seconds) / token_seconds  # prompt tokens a step may carry within the target
    if room_tokens <= bound:
        return 0.0  # even a full step stays within it
    # utilisation: the prompts' tokens against what full steps move a second
    if arrival * prompt_tokens * (step_seconds + room_tokens * token_seconds) / room_tokens >= 1:
        return 1.0
    chain = _waiting_tokens(arrival, prompt_tokens, room_tokens, step_seconds, token_seconds)
    steps = sum(p / chain.idle if x == 0 else p for x, p in chain.mass)  # an idle stretch's steps, each a decode step
    return sum(p for x, p in chain.mass if min(x, chain.room) * chain.unit > bound) / steps


def _poisson_tail(mean: float, k: int) -> float:
    """P(Poisson(mean) >= k)."""
    if k <= 0:
        return 1.0
    term = total = math.exp(-mean)
    for j in range(1, k):
        term *= mean / j
        total += term
    return max(0.0, 1.0 - total)


# where in the step running at its arrival a prompt lands: the midpoints of eight equal slices of it
_LANDINGS = tuple((i + 0.5) / 8 for i in range(8))


@cache  # fewest_replicas asks the same rates again for each degree and quarter
def share_past_first_token(  # noqa: PLR0917 - the replica's step and its prompts, each needed
    arrival: float, prompt_tokens: int, room_tokens: int, step_seconds: float, token_seconds: float, target: float,
    decoding: float = 1.0,
) -> float:  # fmt: skip
    """The share of prompts whose first token comes later than ``target`` seconds after they arrive, the steps composed
    as vLLM V1 composes them (review sizreview19 F2).

    Each step decodes the running sequences and spends the rest of its budget, ``room_tokens``, on the waiting prompts'
    tokens oldest first (share_of_slow_steps), and a prompt's first token comes at the end of the step that carries its
    last prompt token. A prompt arriving at a random time lands in a step that started with x tokens waiting (the chain
    of share_of_slow_steps, weighted by the step's length: a long step catches more arrivals) with u of it left (uniform:
    eight points); the k prompts that arrived earlier in that step and the x - c the step could not carry are ahead of
    it, B tokens, so it waits u, then ceil((B + prompt) / room) - 1 full steps (step + room x token_seconds each), then
    its final step, which carries its own last tokens and, where prompts arrived behind it meanwhile, their first
    chunks up to the room. That last part is what an M/D/1 of whole prompts misses: a step that finishes a prompt also
    starts the next (the reviewer's chat-70b case, 545 tokens more), while a prompt that arrives behind a busy queue has
    its first tokens carried in the step ahead of it. Against a discrete-event simulation of that scheduler it matches
    within the simulation's noise: 2.47/1.72/1.32/1.00% past 800 ms for the reference chat-70b at 5/6/7/8 replicas
    simulated, 2.24/1.58/1.18/0.87% here (the simulation's batch also swells after a burst of prompts, which a mean
    batch does not). ``decoding`` is the chance some sequence is decoding when no prompt waits: a prompt arriving at an
    idle engine starts at once. 1 where the prompts' work fills the replica."""
    full_seconds = step_seconds + room_tokens * token_seconds
    if arrival * prompt_tokens * full_seconds / room_tokens >= 1:
        return 1.0
    if arrival <= 0:
        return 0.0
    chain = _waiting_tokens(arrival, prompt_tokens, room_tokens, step_seconds, token_seconds)
    unit, room, prompt = chain.unit, chain.room, chain.prompt
    full = step_seconds + room * unit * token_seconds
    weight = late = 0.0
    for x, p in chain.mass:
        carried = min(x, room)
        length = step_seconds + carried * unit * token_seconds
        share = (p / chain.idle if x == 0 else p) * length  # the time the replica spends in such steps
        weight += share
        for landing in _LANDINGS:
            left = landing * length  # of the step running at its arrival
            miss = _late_behind(arrival, x - carried, left, length - left, prompt, room, unit, full, step_seconds,
                                token_seconds, target)  # fmt: skip
            if x == 0:  # no prompt waits: the engine may be idle, and the prompt starts at once
                miss = decoding * miss + (1 - decoding) * _late_behind(arrival, 0, 0.0, 0.0, prompt, room, unit, full,
                                                                       step_seconds, token_seconds, target)  # fmt: skip
            late += share * miss / len(_LANDINGS)
    return min(1.0, late / weight)


def _late_behind(  # noqa: PLR0917 - a landing point and the replica's steps
    arrival: float, waiting: int, left: float, elapsed: float, prompt: int, room: int, unit: float, full: float,
    step_seconds: float, token_seconds: float, target: float,
) -> float:  # fmt: skip
    """The chance a prompt landing with ``left`` s of the running step to go, ``waiting`` lattice tokens the step does
    not carry, misses the target: over the prompts that arrived in the ``elapsed`` part of the step before it, and those
    arriving behind it before its final step starts."""
    mean = arrival * elapsed
    term, k, rest, miss = math.exp(-mean), 0, 1.0, 0.0
    while True:
        ahead = waiting + k * prompt
        steps = math.ceil((ahead + prompt) / room)
        start = left + (steps - 1) * full  # its final step starts
        tail = ahead + prompt - (steps - 1) * room
        base = start + step_seconds + tail * unit * token_seconds
        if base > target:
            miss += term
        elif (room - tail) * unit * token_seconds > target - base:  # enough prompts behind it fill its step past the target
            behind = math.floor((target - base) / (prompt * unit * token_seconds)) + 1
            miss += term * _poisson_tail(arrival * start, behind)
        rest -= term
        if rest < 1e-12 or k > 200:
            if rest > 0:
                miss += rest  # the Poisson tail's prompts ahead: late
            break
        k += 1
        term *= mean / k
    return miss
