"""The PySpark side of ``k8s-backend submit --deploy-mode client``.

The command line runs the user's script in its own process; what touches pyspark (readying the driver
JVM for a ``pyk8s://`` master, stopping the context the script left running) lives here, since only
:mod:`k8s_backend.spark` imports pyspark. The CLI calls :func:`runtime` and drives the result through
its own ``DriverRuntime`` protocol, which :class:`PySparkRuntime` satisfies structurally.
"""

from __future__ import annotations

from collections.abc import Mapping

from k8s_backend.spark.factory import BackendFactory
from k8s_backend.spark.session import prepare


class PySparkRuntime:
    """Readies this process's Spark driver for a ``pyk8s://`` master, and stops what is left running."""

    def __init__(self) -> None:
        self._factory: BackendFactory | None = None

    def prepare(self, master: str, properties: Mapping[str, str]) -> None:
        """The submission's properties become the driver JVM's defaults (see :func:`prepare`)."""
        self._factory = prepare(master, dict(properties))

    def stop(self) -> None:
        """Stop the active SparkContext, if any, and a backend no context stopped: their executor pods
        are deleted (also when a signal or an error ended the script while the context was starting)."""
        # Imported here, after prepare() has checked the installed pyspark and named what is missing.
        from pyspark.core.context import SparkContext

        context = SparkContext._active_spark_context
        try:
            if context is not None:
                context.stop()
        finally:
            if self._factory is not None:
                self._factory.stop_leftover()


def runtime() -> PySparkRuntime:
    """The runtime client mode uses when the caller injects none."""
    return PySparkRuntime()
