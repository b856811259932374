"""The watch source: a reflector that keeps the snapshot store current from a pod watch.

It lists, watches from the list's resourceVersion, keeps the newest version seen (bookmarks included),
resumes after every close, re-lists at once after 410 Gone, backs off on errors, and never silently dies:
Spark's watch stops for good on a 410 and leaves the 30 s poll as the only update path.

Where the server offers streaming lists (Kubernetes' WatchList: kube-apiserver 1.32 and 1.34 on, by
default), its list is one: a watch that first sends every executor pod as an event, ends them with a
bookmark, then goes on as the watch. The pods reach the store one at a time and it keeps only their
compact states, so a relist's peak memory is no longer the whole response plus every decoded pod at
once (at 10,000 executors on kube-apiserver v1.37.2: see ``benchmarks/real_scale.py``). A server that
refuses it (400 or 422: the WatchList feature off, as in 1.27-1.31 and 1.33) or ignores it (older than
1.27: live events before the end bookmark) gets list + watch from then on.

It is the one layer that retries its lists and watches (the adapter tries once, see
:mod:`k8s_backend.kube.backoff`): after a transient API error it waits the short back-off, so it follows
the API's healing within a second. A server that misbehaves without an error (a 410 right after a list,
watches closed at once with nothing in them) gets the long back-off instead: asking faster cannot help.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from k8s_backend.common import Clock
from k8s_backend.kube.labels import executor_selector
from k8s_backend.kube.port import (
    PODS,
    ApiError,
    BadRequestError,
    GoneError,
    InvalidError,
    KubernetesApi,
    WatchEvent,
)
from k8s_backend.kube.retry import caller_retries
from k8s_backend.kube.watch_backoff import failure_delay, misbehaving_delay
from k8s_backend.kube.watch_stop import end_watch
from k8s_backend.snapshots.collector import collector_paused
from k8s_backend.snapshots.store import Relist, SnapshotsStore
from k8s_backend.snapshots.streaming_list import Initial, initial_event, not_offered

log = logging.getLogger(__name__)

DEFAULT_SERVER_TIMEOUT = 300  # seconds the server keeps one watch open (jittered)
SHORT_WATCH = 1.0  # seconds: a watch that ends sooner with no events counts as a failure


class ExecutorPodsWatchSnapshotSource:
    """Feeds the store from list + watch on a thread of its own (:meth:`start`), or step by step
    (:meth:`prepare`, then :meth:`run_once` as often as the caller likes)."""

    def __init__(
        self,
        api: KubernetesApi,
        store: SnapshotsStore,
        clock: Clock,
        *,
        namespace: str,
        enabled: bool = True,
        streaming_list: bool = True,
        server_timeout: int = DEFAULT_SERVER_TIMEOUT,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._api = api
        self._store = store
        self._clock = clock
        self._namespace = namespace
        self._enabled = enabled
        self._streaming_list = streaming_list  # cleared for good once the server shows it has none
        self._server_timeout = server_timeout
        self._rng = rng
        self._selector = ""
        self._resource_version: str | None = None
        self._failures = 0
        self._stop = threading.Event()
        self._stream_lock = threading.Lock()
        self._stream: object | None = None
        self._thread: threading.Thread | None = None
        self.relists = 0
        self.restarts = 0
        self.events = 0
        self.last_error: str | None = None

    @property
    def enabled(self) -> bool:
        return self._enabled

    def start(self, app_id: str) -> None:
        """Start watching the application's executor pods (no-op when the watch is disabled)."""
        if not self._enabled:
            return
        if self._thread is not None or self._selector:
            raise RuntimeError("the watch source was already started")
        self._selector = executor_selector(app_id, active_only=True)
        self._thread = threading.Thread(target=self._loop, name="k8s-executor-watch", daemon=True)
        self._thread.start()

    def prepare(self, app_id: str) -> None:
        """Set the selector without starting a thread; the caller then drives :meth:`run_once`."""
        self._selector = executor_selector(app_id, active_only=True)

    def seed(self, resource_version: str | None) -> None:
        """Watch from a full list someone else took and gave the store (recovery's, at start): one list
        fewer. It counts as this source's first list. Ignored once this source has a version of its own,
        or without one."""
        if resource_version and self._resource_version is None and self._thread is None:
            self._resource_version = resource_version
            self.relists += 1

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called (a caller driving :meth:`run_once` stops then too)."""
        return self._stop.is_set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            started, events, relists = self._clock.now(), self.events, self.relists
            delay = self.run_once()
            empty = self.events == events and self.relists == relists
            if delay == 0 and empty and self._clock.now() - started < SHORT_WATCH:
                # A server or proxy that closes every watch at once must not be hammered (client-go
                # treats a very short empty watch as an error too).
                self._failures += 1
                delay = self._backoff()
                log.warning("Executor pod watch closed at once with no events; retrying in %.1fs", delay)
            if delay > 0:
                self._stop.wait(delay)

    def run_once(self) -> float:
        """One cycle: list if needed, then consume one watch stream. Returns the delay before the next."""
        with caller_retries():  # this loop is the one that retries its lists and watches
            return self._run_once()

    def _run_once(self) -> float:
        listed_now = False
        events_before = self.events
        try:
            streamed = False
            if self._resource_version is None and self._streaming_list:
                listed_now = True
                streamed = self._streaming_watch()
            if not streamed:
                if self._resource_version is None:
                    self._list()
                    listed_now = True
                self._watch()
        except GoneError:
            self._resource_version = None
            self.restarts += 1
            if listed_now and self.events == events_before:
                # 410 for the version a list just returned: the server is misbehaving. Back off rather
                # than re-list in a tight loop (the worry that kept SPARK-33349 out of Spark).
                self._failures += 1
                delay = self._backoff()
                log.warning("Executor pod watch expired right after a list; retrying in %.1fs", delay)
                return delay
            # The version we hold is compacted away: re-list right now so the change reaches the allocator
            # in well under a second, instead of waiting for the next poll.
            log.info("Executor pod watch expired (410 Gone); re-listing")
            return 0.0
        except Exception as error:  # the watch must survive anything, and say so
            self._failures += 1
            self.restarts += 1
            self.last_error = str(error)
            delay = failure_delay(self._failures, error, self._rng())
            level = logging.WARNING if isinstance(error, ApiError) else logging.ERROR
            log.log(
                level,
                "Executor pod watch failed (%s); retrying in %.1fs",
                error,
                delay,
                exc_info=level == logging.ERROR,
            )
            return delay
        self._failures = 0
        self.restarts += 1
        return 0.0

    def _list(self) -> None:
        with collector_paused():  # the list is dropped inside: see snapshots/collector.py
            listed = self._api.list(PODS, self._namespace, label_selector=self._selector)
            self._store.replace_snapshot(listed.items, listed.resource_version)
            self._resource_version = listed.resource_version
            del listed
        self._listed()

    def _listed(self) -> None:
        self.relists += 1
        if self.relists > 1:
            self._store.notify_subscribers()

    def _watch(self, *, streaming: bool = False) -> None:
        """Consume one watch stream; ``streaming``: a streaming list, its initial events a relist."""
        if self._stop.is_set():
            return
        timeout = int(self._server_timeout * (1 + self._rng() * 0.1))
        stream = self._api.watch(
            PODS,
            self._namespace,
            label_selector=self._selector,
            resource_version=None if streaming else self._resource_version,
            timeout_seconds=timeout,
            allow_bookmarks=True,
            send_initial_events=streaming,
        )
        with self._stream_lock:
            self._stream = stream
        # Until its end bookmark, a streaming list's events are the list: its pods go to the relist, and
        # the stream's version is not kept (cut short, it is listed again from the start).
        relist = self._store.relist() if streaming else None
        try:
            for event in stream:
                if relist is not None:
                    if self._initial_event(event, relist):
                        relist = None
                    elif self._streaming_list:
                        continue
                    else:  # the server ignored the streaming list: a plain watch from now on
                        return
                metadata = event.object.get("metadata") or {}
                version = metadata.get("resourceVersion")
                if version:
                    self._resource_version = str(version)
                if event.type == "BOOKMARK":
                    continue
                self.events += 1
                self._store.update_pod(event.object, deleted=event.type == "DELETED")
                if self._stop.is_set():
                    break
        finally:
            with self._stream_lock:
                self._stream = None
            stream.close()

    def _streaming_watch(self) -> bool:
        """A streaming list and the watch after it; False if the server showed it has no streaming lists."""
        try:
            self._watch(streaming=True)
        except (BadRequestError, InvalidError) as error:
            self._no_streaming_list(f"the API server refused it: {error}")
        return self._streaming_list

    def _initial_event(self, event: WatchEvent, relist: Relist) -> bool:
        """One event of a streaming list's initial part; True for the bookmark that ends it."""
        kind, version = initial_event(event, relist)
        if kind is Initial.END:
            self._resource_version = version
            self._listed()
            return True
        if kind is Initial.NOT_STREAMING:
            self._no_streaming_list(f"a {event.type} event came before the end of its initial events")
        return False

    def _no_streaming_list(self, why: str) -> None:
        self._streaming_list = False
        log.info(not_offered(why))

    def _backoff(self) -> float:
        return misbehaving_delay(self._failures, self._rng())

    def stop(self, timeout: float = 5.0) -> None:
        """Close the watch and wait for the thread to end."""
        self._stop.set()
        with self._stream_lock:
            stream = self._stream
        end_watch(stream, self._thread, "executor pod watch", timeout)

    def health(self) -> dict[str, object]:
        return {
            "enabled": self._enabled,
            "alive": not self._stop.is_set() and bool(self._thread and self._thread.is_alive()),
            "resource_version": self._resource_version,
            "relists": self.relists,
            "restarts": self.restarts,
            "events": self.events,
            "last_error": self.last_error,
        }
