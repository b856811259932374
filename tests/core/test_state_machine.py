"""StateMachine: moves only along its table and records every transition with its time and reason."""

from __future__ import annotations

import enum
import threading

import pytest

from k8s_backend.backend_state import BACKEND_TRANSITIONS, BackendState
from k8s_backend.scheduling import ManualClock
from k8s_backend.state_machine import IllegalTransitionError, StateMachine, Transition


class Light(enum.Enum):
    OFF = "off"
    ON = "on"
    BROKEN = "broken"


TABLE: dict[Light, frozenset[Light]] = {
    Light.OFF: frozenset({Light.ON, Light.BROKEN}),
    Light.ON: frozenset({Light.OFF, Light.BROKEN}),
    # BROKEN is terminal: no entry at all
}


def machine(clock: ManualClock | None = None, **kwargs: int) -> StateMachine[Light]:
    clock = clock or ManualClock(100.0)
    return StateMachine("light", Light.OFF, TABLE, clock.now, **kwargs)


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
