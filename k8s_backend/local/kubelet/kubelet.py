"""The process kubelet: a node agent whose containers are local processes, reporting real container states
and exit codes through ``pods/status``.

It serves two API servers with the same code:

- the embedded one (a InMemoryKubernetes, ``schedule=True``): there is no kube-scheduler, so the kubelet also
  places pending pods on its simulated nodes (capacity, node selectors, ``Unschedulable``) and binds them;
- a real kube-apiserver (through :class:`~k8s_backend.local.kubelet.remote.RemoteKubeletApi`,
  ``schedule=False``): it registers its Node objects and heartbeats their Leases
  (:mod:`~k8s_backend.local.kubelet.registration`), runs the pods kube-scheduler binds to them
  (``spec.nodeName``), and ends each graceful deletion with a delete of grace 0 once the containers stopped.

Threads: one watches the API and one (the :class:`EventLoop`) owns every pod record; process waiter
threads and timers only post work to the loop. Each watch event costs a dictionary lookup and at most
one status write, whatever the number of pods.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from k8s_backend.common.clock import Clock, SystemClock
from k8s_backend.kube.port import PODS, ApiError, GoneError, KubernetesApi, NotFoundError, Obj, Resource
from k8s_backend.local.kubelet.container import HostEnvironment
from k8s_backend.local.kubelet.events import NORMAL, SCHEDULER, WARNING, EventRecorder
from k8s_backend.local.kubelet.images import ImagePolicy
from k8s_backend.local.kubelet.loop import EventLoop
from k8s_backend.local.kubelet.nodes import Node, NodePool
from k8s_backend.local.kubelet.podstate import RUNNING, TERMINATED, PodRecord
from k8s_backend.local.kubelet.processes import ProcessHandle, ProcessSupervisor
from k8s_backend.local.kubelet.registration import NodeRegistration
from k8s_backend.local.kubelet.runtime import ContainerRuntime
from k8s_backend.memkube.watch import shared_events

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0
REMOVAL_GRACE_SECONDS = 1.0
_MAX_FINISHED = 100_000


class KubeletApi(KubernetesApi, Protocol):
    """What the kubelet needs beyond :class:`KubernetesApi`: writing a pod's status and ending a graceful
    deletion. InMemoryKubernetes has both; :class:`~k8s_backend.local.kubelet.remote.RemoteKubeletApi` maps
    them onto a real server's ``pods/status`` and delete with grace 0. Optional extras, looked up by name:
    ``bind(namespace, name, node)`` (used when scheduling) and ``request_token(...)`` (projected
    service-account tokens)."""

    def patch_status(self, resource: Resource, namespace: str | None, name: str, status: Obj) -> Obj: ...

    def finalize(self, resource: Resource, namespace: str | None, name: str) -> None: ...


class ProcessKubelet:
    """Runs the pods bound to its simulated nodes as local processes.

    ``run_processes=False`` marks scheduled pods Running without starting anything (scale tests) and
    honours deletion at once. ``stop_grace`` is the SIGTERM→SIGKILL grace used by :meth:`stop`.
    ``schedule=True`` makes the kubelet place and bind unbound pods itself (an API server without a
    scheduler); with False only pods that a scheduler bound to its nodes are run. ``register_nodes``
    (default: ``not schedule``) creates the Node objects and renews their Leases until :meth:`stop`,
    which removes them again. ``events`` (default True) records Kubernetes Events of its pods, as a
    kubelet (Pulled, Created, Started, Killing, image pull failures, back-offs) and, when scheduling, as
    kube-scheduler (Scheduled, FailedScheduling); they are written by a thread of their own (see
    :class:`~k8s_backend.local.kubelet.events.EventRecorder`) and expire after ``event_ttl`` seconds.
    """

    def __init__(
        self,
        api: KubeletApi,
        *,
        work_dir: Path | str,
        nodes: Sequence[Node] = (),
        run_processes: bool = True,
        images: ImagePolicy | None = None,
        host: HostEnvironment | None = None,
        clock: Clock | None = None,
        pod_ip: str = "127.0.0.1",
        restart_backoff: float = 1.0,
        stop_grace: float = 3.0,
        memory_check_interval: float = 0.2,
        schedule: bool = True,
        register_nodes: bool | None = None,
        events: bool = True,
        event_ttl: float = 3600.0,
    ) -> None:
        self._api = api
        self._scheduling = schedule
        self._clock = clock or SystemClock()
        self._pool = NodePool(nodes or [Node.of("node-1")])
        self._run_processes = run_processes
        self._stop_grace = stop_grace
        self._pod_ip = pod_ip
        self._loop = EventLoop("kubelet")
        self._events = EventRecorder(api, clock=self._clock, ttl=event_ttl) if events else None
        self._supervisor = ProcessSupervisor(clock=self._clock, memory_check_interval=memory_check_interval)
        self._runtime = ContainerRuntime(
            api,
            work_dir=Path(work_dir),
            supervisor=self._supervisor,
            loop=self._loop,
            images=images or ImagePolicy(),
            host=host or HostEnvironment.detect(),
            clock=self._clock,
            pod_ip=pod_ip,
            restart_backoff=restart_backoff,
            run_processes=run_processes,
            publish=self._publish,
            on_container_exit=self._after_exit,
            node_allocatable=lambda node: self._pool.node(node).allocatable,
            events=self._events,
        )
        self._node_names = frozenset(n.name for n in self._pool.nodes)
        self._registration: NodeRegistration | None = None
        if register_nodes if register_nodes is not None else not schedule:
            self._registration = NodeRegistration(
                api, self._pool.nodes, address=pod_ip, max_pods=110 if run_processes else 100_000
            )
        self._pods: dict[str, PodRecord] = {}
        self._unschedulable: dict[str, PodRecord] = {}  # insertion order = scheduling queue order
        # uids of pods already finished here, so late events about them cannot bring them back
        self._finished: dict[str, None] = {}
        self._stopping = threading.Event()
        self._stream_lock = threading.Lock()
        self._stream: Any = None
        self._watcher = threading.Thread(target=self._watch, name="kubelet-watch", daemon=True)
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching pods (the current ones are picked up first)."""
        if self._started:
            raise RuntimeError("the kubelet is already started")
        self._started = True
        if self._registration is not None:
            self._registration.start()  # the nodes exist before any pod can be bound to them
        if self._events is not None:
            self._events.start()
        self._loop.start()
        self._watcher.start()

    def stop(self, grace: float | None = None) -> None:
        """Stop every container process (SIGTERM, SIGKILL after ``grace``) and the kubelet's threads."""
        self._stopping.set()
        with self._stream_lock:
            if self._stream is not None:
                self._stream.close()
        # Processes first, while the loop still runs: their last states are reported, and the loop
        # thread (which started them) must outlive them, or the kernel's parent-death signal fires.
        self._supervisor.stop_all(self._stop_grace if grace is None else grace)
        self._loop.stop()
        if self._events is not None:
            self._events.stop()
        if self._started:
            self._watcher.join(10.0)
        if self._registration is not None and self._started:
            self._registration.stop()

    def __enter__(self) -> ProcessKubelet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- introspection ---------------------------------------------------------------------------------

    @property
    def nodes(self) -> Sequence[Node]:
        return self._pool.nodes

    @property
    def run_processes(self) -> bool:
        return self._run_processes

    @property
    def events(self) -> EventRecorder | None:
        """The recorder of this kubelet's Events (None when they are off)."""
        return self._events

    @property
    def registration(self) -> NodeRegistration | None:
        """The Node and Lease heartbeats, when this kubelet registers its nodes."""
        return self._registration

    def processes(self) -> list[ProcessHandle]:
        """Container processes still alive."""
        return self._supervisor.live()

    def log_path(self, namespace: str, name: str, container: str) -> Path | None:
        """The log file of a container of a pod this kubelet ran, or None."""
        found: list[Path | None] = [None]

        def find() -> None:
            for record in self._pods.values():
                if record.namespace == namespace and record.name == name and record.pod_dir is not None:
                    found[0] = self._runtime.log_file(record, container)

        self._loop.call(find)
        return found[0]

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
        """Block until ``predicate()`` holds, re-checked whenever the kubelet has done something."""
        return self._loop.wait_until(predicate, timeout)

    # -- watching ------------------------------------------------------------------------------------

    def _watch(self) -> None:
        resource_version: str | None = None
        while not self._stopping.is_set():
            try:
                if resource_version is None:
                    listed = self._api.list(PODS, None)
                    self._loop.post(partial(self._sync, listed.items))
                    resource_version = listed.resource_version
                stream = self._api.watch(PODS, None, resource_version=resource_version)
                with self._stream_lock:
                    self._stream = stream
                if self._stopping.is_set():
                    stream.close()
                    return
                for event in shared_events(stream):  # the kubelet only reads pods: no copy needed
                    version = (event.object.get("metadata") or {}).get("resourceVersion")
                    resource_version = version or resource_version
                    if event.type != "BOOKMARK":
                        self._loop.post(partial(self._on_event, event.type, event.object))
            except GoneError:
                resource_version = None  # too old: list again, then watch from there
            except ApiError as error:
                log.warning("kubelet watch failed (%s); retrying", error)
                self._stopping.wait(0.5)
            except Exception:  # the kubelet must outlive any surprise from the API it watches
                log.exception("kubelet watch failed; listing again")
                resource_version = None
                self._stopping.wait(0.5)

    def _sync(self, items: list[Obj]) -> None:
        seen = set()
        for obj in items:
            seen.add(str((obj.get("metadata") or {}).get("uid")))
            self._on_event("MODIFIED", obj)
        for uid, record in list(self._pods.items()):
            if uid not in seen and not record.gone:
                self._on_removed(record)

    def _on_event(self, kind: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        record = self._pods.get(str(meta.get("uid")))
        if kind == "DELETED":
            if record is not None:
                self._on_removed(record)
            return
        if record is None:
            if meta.get("uid") in self._finished:
                return
            phase = (obj.get("status") or {}).get("phase")
            node = (obj.get("spec") or {}).get("nodeName")
            if phase in ("Succeeded", "Failed") or (node and node not in self._node_names):
                return  # finished before we started, or bound to a node that is not ours
            if not node and not self._scheduling:
                return  # the scheduler has not bound it yet; its binding arrives as MODIFIED
            if meta.get("deletionTimestamp"):
                self._finalize(obj)
                return
            record = PodRecord.from_pod(obj)
            self._pods[record.uid] = record
            self._schedule(record)
            return
        record.pod = obj
        if meta.get("deletionTimestamp"):
            self._begin_deletion(record, _grace_of(obj))

    # -- scheduling ----------------------------------------------------------------------------------

    def _schedule(self, record: PodRecord) -> None:
        if not self._scheduling:
            # Bound by the scheduler, which did the capacity accounting against the registered nodes.
            record.node = str((record.pod.get("spec") or {}).get("nodeName"))
            record.start_time = self._clock.now()
            self._runtime.begin(record)
            return
        placement = self._pool.place(record.uid, record.pod)
        if placement.node is None:
            self._unschedulable[record.uid] = record
            if self._events is not None:  # every attempt, as kube-scheduler: repeats only count up
                self._events.record(
                    record.pod, WARNING, "FailedScheduling", placement.message, component=SCHEDULER
                )
            if record.unschedulable != placement.message:
                record.unschedulable = placement.message
                self._publish(record)
            return
        self._unschedulable.pop(record.uid, None)
        record.unschedulable = ""
        record.node = placement.node
        record.start_time = self._clock.now()
        if self._bind(record, placement.node) and self._events is not None:
            self._events.record(
                record.pod,
                NORMAL,
                "Scheduled",
                f"Successfully assigned {record.namespace}/{record.name} to {placement.node}",
                component=SCHEDULER,
            )
        self._runtime.begin(record)

    def _bind(self, record: PodRecord, node: str) -> bool:
        """Bind the pod to ``node``; False if it came bound (no scheduler was involved) or failed."""
        if (record.pod.get("spec") or {}).get("nodeName") == node:
            return False  # created already bound (spec.nodeName set by its author)
        bind: Callable[[str, str, str], Obj] | None = getattr(self._api, "bind", None)
        try:
            if bind is not None:
                bind(record.namespace, record.name, node)
            else:
                self._api.patch(PODS, record.namespace, record.name, {"spec": {"nodeName": node}})
        except ApiError as error:
            log.debug("binding %s/%s to %s: %s", record.namespace, record.name, node, error)
            return False
        return True

    def _release(self, record: PodRecord) -> None:
        if self._pool.release(record.uid) and self._unschedulable:
            for waiting in list(self._unschedulable.values()):
                self._schedule(waiting)

    # -- container exits and deletion -------------------------------------------------------------

    def _after_exit(self, record: PodRecord) -> None:
        """A container of the pod ended (its state is already recorded)."""
        if record.deleting or record.gone:
            self._finish_deletion_if_done(record)
        elif record.terminal():
            self._release(record)

    def _begin_deletion(self, record: PodRecord, grace: float) -> None:
        """Stop the pod's containers within ``grace`` seconds (sooner if a deletion already asked so)."""
        if record.deletion_grace is not None and record.deletion_grace <= grace:
            return
        record.deleting = True
        record.deletion_grace = grace
        self._unschedulable.pop(record.uid, None)
        self._runtime.stop_containers(record, grace)
        self._finish_deletion_if_done(record)

    def _on_removed(self, record: PodRecord) -> None:
        # Gone from the API before its containers stopped (a forced deletion, or a fake that does not
        # wait): nothing will wait any longer, so stop them with the kubelet's minimum grace period.
        record.gone = True
        if record.deletion_grace is not None and record.deletion_grace <= REMOVAL_GRACE_SECONDS:
            self._finish_deletion_if_done(record)  # already stopping at least as fast
        else:
            self._begin_deletion(record, REMOVAL_GRACE_SECONDS)

    def _finish_deletion_if_done(self, record: PodRecord) -> None:
        if any(c.handle is not None for c in record.all_containers()):
            return  # processes still stopping; their exits call back here
        if not record.gone:
            if any(c.state in (RUNNING, TERMINATED) for c in record.all_containers()) and self._run_processes:
                self._publish(record)
            self._finalize(record.pod)
        self._pods.pop(record.uid, None)
        self._finished[record.uid] = None
        if len(self._finished) > _MAX_FINISHED:
            del self._finished[next(iter(self._finished))]
        self._release(record)

    def _finalize(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        try:
            self._api.finalize(PODS, meta.get("namespace"), str(meta.get("name")))
        except NotFoundError:
            pass
        except ApiError as error:
            log.warning("finalizing pod %s/%s failed: %s", meta.get("namespace"), meta.get("name"), error)

    def _publish(self, record: PodRecord) -> None:
        if record.gone:
            return
        status = record.render_status(self._clock.now(), pod_ip=self._pod_ip, host_ip=self._pod_ip)
        try:
            self._api.patch_status(PODS, record.namespace, record.name, status)
        except NotFoundError:
            pass
        except ApiError as error:
            log.warning("status update of pod %s/%s failed: %s", record.namespace, record.name, error)


def _grace_of(obj: Obj) -> float:
    """The deletion's grace period, else the pod's terminationGracePeriodSeconds, else 30 s."""
    meta = obj.get("metadata") or {}
    grace = meta.get("deletionGracePeriodSeconds")
    if grace is None:
        grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds")
    return float(DEFAULT_GRACE_SECONDS if grace is None else grace)
