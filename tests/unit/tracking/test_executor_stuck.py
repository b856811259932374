"""Stuck executors are reported once per reason; unpullable images are reported for failing fast."""

from __future__ import annotations

import logging

import pytest
from executor_tracking_pods import IMAGE, T0, UNSCHEDULABLE, batch, make_tracker, observe

from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.tracking.pod_reasons import PendingReason
from k8s_backend.tracking.tracker import ExecutorStuck, ExecutorTracker, ImagePullFailed

LOGGER = "k8s_backend.tracking.tracker"


def _empty() -> SnapshotBatch:
    """A delivery with no pod change: only time passed."""
    return batch()


def pending_unschedulable(tracker: ExecutorTracker, executor_id: int = 1, profile: int = 0) -> None:
    tracker.requested(executor_id, profile, T0)
    observe(tracker, T0 + 1, executor_id, "Pending", unschedulable=UNSCHEDULABLE, profile=profile)


def stuck_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "has been pending" in r.getMessage()]


def test_nothing_is_stuck_before_the_timeout() -> None:
    tracker = make_tracker(stuck_timeout=60)
    pending_unschedulable(tracker)
    assert tracker.on_batch(_empty(), T0 + 59) == []
    assert tracker.stuck(T0 + 59) == []


def test_a_stuck_executor_is_reported_and_logged_once_per_reason(caplog: pytest.LogCaptureFixture) -> None:
    tracker = make_tracker(stuck_timeout=60)
    pending_unschedulable(tracker)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        notices = tracker.on_batch(_empty(), T0 + 60)
        for second in range(61, 120):
            assert tracker.on_batch(_empty(), T0 + second) == []
            observe(tracker, T0 + second, 1, "Pending", unschedulable=UNSCHEDULABLE)
    reason = PendingReason("Unschedulable", UNSCHEDULABLE)
    assert notices == [ExecutorStuck(1, reason, 60.0)]
    assert stuck_logs(caplog) == [f"Executor 1 has been pending for 60s: Unschedulable: {UNSCHEDULABLE}"]
    assert tracker.stuck(T0 + 120) == [
        {"executor_id": 1, "reason": f"Unschedulable: {UNSCHEDULABLE}", "pending_for": 120.0}
    ]


def test_a_new_reason_is_logged_again(caplog: pytest.LogCaptureFixture) -> None:
    tracker = make_tracker(stuck_timeout=60)
    pending_unschedulable(tracker)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        tracker.on_batch(_empty(), T0 + 60)
        notices = observe(
            tracker,
            T0 + 70,
            1,
            "Pending",
            waiting="CreateContainerConfigError",
            waiting_message='secret "creds" not found',
        )
        observe(
            tracker,
            T0 + 80,
            1,
            "Pending",
            waiting="CreateContainerConfigError",
            waiting_message='secret "creds" not found',
        )
    assert [n.reason.reason for n in notices] == ["CreateContainerConfigError"]
    assert len(stuck_logs(caplog)) == 2
    assert 'CreateContainerConfigError: secret "creds" not found' in stuck_logs(caplog)[1]
    assert tracker.stuck(T0 + 80)[0]["reason"] == 'CreateContainerConfigError: secret "creds" not found'


def test_a_pod_that_is_only_starting_is_never_stuck() -> None:
    tracker = make_tracker(stuck_timeout=60)
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 1, 1, "Pending", waiting="ContainerCreating")
    assert tracker.on_batch(_empty(), T0 + 600) == []
    assert tracker.stuck(T0 + 600) == []


def test_an_executor_that_runs_is_no_longer_stuck() -> None:
    tracker = make_tracker(stuck_timeout=60)
    pending_unschedulable(tracker)
    assert tracker.stuck(T0 + 61)
    observe(tracker, T0 + 62, 1, "Running")
    assert tracker.stuck(T0 + 63) == []
    assert tracker.on_batch(_empty(), T0 + 200) == []


def test_stuck_executors_are_in_the_summary_in_id_order() -> None:
    tracker = make_tracker(stuck_timeout=10)
    for executor_id in (3, 1, 2):
        pending_unschedulable(tracker, executor_id)
    stuck = tracker.summary(T0 + 30)["stuck"]
    assert isinstance(stuck, list)
    assert [s["executor_id"] for s in stuck] == [1, 2, 3]


@pytest.mark.parametrize("reason", ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"])
def test_an_unpullable_image_is_reported_after_the_timeout(reason: str) -> None:
    tracker = make_tracker(image_pull_timeout=120)
    tracker.requested(1, 0, T0)
    observe(tracker, T0, 1, "Pending", waiting=reason, waiting_message="not found")
    assert not [n for n in tracker.on_batch(_empty(), T0 + 119) if isinstance(n, ImagePullFailed)]
    pulls = [n for n in tracker.on_batch(_empty(), T0 + 120) if isinstance(n, ImagePullFailed)]
    assert pulls == [ImagePullFailed(1, IMAGE, PendingReason(reason, "not found"), 120.0)]


def test_alternating_pull_reasons_still_fail_the_image() -> None:
    # The kubelet flips between ErrImagePull and ImagePullBackOff while it retries.
    tracker = make_tracker(image_pull_timeout=120)
    tracker.requested(1, 0, T0)
    pulls: list[ImagePullFailed] = []
    for second in range(1, 130, 10):
        reason = "ErrImagePull" if second % 20 == 1 else "ImagePullBackOff"
        notices = observe(tracker, T0 + second, 1, "Pending", waiting=reason)
        pulls += [n for n in notices if isinstance(n, ImagePullFailed)]
    assert pulls and pulls[0].executor_id == 1


def test_no_image_failure_once_an_executor_of_the_profile_ran() -> None:
    tracker = make_tracker(image_pull_timeout=120)
    tracker.requested(1, 0, T0)
    tracker.requested(2, 0, T0)
    observe(tracker, T0 + 1, 1, "Running")  # the image was pulled once: a node problem, not the image
    observe(tracker, T0 + 1, 2, "Pending", waiting="ImagePullBackOff")
    assert not [n for n in tracker.on_batch(_empty(), T0 + 500) if isinstance(n, ImagePullFailed)]


def test_an_executor_of_another_profile_that_ran_does_not_excuse_the_image() -> None:
    tracker = make_tracker(image_pull_timeout=120)
    tracker.requested(1, 0, T0)
    tracker.requested(2, 1, T0)
    observe(tracker, T0 + 1, 1, "Running")
    observe(tracker, T0, 2, "Pending", waiting="ErrImagePull", profile=1)
    pulls = [n for n in tracker.on_batch(_empty(), T0 + 120) if isinstance(n, ImagePullFailed)]
    assert [p.executor_id for p in pulls] == [2]


def test_no_image_timeout_means_never() -> None:
    tracker = make_tracker(image_pull_timeout=None)
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 1, 1, "Pending", waiting="ErrImagePull")
    assert not [n for n in tracker.on_batch(_empty(), T0 + 10_000) if isinstance(n, ImagePullFailed)]


def test_other_pending_reasons_never_fail_the_image() -> None:
    tracker = make_tracker(image_pull_timeout=120)
    pending_unschedulable(tracker)
    assert not [n for n in tracker.on_batch(_empty(), T0 + 10_000) if isinstance(n, ImagePullFailed)]


def test_the_image_timeout_counts_from_the_first_pull_failure() -> None:
    tracker = make_tracker(image_pull_timeout=120)
    pending_unschedulable(tracker)  # waits 200 s for a node first
    observe(tracker, T0 + 200, 1, "Pending", waiting="ErrImagePull")
    assert not [n for n in tracker.on_batch(_empty(), T0 + 201) if isinstance(n, ImagePullFailed)]
    assert [n for n in tracker.on_batch(_empty(), T0 + 320) if isinstance(n, ImagePullFailed)]
