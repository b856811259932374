"""The backend's progress line over a scripted run of pods (fake API, manual clock, no sleeping)."""

from __future__ import annotations

import logging

import pytest
from backend_harness import Harness, make_harness

from k8s_backend.kube.port import PODS
from k8s_backend.tracking.progress import LOGGER_NAME

UNSCHEDULABLE = "0/3 nodes are available: 3 Insufficient memory."


def unschedulable(h: Harness, name: str) -> None:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    condition["message"] = UNSCHEDULABLE
    h.fake.patch_status(PODS, "default", name, {"phase": "Pending", "conditions": [condition]})


def pod_names(h: Harness) -> list[str]:
    return sorted(p["metadata"]["name"] for p in h.executor_pods())


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME]


def test_the_line_follows_the_executors_as_they_start(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    h = make_harness({"spark.executor.instances": "3"})
    h.backend.start()
    h.run()
    first, second, third = pod_names(h)
    unschedulable(h, first)
    h.run(1.0)
    h.set_phase(second, "Running")
    h.set_phase(third, "Running")
    h.run(1.0)
    h.driver.registered["2"] = 0.0
    h.run(1.0)
    h.driver.registered["3"] = 0.0
    h.run(5.0)  # nothing changes any more: no more lines
    assert lines(caplog) == [
        "executors: 3 requested, 3 pending, 0 running, 0 registered",
        f"executors: 3 requested, 3 pending (1 Unschedulable: {UNSCHEDULABLE}), 0 running, 0 registered",
        f"executors: 3 requested, 1 pending (Unschedulable: {UNSCHEDULABLE}), 2 running, 0 registered",
        f"executors: 3 requested, 1 pending (Unschedulable: {UNSCHEDULABLE}), 2 running, 1 registered",
        f"executors: 3 requested, 1 pending (Unschedulable: {UNSCHEDULABLE}), 2 running, 2 registered",
    ]
    h.backend.request_total_executors({0: 2})
    h.run(1.0)
    assert lines(caplog)[-1].startswith("executors: 2 requested, 1 pending (")
    h.run(65.0)  # an excess pending pod goes after spark.dynamicAllocation.executorIdleTimeout, as Spark's
    assert lines(caplog)[-1] == "executors: 2 requested, 0 pending, 2 running, 2 registered"
    h.backend.stop()


def test_changes_within_a_second_are_one_line_showing_their_end(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    h = make_harness({"spark.executor.instances": "4"})
    h.backend.start()
    h.run()
    h.run(1.0)
    before = len(lines(caplog))
    for name in pod_names(h):  # four changes, each one noticed at once by the watch
        h.set_phase(name, "Running")
        h.run(0.1)
    h.run(3.0)
    new = lines(caplog)[before:]
    assert new[-1] == "executors: 4 requested, 0 pending, 4 running, 0 registered"
    assert len(new) <= 2
    times = [r.created for r in caplog.records if r.name == LOGGER_NAME]
    assert times == sorted(times)
    h.backend.stop()


def test_interval_zero_turns_the_line_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    h = make_harness({"spark.kubernetes.progress.interval": "0"})
    h.backend.start()
    h.run(3.0)
    for name in pod_names(h):
        h.set_phase(name, "Running")
    h.run(3.0)
    assert h.backend.progress is None
    assert lines(caplog) == []
    h.backend.stop()


def test_the_interval_key_sets_the_least_time_between_lines(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    h = make_harness({"spark.kubernetes.progress.interval": "5s"})
    h.backend.start()
    h.run()
    start = h.scheduler.clock.now()
    for name in pod_names(h):
        h.set_phase(name, "Running")
        h.run(1.0)
    h.run(10.0)
    assert h.backend.progress is not None
    assert h.backend.progress.interval == 5.0
    logged = lines(caplog)
    assert logged[-1] == "executors: 3 requested, 0 pending, 3 running, 0 registered"
    assert len(logged) <= 1 + (h.scheduler.clock.now() - start) // 5
    h.backend.stop()
