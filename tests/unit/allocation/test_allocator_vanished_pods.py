"""A pod created and deleted before any watch event about it arrived does not stall allocation.

Measured before: a pod created, then deleted during a watch reconnect with compaction, was missing from
two re-lists, yet the allocator kept it as "newly created" for spark.kubernetes.allocation.executor.timeout
(600 s), and in 3 of 9 chaos runs the application ended with 0 of 6 executors. A full list taken after the
create (by resourceVersion) that lacks the pod now proves it gone; a list older than the create proves
nothing, so the request keeps counting as pending (Spark's rule) and nothing is over-allocated.
"""

from __future__ import annotations

from alloc_harness import EXECUTORS, NS, Harness, pod_name
from alloc_pods import state

from k8s_backend.allocation.policy import NewRequest, RoundInput, plan_round
from k8s_backend.kube.port import PODS
from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch

NOW = 1000.0


def resync_batch(*states: object, list_rv: int | None, resynced: bool = True) -> SnapshotBatch:
    return SnapshotBatch(
        updates=(),
        snapshot=ExecutorPodsSnapshot.of(states),  # type: ignore[arg-type]
        resynced=resynced,
        resync_resource_version=list_rv,
    )


def plan(batch: SnapshotBatch, created_rv: int | None, target: int = 2) -> tuple[tuple[int, ...], int]:
    """(vanished ids, executors requested) for executor 2 created at ``created_rv``, executor 1 running."""
    result = plan_round(
        RoundInput(
            batch=batch,
            targets={0: target},
            now=NOW,
            newly_created={2: NewRequest(0, NOW - 5.0, created_rv)},
        )
    )
    return result.vanished, sum(r.count for r in result.requests)


# -- the pure rule -------------------------------------------------------------------------------------


def test_a_list_taken_after_the_create_without_the_pod_forgets_it_and_replaces_it() -> None:
    assert plan(resync_batch(state(1, "Running"), list_rv=50), created_rv=40) == ((2,), 1)


def test_a_list_at_the_create_s_own_version_proves_it_gone_too() -> None:
    assert plan(resync_batch(state(1, "Running"), list_rv=40), created_rv=40) == ((2,), 1)


def test_a_list_older_than_the_create_keeps_counting_it_as_pending() -> None:
    assert plan(resync_batch(state(1, "Running"), list_rv=39), created_rv=40) == ((), 0)


def test_unknown_versions_and_watch_batches_prove_nothing() -> None:
    assert plan(resync_batch(state(1, "Running"), list_rv=None), created_rv=40) == ((), 0)
    assert plan(resync_batch(state(1, "Running"), list_rv=50), created_rv=None) == ((), 0)
    assert plan(resync_batch(state(1, "Running"), list_rv=50, resynced=False), created_rv=40) == ((), 0)


# -- through the allocator and the store ---------------------------------------------------------------


def test_a_pod_deleted_before_the_watch_saw_it_is_replaced_after_the_next_full_list() -> None:
    h = Harness()
    stale = h.fake.list(PODS, NS, label_selector=EXECUTORS)  # taken before the creates were answered
    h.set_targets({0: 2})
    assert h.created_ids() == [1, 2]
    h.mark(2, "Running")
    h.fake.delete(PODS, NS, pod_name(1))  # the watch never hears of pod 1, nor of its deletion

    # A list older than the creates: pod 1 still counts as pending, nothing more is requested.
    h.store.replace_snapshot(stale.items, stale.resource_version)
    h.round()
    assert h.created_ids() == [1, 2]
    assert h.allocator.status()["newly_created"] == [1]

    # A list taken since: pod 1 is gone, forgotten at once and replaced (not after 600 s).
    h.resync()
    h.round()
    assert h.allocator.status()["newly_created"] == [3]
    assert h.created_ids() == [1, 2, 3]
    assert h.existing_ids() == {2, 3}
    assert h.pod_deletes() == []  # nothing to delete: it is gone
    assert h.allocator.failed_executors == 0
