"""What state an executor pod is in, decided from the pod alone (Spark's ExecutorPodStates)."""

from __future__ import annotations

import enum
import logging
from datetime import datetime
from typing import Any

import attrs

from k8s_backend.kube.labels import (
    SPARK_EXECUTOR_ID_LABEL,
    SPARK_EXECUTOR_INACTIVE_LABEL,
    SPARK_RESOURCE_PROFILE_ID_LABEL,
)
from k8s_backend.kube.port import Obj
from k8s_backend.kube.resource_version import parse_resource_version

log = logging.getLogger(__name__)

EXECUTOR_ID_LABEL = SPARK_EXECUTOR_ID_LABEL
RESOURCE_PROFILE_ID_LABEL = SPARK_RESOURCE_PROFILE_ID_LABEL
INACTIVE_LABEL = SPARK_EXECUTOR_INACTIVE_LABEL
UNRESOLVED_EXECUTOR_ID = "EXECID"  # statefulset-style pods before the driver gave them an id


class PodPhase(enum.Enum):
    """The state of an executor pod, as the backend reasons about it."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DELETED = "deleted"
    TERMINATING = "terminating"
    UNKNOWN = "unknown"

    @property
    def is_final(self) -> bool:
        """Succeeded, failed, deleted and terminating pods will never run tasks again."""
        return self in _FINAL


_FINAL = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED, PodPhase.DELETED, PodPhase.TERMINATING})


@attrs.frozen(slots=True)
class ExecutorPodState:
    """One executor pod and the state it maps to. Equality ignores the pod body.

    The snapshot store's states hold the compact pod of :mod:`k8s_backend.snapshots.store_pods` (what the
    backend reads of a pod; its parts may be shared with other pods'): read it, never change it.
    """

    executor_id: int
    phase: PodPhase
    pod: Obj = attrs.field(eq=False, repr=False)

    @property
    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = self.pod.get("metadata") or {}
        return meta

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def labels(self) -> dict[str, str]:
        labels: dict[str, str] = self.metadata.get("labels") or {}
        return labels

    @property
    def resource_profile_id(self) -> int:
        try:
            return int(self.labels.get(RESOURCE_PROFILE_ID_LABEL, 0))
        except ValueError:
            return 0

    @property
    def resource_version(self) -> int | None:
        return parse_resource_version(self.metadata.get("resourceVersion"))

    @property
    def creation_timestamp(self) -> float | None:
        """Seconds since the epoch, or None if missing or unparsable."""
        return parse_timestamp(self.metadata.get("creationTimestamp"))

    @property
    def is_inactive(self) -> bool:
        return self.labels.get(INACTIVE_LABEL) == "true"

    @property
    def is_being_deleted(self) -> bool:
        return bool(self.metadata.get("deletionTimestamp"))


def parse_timestamp(value: object) -> float | None:
    if not value:
        return None
    text = str(value)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def executor_id_of(pod: Obj) -> int | None:
    """The executor id from the pod's label; None for pods that are not (yet) executors."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    raw = labels.get(EXECUTOR_ID_LABEL)
    if raw is None or raw == UNRESOLVED_EXECUTOR_ID:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


@attrs.frozen
class PodStateRules:
    """The two settings that change how a pod maps to a state (Spark kept them as static globals)."""

    container_name: str = "spark-kubernetes-executor"
    check_all_containers: bool = False

    def to_state(self, pod: Obj) -> ExecutorPodState | None:
        """Map a pod to its state, or None when the pod carries no executor id."""
        executor_id = executor_id_of(pod)
        if executor_id is None:
            return None
        return ExecutorPodState(executor_id, self.phase_of(pod), pod)

    def phase_of(self, pod: Obj) -> PodPhase:
        metadata = pod.get("metadata") or {}
        status = pod.get("status") or {}
        phase = str(status.get("phase") or "").lower()
        # A running pod with a deletionTimestamp is still running until it stops (SPARK-31125).
        if metadata.get("deletionTimestamp") and phase not in ("terminating", "running"):
            return PodPhase.DELETED
        if phase == "pending":
            return PodPhase.PENDING
        if phase == "running":
            return self._running_phase(pod, status)
        if phase == "failed":
            return PodPhase.FAILED
        if phase == "succeeded":
            return PodPhase.SUCCEEDED
        if phase == "terminating":
            return PodPhase.TERMINATING
        log.warning("Received unknown phase %r for executor pod %s", phase, metadata.get("name"))
        return PodPhase.UNKNOWN

    def _running_phase(self, pod: Obj, status: dict[str, Any]) -> PodPhase:
        statuses: list[dict[str, Any]] = status.get("containerStatuses") or []
        restart_never = (pod.get("spec") or {}).get("restartPolicy") == "Never"
        if self.check_all_containers and restart_never:
            for container in statuses:
                code = _exit_code(container)
                if code is not None and code != 0:
                    return PodPhase.FAILED
        # Only the Spark container decides: a long-lived sidecar must not hide the executor's exit.
        for container in statuses:
            if container.get("name") == self.container_name:
                code = _exit_code(container)
                if code is None:
                    return PodPhase.RUNNING
                return PodPhase.SUCCEEDED if code == 0 else PodPhase.FAILED
        return PodPhase.RUNNING


def _exit_code(container_status: dict[str, Any]) -> int | None:
    terminated = (container_status.get("state") or {}).get("terminated")
    if not terminated:
        return None
    return int(terminated.get("exitCode", -1))
