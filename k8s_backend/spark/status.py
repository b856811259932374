"""``k8s_backend.spark.status(spark)``: the backend's ``status()`` for a SparkSession k8s_backend made."""

from __future__ import annotations

from typing import Any

FACTORY_ATTRIBUTE = "_k8s_backend_factory"  # set on the py4j gateway by gateway.install_factory


def status(spark: Any) -> dict[str, Any]:
    """The executor status of the session's Kubernetes backend: counts, targets, stuck executors and
    histories, as :meth:`k8s_backend.KubernetesClusterSchedulerBackend.status` returns them.

    :param spark: a ``pyspark.sql.SparkSession`` (or its ``SparkContext``) with a ``pyk8s://`` master.
    :raises ValueError: for a session k8s_backend does not manage, or one that was stopped.
    """
    context = getattr(spark, "sparkContext", spark)
    master = str(getattr(context, "master", "") or "")
    if not master.startswith("pyk8s://"):
        raise ValueError(
            f"this session's master is {master or 'unknown'!r}: k8s_backend.spark.status() reports on "
            "sessions whose executors k8s_backend manages (master pyk8s://..., e.g. made by "
            "k8s_backend.spark.session())"
        )
    factory = getattr(getattr(context, "_gateway", None), FACTORY_ATTRIBUTE, None)
    current = getattr(factory, "current", None)
    try:
        app_id = str(context.applicationId)
    except AttributeError:  # a stopped SparkContext has no JVM context left to ask
        app_id = str(getattr(current.backend, "application_id", lambda: "?")()) if current else "?"
        current = None
    if current is None or current.stopped or current.backend.application_id() != app_id:
        raise ValueError(
            f"no running k8s_backend backend for application {app_id}: the session was stopped, or "
            "its backend was made in another process"
        )
    backend = current.backend
    report = getattr(backend, "status", None)
    if not callable(report):
        raise ValueError(f"the backend of {app_id} ({type(backend).__name__}) has no status()")
    result: dict[str, Any] = report()
    return result
