"""Counting executor failures within a sliding window (Spark's ExecutorFailureTracker, SPARK-41210)."""

from __future__ import annotations

import collections
import threading

from k8s_backend.scheduling import Clock


class ExecutorFailureTracker:
    """Remembers when executors failed and how many failures still count.

    With ``validity_interval`` (``spark.executor.failuresValidityInterval``, seconds) a failure stops
    counting once it is older than the interval; without it every failure counts for the application's
    lifetime. Thread-safe: failures are registered on the allocation thread and read from anywhere.
    """

    def __init__(self, clock: Clock, validity_interval: float | None = None) -> None:
        if validity_interval is not None and validity_interval <= 0:
            raise ValueError(
                f"spark.executor.failuresValidityInterval must be positive, got {validity_interval}s"
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
