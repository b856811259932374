"""Riding out an API outage while creating executor pods.

A create the API refuses with a transient error (429, 5xx, connection error or timeout) says nothing
about the executor: Spark 4.3 counts every creation error against
``spark.executor.maxNumFailures`` (SPARK-55075), so a ten-second 503 outage failed the application with no
executor ever failing. Here such a create is not a failure: the allocator stops creating, waits (the
short back-off of :mod:`k8s_backend.kube.backoff`, and at least as long as a ``Retry-After`` asks), then
asks again in a later round, or in a round run as soon as the wait is over. This is the only layer that
retries a create: the adapter tries once (:func:`k8s_backend.kube.retry.caller_retries`). The outage is
logged once when it starts and once when creates work again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from typing import Any

from k8s_backend.allocation.creator import Creation
from k8s_backend.common import Clock
from k8s_backend.kube.backoff import retry_delay

log = logging.getLogger(__name__)

class CreateRetries:
    """The allocator's memory of an outage: when it may create again, and which executor ids to create again.

    An id whose create may have reached the server (a timeout) is asked for again under the same id, so
    the pod's name is the same and a 409 finds the pod to adopt instead of a second pod being made.
    Thread-safe: rounds use it, :meth:`status` may be read from anywhere.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0  # transient create errors in a row
        self._since = 0.0  # when the first of them happened
        self._retry_at = 0.0
        self._ids: dict[int, int] = {}  # executor id -> resource profile id, in the order they failed

    def may_create(self) -> bool:
        """Whether the backoff after the last transient error is over (always, outside an outage)."""
        with self._lock:
            return self._clock.now() >= self._retry_at

    def retry_in(self) -> float:
        """Seconds until creates may be asked for again (0 outside an outage)."""
        with self._lock:
            return max(self._retry_at - self._clock.now(), 0.0)

    def take_id(self, rp_id: int) -> int | None:
        """An executor id of ``rp_id`` whose create is to be asked for again, or None."""
        with self._lock:
            for executor_id, rp in self._ids.items():
                if rp == rp_id:
                    del self._ids[executor_id]
                    return executor_id
        return None

    def forget_seen(self, seen: Collection[int]) -> None:
        """Drop the ids whose pods a snapshot shows: their create reached the server after all."""
        with self._lock:
            for executor_id in [i for i in self._ids if i in seen]:
                del self._ids[executor_id]

    @property
    def pending_ids(self) -> tuple[int, ...]:
        with self._lock:
            return tuple(self._ids)

    def failed(self, executor_id: int, rp_id: int, creation: Creation) -> float:
        """Record a transient create error; returns how long creates now wait."""
        now = self._clock.now()
        with self._lock:
            self._failures += 1
            failures = self._failures
            if failures == 1:
                self._since = now
            if creation.reuse_id:
                self._ids[executor_id] = rp_id
            delay = retry_delay(failures, retry_after=creation.retry_after)
            self._retry_at = now + delay
        if failures == 1:
            log.warning(
                "The Kubernetes API refuses executor pod creation with a transient error (%s). This is not "
                "counted as an executor failure: creating pods again in %.1fs, backing off while it lasts "
                "(further errors of this outage are logged at debug level).",
                creation.error,
                delay,
            )
        else:
            log.debug(
                "Executor pod creation still refused (%d errors in a row): %s; next attempt in %.1fs",
                failures,
                creation.error,
                delay,
            )
        return delay

    def requeue(self, executor_id: int, rp_id: int, creation: Creation) -> None:
        """Another transient error of the same round (creates in flight together): ask again for its id
        later, without counting it as one more error in a row (the backoff grows once per round)."""
        if creation.reuse_id:
            with self._lock:
                self._ids[executor_id] = rp_id

    def succeeded(self) -> None:
        """A create worked: the outage, if any, is over."""
        now = self._clock.now()
        with self._lock:
            failures, since = self._failures, self._since
            self._failures = 0
            self._retry_at = 0.0
        if failures:
            log.info(
                "Executor pod creation works again after %d transient errors over %.1fs.",
                failures,
                now - since,
            )

    def status(self) -> dict[str, Any]:
        """A JSON-friendly view for diagnostics."""
        with self._lock:
            return {
                "transient_errors_in_a_row": self._failures,
                "retry_in": max(self._retry_at - self._clock.now(), 0.0),
                "ids_to_retry": sorted(self._ids),
            }
