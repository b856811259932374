"""The PySpark side of ``k8s-backend submit --deploy-mode client``.

The command line runs the user's script in its own process; what touches pyspark (readying the driver
JVM for a ``pyk8s://`` master, stopping the context the script left running) lives here, since only
:mod:`k8s_backend.spark` imports pyspark. The CLI calls :func:`runtime` and drives the result through
its own ``DriverRuntime`` protocol, which :class:`PySparkRuntime` satisfies structurally.
"""

from __future__ import annotations

from collections.abc import Mapping

from k8s_backend.spark.factory import BackendFactory
from k8s_backend.spark.gateway import end_driver_jvm
from k8s_backend.spark.session import prepare


class PySparkRuntime:
    """Readies this process's Spark driver for a ``pyk8s://`` master, and stops what is left running."""

    def __init__(self, *, java_stacks: bool = True, quiet_failure: bool = False) -> None:
        self._factory: BackendFactory | None = None
        self._java_stacks = java_stacks
        self._quiet_failure = quiet_failure

    def prepare(self, master: str, properties: Mapping[str, str]) -> None:
        """The submission's properties become the driver JVM's defaults (see :func:`prepare`)."""
        self._factory = prepare(
            master, dict(properties), java_stacks=self._java_stacks, quiet_failure=self._quiet_failure
        )

    def failure(self) -> str | None:
        """Why k8s_backend failed the application (its backend could not be made, an executor image
        cannot be pulled, a Hard gang timed out, too many executors failed), or None."""
        return self._factory.failure() if self._factory is not None else None

    def stop(self) -> None:
        """Stop the active SparkContext, if any, and a backend no context stopped: their executor pods
        are deleted (also when a signal or an error ended the script while the context was starting).
        Then end the driver JVM, so that its last output is written before what the caller prints next
        (e.g. ``k8s-backend submit``'s one-line error)."""
        # Imported here, after prepare() has checked the installed pyspark and named what is missing.
        from pyspark.core.context import SparkContext

        context = SparkContext._active_spark_context
        try:
            if context is not None:
                context.stop()
        finally:
            try:
                if self._factory is not None:
                    self._factory.stop_leftover()
            finally:
                end_driver_jvm()


def runtime(*, java_stacks: bool = True, quiet_failure: bool = False) -> PySparkRuntime:
    """The runtime client mode uses when the caller injects none (``java_stacks``: whether the driver
    JVM's log keeps the frames of Java stack traces; ``quiet_failure``: whether it leaves out what only
    follows from k8s_backend's failure of the application, which the caller tells; ``k8s-backend submit``
    keeps both with -v)."""
    return PySparkRuntime(java_stacks=java_stacks, quiet_failure=quiet_failure)
