"""The container runtime half of the kubelet: image "pulls", starting containers in order (init containers
one by one, then the rest), exits, restarts with back-off, and stopping containers on deletion.

Runs on the kubelet's event loop only; process exits arrive from waiter threads via ``loop.post``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from k8s_backend.common.clock import Clock
from k8s_backend.kube.port import CONFIG_MAPS, ApiError, KubernetesApi, Obj, Resource
from k8s_backend.local.kubelet.container import HostEnvironment, translate
from k8s_backend.local.kubelet.env import ContainerConfigError, ContainerStartError, PodRuntime
from k8s_backend.local.kubelet.events import NORMAL, WARNING, EventRecorder
from k8s_backend.local.kubelet.hooks import (
    PreStopHook,
    PreStopRunner,
    exec_command,
    hook_failure,
    pre_stop_spec,
    sleep_hook,
)
from k8s_backend.local.kubelet.images import ImagePolicy
from k8s_backend.local.kubelet.loop import EventLoop
from k8s_backend.local.kubelet.nodes import Resources
from k8s_backend.local.kubelet.podstate import RUNNING, TERMINATED, WAITING, ContainerRecord, PodRecord
from k8s_backend.local.kubelet.processes import ExitStatus, ProcessSupervisor
from k8s_backend.local.kubelet.volumes import container_mounts, materialize_volumes

log = logging.getLogger(__name__)

SECRETS = Resource("Secret", "secrets")
START_ERROR_EXIT_CODE = 128  # what container runtimes report when the command cannot be executed
MAX_BACKOFF = 300.0
_STARTABLE = ("ContainerCreating", "PodInitializing")


class ContainerRuntime:
    """Starts and stops the containers of bound pods.

    Changes are reported through ``publish`` (a status write) and ``on_container_exit`` (the pod's
    containers changed in a way that may finish a deletion or free node capacity).
    """

    def __init__(
        self,
        api: KubernetesApi,
        *,
        work_dir: Path,
        supervisor: ProcessSupervisor,
        loop: EventLoop,
        images: ImagePolicy,
        host: HostEnvironment,
        clock: Clock,
        pod_ip: str,
        restart_backoff: float,
        run_processes: bool,
        publish: Callable[[PodRecord], None],
        on_container_exit: Callable[[PodRecord], None],
        node_allocatable: Callable[[str], Resources],
        events: EventRecorder | None = None,
    ) -> None:
        self._api = api
        self._work_dir = work_dir
        self._supervisor = supervisor
        self._loop = loop
        self._images = images
        self._host = host
        self._clock = clock
        self._pod_ip = pod_ip
        self._restart_backoff = restart_backoff
        self._run_processes = run_processes
        self._publish = publish
        self._on_container_exit = on_container_exit
        self._node_allocatable = node_allocatable
        self._events = events
        self._hooks = PreStopRunner(supervisor, monotonic=time.monotonic)

    def log_file(self, record: PodRecord, container: str) -> Path:
        assert record.pod_dir is not None
        return record.pod_dir / "logs" / f"{container}.log"

    def begin(self, record: PodRecord) -> None:
        """A pod was just bound to a node: report it, then start its containers.

        Without processes the pod goes straight to Running in a single status write.
        """
        if record.init_containers:
            for container in record.containers:
                container.set_waiting("PodInitializing")
        if not self._run_processes:
            self.advance(record)
            return
        uid = str((record.pod.get("metadata") or {}).get("uid", ""))[:8]
        record.pod_dir = self._work_dir / "pods" / f"{record.namespace}_{record.name}_{uid}"
        self._publish(record)  # Pending, ContainerCreating: the sandbox is being set up
        self._loop.post(partial(self.advance, record))

    def advance(self, record: PodRecord) -> None:
        """Start whatever may start now: the next init container, or every app container."""
        if record.deleting or record.gone or record.terminal():
            return
        assert record.node is not None
        runtime = PodRuntime(self._pod_ip, self._pod_ip, record.node, self._node_allocatable(record.node))
        if record.volumes is None and record.pod_dir is not None:
            try:
                record.volumes = materialize_volumes(
                    record.pod,
                    record.pod_dir,
                    shared_dir=self._work_dir,
                    lookup=self._lookup,
                    runtime=runtime,
                    token=self._token,
                )
            except ContainerConfigError as error:
                # A real kubelet reports FailedMount and keeps the pod in ContainerCreating meanwhile.
                log.info("pod %s/%s: volumes not ready (%s); retrying", record.namespace, record.name, error)
                self._loop.call_later(1.0, partial(self.advance, record))
                return
        for container in record.init_containers:  # one at a time, in order
            if container.state == TERMINATED and container.exit_code == 0:
                continue
            if container.state == WAITING and container.reason in _STARTABLE:
                self._start(record, container, runtime)
            if not (container.state == TERMINATED and container.exit_code == 0):
                break  # still running, waiting or failed
        if record.initialized():
            for container in record.containers:
                if container.state == WAITING and container.reason in _STARTABLE:
                    self._start(record, container, runtime)
        self._settle(record)

    def stop_containers(self, record: PodRecord, grace: float) -> None:
        """Stop every running container: its preStop hook first (if any, bounded by ``grace``), then
        SIGTERM, then SIGKILL after (the rest of) ``grace`` seconds."""
        now = self._clock.now()
        for container in record.all_containers():
            if container.handle is not None or container.state == RUNNING:
                self._event(record, container, NORMAL, "Killing", f"Stopping container {container.name}")
            if container.handle is not None:
                hook = container.pre_stop
                if hook is not None and grace > 0 and not container.pre_stop_started:
                    container.pre_stop_started = True
                    log_path = self.log_file(record, f"{container.name}.preStop")
                    failed = partial(self._pre_stop_failed, record, container, hook)
                    self._hooks.start(hook, container.handle, grace, log_path, failed)
                else:
                    # No hook, or a second, more urgent deletion while the hook runs: SIGTERM now.
                    container.handle.terminate(grace)
            elif container.state == RUNNING:
                container.set_terminated(0, "Completed", now)  # nothing runs: it stops at once

    def _pre_stop_failed(
        self, record: PodRecord, container: ContainerRecord, hook: PreStopHook, error: str, output: str
    ) -> None:
        """From the hook's thread: report the failure as the kubelet does (the container stops anyway)."""
        pod = f"{record.name}_{record.namespace}({record.uid})"
        message = hook_failure(hook, container.name, pod, error, output)
        self._loop.post(partial(self._event, record, container, WARNING, "FailedPreStopHook", message))

    # -- one container -------------------------------------------------------------------------------

    def _start(self, record: PodRecord, container: ContainerRecord, runtime: PodRuntime) -> None:
        # Over 60 lines: a container's start as a kubelet goes through it, one branch per outcome (the image
        # missing, no processes run, a bad configuration, a failed start, the process running), with Events.
        now = self._clock.now()
        image = container.image
        if not self._images.is_known(image) and container.spec.get("imagePullPolicy") == "Never":
            self._never_pull(record, container)
            return
        if not self._images.is_known(image):
            container.set_waiting(*self._images.pull_error(image))
            self._event(record, container, NORMAL, "Pulling", f'Pulling image "{image}"')
            self._event(record, container, WARNING, "Failed", container.message)
            self._event(record, container, WARNING, "Failed", "Error: ErrImagePull")
            delay = self._images.backoff(container.attempts)
            self._loop.call_later(
                delay, partial(self._image_backoff, record, container, container.generation)
            )
            return
        container.generation += 1
        self._event(
            record, container, NORMAL, "Pulled", f'Container image "{image}" already present on machine'
        )
        if not self._run_processes:
            self._created_and_started(record, container)
            container.set_running(now, self._container_id(record, container))
            if container.init:
                container.set_terminated(0, "Completed", now)  # as if it ran in no time
            return
        try:
            mounts = container_mounts(container.spec, record.volumes or {})
            command = translate(
                record.pod,
                container.spec,
                host=self._host,
                runtime=runtime,
                mounts=mounts,
                cwd=str(record.pod_dir / "containers" / container.name if record.pod_dir else "."),
                lookup=self._lookup,
            )
            pre_stop = self._pre_stop_hook(record, container, runtime, mounts)
        except ContainerConfigError as error:
            container.attempts += 1
            container.set_waiting("CreateContainerConfigError", str(error))
            self._event(record, container, WARNING, "Failed", f"Error: {error}")
            delay = min(MAX_BACKOFF, self._restart_backoff * container.attempts)
            self._loop.call_later(delay, partial(self._retry, record, container, container.generation))
            return
        except ContainerStartError as error:
            container.set_terminated(START_ERROR_EXIT_CODE, "StartError", now, message=str(error))
            self._event(record, container, WARNING, "Failed", f"Error: {error}")
            return
        container.pre_stop = pre_stop
        container_id = self._container_id(record, container)
        if command.kind == "idle":
            self._created_and_started(record, container)
            container.set_running(now, container_id)
            return
        try:
            handle = self._supervisor.start(
                command.argv,
                env=command.env,
                cwd=command.cwd,
                log_path=self.log_file(record, container.name),
                memory_limit=command.memory_limit,
                on_exit=partial(self._exited_elsewhere, record, container, container.generation),
            )
        except (OSError, RuntimeError) as error:
            container.set_terminated(
                START_ERROR_EXIT_CODE, "StartError", now, message=f"{command.argv[0]}: {error}"
            )
            self._event(record, container, WARNING, "Failed", f"Error: {container.message}")
            return
        self._created_and_started(record, container)
        container.handle = handle
        container.set_running(handle.started_at, container_id)
        log.info(
            "pod %s/%s container %s: pid %s (%s)",
            record.namespace,
            record.name,
            container.name,
            handle.pid,
            command.kind,
        )

    def _never_pull(self, record: PodRecord, container: ContainerRecord) -> None:
        """An image that is not here, with ``imagePullPolicy: Never``: no pull, the kubelet's
        ``ErrImageNeverPull``, tried again after a back-off (the image may be imported meanwhile)."""
        message = f'Container image "{container.image}" is not present with pull policy of Never'
        container.set_waiting("ErrImageNeverPull", message)
        self._event(record, container, WARNING, "ErrImageNeverPull", message)
        self._event(record, container, WARNING, "Failed", "Error: ErrImageNeverPull")
        delay = self._images.backoff(container.attempts)
        container.attempts += 1
        self._loop.call_later(delay, partial(self._retry, record, container, container.generation))

    def _image_backoff(self, record: PodRecord, container: ContainerRecord, generation: int) -> None:
        if container.generation != generation or record.deleting or record.gone or container.state != WAITING:
            return
        if container.reason == "ErrImagePull":
            container.attempts += 1
            container.set_waiting(*self._images.back_off(container.image))
            self._event(record, container, NORMAL, "BackOff", container.message)
            self._event(record, container, WARNING, "Failed", "Error: ImagePullBackOff")
            delay = self._images.backoff(container.attempts)
            self._loop.call_later(delay, partial(self._image_backoff, record, container, generation))
            self._publish(record)
        elif container.reason == "ImagePullBackOff":
            self._retry(record, container, generation)

    def _retry(self, record: PodRecord, container: ContainerRecord, generation: int) -> None:
        if container.generation != generation or record.deleting or record.gone or container.state != WAITING:
            return
        container.set_waiting("ContainerCreating")
        self.advance(record)

    def _exited_elsewhere(
        self, record: PodRecord, container: ContainerRecord, generation: int, status: ExitStatus
    ) -> None:
        self._loop.post(partial(self._exited, record, container, generation, status))

    def _exited(
        self, record: PodRecord, container: ContainerRecord, generation: int, status: ExitStatus
    ) -> None:
        if container.generation != generation:
            return
        container.handle = None
        message = status.message
        fallback = container.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError"
        if not message and fallback and status.exit_code != 0 and record.pod_dir is not None:
            message = log_tail(self.log_file(record, container.name))
        container.set_terminated(
            status.exit_code, status.reason, status.finished_at, message=message, signal=status.signal
        )
        log.info(
            "pod %s/%s container %s: exit %s (%s)",
            record.namespace,
            record.name,
            container.name,
            status.exit_code,
            status.reason,
        )
        if not (record.deleting or record.gone):
            if self._restarts(record, container):
                container.last_terminated = container.terminated_state()
                container.restart_count += 1
                delay = min(MAX_BACKOFF, self._restart_backoff * 2 ** (container.restart_count - 1))
                container.set_waiting(
                    "CrashLoopBackOff",
                    f"back-off {delay:g}s restarting failed container={container.name} "
                    f"pod={record.name}_{record.namespace}({record.uid})",
                )
                self._loop.call_later(delay, partial(self._retry, record, container, generation))
                self._event(
                    record,
                    container,
                    WARNING,
                    "BackOff",
                    f"Back-off restarting failed container {container.name} in pod "
                    f"{record.name}_{record.namespace}({record.uid})",
                )
            self._publish(record)
            if container.init and container.exit_code == 0:
                self._loop.post(partial(self.advance, record))
        self._on_container_exit(record)

    def _settle(self, record: PodRecord) -> None:
        self._publish(record)
        if record.terminal():
            self._on_container_exit(record)

    def _restarts(self, record: PodRecord, container: ContainerRecord) -> bool:
        policy = record.restart_policy
        if container.init:
            return policy != "Never" and container.exit_code != 0
        return policy == "Always" or (policy == "OnFailure" and container.exit_code != 0)

    # -- helpers ---------------------------------------------------------------------------------------

    def _event(
        self, record: PodRecord, container: ContainerRecord, kind: str, reason: str, text: str
    ) -> None:
        if self._events is not None:
            spec = "initContainers" if container.init else "containers"
            self._events.record(
                record.pod,
                kind,
                reason,
                text,
                host=record.node or "",
                field_path=f"spec.{spec}{{{container.name}}}",
            )

    def _pre_stop_hook(
        self, record: PodRecord, container: ContainerRecord, runtime: PodRuntime, mounts: dict[str, str]
    ) -> PreStopHook | None:
        """The container's preStop hook as a local command (None: none, or its program is not here)."""
        handler = pre_stop_spec(container.spec)
        argv = exec_command(handler)
        if argv is None:
            return sleep_hook(handler)
        command = translate(
            record.pod,
            {**container.spec, "command": argv, "args": []},
            host=self._host,
            runtime=runtime,
            mounts=mounts,
            cwd=str(record.pod_dir / "containers" / container.name if record.pod_dir else "."),
            lookup=self._lookup,
        )
        if command.kind != "command":
            return None
        return PreStopHook("exec", command, shown=f"[{' '.join(argv)}]")

    def _created_and_started(self, record: PodRecord, container: ContainerRecord) -> None:
        self._event(record, container, NORMAL, "Created", f"Created container: {container.name}")
        self._event(record, container, NORMAL, "Started", f"Started container {container.name}")

    def _container_id(self, record: PodRecord, container: ContainerRecord) -> str:
        seed = f"{record.uid}/{container.name}/{container.generation}"
        return "containerd://" + hashlib.sha256(seed.encode()).hexdigest()

    def _token(self, pod: Obj, source: Obj) -> str | None:
        request: Callable[..., str] | None = getattr(self._api, "request_token", None)
        if request is None:
            return None
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        account = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
        try:
            return request(
                str(meta.get("namespace", "default")),
                account,
                pod=pod,
                audience=source.get("audience"),
                expiration_seconds=source.get("expirationSeconds"),
            )
        except ApiError as error:  # a real kubelet reports FailedMount and retries
            raise ContainerConfigError(f"token for service account {account}: {error}") from error

    def _lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        resource = SECRETS if kind == "Secret" else CONFIG_MAPS
        try:
            return self._api.get(resource, namespace, name)
        except ApiError:
            return None


def log_tail(path: Path, *, max_bytes: int = 2048, max_lines: int = 80) -> str:
    """What ``FallbackToLogsOnError`` makes a failed container's termination message: the end of its
    log, the smaller of ``max_bytes`` and ``max_lines``, as the kubelet takes it."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return ""
    lines = data.decode("utf-8", "replace").splitlines()[-max_lines:]
    return "\n".join(lines)
