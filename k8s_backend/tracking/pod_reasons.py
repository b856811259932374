"""Why a pod is not running yet, read from its status (scheduler conditions and container waits)."""

from __future__ import annotations

from typing import Any

import attrs

from k8s_backend.kube.port import Obj

IMAGE_PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
CONFIG_REASONS = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError"})
STARTING_REASONS = frozenset({"ContainerCreating", "PodInitializing"})
# The kubelet alternates between these two while it retries a pull: one reason, not two.
PULL_RETRY_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff"})


@attrs.frozen
class PendingReason:
    """A reason in Kubernetes' words (e.g. ``Unschedulable``) and its message."""

    reason: str
    message: str = ""

    @property
    def is_image_pull_failure(self) -> bool:
        return self.reason in IMAGE_PULL_REASONS

    def same_as(self, other: PendingReason | None) -> bool:
        """Whether ``other`` is the same reason: equal, or both steps of one image pull being retried
        (``ErrImagePull`` then ``ImagePullBackOff``, again and again)."""
        if other is None:
            return False
        return self == other or (self.reason in PULL_RETRY_REASONS and other.reason in PULL_RETRY_REASONS)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}" if self.message else self.reason


def pending_reason(pod: Obj) -> PendingReason | None:
    """The most telling reason a pod is not running, or None when it is simply starting."""
    status: dict[str, Any] = pod.get("status") or {}
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason and reason not in STARTING_REASONS:
            return PendingReason(str(reason), str(waiting.get("message") or ""))
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return PendingReason(
                str(condition.get("reason") or "Unschedulable"), str(condition.get("message") or "")
            )
    return None


def container_image(pod: Obj, container_name: str) -> str:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") == container_name:
            return str(container.get("image") or "")
    return ""
