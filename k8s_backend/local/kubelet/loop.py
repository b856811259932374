"""A single-threaded event loop with timers: the kubelet's state is touched only on this thread."""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

Task = Callable[[], None]


class EventLoop:
    """Runs posted tasks and due timers one at a time on its own thread.

    Other threads hand work over with :meth:`post`; :meth:`wait_until` lets them block until a condition
    about the loop's effects holds, re-checked after every task.
    """

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._timers: list[tuple[float, int, Task]] = []
        self._seq = itertools.count()
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._stopped = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def post(self, task: Task) -> None:
        """Run ``task`` on the loop thread (dropped once the loop has stopped)."""
        if not self._stopped.is_set():
            self._queue.put(task)

    def call_later(self, delay: float, task: Task) -> None:
        """Run ``task`` on the loop thread after ``delay`` seconds. Only call from the loop thread."""
        heapq.heappush(self._timers, (time.monotonic() + max(0.0, delay), next(self._seq), task))

    def on_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def call(self, task: Callable[[], object], timeout: float = 30.0) -> None:
        """Run ``task`` on the loop thread and wait for it (runs inline when already on it)."""
        if self.on_loop_thread() or not self._thread.is_alive() or self._stopped.is_set():
            task()  # a stopped loop runs nothing more (a backlog it still drops included)
            return
        done = threading.Event()

        def run() -> None:
            try:
                task()
            finally:
                done.set()

        self.post(run)
        if not done.wait(timeout):
            raise TimeoutError(f"the kubelet loop did not run a task within {timeout} s")

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate()`` is true (checked after each task); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.5))
            return True

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the tasks already posted, for at most ``timeout`` seconds: the tasks still queued
        then are dropped (the one running finishes), so that no work of a stopped kubelet reaches an API
        server after its owner moved on (a backlog of 1000 deletions takes longer). Pending timers are
        dropped."""
        if self._stopped.is_set():
            return
        self._queue.put(None)
        if self._thread.is_alive() and not self.on_loop_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning(
                    "the kubelet loop did not finish its tasks within %.0f s; dropping the rest", timeout
                )
        self._stopped.set()

    def _run(self) -> None:
        while True:
            timeout = None
            if self._timers:
                timeout = max(0.0, self._timers[0][0] - time.monotonic())
            try:
                task = self._queue.get(timeout=timeout)
            except queue.Empty:
                task = _NOTHING
            if task is None:
                break
            if self._stopped.is_set():
                continue  # stopped while a backlog was left: drop it (up to the sentinel)
            if task is not _NOTHING:
                self._run_task(task)
            now = time.monotonic()
            while self._timers and self._timers[0][0] <= now and not self._stopped.is_set():
                self._run_task(heapq.heappop(self._timers)[2])
            with self._changed:
                self._changed.notify_all()
        self._stopped.set()
        with self._changed:
            self._changed.notify_all()

    @staticmethod
    def _run_task(task: Task) -> None:
        try:
            task()
        except Exception:
            log.exception("kubelet task failed")


def _nothing() -> None:
    return None


_NOTHING: Task = _nothing
