"""A cluster-mode driver's registered executors, written on its own pod for ``k8s-backend status``.

A client-mode driver tells them in its heartbeat Lease's renewals
(:mod:`k8s_backend.backend.heartbeat`). A driver that runs in a pod keeps no Lease (its executors are
owned by its pod, so ``gc`` needs none), so it
annotates its pod instead: ``k8s-backend.io/registered-executors`` (the same value as the Lease's) and
``k8s-backend.io/registered-executors-as-of`` (when it wrote it). The CLI already lists that pod, so reading
them costs ``status`` no request. With ``activity`` it also writes the driver's recent targets and markers
(``k8s-backend.io/executor-activity``, :mod:`k8s_backend.kube.activity`) for ``status --timeline``, in the
same patch, under the same rule: written when either changed.

Writing costs one merge patch of the pod (``patch pods``, which the driver's Role grants for executor
labels already), and only when the set changed: once at start, so that ``status`` can say "not registered"
rather than "not known", then when it changes, at most once per ``interval`` (the heartbeat's renewal
interval, so as fresh as a client-mode driver's). A change within the interval is held and the next tick
after it writes what is true then; the first change after the initial write is written at once, as
executors register in a burst soon after start. Ticks come from the snapshot store (no timer of its own).
A failed write is logged and tried again after the interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from k8s_backend.common import Clock
from k8s_backend.kube.activity import ACTIVITY_ANNOTATION
from k8s_backend.kube.leases import (
    REGISTERED_EXECUTORS_ANNOTATION,
    REGISTERED_EXECUTORS_AS_OF_ANNOTATION,
    micro_time,
    registered_executors_annotation,
)
from k8s_backend.kube.port import PODS, ApiError, KubernetesApi
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import SnapshotsStore

log = logging.getLogger(__name__)

_SLACK = 1e-3  # a tick that comes this much early (float sums of clock steps) is on time


class RegistrationPublisher:
    """Writes the driver's registered executors on its pod when they change, rate-limited.

    ``tick`` runs on one snapshot subscriber (never concurrently with itself).
    """

    def __init__(
        self,
        api: KubernetesApi,
        clock: Clock,
        *,
        namespace: str,
        pod_name: str,
        registered: Callable[[], Mapping[str, float]],
        interval: float,
        activity: Callable[[], str] | None = None,
    ) -> None:
        """``registered``: executor id to registration time, as the driver knows them; ``interval``: the
        least time between two writes after the first change; ``activity``: the executor-activity
        annotation's value, None to write none."""
        if interval <= 0:
            raise ValueError(f"the publication interval must be positive, got {interval}")
        self._api = api
        self._clock = clock
        self._namespace = namespace
        self.pod_name = pod_name
        self._registered = registered
        self._activity = activity
        self.interval = interval
        # As last written (registered executors, activity); None: nothing written yet.
        self._published: tuple[dict[str, float], str | None] | None = None
        self._next_at: float | None = None  # no write before this (None: at once)
        self._warned = False
        self.writes = 0
        self.failed_writes = 0

    def start(self, store: SnapshotsStore, tick_interval: float) -> None:
        """Tick as a subscriber of ``store`` (its first tick at once); its stop ends the ticks."""
        store.add_subscriber(tick_interval, self.on_batch)

    def on_batch(self, batch: SnapshotBatch) -> None:
        self.tick()

    def tick(self) -> None:
        """Write the registered executors if they changed since the last write and the interval allows."""
        try:
            registered = dict(self._registered())
            activity = None if self._activity is None else self._activity()
        except Exception:  # the driver may be going away
            log.debug("Could not read the driver's registered executors or activity", exc_info=True)
            return
        if (registered, activity) == self._published:
            return
        now = self._clock.now()
        if self._next_at is not None and now < self._next_at - _SLACK:
            return  # held: a later tick writes what is true then
        first = self._published is None
        # After the initial write the first change goes at once (executors register soon after start).
        self._next_at = None if first else now + self.interval
        try:
            patch = self._annotations(registered, activity, now)
            self._api.patch(PODS, self._namespace, self.pod_name, patch)
        except ApiError as error:
            self.failed_writes += 1
            self._next_at = now + self.interval
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            log.log(
                level,
                "Could not write the registered executors on driver pod %s/%s (tried again in %.0fs; "
                "`k8s-backend status` shows them as not known meanwhile): %s",
                self._namespace,
                self.pod_name,
                self.interval,
                error,
            )
            return
        self._published = (registered, activity)
        self.writes += 1

    @staticmethod
    def _annotations(registered: Mapping[str, float], activity: str | None, now: float) -> dict[str, object]:
        annotations = {
            REGISTERED_EXECUTORS_ANNOTATION: registered_executors_annotation(registered),
            REGISTERED_EXECUTORS_AS_OF_ANNOTATION: micro_time(now),
        }
        if activity is not None:
            annotations[ACTIVITY_ANNOTATION] = activity
        return {"metadata": {"annotations": annotations}}
