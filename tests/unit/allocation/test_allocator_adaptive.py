"""The allocator with adaptive batches, parallel creates and spark.kubernetes.allocation.maximum, on
FakeKubernetes with a manual clock (rounds run when the test says, or when the allocator schedules one)."""

from __future__ import annotations

import logging

import pytest
from alloc_harness import Harness, suite_conf

from k8s_backend.allocation.pacing import FOLLOW_UP
from k8s_backend.conf.model import AllocationConf
from k8s_backend.kube.port import PODS
from k8s_backend.snapshots.snapshot import SnapshotBatch


def harness(**allocation: object) -> Harness:
    return Harness(suite_conf(allocation=AllocationConf(**{"batch_size": 5, **allocation})))  # type: ignore[arg-type]


def seen_then_follow_up(h: Harness) -> None:
    """The watch delivers the new pods, then the early round the allocator scheduled runs."""
    h.resync()
    h.scheduler.advance(FOLLOW_UP)


def test_adaptive_rounds_ramp_up_without_waiting_out_the_batch_delay() -> None:
    h = harness(adaptive=True)
    h.set_targets({0: 100})
    assert sorted(h.created_ids()) == [1, 2, 3, 4, 5]
    totals = []
    for _ in range(6):
        seen_then_follow_up(h)  # 20 ms later, not a whole batch delay
        totals.append(len(h.created_ids()))
    assert totals == [15, 35, 75, 100, 100, 100]
    assert sorted(h.created_ids()) == list(range(1, 101))  # exactly the target, every id once
    h.advance(5.0)
    h.round()
    assert len(h.created_ids()) == 100


def test_the_early_rounds_wake_the_allocator_alone() -> None:
    # The lifecycle manager, the disruption watcher and progress read every pod at each delivery: woken
    # at each early round, they cost the driver as much as the rounds.
    h = harness(adaptive=True)
    others: list[SnapshotBatch] = []
    h.store.add_subscriber(1.0, others.append)
    h.scheduler.run_until_idle()
    assert len(others) == 1  # its first delivery, at once
    h.set_targets({0: 100})
    for _ in range(4):
        seen_then_follow_up(h)
    assert len(h.created_ids()) == 100
    assert len(others) == 1
    h.round()  # the store's own notify_subscribers() still reaches everyone
    assert len(others) == 2


def test_fixed_batches_still_wait_for_the_next_round() -> None:
    h = harness()
    h.set_targets({0: 100})
    seen_then_follow_up(h)
    h.scheduler.advance(0.5)
    assert h.created_ids() == [1, 2, 3, 4, 5]


def test_adaptive_batches_respect_max_pending_pods() -> None:
    h = harness(adaptive=True, max_pending_pods=12)
    h.set_targets({0: 100})
    for _ in range(5):
        seen_then_follow_up(h)  # the pods stay Pending
        h.advance(1.0)
        h.round()
    assert sorted(h.created_ids()) == list(range(1, 13))


def test_after_a_429_no_create_is_sent_before_retry_after_and_the_batch_halves() -> None:
    h = harness(adaptive=True)
    h.fake.fail_next("create", PODS, status=429, count=2, retry_after=3.0)
    h.set_targets({0: 100})
    assert sorted(h.created_ids()) == [1, 2]  # both in flight refused: the rest of the round waits
    for _ in range(2):
        h.advance(1.0)
        h.round()
        h.scheduler.advance(FOLLOW_UP)
        assert len(h.created_ids()) == 2
    h.advance(1.0)
    h.round()
    # The same ids again (their pods may exist), in half a batch (5 -> 2), one at a time.
    assert sorted(h.created_ids()[2:]) == [1, 2]
    assert h.existing_ids() == {1, 2}
    status = h.allocator.status()["batches"]
    assert (status["backoffs"], status["throttled"]) == (1, 2)
    assert h.failures == [] and h.allocator.failed_executors == 0


def test_parallel_creates_hand_out_each_id_once() -> None:
    h = harness(concurrency=4)
    h.set_targets({0: 5})
    assert sorted(h.created_ids()) == [1, 2, 3, 4, 5]
    assert h.existing_ids() == {1, 2, 3, 4, 5}
    assert h.outstanding == 5
    assert h.allocator.status()["newly_created"] == [1, 2, 3, 4, 5]


def test_a_refused_parallel_create_is_asked_again_under_its_id() -> None:
    h = harness(concurrency=4)
    h.fake.fail_next("create", PODS, status=503, count=2)
    h.set_targets({0: 5})
    first = h.created_ids()
    assert len(set(first)) == len(first) and max(first) <= 5
    h.resync()
    h.advance(2.0)
    h.round()
    h.resync()
    h.advance(2.0)
    h.round()
    assert h.existing_ids() == {1, 2, 3, 4, 5}  # exact: the refused ids were created again, no new ones
    assert h.allocator.executor_id_counter == 5
    assert h.allocator.failed_executors == 0


def test_a_failed_parallel_create_counts_once_and_is_replaced_with_a_new_id() -> None:
    h = harness(concurrency=4)
    h.fake.fail_next("create", PODS, status=422, message="invalid pod")
    h.set_targets({0: 5})
    assert h.allocator.failed_executors == 1
    created = h.existing_ids()
    assert len(created) in (3, 4)  # the refusal stops the round; creates already in flight finish
    assert set(h.allocator.status()["newly_created"]) == created
    h.resync()
    h.advance(1.0)
    h.round()
    assert len(h.existing_ids()) == 5  # exactly the target
    assert h.outstanding == 5


def test_the_allocation_maximum_stops_creating_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    h = harness(maximum=6)
    with caplog.at_level(logging.INFO, logger="k8s_backend.allocation"):
        h.set_targets({0: 10})
        h.resync()
        h.advance(1.0)
        h.round()
        assert h.created_ids() == [1, 2, 3, 4, 5, 6]
        h.fail(1)  # a replacement would be the 7th pod of the application's life
        h.advance(1.0)
        h.round()
        h.advance(1.0)
        h.round()
    assert h.created_ids() == [1, 2, 3, 4, 5, 6]
    warnings = [
        r.getMessage() for r in caplog.records if "spark.kubernetes.allocation.maximum" in r.getMessage()
    ]
    assert len(warnings) == 1
    assert "has created 6" in warnings[0]
    # Once reached, rounds no longer announce requests they cannot make.
    requests = [r for r in caplog.records if r.getMessage().startswith("Going to request")]
    assert len(requests) == 2
    assert h.allocator.status()["maximum_reached"] is True


def test_the_allocation_maximum_counts_ids_from_before_a_restart() -> None:
    h = harness(maximum=6)
    h.allocator.advance_executor_id_counter(5)  # recovery found executors 1..4
    h.set_targets({0: 10})
    assert h.created_ids() == [5, 6]


def test_early_rounds_stop_when_a_limit_holds_creates_back() -> None:
    h = harness(adaptive=True, max_pending_pods=5)
    periodic = h.scheduler.pending()
    h.set_targets({0: 100})
    assert h.scheduler.pending() == periodic + 1  # the early round after a round that went well
    h.resync()  # the 5 pods are seen, and stay Pending: maxPendingPods allows no more
    h.scheduler.advance(1.5)
    assert h.scheduler.pending() == periodic  # no early round left: the regular ticks take over
    assert len(h.created_ids()) == 5
