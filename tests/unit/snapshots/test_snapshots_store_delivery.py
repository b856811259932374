"""ExecutorPodsSnapshotsStore delivery: per-subscriber cadence, every change exactly once, off-schedule
notification, failures and stop (Spark's ExecutorPodsSnapshotsStoreSuite, plus the port's batch model)."""

from __future__ import annotations

import logging

import pytest
from snapshot_pods import executor_pod

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import PodPhase, PodStateRules
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore


class Recorder:
    """A subscriber that records each batch with the time it arrived."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.batches: list[tuple[float, SnapshotBatch]] = []

    def __call__(self, batch: SnapshotBatch) -> None:
        self.batches.append((self.clock.now(), batch))

    def times(self) -> list[float]:
        return [t for t, _ in self.batches]

    def updates(self) -> list[tuple[int, PodPhase]]:
        """Every update received, in order, across all batches."""
        return [(s.executor_id, s.phase) for _, b in self.batches for s in b.updates]

    def last(self) -> SnapshotBatch:
        return self.batches[-1][1]


@pytest.fixture
def scheduler() -> DeterministicScheduler:
    return DeterministicScheduler(ManualClock(0.0))


@pytest.fixture
def store(scheduler: DeterministicScheduler) -> ExecutorPodsSnapshotsStore:
    return ExecutorPodsSnapshotsStore(scheduler, scheduler.clock)


def test_first_delivery_is_immediate_then_each_subscriber_gets_every_change_once_at_its_cadence(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    fast, slow = Recorder(scheduler.clock), Recorder(scheduler.clock)
    store.add_subscriber(1.0, fast)
    store.add_subscriber(2.0, slow)
    scheduler.run_until_idle()
    assert fast.times() == [0.0] and slow.times() == [0.0]
    for recorder in (fast, slow):
        first = recorder.last()
        assert first.first and first.updates == () and len(first.snapshot) == 0

    store.update_pod(executor_pod(1, "Pending"))
    scheduler.advance(1.0)  # t=1: only the 1 s subscriber is due
    assert fast.updates() == [(1, PodPhase.PENDING)]
    assert slow.times() == [0.0]

    store.update_pod(executor_pod(1, "Running"))
    store.update_pod(executor_pod(2, "Pending"))
    scheduler.advance(1.0)  # t=2: both are due
    store.update_pod(executor_pod(2, "Running"))
    scheduler.advance(2.0)  # t=3 (fast), t=4 (both)

    expected = [(1, PodPhase.PENDING), (1, PodPhase.RUNNING), (2, PodPhase.PENDING), (2, PodPhase.RUNNING)]
    assert fast.times() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert slow.times() == [0.0, 2.0, 4.0]
    # Every event exactly once, in order, whatever the cadence: nothing repeated, nothing lost.
    assert fast.updates() == expected
    assert slow.updates() == expected
    # The slow subscriber received the three events of its first 2 s in one batch.
    assert [(s.executor_id, s.phase) for s in slow.batches[1][1].updates] == expected[:3]
    for recorder in (fast, slow):
        assert {i: s.phase for i, s in recorder.last().snapshot.pods.items()} == {
            1: PodPhase.RUNNING,
            2: PodPhase.RUNNING,
        }


def test_only_the_first_delivery_is_marked_first(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    scheduler.advance(3.0)
    assert [b.first for _, b in recorder.batches] == [True, False, False, False]


def test_with_no_events_a_subscriber_still_gets_one_empty_first_delivery(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    scheduler.run_until_idle()
    assert len(recorder.batches) == 1
    batch = recorder.last()
    assert batch.first and batch.updates == () and len(batch.snapshot) == 0 and not batch.resynced
    scheduler.advance(2.0)
    # Later deliveries without events are empty (subscribers must cope with them, as in Spark).
    assert all(not b.changed for _, b in recorder.batches[1:])


def test_a_late_subscriber_starts_from_the_current_view(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    store.update_pod(executor_pod(1, "Running"))
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    scheduler.run_until_idle()
    first = recorder.last()
    assert first.first
    assert set(first.snapshot.pods) == {1}


def test_replace_snapshot_after_update_pod(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    scheduler.run_until_idle()
    store.update_pod(executor_pod(1, "Running"))
    scheduler.advance(1.0)
    after_update = recorder.last()
    assert set(after_update.snapshot.pods) == {1}
    assert after_update.snapshot.full_snapshot_ts == 0.0
    assert not after_update.resynced

    scheduler.advance(99.0)  # t=100
    store.replace_snapshot([executor_pod(2, "Running")])
    scheduler.advance(1.0)
    after_resync = recorder.last()
    # A full list without a resourceVersion replaces the view wholesale, as Spark does.
    assert set(after_resync.snapshot.pods) == {2}
    assert after_resync.snapshot.full_snapshot_ts == 100.0
    assert after_resync.resynced
    # Pod 1 left the view: subscribers hear it is gone (Spark's subscribers saw a snapshot without it).
    assert [(s.executor_id, s.phase) for s in after_resync.updates] == [
        (2, PodPhase.RUNNING),
        (1, PodPhase.DELETED),
    ]
    scheduler.advance(1.0)
    assert not recorder.last().resynced


def test_update_pod_keeps_the_time_of_the_last_full_resync(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    scheduler.clock.set(50.0)
    store.replace_snapshot([])
    scheduler.clock.set(80.0)
    store.update_pod(executor_pod(1))
    assert store.current().full_snapshot_ts == 50.0


def test_a_resync_that_changes_nothing_delivers_no_updates(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    store.update_pod(executor_pod(1, "Running"))
    scheduler.advance(1.0)
    store.replace_snapshot([executor_pod(1, "Running")])
    scheduler.advance(1.0)
    batch = recorder.last()
    assert batch.resynced and batch.updates == ()


def test_notify_subscribers_delivers_off_schedule(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(10.0, recorder)
    scheduler.run_until_idle()
    store.update_pod(executor_pod(1, "Failed"))
    scheduler.run_until_idle()
    assert len(recorder.batches) == 1  # not due yet
    store.notify_subscribers()
    scheduler.run_until_idle()  # no time passes
    assert recorder.times() == [0.0, 0.0]
    assert recorder.updates() == [(1, PodPhase.FAILED)]


def test_a_subscription_delivers_to_its_subscriber_alone_off_schedule(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    woken, other = Recorder(scheduler.clock), Recorder(scheduler.clock)
    subscription = store.add_subscriber(10.0, woken)
    store.add_subscriber(10.0, other)
    scheduler.run_until_idle()
    store.update_pod(executor_pod(1, "Failed"))
    subscription.notify()
    scheduler.run_until_idle()  # no time passes
    assert woken.times() == [0.0, 0.0] and woken.updates() == [(1, PodPhase.FAILED)]
    assert other.times() == [0.0]
    scheduler.advance(10.0)
    assert other.updates() == [(1, PodPhase.FAILED)]  # at its own cadence, nothing lost


def test_deleted_event_marks_the_pod_deleted(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    store.update_pod(executor_pod(1, "Running"), deleted=True)
    assert store.current().pods[1].phase is PodPhase.DELETED


def test_pods_without_an_executor_id_are_not_stored_nor_delivered(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    store.update_pod(executor_pod(None))
    store.update_pod(executor_pod("EXECID"))
    store.replace_snapshot([executor_pod(None), executor_pod(3)])
    scheduler.advance(1.0)
    assert set(store.current().pods) == {3}
    assert recorder.updates() == [(3, PodPhase.RUNNING)]


def test_the_store_uses_its_pod_state_rules(scheduler: DeterministicScheduler) -> None:
    store = ExecutorPodsSnapshotsStore(scheduler, scheduler.clock, PodStateRules(container_name="custom"))
    pod = executor_pod(
        1,
        "Running",
        containers=[{"name": "custom", "state": {"terminated": {"exitCode": 2}}}],
    )
    store.update_pod(pod)
    assert store.current().pods[1].phase is PodPhase.FAILED


def test_current_is_immutable_and_reused_until_something_changes(
    store: ExecutorPodsSnapshotsStore,
) -> None:
    store.update_pod(executor_pod(1))
    first = store.current()
    assert store.current() is first
    store.update_pod(executor_pod(2))
    second = store.current()
    assert second is not first
    assert set(first.pods) == {1}  # an earlier view never changes under its holder
    assert set(second.pods) == {1, 2}


def test_an_exception_in_a_callback_is_logged_and_delivery_continues(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[SnapshotBatch] = []

    def flaky(batch: SnapshotBatch) -> None:
        calls.append(batch)
        if len(calls) == 2:
            raise ValueError("subscriber bug")

    other = Recorder(scheduler.clock)
    store.add_subscriber(1.0, flaky)
    store.add_subscriber(1.0, other)
    scheduler.run_until_idle()
    store.update_pod(executor_pod(1))
    with caplog.at_level(logging.ERROR, logger="k8s_backend.snapshots.store"):
        scheduler.advance(1.0)
    assert any("Exception when notifying snapshot subscriber" in r.getMessage() for r in caplog.records)
    store.update_pod(executor_pod(2))
    scheduler.advance(1.0)
    assert len(calls) == 3
    assert [s.executor_id for s in calls[2].updates] == [2]
    assert other.updates() == [(1, PodPhase.RUNNING), (2, PodPhase.RUNNING)]


def test_stop_cancels_deliveries_and_ignores_later_changes(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    scheduler.run_until_idle()
    store.update_pod(executor_pod(1))
    store.stop()
    store.update_pod(executor_pod(2))
    store.replace_snapshot([executor_pod(3)])
    store.notify_subscribers()
    scheduler.advance(5.0)
    assert len(recorder.batches) == 1
    assert scheduler.pending() == 0
    assert set(store.current().pods) == {1}


def test_a_delivery_already_queued_when_stop_is_called_does_not_run(
    scheduler: DeterministicScheduler, store: ExecutorPodsSnapshotsStore
) -> None:
    recorder = Recorder(scheduler.clock)
    store.add_subscriber(1.0, recorder)
    scheduler.run_until_idle()
    store.notify_subscribers()  # queued on the scheduler, not run yet
    store.stop()
    scheduler.run_until_idle()
    assert len(recorder.batches) == 1


def test_add_subscriber_after_stop_is_refused(store: ExecutorPodsSnapshotsStore) -> None:
    store.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        store.add_subscriber(1.0, lambda batch: None)
