"""Polling alone (``spark.kubernetes.executor.enableApiWatcher=false``): every executor's end is seen as
with a watch. A full list is then the only news of a pod that is gone, so the snapshot store delivers the
pods it drops as DELETED, to the executor tracker (status, histories, timeline) as to the lifecycle
manager."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from backend_harness import Harness, make_harness

from k8s_backend.kube.port import PODS

POLLING_ONLY = {
    "spark.kubernetes.executor.enableApiWatcher": "false",
    "spark.kubernetes.executor.apiPollingInterval": "1s",
}
WATCH_AND_POLLING = {"spark.kubernetes.executor.apiPollingInterval": "1s"}


def executors(h: Harness) -> dict[str, Any]:
    found: dict[str, Any] = h.backend.status()["executors"]
    return found


def killed_and_deleted(conf: dict[str, str]) -> Harness:
    """Three running executors; the driver kills executor 1 and its pod is then deleted."""
    h = make_harness(conf)
    h.backend.start()
    h.run()
    for pod in h.executor_pods():
        h.set_phase(pod["metadata"]["name"], "Running")
    now = h.scheduler.clock.now()
    h.driver.registered = {"1": now, "2": now, "3": now}
    h.run(2.0)
    assert executors(h)["counts"] == {"running": 3}
    h.backend.request_total_executors({0: 2})  # as Spark's dynamic allocation does before a kill
    h.backend.kill_executors(["1"])
    h.run(1.0)
    assert executors(h)["counts"] == {"running": 2, "terminating": 1}
    # The fake's pods never exit: the backend force-deletes the killed one after the grace period (5s).
    h.run(6.0)
    assert "test-app-exec-1" not in {p["metadata"]["name"] for p in h.executor_pods()}
    h.run(2.0)  # a poll (or the watch) has seen it gone, and every subscriber had a delivery since
    return h


@pytest.mark.parametrize("conf", [POLLING_ONLY, WATCH_AND_POLLING], ids=["polling-only", "watch"])
def test_a_killed_executor_whose_pod_was_deleted_ends_deleted_not_terminating(conf: dict[str, str]) -> None:
    h = killed_and_deleted(conf)
    try:
        assert executors(h)["counts"] == {"running": 2, "deleted": 1}
        history = executors(h)["histories"]["1"]
        assert ", terminating " in history and history.split(", ")[-1].startswith("deleted ")
        (line,) = [e for e in h.backend.monitor.timeline("t").executors if e.executor_id == "1"]
        assert line.spans[-1].kind != "terminating"
        assert line.ended != ""
        assert h.backend.status()["pods"]["running"] == 2
    finally:
        h.backend.stop()


@pytest.mark.parametrize("conf", [POLLING_ONLY, WATCH_AND_POLLING], ids=["polling-only", "watch"])
def test_the_driver_hears_of_a_killed_executor_as_with_a_watch_and_no_failure_is_counted(
    conf: dict[str, str],
) -> None:
    h = killed_and_deleted(conf)
    try:
        h.run(40.0)  # polls long after the missing-pod detect delta (30s): no second report
        told = [(loss.killed_by_driver, loss.message) for i, loss in h.driver.removed if i == "1"]
        # The kill itself, then the lifecycle manager once for the deleted pod (as Spark does).
        assert told == [
            (True, told[0][1]),
            (False, "The executor with id 1 was deleted by a user or the framework."),
        ]
        assert [i for i, _ in h.driver.removed] == ["1", "1"]
        losses = h.backend.status()["recent_losses"]
        assert [loss["executor_id"] for loss in losses] == [1]
        assert h.backend.status()["allocator"]["failures"] == 0
    finally:
        h.backend.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def failures(h: Harness, reason: str) -> float:
    monitoring = h.backend.monitoring  # type: ignore[attr-defined]
    found = monitoring.metrics.registry.get_sample_value(
        "k8s_backend_executor_failures_total", {"reason": reason}
    )
    return float(found or 0.0)


def test_a_pod_deleted_by_someone_else_is_one_deleted_failure_not_a_deleted_and_a_missing_one() -> None:
    # Polling alone, the driver still listing the executor for a while (its removal is asynchronous):
    # the deletion the store delivers is reported and counted once; the missing-pod check of the later
    # polls finds the executor already reported.
    h = make_harness({**POLLING_ONLY, "spark.kubernetes.metrics.port": str(free_port())})
    h.backend.start()
    try:
        h.run()
        for pod in h.executor_pods():
            h.set_phase(pod["metadata"]["name"], "Running")
        registered_at = h.scheduler.clock.now()
        h.driver.registered = {"1": registered_at, "2": registered_at, "3": registered_at}
        h.run(2.0)
        h.fake.delete(PODS, "default", "test-app-exec-2")
        h.run(2.0)
        assert executors(h)["histories"]["2"].split(", ")[-1].startswith("deleted ")
        h.driver.registered["2"] = registered_at  # the driver has not processed the removal yet
        h.run(40.0)  # polls past the missing-pod detect delta (30s)
        assert [loss.message for i, loss in h.driver.removed if i == "2"] == [
            "The executor with id 2 was deleted by a user or the framework."
        ]
        assert (failures(h, "deleted"), failures(h, "missing")) == (1.0, 0.0)
        assert h.backend.status()["allocator"]["failures"] == 0  # a deletion is no failed pod
    finally:
        h.backend.stop()
