"""The fault-injection controls of InMemoryKubernetes: errors, outages, latency and a create-rate limit.

A mixin: the fake holds the :class:`~k8s_backend.memkube.faults.FaultInjector`, its lock and its
clock; these methods arm faults under that lock.
"""

from __future__ import annotations

import threading

from k8s_backend.common import Clock
from k8s_backend.kube.port import Resource
from k8s_backend.memkube.faults import FaultInjector


class FaultControls:
    """Methods of InMemoryKubernetes that arm faults (see the fake's docstring for the semantics)."""

    _lock: threading.RLock
    _faults: FaultInjector
    _clock: Clock

    def fail_next(
        self,
        verb: str,
        resource: Resource | None = None,
        *,
        status: int = 500,
        count: int = 1,
        retry_after: float | None = None,
        message: str = "injected fault",
    ) -> None:
        """Answer the next ``count`` matching calls with ``status`` (verb '*' matches any verb)."""
        with self._lock:
            self._faults.fail_next(
                verb, resource, status=status, count=count, retry_after=retry_after, message=message
            )

    def fail_for(
        self,
        seconds: float,
        verb: str,
        resource: Resource | None = None,
        *,
        status: int = 503,
        retry_after: float | None = None,
        message: str = "injected outage",
    ) -> None:
        """Answer every matching call with ``status`` for the next ``seconds`` of the fake's clock."""
        if seconds <= 0:
            raise ValueError(f"an outage lasts a positive number of seconds (got {seconds})")
        with self._lock:
            self._faults.fail_until(
                self._clock.now() + seconds,
                verb,
                resource,
                status=status,
                retry_after=retry_after,
                message=message,
            )

    def add_latency(self, seconds: float, verb: str = "*") -> None:
        """Make every matching call sleep ``seconds`` of real time first (0 removes it)."""
        with self._lock:
            self._faults.add_latency(seconds, verb)

    def clear_faults(self) -> None:
        """Disarm every pending fault, latency and rate limit."""
        with self._lock:
            self._faults.clear()

    def limit_rate(
        self,
        per_second: float,
        verb: str = "create",
        resource: Resource | None = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        """Accept at most ``per_second`` matching calls in any second of the fake's clock and answer the
        others 429 with Retry-After (the time until a call would be accepted, unless ``retry_after``
        is given): what an API server's priority and fairness does under load. 0 lifts the limit."""
        with self._lock:
            self._faults.limit_rate(per_second, verb, resource, retry_after=retry_after)

    @property
    def rate_limited(self) -> int:
        """How many calls the rate limits have answered 429."""
        with self._lock:
            return self._faults.refused_by_rate_limit()
