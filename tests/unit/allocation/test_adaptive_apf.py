"""Adaptive sizing against API Priority and Fairness: a round whose refusals were all APF 429s (the
server named the priority level) halves the creates in flight, keeps its batch and back-to-back rounds,
and waits out the Retry-After; the cap grows back by one, at most every CAP_HOLD seconds, in rounds that
used it whole. At one create in flight, or with other refusals, or with a fixed concurrency, the usual
back-off (halved batch, paced rounds) applies."""

from __future__ import annotations

from k8s_backend.allocation.adaptive import (
    CAP_HOLD,
    MAX_CONCURRENCY,
    PACED_CONCURRENCY,
    AdaptiveSettings,
    AdaptiveState,
    RoundOutcome,
    after_round,
    decide,
)
from k8s_backend.allocation.create_batch import CreateResult
from k8s_backend.allocation.creator import CREATED, Creation
from k8s_backend.allocation.pacing import outcome_of
from k8s_backend.kube.flow_control import FlowControl

SETTINGS = AdaptiveSettings(initial=20, batch_delay=1.0)
NOW = 100.0


def apf_refused(
    concurrency: int, *, refused: int = 2, other: int = 0, retry_after: float = 1.0
) -> RoundOutcome:
    attempted = 40
    return RoundOutcome(
        NOW,
        attempted=attempted,
        succeeded=attempted - refused - other,
        throttled=refused,
        server_errors=other,
        retry_after=retry_after,
        latencies=(0.01,) * attempted,
        flow_controlled=refused,
        concurrency=concurrency,
    )


def test_apf_429s_halve_the_creates_in_flight_and_keep_the_batch_and_the_fast_rounds() -> None:
    state = AdaptiveState(batch=40, threshold=1000, usual_latency=0.01)
    assert decide(state, SETTINGS, NOW).concurrency == MAX_CONCURRENCY
    state = after_round(state, SETTINGS, apf_refused(MAX_CONCURRENCY, retry_after=3.0))
    assert (state.batch, state.concurrency_cap, state.paced, state.backoffs) == (40, 4, False, 1)
    assert not decide(state, SETTINGS, NOW + 2.9).may_create  # the Retry-After holds
    assert decide(state, SETTINGS, NOW + 3.0).concurrency == 4
    state = after_round(state, SETTINGS, RoundOutcome(NOW + 3.0, 40, 40, latencies=(0.01,) * 40))
    assert (state.batch, state.fast, state.concurrency_cap) == (80, True, 4)  # the cap stays
    state = after_round(state, SETTINGS, apf_refused(4))
    assert decide(state, SETTINGS, NOW + 5.0).concurrency == 2


def good(at: float, concurrency: int = MAX_CONCURRENCY) -> RoundOutcome:
    return RoundOutcome(at, 40, 40, latencies=(0.01,) * 40, concurrency=concurrency)


def test_the_cap_grows_back_by_one_every_cap_hold_of_good_rounds_to_no_cap() -> None:
    state = after_round(AdaptiveState(batch=40, threshold=40), SETTINGS, apf_refused(MAX_CONCURRENCY))
    assert (state.concurrency_cap, state.cap_since) == (4, NOW)
    state = after_round(state, SETTINGS, good(NOW + CAP_HOLD - 0.1))
    assert state.concurrency_cap == 4  # not held long enough yet
    caps = []
    for step in range(1, 6):
        state = after_round(state, SETTINGS, good(NOW + step * CAP_HOLD))
        caps.append(state.concurrency_cap)
    assert caps == [5, 6, 7, 0, 0]  # one more each CAP_HOLD, then none: MAX_CONCURRENCY again
    assert decide(state, SETTINGS, NOW + 5 * CAP_HOLD).concurrency == MAX_CONCURRENCY


def test_a_refused_probe_halves_the_cap_again_and_the_hold_starts_over() -> None:
    state = AdaptiveState(batch=40, threshold=40, concurrency_cap=2, cap_since=NOW - CAP_HOLD)
    state = after_round(state, SETTINGS, good(NOW))
    assert (state.concurrency_cap, state.cap_since) == (3, NOW)  # the probe
    later = NOW + 1.0
    refused = RoundOutcome(later, 40, 38, throttled=2, retry_after=1.0, latencies=(0.01,) * 40,
                           flow_controlled=2, concurrency=3)  # fmt: skip
    state = after_round(state, SETTINGS, refused)
    assert (state.concurrency_cap, state.cap_since) == (1, later)
    assert after_round(state, SETTINGS, good(later + CAP_HOLD - 1.0)).concurrency_cap == 1


def test_the_cap_grows_only_after_a_round_that_used_it_whole() -> None:
    state = AdaptiveState(batch=40, threshold=40, concurrency_cap=4, cap_since=NOW - 10 * CAP_HOLD)
    for under in (2, 3):  # paced rounds, or batches too small to fill the cap
        assert after_round(state, SETTINGS, good(NOW, concurrency=under)).concurrency_cap == 4
    assert after_round(state, SETTINGS, good(NOW, concurrency=4)).concurrency_cap == 5


def test_the_cap_does_not_grow_in_rounds_that_went_badly() -> None:
    state = AdaptiveState(batch=40, threshold=40, concurrency_cap=2, cap_since=NOW - 10 * CAP_HOLD)
    slow = RoundOutcome(NOW, 40, 38, server_errors=2, latencies=(0.01,) * 40, concurrency=2)
    assert after_round(state, SETTINGS, slow).concurrency_cap == 2


def test_at_one_create_in_flight_an_apf_429_is_the_usual_back_off() -> None:
    state = AdaptiveState(batch=40, threshold=1000, concurrency_cap=1)
    state = after_round(state, SETTINGS, apf_refused(1))
    assert (state.batch, state.paced, state.concurrency_cap) == (20, True, 1)
    assert decide(state, SETTINGS, NOW + 1.0).concurrency == 1  # the cap holds in paced rounds too


def test_other_refusals_and_429s_without_a_priority_level_are_the_usual_back_off() -> None:
    state = AdaptiveState(batch=40, threshold=1000)
    mixed = after_round(state, SETTINGS, apf_refused(8, other=1))
    assert (mixed.batch, mixed.paced, mixed.concurrency_cap) == (20, True, 0)
    plain = RoundOutcome(NOW, 40, 38, throttled=2, latencies=(0.01,) * 40, concurrency=8)
    assert after_round(state, SETTINGS, plain).concurrency_cap == 0
    assert decide(after_round(state, SETTINGS, plain), SETTINGS, NOW + 1.0).concurrency == PACED_CONCURRENCY


def test_a_fixed_concurrency_is_kept() -> None:
    fixed = AdaptiveSettings(initial=20, batch_delay=1.0, concurrency=6)
    state = after_round(AdaptiveState(batch=40, threshold=1000), fixed, apf_refused(6))
    assert (state.batch, state.concurrency_cap) == (20, 0)
    assert decide(state, fixed, NOW + 1.0).concurrency == 6


def test_the_round_outcome_counts_429s_that_named_a_priority_level() -> None:
    flow = FlowControl("fs-uid", "pl-uid")
    results = [
        CreateResult(1, CREATED, 0.01),
        CreateResult(2, Creation(False, "429", retryable=True, status=429, flow_control=flow), 0.01),
        CreateResult(3, Creation(False, "429", retryable=True, status=429), 0.01),
    ]
    outcome = outcome_of(results, NOW, concurrency=3)
    assert (outcome.throttled, outcome.flow_controlled, outcome.concurrency) == (2, 1, 3)
