"""The driver-side endpoint the backend reports to (the PySpark bridge implements it, or nothing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from k8s_backend.lifecycle.autoscaler_hints import ExecutorActivity
from k8s_backend.lifecycle.roll_policy import ExecutorSummary
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import SnapshotsStore


@attrs.frozen
class ExecutorLoss:
    """Why an executor is gone, as Spark's ExecutorExited / ExecutorKilled carry it."""

    exit_code: int
    exit_caused_by_app: bool
    message: str
    killed_by_driver: bool = False


class DriverEndpoint(Protocol):
    """What the backend calls on the driver, and nothing more; the core never imports pyspark."""

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        """Tell the driver an executor is lost (asynchronous on the driver side)."""
        ...

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        """Decommission an executor through Spark's graceful path (no new tasks; its shuffle and cached
        blocks migrate when spark.storage.decommission.* is on), keeping the executor target as it is."""
        ...

    def registered_executors(self) -> Mapping[str, float]:
        """Executor id -> registration time (epoch seconds) of the executors the driver knows."""
        ...

    def executor_summaries(self) -> Sequence[ExecutorSummary]:
        """The driver's active executors (and its own entry) as Spark's status store lists them,
        ``executorList(activeOnly=true)``, which Spark's ExecutorRollPlugin reads; the executor roller's
        metrics. Empty when they cannot be read."""
        ...

    def application_failed(self, reason: str) -> None:
        """The backend gave up on the application (the driver stops it)."""
        ...


def registered_executor_count(driver: DriverEndpoint | None, store: SnapshotsStore) -> int:
    """Executors registered with the driver; without a driver, the executor pods that run."""
    if driver is not None:
        return sum(1 for i in driver.registered_executors() if str(i).isdigit())
    return len(store.current().in_phase(PodPhase.RUNNING))


@runtime_checkable
class ExecutorActivitySource(Protocol):
    """A driver that can tell what each executor is doing and holding (the PySpark bridge can)."""

    def executor_activity(self) -> Mapping[str, ExecutorActivity] | None:
        """Executor id -> running tasks, cached blocks and live shuffle outputs; None when unknown now."""
        ...
