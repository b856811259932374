"""ExecutorPodsLifecycleManager end to end on the store, the in-memory fake and a recording driver
(Spark's ExecutorPodsLifecycleManagerSuite)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from lifecycle_fixtures import SPARK_CONTAINER, RecordingDriver, failed_pod, pod, pod_name

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import PODS, STRATEGIC_MERGE_PATCH, Obj
from k8s_backend.lifecycle.decisions import LifecycleDecider
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.lifecycle.executor_events import NO_EVENTS
from k8s_backend.lifecycle.manager import ExecutorPodsLifecycleManager
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes

NS = "default"
INTERVAL = 1.0
RETRY = 30.0


class Removals:
    """An ExecutorEvents listener that hands each removal to a function: the manager tells only removals."""

    def __init__(self, on_removed: Callable[[int, ExecutorLoss], None]) -> None:
        self.removed = on_removed

    def requested(self, executor_id: int, resource_profile_id: int, reason: str) -> None:
        raise AssertionError("the lifecycle manager never requests executors")

    def creation_failed(self, executor_id: int, resource_profile_id: int, detail: str) -> None:
        raise AssertionError("the lifecycle manager creates no pods")

    def killed(self, executor_ids: Sequence[str]) -> None:
        raise AssertionError("kills come from the driver's hooks")

    def decommissioning(self, executor_ids: Sequence[str]) -> None:
        raise AssertionError("decommissions come from the driver's hooks")

    def disruption_noticed(self, executor_id: str, pod_name: str, reason: str) -> None:
        raise AssertionError("notices come from the disruption watcher")

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None:
        raise AssertionError("a decommission's end comes from the driver's hooks")


class World:
    def __init__(
        self,
        *,
        delete_on_termination: bool = True,
        registered: dict[str, float] | None = None,
        with_driver: bool = True,
        listener: Any = None,
    ) -> None:
        self.clock = ManualClock(0.0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.fake = FakeKubernetes(clock=self.clock, watch_blocking=False)
        self.store = ExecutorPodsSnapshotsStore(self.scheduler, self.clock)
        self.driver = RecordingDriver(registered)
        self.manager = ExecutorPodsLifecycleManager(
            self.fake,
            self.store,
            self.clock,
            namespace=NS,
            decider=LifecycleDecider(
                container_name=SPARK_CONTAINER,
                delete_on_termination=delete_on_termination,
                missing_pod_detect_delta=30.0,
                delete_retry_interval=RETRY,
            ),
            interval=INTERVAL,
            driver=self.driver if with_driver else None,
            events=NO_EVENTS if listener is None else Removals(listener),
        )
        self.manager.start()
        self.scheduler.run_until_idle()

    def add_failed(self, exec_id: int) -> Obj:
        """Create the pod in the fake, make it fail there, and return what a watch would report."""
        created = self.fake.create(PODS, NS, failed_pod(exec_id))
        failed = failed_pod(exec_id)
        return self.fake.patch_status(PODS, NS, created["metadata"]["name"], failed["status"])

    def deliver(self) -> None:
        self.scheduler.advance(INTERVAL)

    def deletes(self) -> list[str | None]:
        return [c.name for c in self.fake.calls_of("delete", PODS)]


def test_failed_pod_is_removed_from_the_driver_and_deleted() -> None:
    world = World()
    world.store.update_pod(world.add_failed(1))
    world.deliver()
    ((executor_id, loss),) = world.driver.removed
    assert executor_id == "1"
    assert (loss.exit_code, loss.exit_caused_by_app) == (1, True)
    assert "exited with exit code 1 (generic, look at logs to clarify)" in loss.message
    assert "The API gave the following container statuses:" in loss.message
    assert "\t container name: sidecar" in loss.message
    assert world.deletes() == [pod_name(1)]
    assert world.fake.objects(PODS, NS) == []


def test_same_failed_pod_in_two_batches_is_removed_and_deleted_once() -> None:
    world = World()
    obj = world.add_failed(1)
    world.store.update_pod(obj)
    world.deliver()
    world.store.update_pod(obj)  # e.g. a resync that still saw it
    world.deliver()
    assert len(world.driver.removed) == 1
    assert world.deletes() == [pod_name(1)]


def test_a_failed_pod_still_in_the_view_after_the_retry_interval_is_deleted_again() -> None:
    world = World()
    world.store.update_pod(world.add_failed(1))
    world.deliver()
    # The DELETE went through, but no event told the store: its view still shows the failed pod.
    world.scheduler.advance(RETRY - 2 * INTERVAL)
    assert world.deletes() == [pod_name(1)]
    world.scheduler.advance(2 * INTERVAL)
    assert world.deletes() == [pod_name(1), pod_name(1)]  # the 404 it gets is fine
    assert len(world.driver.removed) == 1


def test_a_failed_delete_is_retried_at_the_next_batch(caplog: pytest.LogCaptureFixture) -> None:
    world = World()
    world.fake.fail_next("delete", PODS, status=500)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.lifecycle.manager"):
        world.store.update_pod(world.add_failed(1))
        world.deliver()
    assert any("will retry" in r.getMessage() for r in caplog.records)
    world.deliver()
    assert world.deletes() == [pod_name(1), pod_name(1)]
    assert world.fake.objects(PODS, NS) == []


def test_not_found_on_delete_is_fine(caplog: pytest.LogCaptureFixture) -> None:
    world = World()
    obj = failed_pod(1)  # never created in the fake: the DELETE answers 404
    with caplog.at_level(logging.WARNING, logger="k8s_backend.lifecycle.manager"):
        world.store.update_pod(obj)
        world.deliver()
        world.deliver()
    assert world.deletes() == [pod_name(1)]  # no retry of a delete that found nothing
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(world.driver.removed) == 1


def test_a_pod_deleted_by_the_watch_is_reported_as_deleted_and_not_deleted_again() -> None:
    world = World()
    obj = failed_pod(2)
    world.store.update_pod(obj, deleted=True)
    world.deliver()
    assert world.driver.removed == [
        ("2", ExecutorLoss(1, False, "The executor with id 2 was deleted by a user or the framework."))
    ]
    assert world.deletes() == []


def test_missing_pod_is_removed_after_the_detect_delta() -> None:
    world = World(registered={"1": 0.007, "driver": 0.0})
    world.clock.set(30.007)
    world.store.replace_snapshot([])
    world.store.notify_subscribers()
    world.scheduler.run_until_idle()
    assert world.driver.removed == []
    world.clock.set(30.008)
    world.store.replace_snapshot([])
    world.store.notify_subscribers()
    world.scheduler.run_until_idle()
    ((executor_id, loss),) = world.driver.removed
    assert executor_id == "1"
    assert loss.exit_code == -1 and not loss.exit_caused_by_app
    assert loss.message == (
        "The executor with ID 1 (registered at 7 ms) was not found in the cluster at the polling time "
        "(30008 ms) which is after the accepted detect delta time (30000 ms) configured by "
        "`spark.kubernetes.executor.missingPodDetectDelta`. The executor may have been deleted but the "
        "driver missed the deletion event. Marking this executor as failed."
    )


def test_a_pod_a_poll_no_longer_lists_is_reported_once_as_deleted_not_later_as_missing_too() -> None:
    # Polling alone: the store delivers a pod a newer list dropped as DELETED. The driver hears of it at
    # that poll (no detect delta: the store knows the list postdates the pod), and the missing-pod check
    # of later polls, while the driver still lists the executor, does not report it a second time.
    losses: list[int] = []
    world = World(registered={"1": 10.0}, listener=lambda i, _: losses.append(i))
    world.store.replace_snapshot([listed(pod(1, "Running"), rv=5)], resource_version="5")
    world.clock.set(20.0)
    world.store.replace_snapshot([], resource_version="30")
    world.deliver()
    assert world.driver.removed == [
        ("1", ExecutorLoss(-1, False, "The executor with id 1 was deleted by a user or the framework."))
    ]
    for at in (50.0, 80.0):
        world.clock.set(at)
        world.store.replace_snapshot([], resource_version=str(int(at)))
        world.deliver()
    assert len(world.driver.removed) == 1
    assert losses == [1]
    assert world.deletes() == [], "a pod that is gone is not deleted"


def listed(obj: Obj, *, rv: int) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}


def test_without_delete_on_termination_the_pod_is_labelled_inactive_and_kept() -> None:
    world = World(delete_on_termination=False)
    world.store.update_pod(world.add_failed(1))
    world.deliver()
    world.deliver()
    assert len(world.driver.removed) == 1
    assert world.deletes() == []
    (patch,) = world.fake.calls_of("patch", PODS)
    assert patch.name == pod_name(1)
    assert patch.body == {"metadata": {"labels": {"spark-exec-inactive": "true"}}}
    (kept,) = world.fake.objects(PODS, NS)
    assert kept["metadata"]["labels"]["spark-exec-inactive"] == "true"


def test_the_inactive_label_is_a_strategic_merge_patch(mocker: Any) -> None:
    world = World(delete_on_termination=False)
    obj = world.add_failed(1)
    patch = mocker.spy(world.fake, "patch")
    world.store.update_pod(obj)
    world.deliver()
    assert patch.call_args.kwargs["patch_type"] == STRATEGIC_MERGE_PATCH


def test_a_failed_inactive_label_patch_is_retried() -> None:
    world = World(delete_on_termination=False)
    world.fake.fail_next("patch", PODS, status=500)
    world.store.update_pod(world.add_failed(1))
    world.deliver()
    world.deliver()
    assert len(world.fake.calls_of("patch", PODS)) == 2
    (kept,) = world.fake.objects(PODS, NS)
    assert kept["metadata"]["labels"]["spark-exec-inactive"] == "true"


def test_inactive_labelled_pods_are_ignored() -> None:
    world = World()
    world.store.update_pod(failed_pod(1, labels={"spark-exec-inactive": "true"}))
    world.deliver()
    assert world.driver.removed == []
    assert world.fake.calls == [c for c in world.fake.calls if c.verb == "create"]


def test_the_listener_hears_of_every_removal_and_its_failure_does_not_stop_the_driver_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[tuple[int, ExecutorLoss]] = []

    def listener(executor_id: int, loss: ExecutorLoss) -> None:
        heard.append((executor_id, loss))
        raise RuntimeError("listener bug")

    world = World(listener=listener)
    with caplog.at_level(logging.ERROR, logger="k8s_backend.lifecycle.manager"):
        world.store.update_pod(world.add_failed(1))
        world.deliver()
    assert [i for i, _ in heard] == [1]
    assert [i for i, _ in world.driver.removed] == ["1"]
    assert any("listener failed" in r.getMessage() for r in caplog.records)


def test_a_driver_failure_is_logged_and_cleanup_continues(
    mocker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    world = World()
    mocker.patch.object(world.driver, "remove_executor", side_effect=RuntimeError("driver down"))
    with caplog.at_level(logging.ERROR, logger="k8s_backend.lifecycle.manager"):
        world.store.update_pod(world.add_failed(1))
        world.deliver()
    assert world.deletes() == [pod_name(1)]
    assert any("Could not tell the driver" in r.getMessage() for r in caplog.records)


def test_without_a_driver_losses_are_still_recorded_and_pods_deleted() -> None:
    world = World(with_driver=False)
    world.store.update_pod(world.add_failed(1))
    world.deliver()
    assert world.deletes() == [pod_name(1)]
    (recorded,) = world.manager.recent_losses
    assert (recorded.executor_id, recorded.exit_code, recorded.exit_caused_by_app) == (1, 1, True)
    assert recorded.summary == "The executor with id 1 exited with code 1 (generic, look at logs to clarify)."
    assert recorded.time == INTERVAL


def test_registered_executors_leave_out_the_driver() -> None:
    world = World(registered={"1": 5.0, "driver": 0.0, "12": 7.0})
    assert dict(world.manager.registered_executors()) == {1: 5.0, 12: 7.0}
