"""The store on real threads: a subscriber's callback never runs concurrently with itself."""

from __future__ import annotations

import threading

from snapshot_pods import executor_pod

from k8s_backend.common import ThreadScheduler
from k8s_backend.common.clock import SystemClock
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore

WAIT = 10.0  # only reached if the store is broken
STORM = 50


def test_a_callback_never_runs_concurrently_with_itself_and_a_notify_storm_coalesces() -> None:
    scheduler = ThreadScheduler("store-threads", threads=2)
    store = ExecutorPodsSnapshotsStore(scheduler, SystemClock())
    guard = threading.Lock()
    active = 0
    max_active = 0
    calls = 0
    delivered: list[int] = []
    in_first_call = threading.Event()
    release_first_call = threading.Event()
    all_delivered = threading.Event()

    def slow_callback(batch: SnapshotBatch) -> None:
        nonlocal active, max_active, calls
        with guard:
            active += 1
            max_active = max(max_active, active)
            calls += 1
            first = calls == 1
        try:
            if first:
                in_first_call.set()
                # Hold the first delivery until the other thread has tried (and failed) to deliver.
                release_first_call.wait(WAIT)
            with guard:
                delivered.extend(s.executor_id for s in batch.updates)
                if len(delivered) == STORM:
                    all_delivered.set()
        finally:
            with guard:
                active -= 1

    try:
        store.add_subscriber(3600.0, slow_callback)  # only the first delivery is periodic-driven
        assert in_first_call.wait(WAIT)
        for i in range(STORM):
            store.update_pod(executor_pod(i + 1))
            store.notify_subscribers()
        # The second thread runs every queued notification while the first is stuck in the callback;
        # this marker runs after them all (same queue, FIFO at equal times).
        drained = threading.Event()
        scheduler.submit(drained.set)
        assert drained.wait(WAIT)
        with guard:
            assert calls == 1  # nobody entered the callback while it was busy
        release_first_call.set()
        assert all_delivered.wait(WAIT)
        with guard:
            assert max_active == 1
            # The pending requests were coalesced into one more delivery carrying every change once.
            assert calls == 2
            assert delivered == list(range(1, STORM + 1))
    finally:
        release_first_call.set()
        store.stop()
        scheduler.shutdown(timeout=WAIT)
