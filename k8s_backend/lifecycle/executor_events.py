"""What happens to an executor, told to whoever follows executors: the named listener type of the backend.

The allocator tells that an executor was requested (its pod created) or that its pod could not be
created; the driver's hooks tell that executors are being killed or decommissioned, and why Spark removes
a decommissioning executor; the lifecycle manager tells that an executor is gone, with why. The executor
monitor (histories, status, the timeline) and the metrics' failure counter implement
:class:`ExecutorEvents`; the composition root hands each producer one :class:`ExecutorEventsFanout` over
them, so every change reaches every consumer by one route.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from k8s_backend.lifecycle.driver_port import ExecutorLoss

log = logging.getLogger(__name__)


class ExecutorEvents(Protocol):
    """A listener to executors' changes. Methods are called on the backend's threads and must not block."""

    def requested(self, executor_id: int, resource_profile_id: int, reason: str) -> None:
        """The executor's pod was created; ``reason`` says why the allocator decided it."""
        ...

    def creation_failed(self, executor_id: int, resource_profile_id: int, detail: str) -> None:
        """The API refused the executor's pod for good (it counts against spark.executor.maxNumFailures)."""
        ...

    def killed(self, executor_ids: Sequence[str]) -> None:
        """The driver asked to kill these executors (ids as the driver gives them)."""
        ...

    def decommissioning(self, executor_ids: Sequence[str]) -> None:
        """The driver asked to decommission these executors."""
        ...

    def disruption_noticed(self, executor_id: str, pod_name: str, reason: str) -> None:
        """Kubernetes gave notice that this executor's pod will be taken away (a drain, an eviction, a
        cordon or a disruption taint); its decommission follows."""
        ...

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None:
        """Spark removes a decommissioning executor for ``spark_reason``: the executor's own
        ("Finished decommissioning": no task left and, with block migration on, its blocks migrated) or
        another one (it was lost first)."""
        ...

    def removed(self, executor_id: int, loss: ExecutorLoss) -> None:
        """The executor is gone, and the driver was told why."""
        ...


class ExecutorEventsFanout:
    """Tells each event to every listener, in order; a listener that raises is logged and skipped, so one
    faulty consumer never keeps the event from the others or from the part that produced it."""

    def __init__(self, listeners: Sequence[ExecutorEvents] = ()) -> None:
        self._listeners = tuple(listeners)

    def requested(self, executor_id: int, resource_profile_id: int, reason: str) -> None:
        for listener in self._listeners:
            self._guard(listener.requested, executor_id, resource_profile_id, reason)

    def creation_failed(self, executor_id: int, resource_profile_id: int, detail: str) -> None:
        for listener in self._listeners:
            self._guard(listener.creation_failed, executor_id, resource_profile_id, detail)

    def killed(self, executor_ids: Sequence[str]) -> None:
        for listener in self._listeners:
            self._guard(listener.killed, executor_ids)

    def decommissioning(self, executor_ids: Sequence[str]) -> None:
        for listener in self._listeners:
            self._guard(listener.decommissioning, executor_ids)

    def disruption_noticed(self, executor_id: str, pod_name: str, reason: str) -> None:
        for listener in self._listeners:
            self._guard(listener.disruption_noticed, executor_id, pod_name, reason)

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None:
        for listener in self._listeners:
            self._guard(listener.decommission_ended, executor_id, spark_reason)

    def removed(self, executor_id: int, loss: ExecutorLoss) -> None:
        for listener in self._listeners:
            self._guard(listener.removed, executor_id, loss)

    @staticmethod
    def _guard(method: Callable[..., object], *args: object) -> None:
        try:
            method(*args)
        except Exception:
            log.exception("Executor-events listener %r failed", method)


NO_EVENTS = ExecutorEventsFanout()  # for parts built without listeners (tests, tools)
