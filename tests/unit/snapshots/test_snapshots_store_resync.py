"""The store's versioning rules: a full list never rolls back what the store saw happen after it.

Spark replaced its view wholesale on every poll, so a list taken before a watch event undid that event,
forgot pods created after the list, and revived pods deleted after it. Each test below pins one rule.
"""

from __future__ import annotations

import pytest
from snapshot_pods import executor_pod

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore


@pytest.fixture
def scheduler() -> DeterministicScheduler:
    return DeterministicScheduler(ManualClock(0.0))


@pytest.fixture
def store(scheduler: DeterministicScheduler) -> ExecutorPodsSnapshotsStore:
    return ExecutorPodsSnapshotsStore(scheduler, scheduler.clock)


def phases(store: ExecutorPodsSnapshotsStore) -> dict[int, PodPhase]:
    return {i: s.phase for i, s in store.current().pods.items()}


# ------------------------------------------------------------------------------------ watch events alone


def test_an_older_event_does_not_overwrite_a_newer_state(store: ExecutorPodsSnapshotsStore) -> None:
    store.update_pod(executor_pod(1, "Failed", rv=10))
    store.update_pod(executor_pod(1, "Running", rv=5))
    assert phases(store) == {1: PodPhase.FAILED}


def test_an_older_event_is_not_delivered(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    store.update_pod(executor_pod(1, "Failed", rv=10))
    store.update_pod(executor_pod(1, "Running", rv=5))
    scheduler.advance(1.0)
    assert [(s.executor_id, s.phase) for b in batches for s in b.updates] == [(1, PodPhase.FAILED)]


def test_a_newer_event_replaces_the_state(store: ExecutorPodsSnapshotsStore) -> None:
    store.update_pod(executor_pod(1, "Running", rv=5))
    store.update_pod(executor_pod(1, "Failed", rv=10))
    assert phases(store) == {1: PodPhase.FAILED}


# ------------------------------------------------------------------------------------- stale full lists


def test_a_stale_list_does_not_overwrite_a_newer_watch_state(store: ExecutorPodsSnapshotsStore) -> None:
    store.update_pod(executor_pod(1, "Running", rv=5))
    store.update_pod(executor_pod(1, "Failed", rv=20))
    store.replace_snapshot([executor_pod(1, "Running", rv=5)], resource_version="15")
    assert phases(store) == {1: PodPhase.FAILED}


def test_a_stale_list_does_not_drop_pods_created_after_it(store: ExecutorPodsSnapshotsStore) -> None:
    store.update_pod(executor_pod(1, "Running", rv=5))
    store.update_pod(executor_pod(2, "Pending", rv=20))  # created after the list below was taken
    store.replace_snapshot([executor_pod(1, "Running", rv=5)], resource_version="15")
    assert phases(store) == {1: PodPhase.RUNNING, 2: PodPhase.PENDING}


def test_a_stale_list_does_not_resurrect_a_pod_deleted_after_it(store: ExecutorPodsSnapshotsStore) -> None:
    store.update_pod(executor_pod(1, "Running", rv=5))
    store.update_pod(executor_pod(1, "Running", rv=20), deleted=True)
    store.replace_snapshot([executor_pod(1, "Running", rv=5)], resource_version="15")
    assert phases(store) == {1: PodPhase.DELETED}


def test_a_stale_list_that_lacks_a_pod_deleted_after_it_keeps_the_deletion(
    store: ExecutorPodsSnapshotsStore,
) -> None:
    store.update_pod(executor_pod(1, "Running", rv=20), deleted=True)
    store.replace_snapshot([], resource_version="15")
    assert phases(store) == {1: PodPhase.DELETED}


def test_a_stale_list_delivers_no_rollback_to_subscribers(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    store.update_pod(executor_pod(1, "Failed", rv=20))
    scheduler.advance(1.0)
    store.replace_snapshot([executor_pod(1, "Running", rv=5)], resource_version="15")
    scheduler.advance(1.0)
    assert batches[-1].resynced
    assert batches[-1].updates == ()


# -------------------------------------------------------------------------------------- newer full lists


def test_a_newer_list_drops_vanished_pods(store: ExecutorPodsSnapshotsStore) -> None:
    store.update_pod(executor_pod(1, "Running", rv=5))
    store.update_pod(executor_pod(2, "Running", rv=6))
    store.replace_snapshot([executor_pod(2, "Running", rv=6)], resource_version="30")
    assert phases(store) == {2: PodPhase.RUNNING}


def test_a_newer_list_drops_deleted_pods_it_no_longer_lists(store: ExecutorPodsSnapshotsStore) -> None:
    store.update_pod(executor_pod(1, "Running", rv=20), deleted=True)
    store.replace_snapshot([], resource_version="30")
    assert phases(store) == {}


def test_a_newer_list_overwrites_an_older_watch_state(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    store.update_pod(executor_pod(1, "Running", rv=5))
    scheduler.advance(1.0)
    store.replace_snapshot([executor_pod(1, "Failed", rv=12)], resource_version="30")
    scheduler.advance(1.0)
    assert phases(store) == {1: PodPhase.FAILED}
    assert [(s.executor_id, s.phase) for s in batches[-1].updates] == [(1, PodPhase.FAILED)]


def test_a_list_adds_pods_the_watch_missed(store: ExecutorPodsSnapshotsStore) -> None:
    store.replace_snapshot([executor_pod(4, "Pending", rv=3)], resource_version="30")
    assert phases(store) == {4: PodPhase.PENDING}


def test_a_list_without_resource_version_replaces_the_view_wholesale(
    store: ExecutorPodsSnapshotsStore,
) -> None:
    store.update_pod(executor_pod(1, "Running", rv=50))
    store.replace_snapshot([executor_pod(2, "Running", rv=10)])
    assert phases(store) == {2: PodPhase.RUNNING}


def test_the_full_snapshot_time_is_the_clock_at_the_list(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    scheduler.clock.set(30.0)
    store.replace_snapshot([executor_pod(1, rv=1)], resource_version="30")
    assert store.current().full_snapshot_ts == 30.0


def test_a_lagging_event_older_than_the_last_list_does_not_resurrect_a_dropped_pod(
    store: ExecutorPodsSnapshotsStore,
) -> None:
    # The poll's list (RV 30) no longer has pod 1: it was deleted at RV 20. The watch lags behind and
    # now delivers the pod's MODIFIED event from RV 18. That event predates the list, so it must not
    # bring a ghost "running" executor back into the view.
    store.update_pod(executor_pod(1, "Running", rv=5))
    store.replace_snapshot([], resource_version="30")
    store.update_pod(executor_pod(1, "Running", rv=18))
    assert phases(store) == {}


def test_a_list_delivers_a_new_version_of_a_pod_in_the_same_phase(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    # Polling alone (no watch): a Pending pod that became Unschedulable must reach the subscribers, or the
    # user is never told why it waits.
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    store.replace_snapshot([executor_pod(1, "Pending", rv=3)], resource_version="3")
    scheduler.advance(1.0)
    unschedulable = executor_pod(1, "Pending", rv=7)
    unschedulable["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
    ]
    store.replace_snapshot([unschedulable], resource_version="7")
    scheduler.advance(1.0)
    assert [(s.executor_id, s.resource_version) for s in batches[-1].updates] == [(1, 7)]
    store.replace_snapshot([unschedulable], resource_version="9")  # the same version again: nothing new
    scheduler.advance(1.0)
    assert batches[-1].updates == ()


# ------------------------------------------------------------- what subscribers hear of a pod a list drops


def delivered(batches: list[SnapshotBatch]) -> list[tuple[int, PodPhase]]:
    return [(s.executor_id, s.phase) for b in batches for s in b.updates]


def test_a_pod_a_newer_list_drops_is_delivered_as_deleted(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    # Polling alone (no watch): a list is the only way subscribers learn that a pod is gone. The view
    # drops it; every subscriber must hear it, as a watch's DELETED event would have told them.
    first: list[SnapshotBatch] = []
    second: list[SnapshotBatch] = []
    store.add_subscriber(1.0, first.append)
    store.add_subscriber(1.0, second.append)
    store.replace_snapshot([executor_pod(1, "Running", rv=5), executor_pod(2, "Running", rv=6)], "10")
    scheduler.advance(1.0)
    first.clear()
    second.clear()
    store.replace_snapshot([executor_pod(2, "Running", rv=6)], resource_version="30")
    scheduler.advance(1.0)
    assert phases(store) == {2: PodPhase.RUNNING}
    assert delivered(first) == delivered(second) == [(1, PodPhase.DELETED)]
    (gone,) = first[-1].updates
    assert gone.name == "spark-app-id-exec-1", "the last pod seen goes with it (its exit code, its name)"
    store.replace_snapshot([executor_pod(2, "Running", rv=6)], resource_version="40")
    scheduler.advance(1.0)
    assert delivered(first[-1:]) == [], "told once: the next list has nothing new"


def test_a_pod_whose_deletion_was_already_delivered_is_not_delivered_again_when_a_list_drops_it(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    store.update_pod(executor_pod(1, "Running", rv=5))
    store.update_pod(executor_pod(1, "Running", rv=20), deleted=True)
    store.replace_snapshot([], resource_version="30")
    scheduler.advance(1.0)
    assert delivered(batches) == [(1, PodPhase.RUNNING), (1, PodPhase.DELETED)]


def test_a_stale_list_delivers_no_deletion_of_a_pod_created_after_it(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    store.update_pod(executor_pod(1, "Pending", rv=40))
    store.replace_snapshot([], resource_version="30")
    scheduler.advance(1.0)
    assert delivered(batches) == [(1, PodPhase.PENDING)]
