"""Adaptive batch sizing (``spark.kubernetes.allocation.batch.adaptive``) as a pure decision.

Additive increase, multiplicative decrease, as TCP's congestion control: the first round creates
``batch.size`` pods; while every create of a round succeeds and the round's create latency stays within
a bound, the next batch doubles (slow start) up to the threshold, then grows by ``batch.size`` a round.
A 429, a 5xx, a timeout or a latency above the bound halves the batch (and the threshold), and no create
is sent before the server's ``Retry-After`` has passed. A round whose creates all went well may start
the next one at once instead of waiting out ``batch.delay``: that is where the speed comes from. After
trouble, the next round waits the full delay (or longer, when Retry-After asks).

A 429 from API Priority and Fairness (it names the priority level that refused) says the driver's level
has no seat free: a limit on requests in flight, not on their rate. When every refusal of a round is one
and it had more than one create in flight, the creates in flight are halved, and the batch, and
back-to-back rounds, are kept (after the Retry-After). ``CAP_HOLD`` seconds after the cap was set or last
grown, a round that went well with as many creates in flight as the cap grows it by one, and so on back to
no cap: the other flows that filled the level's seats may have gone. A refused probe halves the cap
again, which then holds for another ``CAP_HOLD``. At one
create in flight, an APF refusal is handled as any other refusal.

A refusal by the server (429, 5xx, a timeout) also switches to *paced* rounds: one round per
``batch.delay``, so that the batch is a rate the server can be held to (back-to-back rounds run at
whatever speed the machine allows, whatever their size), with few creates in flight (each create in
flight when the server starts refusing is one more refusal), growing by a quarter a round. Pacing ends
once the batch has grown to twice the size that was refused: the pushback was passing.

Everything here is immutable inputs to a new state; the allocator measures, this module decides.
"""

from __future__ import annotations

import attrs

LATENCY_FLOOR = 0.25
"""A round's median create latency under this (seconds) is never "rising": noise on a busy machine."""

LATENCY_FACTOR = 4.0
"""A median create latency above this many times the usual one (and the floor) counts as congestion."""

MAX_BATCH = 1000
"""The most pods one adaptive round asks for, whatever the ramp says."""

MAX_CONCURRENCY = 8
"""The most creates in flight at once when the concurrency is automatic (the client's pool holds them)."""

PACED_CONCURRENCY = 2
"""Creates in flight in paced rounds (automatic concurrency)."""

CAP_HOLD = 30.0
"""Seconds a creates-in-flight cap set by APF 429s holds before it may grow by one (see grown_cap)."""


@attrs.frozen
class AdaptiveSettings:
    """What the sizing is built from: ``initial`` is ``batch.size``; ``concurrency`` 0 is automatic."""

    initial: int = 20
    batch_delay: float = 1.0
    concurrency: int = 0
    maximum: int = MAX_BATCH
    latency_floor: float = LATENCY_FLOOR
    latency_factor: float = LATENCY_FACTOR

    def __attrs_post_init__(self) -> None:
        if self.initial < 1 or self.maximum < 1:
            raise ValueError("AdaptiveSettings: initial and maximum must be at least 1")


@attrs.frozen
class RoundOutcome:
    """What became of one round's creates, as the allocator measured them.

    ``latencies``: seconds each answered create took (successes and refusals alike). ``throttled``:
    answered 429; ``server_errors``: 5xx; ``timeouts``: no answer (connection error or timeout).
    ``retry_after``: the longest Retry-After the server asked for (None: it asked for none).
    ``flow_controlled``: the 429s that named an API Priority and Fairness priority level;
    ``concurrency``: the creates the round allowed in flight (0: unknown).
    """

    finished_at: float
    attempted: int
    succeeded: int
    throttled: int = 0
    server_errors: int = 0
    timeouts: int = 0
    retry_after: float | None = None
    latencies: tuple[float, ...] = ()
    flow_controlled: int = 0
    concurrency: int = 0

    @property
    def refused(self) -> int:
        return self.throttled + self.server_errors + self.timeouts

    @property
    def median_latency(self) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[len(ordered) // 2]


@attrs.frozen
class AdaptiveState:
    """The sizing's memory between rounds.

    ``batch``: the next round's size; ``threshold``: where doubling gives way to additive growth;
    ``not_before``: no create before this time (Retry-After, or the delay after trouble);
    ``usual_latency``: a smoothed median create latency of the rounds that went well (None: none yet);
    ``backoffs``: how many times the batch shrank (for status); ``concurrency_cap``: the most creates in
    flight since API Priority and Fairness refused more (0: no cap), grown by one at most every
    ``CAP_HOLD`` seconds (see :func:`grown_cap`).
    """

    batch: int
    threshold: int
    not_before: float = 0.0
    usual_latency: float | None = None
    backoffs: int = 0
    fast: bool = False  # the last round went well: the next may start without waiting out the delay
    paced: bool = False  # the server refused creates: one round per batch delay, few in flight
    ceiling: int = 0  # the batch the server last refused (paced rounds end at twice this)
    concurrency_cap: int = 0
    cap_since: float = 0.0  # when the cap was last set or grown


@attrs.frozen
class BatchDecision:
    """How the next round creates: at most ``size`` pods, ``concurrency`` in flight, from ``may_create``."""

    size: int
    concurrency: int
    may_create: bool
    wait: float  # seconds until creates are allowed again (0 when ``may_create``)


def initial_state(settings: AdaptiveSettings) -> AdaptiveState:
    """The state before the first round: ``batch.size``, doubling without limit until trouble."""
    return AdaptiveState(batch=min(settings.initial, settings.maximum), threshold=settings.maximum)


def concurrency_for(settings: AdaptiveSettings, batch: int, *, paced: bool = False, cap: int = 0) -> int:
    """Creates in flight for a batch of ``batch``: the key when set, else a share of the batch (at most
    ``cap`` when it is not 0)."""
    if settings.concurrency > 0:
        return settings.concurrency
    automatic = max(1, min(PACED_CONCURRENCY if paced else MAX_CONCURRENCY, batch // 4 + 1))
    return min(automatic, cap) if cap > 0 else automatic


def creates_in_flight(concurrency: int) -> int:
    """The most pod creates ever in flight at once for ``batch.concurrency`` (0: automatic)."""
    return max(MAX_CONCURRENCY, concurrency)


def decide(state: AdaptiveState, settings: AdaptiveSettings, now: float) -> BatchDecision:
    """The next round's size and pace (a pure function of its arguments)."""
    wait = max(state.not_before - now, 0.0)
    return BatchDecision(
        size=state.batch,
        concurrency=concurrency_for(settings, state.batch, paced=state.paced, cap=state.concurrency_cap),
        may_create=wait == 0.0,
        wait=wait,
    )


def congested_latency(state: AdaptiveState, settings: AdaptiveSettings, outcome: RoundOutcome) -> bool:
    """Whether the round's median create latency rose beyond the bound."""
    median = outcome.median_latency
    if median is None or median <= settings.latency_floor:
        return False
    return state.usual_latency is None or median > settings.latency_factor * state.usual_latency


def seats_full(settings: AdaptiveSettings, outcome: RoundOutcome) -> bool:
    """Whether API Priority and Fairness refused every refused create of a round that had more than one
    in flight (automatic concurrency only): fewer in flight is the answer, not a slower rate."""
    throttled_by_apf = outcome.refused > 0 and outcome.flow_controlled == outcome.refused
    return throttled_by_apf and outcome.concurrency > 1 and settings.concurrency == 0


def _shrunk(state: AdaptiveState, settings: AdaptiveSettings, outcome: RoundOutcome) -> AdaptiveState:
    """After pushback (refusals or congested latency): half the batch, paced, after the delay or the
    server's Retry-After, whichever is longer."""
    batch = max(1, state.batch // 2)
    wait = settings.batch_delay
    if outcome.retry_after is not None and outcome.retry_after > 0:
        wait = max(wait, outcome.retry_after)
    refused = outcome.refused > 0
    return AdaptiveState(
        batch=batch,
        threshold=batch,
        not_before=outcome.finished_at + wait,
        usual_latency=state.usual_latency,
        backoffs=state.backoffs + 1,
        fast=False,
        paced=state.paced or refused,
        ceiling=state.batch if refused else state.ceiling,
        concurrency_cap=state.concurrency_cap,
        cap_since=state.cap_since,
    )


def after_round(state: AdaptiveState, settings: AdaptiveSettings, outcome: RoundOutcome) -> AdaptiveState:
    """The state after a round that sent creates: grow on success, shrink on pushback (a pure function).

    A round that sent nothing changes nothing (call it only when ``outcome.attempted`` > 0).
    """
    if outcome.attempted == 0:
        return state
    now = outcome.finished_at
    slow = congested_latency(state, settings, outcome)
    if seats_full(settings, outcome) and not slow:
        wait = max(settings.batch_delay, outcome.retry_after or 0.0)
        return attrs.evolve(
            state,
            concurrency_cap=max(1, outcome.concurrency // 2),
            cap_since=now,
            not_before=now + wait,
            backoffs=state.backoffs + 1,
            fast=False,
        )
    if outcome.refused or slow:
        return _shrunk(state, settings, outcome)
    if outcome.succeeded < outcome.attempted:  # failed for another reason (quota, invalid): no signal
        return attrs.evolve(state, fast=False, not_before=now + settings.batch_delay)
    median = outcome.median_latency
    usual = state.usual_latency
    if median is not None:
        usual = median if usual is None else 0.8 * usual + 0.2 * median
    if state.paced:
        batch = state.batch + max(1, state.batch // 4)
    elif state.batch < state.threshold:
        batch = min(state.batch * 2, state.threshold)
    else:
        batch = state.batch + settings.initial
    # Growth only when the round used its whole batch: a round capped by the target says nothing.
    if outcome.attempted < state.batch:
        batch = state.batch
    batch = min(batch, settings.maximum)
    paced = state.paced and batch < 2 * state.ceiling
    cap, cap_since = grown_cap(state, outcome)
    return AdaptiveState(
        batch=batch,
        threshold=max(state.threshold, batch) if state.paced and not paced else state.threshold,
        not_before=now,
        usual_latency=usual,
        backoffs=state.backoffs,
        fast=not paced,
        paced=paced,
        ceiling=state.ceiling,
        concurrency_cap=cap,
        cap_since=cap_since,
    )


def grown_cap(state: AdaptiveState, outcome: RoundOutcome) -> tuple[int, float]:
    """The creates-in-flight cap after a round that went well, and since when it holds: one more once it
    held for ``CAP_HOLD`` seconds and the round had as many in flight (a round under the cap, paced or
    small, proves nothing about the seats), and no cap once that reaches :data:`MAX_CONCURRENCY`."""
    cap, now = state.concurrency_cap, outcome.finished_at
    if cap == 0 or outcome.concurrency < cap or now - state.cap_since < CAP_HOLD:
        return cap, state.cap_since
    return (0 if cap + 1 >= MAX_CONCURRENCY else cap + 1), now
