"""Writes the autoscaler hints onto executor pods as the driver's facts change.

Every ``interval`` it asks the driver what each executor does and holds, decides with
:func:`~k8s_backend.lifecycle.autoscaler_hints.decide_hints` and sends one merge patch per pod whose
state changed: nothing when nothing changed, and at most ``max_patches`` per interval, so the traffic is
bounded whatever the driver reports.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from k8s_backend.kube import PODS, KubernetesApi, NotFoundError
from k8s_backend.lifecycle.autoscaler_hints import HintChange, decide_hints, hint_annotations
from k8s_backend.lifecycle.driver_port import ExecutorActivitySource
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import SnapshotsStore

log = logging.getLogger(__name__)


class AutoscalerHintsWriter:
    """Subscribes to the snapshot store; each batch, reads the driver's facts and patches what changed."""

    def __init__(
        self,
        api: KubernetesApi,
        store: SnapshotsStore,
        source: ExecutorActivitySource,
        *,
        namespace: str,
        interval: float,
        deletion_cost: int | None,
        max_patches: int = 50,
    ) -> None:
        self._api = api
        self._store = store
        self._source = source
        self._namespace = namespace
        self._interval = interval
        self._deletion_cost = deletion_cost
        self._max_patches = max_patches
        self._lock = threading.Lock()
        self._sent: dict[int, bool] = {}  # executor id -> the state last written (until the pod is gone)
        self.reads = 0  # times the driver's facts were read
        self.patches = 0
        self.failed_patches = 0

    def start(self) -> None:
        self._store.add_subscriber(self._interval, self.on_new_snapshots)

    def on_new_snapshots(self, batch: SnapshotBatch) -> None:
        activity = self._source.executor_activity()
        self.reads += 1
        if activity is None:  # the driver cannot tell now (starting, stopping): change nothing
            return
        pods = batch.snapshot.pods
        with self._lock:
            for gone in set(self._sent) - set(pods):
                del self._sent[gone]
            changes = decide_hints(pods.values(), activity, self._sent, limit=self._max_patches)
        for change in changes:
            self._write(change)

    def _write(self, change: HintChange) -> None:
        patch = {"metadata": {"annotations": hint_annotations(change.protect, self._deletion_cost)}}
        try:
            self._api.patch(PODS, self._namespace, change.pod_name, patch)
        except NotFoundError:
            return  # the pod is gone: nothing to hint
        except Exception as error:
            self.failed_patches += 1
            log.warning("Could not write the autoscaler hints on pod %s: %s", change.pod_name, error)
            return  # not recorded as sent: the next interval tries again
        with self._lock:
            self._sent[change.executor_id] = change.protect
            self.patches += 1
        # DEBUG: an executor whose tasks come and go changes state often; status() counts the patches.
        log.debug(
            "Executor %d (pod %s): %s; autoscaler hints %s",
            change.executor_id,
            change.pod_name,
            change.why,
            "set (not safe to evict)" if change.protect else "removed (safe to evict)",
        )

    def status(self) -> dict[str, Any]:
        """What status() shows: the executors annotated now and the patches sent."""
        with self._lock:
            protected = sorted(i for i, on in self._sent.items() if on)
        return {
            "interval": self._interval,
            "reads": self.reads,
            "protected_executors": protected,
            "patches": self.patches,
            "failed_patches": self.failed_patches,
        }
