"""The backend tracks its executors: histories, stuck reasons, unpullable images, failed creations."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import pytest
from backend_harness import Harness, make_harness

from k8s_backend.backend.state import BackendState
from k8s_backend.kube.port import PODS

UNSCHEDULABLE = "0/3 nodes are available: 3 Insufficient memory."
SPARK = "spark-kubernetes-executor"


def at(h: Harness) -> str:
    """The harness clock as the histories print it: ISO 8601 in UTC, with the date and the time zone."""
    moment = time.gmtime(h.scheduler.clock.now())
    return time.strftime("%Y-%m-%dT%H:%M:%S", moment) + f".{int(h.scheduler.clock.now() * 1000) % 1000:03d}Z"


def pod_names(h: Harness) -> list[str]:
    return sorted(p["metadata"]["name"] for p in h.executor_pods())


def unschedulable(h: Harness, name: str, message: str = UNSCHEDULABLE) -> None:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    h.fake.patch_status(PODS, "default", name, {"phase": "Pending", "conditions": [condition]})


def waiting(h: Harness, name: str, reason: str, message: str = "") -> None:
    container = {"name": SPARK, "state": {"waiting": {"reason": reason, "message": message}}}
    h.fake.patch_status(PODS, "default", name, {"phase": "Pending", "containerStatuses": [container]})


def oom_killed(h: Harness, name: str) -> None:
    container = {"name": SPARK, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
    h.fake.patch_status(PODS, "default", name, {"phase": "Failed", "containerStatuses": [container]})


# Why the first round created each of its 3 executors, as their histories tell it.
CREATED_FOR_3 = (
    "created for target 3 of profile 0: 0 counted (running, pending or requested), 3 requested this round"
)


def executors(h: Harness) -> dict[str, Any]:
    found: dict[str, Any] = h.backend.status()["executors"]
    return found


def started(conf: dict[str, str] | None = None) -> Harness:
    h = make_harness(conf)
    h.backend.start()
    h.run()
    return h


def test_requested_executors_have_a_history_from_the_start() -> None:
    h = started()
    requested = at(h)
    why = CREATED_FOR_3
    assert executors(h)["histories"] == {str(i): f"requested {requested} {why}" for i in (1, 2, 3)}
    assert executors(h)["counts"] == {"requested": 3}
    h.backend.stop()


def test_pending_reason_and_running_are_in_the_history() -> None:
    h = started()
    requested = at(h)
    name = pod_names(h)[0]
    unschedulable(h, name)
    h.run(1.0)
    pending = at(h)
    why = CREATED_FOR_3
    assert executors(h)["histories"]["1"] == (
        f"requested {requested} {why}, pending {pending} (Unschedulable: {UNSCHEDULABLE})"
    )
    h.run(38.0)
    h.set_phase(name, "Running")
    h.run(1.0)
    assert executors(h)["histories"]["1"] == (
        f"requested {requested} {why}, pending {pending} (Unschedulable: {UNSCHEDULABLE}), running {at(h)}"
    )
    h.backend.stop()


def test_an_oom_killed_executor_reads_failed_exit_137_oomkilled(caplog: pytest.LogCaptureFixture) -> None:
    h = started()
    name = pod_names(h)[0]
    h.set_phase(name, "Running")
    h.run(1.0)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.tracking.tracker"):
        oom_killed(h, name)
        h.run(1.0)
        failed_at = at(h)
        h.run(2.0)
    assert f"failed {failed_at} exit 137 OOMKilled" in h.backend.monitor.describe(1)
    assert executors(h)["illegal_transitions"] == 0
    assert not [r for r in caplog.records if "illegal" in r.getMessage()]
    h.backend.stop()


def test_stuck_reasons_are_logged_once_per_change_and_shown_in_status(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = started({"spark.kubernetes.executor.stuckTimeout": "30s"})
    with caplog.at_level(logging.WARNING, logger="k8s_backend.tracking.tracker"):
        for name in pod_names(h):
            unschedulable(h, name)
        h.run(20.0)
        assert executors(h)["stuck"] == []
        h.run(40.0)
        for name in pod_names(h):  # the scheduler re-reports the same reason: not news
            unschedulable(h, name)
        h.run(60.0)
        logged = [r.getMessage() for r in caplog.records if "has been pending" in r.getMessage()]
        assert len(logged) == 3
        assert all(f"Unschedulable: {UNSCHEDULABLE}" in line for line in logged)
        stuck = executors(h)["stuck"]
        assert [s["executor_id"] for s in stuck] == [1, 2, 3]
        assert {s["reason"] for s in stuck} == {f"Unschedulable: {UNSCHEDULABLE}"}
        assert all(s["pending_for"] >= 30 for s in stuck)

        waiting(h, pod_names(h)[0], "CreateContainerConfigError", 'secret "creds" not found')
        h.run(5.0)
    logged = [r.getMessage() for r in caplog.records if "has been pending" in r.getMessage()]
    assert len(logged) == 4
    assert logged[-1].startswith("Executor 1 has been pending")
    assert 'CreateContainerConfigError: secret "creds" not found' in logged[-1]
    assert executors(h)["stuck"][0]["reason"] == 'CreateContainerConfigError: secret "creds" not found'
    h.backend.stop()


def test_the_kubelets_pull_retries_are_one_stuck_reason(caplog: pytest.LogCaptureFixture) -> None:
    # The kubelet alternates ErrImagePull and ImagePullBackOff while it retries: one reason, logged once,
    # shown with the pull error's message (the cause) rather than the back-off's.
    h = started({"spark.kubernetes.executor.stuckTimeout": "30s"})
    name = pod_names(h)[0]
    pull_error = 'failed to pull "spark:4.3.0": not found'
    with caplog.at_level(logging.WARNING, logger="k8s_backend.tracking.tracker"):
        for _ in range(10):
            waiting(h, name, "ErrImagePull", pull_error)
            h.run(5.0)
            waiting(h, name, "ImagePullBackOff", 'Back-off pulling image "spark:4.3.0"')
            h.run(5.0)
    logged = [r.getMessage() for r in caplog.records if "has been pending" in r.getMessage()]
    assert len(logged) == 1
    assert f"ErrImagePull: {pull_error}" in logged[0]
    assert executors(h)["stuck"][0]["reason"] == f"ErrImagePull: {pull_error}"
    h.backend.stop()


def test_an_executor_that_starts_leaves_the_stuck_list() -> None:
    h = started({"spark.kubernetes.executor.stuckTimeout": "10s"})
    name = pod_names(h)[0]
    unschedulable(h, name)
    h.run(15.0)
    assert [s["executor_id"] for s in executors(h)["stuck"]] == [1]
    h.set_phase(name, "Running")
    h.run(1.0)
    assert executors(h)["stuck"] == []
    h.backend.stop()


@pytest.mark.parametrize("reason", ["ErrImagePull", "ImagePullBackOff"])
def test_an_unpullable_image_fails_the_application_fast(reason: str) -> None:
    h = started(
        {
            "spark.kubernetes.container.image": "registry.example/nope:1",
            "spark.kubernetes.executor.imagePullFailTimeout": "30s",
        }
    )
    for name in pod_names(h):
        waiting(h, name, reason, 'failed to pull "registry.example/nope:1": not found')
    h.run(25.0)
    assert h.backend.status()["state"] == "running"
    h.run(10.0)
    assert h.backend.state is BackendState.FAILED
    assert len(h.driver.failures) == 1
    failure = h.driver.failures[0]
    assert "registry.example/nope:1" in failure
    assert "spark.kubernetes.executor.imagePullFailTimeout" in failure
    assert reason in failure
    assert h.backend.status()["failure_reason"] == failure
    h.backend.stop()
    assert h.executor_pods() == []


def test_no_image_failure_when_an_executor_of_the_profile_ran() -> None:
    h = started({"spark.kubernetes.executor.imagePullFailTimeout": "30s"})
    first, *others = pod_names(h)
    h.set_phase(first, "Running")
    for name in others:
        waiting(h, name, "ImagePullBackOff")
    h.run(100.0)
    assert h.backend.state is BackendState.RUNNING
    assert h.driver.failures == []
    h.backend.stop()


def test_no_image_failure_when_the_timeout_is_zero() -> None:
    h = started({"spark.kubernetes.executor.imagePullFailTimeout": "0"})
    for name in pod_names(h):
        waiting(h, name, "ErrImagePull")
    h.run(200.0)
    assert h.backend.state is BackendState.RUNNING
    assert h.driver.failures == []
    h.backend.stop()


def test_quota_exceeded_on_create_is_in_the_executor_history() -> None:
    h = make_harness()
    message = 'pods "test-app-exec-1" is forbidden: exceeded quota: compute, requested: memory=1408Mi'
    h.fake.fail_next("create", PODS, status=403, message=message)
    h.backend.start()
    h.run()
    now = at(h)
    history = executors(h)["histories"]["1"]
    assert history.startswith(f"requested {now}, failed {now} pod creation failed: ")
    assert "exceeded quota: compute" in history
    assert executors(h)["counts"]["failed"] == 1
    assert "test-app-exec-1" not in pod_names(h)
    h.backend.stop()


def test_killed_and_decommissioned_executors_say_so() -> None:
    h = started()
    for name in pod_names(h):
        h.set_phase(name, "Running")
    h.run(1.0)
    h.backend.decommission_executors(["1"])
    h.backend.kill_executors(["2"])
    assert h.backend.monitor.describe(1).endswith("decommission requested")
    assert h.backend.monitor.describe(2).endswith("killed by the driver")
    counts = executors(h)["counts"]
    assert counts["decommissioning"] == 1 and counts["terminating"] == 1 and counts["running"] == 1
    h.backend.stop()


def test_labelling_killed_and_decommissioned_executors_logs_no_illegal_transition(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = started({"spark.kubernetes.executor.decommissionLabel": "spark-decom"})
    for name in pod_names(h):
        h.set_phase(name, "Running")
    h.run(1.0)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.tracking.tracker"):
        h.backend.decommission_executors(["1"])
        h.backend.kill_executors(["2"])
        h.run()
        h.run(1.0)
    assert executors(h)["illegal_transitions"] == 0
    assert not [r for r in caplog.records if "illegal" in r.getMessage()]
    h.backend.stop()


def test_status_times_are_iso_8601_like_the_histories() -> None:
    h = started()
    status = h.backend.status()
    assert status["history"], "the backend's own state changes"
    for move in status["history"]:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", move["time"]), move
    assert status["history"][-1]["time"] == at(h)
    h.backend.stop()


@pytest.mark.parametrize(
    ("conf", "said"),
    [
        ({"spark.storage.decommission.enabled": "true"}, "its blocks migrated (every cached RDD and shuffle"),
        ({}, "block migration off (spark.storage.decommission.enabled=false)"),
    ],
)
def test_a_finished_decommission_reaches_the_timeline_as_the_conf_says(
    conf: dict[str, str], said: str
) -> None:
    h = started({"spark.executor.instances": "1", **conf})
    h.backend.decommission_executors(["1"])
    h.backend.decommission_ended("1", "Finished decommissioning")
    _, markers = h.backend.parts.monitor.recent_activity(10)
    kinds = [kind for _, kind, _ in markers]
    assert kinds[-2:] == ["decommission", "migrated"], markers
    assert markers[-1][2].startswith(f"executor 1 finished decommissioning: {said}"), markers
