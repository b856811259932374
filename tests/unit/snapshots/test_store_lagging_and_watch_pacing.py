"""A lagging event behind a list still reaches subscribers as an ending; an empty watch is not re-opened
in a hot loop."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from snapshot_pods import executor_pod

from k8s_backend.allocation.policy import NewRequest, RoundInput, plan_round
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import ObjectList, WatchEvent
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource


def test_a_pod_that_came_and_went_behind_a_list_is_announced_deleted_and_its_request_released() -> None:
    scheduler = DeterministicScheduler(ManualClock(1000.0))
    store = ExecutorPodsSnapshotsStore(scheduler, scheduler.clock)
    batches: list[SnapshotBatch] = []
    store.add_subscriber(1.0, batches.append)
    scheduler.run_until_idle()
    # Executor 1's pod was created (rv 150) and preempted (rv 180); a list at rv 200 lands first.
    store.replace_snapshot([], "200")
    store.update_pod(executor_pod(1, "Pending", rv=150))
    store.update_pod(executor_pod(1, "Pending", rv=180), deleted=True)
    scheduler.advance(1.0)
    batch = batches[-1]
    assert 1 not in batch.snapshot.pods, "the view must not be rolled back"
    assert [s.phase for s in batch.updates if s.executor_id == 1][-1] is PodPhase.DELETED
    plan = plan_round(
        RoundInput(batch=batch, targets={0: 1}, now=1001.0, newly_created={1: NewRequest(0, 1000.0)})
    )
    assert 1 not in plan.newly_created and plan.requests


class _EmptyStream:
    def __iter__(self) -> Iterator[WatchEvent]:
        return iter(())

    def close(self) -> None:
        pass


class _ClosingApi:
    """Answers every watch with a stream that ends at once, empty (a misbehaving proxy)."""

    def __init__(self) -> None:
        self.watches = 0
        self.many = threading.Event()

    def list(self, *args: Any, **kwargs: Any) -> ObjectList:
        return ObjectList(items=[], resource_version="10")

    def watch(self, *args: Any, **kwargs: Any) -> _EmptyStream:
        self.watches += 1
        if self.watches >= 50:
            self.many.set()
        return _EmptyStream()


def test_a_watch_closed_at_once_with_no_events_is_reopened_with_backoff_not_in_a_hot_loop() -> None:
    clock = ManualClock(0.0)
    store = ExecutorPodsSnapshotsStore(DeterministicScheduler(clock), clock)
    api = _ClosingApi()
    source = ExecutorPodsWatchSnapshotSource(api, store, clock, namespace="ns", rng=lambda: 0.0)  # type: ignore[arg-type]
    source.start("app")
    try:
        spun = api.many.wait(2.0)  # without backoff this takes milliseconds
    finally:
        source.stop()
    assert not spun, f"{api.watches} watch requests within 2 s"
    assert source.health()["last_error"] is None
