"""The watch-backed view of a namespace's ResourceQuotas and LimitRanges, read by quota-aware allocation.

Each kind is listed once (with its resourceVersion), then watched from there on a thread of its own, so
an allocation round reads the view with no request: a list at the first round that wants pods (and one of
the LimitRanges once a quota exists), then open watches the server renews every few minutes, instead of
one or two lists per round. The quota
controller and the quota admission update a quota's ``status.used`` as pods come and go; those updates
arrive as MODIFIED events.

A watch cycle follows :mod:`k8s_backend.snapshots.watch_source`'s rules, with its back-off and constants:
resume from the newest version seen (bookmarks included), re-list at once after 410 Gone, back off on
errors (the short one for transient API errors, the long one for a server that misbehaves silently),
and never die silently. A relist can also come from the round's thread (:meth:`QuotaWatch.refresh`,
after the API server refused a create over quota): events older than the newest version applied are
then skipped, so a watch that was behind cannot bring back an older state.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from k8s_backend.common import Clock
from k8s_backend.kube.port import (
    ApiError,
    ForbiddenError,
    GoneError,
    KubernetesApi,
    Obj,
    Resource,
    UnauthorizedError,
    WatchEvent,
)
from k8s_backend.kube.resource_version import newer, parse_resource_version
from k8s_backend.kube.retry import caller_retries
from k8s_backend.kube.watch_backoff import failure_delay, misbehaving_delay
from k8s_backend.kube.watch_stop import end_watch
from k8s_backend.snapshots.watch_source import DEFAULT_SERVER_TIMEOUT, SHORT_WATCH

log = logging.getLogger(__name__)

RESOURCE_QUOTAS = Resource("ResourceQuota", "resourcequotas")
LIMIT_RANGES = Resource("LimitRange", "limitranges")


class ObjectsReflector:
    """The objects of one kind in one namespace, by name, kept current by list + watch.

    :meth:`relist` lists now (any thread); :meth:`run_once` is one watch cycle (list first if the version
    was lost); :meth:`start` runs the cycles on a daemon thread until :meth:`stop`.
    """

    def __init__(
        self,
        api: KubernetesApi,
        resource: Resource,
        namespace: str,
        clock: Clock,
        *,
        server_timeout: int = DEFAULT_SERVER_TIMEOUT,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._api = api
        self.resource = resource
        self._namespace = namespace
        self._clock = clock
        self._server_timeout = server_timeout
        self._rng = rng
        self._lock = threading.Lock()  # the objects and the version: the watch's thread vs the rounds
        self._objects: dict[str, Obj] = {}
        self._version: str | None = None  # the newest version applied (list, event or bookmark)
        self._watch_from: str | None = None  # where the next watch starts; None: list first
        self._stop = threading.Event()
        self._stream: object | None = None
        self._thread: threading.Thread | None = None
        self._failures = 0
        self.lists = 0
        self.watches = 0
        self.events = 0
        self.forbidden: str | None = None  # the watch was refused: the view is kept by relists only
        self.last_error: str | None = None

    # -- the view ------------------------------------------------------------------------------------

    def objects(self) -> list[Obj]:
        with self._lock:
            return list(self._objects.values())

    @property
    def version(self) -> int | None:
        """The newest resourceVersion applied, as a number (None when unknown)."""
        with self._lock:
            return parse_resource_version(self._version)

    def relist(self) -> None:
        """List now and replace the view; raises the list's :class:`ApiError`."""
        with caller_retries():  # the callers retry: the round's next cap, or this watch's cycle
            listed = self._api.list(self.resource, self._namespace)
        with self._lock:
            self.lists += 1
            if self._watch_from is None:
                self._watch_from = listed.resource_version
            if self._version is not None and newer(self._version, listed.resource_version):
                return  # the watch already applied a newer state than this list's
            self._objects = {_name(obj): obj for obj in listed.items}
            self._version = self._watch_from = listed.resource_version

    def apply(self, event: WatchEvent) -> None:
        """Apply one watch event: an event known not to be newer than the version applied is skipped (a
        relist from another thread got there first); a bookmark only moves the version."""
        version = (event.object.get("metadata") or {}).get("resourceVersion")
        with self._lock:
            if version and (version == self._version or newer(self._version, version)):
                return  # a relist from another thread already holds this state, or a newer one
            if version:
                self._version = self._watch_from = str(version)
            if event.type == "BOOKMARK":
                return
            self.events += 1
            if event.type == "DELETED":
                self._objects.pop(_name(event.object), None)
            else:
                self._objects[_name(event.object)] = event.object

    # -- the watch's cycles ------------------------------------------------------------------------------

    def start(self) -> None:
        """Watch on a daemon thread (after a first :meth:`relist`, from its version)."""
        if self._thread is not None or self._stop.is_set():
            return
        name = f"k8s-{self.resource.plural}-watch"
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set() and self.forbidden is None:
            started, events, lists = self._clock.now(), self.events, self.lists
            delay = self.run_once()
            if self._stop.is_set():
                break  # stop() closed the stream: not a watch closed by the server
            empty = self.events == events and self.lists == lists
            if delay == 0 and empty and self._clock.now() - started < SHORT_WATCH:
                self._failures += 1  # a server that closes every watch at once must not be hammered
                delay = self._backoff()
                log.warning("%s watch closed at once with no events; retrying in %.1fs", self._kind, delay)
            if delay > 0:
                self._stop.wait(delay)

    @property
    def _kind(self) -> str:
        return self.resource.kind

    def run_once(self) -> float:
        """One cycle: list if the version was lost, then consume one watch stream. The delay before the
        next cycle (0: at once)."""
        try:
            with self._lock:
                must_list = self._watch_from is None
            if must_list:
                self.relist()
            self._watch()
        except GoneError:
            with self._lock:
                self._watch_from = None
            if must_list:  # 410 for the version a list just returned: back off, do not spin
                self._failures += 1
                return self._backoff()
            log.info("%s watch expired (410 Gone); re-listing", self._kind)
            return 0.0
        except (ForbiddenError, UnauthorizedError) as error:
            self.forbidden = str(error)
            log.warning(
                "Cannot watch the namespace's %ss (%s): they are listed at every round that creates pods "
                "instead. To fix: grant the driver watch on %s.",
                self._kind,
                error,
                self.resource.plural,
            )
            return 0.0
        except Exception as error:  # the watch must survive anything, and say so
            return self._failed(error)
        self._failures = 0
        return 0.0

    def _failed(self, error: Exception) -> float:
        self._failures += 1
        self.last_error = str(error)
        delay = failure_delay(self._failures, error, self._rng())
        level = logging.WARNING if isinstance(error, ApiError) else logging.ERROR
        log.log(level, "%s watch failed (%s); retrying in %.1fs", self._kind, error, delay)
        return delay

    def _watch(self) -> None:
        if self._stop.is_set():
            return
        with self._lock:
            start_from = self._watch_from
        with caller_retries():
            stream = self._api.watch(
                self.resource,
                self._namespace,
                resource_version=start_from,
                timeout_seconds=int(self._server_timeout * (1 + self._rng() * 0.1)),
                allow_bookmarks=True,
            )
        self.watches += 1
        with self._lock:
            self._stream = stream
        try:
            with caller_retries():
                for event in stream:
                    self.apply(event)
                    if self._stop.is_set():
                        break
        finally:
            with self._lock:
                self._stream = None
            stream.close()

    def _backoff(self) -> float:
        return misbehaving_delay(self._failures, self._rng())

    def stop(self, timeout: float = 5.0) -> None:
        """Close the watch and wait for its thread to end."""
        self._stop.set()
        with self._lock:
            stream = self._stream
        end_watch(stream, self._thread, f"{self._kind} watch", timeout)

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called (a caller driving :meth:`run_once` stops then too)."""
        return self._stop.is_set()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


Starter = Callable[[ObjectsReflector], None]
"""How a reflector's watch runs once listed: on its own thread (:meth:`ObjectsReflector.start`), or, in
tests, as steps a deterministic scheduler runs."""


class QuotaWatch:
    """The namespace's ResourceQuotas and LimitRanges: listed once, then watched (see the module doc).

    The LimitRanges matter only for a quota to count against, so they are listed and watched from the
    first round that finds a quota: a namespace without quotas costs one list and one watch in all."""

    def __init__(
        self,
        api: KubernetesApi,
        namespace: str,
        clock: Clock,
        *,
        starter: Starter = ObjectsReflector.start,
    ) -> None:
        self.quotas = ObjectsReflector(api, RESOURCE_QUOTAS, namespace, clock)
        self.limit_ranges = ObjectsReflector(api, LIMIT_RANGES, namespace, clock)
        self.starter = starter
        self._lock = threading.Lock()
        self._started: set[str] = set()  # the plurals listed and watched
        self._stopped = False

    def ensure_started(self) -> None:
        """At the first call, list the quotas and start watching them; raises the list's
        :class:`ApiError` (the next call tries again). Later calls send nothing, unless the server
        refused the watch: then the quotas are listed at every call."""
        self._ensure(self.quotas)

    def ensure_limit_ranges(self) -> None:
        """:meth:`ensure_started` for the LimitRanges (once a quota exists)."""
        self._ensure(self.limit_ranges)

    def _ensure(self, reflector: ObjectsReflector) -> None:
        plural = reflector.resource.plural
        with self._lock:
            if self._stopped:
                return
            started = plural in self._started
        if started:
            if reflector.forbidden is not None:
                reflector.relist()
            return
        reflector.relist()
        with self._lock:
            if self._stopped or plural in self._started:
                return
            self._started.add(plural)
        self.starter(reflector)

    def refresh(self) -> None:
        """List the quotas now (their watch may be behind what the API server admitted)."""
        self.quotas.relist()

    def stop(self) -> None:
        """Stop both watches (nothing is started afterwards)."""
        with self._lock:
            self._stopped = True
        self.quotas.stop()
        self.limit_ranges.stop()

    @property
    def lists(self) -> int:
        return self.quotas.lists + self.limit_ranges.lists

    @property
    def watches(self) -> int:
        return self.quotas.watches + self.limit_ranges.watches

    def status(self) -> dict[str, object]:
        return {
            "lists": self.lists,
            "watches": self.watches,
            "events": self.quotas.events + self.limit_ranges.events,
            "watching": self.quotas.alive,
            "quota_version": self.quotas.version,
            "last_error": self.quotas.last_error or self.limit_ranges.last_error,
        }
