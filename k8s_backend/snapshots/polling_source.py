"""The polling source: a periodic full resync of the executor pods (the safety net against lost events)."""

from __future__ import annotations

import logging

from k8s_backend.common import Cancellable, Scheduler
from k8s_backend.kube.labels import executor_selector
from k8s_backend.kube.port import PODS, KubernetesApi
from k8s_backend.kube.resource_version import newer, parse_resource_version
from k8s_backend.snapshots.collector import collector_paused
from k8s_backend.snapshots.store import SnapshotsStore

log = logging.getLogger(__name__)


class ExecutorPodsPollingSnapshotSource:
    """Lists the application's executor pods every ``interval`` seconds and replaces the store's view."""

    def __init__(
        self,
        api: KubernetesApi,
        store: SnapshotsStore,
        scheduler: Scheduler,
        *,
        namespace: str,
        interval: float = 30.0,
        enabled: bool = True,
        cached_reads: bool = False,
    ) -> None:
        self._api = api
        self._store = store
        self._scheduler = scheduler
        self._namespace = namespace
        self._interval = interval
        self._enabled = enabled
        self._cached_reads = cached_reads  # spark.kubernetes.executor.enablePollingWithResourceVersion
        self._selector = ""
        self._task: Cancellable | None = None
        self._last_version: int | None = None
        self.polls = 0

    @property
    def enabled(self) -> bool:
        return self._enabled

    def start(self, app_id: str) -> None:
        """Poll every interval, the first time one interval from now (as Spark)."""
        if not self._enabled:
            return
        if self._task is not None:
            raise RuntimeError("the polling source was already started")
        self._selector = executor_selector(app_id, active_only=True)
        self._task = self._scheduler.schedule_with_fixed_delay(self._interval, self._interval, self.poll)

    def poll(self) -> None:
        """One full resync; errors are logged and the next poll tries again."""
        with collector_paused():  # the list is gone when _poll returns: see snapshots/collector.py
            self._poll()

    def _poll(self) -> None:
        try:
            listed = self._api.list(
                PODS,
                self._namespace,
                label_selector=self._selector,
                resource_version="0" if self._cached_reads else None,
            )
        except Exception as error:
            log.warning("Polling executor pods failed (%s); the next poll will retry", error)
            return
        version = parse_resource_version(listed.resource_version)
        stale = newer(self._last_version, version)
        if self._cached_reads and stale:
            # A cached read from a lagging API server replica must not move the view backwards.
            log.debug("Ignoring a cached pod list at %s older than %s", version, self._last_version)
            return
        if version is not None:
            self._last_version = version
        self.polls += 1
        self._store.replace_snapshot(listed.items, listed.resource_version)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
