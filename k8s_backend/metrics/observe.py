"""Feeding the metrics from the places that already observe events: the allocator's subscription to the
snapshot store (round durations), the lifecycle manager's executor-removed listener and the allocator's
creation-failed listener (failures). The decision functions themselves are untouched.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence

from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle import explain
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.metrics.registry import BackendMetrics
from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.store import Relist, SnapshotsStore, SubscriberCallback, Subscription


def failure_reason(executor_id: int, loss: ExecutorLoss) -> str | None:
    """The ``reason`` label of a lost executor, or None when its end is no failure (exit 0, or the
    driver killed it). Reasons: ``oom_killed``, ``evicted``, ``sigkill``, ``jvm_oom``, ``exit_code``
    (another non-zero exit), ``deleted`` (its pod was deleted by someone else), ``missing`` (registered
    with the driver, but its pod is gone)."""
    if loss.killed_by_driver:
        return None
    if loss.exit_caused_by_app:
        if loss.exit_code == 0:
            return None
        if loss.message.startswith("OOMKilled"):
            return "oom_killed"
        if loss.message.startswith("Evicted"):
            return "evicted"
        return {137: "sigkill", 52: "jvm_oom"}.get(loss.exit_code, "exit_code")
    if loss.message == explain.deleted_message(executor_id):
        return "deleted"
    return "missing"


class ExecutorFailures:
    """Counts ``k8s_backend_executor_failures_total``, leaving out the executors the driver or the
    backend removed on purpose (killed, decommissioned, or deleted by the allocator as excess).

    It listens to executors' changes as an :class:`~k8s_backend.lifecycle.executor_events.ExecutorEvents`.
    """

    def __init__(self, metrics: BackendMetrics, *, deleted_as_excess: Callable[[int], bool]) -> None:
        self._metrics = metrics
        self._deleted_as_excess = deleted_as_excess
        self._lock = threading.Lock()
        self._expected: set[int] = set()

    def requested(self, executor_id: int, resource_profile_id: int, reason: str) -> None:
        """A new executor is no failure."""

    def killed(self, executor_ids: Sequence[str]) -> None:
        self.expect_removal(executor_ids)

    def decommissioning(self, executor_ids: Sequence[str]) -> None:
        self.expect_removal(executor_ids)

    def disruption_noticed(self, executor_id: str, pod_name: str, reason: str) -> None:
        """Its decommission follows, which is what makes its end no failure."""

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None:
        """Its decommission was asked for already, which made its end no failure."""

    def expect_removal(self, executor_ids: Iterable[str]) -> None:
        """The driver asked to kill or decommission these executors: their end is no failure."""
        ids = {int(i) for i in executor_ids if str(i).isdigit()}
        with self._lock:
            self._expected |= ids

    def removed(self, executor_id: int, loss: ExecutorLoss) -> None:
        """The lifecycle manager told the driver this executor is gone."""
        with self._lock:
            expected = executor_id in self._expected
            self._expected.discard(executor_id)
        if expected or self._deleted_as_excess(executor_id):
            return
        reason = failure_reason(executor_id, loss)
        if reason is not None:
            self._metrics.executor_failures.labels(reason).inc()

    def creation_failed(self, executor_id: int, resource_profile_id: int, detail: str) -> None:
        """A pod create was refused for good (it counts against spark.executor.maxNumFailures)."""
        self._metrics.executor_failures.labels("creation_failed").inc()


class TimedSubscriptions:
    """The snapshot store as the allocator sees it, with each delivery to its subscriber timed: one
    delivery is one allocation round."""

    def __init__(self, store: SnapshotsStore, observe: Callable[[float], None]) -> None:
        self._store = store
        self._observe = observe

    def add_subscriber(self, interval: float, callback: SubscriberCallback) -> Subscription:
        observe = self._observe

        def timed(batch: SnapshotBatch) -> None:
            started = time.perf_counter()
            try:
                callback(batch)
            finally:
                observe(time.perf_counter() - started)

        return self._store.add_subscriber(interval, timed)

    def notify_subscribers(self) -> None:
        self._store.notify_subscribers()

    def update_pod(self, pod: Obj, *, deleted: bool = False) -> None:
        self._store.update_pod(pod, deleted=deleted)

    def replace_snapshot(self, pods: Sequence[Obj], resource_version: str | None = None) -> None:
        self._store.replace_snapshot(pods, resource_version)

    def relist(self) -> Relist:
        return self._store.relist()

    def current(self) -> ExecutorPodsSnapshot:
        return self._store.current()

    def stop(self) -> None:
        self._store.stop()
