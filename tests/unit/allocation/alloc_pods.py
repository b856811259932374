"""Executor pods and snapshot batches for the pure allocation tests."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone

from k8s_backend.kube.port import Obj
from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodStateRules

APP = "spark-app-id"
RULES = PodStateRules()


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def executor_pod(
    executor_id: int,
    phase: str = "Pending",
    *,
    rp: int = 0,
    created: float | str | None = 0.0,
    deleted: bool = False,
    claims: Iterable[str] = (),
) -> Obj:
    """An executor pod as the API would return it (phase e.g. Pending, Running, Failed, Unknown)."""
    metadata: Obj = {
        "name": f"spark-exec-{executor_id}",
        "labels": {
            "spark-app-selector": APP,
            "spark-role": "executor",
            "spark-exec-id": str(executor_id),
            "spark-exec-resourceprofile-id": str(rp),
        },
    }
    if created is not None:
        metadata["creationTimestamp"] = created if isinstance(created, str) else iso(created)
    if deleted:
        metadata["deletionTimestamp"] = iso(0)
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return {"metadata": metadata, "spec": {"volumes": volumes}, "status": {"phase": phase}}


def state(executor_id: int, phase: str = "Pending", **kwargs: object) -> ExecutorPodState:
    result = RULES.to_state(executor_pod(executor_id, phase, **kwargs))  # type: ignore[arg-type]
    assert result is not None
    return result


def batch(
    states: Iterable[ExecutorPodState] = (),
    *,
    updates: Iterable[ExecutorPodState] | None = None,
    changed: bool = True,
) -> SnapshotBatch:
    """The current view ``states``; ``updates`` default to the states themselves when ``changed``."""
    states = list(states)
    if updates is None:
        updates = states if changed else ()
    return SnapshotBatch(updates=tuple(updates), snapshot=ExecutorPodsSnapshot.of(states), resynced=changed)
