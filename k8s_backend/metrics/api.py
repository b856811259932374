"""A decorator over the Kubernetes port that counts and times every request, whatever the adapter.

It wraps the API the backend uses (the official client, InMemoryKubernetes, anything else), so every part
is covered without any of them knowing. Adapters retry 429, 5xx and connection errors themselves: what
is counted here is what a caller saw, once those retries were spent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from k8s_backend.kube.delegate import DelegatingKubernetesApi
from k8s_backend.kube.port import (
    PODS,
    ApiError,
    ConflictError,
    KubernetesApi,
    Resource,
    WatchEvent,
    WatchStream,
    is_retryable,
)
from k8s_backend.metrics.registry import BackendMetrics

_T = TypeVar("_T")

SUCCESS_CODES = {"create": "201"}  # the status the port does not return: the verb's usual success


def _code(error: BaseException) -> str:
    return str(error.status) if isinstance(error, ApiError) else "0"


def creation_result(error: BaseException | None) -> str:
    """An executor pod create's result label: ``created``, ``conflict`` (the name exists: a retried
    create that reached the server, which the allocator adopts), ``retryable`` (429, 5xx, no answer:
    asked again later) or ``refused`` (any other error: counts against spark.executor.maxNumFailures)."""
    if error is None:
        return "created"
    if isinstance(error, ConflictError):
        return "conflict"
    return "retryable" if is_retryable(error) else "refused"


class InstrumentedKubernetesApi(DelegatingKubernetesApi):
    """Any :class:`KubernetesApi`, with ``k8s_backend_api_requests_total`` and its latency histogram."""

    def __init__(self, api: KubernetesApi, metrics: BackendMetrics) -> None:
        super().__init__(api)
        self._metrics = metrics
        self._clock: Callable[[], float] = time.perf_counter

    def around(self, verb: str, resource: Resource, call: Callable[[], _T]) -> _T:
        started = self._clock()
        code = SUCCESS_CODES.get(verb, "200")
        error: BaseException | None = None
        try:
            return call()
        except BaseException as raised:
            error, code = raised, _code(raised)
            raise
        finally:
            self._count(verb, resource, code, started)
            if verb == "create" and resource == PODS:
                self._metrics.pod_creations.labels(creation_result(error)).inc()

    def _count(self, verb: str, resource: Resource, code: str, started: float) -> None:
        self._metrics.api_latency.labels(verb, resource.plural).observe(self._clock() - started)
        self._metrics.api_requests.labels(verb, resource.plural, code).inc()

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> WatchStream:
        # A watch is counted when it ends: a 410 Gone or a 500 comes inside the stream, not at its opening.
        started = self._clock()
        try:
            stream = self.wrapped.watch(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_bookmarks=allow_bookmarks,
                send_initial_events=send_initial_events,
            )
        except BaseException as error:
            self._count("watch", resource, _code(error), started)
            raise
        self._metrics.api_latency.labels("watch", resource.plural).observe(self._clock() - started)
        requests = self._metrics.api_requests
        return _CountedStream(stream, lambda code: requests.labels("watch", resource.plural, code).inc())


class _CountedStream:
    """A watch stream that reports its request's code once, when it ends: the code of the error that
    ended it (410, 500, 0), else 200 (the server's timeout, or the client's close)."""

    def __init__(self, stream: WatchStream, report: Callable[[str], None]) -> None:
        self._stream = stream
        self._report = report
        self._lock = threading.Lock()
        self._reported = False

    def _end(self, code: str) -> None:
        with self._lock:
            if self._reported:
                return
            self._reported = True
        self._report(code)

    def __iter__(self) -> Iterator[WatchEvent]:
        try:
            yield from self._stream
        except BaseException as error:
            self._end(_code(error) if isinstance(error, Exception) else "200")
            raise
        self._end("200")

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._end("200")
