"""k8s_backend.spark: run a PySpark driver whose executors k8s_backend manages.

    from k8s_backend.spark import session
    spark = session("pyk8s://local")          # or pyk8s://https://HOST:PORT, or pyk8s://
    spark.sparkContext.parallelize(range(100)).sum()
    spark.stop()

After ``import k8s_backend.spark``, ``SparkSession.builder.master("pyk8s://...").getOrCreate()`` works
too (see :mod:`k8s_backend.spark.hook`), and :func:`prepare` readies the driver for an unmodified
script's ``SparkSession.builder.getOrCreate()``.

A small Java bridge (sources in ``java/``, jar in ``jars/`` or built on first use, see
:mod:`k8s_backend.spark.jar`) registers a Spark cluster manager for ``pyk8s://`` masters whose backend
forwards Spark's calls to the Python :class:`k8s_backend.KubernetesClusterSchedulerBackend`.
"""

from __future__ import annotations

from k8s_backend.spark import hook
from k8s_backend.spark.jar import BridgeJarError, UnsupportedPysparkError, bridge_jar
from k8s_backend.spark.jvm_start import DriverStartError
from k8s_backend.spark.session import prepare, session
from k8s_backend.spark.status import status

hook.install()

__all__ = [
    "BridgeJarError",
    "DriverStartError",
    "UnsupportedPysparkError",
    "bridge_jar",
    "prepare",
    "session",
    "status",
]
