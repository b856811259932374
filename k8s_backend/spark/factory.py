"""Creates the Python backend when Spark creates the JVM backend for a ``pyk8s://`` master.

An instance is installed in the driver JVM (``PyK8sClusterManager.install``) before the SparkContext is
created; the JVM calls :meth:`BackendFactory.create` from the SparkContext constructor. It reads the
context's Spark properties, leases this process's warm local cluster for ``pyk8s://local``
(:mod:`k8s_backend.local.warm`: started by the first context, reused by later ones), and builds the
backend with a :class:`JvmDriverEndpoint` as its driver.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from k8s_backend.common.failure_sink import FAILURE_RECORD
from k8s_backend.common.signals import signals_held
from k8s_backend.local.warm import process_pool
from k8s_backend.spark.bridge import (
    DEFAULT_STOP_TIMEOUT,
    BackendHooks,
    JvmDriverEndpoint,
    PythonBackendCallbacks,
)
from k8s_backend.spark.master import MasterKind, PyK8sMaster, is_pyk8s, parse_master

log = logging.getLogger(__name__)

LOCAL_IMAGE_KEY = "spark.kubernetes.container.image"


# How a backend is built: called as ``KubernetesClusterSchedulerBackend.create`` is, with the Spark
# properties and the keywords app_id, driver_url, api (None: from the properties) and driver.
BackendCreator = Callable[..., BackendHooks]


def default_creator() -> BackendCreator:
    from k8s_backend.assembly.wiring import KubernetesClusterSchedulerBackend

    create: BackendCreator = KubernetesClusterSchedulerBackend.create
    return create


def new_app_id() -> str:
    """Spark's Kubernetes application id form: ``spark-`` and 32 hex digits."""
    return "spark-" + uuid.uuid4().hex


# Executor JVMs of pyk8s://local share this host's few cores with the driver: C1 only and the serial
# collector start them in about two thirds of the time (README, Performance), and local work is small.
LOCAL_EXECUTOR_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def local_defaults(image: str) -> dict[str, str]:
    """Properties a ``pyk8s://local`` driver needs unless the user set them: executors run on this host,
    with JVM options that start them fast (any ``spark.executor.extraJavaOptions``, even empty, replaces
    :data:`LOCAL_EXECUTOR_JAVA_OPTIONS`)."""
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        LOCAL_IMAGE_KEY: image,
        "spark.executor.extraJavaOptions": LOCAL_EXECUTOR_JAVA_OPTIONS,
    }


def backend_properties(
    conf: Mapping[str, str], master: PyK8sMaster, local_api_server: str = ""
) -> dict[str, str]:
    """The Spark properties the backend reads: ``spark.master`` names the API server as ``k8s://URL``,
    or is absent for the kubeconfig/in-cluster default."""
    properties = dict(conf)
    backend_master = master.backend_master(local_api_server)
    if backend_master is None:
        properties.pop("spark.master", None)
    else:
        properties["spark.master"] = backend_master
    return properties


class BackendFactory:
    """The Py4J callback object behind the JVM's ``PythonBackendFactory`` interface.

    :param create_backend: builds the backend (default ``KubernetesClusterSchedulerBackend.create``).
    :param local_cluster: makes the cluster for ``pyk8s://local``, a context manager entered here and
        exited after the backend stopped (default: a lease of this process's warm cluster,
        :func:`k8s_backend.local.warm.process_pool`, which outlives the context but not its pods).
    """

    class Java:
        implements = ["io.k8sbackend.bridge.PythonBackendFactory"]

    def __init__(
        self,
        create_backend: BackendCreator | None = None,
        *,
        local_cluster: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
    ) -> None:
        self._create_backend = create_backend
        self._local_cluster = local_cluster
        self._stop_timeout = stop_timeout
        self.last_error: Exception | None = None
        self.current: PythonBackendCallbacks | None = None
        self.local: Any = None  # the running local cluster, for pyk8s://local
        self.made_a_backend = False  # whether a SparkContext got as far as creating a backend here

    def create(
        self, java_backend: Any, master_url: str, conf_json: str, driver_url: str
    ) -> PythonBackendCallbacks:
        """Called by the JVM; a raised error fails the SparkContext with its message."""
        self.last_error = None
        try:
            callbacks = self._create(java_backend, master_url, json.loads(conf_json), driver_url)
        except Exception as error:
            self.last_error = error
            log.error(
                "k8s_backend could not create its backend for %s: %s", master_url, error, extra=FAILURE_RECORD
            )
            raise
        self.current = callbacks
        self.made_a_backend = True
        return callbacks

    def _create(
        self, java_backend: Any, master_url: str, conf: dict[str, str], driver_url: str
    ) -> PythonBackendCallbacks:
        master = parse_master(master_url)
        resources = contextlib.ExitStack()
        try:
            api: Any = None
            local_url = ""
            namespace = conf.get("spark.kubernetes.namespace", "default")
            if master.kind is MasterKind.LOCAL:
                cluster = resources.enter_context(self._make_local_cluster())
                resources.callback(self._forget_local)
                self.local = cluster
                api = cluster.api(namespace)
                if self._local_cluster is None:
                    resources.callback(api.close)  # the warm cluster outlives this context's client
                local_url = cluster.url
            properties = backend_properties(conf, master, local_url)
            app_id = properties.get("spark.app.id") or new_app_id()
            if master.kind is MasterKind.LOCAL and self._local_cluster is None:
                # Before the lease is returned (LIFO): the warm cluster keeps none of this context's pods.
                resources.callback(process_pool().forget_pods_of, self.local, app_id, namespace)
            creator = self._create_backend or default_creator()
            driver = JvmDriverEndpoint(java_backend)
            backend = creator(properties, app_id=app_id, driver_url=driver_url, api=api, driver=driver)
            log.info("Backend %s created for %s (executors reach %s)", app_id, master_url, driver_url)
            # Registered after the local cluster's own exit hook, so it runs first (atexit is LIFO):
            # the backend deletes its pods while the cluster still answers.
            atexit.unregister(self.stop_at_exit)
            atexit.register(self.stop_at_exit)
            return PythonBackendCallbacks(
                backend,
                conf=properties,
                on_stopped=resources.close,
                tell_stopped=driver.backend_stopped,
                stop_timeout=self._stop_timeout,
            )
        except BaseException:
            resources.close()
            raise

    def failure(self) -> str | None:
        """Why k8s_backend failed the application: its backend could not be made, or the backend gave up
        (an executor image cannot be pulled, a Hard gang timed out, too many executors failed)."""
        if self.last_error is not None:
            return str(self.last_error)
        current = self.current
        reason = getattr(current.backend, "failure_reason", None) if current is not None else None
        return str(reason) if reason else None

    def stop_leftover(self) -> None:
        """Stop the backend this factory made unless it was stopped already, and wait for it.

        Nothing else stops it when its SparkContext failed to start, or when a signal ended the driver
        script before the context was made: its executor pods would be left behind.
        """
        current = self.current
        if current is not None and not current.stopped:
            log.info("Stopping the Kubernetes backend that no SparkContext stopped")
            current.stop()

    def stop_at_exit(self) -> None:
        """At interpreter exit: stop a running ``pyk8s://`` SparkContext, then any backend left over.

        Also after an exception in the driver script, and after SIGTERM or SIGHUP
        (:func:`k8s_backend.common.signals.exit_on_termination`). Those signals and SIGINT are ignored
        meanwhile: a second one must not cut the cleanup short.
        """
        with signals_held():
            stop_active_context()
            self.stop_leftover()

    def _make_local_cluster(self) -> contextlib.AbstractContextManager[Any]:
        if self._local_cluster is not None:
            return self._local_cluster()
        return process_pool().lease()

    def _forget_local(self) -> None:
        self.local = None


def stop_active_context() -> None:
    """At interpreter exit, stop a ``pyk8s://`` SparkContext left running, so its executors are removed."""
    from pyspark.core.context import SparkContext

    context = SparkContext._active_spark_context
    if context is None or not is_pyk8s(context.master):
        return
    log.info("Stopping the SparkContext at exit so that its executors are removed")
    try:
        context.stop()
    except Exception as error:
        if jvm_unreachable(error):
            # The JVM died first: the backend left over is stopped from here (stop_leftover).
            log.info("The driver JVM is gone (%s); the Kubernetes backend stops without it", error)
        else:
            log.warning("Could not stop the SparkContext at exit", exc_info=True)


def jvm_unreachable(error: BaseException) -> bool:
    """Whether a call into the JVM failed because the JVM cannot be reached (it died or exited)."""
    from py4j.protocol import Py4JNetworkError

    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (Py4JNetworkError, ConnectionError, EOFError)):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
