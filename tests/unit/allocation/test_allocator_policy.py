"""The allocation round as a pure function: one test per rule of plan_round and split_slots."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from alloc_pods import batch, state

from k8s_backend.allocation.policy import (
    AllocationLimits,
    AllocationPlan,
    DeleteExcessPending,
    DeleteTimedOutRequests,
    NewRequest,
    RequestExecutors,
    RoundInput,
    plan_round,
    split_slots,
)
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.snapshots.snapshot import SnapshotBatch

LIMITS = AllocationLimits(batch_size=5, pod_creation_timeout=600.0, executor_idle_timeout=10.0)


def plan(
    snapshot: SnapshotBatch | None = None,
    targets: Mapping[int, int] | None = None,
    *,
    now: float = 0.0,
    limits: AllocationLimits = LIMITS,
    **kwargs: object,
) -> AllocationPlan:
    return plan_round(
        RoundInput(
            batch=snapshot if snapshot is not None else batch(),
            targets=targets if targets is not None else {0: 0},
            now=now,
            limits=limits,
            **kwargs,  # type: ignore[arg-type]
        )
    )


def requested(p: AllocationPlan) -> dict[int, int]:
    return {r.rp_id: r.count for r in p.requests}


# -- split_slots (SPARK-36052) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("candidates", "slots", "expected"),
    [
        (["a"], 0, [("a", 0)]),
        (["a"], 1, [("a", 1)]),
        (["a"], 2, [("a", 2)]),
        (["a", "b", "c"], 0, [("a", 0), ("b", 0), ("c", 0)]),
        (["a", "b", "c"], 1, [("a", 1), ("b", 0), ("c", 0)]),
        (["a", "b", "c"], 2, [("a", 1), ("b", 1), ("c", 0)]),
        (["a", "b", "c"], 3, [("a", 1), ("b", 1), ("c", 1)]),
        (["a", "b", "c"], 4, [("a", 2), ("b", 1), ("c", 1)]),
        ([], 4, []),
        (["a", "b"], -3, [("a", 0), ("b", 0)]),
    ],
)
def test_split_slots_gives_the_remainder_to_the_first_candidates(
    candidates: list[str], slots: int, expected: list[tuple[str, int]]
) -> None:
    assert split_slots(candidates, slots) == expected


def test_limits_come_from_the_conf() -> None:
    conf = KubernetesConf()
    limits = AllocationLimits.from_conf(conf)
    assert limits.batch_size == conf.allocation.batch_size
    assert limits.pod_creation_timeout == conf.allocation.pod_creation_timeout
    assert limits.executor_idle_timeout == conf.scaling.executor_idle_timeout
    assert limits.max_pending_pods == conf.allocation.max_pending_pods
    assert limits.max_pending_pods_per_rp == conf.allocation.max_pending_pods_per_rp


# -- requests seen, registered, lost, timed out ----------------------------------------------------


def test_a_request_seen_in_the_snapshot_is_no_longer_a_request() -> None:
    p = plan(
        batch([state(1, "Running")]), {0: 2}, newly_created={1: NewRequest(0, 0.0), 2: NewRequest(0, 0.0)}
    )
    assert list(p.newly_created) == [2]


def test_a_request_seen_only_in_the_updates_is_no_longer_a_request() -> None:
    gone = batch([], updates=[state(1, "Pending")])
    p = plan(gone, {0: 1}, newly_created={1: NewRequest(0, 0.0)})
    assert p.newly_created == {}


def test_a_request_the_driver_registered_moves_to_the_scheduler_known_requests() -> None:
    p = plan(
        batch(),
        {0: 2},
        newly_created={1: NewRequest(0, 0.0), 2: NewRequest(0, 0.0)},
        scheduler_known=frozenset({1}),
    )
    assert list(p.newly_created) == [2]
    assert p.scheduler_known_newly_created == {1: NewRequest(0, 0.0)}


def test_scheduler_known_requests_are_never_timed_out() -> None:
    p = plan(
        batch(), {0: 1}, now=10_000.0, newly_created={1: NewRequest(0, 0.0)}, scheduler_known=frozenset({1})
    )
    assert p.timed_out is None
    assert p.scheduler_known_newly_created == {1: NewRequest(0, 0.0)}
    assert p.requests == ()


def test_a_scheduler_known_request_seen_in_the_snapshot_is_forgotten() -> None:
    p = plan(
        batch([state(1, "Running")]),
        {0: 1},
        scheduler_known_newly_created={1: NewRequest(0, 0.0)},
        scheduler_known=frozenset({1}),
    )
    assert p.scheduler_known_newly_created == {}


def test_a_request_the_driver_forgot_before_its_pod_was_seen_counts_until_a_list_shows_it_gone() -> None:
    # SPARK-44609: Spark kept counting it forever, so the slot was never requested again. Replacing it
    # at once was wrong too: a killed executor's pod lives on, and that made 7 pods for a target of 5.
    forgotten = {1: NewRequest(0, 0.0, resource_version=10)}
    p = plan(batch(), {0: 1}, scheduler_known_newly_created=forgotten, scheduler_known=frozenset())
    assert p.lost_before_seen == (1,)
    assert p.scheduler_known_newly_created == {}
    assert p.newly_created == forgotten
    assert requested(p) == {}
    # A full list taken after its create, without the pod: it is gone, its slot is requested again.
    listed = SnapshotBatch(updates=(), snapshot=batch().snapshot, resynced=True, resync_resource_version=10)
    gone = plan(listed, {0: 1}, newly_created=p.newly_created, scheduler_known=frozenset())
    assert gone.vanished == (1,)
    assert requested(gone) == {0: 1}


def test_a_request_not_seen_within_the_creation_timeout_is_given_up() -> None:
    p = plan(batch(), {0: 2}, now=600.5, newly_created={1: NewRequest(0, 0.0), 2: NewRequest(0, 1.0)})
    assert p.timed_out == DeleteTimedOutRequests((1,))
    assert list(p.newly_created) == [2]


def test_the_creation_timeout_is_exclusive() -> None:
    p = plan(batch(), {0: 1}, now=600.0, newly_created={1: NewRequest(0, 0.0)})
    assert p.timed_out is None


def test_a_timed_out_request_frees_its_slot_in_the_same_round() -> None:
    p = plan(batch(), {0: 1}, now=601.0, newly_created={1: NewRequest(0, 0.0)})
    assert requested(p) == {0: 1}


# -- deleted executors -----------------------------------------------------------------------------


def test_deleted_ids_are_forgotten_once_they_leave_the_snapshot() -> None:
    p = plan(batch([state(3, "Pending")]), {0: 1}, deleted=frozenset({3, 4}))
    assert p.deleted == {3}


def test_deleted_ids_are_kept_when_nothing_was_observed() -> None:
    p = plan(batch([state(3, "Pending")], changed=False), {0: 1}, deleted=frozenset({3, 4}))
    assert p.deleted == {3, 4}


def test_pods_deleted_as_excess_do_not_count_toward_the_target() -> None:
    p = plan(batch([state(1, "Running"), state(2, "Pending")]), {0: 2}, deleted=frozenset({2}))
    assert requested(p) == {0: 1}


def test_departing_executors_are_replaced_at_once_while_their_pods_still_run() -> None:
    snapshot = batch([state(1, "Running"), state(2, "Running"), state(3, "Pending")])
    p = plan(snapshot, {0: 3}, departing=frozenset({1, 3}), scheduler_known=frozenset({1, 2, 3}))
    assert requested(p) == {0: 2}
    assert p.profiles[0].running == 1 and p.profiles[0].pending_known == 0


def test_a_departing_executors_failure_is_not_counted_as_one() -> None:
    p = plan(batch([state(1, "Failed"), state(2, "Failed")]), {0: 2}, departing=frozenset({1}))
    assert p.new_failures == (2,)
    assert p.counted_failures == {1, 2}, "a departed executor's failure never counts, even once forgotten"
    assert requested(p) == {0: 2}


# -- counting per profile --------------------------------------------------------------------------


def test_with_one_profile_every_pod_counts_for_it_whatever_its_label() -> None:
    p = plan(batch([state(1, "Running", rp=7), state(2, "Running", rp=3)]), {0: 2})
    assert p.requests == ()
    assert p.profiles[0].running == 2


def test_with_several_profiles_pods_count_for_their_labelled_profile() -> None:
    p = plan(batch([state(1, "Running", rp=0), state(2, "Running", rp=0)]), {0: 2, 1: 1})
    assert requested(p) == {1: 1}


def test_profiles_are_visited_in_id_order() -> None:
    # One slot left under the global cap: the lowest profile id gets it, whatever the targets' order.
    limits = AllocationLimits(batch_size=5, max_pending_pods=1)
    p = plan(batch(), {2: 1, 1: 1}, limits=limits)
    assert [c.rp_id for c in p.profiles] == [1, 2]
    assert requested(p) == {1: 1}


def test_final_pods_do_not_count_so_they_are_replaced() -> None:
    states = [
        state(1, "Failed"),
        state(2, "Succeeded"),
        state(3, "Running", deleted=True),  # still running: SPARK-31125, counts
        state(4, "Pending", deleted=True),  # deleted
    ]
    p = plan(batch(states), {0: 4})
    assert requested(p) == {0: 3}


def test_a_pod_in_unknown_phase_counts_as_alive_but_not_running() -> None:
    p = plan(batch([state(1, "Unknown"), state(2, "Running")]), {0: 2})
    assert p.requests == ()
    assert p.profiles[0].not_running == 1
    assert p.outstanding == 0  # only unknown *pending* pods and requests are outstanding


# -- upscaling -------------------------------------------------------------------------------------


def test_requests_are_capped_at_the_batch_size() -> None:
    p = plan(batch(), {0: 12})
    assert p.requests == (RequestExecutors(0, 5, target=12, known=0, shared_slots=2**31 - 1),)


def test_a_profile_waits_until_its_previous_batch_is_seen() -> None:
    p = plan(batch([state(1, "Running")]), {0: 5}, newly_created={2: NewRequest(0, 0.0)})
    assert p.requests == ()


def test_another_profiles_requests_do_not_block_a_profile() -> None:
    p = plan(batch(), {0: 2, 1: 2}, newly_created={1: NewRequest(1, 0.0)})
    assert requested(p) == {0: 2}


def test_pending_pods_do_not_block_new_batches() -> None:
    # SPARK-33262: 4 running and 1 pending of a target of 6.
    states = [state(1, "Pending"), *(state(i, "Running") for i in range(2, 6))]
    p = plan(batch(states), {0: 6})
    assert requested(p) == {0: 1}


def test_the_global_pending_cap_counts_every_not_running_pod() -> None:
    limits = AllocationLimits(batch_size=5, max_pending_pods=4)
    states = [state(1, "Pending"), state(2, "Pending", rp=1)]
    p = plan(
        batch(states),
        {0: 5, 1: 5},
        limits=limits,
        scheduler_known=frozenset({2, 3}),
        scheduler_known_newly_created={3: NewRequest(1, 0.0)},
    )
    # Not running: 1 (unknown pending), 2 (known pending), 3 (known request): one slot left.
    assert requested(p) == {0: 1}


def test_the_global_pending_cap_shares_slots_between_profiles() -> None:
    limits = AllocationLimits(batch_size=5, max_pending_pods=3)
    p = plan(batch(), {0: 2, 1: 3}, limits=limits)
    assert requested(p) == {0: 2, 1: 1}


def test_no_request_when_the_pending_cap_is_reached() -> None:
    limits = AllocationLimits(batch_size=5, max_pending_pods=1)
    p = plan(batch([state(1, "Pending")]), {0: 3}, limits=limits)
    assert p.requests == ()


def test_the_per_profile_pending_cap_lowers_each_profiles_request() -> None:
    # SPARK-53324: min(previous, maxPendingPodsPerRp - notRunningForRp).
    limits = AllocationLimits(batch_size=5, max_pending_pods_per_rp=3)
    states = [state(1, "Pending", rp=0), state(2, "Pending", rp=0), state(3, "Running", rp=1)]
    p = plan(batch(states), {0: 6, 1: 6}, limits=limits)
    assert requested(p) == {0: 1, 1: 3}


def test_no_request_while_pvcs_are_exhausted_and_nothing_changed() -> None:
    p = plan(batch(changed=False), {0: 2}, pvcs_exhausted=True)
    assert p.requests == ()
    p = plan(batch(), {0: 2}, pvcs_exhausted=True)
    assert requested(p) == {0: 2}


def test_no_request_when_the_target_is_met() -> None:
    p = plan(batch([state(1, "Running"), state(2, "Pending")]), {0: 2})
    assert p.requests == ()
    assert p.excess == ()


# -- downscaling -----------------------------------------------------------------------------------


def test_excess_requests_are_protected_for_the_idle_timeout() -> None:
    # SPARK-33099
    newly = {1: NewRequest(0, 0.0), 2: NewRequest(0, 5.0)}
    assert plan(batch(), {0: 0}, now=10.0, newly_created=newly).excess == ()
    p = plan(batch(), {0: 0}, now=10.5, newly_created=newly)
    assert p.excess == (DeleteExcessPending(0, (1,), ()),)


def test_excess_pending_pods_are_protected_by_their_creation_time() -> None:
    states = [state(1, "Pending", created=0.0), state(2, "Pending", created=5.0)]
    assert plan(batch(states), {0: 0}, now=10.0).excess == ()
    p = plan(batch(states), {0: 0}, now=11.0)
    assert p.excess == (DeleteExcessPending(0, (), (1,)),)


def test_a_pending_pod_with_an_unparsable_creation_time_counts_as_idle() -> None:
    # SPARK-37049
    p = plan(batch([state(1, "Pending", created="yesterday")]), {0: 0}, now=0.0)
    assert p.excess == (DeleteExcessPending(0, (), (1,)),)


def test_pods_the_driver_knows_and_running_pods_are_never_excess() -> None:
    # SPARK-34361
    states = [state(1, "Pending"), state(2, "Running"), state(3, "Pending")]
    p = plan(
        batch(states),
        {0: 0},
        now=100.0,
        scheduler_known=frozenset({1, 4}),
        scheduler_known_newly_created={4: NewRequest(0, 0.0)},
    )
    assert p.excess == (DeleteExcessPending(0, (), (3,)),)


def test_timed_out_pending_pods_are_chosen_when_newer_requests_are_protected() -> None:
    # SPARK-34334: the non-idle request must not use up the surplus the idle pending pod should take.
    p = plan(
        batch([state(1, "Pending", created=0.0)]), {0: 1}, now=20.0, newly_created={2: NewRequest(0, 10.0)}
    )
    assert p.excess == (DeleteExcessPending(0, (), (1,)),)


def test_requests_are_deleted_before_pending_pods_and_only_up_to_the_surplus() -> None:
    states = [state(1, "Pending"), state(2, "Pending")]
    newly = {3: NewRequest(0, 0.0), 4: NewRequest(0, 0.0)}
    p = plan(batch(states), {0: 1}, now=100.0, newly_created=newly)
    assert p.excess == (DeleteExcessPending(0, (3, 4), (1,)),)
    assert p.excess[0].executor_ids == (1, 3, 4)


def test_the_plan_counts_on_excess_deletions_for_the_pending_cap() -> None:
    # SPARK-36052 scenario: deleting an idle request of profile 0 frees a pending slot for profile 1.
    limits = AllocationLimits(batch_size=5, max_pending_pods=3, executor_idle_timeout=10.0)
    states = [state(2, "Pending", rp=0, created=0.0), state(3, "Pending", rp=1, created=0.0)]
    p = plan(batch(states), {0: 1, 1: 3}, now=20.0, limits=limits, newly_created={1: NewRequest(0, 0.0)})
    assert p.excess == (DeleteExcessPending(0, (1,), ()),)
    assert requested(p) == {1: 1}


def test_outstanding_counts_unknown_pending_pods_and_unregistered_requests() -> None:
    states = [state(1, "Pending"), state(2, "Pending"), state(3, "Running")]
    p = plan(
        batch(states),
        {0: 5},
        newly_created={4: NewRequest(0, 0.0)},
        scheduler_known=frozenset({2, 5}),
        scheduler_known_newly_created={5: NewRequest(0, 0.0)},
    )
    assert p.pending_unknown == 1
    assert p.outstanding == 2


# -- failures --------------------------------------------------------------------------------------


def test_each_failed_executor_is_counted_once() -> None:
    p = plan(batch([state(1, "Failed"), state(2, "Failed")]), {0: 2}, counted_failures=frozenset({1}))
    assert p.new_failures == (2,)
    assert p.counted_failures == {1, 2}


def test_a_failure_seen_only_in_the_updates_is_counted() -> None:
    vanished = batch([], updates=[state(1, "Failed"), state(1, "Failed", deleted=True)])
    assert plan(vanished, {0: 1}).new_failures == (1,)


def test_executors_deleted_as_excess_are_not_failures() -> None:
    p = plan(batch([state(1, "Failed")]), {0: 1}, deleted=frozenset({1}))
    assert p.new_failures == ()
