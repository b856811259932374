"""Adaptive sizing against API Priority and Fairness: a round whose refusals were all APF 429s (the
server named the priority level) halves the creates in flight for the rest of the run, keeps its batch
and back-to-back rounds, and waits out the Retry-After; at one create in flight, or with other
refusals, or with a fixed concurrency, the usual back-off (halved batch, paced rounds) applies."""

from __future__ import annotations

from k8s_backend.allocation.adaptive import (
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
