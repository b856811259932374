"""The injected clock and the two schedulers: when tasks run, in what order, and what stops them."""

from __future__ import annotations

import logging
import threading

import pytest

from k8s_backend.common import DeterministicScheduler, ManualClock, SystemClock, ThreadScheduler

WAIT = 5.0  # generous timeout for event waits on real threads; the happy path never waits this long


# ---------------------------------------------------------------------------------------------- clocks


def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock(100.0)
    assert clock.now() == 100.0
    clock.advance(2.5)
    assert clock.now() == 102.5
    clock.set(200.0)
    assert clock.now() == 200.0


def test_manual_clock_refuses_to_go_backwards() -> None:
    clock = ManualClock(10.0)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="backwards"):
        clock.set(9.0)
    assert clock.now() == 10.0


def test_system_clock_is_epoch_seconds() -> None:
    assert SystemClock().now() > 1_600_000_000


# ------------------------------------------------------------------------------ deterministic scheduler


def test_submitted_task_runs_only_at_run_until_idle() -> None:
    scheduler = DeterministicScheduler()
    ran: list[str] = []
    scheduler.submit(lambda: ran.append("a"))
    assert ran == []
    assert scheduler.run_until_idle() == 1
    assert ran == ["a"]
    assert scheduler.run_until_idle() == 0


def test_delayed_task_runs_at_its_due_time_with_the_clock_there() -> None:
    scheduler = DeterministicScheduler(ManualClock(0.0))
    seen: list[float] = []
    scheduler.schedule(5.0, lambda: seen.append(scheduler.clock.now()))
    scheduler.advance(4.999)
    assert seen == []
    scheduler.advance(10.0)
    assert seen == [5.0]
    assert scheduler.clock.now() == pytest.approx(14.999)


def test_advance_runs_tasks_in_due_order() -> None:
    scheduler = DeterministicScheduler()
    order: list[str] = []
    scheduler.schedule(3.0, lambda: order.append("c"))
    scheduler.schedule(1.0, lambda: order.append("a"))
    scheduler.schedule(2.0, lambda: order.append("b"))
    scheduler.submit(lambda: order.append("now"))
    scheduler.advance(5.0)
    assert order == ["now", "a", "b", "c"]


def test_same_time_tasks_run_in_submission_order() -> None:
    scheduler = DeterministicScheduler()
    order: list[int] = []
    for i in range(5):
        scheduler.schedule(1.0, lambda i=i: order.append(i))  # type: ignore[misc]
    scheduler.advance(1.0)
    assert order == [0, 1, 2, 3, 4]


def test_tasks_submitted_by_tasks_run_in_the_same_run_until_idle() -> None:
    scheduler = DeterministicScheduler()
    ran: list[str] = []

    def parent() -> None:
        scheduler.submit(lambda: ran.append("child"))

    scheduler.submit(parent)
    assert scheduler.run_until_idle() == 2
    assert ran == ["child"]


def test_fixed_delay_task_runs_first_after_initial_delay_then_every_delay() -> None:
    scheduler = DeterministicScheduler()
    times: list[float] = []
    scheduler.schedule_with_fixed_delay(1.0, 2.0, lambda: times.append(scheduler.clock.now()))
    scheduler.advance(0.5)
    assert times == []
    scheduler.advance(6.5)  # to t=7
    assert times == [1.0, 3.0, 5.0, 7.0]


def test_fixed_delay_counts_from_the_end_of_the_previous_run() -> None:
    clock = ManualClock()
    scheduler = DeterministicScheduler(clock)
    times: list[float] = []

    def slow() -> None:
        times.append(clock.now())
        clock.advance(0.5)  # the task itself takes half a second

    scheduler.schedule_with_fixed_delay(0.0, 1.0, slow)
    scheduler.advance(4.0)
    assert times == [0.0, 1.5, 3.0]


def test_fixed_delay_with_zero_initial_delay_runs_at_once() -> None:
    scheduler = DeterministicScheduler()
    ran: list[int] = []
    scheduler.schedule_with_fixed_delay(0.0, 1.0, lambda: ran.append(1))
    scheduler.run_until_idle()
    assert ran == [1]


@pytest.mark.parametrize("delay", [0.0, -1.0])
def test_periodic_task_needs_a_positive_delay(delay: float) -> None:
    with pytest.raises(ValueError, match="positive delay"):
        DeterministicScheduler().schedule_with_fixed_delay(0.0, delay, lambda: None)


def test_cancelled_tasks_never_run() -> None:
    scheduler = DeterministicScheduler()
    ran: list[str] = []
    once = scheduler.schedule(1.0, lambda: ran.append("once"))
    periodic = scheduler.schedule_with_fixed_delay(0.0, 1.0, lambda: ran.append("tick"))
    scheduler.run_until_idle()
    once.cancel()
    periodic.cancel()
    scheduler.advance(10.0)
    assert ran == ["tick"]
    assert scheduler.pending() == 0


def test_a_periodic_task_can_cancel_itself() -> None:
    scheduler = DeterministicScheduler()
    ran: list[float] = []
    handle = None

    def task() -> None:
        ran.append(scheduler.clock.now())
        if len(ran) == 2:
            assert handle is not None
            handle.cancel()

    handle = scheduler.schedule_with_fixed_delay(0.0, 1.0, task)
    scheduler.advance(5.0)
    assert ran == [0.0, 1.0]


def test_a_failing_task_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    scheduler = DeterministicScheduler()
    ran: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    scheduler.submit(boom)
    scheduler.submit(lambda: ran.append("after"))
    periodic_runs: list[int] = []

    def failing_periodic() -> None:
        periodic_runs.append(1)
        raise RuntimeError("periodic boom")

    scheduler.schedule_with_fixed_delay(0.0, 1.0, failing_periodic)
    with caplog.at_level(logging.ERROR, logger="k8s_backend.common.scheduler"):
        scheduler.advance(2.0)
    assert ran == ["after"]
    assert len(periodic_runs) == 3  # a failing periodic task keeps its schedule
    assert any("boom" in (r.exc_text or "") for r in caplog.records)


def test_pending_counts_waiting_tasks_once_each() -> None:
    scheduler = DeterministicScheduler()
    scheduler.schedule(1.0, lambda: None)
    scheduler.schedule_with_fixed_delay(0.0, 1.0, lambda: None)
    assert scheduler.pending() == 2
    scheduler.advance(1.0)
    assert scheduler.pending() == 1


def test_shutdown_drops_pending_tasks_and_refuses_new_ones() -> None:
    scheduler = DeterministicScheduler()
    ran: list[str] = []
    scheduler.schedule_with_fixed_delay(0.0, 1.0, lambda: ran.append("tick"))
    scheduler.run_until_idle()
    scheduler.shutdown()
    scheduler.submit(lambda: ran.append("late"))
    scheduler.advance(5.0)
    assert ran == ["tick"]
    assert scheduler.pending() == 0


def test_a_periodic_task_that_shuts_the_scheduler_down_is_not_rescheduled() -> None:
    scheduler = DeterministicScheduler()
    ran: list[int] = []

    def task() -> None:
        ran.append(1)
        scheduler.shutdown()

    scheduler.schedule_with_fixed_delay(0.0, 1.0, task)
    scheduler.advance(3.0)
    assert ran == [1]


# ---------------------------------------------------------------------------------- thread scheduler


def test_thread_scheduler_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="at least one thread"):
        ThreadScheduler("x", threads=0)


def test_thread_scheduler_runs_submitted_tasks_on_named_daemon_threads() -> None:
    scheduler = ThreadScheduler("unit-sched", threads=2)
    try:
        done = threading.Event()
        seen: list[threading.Thread] = []

        def task() -> None:
            seen.append(threading.current_thread())
            done.set()

        scheduler.submit(task)
        assert done.wait(WAIT)
        assert seen[0].name.startswith("unit-sched-")
        assert seen[0].daemon
    finally:
        scheduler.shutdown()


def test_thread_scheduler_runs_delayed_tasks_by_its_clock() -> None:
    # A manual clock makes "not yet due" deterministic: the delayed task cannot run until the clock moves.
    clock = ManualClock()
    scheduler = ThreadScheduler("delay", threads=1, clock=clock)
    try:
        order: list[str] = []
        first, second = threading.Event(), threading.Event()

        def record(name: str, done: threading.Event) -> None:
            order.append(name)
            done.set()

        scheduler.schedule(10.0, lambda: order.append("delayed"))
        scheduler.submit(lambda: record("first", first))
        assert first.wait(WAIT)
        assert order == ["first"]
        clock.advance(10.0)
        # On one thread, the due delayed task (queued earlier) runs before this one.
        scheduler.submit(lambda: record("second", second))
        assert second.wait(WAIT)
        assert order == ["first", "delayed", "second"]
    finally:
        scheduler.shutdown()


def test_thread_scheduler_survives_a_failing_task(caplog: pytest.LogCaptureFixture) -> None:
    scheduler = ThreadScheduler("survive", threads=1)
    try:
        done = threading.Event()

        def boom() -> None:
            raise RuntimeError("thread boom")

        with caplog.at_level(logging.ERROR, logger="k8s_backend.common.scheduler"):
            scheduler.submit(boom)
            scheduler.submit(done.set)
            assert done.wait(WAIT)
        assert any("thread boom" in (r.exc_text or "") for r in caplog.records)
    finally:
        scheduler.shutdown()


def test_thread_scheduler_repeats_fixed_delay_tasks_until_cancelled() -> None:
    scheduler = ThreadScheduler("periodic", threads=1)
    try:
        count = 0
        third = threading.Event()

        def tick() -> None:
            nonlocal count
            count += 1
            if count == 3:
                third.set()

        handle = scheduler.schedule_with_fixed_delay(0.0, 0.001, tick)
        assert third.wait(WAIT)
        handle.cancel()
        stopped_at = count
        marker = threading.Event()
        scheduler.submit(marker.set)
        assert marker.wait(WAIT)
        # After cancel at most the run in flight completes; no more are queued.
        assert count <= stopped_at + 1
    finally:
        scheduler.shutdown()


def test_thread_scheduler_shutdown_joins_threads_and_refuses_new_tasks() -> None:
    scheduler = ThreadScheduler("stopper", threads=2)
    scheduler.shutdown(timeout=WAIT)
    assert not any(t.name.startswith("stopper-") and t.is_alive() for t in threading.enumerate())
    ran: list[int] = []
    handle = scheduler.submit(lambda: ran.append(1))
    assert getattr(handle, "cancelled", False)  # refused at once, not queued for threads that are gone
    assert ran == []


def test_thread_scheduler_can_be_shut_down_from_its_own_task() -> None:
    scheduler = ThreadScheduler("self-stop", threads=1)
    done = threading.Event()

    def task() -> None:
        scheduler.shutdown(timeout=WAIT)  # must not try to join its own thread
        done.set()

    scheduler.submit(task)
    assert done.wait(WAIT)


def test_advance_tolerates_a_task_that_moves_the_clock_past_the_target() -> None:
    # E.g. a task that models slow work by advancing the shared ManualClock (or calls FakeKubernetes.advance).
    clock = ManualClock()
    scheduler = DeterministicScheduler(clock)
    scheduler.schedule(3.0, lambda: clock.advance(0.5))
    scheduler.advance(3.2)
    assert clock.now() == 3.5


def test_a_task_years_away_leaves_the_thread_running_other_tasks() -> None:
    # spark.kubernetes.executor.eventProcessingInterval=100000000000d: a wait that long overflows.
    scheduler = ThreadScheduler("far", threads=1)
    ran = threading.Event()
    try:
        scheduler.schedule_with_fixed_delay(8.64e15, 8.64e15, lambda: None)
        scheduler.submit(ran.set)
        assert ran.wait(60), "the scheduler thread died waiting for a task years away"
        later = threading.Event()
        scheduler.submit(later.set)
        assert later.wait(60)
    finally:
        scheduler.shutdown(5)
