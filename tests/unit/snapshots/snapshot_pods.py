"""Executor pod factories for the snapshot tests (Spark's ExecutorLifecycleTestUtils, as plain dicts)."""

from __future__ import annotations

from typing import Any

from k8s_backend.kube.port import Obj

APP_ID = "spark-app-id"
SPARK_CONTAINER = "spark-kubernetes-executor"
SIDECAR = "sidecar"


def running_container(name: str = SPARK_CONTAINER) -> Obj:
    return {"name": name, "image": "spark:4.3.0", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}


def terminated_container(name: str = SPARK_CONTAINER, exit_code: int = 1, reason: str = "Error") -> Obj:
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


def executor_pod(
    exec_id: int | str | None,
    phase: str | None = "Running",
    *,
    rv: int | None = None,
    deleted: bool = False,
    containers: list[Obj] | None = None,
    restart_policy: str = "Never",
    labels: dict[str, str] | None = None,
    app_id: str = APP_ID,
) -> Obj:
    """An executor pod in ``phase`` (None: no phase); ``deleted`` sets a deletionTimestamp."""
    all_labels = {"spark-app-selector": app_id, "spark-role": "executor"}
    if exec_id is not None:
        all_labels["spark-exec-id"] = str(exec_id)
    all_labels.update(labels or {})
    metadata: dict[str, Any] = {
        "name": f"{app_id}-exec-{exec_id}",
        "namespace": "default",
        "labels": all_labels,
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if rv is not None:
        metadata["resourceVersion"] = str(rv)
    if deleted:
        metadata["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if containers is None:
        containers = [running_container()] if phase == "Running" else []
    if containers:
        status["containerStatuses"] = containers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "restartPolicy": restart_policy,
            "containers": [{"name": SPARK_CONTAINER, "image": "spark:4.3.0"}],
        },
        "status": status,
    }
