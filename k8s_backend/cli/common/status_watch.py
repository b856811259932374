"""Watching the driver pod: one concise line per change, and the driver's exit code at the end.

The counterpart of Spark's LoggingPodStatusWatcher. :func:`describe_pod` turns a pod into a line
(phase, node, why it waits: Unschedulable, ImagePullBackOff, ...; the container's state);
:class:`DriverStatus` prints a line only when it differs from the last one and knows when the
application ended; :func:`wait_for_driver` GETs the pod, then watches it, re-watching after a
410 Gone or a closed stream, until the pod succeeded, failed or was deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs

from k8s_backend.kube.port import PODS, ApiError, GoneError, KubernetesApi, NotFoundError, Obj

log = logging.getLogger(__name__)

DRIVER_CONTAINER = "spark-kubernetes-driver"
FINISHED_PHASES = ("Succeeded", "Failed")
MESSAGE_LIMIT = 200
WATCH_TIMEOUT_SECONDS = 300  # the server ends a watch after this; we then watch again


def _container_status(pod: Obj, container: str | None) -> Obj | None:
    statuses: list[Obj] = list((pod.get("status") or {}).get("containerStatuses") or [])
    if not statuses:
        return None
    wanted = container or DRIVER_CONTAINER
    for status in statuses:
        if status.get("name") == wanted:
            return status
    return statuses[0]


def _short(text: Any) -> str:
    one_line = " ".join(str(text).split())
    return one_line if len(one_line) <= MESSAGE_LIMIT else one_line[: MESSAGE_LIMIT - 3] + "..."


def _last_line(text: Any) -> str:
    lines = [line for line in str(text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def termination_message(pod: Obj, container: str | None = None) -> str:
    """The driver container's termination message (with ``FallbackToLogsOnError``, the end of the
    log of a failed driver), or ""."""
    status = _container_status(pod, container)
    if status is None:
        return ""
    ended = (status.get("state") or {}).get("terminated") or {}
    return str(ended.get("message") or "").rstrip()


def describe_container(status: Obj) -> str:
    """``container X running`` / ``waiting: Reason (message)`` / ``terminated: exit code N (Reason)``."""
    name = status.get("name", "?")
    state = status.get("state") or {}
    if "running" in state:
        return f"container {name} running"
    if "terminated" in state:
        ended = state["terminated"] or {}
        text = f"container {name} terminated: exit code {ended.get('exitCode', '?')}"
        reason = ended.get("reason")
        if reason:
            text += f" ({reason})"
        last = _last_line(ended.get("message"))
        if last:  # a log tail (FallbackToLogsOnError) ends with what went wrong
            text += f": {_short(last)}"
        return text
    waiting = state.get("waiting") or {}
    reason = waiting.get("reason") or "waiting"
    text = f"container {name} waiting: {reason}"
    if waiting.get("message"):
        text += f" ({_short(waiting['message'])})"
    return text


def describe_pod(pod: Obj, container: str | None = None) -> str:
    """A concise line about a driver pod's state (without its name)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    text = "Terminating" if meta.get("deletionTimestamp") and phase not in FINISHED_PHASES else phase
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        text += f" on {node}"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            reason = condition.get("reason") or "NotScheduled"
            message = condition.get("message")
            text += f", {reason}" + (f" ({_short(message)})" if message else "")
    if status.get("reason") and phase in (*FINISHED_PHASES, "Pending"):
        text += f", {status['reason']}" + (f": {_short(status['message'])}" if status.get("message") else "")
    container_status = _container_status(pod, container)
    if container_status is not None:
        text += f"; {describe_container(container_status)}"
    return text


def exit_code_of(pod: Obj, container: str | None = None) -> int | None:
    """The driver container's exit code, if it terminated."""
    status = _container_status(pod, container)
    if status is None:
        return None
    ended = (status.get("state") or {}).get("terminated") or (status.get("lastState") or {}).get("terminated")
    if not ended or ended.get("exitCode") is None:
        return None
    return int(ended["exitCode"])


@attrs.define
class DriverStatus:
    """Follows one driver pod's events; prints a line whenever the description changes."""

    name: str
    namespace: str
    out: Callable[[str], None]
    container: str | None = None
    last_line: str | None = None
    last_pod: Obj | None = None
    finished: bool = False
    deleted: bool = False

    def observe(self, event_type: str, pod: Obj) -> None:
        """One ADDED/MODIFIED/DELETED event (or a GET result as MODIFIED)."""
        if self.finished:
            return
        self.last_pod = pod
        line = describe_pod(pod, self.container)
        if event_type == "DELETED":
            self.deleted = True
            line += " (pod deleted)"
        if line != self.last_line:
            self.last_line = line
            self.out(f"driver {self.namespace}/{self.name}: {line}")
        phase = (pod.get("status") or {}).get("phase")
        if event_type == "DELETED" or phase in FINISHED_PHASES:
            self.finished = True

    def exit_code(self) -> int:
        """The driver container's exit code; 1 if it failed or vanished without one."""
        pod = self.last_pod or {}
        code = exit_code_of(pod, self.container)
        if code is not None:
            return code
        phase = (pod.get("status") or {}).get("phase")
        return 0 if phase == "Succeeded" else 1


def wait_for_driver(
    api: KubernetesApi,
    status: DriverStatus,
    *,
    watch_timeout: int = WATCH_TIMEOUT_SECONDS,
    on_watch: Callable[[], None] | None = None,
) -> int:
    """Report the driver pod until it ends; returns its exit code.

    Every (re)watch starts from a fresh GET, so no change between two watches goes unseen.
    ``on_watch`` runs after each watch opens (tests use it to know when to act).
    """
    namespace, name = status.namespace, status.name
    while not status.finished:
        try:
            pod = api.get(PODS, namespace, name)
        except NotFoundError:
            if status.last_pod is None:
                raise
            status.observe("DELETED", status.last_pod)
            break
        status.observe("MODIFIED", pod)
        if status.finished:
            break
        version = (pod.get("metadata") or {}).get("resourceVersion")
        stream = api.watch(
            PODS,
            namespace,
            field_selector=f"metadata.name={name}",
            resource_version=version,
            timeout_seconds=watch_timeout,
        )
        try:
            if on_watch is not None:
                on_watch()
            for event in stream:
                if event.type in ("ADDED", "MODIFIED", "DELETED"):
                    status.observe(event.type, event.object)
                if status.finished:
                    break
        except GoneError:
            log.debug("watch of driver pod %s/%s expired (410); watching again", namespace, name)
        except ApiError as error:
            if error.status and error.status < 500:
                raise
            log.info("watch of driver pod %s/%s failed (%s); watching again", namespace, name, error)
        finally:
            stream.close()
    return status.exit_code()
