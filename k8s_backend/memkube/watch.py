"""Watch support for InMemoryKubernetes: the bounded event history and the open watch streams.

Every write of the fake is one event with its own resourceVersion. The history keeps the last
``history_size`` events so a watch can resume from a resourceVersion; older ones are compacted away
and resuming before them answers 410 Gone, as etcd compaction does on a real cluster.

Selector semantics follow the API server's watch cache: an event is delivered when the object
matches the watch's selectors before or after the change. An object that starts matching arrives as
ADDED, one that stops matching as DELETED (its previous state, at the event's resourceVersion).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator

import attrs

from k8s_backend.kube.port import INITIAL_EVENTS_END, ApiError, Obj, Resource, WatchEvent, WatchStream
from k8s_backend.memkube.errors import gone
from k8s_backend.memkube.selectors import FieldSelector, LabelSelector
from k8s_backend.memkube.store import ResKey, json_copy, res_key

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"


@attrs.frozen
class StoredEvent:
    """One write: its resourceVersion, kind, type, the new state and the state before it."""

    rv: int
    kind: ResKey
    type: str
    obj: Obj
    prev: Obj | None = None


@attrs.frozen
class WatchFilter:
    """Which objects a watch sees."""

    namespace: str | None
    labels: LabelSelector = attrs.field(factory=LabelSelector)
    fields: FieldSelector = attrs.field(factory=FieldSelector)

    def matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    def translate(self, event: StoredEvent) -> tuple[str, Obj] | None:
        """The event this watch receives for a write, if any."""
        now_matches = self.matches(event.obj)
        if event.type != MODIFIED:
            return (event.type, event.obj) if now_matches else None
        before_matched = event.prev is not None and self.matches(event.prev)
        if now_matches:
            return (MODIFIED if before_matched else ADDED, event.obj)
        if before_matched and event.prev is not None:
            previous = {
                **event.prev,
                "metadata": {**event.prev["metadata"], "resourceVersion": str(event.rv)},
            }
            return (DELETED, previous)
        return None


def bookmark_object(resource: Resource, rv: int) -> Obj:
    return {
        "kind": resource.kind,
        "apiVersion": resource.api_version,
        "metadata": {"resourceVersion": str(rv)},
    }


class FakeWatchStream:
    """An open watch on the fake (a :class:`k8s_backend.kube.port.WatchStream`).

    Blocking streams wait for events until closed by the client, by the server (``drop_watches``),
    or by ``timeout_seconds`` of real time; non-blocking streams end as soon as no event is buffered.
    """

    def __init__(
        self,
        log: EventLog | None,
        resource: Resource,
        watch_filter: WatchFilter,
        *,
        allow_bookmarks: bool = True,
        timeout_seconds: float | None = None,
        blocking: bool = True,
        error: ApiError | None = None,
    ) -> None:
        self._log = log
        self.resource = resource
        self.filter = watch_filter
        self.allow_bookmarks = allow_bookmarks
        # The server's timer starts with the request; no timeout (or 0) keeps the stream open until closed.
        self._deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
        self._blocking = blocking
        self._error = error
        self._buffer: deque[tuple[str, Obj]] = deque()
        self._closed = error is not None or log is None
        self._cond = threading.Condition(log.lock if log is not None else threading.RLock())

    @classmethod
    def failed(cls, resource: Resource, error: ApiError) -> FakeWatchStream:
        """A stream whose iteration raises ``error`` (how a failed watch request surfaces)."""
        return cls(None, resource, WatchFilter(None), error=error)

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def push(self, event_type: str, obj: Obj) -> None:
        """Buffer an event for the client. Caller holds the log's lock."""
        if not self._closed:
            self._buffer.append((event_type, obj))
            self._cond.notify_all()

    def __iter__(self) -> Iterator[WatchEvent]:
        # Stored objects are never modified, so copying outside the lock is safe.
        return (WatchEvent(event.type, json_copy(event.object)) for event in self.shared())

    def shared(self) -> Iterator[WatchEvent]:
        """The events with the stored objects themselves, not copies: for in-process readers that never
        modify them (the HTTP server encodes them; the local kubelet reads them). Saves a deep copy per
        event and reader, a large share of the fake's CPU when a thousand pods start."""
        if self._error is not None:
            raise self._error
        while True:
            with self._cond:
                item = self._next_locked(self._deadline)
            if item is None:
                return
            yield WatchEvent(item[0], item[1])

    def _next_locked(self, deadline: float | None) -> tuple[str, Obj] | None:
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self._closed:
                return None
            if not self._blocking:
                self._end_locked()
                return None
            if deadline is None:
                self._cond.wait()
                continue
            remaining = deadline - time.monotonic()
            if remaining > 0:
                self._cond.wait(remaining)
                continue
            # The server ends the watch at its timeout, with a last bookmark when the client allows them.
            self._end_locked()
            if self.allow_bookmarks and self._log is not None:
                return (BOOKMARK, bookmark_object(self.resource, self._log.current_rv))
            return None

    def _end_locked(self) -> None:
        self._closed = True
        self._buffer.clear()
        if self._log is not None:
            self._log.unregister(self)
        self._cond.notify_all()

    def close(self) -> None:
        """End the watch; a thread blocked iterating it returns promptly."""
        with self._cond:
            if not self._closed:
                self._end_locked()

    def __enter__(self) -> FakeWatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventLog:
    """The global resourceVersion, the bounded event history of each kind and the open watches.

    The history is kept per kind, as kube-apiserver's watch cache is: a burst of Events or Leases does not
    push the pods' recent changes out, so a pod watch resuming after it is not answered 410 Gone.
    """

    def __init__(self, lock: threading.RLock, history_size: int, *, blocking: bool) -> None:
        if history_size < 0:
            raise ValueError(f"history_size must be >= 0 events (got {history_size})")
        self.lock = lock
        self._blocking = blocking
        self._size = history_size
        self._history: dict[ResKey, deque[StoredEvent]] = {}
        self._compacted: dict[ResKey, int] = {}  # per kind, the newest resourceVersion no longer kept
        self._floor = 0  # compact() forgot every kind's events up to this version
        # Never "0": a list of the empty store must report a version a watch can resume from ("0" means
        # "any version" to a watch).
        self._rv = 1
        self._watches: dict[ResKey, dict[FakeWatchStream, None]] = {}

    @property
    def current_rv(self) -> int:
        return self._rv

    def next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def record(self, event: StoredEvent) -> None:
        """Keep an event in its kind's history and deliver it to the watches of its kind."""
        if self._size == 0:
            self._compacted[event.kind] = event.rv
        else:
            history = self._history.get(event.kind)
            if history is None:
                history = self._history[event.kind] = deque(maxlen=self._size)
            if len(history) == self._size:
                self._compacted[event.kind] = history[0].rv
            history.append(event)
        for stream in self._watches.get(event.kind, {}):
            delivered = stream.filter.translate(event)
            if delivered is not None:
                stream.push(*delivered)

    def open(
        self,
        resource: Resource,
        watch_filter: WatchFilter,
        *,
        since: int | None,
        initial: list[Obj],
        allow_bookmarks: bool,
        timeout_seconds: float | None,
        end_initial: bool = False,
    ) -> FakeWatchStream:
        """Open a watch: ``initial`` objects as ADDED then live events, or the history after ``since``.
        ``end_initial``: a bookmark annotated :data:`INITIAL_EVENTS_END` follows the initial objects."""
        kind = res_key(resource)
        compacted = max(self._floor, self._compacted.get(kind, 0))
        if since is not None and since < compacted:
            return FakeWatchStream.failed(resource, gone(since, compacted + 1))
        stream = FakeWatchStream(
            self,
            resource,
            watch_filter,
            allow_bookmarks=allow_bookmarks,
            timeout_seconds=timeout_seconds,
            blocking=self._blocking,
        )
        for obj in initial:
            stream.push(ADDED, obj)
        if end_initial:
            end = bookmark_object(resource, self._rv)
            end["metadata"]["annotations"] = {INITIAL_EVENTS_END: "true"}
            stream.push(BOOKMARK, end)
        if since is not None:
            replay: list[StoredEvent] = []
            for event in reversed(self._history.get(kind, ())):
                if event.rv <= since:
                    break
                replay.append(event)
            for event in reversed(replay):
                delivered = watch_filter.translate(event)
                if delivered is not None:
                    stream.push(*delivered)
        self._watches.setdefault(kind, {})[stream] = None
        return stream

    def unregister(self, stream: FakeWatchStream) -> None:
        self._watches.get(res_key(stream.resource), {}).pop(stream, None)

    def streams(self) -> list[FakeWatchStream]:
        return [stream for by_kind in self._watches.values() for stream in by_kind]

    def compact(self, keep_last: int) -> None:
        """Forget all but the last ``keep_last`` events of each kind."""
        if keep_last < 0:
            raise ValueError(f"keep_last must be >= 0 (got {keep_last})")
        for kind, history in self._history.items():
            while len(history) > keep_last:
                self._compacted[kind] = history.popleft().rv
            if not history:
                self._compacted[kind] = self._rv
        if keep_last == 0:
            self._floor = self._rv

    def send_bookmarks(self) -> None:
        for stream in self.streams():
            if stream.allow_bookmarks:
                stream.push(BOOKMARK, bookmark_object(stream.resource, self._rv))

    def drop_all(self) -> None:
        for stream in self.streams():
            stream.close()


def shared_events(stream: WatchStream) -> Iterable[WatchEvent]:
    """``stream``'s events, without the per-event copy when it is the fake's own stream (see
    :meth:`FakeWatchStream.shared`): the reader must not modify the objects."""
    return stream.shared() if isinstance(stream, FakeWatchStream) else stream
