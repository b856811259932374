"""Kubernetes Events of the local kubelet and its built-in scheduler, recorded like client-go's recorder.

:meth:`EventRecorder.record` only updates an in-memory aggregate (a dictionary lookup under a lock) and
returns; a writer thread creates the core/v1 Event through the API (so it is seen over HTTP too) or, for a
repeat, patches its ``count`` and ``lastTimestamp`` (``series`` for scheduler-style events). Repeats that
arrive before the writer got to an event are coalesced into one write, so a pod retried a thousand times
costs a handful of requests. The writer lets a burst of records end first (it writes once they pause for
``quiet`` seconds, and stops again when they resume, unless a change waited ``max_delay`` seconds), so that
starting a thousand pods is not slowed by their Events competing for the interpreter. Events expire ``ttl``
seconds after they were last seen (the API server's default ``--event-ttl`` is 1 h): the writer deletes
them, and forgets them.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import attrs

from k8s_backend.common.clock import Clock
from k8s_backend.kube.port import EVENTS, ApiError, KubernetesApi, NotFoundError, Obj

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
KUBELET = "kubelet"
SCHEDULER = "default-scheduler"
DEFAULT_TTL = 3600.0

_Key = tuple[str, ...]


def rfc3339(seconds: float, *, micro: bool = False) -> str:
    """UTC time as the API server writes it: seconds for ``lastTimestamp``, microseconds for
    ``eventTime`` (a MicroTime)."""
    when = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


@attrs.define
class _Entry:
    """One Event as recorded so far; ``written`` is the count the API has."""

    namespace: str
    name: str
    body: Obj
    count: int
    last: float
    written: int = 0


class EventRecorder:
    """Records Events about pods, deduplicated, written off the caller's thread.

    ``start()`` runs the writer thread; without it, :meth:`write_pending` and :meth:`expire` do the
    writes on the calling thread (tests). :meth:`wait_idle` blocks until every recorded change is written.
    """

    def __init__(
        self,
        api: KubernetesApi,
        *,
        clock: Clock,
        ttl: float = DEFAULT_TTL,
        quiet: float = 0.25,
        max_delay: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"EventRecorder(ttl={ttl}): the event TTL must be positive seconds")
        self._quiet = quiet
        self._monotonic = monotonic
        self._max_delay = max_delay
        # monotonic() of the last record and of the oldest unwritten one: the writer's pacing only
        self._last_record = 0.0
        self._pending_since = 0.0
        self._api = api
        self._clock = clock
        self._ttl = ttl
        self._cond = threading.Condition()
        # key -> entry, oldest last-seen first (a repeat moves it to the end), so expiry pops the front
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._dirty: dict[_Key, None] = {}
        self._busy = False
        self._stopping = False
        self._last_ns = 0
        self._thread: threading.Thread | None = None

    # -- recording (any thread, cheap) ------------------------------------------------------------------

    def record(
        self,
        pod: Obj,
        kind: str,
        reason: str,
        message: str,
        *,
        component: str = KUBELET,
        host: str = "",
        field_path: str = "",
    ) -> None:
        """Record an Event about ``pod``; an identical one (same pod, source, type, reason and message)
        seen before only bumps its count."""
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "")
        uid = str(meta.get("uid") or "")
        key = (namespace, name, uid, component, host, field_path, kind, reason, message)
        now = self._clock.now()
        with self._cond:
            if self._stopping:
                return
            entry = self._entries.get(key)
            if entry is None:
                entry = _Entry(namespace, self._name(name), {}, 0, now)
                entry.body = _body(entry, pod, kind, reason, message, component, host, field_path, now)
                self._entries[key] = entry
            else:
                self._entries.move_to_end(key)
            entry.count += 1
            entry.last = now
            self._last_record = self._monotonic()
            if not self._dirty:
                self._pending_since = self._last_record
                self._cond.notify_all()  # wake the writer once per batch, not on every record
            self._dirty[key] = None

    def _name(self, pod_name: str) -> str:
        # client-go names an Event "<object>.<unix nanoseconds in hex>"; strictly increasing here
        self._last_ns = max(self._last_ns + 1, int(self._clock.now() * 1e9))
        return f"{pod_name}.{self._last_ns:x}"

    # -- writing (the writer thread, or a test) -------------------------------------------------------

    def write_pending(self, *, yielding: bool = False) -> int:
        """Write every recorded change now; returns how many requests were sent. ``yielding`` stops
        early, leaving the rest for later, as soon as records arrive again (see :meth:`_busy_recording`)."""
        sent = 0
        while True:
            with self._cond:
                if not self._dirty or (yielding and self._busy_recording()):
                    return sent
                key = next(iter(self._dirty))
                del self._dirty[key]
                entry = self._entries.get(key)
                if entry is None:
                    continue
                count, last, written = entry.count, entry.last, entry.written
                body = dict(entry.body) if not written else None
                self._busy = True
            try:
                sent += 1
                written_now = self._write(entry, body, count, last)
            finally:
                with self._cond:
                    self._busy = False
                    if written_now:
                        entry.written = count
                    self._cond.notify_all()

    def _write(self, entry: _Entry, body: Obj | None, count: int, last: float) -> bool:
        try:
            if body is not None:
                self._api.create(EVENTS, entry.namespace, _with_count(body, count, last))
            else:
                self._api.patch(EVENTS, entry.namespace, entry.name, _count_patch(entry.body, count, last))
            return True
        except NotFoundError:  # deleted by someone else (or its namespace is gone): write it anew next time
            with self._cond:
                entry.written = 0
            return False
        except ApiError as error:  # Events are best effort, as the real recorder's are
            log.debug("event %s/%s not written: %s", entry.namespace, entry.name, error)
            return False

    def expire(self) -> int:
        """Delete the Events not seen for ``ttl`` seconds; returns how many were dropped."""
        deadline = self._clock.now() - self._ttl
        gone: list[_Entry] = []
        with self._cond:
            while self._entries:
                key, entry = next(iter(self._entries.items()))
                if entry.last > deadline:
                    break
                del self._entries[key]
                self._dirty.pop(key, None)
                if entry.written:
                    gone.append(entry)
        for entry in gone:
            with contextlib.suppress(ApiError):  # already gone
                self._api.delete(EVENTS, entry.namespace, entry.name)
        return len(gone)

    def __len__(self) -> int:
        """How many distinct Events are remembered (alive, not yet expired)."""
        with self._cond:
            return len(self._entries)

    # -- the writer thread ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread."""
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is pending (for at most ``timeout`` seconds), then stop recording."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every recorded change is written; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._dirty and not self._busy, timeout)

    def _busy_recording(self) -> bool:
        """Whether a burst of records is still on (the last one less than ``quiet`` seconds ago) and the
        oldest unwritten change can wait longer (less than ``max_delay`` seconds old). Caller holds the
        lock."""
        now = self._monotonic()
        return (
            not self._stopping
            and now < self._last_record + self._quiet
            and now < self._pending_since + self._max_delay
        )

    def _run(self) -> None:
        sweep_every = min(60.0, self._ttl / 4)
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._dirty or self._stopping, sweep_every)
                while self._dirty and self._busy_recording():  # record() does not wake us again
                    self._cond.wait(self._last_record + self._quiet - self._monotonic())
                stopping = self._stopping
            try:
                self.write_pending(yielding=not stopping)
                self.expire()
            except Exception:  # the recorder must not die of one surprise
                log.exception("writing events failed")
            if stopping:
                return


def _body(
    entry: _Entry,
    pod: Obj,
    kind: str,
    reason: str,
    message: str,
    component: str,
    host: str,
    field_path: str,
    now: float,
) -> Obj:
    """The Event object: the kubelet's legacy core/v1 shape (source, first/lastTimestamp, count), or the
    scheduler's events.k8s.io shape as core/v1 shows it (eventTime, reportingController, series)."""
    meta = pod.get("metadata") or {}
    involved: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": entry.namespace,
        "name": str(meta.get("name") or ""),
        "uid": str(meta.get("uid") or ""),
    }
    if meta.get("resourceVersion"):
        involved["resourceVersion"] = str(meta["resourceVersion"])
    if field_path:
        involved["fieldPath"] = field_path
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": entry.name, "namespace": entry.namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": kind,
    }
    if component == SCHEDULER:
        action = "Binding" if reason == "Scheduled" else "Scheduling"
        body.update(
            eventTime=rfc3339(now, micro=True),
            firstTimestamp=None,
            lastTimestamp=None,
            source={},
            action=action,
            reportingComponent=SCHEDULER,
            reportingInstance=f"{SCHEDULER}-{host or 'local'}",
        )
    else:
        stamp = rfc3339(now)
        body.update(
            firstTimestamp=stamp,
            lastTimestamp=stamp,
            count=1,
            source={"component": component, **({"host": host} if host else {})},
            reportingComponent=component,
            reportingInstance=host,
        )
    return body


def _with_count(body: Obj, count: int, last: float) -> Obj:
    if count > 1:
        body.update(_count_patch(body, count, last))
    return body


def _count_patch(body: Obj, count: int, last: float) -> dict[str, Any]:
    if body.get("eventTime"):  # events.k8s.io style: repeats are a series
        return {"series": {"count": count, "lastObservedTime": rfc3339(last, micro=True)}}
    return {"count": count, "lastTimestamp": rfc3339(last)}
