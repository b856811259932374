"""Counting executor failures within a sliding window (Spark's ExecutorFailureTracker, SPARK-41210), and
the budget ``spark.executor.maxNumFailures`` sets on them."""

from __future__ import annotations

import collections
import logging
import threading

from k8s_backend.common import Clock
from k8s_backend.common.failure_sink import FailureReporter

log = logging.getLogger(__name__)


class ExecutorFailureTracker:
    """Remembers when executors failed and how many failures still count.

    With ``validity_interval`` (``spark.executor.failuresValidityInterval``, seconds) a failure stops
    counting once it is older than the interval; without it every failure counts for the application's
    lifetime. Thread-safe: failures are registered on the allocation thread and read from anywhere.
    """

    def __init__(self, clock: Clock, validity_interval: float | None = None) -> None:
        if validity_interval is not None and validity_interval < 0:
            raise ValueError(
                f"spark.executor.failuresValidityInterval must be 0 or more, got {validity_interval}s"
            )
        self._clock = clock
        self._validity_interval = validity_interval
        self._failure_times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    @property
    def validity_interval(self) -> float | None:
        return self._validity_interval

    def register_failure(self, count: int = 1) -> None:
        """Record ``count`` executor failures happening now."""
        now = self._clock.now()
        with self._lock:
            self._failure_times.extend([now] * count)
            self._expire(now)

    @property
    def num_failed(self) -> int:
        """How many failures currently count."""
        with self._lock:
            self._expire(self._clock.now())
            return len(self._failure_times)

    def _expire(self, now: float) -> None:
        if self._validity_interval is None:
            return
        # Strictly older than the window, as Spark: a failure exactly at the window edge still counts.
        oldest_valid = now - self._validity_interval
        while self._failure_times and self._failure_times[0] < oldest_valid:
            self._failure_times.popleft()


class FailureBudget:
    """Fails the application, once, when more executors failed than ``spark.executor.maxNumFailures``.

    Thread-safe: failures are registered on the allocation thread and the budget is read from anywhere.
    """

    def __init__(self, tracker: ExecutorFailureTracker, max_failures: int, failures: FailureReporter) -> None:
        self._tracker = tracker
        self._max_failures = max_failures
        self._failures = failures
        self._lock = threading.Lock()
        self._exhausted = False

    @property
    def max_failures(self) -> int:
        return self._max_failures

    @property
    def num_failed(self) -> int:
        """Executor failures that currently count."""
        return self._tracker.num_failed

    @property
    def exhausted(self) -> bool:
        """Whether the budget ran out and the application was failed (no more pods are requested)."""
        with self._lock:
            return self._exhausted

    def register_failure(self, count: int = 1) -> None:
        self._tracker.register_failure(count)

    def check(self) -> None:
        """Fail the application if the failures that count exceed the budget (the first time only)."""
        failed = self._tracker.num_failed
        if failed <= self._max_failures:
            return
        with self._lock:
            if self._exhausted:
                return
            self._exhausted = True
        window = self._tracker.validity_interval
        within = f"within the last {window:g}s" if window else "since the application started"
        reason = (
            f"Max number of executor failures ({self._max_failures}) reached: {failed} executors failed "
            f"{within}. Raise spark.executor.maxNumFailures (or set spark.executor.failuresValidityInterval) "
            "if failures are expected; no more executor pods will be requested."
        )
        log.error(reason)
        self._failures.report(reason)
