"""ExecutorMonitor: feeds the tracker from the store and driver hooks, and fails on unpullable images."""

from __future__ import annotations

import logging
import re

import pytest
from executor_tracking_pods import IMAGE, RULES, T0, UNSCHEDULABLE, batch, make_tracker, pod, state

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.lifecycle.block_migration import BlockMigration
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.tracking.monitor import ExecutorMonitor
from k8s_backend.tracking.states import ExecutorState
from k8s_backend.tracking.tracker import ExecutorTracker

S = ExecutorState


def clock_times(history: str) -> str:
    """A history with each of its ISO 8601 times (this test's day, UTC, milliseconds) cut to HH:MM:SS;
    a time in any other form is left alone, so that the comparison fails."""
    return re.sub(r"\b2026-01-01T(\d\d:\d\d:\d\d)\.000Z", r"\1", history)


class Harness:
    def __init__(self, tracker: ExecutorTracker | None = None) -> None:
        self.clock = ManualClock(T0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.store = ExecutorPodsSnapshotsStore(self.scheduler, self.clock, RULES)
        self.tracker = tracker or make_tracker(stuck_timeout=60, image_pull_timeout=120)
        self.failures: list[str] = []
        self.monitor = ExecutorMonitor(
            self.tracker, self.store, self.clock, interval=1.0, on_application_failed=self.failures.append
        )

    def state_of(self, executor_id: int) -> ExecutorState | None:
        record = self.tracker.record(executor_id)
        return None if record is None else record.state


def test_start_subscribes_to_the_store_and_pod_updates_move_executors() -> None:
    h = Harness()
    h.monitor.requested(1, 0)
    h.monitor.start()
    h.store.update_pod(pod(1, "Running"))
    h.scheduler.advance(1.0)
    assert h.state_of(1) is S.RUNNING


def test_hooks_take_string_ids_and_ignore_non_executor_ones() -> None:
    h = Harness()
    for executor_id in (1, 2):
        h.monitor.requested(executor_id, 0)
    h.monitor.killed(["1", "driver"])
    h.monitor.decommissioning(["2", ""])
    assert h.state_of(1) is S.TERMINATING
    assert h.state_of(2) is S.DECOMMISSIONING
    h.monitor.lost(2, "heartbeat timed out")
    assert h.state_of(2) is S.LOST


def test_removed_and_creation_failed_are_recorded_at_the_clock_time() -> None:
    h = Harness()
    h.monitor.requested(1, 0)
    h.clock.advance(5)
    h.monitor.removed(1, ExecutorLoss(-1, False, "executor heartbeat timed out\nmore detail"))
    h.monitor.creation_failed(2, 0, "exceeded quota: compute")
    lost = "requested 12:00:01, lost 12:00:06 executor heartbeat timed out"
    assert clock_times(h.monitor.describe(1)) == lost
    assert (
        clock_times(h.monitor.describe(2))
        == "requested 12:00:06, failed 12:00:06 pod creation failed: exceeded quota: compute"
    )


def test_stuck_executors_are_kept_as_notices_and_listed_as_reasons() -> None:
    h = Harness()
    h.monitor.requested(1, 0)
    h.monitor.on_batch(batch(state(1, "Pending", unschedulable=UNSCHEDULABLE)))
    h.clock.advance(60)
    h.monitor.on_batch(batch())
    h.monitor.on_batch(batch())
    assert [n.executor_id for n in h.monitor.stuck_notices] == [1]
    assert h.monitor.stuck_reasons() == [f"executor 1: Unschedulable: {UNSCHEDULABLE}"]
    stuck = h.monitor.summary()["stuck"]
    assert isinstance(stuck, list) and stuck[0]["executor_id"] == 1


def test_only_the_last_hundred_stuck_notices_are_kept() -> None:
    h = Harness()
    for executor_id in range(1, 151):
        h.monitor.requested(executor_id, 0)
    h.monitor.on_batch(batch(*(state(i, "Pending", unschedulable=UNSCHEDULABLE) for i in range(1, 151))))
    h.clock.advance(60)
    h.monitor.on_batch(batch())
    assert len(h.monitor.stuck_notices) == 100


def test_an_unpullable_image_fails_the_application_once_with_a_clear_reason() -> None:
    h = Harness()
    h.monitor.requested(1, 0)
    h.monitor.requested(2, 0)
    pulling = [state(i, "Pending", waiting="ImagePullBackOff", waiting_message="not found") for i in (1, 2)]
    h.monitor.on_batch(batch(*pulling))
    h.clock.advance(119)
    h.monitor.on_batch(batch())
    assert h.failures == []
    h.clock.advance(1)
    h.monitor.on_batch(batch())
    h.clock.advance(10)
    h.monitor.on_batch(batch())
    assert len(h.failures) == 1
    reason = h.failures[0]
    assert f"Executor image {IMAGE} cannot be pulled (ImagePullBackOff: not found)" in reason
    assert "spark.kubernetes.executor.imagePullFailTimeout=0" in reason
    assert "spark.kubernetes.container.image.pullSecrets" in reason


def test_no_failure_listener_means_no_failure() -> None:
    h = Harness()
    monitor = ExecutorMonitor(h.tracker, h.store, h.clock)
    monitor.requested(1, 0)
    monitor.on_batch(batch(state(1, "Pending", waiting="ErrImagePull")))
    h.clock.advance(500)
    monitor.on_batch(batch())  # must not raise
    assert h.tracker.record(1) is not None


def test_an_executor_that_ends_is_logged_once_with_its_history_in_iso_times(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness()
    h.monitor.requested(1, 0)
    h.monitor.requested(2, 0)
    h.monitor.start()
    with caplog.at_level(logging.INFO, logger="k8s_backend.tracking.monitor"):
        h.store.update_pod(pod(1, "Running"))
        h.scheduler.advance(1.0)
        h.store.update_pod(pod(1, "Failed", exit_code=137))
        h.scheduler.advance(1.0)
        h.store.update_pod(pod(1, "Failed", exit_code=137))  # seen again: not told again
        h.scheduler.advance(1.0)
        h.monitor.lost(2, "heartbeat timed out")
    ended = [r.getMessage() for r in caplog.records if "ended:" in r.getMessage()]
    assert len(ended) == 2, ended
    assert re.fullmatch(
        r"Executor 1 ended: requested \S+Z, running \S+Z, failed 2026-01-01T\d\d:\d\d:\d\d\.000Z exit 137.*",
        ended[0],
    ), ended[0]
    assert ended[1].startswith("Executor 2 ended: requested ") and "lost" in ended[1]


def test_a_disruption_notice_and_the_noticed_executors_end_are_markers_on_the_timeline() -> None:
    h = Harness()
    for executor_id in (1, 2):
        h.monitor.requested(executor_id, 0)
    h.clock.advance(2)
    h.monitor.disruption_noticed("1", "app-exec-1", "node node-2 is cordoned")
    h.monitor.decommissioning(["1"])
    h.clock.advance(3)
    h.monitor.removed(1, ExecutorLoss(0, False, "Executor decommissioned\nmore"))
    h.monitor.removed(2, ExecutorLoss(137, False, ""))  # no notice: no "gone" marker
    h.monitor.disruption_noticed("driver", "app-driver", "ignored: not an executor")
    _, markers = h.monitor.recent_activity(10)
    assert [(t - T0, kind, text) for t, kind, text in markers] == [
        (2.0, "notice", "executor 1 (pod app-exec-1): node node-2 is cordoned"),
        (2.0, "decommission", "decommissioning 1"),
        (
            5.0,
            "gone",
            "executor 1, decommissioned on notice (node node-2 is cordoned), is gone: "
            "Executor decommissioned",
        ),
    ]
    page = h.monitor.timeline("app").markers
    assert [m.kind for m in page] == ["notice", "decommission", "gone"]


def test_a_finished_decommission_is_a_migrated_marker_between_decommission_and_gone() -> None:
    h = Harness()
    monitor = ExecutorMonitor(
        h.tracker, h.store, h.clock, block_migration=BlockMigration(storage=True, rdd_blocks=True)
    )
    for executor_id in (1, 2):
        monitor.requested(executor_id, 0)
    monitor.disruption_noticed("1", "app-exec-1", "node node-2 is cordoned")
    monitor.decommissioning(["1", "2"])
    h.clock.advance(4)
    monitor.decommission_ended("1", "Finished decommissioning")
    monitor.decommission_ended("2", "Executor decommission: lost first")  # did not finish: no marker
    h.clock.advance(1)
    monitor.removed(1, ExecutorLoss(0, False, "Finished decommissioning"))
    _, markers = monitor.recent_activity(10)
    assert [(t - T0, kind) for t, kind, _ in markers] == [
        (0.0, "notice"),
        (0.0, "decommission"),
        (4.0, "migrated"),
        (5.0, "gone"),
    ]
    assert markers[2][2] == (
        "executor 1 finished decommissioning: its blocks migrated (every cached RDD and shuffle block it "
        "held; spark.storage.decommission.enabled=true)"
    )
    assert [m.kind for m in monitor.timeline("app").markers] == ["notice", "decommission", "migrated", "gone"]


def test_without_block_migration_settings_the_marker_says_migration_was_off() -> None:
    h = Harness()
    h.monitor.decommissioning(["1"])
    h.monitor.decommission_ended("1", "Finished decommissioning")
    _, markers = h.monitor.recent_activity(10)
    assert markers[-1][1:] == (
        "migrated",
        "executor 1 finished decommissioning: block migration off "
        "(spark.storage.decommission.enabled=false), its blocks were not migrated",
    )
