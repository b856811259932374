"""Following the driver's log while cluster mode waits (``k8s-backend submit --follow-log``).

Two sources: the log file the local cluster's kubelet writes (``pyk8s://local``), and the API's
``pods/log`` stream, used when the API adapter offers a ``pod_log(namespace, name, container=...,
follow=True)`` method returning text lines. Lines are copied to the output by a background thread
that stops once the driver ended and the log is drained.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from k8s_backend.kube.port import ApiError

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2


class LogSource(Protocol):
    """Lines of a container log, from the start, until ``stop`` is set and nothing more is buffered."""

    def lines(self, stop: threading.Event) -> Iterator[str]: ...


class FileLogSource:
    """Tail a log file whose path becomes known once the kubelet started the container."""

    def __init__(self, locate: Callable[[], Path | None], *, poll: float = POLL_SECONDS) -> None:
        self._locate = locate
        self._poll = poll

    def lines(self, stop: threading.Event) -> Iterator[str]:
        while True:
            path = self._locate()
            if path is not None and path.exists():
                break
            if stop.is_set():
                return
            stop.wait(self._poll)
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            pending = ""
            while True:
                chunk = handle.readline()
                if chunk:
                    pending += chunk
                    if pending.endswith("\n"):
                        yield pending.rstrip("\n")
                        pending = ""
                    continue
                if stop.is_set():
                    if pending:
                        yield pending
                    return
                stop.wait(self._poll)


class ApiLogSource:
    """The ``pods/log`` stream of an API adapter that has a ``pod_log`` method.

    While the container has not started (the API answers 400 "is waiting to start": a Pending driver,
    an image pull), the stream is opened again every ``poll`` seconds until ``stop`` is set.
    """

    def __init__(
        self,
        pod_log: Callable[..., Iterator[str]],
        namespace: str,
        name: str,
        container: str,
        *,
        poll: float = POLL_SECONDS,
    ) -> None:
        self._pod_log = pod_log
        self._args = (namespace, name)
        self._container = container
        self._poll = poll

    def lines(self, stop: threading.Event) -> Iterator[str]:
        while True:
            try:
                stream = iter(self._pod_log(*self._args, container=self._container, follow=True))
                first = next(stream, None)
            except ApiError as error:
                if error.status != 400 or stop.is_set():
                    raise
                log.debug("The driver's log is not there yet: %s", error)
                stop.wait(self._poll)
                continue
            if first is None:
                return
            yield first
            for line in stream:
                yield line
                if stop.is_set():
                    return
            return


def api_log_source(api: Any, namespace: str, name: str, container: str) -> ApiLogSource | None:
    """An :class:`ApiLogSource` if the adapter can stream pod logs, else None."""
    pod_log = getattr(api, "pod_log", None)
    return ApiLogSource(pod_log, namespace, name, container) if callable(pod_log) else None


class LogFollower:
    """Copies a :class:`LogSource` to ``out`` on a daemon thread; :meth:`finish` drains and joins."""

    def __init__(self, source: LogSource, out: Callable[[str], None]) -> None:
        self._source = source
        self._out = out
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="driver-log", daemon=True)

    def start(self) -> LogFollower:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for line in self._source.lines(self._stop):
                self._out(line)
        except Exception as error:  # a log stream failing must not fail the submission
            log.warning("Stopped following the driver log: %s", error)

    def finish(self, timeout: float = 5.0) -> None:
        """Stop once the log is drained (waiting at most ``timeout`` seconds)."""
        self._stop.set()
        self._thread.join(timeout)
