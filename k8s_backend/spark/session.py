"""SparkSessions whose executors are managed by k8s_backend.

:func:`session` is the explicit entry point. :func:`prepare` readies the driver JVM so that an
unmodified script's ``SparkSession.builder.getOrCreate()`` gets a ``pyk8s://`` context: it is what the
submit command runs before the user's script.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from k8s_backend.common.signals import exit_on_termination
from k8s_backend.errors import ApplicationFailedError, ConfigError
from k8s_backend.local.images import default_spark_image
from k8s_backend.spark.factory import BackendCreator, BackendFactory, local_defaults
from k8s_backend.spark.gateway import install_factory, jvm_stderr, launch, set_default_master
from k8s_backend.spark.jar import bridge_jar, installed_pyspark
from k8s_backend.spark.master import MasterKind, is_pyk8s, parse_master

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

Properties = Mapping[str, str]


def session(
    master: str,
    conf: Properties | Any | None = None,
    app_name: str | None = None,
    *,
    create_backend: BackendCreator | None = None,
) -> SparkSession:
    """A SparkSession whose cluster backend is k8s_backend's.

    :param master: ``pyk8s://https://HOST:PORT``, ``pyk8s://`` (kubeconfig or in-cluster) or
        ``pyk8s://local`` (an embedded local cluster, started and stopped with the session).
    :param conf: Spark properties, as a mapping or a ``pyspark.SparkConf``.
    :param app_name: ``spark.app.name``.
    :param create_backend: builds the Python backend (default
        ``KubernetesClusterSchedulerBackend.create``); for tests and alternative backends.

    Stop it with ``spark.stop()``: that deletes the executor pods (and stops a local cluster). Raises
    :class:`k8s_backend.ConfigError` for bad properties, before anything is created on the cluster,
    :class:`k8s_backend.ApplicationFailedError` when the backend gave up while the session started (an
    executor image that cannot be pulled, a Hard gang timeout), :class:`k8s_backend.spark.DriverStartError`
    when the driver JVM did not start (e.g. unresolvable ``spark.jars.packages``), and
    :class:`k8s_backend.spark.UnsupportedPysparkError` for a pyspark other than 4.x.
    """
    installed_pyspark()
    from pyspark.core.context import SparkContext
    from pyspark.sql import SparkSession

    properties = with_master_defaults(master, as_properties(conf))
    active = SparkContext._active_spark_context
    if active is not None:
        if active.master != master:
            raise ConfigError(
                f"a SparkContext with master {active.master!r} is already running in this process; "
                f"stop it (spark.stop()) before creating a session with master {master!r}",
                key="spark.master",
                value=master,
            )
        return SparkSession.builder.getOrCreate()
    factory = prepare(master, properties, create_backend=create_backend, default_master=False)
    builder = SparkSession.builder.master(master)
    if app_name:
        builder = builder.appName(app_name)
    for key, value in properties.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as error:
        if factory.last_error is not None:
            # The Python error that failed the JVM's backend says more than the Java stack around it.
            raise factory.last_error from None
        raise_config_error(properties, error)
        reason = factory.failure()
        if reason is not None:  # the backend gave up while the context started (image, gang timeout)
            raise ApplicationFailedError(reason) from error
        raise


def prepare(
    master: str,
    conf: Properties | None = None,
    *,
    create_backend: BackendCreator | None = None,
    default_master: bool = True,
    java_stacks: bool = True,
    quiet_failure: bool = False,
) -> BackendFactory:
    """Ready this process's driver JVM for a ``pyk8s://`` master and return the installed factory.

    Launches pyspark's JVM gateway with the bridge jar unless one already runs (which must then have the
    jar), starts the Py4J callback server and installs a :class:`BackendFactory`; in the main thread,
    SIGTERM and SIGHUP then end the process as an exception does (:mod:`k8s_backend.common.signals`). With
    ``default_master`` the master and ``conf`` become the JVM's defaults, as spark-submit's would: a
    plain ``SparkSession.builder.getOrCreate()`` then creates a context with k8s_backend's backend.
    A JVM that exits while it starts raises :class:`k8s_backend.spark.DriverStartError` with its reason;
    without ``java_stacks`` the JVM's log leaves the frames of Java stack traces out. ``quiet_failure``:
    the caller tells k8s_backend's failure of the application itself (:meth:`BackendFactory.failure`),
    so the JVM's log leaves out the records that merely follow from it (:mod:`k8s_backend.spark.jvm_log`;
    only for a JVM started here).
    """
    installed_pyspark()  # a clear error for an unsupported pyspark before anything starts
    from pyspark.core.context import SparkContext

    parse_master(master)  # fail early on a malformed URL
    properties = with_master_defaults(master, dict(conf or {}))
    with SparkContext._lock:
        if SparkContext._gateway is None:
            try:
                gateway = launch(properties, bridge_jar(), java_stacks=java_stacks)
            except Exception as error:
                raise_config_error(properties, error)
                raise
            SparkContext._ensure_initialized(gateway=gateway)
        gateway = SparkContext._gateway
    factory = BackendFactory(create_backend)
    install_factory(gateway, factory)
    held = jvm_stderr(gateway)
    if quiet_failure and held is not None:
        held.leave_out_failure_consequences(lambda: factory.failure() is not None)
    exit_on_termination()  # SIGTERM/SIGHUP then run the cleanup at exit instead of leaving pods behind
    if default_master:
        set_default_master(gateway, master, properties)
    return factory


def raise_config_error(properties: Mapping[str, str], error: Exception) -> None:
    """Raise our :class:`ConfigError` (from ``error``) if one of ``properties`` has a bad value.

    Spark checks some properties itself before the backend sees them (spark-submit rejects
    ``spark.executor.memory=lots`` at JVM launch, the SparkContext parses it too), and its message is
    buried in a Java stack trace. Only a key the user set counts: a missing one (e.g. an image from
    spark-defaults.conf, which these properties do not hold) is no explanation.
    """
    from k8s_backend.conf.parse import parse_spark_conf

    try:
        parse_spark_conf(properties)
    except ConfigError as config_error:
        if config_error.key in properties:
            raise config_error from error


def with_master_defaults(master: str, properties: dict[str, str]) -> dict[str, str]:
    """``properties`` plus what a ``pyk8s://local`` driver needs unless set (driver on 127.0.0.1)."""
    if is_pyk8s(master) and parse_master(master).kind is MasterKind.LOCAL:
        for key, value in local_defaults(default_local_image()).items():
            properties.setdefault(key, value)
    return properties


def default_local_image() -> str:
    """The image name executor pods get on a local cluster (its kubelet runs the installed pyspark)."""
    return default_spark_image()


def as_properties(conf: Properties | Any | None) -> dict[str, str]:
    """Spark properties from a mapping or anything with ``getAll()`` (a ``pyspark.SparkConf``)."""
    if conf is None:
        return {}
    if isinstance(conf, Mapping):
        return {str(k): str(v) for k, v in conf.items()}
    get_all = getattr(conf, "getAll", None)
    if callable(get_all):
        return {str(k): str(v) for k, v in get_all()}
    raise TypeError(f"conf must be a mapping of Spark properties or a SparkConf, not {type(conf).__name__}")
