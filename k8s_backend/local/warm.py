"""One warm local cluster per process, lent to successive ``pyk8s://local`` contexts.

Starting a :class:`~k8s_backend.local.cluster.LocalCluster` (API server, kubelet) for every SparkContext
made each context pay for it: a test suite that creates one context per test class paid it many times.
:class:`WarmLocalCluster` starts the cluster on the first lease and keeps it for the next one. A
returned lease waits until the pods of the application that used it are gone (their processes
stopped), so nothing of a stopped context is left on the kept cluster.

The cluster stops at interpreter exit (its own ``atexit`` hook), or once no context has used it for
``idle_timeout`` seconds (:data:`IDLE_TIMEOUT_ENV`, default :data:`DEFAULT_IDLE_TIMEOUT`; ``0`` stops it
with each context, as before this module existed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import PODS

log = logging.getLogger(__name__)

IDLE_TIMEOUT_ENV = "K8S_BACKEND_LOCAL_IDLE_TIMEOUT"
DEFAULT_IDLE_TIMEOUT = 300.0  # seconds: a pause between test modules or notebook cells, not a whole day
POD_GONE_TIMEOUT = 30.0  # seconds for a stopped context's pods to be deleted and their processes ended
APP_LABEL = "spark-app-selector"


class Cancel(Protocol):
    def __call__(self) -> None: ...


# Runs a callable after a delay (seconds) on another thread; returns what cancels it.
Timer = Callable[[float, Callable[[], None]], Cancel]


def thread_timer(delay: float, action: Callable[[], None]) -> Cancel:
    """The default :data:`Timer`: a daemon ``threading.Timer`` (it must not keep the interpreter alive)."""
    timer = threading.Timer(delay, action)
    timer.daemon = True
    timer.start()
    return timer.cancel


def idle_timeout_from_env(environ: dict[str, str] | None = None) -> float:
    """Seconds from :data:`IDLE_TIMEOUT_ENV`, or the default; a clear error for a bad value."""
    value = (environ if environ is not None else dict(os.environ)).get(IDLE_TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_IDLE_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if seconds < 0 or seconds != seconds:  # also NaN
        raise ConfigError(
            f"{IDLE_TIMEOUT_ENV}={value!r}: give the seconds a pyk8s://local cluster is kept without "
            "contexts, e.g. 300, or 0 to stop it with each context",
            key=IDLE_TIMEOUT_ENV,
            value=value,
        )
    return seconds


class WarmLocalCluster:
    """Lends one started cluster to successive users; stops it when idle for ``idle_timeout`` seconds.

    :param make: makes a new (not started) cluster; it must have ``start()``, ``stop()``, ``api()`` and
        ``wait_until(predicate, timeout)`` as :class:`~k8s_backend.local.cluster.LocalCluster` has.
    :param idle_timeout: seconds without a lease before the cluster stops (None: read
        :data:`IDLE_TIMEOUT_ENV` at each lease, so that a bad value fails the context's start).
    :param timer: schedules the idle stop (tests inject a manual one).
    """

    def __init__(
        self,
        make: Callable[[], Any],
        *,
        idle_timeout: float | None = None,
        timer: Timer = thread_timer,
    ) -> None:
        self._make = make
        self._idle_timeout = idle_timeout
        self._timer = timer
        self._lock = threading.Lock()
        self._cluster: Any = None
        self._leases = 0
        self._cancel_idle: Cancel | None = None
        self._timeout = DEFAULT_IDLE_TIMEOUT  # the one read at the latest lease
        self.started = 0  # how many clusters this pool started (for tests and the benchmark)

    @property
    def cluster(self) -> Any:
        """The kept cluster, or None."""
        return self._cluster

    @contextlib.contextmanager
    def lease(self) -> Iterator[Any]:
        """The running cluster (started now if there is none) for one context."""
        cluster = self._acquire()
        try:
            yield cluster
        finally:
            self._release(cluster)

    def forget_pods_of(self, cluster: Any, app_id: str, namespace: str) -> bool:
        """Wait until no pod of ``app_id`` is left in ``namespace`` (the kubelet ended its processes).
        Returns False, after a warning, if some were still there after :data:`POD_GONE_TIMEOUT`."""
        selector = f"{APP_LABEL}={app_id}"
        try:
            admin = cluster.fake  # the embedded server's in-memory API: no HTTP client to make and close
        except RuntimeError:  # a real control plane
            admin = cluster.api(namespace)

        def gone() -> bool:
            return not admin.list(PODS, namespace, label_selector=selector).items

        if cluster.wait_until(gone, POD_GONE_TIMEOUT):
            return True
        log.warning("pods of %s still on the local cluster %.0fs after its stop", app_id, POD_GONE_TIMEOUT)
        return False

    def stop(self) -> None:
        """Stop the kept cluster now (leases still out keep a stopped cluster)."""
        with self._lock:
            cluster, self._cluster = self._cluster, None
            self._cancel_timer()
        if cluster is not None:
            log.info("stopping the warm pyk8s://local cluster")
            cluster.stop()

    def _acquire(self) -> Any:
        timeout = self._idle_timeout if self._idle_timeout is not None else idle_timeout_from_env()
        with self._lock:
            self._timeout = timeout
            self._cancel_timer()
            if self._cluster is None:
                cluster = self._make()
                cluster.start()
                self._cluster = cluster
                self.started += 1
            else:
                log.info("reusing the warm pyk8s://local cluster")
            self._leases += 1
            return self._cluster

    def _release(self, cluster: Any) -> None:
        with self._lock:
            timeout = self._timeout
            self._leases -= 1
            if self._leases > 0 or cluster is not self._cluster:
                return
            if timeout > 0:
                self._cancel_idle = self._timer(timeout, lambda: self._stop_if_idle(cluster))
                return
        self._stop_if_idle(cluster)

    def _stop_if_idle(self, cluster: Any) -> None:
        with self._lock:
            if self._leases > 0 or cluster is not self._cluster:
                return
            self._cluster = None
            self._cancel_idle = None
        cluster.stop()

    def _cancel_timer(self) -> None:
        if self._cancel_idle is not None:
            self._cancel_idle()
            self._cancel_idle = None


_process_pool: WarmLocalCluster | None = None
_pool_lock = threading.Lock()


def process_pool() -> WarmLocalCluster:
    """This process's pool of the embedded cluster ``pyk8s://local`` contexts use."""
    global _process_pool
    with _pool_lock:
        if _process_pool is None:
            from k8s_backend.local.cluster import LocalCluster

            _process_pool = WarmLocalCluster(LocalCluster)
        return _process_pool
