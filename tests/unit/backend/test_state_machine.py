"""StateMachine: moves only along its table and records every transition with its time and reason."""

from __future__ import annotations

import enum
import threading

import pytest

from k8s_backend.backend.state import BACKEND_TRANSITIONS, BackendState
from k8s_backend.common import ManualClock
from k8s_backend.common.state_machine import IllegalTransitionError, StateMachine, Transition


class Light(enum.Enum):
    OFF = "off"
    ON = "on"
    BROKEN = "broken"


TABLE: dict[Light, frozenset[Light]] = {
    Light.OFF: frozenset({Light.ON, Light.BROKEN}),
    Light.ON: frozenset({Light.OFF, Light.BROKEN}),
    # BROKEN is terminal: no entry at all
}


def machine(clock: ManualClock | None = None, *, history_limit: int = 100) -> StateMachine[Light]:
    clock = clock or ManualClock(100.0)
    return StateMachine("light", Light.OFF, TABLE, clock.now, history_limit=history_limit)


def test_starts_in_the_initial_state_with_no_history() -> None:
    m = machine()
    assert m.state is Light.OFF
    assert m.history() == []


def test_allowed_transitions_move_the_state() -> None:
    m = machine()
    assert m.can(Light.ON)
    record = m.transition(Light.ON, "switched")
    assert m.state is Light.ON
    assert record == Transition(100.0, Light.OFF, Light.ON, "switched")


def test_an_illegal_transition_raises_naming_both_states_and_changes_nothing() -> None:
    m = machine()
    assert not m.can(Light.OFF)  # no self-loop in the table
    with pytest.raises(IllegalTransitionError, match=r"light: cannot go from off to off \(again\)"):
        m.transition(Light.OFF, "again")
    assert m.state is Light.OFF
    assert m.history() == []


def test_a_state_missing_from_the_table_is_terminal() -> None:
    m = machine()
    m.transition(Light.BROKEN)
    assert not any(m.can(s) for s in Light)
    with pytest.raises(IllegalTransitionError, match=r"cannot go from broken to on$"):
        m.transition(Light.ON)


def test_history_records_times_sources_targets_and_reasons_in_order() -> None:
    clock = ManualClock(10.0)
    m = machine(clock)
    m.transition(Light.ON, "dusk")
    clock.advance(5.0)
    m.transition(Light.OFF, "dawn")
    clock.advance(1.0)
    m.transition(Light.BROKEN)
    assert m.history() == [
        Transition(10.0, Light.OFF, Light.ON, "dusk"),
        Transition(15.0, Light.ON, Light.OFF, "dawn"),
        Transition(16.0, Light.OFF, Light.BROKEN, ""),
    ]


def test_history_is_a_copy() -> None:
    m = machine()
    m.transition(Light.ON)
    m.history().clear()
    assert len(m.history()) == 1


def test_history_keeps_only_the_newest_entries() -> None:
    clock = ManualClock(0.0)
    m = machine(clock, history_limit=3)
    for _ in range(3):
        m.transition(Light.ON)
        clock.advance(1.0)
        m.transition(Light.OFF)
        clock.advance(1.0)
    history = m.history()
    assert len(history) == 3
    assert [t.time for t in history] == [3.0, 4.0, 5.0]


def test_concurrent_transitions_each_succeed_once() -> None:
    # Two threads race to break the light; exactly one wins, the other sees an illegal transition.
    m = machine()
    barrier = threading.Barrier(2)
    outcomes: list[str] = []
    lock = threading.Lock()

    def race() -> None:
        barrier.wait()
        try:
            m.transition(Light.BROKEN)
            result = "won"
        except IllegalTransitionError:
            result = "lost"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=race) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5.0)
    assert sorted(outcomes) == ["lost", "won"]
    assert len(m.history()) == 1


# ------------------------------------------------------------------- event-driven use (executor records)


def test_a_transition_may_say_when_it_happened() -> None:
    m = machine(ManualClock(100.0))
    assert m.transition(Light.ON, at=7.0).time == 7.0
    assert m.transition_if_allowed(Light.OFF, at=8.0)
    assert [t.time for t in m.history()] == [7.0, 8.0]


def test_without_a_clock_every_transition_must_say_when_and_a_missing_time_changes_nothing() -> None:
    m = StateMachine("light", Light.OFF, TABLE)
    with pytest.raises(ValueError, match="light: a transition without a clock must say when"):
        m.transition(Light.ON)
    assert m.state is Light.OFF and m.history() == []
    m.transition(Light.ON, "dusk", at=3.0)
    assert m.history() == [Transition(3.0, Light.OFF, Light.ON, "dusk")]


def test_the_start_can_be_recorded_as_the_first_entry() -> None:
    m = StateMachine("light", Light.OFF, TABLE, started_at=1.0)
    m.transition(Light.ON, at=2.0)
    assert m.history() == [Transition(1.0, Light.OFF, Light.OFF), Transition(2.0, Light.OFF, Light.ON)]


def test_keep_first_trims_after_the_first_entry() -> None:
    m = StateMachine("light", Light.OFF, TABLE, started_at=0.0, history_limit=3, keep_first=True)
    for step in range(1, 5):
        m.transition(Light.ON if m.state is Light.OFF else Light.OFF, at=float(step))
    assert [t.time for t in m.history()] == [0.0, 3.0, 4.0]


def test_a_history_limit_too_small_to_keep_anything_is_refused() -> None:
    with pytest.raises(ValueError, match="history_limit 1 is too small"):
        StateMachine("light", Light.OFF, TABLE, history_limit=1, keep_first=True)
    with pytest.raises(ValueError, match="history_limit 0 is too small"):
        StateMachine("light", Light.OFF, TABLE, history_limit=0)


def test_a_stay_reason_explains_the_state_left_if_its_entry_had_no_reason() -> None:
    m = machine(ManualClock(0.0))
    m.transition(Light.ON, at=1.0)
    assert m.transition_if_allowed(Light.OFF, "dawn", at=2.0, stay_reason="it was night")
    assert m.transition_if_allowed(Light.ON, at=3.0, stay_reason="dawn lasted")  # OFF's entry has one
    assert m.history() == [
        Transition(1.0, Light.OFF, Light.ON, "it was night"),
        Transition(2.0, Light.ON, Light.OFF, "dawn"),
        Transition(3.0, Light.OFF, Light.ON, ""),
    ]


def test_a_refused_transition_returns_false_and_records_nothing_not_even_the_stay_reason() -> None:
    m = machine(ManualClock(0.0))
    m.transition(Light.BROKEN, at=1.0)
    assert not m.transition_if_allowed(Light.ON, at=2.0, stay_reason="why it broke")
    assert m.state is Light.BROKEN
    assert m.history() == [Transition(1.0, Light.OFF, Light.BROKEN, "")]


# ------------------------------------------------------------------------------------ the backend's table


def test_backend_lifecycle_happy_path() -> None:
    m = StateMachine("backend", BackendState.NEW, BACKEND_TRANSITIONS, ManualClock().now)
    for target in (BackendState.STARTING, BackendState.RUNNING, BackendState.STOPPING, BackendState.STOPPED):
        m.transition(target)
    assert m.state is BackendState.STOPPED


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (BackendState.NEW, BackendState.RUNNING),
        (BackendState.RUNNING, BackendState.STARTING),
        (BackendState.STOPPED, BackendState.STARTING),
        (BackendState.FAILED, BackendState.RUNNING),
        (BackendState.STOPPING, BackendState.RUNNING),
    ],
)
def test_backend_illegal_transitions(source: BackendState, target: BackendState) -> None:
    m = StateMachine("backend", source, BACKEND_TRANSITIONS, ManualClock().now)
    with pytest.raises(IllegalTransitionError):
        m.transition(target)


def test_a_failed_backend_can_still_be_stopped() -> None:
    m = StateMachine("backend", BackendState.RUNNING, BACKEND_TRANSITIONS, ManualClock().now)
    m.transition(BackendState.FAILED, "too many executor failures")
    m.transition(BackendState.STOPPING)
    assert m.history()[0].reason == "too many executor failures"
