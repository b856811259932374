"""LifecycleDecider: Spark's ExecutorPodsLifecycleManager rules as pure decisions, one test per rule."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from lifecycle_fixtures import (
    SPARK_CONTAINER,
    Remembering,
    batch,
    failed_pod,
    pod,
    pod_name,
    running,
    terminated,
)

from k8s_backend.lifecycle.decisions import DeletePod, LifecycleDecider, MarkInactive, RemoveFromDriver
from k8s_backend.lifecycle.driver_port import ExecutorLoss

RETRY = 30.0


def decider(**kwargs: object) -> Remembering:
    """A decider run batch after batch with its memory threaded through, as the manager runs it."""
    return Remembering(
        LifecycleDecider(container_name=SPARK_CONTAINER, delete_retry_interval=RETRY, **kwargs)  # type: ignore[arg-type]
    )


def removals(actions: Sequence[object]) -> list[RemoveFromDriver]:
    return [a for a in actions if isinstance(a, RemoveFromDriver)]


def deletes(actions: Sequence[object]) -> list[DeletePod]:
    return [a for a in actions if isinstance(a, DeletePod)]


# ---------------------------------------------------------------------------------------- failed pods


def test_failed_pod_is_removed_from_the_driver_with_the_explained_loss_and_deleted() -> None:
    actions = decider().decide(batch(failed_pod(1)), {}, now=0.0)
    assert len(actions) == 2
    remove, delete = actions
    assert isinstance(remove, RemoveFromDriver) and remove.executor_id == 1
    loss = remove.loss
    assert (loss.exit_code, loss.exit_caused_by_app, loss.killed_by_driver) == (1, True, False)
    assert "The executor with id 1 exited with exit code 1 (generic, look at logs to clarify)." in (
        loss.message
    )
    assert "The API gave the following brief reason: Error" in loss.message
    assert "The API gave the following message: Executor failed." in loss.message
    assert "\t container name: spark-kubernetes-executor" in loss.message
    assert "\t container name: sidecar" in loss.message
    assert delete == DeletePod(1, pod_name(1))


def test_succeeded_pod_is_removed_and_deleted_too() -> None:
    done = pod(2, "Succeeded", containers=[terminated(SPARK_CONTAINER, 0, reason="Completed")])
    actions = decider().decide(batch(done), {}, now=0.0)
    (remove,) = removals(actions)
    assert remove.loss.exit_code == 0 and remove.loss.exit_caused_by_app
    assert "0 (success)" in remove.loss.message
    assert deletes(actions) == [DeletePod(2, pod_name(2))]


@pytest.mark.parametrize("phase", ["Pending", "Running", "Unknown", "Terminating"])
def test_live_and_undecided_pods_need_nothing(phase: str) -> None:
    assert decider().decide(batch(pod(1, phase)), {}, now=0.0) == []


def test_same_failed_pod_twice_is_removed_once_and_deleted_once_within_the_retry_interval() -> None:
    d = decider()
    d.decide(batch(failed_pod(1)), {}, now=0.0)
    assert d.decide(batch(failed_pod(1)), {}, now=1.0) == []
    # Also within one batch, a pod seen twice produces one removal and one delete.
    actions = decider().decide(batch(failed_pod(1), failed_pod(1)), {}, now=0.0)
    assert len(removals(actions)) == 1 and len(deletes(actions)) == 1


def test_a_failed_pod_still_present_after_the_retry_interval_is_deleted_again() -> None:
    d = decider()
    d.decide(batch(failed_pod(1)), {}, now=0.0)
    still_there = batch(view=[failed_pod(1)])  # no new event, but the view still has the pod
    assert d.decide(still_there, {}, now=RETRY - 0.1) == []
    assert d.decide(still_there, {}, now=RETRY) == [DeletePod(1, pod_name(1))]
    assert d.decide(still_there, {}, now=RETRY + 1) == []  # and then again only after another interval
    assert d.decide(still_there, {}, now=2 * RETRY) == [DeletePod(1, pod_name(1))]


def test_a_deleted_pod_is_not_deleted_again() -> None:
    d = decider()
    d.decide(batch(failed_pod(1)), {}, now=0.0)
    assert d.decide(batch(view=[]), {}, now=RETRY) == []  # gone from the view
    assert d.decide(batch(view=[failed_pod(1)]), {}, now=2 * RETRY) == []  # forgotten for good


def test_a_pod_already_being_deleted_is_not_deleted_again() -> None:
    # Running phase with a failed executor container and a deletionTimestamp: failed, deletion under way.
    terminating = pod(
        1, "Running", containers=[terminated(SPARK_CONTAINER, 1), running("sidecar")], deleted=True
    )
    actions = decider().decide(batch(terminating), {}, now=0.0)
    assert len(removals(actions)) == 1
    assert deletes(actions) == []


def test_no_retry_delete_once_the_pod_is_being_deleted() -> None:
    d = decider()
    d.decide(batch(failed_pod(1)), {}, now=0.0)
    being_deleted = pod(
        1, "Running", containers=[terminated(SPARK_CONTAINER, 1), running("sidecar")], deleted=True
    )
    assert d.decide(batch(view=[being_deleted]), {}, now=RETRY) == []


def test_a_failed_delete_is_retried_at_the_next_batch() -> None:
    d = decider()
    d.decide(batch(failed_pod(1)), {}, now=0.0)
    d.delete_failed(1)
    assert d.decide(batch(view=[failed_pod(1)]), {}, now=0.5) == [DeletePod(1, pod_name(1))]
    assert d.decide(batch(view=[failed_pod(1)]), {}, now=1.0) == []


# ---------------------------------------------------------------------------------------- deleted pods


def test_deleted_pod_is_reported_as_deleted_by_a_user_not_caused_by_the_app_and_not_deleted() -> None:
    gone = pod(3, "Running", containers=[running(SPARK_CONTAINER)], deleted=True)
    gone["status"]["phase"] = "Failed"  # deletionTimestamp on a non-running pod: deleted
    actions = decider().decide(batch(gone), {}, now=0.0)
    message = "The executor with id 3 was deleted by a user or the framework."
    assert actions == [RemoveFromDriver(3, ExecutorLoss(-1, False, message))]


def test_a_deleted_pod_keeps_the_exit_code_it_had() -> None:
    gone = pod(3, "Failed", containers=[terminated(SPARK_CONTAINER, 143)], deleted=True)
    (remove,) = decider().decide(batch(gone), {}, now=0.0)
    assert isinstance(remove, RemoveFromDriver)
    assert remove.loss.exit_code == 143 and not remove.loss.exit_caused_by_app


def test_a_failed_then_deleted_pod_is_reported_once() -> None:
    d = decider()
    d.decide(batch(failed_pod(1)), {}, now=0.0)
    assert d.decide(batch(failed_pod(1, deleted=True)), {}, now=1.0) == []
    assert d.is_removed(1)


# ---------------------------------------------------------------------------------------- missing pods


MISSING_MESSAGE = (
    "The executor with ID 1 (registered at 7 ms) was not found in the cluster at the polling time (30008 ms) "
    "which is after the accepted detect delta time (30000 ms) configured by "
    "`spark.kubernetes.executor.missingPodDetectDelta`. The executor may have been deleted but the driver "
    "missed the deletion event. Marking this executor as failed."
)


def test_missing_pod_is_removed_only_after_the_detect_delta() -> None:
    d = decider(missing_pod_detect_delta=30.0)
    registered = {1: 0.007}  # registered at 7 ms
    at_delta = batch(view=[], full_snapshot_ts=30.007, resynced=True)
    assert d.decide(at_delta, registered, now=30.007) == []
    after_delta = batch(view=[], full_snapshot_ts=30.008, resynced=True)
    assert d.decide(after_delta, registered, now=30.008) == [
        RemoveFromDriver(1, ExecutorLoss(-1, False, MISSING_MESSAGE))
    ]
    # Reported once, whatever later polls say.
    assert d.decide(batch(view=[], full_snapshot_ts=60.0, resynced=True), registered, now=60.0) == []


def test_missing_pods_are_only_looked_for_after_a_new_full_resync() -> None:
    d = decider(missing_pod_detect_delta=30.0)
    registered = {1: 0.0}
    assert d.decide(batch(view=[], full_snapshot_ts=100.0, resynced=False), registered, now=100.0) == []
    assert len(d.decide(batch(view=[], full_snapshot_ts=100.0, resynced=True), registered, now=100.0)) == 1


def test_a_resync_at_the_same_time_is_not_looked_at_twice() -> None:
    d = decider(missing_pod_detect_delta=30.0)
    d.decide(batch(view=[], full_snapshot_ts=20.0, resynced=True), {1: 0.0}, now=20.0)
    # Executor 2 would be missing, but no new poll happened since the last check.
    assert d.decide(batch(view=[], full_snapshot_ts=20.0, resynced=True), {2: -100.0}, now=21.0) == []


def test_executors_whose_pods_are_listed_or_already_removed_are_not_missing() -> None:
    d = decider(missing_pod_detect_delta=30.0)
    d.decide(batch(failed_pod(2)), {}, now=0.0)
    listed = batch(view=[pod(1, "Running", containers=[running(SPARK_CONTAINER)])], full_snapshot_ts=100.0,
                   resynced=True)
    assert removals(d.decide(listed, {1: 0.0, 2: 0.0}, now=100.0)) == []


# ------------------------------------------------------------------------------- deleteOnTermination=false


def test_without_delete_on_termination_the_pod_is_labelled_inactive_never_deleted() -> None:
    d = decider(delete_on_termination=False)
    actions = d.decide(batch(failed_pod(1)), {}, now=0.0)
    assert len(removals(actions)) == 1
    assert [a for a in actions if not isinstance(a, RemoveFromDriver)] == [MarkInactive(1, pod_name(1))]
    later = d.decide(batch(failed_pod(1), view=[failed_pod(1)]), {}, now=10 * RETRY)
    assert later == []  # labelled once; never a DeletePod


def test_a_failed_inactivation_is_retried_at_the_next_batch() -> None:
    d = decider(delete_on_termination=False)
    d.decide(batch(failed_pod(1)), {}, now=0.0)
    d.inactivation_failed(1)
    assert d.decide(batch(view=[failed_pod(1)]), {}, now=1.0) == [MarkInactive(1, pod_name(1))]
    assert d.decide(batch(view=[failed_pod(1)]), {}, now=2.0) == []


def test_inactive_labelled_pods_are_ignored() -> None:
    inactive = failed_pod(1, labels={"spark-exec-inactive": "true"})
    assert decider().decide(batch(inactive), {}, now=0.0) == []
    assert decider(delete_on_termination=False).decide(batch(inactive), {}, now=0.0) == []


def test_exit_code_in_the_loss_is_the_spark_containers() -> None:
    obj = pod(1, "Failed", containers=[terminated("sidecar", 0), terminated(SPARK_CONTAINER, 52)])
    (remove, _) = decider().decide(batch(obj), {}, now=0.0)
    assert isinstance(remove, RemoveFromDriver)
    assert remove.loss.exit_code == 52


def test_oom_killed_loss_message_leads_with_the_memory_limit() -> None:
    obj = pod(
        1, "Failed", containers=[terminated(SPARK_CONTAINER, 137, reason="OOMKilled")], memory_limit="4505Mi"
    )
    (remove, _) = decider().decide(batch(obj), {}, now=0.0)
    assert isinstance(remove, RemoveFromDriver)
    first_line = remove.loss.message.splitlines()[0]
    assert "OOMKilled" in first_line and "4505Mi" in first_line
