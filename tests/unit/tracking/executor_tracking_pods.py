"""Executor pods, pod states and snapshot batches for the executor tracking tests."""

from __future__ import annotations

import calendar
from typing import Any

from k8s_backend.kube.port import Obj
from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodStateRules
from k8s_backend.tracking.tracker import ExecutorTracker

SPARK = "spark-kubernetes-executor"
IMAGE = "registry.example/spark:4.3.0"
RULES = PodStateRules(SPARK)
T0 = float(calendar.timegm((2026, 1, 1, 12, 0, 1, 0, 0, 0)))  # 12:00:01 UTC
UNSCHEDULABLE = "0/3 nodes are available: 3 Insufficient memory."


def make_tracker(
    *, stuck_timeout: float = 60.0, image_pull_timeout: float | None = 120.0, **kwargs: Any
) -> ExecutorTracker:
    return ExecutorTracker(
        container_name=SPARK, stuck_timeout=stuck_timeout, image_pull_timeout=image_pull_timeout, **kwargs
    )


def pod(
    executor_id: int,
    phase: str,
    *,
    profile: int = 0,
    image: str = IMAGE,
    waiting: str | None = None,
    waiting_message: str = "",
    unschedulable: str | None = None,
    exit_code: int | None = None,
    reason: str = "Error",
    deleting: bool = False,
    evicted: str | None = None,
) -> Obj:
    """An executor pod in ``phase``; ``waiting`` / ``unschedulable`` / ``exit_code`` shape its status."""
    metadata: dict[str, Any] = {
        "name": f"app-exec-{executor_id}",
        "namespace": "default",
        "labels": {
            "spark-app-selector": "app",
            "spark-role": "executor",
            "spark-exec-id": str(executor_id),
            "spark-exec-resourceprofile-id": str(profile),
        },
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T12:10:00Z"
    status: dict[str, Any] = {"phase": phase}
    container: dict[str, Any] = {"name": SPARK, "image": image}
    if waiting is not None:
        container["state"] = {"waiting": {"reason": waiting, "message": waiting_message}}
    elif exit_code is not None:
        container["state"] = {"terminated": {"exitCode": exit_code, "reason": reason}}
    elif phase == "Running":
        container["state"] = {"running": {"startedAt": "2026-01-01T12:00:40Z"}}
    if "state" in container:
        status["containerStatuses"] = [container]
    if evicted is not None:  # as the kubelet reports an eviction: the pod's reason and message
        status.update(reason="Evicted", message=evicted)
    if unschedulable is not None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}
        ]
    return {
        "metadata": metadata,
        "spec": {"restartPolicy": "Never", "containers": [{"name": SPARK, "image": image}]},
        "status": status,
    }


def state(executor_id: int, phase: str, **kwargs: Any) -> ExecutorPodState:
    found = RULES.to_state(pod(executor_id, phase, **kwargs))
    assert found is not None
    return found


def batch(*states: ExecutorPodState) -> SnapshotBatch:
    return SnapshotBatch(updates=tuple(states), snapshot=ExecutorPodsSnapshot.of(states))


def observe(tracker: ExecutorTracker, now: float, executor_id: int, phase: str, **kwargs: Any) -> list[Any]:
    """Deliver one pod update to the tracker; returns its notices."""
    return list(tracker.on_batch(batch(state(executor_id, phase, **kwargs)), now))
