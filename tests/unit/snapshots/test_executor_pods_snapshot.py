"""ExecutorPodsSnapshot and SnapshotBatch: immutable views and what a delivery says."""

from __future__ import annotations

import pytest
from snapshot_pods import executor_pod

from k8s_backend.snapshots.snapshot import EMPTY_SNAPSHOT, ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase, PodStateRules

RULES = PodStateRules()


def state(exec_id: int, phase: str = "Running") -> ExecutorPodState:
    result = RULES.to_state(executor_pod(exec_id, phase))
    assert result is not None
    return result


def test_empty_snapshot_has_no_pods_and_ts_zero() -> None:
    assert len(EMPTY_SNAPSHOT) == 0
    assert EMPTY_SNAPSHOT.full_snapshot_ts == 0.0
    assert ExecutorPodsSnapshot() == EMPTY_SNAPSHOT


def test_of_builds_a_snapshot_keyed_by_executor_id() -> None:
    snapshot = ExecutorPodsSnapshot.of([state(1), state(2, "Pending")], full_snapshot_ts=12.5)
    assert set(snapshot.pods) == {1, 2}
    assert snapshot.pods[2].phase is PodPhase.PENDING
    assert snapshot.full_snapshot_ts == 12.5


def test_with_update_adds_new_ids_and_replaces_existing_ones() -> None:
    original = ExecutorPodsSnapshot.of([state(1), state(2)], full_snapshot_ts=5.0)
    added = original.with_update(state(3, "Pending"))
    replaced = added.with_update(state(1, "Failed"))
    assert set(added.pods) == {1, 2, 3}
    assert replaced.pods[1].phase is PodPhase.FAILED
    assert replaced.pods[3].phase is PodPhase.PENDING
    # The update never changes the time of the last full resync, nor the snapshots it came from.
    assert replaced.full_snapshot_ts == 5.0
    assert set(original.pods) == {1, 2}
    assert original.pods[1].phase is PodPhase.RUNNING


def test_snapshot_pods_cannot_be_mutated() -> None:
    snapshot = ExecutorPodsSnapshot.of([state(1)])
    with pytest.raises(TypeError):
        snapshot.pods[2] = state(2)  # type: ignore[index]


def test_in_phase_filters_by_state() -> None:
    snapshot = ExecutorPodsSnapshot.of([state(1), state(2, "Pending"), state(3, "Failed")])
    assert [s.executor_id for s in snapshot.in_phase(PodPhase.PENDING, PodPhase.FAILED)] == [2, 3]


def test_batch_changed_reflects_updates_resync_or_first_delivery() -> None:
    assert not SnapshotBatch((), EMPTY_SNAPSHOT).changed
    assert SnapshotBatch((state(1),), EMPTY_SNAPSHOT).changed
    assert SnapshotBatch((), EMPTY_SNAPSHOT, resynced=True).changed
    assert SnapshotBatch((), EMPTY_SNAPSHOT, first=True).changed


def test_batch_seen_ids_cover_updates_and_the_current_view() -> None:
    batch = SnapshotBatch((state(5),), ExecutorPodsSnapshot.of([state(1), state(2)]))
    assert batch.seen_executor_ids() == {1, 2, 5}
