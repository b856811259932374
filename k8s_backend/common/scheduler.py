"""Scheduled executors: where the backend's periodic and delayed work runs.

:class:`ThreadScheduler` runs tasks on its own small pool of daemon threads.
:class:`DeterministicScheduler` runs them only when a test advances its :class:`ManualClock`, on the
test's thread, so tests never sleep and never race.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from k8s_backend.common.clock import Clock, ManualClock, SystemClock

log = logging.getLogger(__name__)

Task = Callable[[], None]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """Runs tasks now, later, or periodically. A failing task is logged; it never stops the scheduler."""

    def submit(self, task: Task) -> Cancellable:
        """Run ``task`` as soon as a thread is free."""
        ...

    def schedule(self, delay: float, task: Task) -> Cancellable:
        """Run ``task`` once, ``delay`` seconds from now."""
        ...

    def schedule_with_fixed_delay(self, initial_delay: float, delay: float, task: Task) -> Cancellable:
        """Run ``task`` after ``initial_delay``, then ``delay`` seconds after each run ends."""
        ...

    def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel pending tasks and wait up to ``timeout`` seconds for running ones."""
        ...


class _Entry:
    __slots__ = ("cancelled", "delay", "task")

    def __init__(self, task: Task, delay: float | None) -> None:
        self.task = task
        self.delay = delay  # None: run once
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


_LONGEST_WAIT = 3600.0


def _run_logged(entry: _Entry) -> None:
    try:
        entry.task()
    except Exception:  # a failing task must not kill the thread that runs every other task
        log.exception("Scheduled task %r failed", getattr(entry.task, "__qualname__", entry.task))


class _Queue:
    """A time-ordered queue of entries shared by both schedulers."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Entry]] = []
        self._seq = itertools.count()

    def push(self, when: float, entry: _Entry) -> None:
        heapq.heappush(self._heap, (when, next(self._seq), entry))

    def next_time(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> _Entry | None:
        when = self.next_time()
        if when is None or when > now:
            return None
        return heapq.heappop(self._heap)[2]

    def clear(self) -> None:
        for _, _, entry in self._heap:
            entry.cancel()
        self._heap.clear()

    def __len__(self) -> int:
        return sum(1 for _, _, e in self._heap if not e.cancelled)


class _QueueScheduler:
    """What both schedulers share: turning submit/schedule calls into queue entries."""

    def submit(self, task: Task) -> Cancellable:
        return self._add(0.0, task, None)

    def schedule(self, delay: float, task: Task) -> Cancellable:
        return self._add(delay, task, None)

    def schedule_with_fixed_delay(self, initial_delay: float, delay: float, task: Task) -> Cancellable:
        if delay <= 0:
            raise ValueError(f"a periodic task needs a positive delay, got {delay}")
        return self._add(initial_delay, task, delay)

    def _add(self, delay: float, task: Task, period: float | None) -> Cancellable:
        raise NotImplementedError


class ThreadScheduler(_QueueScheduler):
    """A scheduled executor on ``threads`` daemon threads named ``name-N``."""

    def __init__(self, name: str, threads: int = 1, clock: Clock | None = None) -> None:
        if threads < 1:
            raise ValueError("a scheduler needs at least one thread")
        self._clock = clock or SystemClock()
        self._queue = _Queue()
        self._cond = threading.Condition()
        self._stopped = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def _add(self, delay: float, task: Task, period: float | None) -> Cancellable:
        entry = _Entry(task, period)
        with self._cond:
            if self._stopped:
                entry.cancel()
                return entry
            self._queue.push(self._clock.now() + max(0.0, delay), entry)
            self._cond.notify()
        return entry

    def _work(self) -> None:
        while True:
            with self._cond:
                entry = None
                while not self._stopped:
                    entry = self._queue.pop_due(self._clock.now())
                    if entry is not None:
                        break
                    when = self._queue.next_time()
                    # A task years away (a huge configured interval) waits in bounded steps: a longer
                    # timeout overflows the lock's wait and would kill the thread.
                    wait = None if when is None else min(max(0.0, when - self._clock.now()), _LONGEST_WAIT)
                    self._cond.wait(wait)
                if self._stopped:
                    return
            assert entry is not None
            _run_logged(entry)
            if entry.delay is not None and not entry.cancelled:
                with self._cond:
                    if not self._stopped:
                        self._queue.push(self._clock.now() + entry.delay, entry)
                        self._cond.notify()

    def shutdown(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify_all()
        current = threading.current_thread()
        deadline = time.monotonic() + timeout  # one grace period in all, not one per thread
        for thread in self._threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))


class DeterministicScheduler(_QueueScheduler):
    """A scheduler for tests: tasks run on the caller's thread when the manual clock reaches them.

    ``submit``-ted tasks run at the next :meth:`run_until_idle` or :meth:`advance`.
    """

    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock()
        self._queue = _Queue()
        self._stopped = False
        self._lock = threading.RLock()

    def _add(self, delay: float, task: Task, period: float | None) -> Cancellable:
        entry = _Entry(task, period)
        with self._lock:
            if self._stopped:
                entry.cancel()
            else:
                self._queue.push(self.clock.now() + max(0.0, delay), entry)
        return entry

    def run_until_idle(self) -> int:
        """Run every task that is due now (including ones they schedule for now); return how many ran."""
        ran = 0
        while True:
            with self._lock:
                entry = self._queue.pop_due(self.clock.now())
            if entry is None:
                return ran
            _run_logged(entry)
            ran += 1
            if entry.delay is not None and not entry.cancelled:
                with self._lock:
                    if not self._stopped:
                        self._queue.push(self.clock.now() + entry.delay, entry)

    def advance(self, seconds: float) -> int:
        """Move the clock forward, running each task at its due time, in order."""
        target = self.clock.now() + seconds
        ran = self.run_until_idle()
        while True:
            with self._lock:
                when = self._queue.next_time()
            if when is None or when > target:
                break
            self.clock.set(max(when, self.clock.now()))
            ran += self.run_until_idle()
        self.clock.set(max(target, self.clock.now()))  # a task may itself have moved the clock on
        return ran + self.run_until_idle()

    def pending(self) -> int:
        """How many tasks are waiting (periodic ones count once)."""
        with self._lock:
            return len(self._queue)

    def shutdown(self, timeout: float = 10.0) -> None:
        with self._lock:
            self._stopped = True
            self._queue.clear()
