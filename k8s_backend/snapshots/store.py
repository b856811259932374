"""The snapshot store: sources push pods in, subscribers get batches out at their own cadence.

Costs: ``update_pod`` is O(subscribers); ``replace_snapshot`` is O(pods in the list), and a listed pod at
the resourceVersion the store already holds costs a look-up, not a new state; a delivery copies the
current view at most once per change, not per event. So 10,000 pods and a burst of 20,000 watch events stay
linear. The store keeps each pod in the compact form of :mod:`~.store_pods` (a third of the decoded pod).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Protocol

from k8s_backend.common import Cancellable, Clock, Scheduler
from k8s_backend.kube.port import Obj
from k8s_backend.kube.resource_version import newer, parse_resource_version
from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase, PodStateRules, executor_id_of
from k8s_backend.snapshots.store_pods import PodCompactor

log = logging.getLogger(__name__)

SubscriberCallback = Callable[[SnapshotBatch], None]


class Subscription(Protocol):
    """One subscriber's registration with the store."""

    def notify(self) -> None:
        """Deliver to this subscriber now, off schedule (the others keep their cadence)."""
        ...


class SnapshotsStore(Protocol):
    """What sources and subscribers see of the store."""

    def add_subscriber(self, interval: float, callback: SubscriberCallback) -> Subscription: ...

    def notify_subscribers(self) -> None: ...

    def update_pod(self, pod: Obj, *, deleted: bool = False) -> None: ...

    def replace_snapshot(self, pods: Sequence[Obj], resource_version: str | None = None) -> None: ...

    def relist(self) -> Relist: ...

    def current(self) -> ExecutorPodsSnapshot: ...

    def stop(self) -> None: ...


class _Subscriber:
    """One subscriber's buffer; its callback never runs concurrently with itself."""

    def __init__(self, store: ExecutorPodsSnapshotsStore, callback: SubscriberCallback) -> None:
        self._store = store
        self._callback = callback
        self.updates: list[ExecutorPodState] = []
        self.resynced = False
        self.first = True
        self.task: Cancellable | None = None
        self._run_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._requests = 0

    def notify(self) -> None:
        self._store._scheduler.submit(self.process)

    def process(self) -> None:
        with self._count_lock:
            self._requests += 1
        while True:
            # Whoever holds the run lock will see our request when it finishes (Spark's tryLock scheme).
            if not self._run_lock.acquire(blocking=False):
                return
            try:
                with self._count_lock:
                    pending = self._requests
                    self._requests = 0
                if pending:
                    self._deliver()
            finally:
                self._run_lock.release()
            with self._count_lock:
                if self._requests == 0:
                    return

    def _deliver(self) -> None:
        batch = self._store._drain(self)
        if batch is None:
            return
        try:
            self._callback(batch)
        except Exception:
            log.exception("Exception when notifying snapshot subscriber %s", _name(self._callback))


def _name(callback: SubscriberCallback) -> str:
    return getattr(callback, "__qualname__", repr(callback))


class Relist:
    """One full list of the executor pods, given pod by pod (:meth:`ExecutorPodsSnapshotsStore.relist`)."""

    def __init__(self, store: ExecutorPodsSnapshotsStore) -> None:
        self._store = store
        self._listed: dict[int, ExecutorPodState] = {}

    def add(self, pod: Obj) -> None:
        """One listed pod; a pod the store holds at the same version keeps its state (no new one built)."""
        executor_id = executor_id_of(pod)
        if executor_id is None:
            return
        # Read without the store's lock: only to skip pods it already holds as listed.
        current = self._store._states.get(executor_id)
        rv = (pod.get("metadata") or {}).get("resourceVersion")
        if current is not None and rv is not None and current.metadata.get("resourceVersion") == rv:
            self._listed[executor_id] = current  # the same version of the same pod: same state
            return
        state = self._store._kept_state(pod)
        if state is not None:
            self._listed[state.executor_id] = state

    def finish(self, resource_version: str | None) -> None:
        """Apply the list, taken at ``resource_version`` (as
        :meth:`ExecutorPodsSnapshotsStore.replace_snapshot` does)."""
        listed, self._listed = self._listed, {}
        self._store._replace(listed, resource_version)


class ExecutorPodsSnapshotsStore:
    """The one current view of the executor pods, fed by the watch and polling sources."""

    def __init__(self, scheduler: Scheduler, clock: Clock, rules: PodStateRules | None = None) -> None:
        self._scheduler = scheduler
        self._clock = clock
        self._rules = rules or PodStateRules()
        self._compactor = PodCompactor()
        self._lock = threading.Lock()
        self._states: dict[int, ExecutorPodState] = {}
        # The resourceVersion of the last full list: an older event for a pod it lacked is stale.
        self._list_rv: int | None = None
        self._full_snapshot_ts = 0.0
        self._view: ExecutorPodsSnapshot | None = None
        self._subscribers: list[_Subscriber] = []
        self._stopped = False

    def add_subscriber(self, interval: float, callback: SubscriberCallback) -> Subscription:
        """Deliver batches to ``callback`` every ``interval`` seconds, the first one at once; the
        subscription delivers to it alone off schedule."""
        subscriber = _Subscriber(self, callback)
        with self._lock:
            if self._stopped:
                raise RuntimeError("the snapshot store is stopped")
            self._subscribers.append(subscriber)
        subscriber.task = self._scheduler.schedule_with_fixed_delay(0.0, interval, subscriber.process)
        return subscriber

    def notify_subscribers(self) -> None:
        """Deliver to every subscriber now, off schedule."""
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            subscriber.notify()

    def update_pod(self, pod: Obj, *, deleted: bool = False) -> None:
        """Apply one observed pod (a watch event). ``deleted`` marks a DELETED event."""
        state = self._kept_state(pod)
        if state is None:
            return
        if deleted and state.phase is not PodPhase.DELETED:
            state = ExecutorPodState(state.executor_id, PodPhase.DELETED, pod)
        with self._lock:
            if self._stopped:
                return
            current = self._states.get(state.executor_id)
            if current is not None and _older(state, current):
                return  # an event that a newer list or event already superseded
            rv = state.resource_version
            if current is None and rv is not None and self._list_rv is not None and rv <= self._list_rv:
                # A lagging event for a pod the last list no longer had: it is gone. The view stays as it
                # is, but subscribers hear that the executor existed and ended, or a request for it would
                # wait for the creation timeout and a lost executor would go unreported.
                gone = ExecutorPodState(state.executor_id, PodPhase.DELETED, pod)
                for subscriber in self._subscribers:
                    subscriber.updates.append(gone)
                return
            self._states[state.executor_id] = state
            self._view = None
            for subscriber in self._subscribers:
                subscriber.updates.append(state)

    def replace_snapshot(self, pods: Sequence[Obj], resource_version: str | None = None) -> None:
        """Apply a full list taken at ``resource_version``, without rolling back anything newer.

        Pods the store saw change after the list was taken keep their newer state, and pods created
        after it are kept even though the list lacks them: Spark replaced its view wholesale and so
        forgot pods it had just created, then created them again. Every other pod the list lacks leaves
        the view and is delivered as DELETED (its last state seen), so each subscriber learns it is gone.
        """
        relist = self.relist()
        for pod in pods:
            relist.add(pod)
        relist.finish(resource_version)

    def relist(self) -> Relist:
        """A full list given pod by pod, as a streaming list's initial events arrive: the store keeps only
        each pod's compact state meanwhile, and applies them as :meth:`replace_snapshot` does when the
        list ends (:meth:`Relist.finish`)."""
        return Relist(self)

    def _replace(self, listed: dict[int, ExecutorPodState], resource_version: str | None) -> None:
        list_rv = parse_resource_version(resource_version)
        with self._lock:
            if self._stopped:
                return
            changed: list[ExecutorPodState] = []
            merged: dict[int, ExecutorPodState] = {}
            for executor_id, state in listed.items():
                current = self._states.get(executor_id)
                if current is not None and _older(state, current):
                    merged[executor_id] = current  # includes deletions seen after the list was taken
                    continue
                merged[executor_id] = state
                if current is None or current.phase is not state.phase or _newer_version(state, current):
                    # A new version in the same phase matters too: a Pending pod that became
                    # Unschedulable is the stuck reason the user is told (polling-only setups see it here).
                    changed.append(state)
            if list_rv is not None:
                for executor_id, current in self._states.items():
                    rv = current.resource_version
                    if executor_id not in merged and rv is not None and rv > list_rv:
                        merged[executor_id] = current
                self._list_rv = max(list_rv, self._list_rv or 0)
            # A pod the view drops is gone: subscribers hear it as a watch's DELETED event would have told
            # them (with polling alone nothing else does), unless they already heard its deletion.
            changed.extend(
                ExecutorPodState(executor_id, PodPhase.DELETED, current.pod)
                for executor_id, current in self._states.items()
                if executor_id not in merged and current.phase is not PodPhase.DELETED
            )
            self._states = merged
            self._full_snapshot_ts = self._clock.now()
            self._view = None
            for subscriber in self._subscribers:
                subscriber.updates.extend(changed)
                subscriber.resynced = True

    def _kept_state(self, pod: Obj) -> ExecutorPodState | None:
        """The pod's state, holding only what the backend reads of the pod (see :mod:`.store_pods`)."""
        if executor_id_of(pod) is None:
            return None
        return self._rules.to_state(self._compactor.compact(pod))

    def current(self) -> ExecutorPodsSnapshot:
        """The current view (immutable)."""
        with self._lock:
            return self._current_locked()

    def _current_locked(self) -> ExecutorPodsSnapshot:
        if self._view is None:
            self._view = ExecutorPodsSnapshot(MappingProxyType(dict(self._states)), self._full_snapshot_ts)
        return self._view

    def _drain(self, subscriber: _Subscriber) -> SnapshotBatch | None:
        with self._lock:
            if self._stopped:
                return None
            batch = SnapshotBatch(
                updates=tuple(subscriber.updates),
                snapshot=self._current_locked(),
                resynced=subscriber.resynced,
                first=subscriber.first,
                # The newest full list's version: pods created before it and missing from it are gone.
                resync_resource_version=self._list_rv if subscriber.resynced else None,
            )
            subscriber.updates = []
            subscriber.resynced = False
            subscriber.first = False
        return batch

    def stop_delivering(self) -> None:
        """Stop delivering to subscribers, but keep the view up to date: at stop, the watch still tells
        which executors have exited by themselves, without a list request."""
        with self._lock:
            subscribers, self._subscribers = self._subscribers, []
        for subscriber in subscribers:
            if subscriber.task is not None:
                subscriber.task.cancel()

    def stop(self) -> None:
        """Stop delivering; later updates are ignored."""
        with self._lock:
            self._stopped = True
        self.stop_delivering()


def _newer_version(candidate: ExecutorPodState, current: ExecutorPodState) -> bool:
    """Whether ``candidate`` is a later version of the pod than ``current`` (both versions known)."""
    rv, known = candidate.resource_version, current.resource_version
    return rv is not None and known is not None and rv > known


def _older(candidate: ExecutorPodState, current: ExecutorPodState) -> bool:
    """Whether ``candidate`` was observed at an older resourceVersion than ``current``."""
    return newer(current.resource_version, candidate.resource_version)
