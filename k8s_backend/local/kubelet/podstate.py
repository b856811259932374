"""What the kubelet knows about each pod and container, and the pod ``status`` it reports from that.

Records are plain mutable objects owned by the kubelet's event loop; :func:`render_status` is a pure
function of a record and the time, so the status shapes are unit-testable without processes.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from k8s_backend.local.kubelet.hooks import PreStopHook
    from k8s_backend.local.kubelet.processes import ProcessHandle

Obj = dict[str, Any]

WAITING = "waiting"
RUNNING = "running"
TERMINATED = "terminated"


def timestamp(seconds: float) -> str:
    """RFC 3339 in UTC with second precision, as the API server writes times."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@attrs.define
class ContainerRecord:
    """One container (or init container) of a pod as the kubelet runs it."""

    name: str
    spec: Obj
    init: bool = False
    state: str = WAITING
    reason: str = "ContainerCreating"
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    restart_count: int = 0
    last_terminated: Obj | None = None
    handle: ProcessHandle | None = None
    generation: int = 0  # bumped on every start, so stale exit reports can be told apart
    attempts: int = 0  # failed image pulls or configuration attempts, for back-off
    container_id: str = ""
    pre_stop: PreStopHook | None = None  # what to run before this run of the container is stopped
    pre_stop_started: bool = False

    @property
    def image(self) -> str:
        return str(self.spec.get("image", ""))

    def set_waiting(self, reason: str, message: str = "") -> None:
        self.state, self.reason, self.message = WAITING, reason, message

    def set_running(self, started_at: float, container_id: str) -> None:
        self.state, self.reason, self.message = RUNNING, "", ""
        self.started_at, self.finished_at, self.exit_code, self.signal = started_at, None, None, None
        self.container_id = container_id
        self.pre_stop_started = False

    def set_terminated(
        self, exit_code: int, reason: str, finished_at: float, *, message: str = "", signal: int | None = None
    ) -> None:
        self.state, self.reason, self.message = TERMINATED, reason, message
        self.exit_code, self.finished_at, self.signal = exit_code, finished_at, signal
        if self.started_at is None:
            self.started_at = finished_at

    def terminated_state(self) -> Obj:
        state: Obj = {
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": timestamp(self.started_at or 0.0),
            "finishedAt": timestamp(self.finished_at or 0.0),
        }
        if self.signal:
            state["signal"] = self.signal
        if self.message:
            state["message"] = self.message
        if self.container_id:
            state["containerID"] = self.container_id
        return state

    def status(self) -> Obj:
        """This container's entry of ``containerStatuses`` / ``initContainerStatuses``."""
        if self.state == RUNNING:
            state: Obj = {"running": {"startedAt": timestamp(self.started_at or 0.0)}}
        elif self.state == TERMINATED:
            state = {"terminated": self.terminated_state()}
        else:
            state = {
                "waiting": {"reason": self.reason, **({"message": self.message} if self.message else {})}
            }
        result: Obj = {
            "name": self.name,
            "image": self.image,
            "imageID": image_id(self.image) if self.container_id else "",
            "ready": self.state == RUNNING and not self.init,
            "started": self.state == RUNNING,
            "restartCount": self.restart_count,
            "state": state,
            "lastState": {"terminated": self.last_terminated} if self.last_terminated else {},
        }
        if self.container_id:
            result["containerID"] = self.container_id
        return result


def image_id(image: str) -> str:
    # A stable made-up digest: real clients only compare or print it.
    return f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


@attrs.define
class PodRecord:
    """A pod the kubelet has seen, keyed by uid."""

    uid: str
    namespace: str
    name: str
    pod: Obj
    init_containers: list[ContainerRecord]
    containers: list[ContainerRecord]
    node: str | None = None
    unschedulable: str = ""  # the scheduler's message while no node has room
    start_time: float | None = None
    deleting: bool = False
    deletion_grace: float | None = None  # the grace period the containers are being stopped with
    gone: bool = False  # removed from the API; only processes remain to be stopped
    pod_dir: Path | None = None
    volumes: dict[str, str] | None = None
    condition_times: dict[str, tuple[str, float]] = attrs.field(factory=dict)

    @classmethod
    def from_pod(cls, pod: Obj) -> PodRecord:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        return cls(
            uid=str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"),
            namespace=str(meta.get("namespace", "default")),
            name=str(meta.get("name", "")),
            pod=pod,
            init_containers=[
                ContainerRecord(str(c.get("name", "")), c, init=True)
                for c in spec.get("initContainers") or []
            ],
            containers=[ContainerRecord(str(c.get("name", "")), c) for c in spec.get("containers") or []],
        )

    @property
    def restart_policy(self) -> str:
        return str((self.pod.get("spec") or {}).get("restartPolicy") or "Always")

    def all_containers(self) -> list[ContainerRecord]:
        return [*self.init_containers, *self.containers]

    def initialized(self) -> bool:
        return all(c.state == TERMINATED and c.exit_code == 0 for c in self.init_containers)

    def init_failed(self) -> bool:
        return any(
            c.state == TERMINATED and c.exit_code != 0 and self.restart_policy == "Never"
            for c in self.init_containers
        )

    def phase(self) -> str:
        """Pending, Running, Succeeded or Failed, by the kubelet's rules for this restart policy."""
        if self.node is None:
            return "Pending"
        if self.init_failed():
            return "Failed"
        if not self.initialized():
            return "Pending"
        if all(c.state == TERMINATED for c in self.containers):
            return "Succeeded" if all(c.exit_code == 0 for c in self.containers) else "Failed"
        if any(c.state == RUNNING or c.restart_count > 0 or c.state == TERMINATED for c in self.containers):
            return "Running"
        return "Pending"

    def terminal(self) -> bool:
        return self.phase() in ("Succeeded", "Failed")

    def _condition(self, kind: str, status: bool, now: float, reason: str = "", message: str = "") -> Obj:
        text = "True" if status else "False"
        previous = self.condition_times.get(kind)
        if previous is None or previous[0] != text:
            self.condition_times[kind] = (text, now)
        condition: Obj = {
            "type": kind,
            "status": text,
            "lastProbeTime": None,
            "lastTransitionTime": timestamp(self.condition_times[kind][1]),
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        return condition

    def conditions(self, now: float) -> list[Obj]:
        if self.node is None:
            return [self._condition("PodScheduled", False, now, "Unschedulable", self.unschedulable)]
        phase = self.phase()
        terminal = phase in ("Succeeded", "Failed")
        unready = [c.name for c in self.containers if c.state != RUNNING]
        incomplete = [
            c.name for c in self.init_containers if not (c.state == TERMINATED and c.exit_code == 0)
        ]
        if terminal:
            ready_reason, ready_message = "PodCompleted", ""
        elif unready:
            ready_reason, ready_message = (
                "ContainersNotReady",
                f"containers with unready status: [{' '.join(unready)}]",
            )
        else:
            ready_reason, ready_message = "", ""
        init_ok = not incomplete
        return [
            self._condition("PodReadyToStartContainers", not terminal, now),
            self._condition(
                "Initialized",
                init_ok,
                now,
                "" if init_ok else "ContainersNotInitialized",
                "" if init_ok else f"containers with incomplete status: [{' '.join(incomplete)}]",
            ),
            self._condition("Ready", not unready and not terminal, now, ready_reason, ready_message),
            self._condition(
                "ContainersReady", not unready and not terminal, now, ready_reason, ready_message
            ),
            self._condition("PodScheduled", True, now),
        ]

    def render_status(self, now: float, *, pod_ip: str, host_ip: str) -> Obj:
        """The full ``status`` of the pod as the kubelet would report it now."""
        status: Obj = {
            "phase": self.phase(),
            "conditions": self.conditions(now),
            "qosClass": qos_class(self.pod),
        }
        if self.node is None:
            return status
        status.update(
            {
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": timestamp(self.start_time or now),
                "containerStatuses": [c.status() for c in self.containers],
            }
        )
        if self.init_containers:
            status["initContainerStatuses"] = [c.status() for c in self.init_containers]
        return status


def qos_class(pod: Obj) -> str:
    """Guaranteed, Burstable or BestEffort, from the containers' requests and limits."""
    containers = (pod.get("spec") or {}).get("containers") or []
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requested = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        any_set = any_set or bool(requested) or bool(limits)
        for name in ("cpu", "memory"):
            if name not in limits or requested.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
