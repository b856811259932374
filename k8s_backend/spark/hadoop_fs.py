"""Hadoop's FileSystem through a JVM of Spark's own classpath, for ``spark.kubernetes.file.upload.path``.

spark-submit uploads a cluster-mode application's local files with Hadoop's FileSystem, so the upload path
may be any URI Spark's classpath has a FileSystem for (``hdfs://``, ``viewfs://``, ``s3a://`` with
hadoop-aws on ``spark.driver.extraClassPath``...), configured by the ``spark.hadoop.*`` properties. This
module does the same from Python: it starts a JVM with pyspark's launcher (Spark's jars, no SparkContext,
no bridge jar) and calls ``org.apache.hadoop.fs.FileSystem`` through Py4J. The JVM's log is kept out of
the command's output (:class:`k8s_backend.spark.jvm_start.HeldStderr`); it exits with this process.
Java errors become ``OSError`` (``FileNotFoundError`` for a missing path) with the Java message.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator, Mapping
from typing import Any

from k8s_backend.spark.gateway import CLASSPATH_KEY, _LaunchConf
from k8s_backend.spark.jar import installed_pyspark
from k8s_backend.spark.jvm_start import HeldStderr, start_failure

HADOOP_PREFIX = "spark.hadoop."


class HadoopFileSystem:
    """The FileSystems of URIs under one Hadoop configuration (from ``spark.hadoop.*``)."""

    def __init__(self, gateway: Any, configuration: Any) -> None:
        self._gateway = gateway
        self._conf = configuration

    @classmethod
    def launch(cls, properties: Mapping[str, str]) -> HadoopFileSystem:
        """Start the JVM with the ``spark.hadoop.*`` properties (and ``spark.driver.extraClassPath``).

        Raises :class:`k8s_backend.spark.DriverStartError` if it does not start."""
        installed_pyspark()
        import pyspark.java_gateway as java_gateway

        launch_gateway: Any = java_gateway.launch_gateway
        hadoop = {k: v for k, v in properties.items() if k.startswith(HADOOP_PREFIX)}
        launch = dict(hadoop)
        if properties.get(CLASSPATH_KEY):
            launch[CLASSPATH_KEY] = properties[CLASSPATH_KEY]
        read_fd, write_fd = os.pipe()
        held = HeldStderr(read_fd)  # never released: the JVM's log stays out of the command's output
        held.start()
        try:
            gateway = launch_gateway(_LaunchConf(launch.items()), {"stderr": write_fd})
        except Exception as error:
            raise start_failure(held.output(), "the JVM for Hadoop's FileSystem") from error
        finally:
            os.close(write_fd)
        jvm = gateway.jvm
        spark_conf = jvm.org.apache.spark.SparkConf(False)
        for key, value in hadoop.items():
            spark_conf.set(key, value)
        configuration = jvm.org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(spark_conf)
        return cls(gateway, configuration)

    def _path(self, uri: str) -> tuple[Any, Any]:
        path = self._gateway.jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(self._conf), path

    def is_directory(self, uri: str) -> bool:
        """Whether ``uri`` is a directory; ``FileNotFoundError`` if it does not exist."""
        with _as_os_error(uri):
            fs, path = self._path(uri)
            return bool(fs.getFileStatus(path).isDirectory())

    def copy_from_local(self, source: str, target: str) -> None:
        """Copy the local file ``source`` to ``target`` (its directory is created), replacing it."""
        with _as_os_error(target):
            fs, path = self._path(target)
            local = self._gateway.jvm.org.apache.hadoop.fs.Path(os.path.abspath(source))
            fs.copyFromLocalFile(False, True, local, path)

    def copy_to_local(self, source: str, target: str) -> None:
        """Copy ``source`` to the local file ``target`` (no checksum file beside it)."""
        with _as_os_error(source):
            fs, path = self._path(source)
            local = self._gateway.jvm.org.apache.hadoop.fs.Path(os.path.abspath(target))
            fs.copyToLocalFile(False, path, local, True)

    def delete(self, uri: str) -> None:
        """Delete ``uri`` and what it holds; ``FileNotFoundError`` if it does not exist."""
        with _as_os_error(uri):
            fs, path = self._path(uri)
            if not fs.exists(path):
                raise FileNotFoundError(uri)
            fs.delete(path, True)

    def close(self) -> None:
        """Stop talking to the JVM (it exits when this process does)."""
        self._gateway.shutdown()


@contextlib.contextmanager
def _as_os_error(uri: str) -> Iterator[None]:
    """Java exceptions out of Py4J calls as ``OSError`` with the Java message."""
    from py4j.protocol import Py4JError, Py4JJavaError

    try:
        yield
    except Py4JJavaError as error:
        java = error.java_exception
        kind = str(java.getClass().getName())
        message = str(java.getMessage() or kind)
        if kind == "java.io.FileNotFoundException":
            raise FileNotFoundError(errno.ENOENT, message, uri) from None
        raise OSError(f"{kind.rsplit('.', 1)[-1]}: {message}") from None
    except Py4JError as error:
        raise OSError(str(error)) from None
