"""Why a pod is not running yet: container waits first, then the scheduler's condition."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_backend.tracking.pod_reasons import PendingReason, container_image, pending_reason

UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/3 nodes are available: 3 Insufficient memory.",
}


def waiting(name: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason, "message": message}}}


def pod_with(**status: Any) -> dict[str, Any]:
    return {"status": {"phase": "Pending", **status}}


def test_the_scheduler_condition_gives_reason_and_message() -> None:
    reason = pending_reason(pod_with(conditions=[UNSCHEDULABLE]))
    assert reason == PendingReason("Unschedulable", "0/3 nodes are available: 3 Insufficient memory.")
    assert str(reason) == "Unschedulable: 0/3 nodes are available: 3 Insufficient memory."


def test_a_scheduled_pod_has_no_scheduler_reason() -> None:
    scheduled = {"type": "PodScheduled", "status": "True"}
    assert pending_reason(pod_with(conditions=[scheduled, {"type": "Ready", "status": "False"}])) is None


def test_a_condition_without_reason_reads_as_unschedulable() -> None:
    condition = {"type": "PodScheduled", "status": "False"}
    assert pending_reason(pod_with(conditions=[condition])) == PendingReason("Unschedulable", "")


@pytest.mark.parametrize(
    "reason",
    [
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    ],
)
def test_a_container_wait_reason_is_reported(reason: str) -> None:
    found = pending_reason(pod_with(containerStatuses=[waiting("spark", reason, "details")]))
    assert found == PendingReason(reason, "details")


def test_image_pull_failures_are_flagged() -> None:
    assert PendingReason("ErrImagePull").is_image_pull_failure
    assert PendingReason("ImagePullBackOff").is_image_pull_failure
    assert not PendingReason("Unschedulable").is_image_pull_failure
    assert not PendingReason("CreateContainerConfigError").is_image_pull_failure


@pytest.mark.parametrize("reason", ["ContainerCreating", "PodInitializing"])
def test_starting_is_not_a_reason(reason: str) -> None:
    assert pending_reason(pod_with(containerStatuses=[waiting("spark", reason)])) is None


def test_a_container_wait_wins_over_the_scheduler_condition() -> None:
    # A pod bound by an earlier attempt can keep a stale condition; the kubelet's wait is the news.
    found = pending_reason(
        pod_with(conditions=[UNSCHEDULABLE], containerStatuses=[waiting("spark", "ErrImagePull")])
    )
    assert found == PendingReason("ErrImagePull", "")
    assert str(found) == "ErrImagePull"


def test_the_first_telling_container_is_reported() -> None:
    found = pending_reason(
        pod_with(
            containerStatuses=[waiting("a", "ContainerCreating"), waiting("b", "CreateContainerConfigError")]
        )
    )
    assert found == PendingReason("CreateContainerConfigError", "")


def test_a_pod_without_status_has_no_reason() -> None:
    assert pending_reason({}) is None
    assert pending_reason({"status": None}) is None


def test_container_image_reads_the_named_container() -> None:
    pod = {"spec": {"containers": [{"name": "side", "image": "busybox"}, {"name": "spark", "image": "s:1"}]}}
    assert container_image(pod, "spark") == "s:1"
    assert container_image(pod, "missing") == ""
    assert container_image({}, "spark") == ""
