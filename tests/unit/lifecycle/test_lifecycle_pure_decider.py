"""LifecycleDecider as a pure function: settings + batch + registered + time + memory -> actions + memory.

Every test passes the memory in by hand and reads the new memory out, with manual times and no threads:
each decision is pinned by what it does to the memory as well as by its actions.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import pytest
from lifecycle_fixtures import SPARK_CONTAINER, batch, failed_pod, pod, pod_name, running, terminated

from k8s_backend.lifecycle.decisions import (
    DeletePod,
    LifecycleDecider,
    LifecycleDecision,
    LifecycleMemory,
    MarkInactive,
    RemoveFromDriver,
)
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.snapshots.snapshot import SnapshotBatch

RETRY = 30.0
TIMEOUT = 180.0
EMPTY = LifecycleMemory()
DELETED_MESSAGE = "The executor with id {} was deleted by a user or the framework."


def settings(**overrides: object) -> LifecycleDecider:
    values: dict[str, object] = {
        "container_name": SPARK_CONTAINER,
        "delete_retry_interval": RETRY,
        "removed_cache_timeout": TIMEOUT,
        "missing_pod_detect_delta": 30.0,
    }
    values.update(overrides)
    return LifecycleDecider(**values)  # type: ignore[arg-type]


def decide(
    b: SnapshotBatch,
    now: float,
    memory: LifecycleMemory = EMPTY,
    registered: Mapping[int, float] | None = None,
    **overrides: object,
) -> LifecycleDecision:
    return settings(**overrides).decide(b, registered or {}, now, memory)


# ------------------------------------------------------------------------------------------ purity


def test_the_settings_and_the_memory_are_frozen() -> None:
    decider = settings()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        decider.delete_on_termination = False  # type: ignore[misc]
    memory = decide(batch(failed_pod(1)), now=5.0).memory
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        memory.last_prune = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        memory.removed[2] = 0.0  # type: ignore[index]


def test_the_same_inputs_give_the_same_decision_and_the_input_memory_is_untouched() -> None:
    memory = LifecycleMemory(removed={7: 1.0}, delete_requested={7: 1.0})
    before = attrs.evolve(memory)
    b = batch(failed_pod(1), view=[failed_pod(1), failed_pod(7)])
    first = decide(b, now=40.0, memory=memory)
    second = decide(b, now=40.0, memory=memory)
    assert first == second
    assert memory == before
    assert [type(a) for a in first.actions] == [RemoveFromDriver, DeletePod, DeletePod]


def test_a_mapping_given_to_the_memory_is_copied() -> None:
    source = {1: 10.0}
    memory = LifecycleMemory(removed=source)
    source[2] = 11.0
    assert dict(memory.removed) == {1: 10.0}


def test_the_failure_transforms_return_new_memories() -> None:
    memory = LifecycleMemory(removed={1: 0.0}, delete_requested={1: 0.0}, inactivated=frozenset({1}))
    assert memory.removal_failed(1).removed == {}
    assert memory.removal_failed(9) is memory
    assert memory.delete_failed(1).delete_requested == {1: float("-inf")}
    inactivation = memory.inactivation_failed(1)
    assert (inactivation.inactivated, inactivation.inactivate_retry) == (frozenset(), frozenset({1}))
    assert memory == LifecycleMemory(removed={1: 0.0}, delete_requested={1: 0.0}, inactivated=frozenset({1}))


def test_a_quiet_batch_changes_nothing() -> None:
    live = pod(1, "Running", containers=[running(SPARK_CONTAINER)])
    decision = decide(batch(live), now=3.0)
    assert decision == LifecycleDecision((), EMPTY)


# ------------------------------------------------------------------------------------------ ended pods


def test_a_failed_pod_is_reported_and_deleted_and_both_are_remembered_at_now() -> None:
    decision = decide(batch(failed_pod(1)), now=12.5)
    assert [type(a) for a in decision.actions] == [RemoveFromDriver, DeletePod]
    assert decision.memory.removed == {1: 12.5}
    assert decision.memory.delete_requested == {1: 12.5}


def test_an_executor_in_the_memory_is_not_reported_again_but_its_pod_is_deleted() -> None:
    decision = decide(batch(failed_pod(1)), now=1.0, memory=LifecycleMemory(removed={1: 0.0}))
    assert decision.actions == (DeletePod(1, pod_name(1)),)
    assert decision.memory.removed == {1: 0.0}, "the first report's time is kept"


def test_a_delete_already_asked_for_is_not_asked_again_within_the_retry_interval() -> None:
    memory = LifecycleMemory(removed={1: 0.0}, delete_requested={1: 0.0})
    assert decide(batch(failed_pod(1)), now=RETRY - 0.001, memory=memory).actions == ()
    retried = decide(batch(failed_pod(1)), now=RETRY, memory=memory)
    assert retried.actions == (DeletePod(1, pod_name(1)),)
    assert retried.memory.delete_requested == {1: RETRY}


def test_a_failed_delete_is_asked_again_at_once() -> None:
    memory = LifecycleMemory(removed={1: 0.0}, delete_requested={1: 0.0}).delete_failed(1)
    retried = decide(batch(view=[failed_pod(1)]), now=0.5, memory=memory)
    assert retried.actions == (DeletePod(1, pod_name(1)),)
    assert retried.memory.delete_requested == {1: 0.5}


def test_a_delete_asked_for_a_pod_that_left_the_view_is_forgotten() -> None:
    memory = LifecycleMemory(removed={1: 0.0}, delete_requested={1: 0.0})
    decision = decide(batch(view=[]), now=2 * RETRY, memory=memory)
    assert decision.actions == ()
    assert decision.memory.delete_requested == {}


def test_a_pod_being_deleted_is_not_deleted_and_no_delete_is_remembered() -> None:
    terminating = pod(
        1, "Running", containers=[terminated(SPARK_CONTAINER, 1), running("sidecar")], deleted=True
    )
    decision = decide(batch(terminating), now=0.0)
    assert [type(a) for a in decision.actions] == [RemoveFromDriver]
    assert decision.memory.delete_requested == {}


def test_a_deleted_pod_is_reported_not_caused_by_the_app_and_its_pending_delete_and_label_forgotten() -> None:
    gone = pod(4, "Failed", containers=[terminated(SPARK_CONTAINER, 143)], deleted=True)
    memory = LifecycleMemory(delete_requested={4: 0.0}, inactivated=frozenset({4}))
    decision = decide(batch(gone, view=[]), now=9.0, memory=memory)
    assert decision.actions == (RemoveFromDriver(4, ExecutorLoss(143, False, DELETED_MESSAGE.format(4))),)
    assert decision.memory == LifecycleMemory(removed={4: 9.0})


def test_a_deleted_pod_already_reported_needs_nothing() -> None:
    gone = pod(4, "Failed", containers=[terminated(SPARK_CONTAINER, 1)], deleted=True)
    memory = LifecycleMemory(removed={4: 0.0})
    assert decide(batch(gone, view=[]), now=9.0, memory=memory) == LifecycleDecision((), memory)


# ---------------------------------------------------------------------------- deleteOnTermination off


def test_without_delete_on_termination_a_failed_pod_is_labelled_once_and_remembered() -> None:
    decision = decide(batch(failed_pod(1)), now=0.0, delete_on_termination=False)
    assert [type(a) for a in decision.actions] == [RemoveFromDriver, MarkInactive]
    assert decision.memory.inactivated == {1} and decision.memory.delete_requested == {}
    again = decide(batch(failed_pod(1)), now=10 * RETRY, memory=decision.memory, delete_on_termination=False)
    assert again.actions == ()


def test_an_inactive_labelled_pod_needs_nothing_and_leaves_the_labelled_set() -> None:
    inactive = failed_pod(1, labels={"spark-exec-inactive": "true"})
    memory = LifecycleMemory(removed={1: 0.0}, inactivated=frozenset({1}))
    decision = decide(batch(inactive), now=1.0, memory=memory, delete_on_termination=False)
    assert decision.actions == ()
    assert decision.memory.inactivated == frozenset()


def test_a_failed_label_is_patched_again_if_the_pod_is_still_there() -> None:
    memory = LifecycleMemory(removed={1: 0.0}).inactivation_failed(1)
    decision = decide(batch(view=[failed_pod(1)]), now=1.0, memory=memory, delete_on_termination=False)
    assert decision.actions == (MarkInactive(1, pod_name(1)),)
    assert (decision.memory.inactivated, decision.memory.inactivate_retry) == (frozenset({1}), frozenset())


def test_a_failed_label_is_dropped_if_the_pod_is_gone_or_already_inactive() -> None:
    memory = LifecycleMemory(removed={1: 0.0, 2: 0.0}).inactivation_failed(1).inactivation_failed(2)
    inactive = failed_pod(2, labels={"spark-exec-inactive": "true"})
    decision = decide(batch(view=[inactive]), now=1.0, memory=memory, delete_on_termination=False)
    assert decision.actions == ()
    assert decision.memory.inactivate_retry == frozenset() and decision.memory.inactivated == frozenset()


# ---------------------------------------------------------------------------------------- missing pods


def test_a_missing_executor_is_reported_after_the_delta_and_the_resync_is_remembered() -> None:
    resync = batch(view=[], full_snapshot_ts=100.0, resynced=True)
    decision = decide(resync, now=100.5, registered={1: 69.0, 2: 70.0})
    (remove,) = decision.actions
    assert isinstance(remove, RemoveFromDriver) and remove.executor_id == 1
    assert (remove.loss.exit_code, remove.loss.exit_caused_by_app) == (-1, False)
    assert "(registered at 69000 ms)" in remove.loss.message and "(100000 ms)" in remove.loss.message
    assert decision.memory.removed == {1: 100.5}
    assert decision.memory.last_full_snapshot_ts == 100.0


def test_a_resync_already_searched_is_not_searched_again() -> None:
    memory = LifecycleMemory(last_full_snapshot_ts=100.0)
    resync = batch(view=[], full_snapshot_ts=100.0, resynced=True)
    assert decide(resync, now=101.0, memory=memory, registered={1: 0.0}) == LifecycleDecision((), memory)


def test_a_batch_that_is_not_a_resync_never_looks_for_missing_pods() -> None:
    decision = decide(batch(view=[], full_snapshot_ts=100.0), now=100.0, registered={1: 0.0})
    assert decision == LifecycleDecision((), EMPTY)


def test_a_listed_or_already_reported_executor_is_not_missing() -> None:
    listed = pod(1, "Running", containers=[running(SPARK_CONTAINER)])
    resync = batch(view=[listed], full_snapshot_ts=100.0, resynced=True)
    memory = LifecycleMemory(removed={2: 5.0}, last_prune=100.0)
    decision = decide(resync, now=100.0, memory=memory, registered={1: 0.0, 2: 0.0})
    assert decision.actions == ()
    assert decision.memory == attrs.evolve(memory, last_full_snapshot_ts=100.0)


# ------------------------------------------------------------------------------------- removed cache


def test_reported_executors_are_pruned_after_the_timeout_once_their_pods_are_gone() -> None:
    memory = LifecycleMemory(removed={1: 0.0, 2: 0.0, 3: 100.0})
    still_listed = failed_pod(2, labels={"spark-exec-inactive": "true"})
    decision = decide(batch(view=[still_listed]), now=TIMEOUT + 1, memory=memory)
    assert decision.actions == ()
    assert decision.memory.removed == {2: 0.0, 3: 100.0}, "1 expired; 2's pod is there; 3 is recent"
    assert decision.memory.last_prune == TIMEOUT + 1


def test_pruning_waits_a_quarter_of_the_timeout_between_passes() -> None:
    memory = LifecycleMemory(removed={1: 0.0}, last_prune=TIMEOUT)
    too_soon = decide(batch(view=[]), now=TIMEOUT + TIMEOUT / 4 - 0.001, memory=memory)
    assert too_soon.memory == memory
    due = decide(batch(view=[]), now=TIMEOUT + TIMEOUT / 4, memory=memory)
    assert due.memory.removed == {} and due.memory.last_prune == TIMEOUT + TIMEOUT / 4


def test_a_forgotten_executor_whose_pod_fails_again_is_reported_again() -> None:
    # The memory's only promise: reported at most once while it is remembered.
    memory = LifecycleMemory(removed={1: 0.0}).removal_failed(1)
    decision = decide(batch(failed_pod(1)), now=1.0, memory=memory)
    assert [type(a) for a in decision.actions] == [RemoveFromDriver, DeletePod]
