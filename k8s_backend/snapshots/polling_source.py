"""The polling source: a periodic full resync of the executor pods (the safety net against lost events).

A list that fails with a transient API error is asked for again after the short back-off of
:mod:`k8s_backend.kube.backoff` (when that comes before the next poll), so the view follows the API's
healing within a second, not a polling interval later. This source is the one layer that retries its
lists: the adapter tries once (:func:`k8s_backend.kube.retry.caller_retries`).

Where the server offers streaming lists, a poll is one (a watch with ``sendInitialEvents``, closed at the
bookmark that ends its pods; see :mod:`.streaming_list`): the pods reach the store one at a time, so a
poll of 10,000 executors neither holds the whole response and every decoded pod at once nor decodes them
in one block (its CPU: ``benchmarks/real_scale.py``). Cached reads (``resourceVersion=0``) stay lists.
"""

from __future__ import annotations

import logging
import threading

from k8s_backend.common import Cancellable, Scheduler
from k8s_backend.kube.backoff import retry_delay
from k8s_backend.kube.labels import executor_selector
from k8s_backend.kube.port import PODS, ApiError, BadRequestError, InvalidError, KubernetesApi
from k8s_backend.kube.resource_version import newer, parse_resource_version
from k8s_backend.kube.retry import caller_retries, should_retry
from k8s_backend.snapshots.collector import collector_paused
from k8s_backend.snapshots.store import SnapshotsStore
from k8s_backend.snapshots.streaming_list import Initial, initial_event, not_offered

log = logging.getLogger(__name__)

POLL_STREAM_TIMEOUT = 10  # seconds a poll's streaming list may take before the server ends it


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
        streaming_list: bool = True,
    ) -> None:
        self._api = api
        self._store = store
        self._scheduler = scheduler
        self._namespace = namespace
        self._interval = interval
        self._enabled = enabled
        self._cached_reads = cached_reads  # spark.kubernetes.executor.enablePollingWithResourceVersion
        self._streaming_list = streaming_list and not cached_reads  # cleared once the server has none
        self._selector = ""
        self._task: Cancellable | None = None
        self._last_version: int | None = None
        self._lock = threading.Lock()
        self._failures = 0  # transient list errors in a row
        self._retry: Cancellable | None = None  # the list asked for again after an error
        self._stopped = False
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
            with caller_retries():
                if self._streaming_list and self._streamed():
                    return
                listed = self._api.list(
                    PODS,
                    self._namespace,
                    label_selector=self._selector,
                    resource_version="0" if self._cached_reads else None,
                )
        except Exception as error:
            self._failed(error)
            return
        with self._lock:
            self._failures = 0
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

    def _streamed(self) -> bool:
        """One poll as a streaming list; False when it is to be a list this time (the server has no
        streaming lists, or the stream ended before the bookmark that ends its pods)."""
        try:
            stream = self._api.watch(
                PODS,
                self._namespace,
                label_selector=self._selector,
                allow_bookmarks=True,
                send_initial_events=True,
                # A server older than 1.27 in a quiet cluster sends no end and nothing else: a list then.
                timeout_seconds=min(POLL_STREAM_TIMEOUT, max(1, int(self._interval))),
            )
            try:
                relist = self._store.relist()
                for event in stream:
                    kind, version = initial_event(event, relist)
                    if kind is Initial.END:
                        self._polled(parse_resource_version(version))
                        return True
                    if kind is Initial.NOT_STREAMING:
                        self._no_streaming_list(f"a {event.type} event came before the end of its pods")
                        return False
            finally:
                stream.close()
        except (BadRequestError, InvalidError) as error:
            self._no_streaming_list(f"the API server refused it: {error}")
        return False

    def _polled(self, version: int | None) -> None:
        with self._lock:
            self._failures = 0
        if version is not None:
            self._last_version = version
        self.polls += 1

    def _no_streaming_list(self, why: str) -> None:
        self._streaming_list = False
        log.info(not_offered(why))

    def _failed(self, error: Exception) -> None:
        """Ask again after the short back-off if the error is transient and that is before the next poll."""
        with self._lock:
            self._failures += 1
            delay = None
            if should_retry(error) and not self._stopped and self._retry is None:
                retry_after = error.retry_after if isinstance(error, ApiError) else None
                delay = retry_delay(self._failures, retry_after=retry_after)
                if delay < self._interval:
                    self._retry = self._scheduler.schedule(delay, self._retry_poll)
                else:
                    delay = None
        if delay is None:
            log.warning("Polling executor pods failed (%s); the next poll will retry", error)
        else:
            log.warning("Polling executor pods failed (%s); retrying in %.1fs", error, delay)

    def _retry_poll(self) -> None:
        with self._lock:
            self._retry = None
            if self._stopped:
                return
        self.poll()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            retry, self._retry = self._retry, None
        if retry is not None:
            retry.cancel()
        if self._task is not None:
            self._task.cancel()
            self._task = None
