"""Support for the contract tests: the :class:`Control` interface and the watch :class:`StreamReader`."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from k8s_backend.kube.port import PODS, ForbiddenError, KubernetesApi, Obj, Resource, WatchEvent, WatchStream
from k8s_backend.testing import FakeKubernetes

EVENT_TIMEOUT = 5.0
QUIET_PERIOD = 1.0
"""Without bookmarks on demand, a stream is drained once no event came for this long."""


class Control(Protocol):
    """Server-side actions available to contract tests, whatever the adapter.

    A real API server offers only some of them: its Control skips the test at an action it lacks.
    """

    bookmarks_on_demand: bool
    """Whether :meth:`send_bookmark` works (else :meth:`StreamReader.drain` waits for quiet)."""

    def fail_next(
        self, verb: str, resource: Resource | None = None, *, status: int = 500, count: int = 1
    ) -> None:
        """The next ``count`` matching requests are answered with ``status``."""
        ...

    def compact(self) -> None:
        """Forget the event history: watching from any earlier resourceVersion answers 410."""
        ...

    def set_pod_status(self, namespace: str, name: str, status: Obj) -> None:
        """Replace a pod's status, as a kubelet does."""
        ...

    def drop_watches(self) -> None:
        """The server closes every open watch."""
        ...

    def send_bookmark(self) -> None:
        """Send a BOOKMARK to every open watch that allows bookmarks."""
        ...

    def wait_for_watches(self, count: int, timeout: float = EVENT_TIMEOUT) -> None:
        """Return once the server has at least ``count`` open watches (fail after ``timeout``)."""
        ...


class FakeControl:
    """:class:`Control` over a FakeKubernetes in this process."""

    bookmarks_on_demand = True

    def __init__(self, fake: FakeKubernetes) -> None:
        self.fake = fake

    def fail_next(
        self, verb: str, resource: Resource | None = None, *, status: int = 500, count: int = 1
    ) -> None:
        self.fake.fail_next(verb, resource, status=status, count=count)

    def compact(self) -> None:
        self.fake.compact()

    def set_pod_status(self, namespace: str, name: str, status: Obj) -> None:
        self.fake.patch_status(PODS, namespace, name, status)

    def drop_watches(self) -> None:
        self.fake.drop_watches()

    def send_bookmark(self) -> None:
        self.fake.send_bookmark()

    def wait_for_watches(self, count: int, timeout: float = EVENT_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while self.fake.open_watches() < count:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"expected {count} open watches, the server has {self.fake.open_watches()}"
                )
            time.sleep(0.01)  # only for adapters that open their watch lazily; the fake never waits here


GC_TIMEOUT = 30.0
"""A real server's garbage collector and namespace controller work asynchronously: seconds, not calls."""

_T = TypeVar("_T")


def eventually(probe: Callable[[], _T], expected: _T, timeout: float = GC_TIMEOUT) -> None:
    """Wait until ``probe()`` returns ``expected``: what a controller does happens some time after the call
    that triggers it (at once on the fakes, a moment later on a real server)."""
    deadline = time.monotonic() + timeout
    while (value := probe()) != expected:
        if time.monotonic() > deadline:
            raise AssertionError(f"still {value!r} after {timeout} s, expected {expected!r}")
        time.sleep(0.05)


def create_pod_in_new_namespace(api: KubernetesApi, namespace: str, body: Obj) -> Obj:
    """Create a pod in a namespace just created: a real server refuses pods (403, "error looking up
    service account") until the controller manager has made the namespace's ``default`` ServiceAccount."""
    deadline = time.monotonic() + GC_TIMEOUT
    while True:
        try:
            return api.create(PODS, namespace, body)
        except ForbiddenError as error:
            if "service account" not in error.message or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


_END = object()


class StreamReader:
    """Iterates a watch stream on a thread; tests take events with a timeout."""

    def __init__(self, stream: WatchStream, control: Control, live: Callable[[], int]) -> None:
        self.stream = stream
        self._control = control
        self._live = live
        self._queue: queue.Queue[object] = queue.Queue()
        self.ended = False
        self.closed = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="contract-watch-reader")
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self.stream:
                self._queue.put(event)
        except BaseException as error:  # handed to the test thread
            self._queue.put(error)
        finally:
            self._queue.put(_END)

    def _next(self, timeout: float) -> WatchEvent | None:
        """The next event, or None when the stream ended (its error, if any, in :attr:`error`)."""
        if self.ended:
            return None
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no watch event within {timeout} s") from None
        if isinstance(item, BaseException):
            self.error = item
            item = self._queue.get(timeout=timeout)
        if item is _END:
            self.ended = True
            return None
        assert isinstance(item, WatchEvent)
        return item

    def take(
        self, count: int, *, timeout: float = EVENT_TIMEOUT, bookmarks: bool = False
    ) -> list[WatchEvent]:
        """The next ``count`` events (BOOKMARKs skipped unless ``bookmarks``); fails if the stream ends."""
        events: list[WatchEvent] = []
        while len(events) < count:
            event = self._next(timeout)
            if event is None:
                raise AssertionError(f"the stream ended after {events} (error: {self.error!r})")
            if event.type != "BOOKMARK" or bookmarks:
                events.append(event)
        return events

    def drain(self) -> list[WatchEvent]:
        """Every event delivered so far: a bookmark is requested and events are read up to it.

        A server that sends bookmarks only on its own schedule is read until it has been quiet for
        :data:`QUIET_PERIOD` (its BOOKMARKs skipped).
        """
        self._control.wait_for_watches(self._live())
        if not self._control.bookmarks_on_demand:
            return self._until_quiet()
        self._control.send_bookmark()
        events: list[WatchEvent] = []
        while True:
            event = self._next(EVENT_TIMEOUT)
            if event is None:
                raise AssertionError(f"the stream ended before the bookmark, after {events} ({self.error!r})")
            if event.type == "BOOKMARK":
                return events
            events.append(event)

    def _until_quiet(self) -> list[WatchEvent]:
        events: list[WatchEvent] = []
        while True:
            try:
                event = self._next(QUIET_PERIOD)
            except AssertionError:  # nothing for QUIET_PERIOD: everything delivered has been read
                return events
            if event is None:
                raise AssertionError(f"the stream ended while draining, after {events} ({self.error!r})")
            if event.type != "BOOKMARK":
                events.append(event)

    def wait_end(self, timeout: float = EVENT_TIMEOUT) -> list[WatchEvent]:
        """Read until the stream ends; the events read on the way."""
        events: list[WatchEvent] = []
        while (event := self._next(timeout)) is not None:
            events.append(event)
        return events

    def close(self) -> None:
        self.closed = True
        self.stream.close()
        self._thread.join(EVENT_TIMEOUT)
