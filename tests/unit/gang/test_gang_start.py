"""GangStart: the gate at run time (its scheduled re-check, its state, reporting a Hard timeout once)."""

from __future__ import annotations

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.common.failure_sink import FailureSink
from k8s_backend.gang.gate import GangGate, GateState
from k8s_backend.gang.start import GangStart


class World:
    def __init__(self, *, hard: bool) -> None:
        self.clock = ManualClock(1000.0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.running = 0
        self.failures: list[str] = []
        sink = FailureSink()
        sink.add_listener(self.failures.append)
        self.start = GangStart(
            GangGate(min_executors=2, timeout=10, hard=hard),
            self.scheduler,
            self.clock,
            running=lambda: self.running,
            stuck_reasons=lambda: ["executor 2: Unschedulable"],
            failures=sink,
        )


def test_it_opens_once_the_gang_runs_and_stops_checking() -> None:
    w = World(hard=True)
    w.start.start()
    w.scheduler.advance(3.0)
    assert w.start.state is GateState.HOLDING
    w.running = 2
    w.scheduler.advance(1.0)
    assert w.start.state is GateState.OPEN
    assert w.scheduler.pending() == 0, "the re-check is cancelled once the gate decided"
    assert w.start.status() == {"min_executors": 2, "hard": True, "state": "open"}


def test_a_hard_timeout_is_reported_once_with_the_pending_reasons() -> None:
    w = World(hard=True)
    w.start.start()
    w.running = 1
    w.scheduler.advance(15.0)
    assert w.start.check() is GateState.TIMED_OUT
    assert len(w.failures) == 1
    assert "only 1 of 2 executors" in w.failures[0]
    assert "executor 2: Unschedulable" in w.failures[0]


def test_a_soft_timeout_goes_on_without_failing() -> None:
    w = World(hard=False)
    w.start.start()
    w.scheduler.advance(15.0)
    assert w.start.state is GateState.TIMED_OUT
    assert w.failures == []
