"""Autoscaler hints: which executor pods say "not me", and the writer that patches only what changed."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube import PODS
from k8s_backend.lifecycle.autoscaler_hints import (
    DELETION_COST,
    DO_NOT_DISRUPT,
    SAFE_TO_EVICT,
    ExecutorActivity,
    decide_hints,
    hint_annotations,
)
from k8s_backend.lifecycle.autoscaler_hints_writer import AutoscalerHintsWriter
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes

IDLE = ExecutorActivity()
BUSY = ExecutorActivity(tasks=2)
CACHED = ExecutorActivity(rdd_blocks=3)
SHUFFLE = ExecutorActivity(shuffle=True)


def state(
    executor_id: int, phase: PodPhase = PodPhase.RUNNING, *, annotated: bool = False, **meta: Any
) -> ExecutorPodState:
    annotations = {SAFE_TO_EVICT: "false"} if annotated else {}
    pod = {"metadata": {"name": f"app-exec-{executor_id}", "annotations": annotations, **meta}}
    return ExecutorPodState(executor_id, phase, pod)


@pytest.mark.parametrize("facts", [BUSY, CACHED, SHUFFLE, ExecutorActivity(1, 1, True)])
def test_an_executor_with_tasks_blocks_or_shuffle_outputs_is_protected(facts: ExecutorActivity) -> None:
    (change,) = decide_hints([state(1)], {"1": facts}, {}, limit=10)
    assert change.protect and change.pod_name == "app-exec-1" and change.why == facts.describe()


def test_an_idle_annotated_executor_is_released_and_unchanged_ones_cost_nothing() -> None:
    pods = [state(1, annotated=True), state(2, annotated=True), state(3), state(4)]
    activity = {"1": IDLE, "2": SHUFFLE, "3": IDLE, "4": BUSY}
    changes = decide_hints(pods, activity, {}, limit=10)
    assert [(c.executor_id, c.protect) for c in changes] == [(4, True), (1, False)]
    assert changes[1].why == "idle, holds no blocks"


def test_what_was_sent_counts_until_the_watch_shows_it() -> None:
    assert decide_hints([state(1)], {"1": BUSY}, {1: True}, limit=10) == ()
    (change,) = decide_hints([state(1)], {"1": IDLE}, {1: True}, limit=10)
    assert not change.protect


def test_ending_deleted_and_unknown_executors_are_left_alone() -> None:
    pods = [
        state(1, PodPhase.SUCCEEDED),
        state(2, PodPhase.TERMINATING),
        state(3, deletionTimestamp="2026-01-01T00:00:00Z"),
        state(4),  # the driver does not list it (not registered yet)
    ]
    activity = {"1": BUSY, "2": BUSY, "3": BUSY}
    assert decide_hints(pods, activity, {}, limit=10) == ()


def test_the_limit_keeps_protections_first_then_executor_order() -> None:
    pods = [state(i, annotated=i <= 3) for i in range(1, 7)]
    activity = {str(i): IDLE if i <= 3 else BUSY for i in range(1, 7)}
    changes = decide_hints(pods, activity, {}, limit=4)
    assert [(c.executor_id, c.protect) for c in changes] == [(4, True), (5, True), (6, True), (1, False)]


def test_the_patch_sets_or_removes_all_three_annotations() -> None:
    assert hint_annotations(True, 7) == {SAFE_TO_EVICT: "false", DO_NOT_DISRUPT: "true", DELETION_COST: "7"}
    assert hint_annotations(False, 7) == {SAFE_TO_EVICT: None, DO_NOT_DISRUPT: None, DELETION_COST: None}
    # With the Deployment allocator, which scales down by pod-deletion-cost, the hints leave it alone.
    assert hint_annotations(True, None) == {SAFE_TO_EVICT: "false", DO_NOT_DISRUPT: "true"}
    assert hint_annotations(False, None) == {SAFE_TO_EVICT: None, DO_NOT_DISRUPT: None}


class Driver:
    def __init__(self) -> None:
        self.activity: dict[str, ExecutorActivity] | None = {}

    def executor_activity(self) -> dict[str, ExecutorActivity] | None:
        return self.activity


class World:
    def __init__(self, executors: int = 3, max_patches: int = 50) -> None:
        self.clock = ManualClock(0.0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.api = FakeKubernetes(clock=self.clock, watch_blocking=False)
        self.store = ExecutorPodsSnapshotsStore(self.scheduler, self.clock)
        self.driver = Driver()
        for i in range(1, executors + 1):
            self.add_pod(i)
        self.writer = AutoscalerHintsWriter(
            self.api, self.store, self.driver, namespace="default", interval=5.0, deletion_cost=99,
            max_patches=max_patches,
        )  # fmt: skip
        self.writer.start()
        self.scheduler.advance(0.0)  # the first delivery, at once: the driver knows no executor yet

    def add_pod(self, executor_id: int) -> None:
        labels = {"spark-app-selector": "app", "spark-role": "executor", "spark-exec-id": str(executor_id)}
        pod = {
            "metadata": {"name": f"app-exec-{executor_id}", "labels": labels},
            "spec": {"containers": [{"name": "spark-kubernetes-executor", "image": "spark:4.3.0"}]},
        }
        self.api.create(PODS, "default", pod)
        self.api.patch(PODS, "default", f"app-exec-{executor_id}", {"status": {"phase": "Running"}})
        self.store.update_pod(self.api.get(PODS, "default", f"app-exec-{executor_id}"))

    def annotations(self, executor_id: int) -> dict[str, str]:
        pod = self.api.get(PODS, "default", f"app-exec-{executor_id}")
        return dict(pod["metadata"].get("annotations") or {})

    def tick(self) -> None:
        """One interval; the watch's view of every pod follows the writes, as it would."""
        self.scheduler.advance(5.0)
        for pod in self.api.list(PODS, "default").items:
            self.store.update_pod(pod)


def test_the_writer_patches_only_changes_and_bounds_its_traffic() -> None:
    w = World(executors=3)
    w.driver.activity = {"1": BUSY, "2": SHUFFLE, "3": IDLE}
    w.tick()
    assert w.annotations(1) == {SAFE_TO_EVICT: "false", DO_NOT_DISRUPT: "true", DELETION_COST: "99"}
    assert w.annotations(2)[DO_NOT_DISRUPT] == "true" and w.annotations(3) == {}
    assert w.writer.patches == 2
    for _ in range(3):  # nothing changed: no request
        w.tick()
    assert w.writer.patches == 2
    w.driver.activity = {"1": IDLE, "2": SHUFFLE, "3": IDLE}
    w.tick()
    assert w.annotations(1) == {} and w.writer.patches == 3
    assert w.writer.status() == {
        "interval": 5.0,
        "reads": 6,
        "protected_executors": [2],
        "patches": 3,
        "failed_patches": 0,
    }


def test_the_writer_sends_at_most_max_patches_per_interval_and_catches_up() -> None:
    w = World(executors=5, max_patches=2)
    w.driver.activity = {str(i): BUSY for i in range(1, 6)}
    w.tick()
    assert w.writer.patches == 2
    w.tick()
    w.tick()
    assert w.writer.patches == 5 and all(w.annotations(i)[SAFE_TO_EVICT] == "false" for i in range(1, 6))


def test_no_facts_from_the_driver_changes_nothing_and_a_gone_pod_is_no_error() -> None:
    w = World(executors=2)
    w.driver.activity = None
    w.tick()
    assert w.writer.patches == 0
    w.driver.activity = {"1": BUSY, "2": BUSY}
    w.api.delete(PODS, "default", "app-exec-2", grace_period_seconds=0)
    w.scheduler.advance(5.0)  # the store still shows pod 2: its patch finds nothing
    assert w.writer.patches == 1 and w.writer.failed_patches == 0
