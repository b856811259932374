"""Adaptive batch sizing as a pure decision: ramp-up, back-off on 429, 5xx, timeouts and latency,
Retry-After, and the limits (state in, state out; the clock is a number the test moves)."""

from __future__ import annotations

import attrs
import pytest

from k8s_backend.allocation.adaptive import (
    MAX_CONCURRENCY,
    PACED_CONCURRENCY,
    AdaptiveSettings,
    AdaptiveState,
    RoundOutcome,
    after_round,
    decide,
    initial_state,
)
from k8s_backend.allocation.create_batch import CreateResult
from k8s_backend.allocation.creator import CREATED, Creation
from k8s_backend.allocation.pacing import outcome_of
from k8s_backend.common import ManualClock

SETTINGS = AdaptiveSettings(initial=20, batch_delay=1.0)


def ok(clock: ManualClock, count: int, latency: float = 0.01) -> RoundOutcome:
    return RoundOutcome(clock.now(), attempted=count, succeeded=count, latencies=(latency,) * count)


def full_round(state: AdaptiveState, clock: ManualClock, latency: float = 0.01) -> AdaptiveState:
    return after_round(state, SETTINGS, ok(clock, state.batch, latency))


def test_the_first_round_is_batch_size_and_the_batch_doubles_while_creates_go_well() -> None:
    clock = ManualClock(100.0)
    state = initial_state(SETTINGS)
    sizes = []
    for _ in range(5):
        decision = decide(state, SETTINGS, clock.now())
        assert decision.may_create
        sizes.append(decision.size)
        state = full_round(state, clock)
        assert state.fast  # the next round need not wait out the batch delay
    assert sizes == [20, 40, 80, 160, 320]


def test_the_concurrency_grows_with_the_batch_up_to_its_cap() -> None:
    small = decide(initial_state(SETTINGS), SETTINGS, 0.0)
    big = decide(AdaptiveState(batch=500, threshold=1000), SETTINGS, 0.0)
    assert 1 <= small.concurrency < big.concurrency == MAX_CONCURRENCY
    fixed = AdaptiveSettings(initial=20, concurrency=3)
    assert decide(AdaptiveState(batch=500, threshold=1000), fixed, 0.0).concurrency == 3


def test_past_the_threshold_the_batch_grows_by_batch_size() -> None:
    clock = ManualClock()
    state = AdaptiveState(batch=100, threshold=100)
    state = full_round(state, clock)
    assert state.batch == 120
    assert full_round(state, clock).batch == 140


def test_a_round_cut_short_by_the_target_does_not_grow_the_batch() -> None:
    clock = ManualClock()
    state = initial_state(SETTINGS)
    after = after_round(state, SETTINGS, ok(clock, 7))
    assert after.batch == 20
    assert after_round(state, SETTINGS, RoundOutcome(0.0, attempted=0, succeeded=0)) == state


def test_a_429_halves_the_batch_and_no_create_is_sent_before_retry_after() -> None:
    clock = ManualClock(50.0)
    state = AdaptiveState(batch=160, threshold=1000)
    refused = RoundOutcome(
        clock.now(), attempted=30, succeeded=28, throttled=2, retry_after=3.0, latencies=(0.01,) * 30
    )
    state = after_round(state, SETTINGS, refused)
    assert (state.batch, state.threshold, state.backoffs) == (80, 80, 1)
    assert not state.fast and state.paced
    for waited in (0.0, 1.0, 2.9):
        decision = decide(state, SETTINGS, clock.now() + waited)
        assert not decision.may_create
        assert decision.wait == pytest.approx(3.0 - waited)
    decision = decide(state, SETTINGS, clock.now() + 3.0)
    assert decision.may_create and decision.size == 80
    assert decision.concurrency <= PACED_CONCURRENCY  # few in flight while the server pushes back


def test_without_retry_after_a_refusal_waits_the_batch_delay() -> None:
    clock = ManualClock(10.0)
    state = after_round(
        AdaptiveState(batch=40, threshold=1000),
        SETTINGS,
        RoundOutcome(clock.now(), attempted=1, succeeded=0, throttled=1),
    )
    assert state.not_before == pytest.approx(11.0)
    # A Retry-After shorter than the delay does not shorten it.
    short = after_round(
        AdaptiveState(batch=40, threshold=1000),
        SETTINGS,
        RoundOutcome(clock.now(), attempted=1, succeeded=0, throttled=1, retry_after=0.2),
    )
    assert short.not_before == pytest.approx(11.0)


@pytest.mark.parametrize(
    "trouble",
    [{"server_errors": 1}, {"timeouts": 1}, {"throttled": 1}],
    ids=["5xx", "timeout", "429"],
)
def test_5xx_and_timeouts_shrink_the_batch_multiplicatively_as_429_does(trouble: dict[str, int]) -> None:
    state = AdaptiveState(batch=64, threshold=1000)
    for expected in (32, 16, 8, 4, 2, 1, 1):
        state = after_round(state, SETTINGS, RoundOutcome(0.0, attempted=5, succeeded=4, **trouble))
        assert state.batch == expected
    assert state.paced


def test_rising_latency_shrinks_the_batch_but_keeps_rounds_quick() -> None:
    clock = ManualClock()
    state = full_round(initial_state(SETTINGS), clock, latency=0.1)  # the usual latency: 0.1 s
    assert state.usual_latency == pytest.approx(0.1)
    slow = full_round(state, clock, latency=0.6)  # 6x the usual, above the floor
    assert slow.batch == state.batch // 2
    assert slow.backoffs == 1 and not slow.fast and not slow.paced
    assert slow.not_before == pytest.approx(clock.now() + SETTINGS.batch_delay)


def test_latency_under_the_floor_is_never_congestion() -> None:
    clock = ManualClock()
    state = full_round(initial_state(SETTINGS), clock, latency=0.001)
    after = full_round(state, clock, latency=0.2)  # 200x the usual, but a fifth of a second
    assert after.batch == state.batch * 2 and after.backoffs == 0


def test_paced_rounds_grow_slowly_and_end_once_the_batch_doubled_the_refused_one() -> None:
    clock = ManualClock()
    state = after_round(
        AdaptiveState(batch=100, threshold=1000), SETTINGS, RoundOutcome(0.0, 10, 9, throttled=1)
    )
    assert (state.batch, state.ceiling, state.paced) == (50, 100, True)
    sizes = []
    while state.paced:
        state = full_round(state, clock)
        sizes.append(state.batch)
        assert state.fast is not state.paced  # paced rounds wait for the regular tick
    assert sizes == [62, 77, 96, 120, 150, 187, 233]
    assert state.fast


def test_the_batch_never_exceeds_its_maximum() -> None:
    settings = attrs.evolve(SETTINGS, maximum=100)
    clock = ManualClock()
    state = initial_state(settings)
    for _ in range(10):
        state = after_round(state, settings, ok(clock, state.batch))
    assert state.batch == 100
    assert initial_state(attrs.evolve(settings, initial=500)).batch == 100


def test_settings_reject_a_batch_of_zero() -> None:
    with pytest.raises(ValueError, match="initial and maximum"):
        AdaptiveSettings(initial=0)


def test_create_results_are_sorted_into_the_kinds_of_pushback() -> None:
    results = [
        CreateResult(1, CREATED, 0.01),
        CreateResult(2, Creation(False, "429", retryable=True, status=429, retry_after=2.0), 0.02),
        CreateResult(3, Creation(False, "503", retryable=True, status=503, retry_after=5.0), 0.03),
        CreateResult(4, Creation(False, "timed out", retryable=True), 0.04),
        CreateResult(5, Creation(False, "forbidden"), 0.05),
    ]
    outcome = outcome_of(results, 9.0)
    assert (outcome.attempted, outcome.succeeded) == (5, 1)
    assert (outcome.throttled, outcome.server_errors, outcome.timeouts) == (1, 1, 1)
    assert outcome.retry_after == 5.0
    assert outcome.median_latency == 0.03
    assert outcome.finished_at == 9.0
