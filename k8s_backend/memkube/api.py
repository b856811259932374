"""InMemoryKubernetes: an in-memory Kubernetes API server with real semantics.

It is what ``pyk8s://local`` and ``k8s-backend local`` serve over HTTP, and the fake API of the unit tests
(:class:`k8s_backend.testing.FakeKubernetes` is this class).

What it does like a real API server: a global resourceVersion bumped on every write; uid,
creationTimestamp, namespace defaulting and ``generateName``; 404/409/410/422 with the server's
messages; label and field selectors on list, watch and delete-collection; watches that replay from a
resourceVersion (410 Gone once compacted away) or start with the current objects as ADDED, with
bookmarks; JSON merge, strategic merge and JSON patches; no-op writes that change nothing;
``status`` that only :meth:`InMemoryKubernetes.patch_status` writes (the main resource ignores it, as
with the status subresource); pod specs that updates may not change; deletionTimestamp with
finalizers and (optionally) pod grace periods; owner-reference garbage collection.

What it adds for tests: recorded calls, injected faults and latency, control of compaction, bookmarks
and dropped watches, and the writes a kubelet makes (:meth:`patch_status`, :meth:`bind`,
:meth:`finalize`). Unlike the real adapter it never retries: an injected 500 reaches the caller.

Thread-safe: one lock guards everything; objects are stored and returned as deep copies.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from k8s_backend.common import Clock, ManualClock, SystemClock
from k8s_backend.kube.port import MERGE_PATCH, NAMESPACES, PODS, ApiError, Obj, ObjectList, Resource
from k8s_backend.memkube.deletion import Deletions
from k8s_backend.memkube.errors import bad_request
from k8s_backend.memkube.fault_controls import FaultControls
from k8s_backend.memkube.faults import Call, FaultInjector, check_verb
from k8s_backend.memkube.server import SERVICE_ACCOUNTS, FakeServer
from k8s_backend.memkube.store import json_copy
from k8s_backend.memkube.watch import FakeWatchStream

__all__ = ["SERVICE_ACCOUNTS", "Call", "FakeKubernetes", "FakeWatchStream", "InMemoryKubernetes"]


def _name_of(body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        name = body["metadata"].get("name")
        return name if isinstance(name, str) else None
    return None


class InMemoryKubernetes(FaultControls):
    """An in-memory :class:`k8s_backend.kube.port.KubernetesApi` behaving like a real API server.

    :param clock: time for creationTimestamp, deletionTimestamp and grace periods (default: system).
    :param history_size: how many events are kept for watches resuming from a resourceVersion.
    :param watch_blocking: False makes a watch stream end as soon as it has no buffered event, so a
        single-threaded test can drive a watch consumer step by step.
    :param graceful_pod_deletion: True keeps deleted pods (with deletionTimestamp) for their grace
        period, until :meth:`finalize` or until :meth:`tick` sees the period has passed.
    :param seed: seeds the uids and generated names, for reproducible runs.
    :param call_log_size: how many of the latest calls :attr:`calls` keeps (None: all, for tests; a
        long-running local cluster bounds it, each call holding a copy of its body).
    :param namespaces: namespaces to create at once. As on a real server, objects can only be created
        in a namespace that exists: these, the ones created later, and ``default``, ``kube-system``,
        ``kube-public`` and ``kube-node-lease``, which always exist. Likewise a pod may only name a
        ServiceAccount that exists in its namespace (``create(SERVICE_ACCOUNTS, ...)``), or ``default``.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        history_size: int = 1000,
        watch_blocking: bool = True,
        graceful_pod_deletion: bool = False,
        *,
        seed: int | None = None,
        namespaces: Iterable[str] = (),
        call_log_size: int | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.RLock()
        self._server = FakeServer(
            self._clock, self._lock, history_size=history_size, watch_blocking=watch_blocking, seed=seed
        )
        self._deletions = Deletions(self._server, graceful_pod_deletion=graceful_pod_deletion)
        self._faults = FaultInjector()
        self._calls: deque[Call] = deque(maxlen=call_log_size)
        with self._lock:
            for namespace in namespaces:
                self._server.create(NAMESPACES, None, {"metadata": {"name": namespace}})

    @property
    def clock(self) -> Clock:
        return self._clock

    # --- the KubernetesApi protocol -----------------------------------------------------------------

    def _call(
        self,
        verb: str,
        resource: Resource,
        namespace: str | None,
        name: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        body: Any = None,
    ) -> ApiError | None:
        """Record a call and return the injected fault for it, if any (after the injected latency)."""
        with self._lock:
            self._calls.append(
                Call(
                    verb,
                    resource.plural,
                    namespace,
                    name,
                    label_selector,
                    field_selector,
                    json_copy(body),
                    self._clock.now(),
                )
            )
            error = self._faults.take_fault(verb, resource, self._clock.now())
            latency = self._faults.latency(verb)
        if latency:
            time.sleep(latency)  # a slow server, outside the lock so other calls proceed
        return error

    def _raise_fault(self, error: ApiError | None) -> None:
        if error is not None:
            raise error

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        """Create an object (409 if the name exists, 422 if invalid); returns it with server fields."""
        self._raise_fault(self._call("create", resource, namespace, _name_of(body), body=body))
        with self._lock:
            created = self._server.create(resource, namespace, body)
        return json_copy(created)  # stored dicts are never modified: copying unlocked is safe

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        """Read one object (404 if absent)."""
        self._raise_fault(self._call("get", resource, namespace, name))
        with self._lock:
            found = self._server.get(resource, namespace, name)
        return json_copy(found)

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
    ) -> ObjectList:
        """List matching objects (all namespaces when ``namespace`` is None) with the current RV."""
        self._raise_fault(
            self._call(
                "list", resource, namespace, label_selector=label_selector, field_selector=field_selector
            )
        )
        with self._lock:
            listed = self._server.list(resource, namespace, label_selector, field_selector, resource_version)
        return ObjectList([json_copy(obj) for obj in listed.items], listed.resource_version)

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> FakeWatchStream:
        """Open a watch. Errors (injected faults, 410 Gone) are raised when the stream is iterated."""
        error = self._call(
            "watch", resource, namespace, label_selector=label_selector, field_selector=field_selector
        )
        if error is not None:
            return FakeWatchStream.failed(resource, error)
        with self._lock:
            return self._server.watch(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_bookmarks=allow_bookmarks,
                send_initial_events=send_initial_events,
            )

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Obj | builtins.list[Obj],
        *,
        patch_type: str = MERGE_PATCH,
    ) -> Obj:
        """Patch an object; a patch that changes nothing writes nothing (no new RV, no event)."""
        self._raise_fault(self._call("patch", resource, namespace, name, body=patch))
        with self._lock:
            key, current, proposed = self._server.patch(resource, namespace, name, patch, patch_type)
            checked = self._server.prepare_update(resource, current, proposed)
            result = self._deletions.commit(resource, key, current, checked)
        return json_copy(result)

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        orphan: bool = False,
    ) -> None:
        """Delete an object (404 if absent); see :mod:`~k8s_backend.memkube.deletion` for grace periods,
        finalizers and dependents (``orphan``: kept)."""
        self._raise_fault(self._call("delete", resource, namespace, name))
        with self._lock:
            key, _ = self._server.existing(resource, namespace, name)
            if orphan:
                self._deletions.orphan_dependents(key)
            self._deletions.delete(resource, key, grace_period_seconds)

    def delete_collection(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        grace_period_seconds: int | None = None,
    ) -> None:
        """Delete every matching object (in all namespaces when ``namespace`` is None)."""
        self._raise_fault(
            self._call(
                "delete_collection",
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        )
        with self._lock:
            watch_filter = self._server.watch_filter(resource, namespace, label_selector, field_selector)
            for key, _ in self._server.select(resource, watch_filter):
                if self._server.store.get(key) is not None:  # an earlier cascade may have removed it
                    self._deletions.delete(resource, key, grace_period_seconds)

    def close(self) -> None:
        """Close every open watch (the fake stays usable)."""
        self.drop_watches()

    # --- writes beyond the protocol -----------------------------------------------------------------

    def update(self, resource: Resource, namespace: str | None, obj: Obj) -> Obj:
        """Replace an object (a PUT); 409 Conflict when ``metadata.resourceVersion`` is stale."""
        name = _name_of(obj)
        self._raise_fault(self._call("update", resource, namespace, name, body=obj))
        if name is None:
            raise bad_request("an update needs metadata.name: the name of the object to replace")
        with self._lock:
            key, current = self._server.existing(resource, namespace, name)
            proposed = json_copy(obj)
            self._server.check_type(resource, proposed)
            checked = self._server.prepare_update(resource, current, proposed)
            result = self._deletions.commit(resource, key, current, checked)
        return json_copy(result)

    def patch_status(self, resource: Resource, namespace: str | None, name: str, status: Obj) -> Obj:
        """Replace ``.status`` (what a kubelet or controller writes). Not recorded, never faulted."""
        with self._lock:
            key, current, proposed = self._server.replace_status(resource, namespace, name, status)
            checked = self._server.prepare_update(resource, current, proposed, keep_status=False)
            result = self._deletions.commit(resource, key, current, checked)
        return json_copy(result)

    def bind(self, namespace: str, name: str, node_name: str) -> Obj:
        """Assign a pod to a node (the pods/binding subresource); 409 if it already has one."""
        with self._lock:
            bound = self._server.bind(namespace, name, node_name)
        return json_copy(bound)

    def finalize(self, resource: Resource, namespace: str | None, name: str) -> None:
        """End the grace period of a terminating object (a kubelet saw its containers stop)."""
        with self._lock:
            key, _ = self._server.existing(resource, namespace, name)
            self._deletions.finalize(resource, key)

    def tick(self) -> None:
        """Remove terminating pods whose grace period has passed on the fake's clock."""
        with self._lock:
            self._deletions.tick()

    def advance(self, seconds: float) -> None:
        """Advance the fake's :class:`ManualClock`, then :meth:`tick`."""
        if not isinstance(self._clock, ManualClock):
            raise TypeError(
                f"advance() needs InMemoryKubernetes(clock=ManualClock()), not {type(self._clock).__name__}; "
                "with another clock call tick() once time has passed"
            )
        self._clock.advance(seconds)
        self.tick()

    # --- inspection -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        with self._lock:
            return str(self._server.log.current_rv)

    def objects(self, resource: Resource, namespace: str | None = None) -> builtins.list[Obj]:
        """A snapshot of stored objects (all namespaces when None), without recording a call."""
        with self._lock:
            found = [
                obj for _, obj in self._server.store.items(self._server.store.register(resource), namespace)
            ]
        return [json_copy(obj) for obj in found]

    @property
    def calls(self) -> builtins.list[Call]:
        """Every call made through the protocol (and :meth:`update`) so far, oldest first."""
        with self._lock:
            return list(self._calls)

    def calls_of(self, verb: str, resource: Resource | None = None) -> builtins.list[Call]:
        """The recorded calls of one verb ('*' for any), optionally for one kind."""
        check_verb(verb)
        return [
            call
            for call in self.calls
            if verb in ("*", call.verb) and (resource is None or call.resource_plural == resource.plural)
        ]

    def reset_calls(self) -> None:
        with self._lock:
            self._calls.clear()

    def open_watches(self) -> int:
        """How many watch streams are open."""
        with self._lock:
            return len(self._server.log.streams())

    # --- server-side control ----------------------------------------------------------------------

    def compact(self, keep_last: int = 0) -> None:
        """Drop all but the last ``keep_last`` events: watching from an older RV then answers 410."""
        with self._lock:
            self._server.log.compact(keep_last)

    def drop_watches(self) -> None:
        """The server closes every open watch stream (their iteration ends)."""
        with self._lock:
            self._server.log.drop_all()

    def send_bookmark(self) -> None:
        """Send a BOOKMARK with the current resourceVersion to every watch that allows bookmarks."""
        with self._lock:
            self._server.log.send_bookmarks()

    def __repr__(self) -> str:
        with self._lock:
            count = len(self.objects(PODS))
            return f"<InMemoryKubernetes rv={self._server.log.current_rv} pods={count}>"


# The name the tests and users have known it by since the start (k8s_backend.testing.FakeKubernetes).
FakeKubernetes = InMemoryKubernetes
