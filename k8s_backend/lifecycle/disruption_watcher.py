"""Acts on the cluster's disruption notices: decommissions the executor through Spark's graceful path and
has the allocator replace it at once (the decisions are :mod:`k8s_backend.lifecycle.disruptions`').

Nodes are read by a list every ``spark.kubernetes.executor.disruption.nodeCheckInterval`` (one request,
answered from the API server's cache), never per pod. A driver whose service account may not list nodes
gets one warning naming the RBAC rule, and goes on with the pods' ``DisruptionTarget`` condition alone.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from k8s_backend.common import Clock
from k8s_backend.kube.port import NODES, ForbiddenError, KubernetesApi, UnauthorizedError
from k8s_backend.lifecycle.disruptions import DisruptionDecider, DisruptionNotice, NodeView
from k8s_backend.lifecycle.driver_port import DriverEndpoint
from k8s_backend.lifecycle.executor_events import NO_EVENTS, ExecutorEvents
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import SnapshotsStore

log = logging.getLogger(__name__)

NODE_RBAC_HINT = (
    "grant the driver's service account list on nodes (the ClusterRole in "
    "examples/kubernetes/driver-nodes-rbac.yaml), or set "
    "spark.kubernetes.executor.disruption.nodeTaints to an empty value to stop reading nodes"
)


class NodeReader:
    """The nodes by name, listed at most once per ``interval`` seconds; None when nodes cannot be read.

    Forbidden (or unauthorized) disables it for good after one warning: RBAC does not change mid-run.
    Other errors keep the last good view and are logged once per run of failures.
    """

    def __init__(self, api: KubernetesApi, clock: Clock, *, interval: float) -> None:
        self._api = api
        self._clock = clock
        self._interval = interval
        self._last: float | None = None
        self._nodes: Mapping[str, NodeView] | None = None
        self._failing = False
        self.forbidden: str | None = None  # why nodes cannot be read (status() shows it)
        self.lists = 0

    def nodes(self) -> Mapping[str, NodeView] | None:
        if self.forbidden is not None:
            return None
        now = self._clock.now()
        if self._last is not None and now - self._last < self._interval:
            return self._nodes
        self._last = now
        try:
            listed = self._api.list(NODES, None, resource_version="0")  # the server's cache is fresh enough
        except (ForbiddenError, UnauthorizedError) as error:
            self.forbidden = str(error)
            self._nodes = None
            log.warning(
                "Cannot read nodes (%s): executors on cordoned or tainted nodes are not decommissioned "
                "ahead of their eviction, only pods with the DisruptionTarget condition are. To fix: %s.",
                error,
                NODE_RBAC_HINT,
            )
            return None
        except Exception as error:
            if not self._failing:
                log.warning("Listing nodes failed (%s); using the last known nodes until it works", error)
            self._failing = True
            return self._nodes
        self.lists += 1
        if self._failing:
            log.info("Listing nodes works again")
            self._failing = False
        views = (NodeView.of(item) for item in listed.items)
        self._nodes = {view.name: view for view in views if view.name}
        return self._nodes


@attrs.frozen
class NoticedDisruption:
    """A notice acted on, for status() and the timeline."""

    time: float
    notice: DisruptionNotice


class DisruptionWatcher:
    """Subscribes to the snapshot store; each batch, decides on notices and acts on the new ones:

    1. the executor events (monitor, timeline, metrics) are told it is decommissioning, so its end is no
       failure;
    2. its pod gets the decommission label (``spark.kubernetes.executor.decommissionLabel``, if set);
    3. the driver decommissions it (Spark migrates its blocks when ``spark.storage.decommission.*`` is on);
    4. the allocator stops counting it (:meth:`departing_executor_ids`) and runs a round now, so the
       replacement is requested before the pod ends.
    """

    def __init__(
        self,
        store: SnapshotsStore,
        clock: Clock,
        *,
        decider: DisruptionDecider,
        nodes: NodeReader | None,
        interval: float = 1.0,
        driver: DriverEndpoint | None = None,
        events: ExecutorEvents = NO_EVENTS,
        label: Callable[[Sequence[str]], None] | None = None,
        recent: int = 20,
    ) -> None:
        self._store = store
        self._clock = clock
        self._decider = decider
        self._nodes = nodes
        self._interval = interval
        self._driver = driver
        self._events = events
        self._label = label
        self._lock = threading.Lock()
        self._noticed: frozenset[int] = frozenset()
        self._decided_over: Mapping[str, NodeView] | None = None  # the nodes of the last decision
        self._decided = False
        self.recent: collections.deque[NoticedDisruption] = collections.deque(maxlen=recent)
        self.total = 0

    def start(self) -> None:
        self._store.add_subscriber(self._interval, self.on_new_snapshots)

    def departing_executor_ids(self) -> frozenset[int]:
        """Executors decommissioned on notice whose pods still exist (the allocator replaces them)."""
        with self._lock:
            return self._noticed

    def on_new_snapshots(self, batch: SnapshotBatch) -> None:
        nodes = self._nodes.nodes() if self._nodes is not None else None
        with self._lock:
            # Every pod is read again only when the nodes changed (a cordon concerns pods that did not) or
            # the view was rebuilt; otherwise the pods that changed: O(pods) a second at 10,000 pods, and
            # more at each off-schedule delivery, was the largest part of the subscribers' CPU.
            rebuilt = batch.first or batch.resynced
            incremental = self._decided and not rebuilt and nodes == self._decided_over
            only = {s.executor_id for s in batch.updates} if incremental else None
            decision = self._decider.decide(batch.snapshot.pods, nodes, self._noticed, only=only)
            self._noticed = decision.noticed
            self._decided, self._decided_over = True, nodes
        for notice in decision.notices:
            self._act(notice)
        if decision.notices:
            self._store.notify_subscribers()  # the allocator's round, now: the replacements

    def _act(self, notice: DisruptionNotice) -> None:
        executor_id = str(notice.executor_id)
        self.total += 1
        self.recent.append(NoticedDisruption(self._clock.now(), notice))
        log.warning(
            "Executor %s (pod %s) is about to be taken away: %s. Decommissioning it and requesting a "
            "replacement now.",
            executor_id,
            notice.pod_name,
            notice.reason,
        )
        self._events.disruption_noticed(executor_id, notice.pod_name, notice.reason)
        self._events.decommissioning([executor_id])
        if self._label is not None:
            self._label([executor_id])
        if self._driver is not None:
            try:
                self._driver.decommission_executor(executor_id, f"k8s_backend: {notice.reason}")
            except Exception:
                log.exception("Could not ask the driver to decommission executor %s", executor_id)

    def status(self) -> dict[str, Any]:
        """What status() shows: whether nodes are read, and the recent notices."""
        reader = self._nodes
        return {
            "nodes": "off" if reader is None else ("forbidden" if reader.forbidden else "read"),
            "nodes_error": None if reader is None else reader.forbidden,
            "noticed": self.total,
            "departing": sorted(self.departing_executor_ids()),
            "recent": [
                {
                    "time": n.time,
                    "executor_id": n.notice.executor_id,
                    "pod": n.notice.pod_name,
                    "node": n.notice.node_name,
                    "reason": n.notice.reason,
                }
                for n in tuple(self.recent)
            ],
        }
