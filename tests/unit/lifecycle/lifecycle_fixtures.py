"""Pods, batches and a recording driver for the lifecycle tests (Spark's ExecutorLifecycleTestUtils)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle.decisions import LifecycleAction, LifecycleDecider, LifecycleMemory
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodStateRules

APP_ID = "spark-app-id"
SPARK_CONTAINER = "spark-kubernetes-executor"
RULES = PodStateRules()


def pod_name(exec_id: int) -> str:
    return f"{APP_ID}-exec-{exec_id}"


def terminated(name: str, exit_code: int, reason: str = "Error") -> Obj:
    return {
        "name": name,
        "image": "spark:4.3.0",
        "state": {
            "terminated": {
                "exitCode": exit_code,
                "reason": reason,
                "startedAt": "2026-01-01T00:00:00Z",
                "finishedAt": "2026-01-01T00:01:00Z",
            }
        },
    }


def running(name: str) -> Obj:
    return {"name": name, "image": "spark:4.3.0", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}


def pod(
    exec_id: int,
    phase: str,
    *,
    containers: list[Obj] | None = None,
    reason: str | None = None,
    message: str | None = None,
    deleted: bool = False,
    labels: Mapping[str, str] | None = None,
    memory_limit: str | None = None,
) -> Obj:
    metadata: dict[str, Any] = {
        "name": pod_name(exec_id),
        "namespace": "default",
        "labels": {
            "spark-app-selector": APP_ID,
            "spark-role": "executor",
            "spark-exec-id": str(exec_id),
            **(labels or {}),
        },
    }
    if deleted:
        metadata["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    spark: dict[str, Any] = {"name": SPARK_CONTAINER, "image": "spark:4.3.0"}
    if memory_limit is not None:
        spark["resources"] = {"limits": {"memory": memory_limit}, "requests": {"memory": memory_limit}}
    status: dict[str, Any] = {"phase": phase, "containerStatuses": containers or []}
    if reason is not None:
        status["reason"] = reason
    if message is not None:
        status["message"] = message
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"restartPolicy": "Never", "containers": [spark]},
        "status": status,
    }


def failed_pod(exec_id: int, **kwargs: Any) -> Obj:
    """Spark's failedExecutorWithoutDeletion: phase Failed, two containers that exited 1."""
    return pod(
        exec_id,
        "Failed",
        containers=[terminated(SPARK_CONTAINER, 1), terminated("sidecar", 1)],
        reason="Error",
        message="Executor failed.",
        **kwargs,
    )


def state(obj: Obj) -> ExecutorPodState:
    result = RULES.to_state(obj)
    assert result is not None
    return result


def batch(
    *updates: Obj,
    view: Iterable[Obj] | None = None,
    full_snapshot_ts: float = 0.0,
    resynced: bool = False,
) -> SnapshotBatch:
    """A delivery: ``updates`` in order; the current view defaults to the updated pods."""
    states = [state(p) for p in updates]
    current = [state(p) for p in view] if view is not None else states
    return SnapshotBatch(tuple(states), ExecutorPodsSnapshot.of(current, full_snapshot_ts), resynced=resynced)


class RecordingDriver:
    """A DriverEndpoint that records what it is told."""

    def __init__(self, registered: Mapping[str, float] | None = None) -> None:
        self.removed: list[tuple[str, ExecutorLoss]] = []
        self.disabled: list[str] = []
        self.registered: dict[str, float] = dict(registered or {})

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        self.removed.append((executor_id, loss))

    def disable_executor(self, executor_id: str) -> None:
        self.disabled.append(executor_id)

    def registered_executors(self) -> Mapping[str, float]:
        return dict(self.registered)


class Remembering:
    """Runs a pure decider batch after batch, passing each decision's memory to the next, as the manager
    does; failures are recorded in the memory the same way."""

    def __init__(self, decider: LifecycleDecider, memory: LifecycleMemory | None = None) -> None:
        self.decider = decider
        self.memory = memory or LifecycleMemory()

    def decide(
        self, batch: SnapshotBatch, registered: Mapping[int, float], now: float
    ) -> list[LifecycleAction]:
        decision = self.decider.decide(batch, registered, now, self.memory)
        self.memory = decision.memory
        return list(decision.actions)

    def is_removed(self, executor_id: int) -> bool:
        return self.memory.is_removed(executor_id)

    def removal_failed(self, executor_id: int) -> None:
        self.memory = self.memory.removal_failed(executor_id)

    def delete_failed(self, executor_id: int) -> None:
        self.memory = self.memory.delete_failed(executor_id)

    def inactivation_failed(self, executor_id: int) -> None:
        self.memory = self.memory.inactivation_failed(executor_id)
