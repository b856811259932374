"""The store at scale: work grows with events, not with events x pods (counted, never timed)."""

from __future__ import annotations

import pytest
from pytest_mock import MockerFixture
from snapshot_pods import executor_pod

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.snapshots import store as store_module
from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore

PODS = 10_000
EVENTS = 20_000


class SnapshotCounter:
    """Stands in for ExecutorPodsSnapshot inside the store module and counts the views it builds."""

    def __init__(self) -> None:
        self.built = 0

    def __call__(self, *args: object, **kwargs: object) -> ExecutorPodsSnapshot:
        self.built += 1
        return ExecutorPodsSnapshot(*args, **kwargs)  # type: ignore[arg-type]


def test_twenty_thousand_events_on_ten_thousand_pods_copy_the_view_once_per_delivery(
    monkeypatch: pytest.MonkeyPatch, mocker: MockerFixture
) -> None:
    scheduler = DeterministicScheduler(ManualClock(0.0))
    store = ExecutorPodsSnapshotsStore(scheduler, scheduler.clock)
    counter = SnapshotCounter()
    monkeypatch.setattr(store_module, "ExecutorPodsSnapshot", counter)
    with_update = mocker.spy(ExecutorPodsSnapshot, "with_update")
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    scheduler.run_until_idle()

    listed = [executor_pod(i, "Pending", rv=i) for i in range(1, PODS + 1)]
    store.replace_snapshot(listed, resource_version=str(PODS))
    built_before_events = counter.built
    # Each pod goes Pending -> Running -> Failed: two events per pod, 20,000 in all.
    rv = PODS
    for new_phase in ("Running", "Failed"):
        for i in range(1, PODS + 1):
            rv += 1
            store.update_pod(executor_pod(i, new_phase, rv=rv))
    assert counter.built == built_before_events  # no view is built per event
    assert with_update.call_count == 0

    scheduler.advance(1.0)
    # One delivery after the burst: one copy of the view, every event delivered once.
    assert counter.built <= built_before_events + 1
    assert len(batches) == 2
    burst = batches[-1]
    assert len(burst.updates) == PODS + EVENTS  # the list's 10,000 new pods, then the 20,000 events
    assert len(burst.snapshot) == PODS
    assert all(s.phase is PodPhase.FAILED for s in burst.snapshot.pods.values())

    # Later deliveries with nothing new reuse the same view instead of copying 10,000 pods again.
    built_after_burst = counter.built
    scheduler.advance(5.0)
    assert counter.built == built_after_burst
    assert all(b.snapshot is burst.snapshot for b in batches[-5:])
