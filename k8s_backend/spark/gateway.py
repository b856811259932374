"""The driver JVM: launched with the bridge jar on its classpath, and wired to a Python backend factory.

Two facts shape this module. spark-submit (which pyspark uses to start the JVM) rejects masters it does
not know, so the JVM is launched without the ``pyk8s://`` master, which is given to the SparkContext
afterwards. And Spark finds cluster managers only on the classpath the JVM started with, so the jar
goes into ``spark.driver.extraClassPath`` at launch; it cannot be added to a running JVM.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from k8s_backend.spark import class_sharing
from k8s_backend.spark.class_sharing import ClassSharing
from k8s_backend.spark.jar import BridgeJarError, installed_pyspark
from k8s_backend.spark.jvm_start import HeldStderr, start_failure
from k8s_backend.spark.status import FACTORY_ATTRIBUTE

log = logging.getLogger(__name__)

MANAGER_CLASS = "io.k8sbackend.bridge.PyK8sClusterManager"
PROTOCOL_VERSION = 2  # must match PyK8sClusterManager.PROTOCOL_VERSION
CLASSPATH_KEY = "spark.driver.extraClassPath"
STDERR_ATTRIBUTE = "_k8s_backend_jvm_stderr"  # the HeldStderr of a JVM launch() started, on its gateway
JVM_EXIT_WAIT = 10.0  # seconds for the JVM to exit, then for its last output to be written, at shut-down
SHARING_ATTRIBUTE = "_k8s_backend_class_sharing"  # the ClassSharing of a JVM launch() started, on its gateway
RECORDING_EXIT_WAIT = 180.0  # seconds for a JVM that writes its class archive (8 s here, idle) to exit


class _LaunchConf:
    """The ``getAll()`` that pyspark's ``launch_gateway`` reads; no JVM exists yet to hold a SparkConf."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._pairs = list(pairs)

    def getAll(self) -> list[tuple[str, str]]:
        return list(self._pairs)


def launch_properties(conf: Mapping[str, str], jar: Path) -> dict[str, str]:
    """The properties the JVM is launched with: no ``spark.master``, the jar first on the classpath."""
    properties = {k: v for k, v in conf.items() if k != "spark.master"}
    existing = [p for p in properties.get(CLASSPATH_KEY, "").split(os.pathsep) if p]
    if str(jar) not in existing:
        existing.insert(0, str(jar))
    properties[CLASSPATH_KEY] = os.pathsep.join(existing)
    return properties


def launch(
    conf: Mapping[str, str],
    jar: Path,
    popen_kwargs: dict[str, Any] | None = None,
    *,
    java_stacks: bool = True,
) -> Any:
    """Start pyspark's JVM gateway (a py4j ``ClientServer``) with the bridge jar; see the module doc.

    Unless ``popen_kwargs`` chooses the JVM's stderr, it is held while the JVM starts
    (:mod:`k8s_backend.spark.jvm_start`): a JVM that exits first raises :class:`DriverStartError` with
    its own reason instead of pyspark's ``JAVA_GATEWAY_EXITED``. Without ``java_stacks`` the Java stack
    frames the JVM logs later are left out of what it prints.
    """
    import pyspark.java_gateway as java_gateway

    launch_gateway: Any = java_gateway.launch_gateway
    kwargs = dict(popen_kwargs or {})
    properties = launch_properties(conf, jar)
    # A JVM whose stderr the caller chose ends with this process, not in shut_down(), which puts a
    # recorded archive in place: it may only map one.
    sharing = class_sharing.plan(
        properties, os.environ, installed_pyspark().jars_dir, may_record="stderr" not in kwargs
    )
    if sharing is not None:
        kwargs = sharing.popen_kwargs(kwargs)
    launch_conf = _LaunchConf(properties.items())
    if "stderr" in kwargs:
        return _with_sharing(_started(launch_gateway, launch_conf, kwargs, sharing), sharing)
    read_fd, write_fd = os.pipe()
    held = HeldStderr(read_fd, java_stacks=java_stacks)
    held.start()
    kwargs["stderr"] = write_fd
    try:
        gateway = _started(launch_gateway, launch_conf, kwargs, sharing)
    except Exception as error:
        os.close(write_fd)  # the JVM holds the other copy: the reader sees the end when it exits
        raise start_failure(held.output()) from error
    except BaseException:
        os.close(write_fd)
        held.release()
        raise
    os.close(write_fd)
    held.release()
    setattr(gateway, STDERR_ATTRIBUTE, held)
    _with_sharing(gateway, sharing)
    # Registered before anything the JVM's session registers (the backend's stop, a local cluster's):
    # atexit runs it after them, once nothing needs the JVM any more.
    atexit.register(shut_down, gateway)
    return gateway


def _started(launch_gateway: Any, launch_conf: _LaunchConf, kwargs: dict[str, Any],
             sharing: ClassSharing | None) -> Any:
    """pyspark's ``launch_gateway``, with the class archive's options; a JVM that did not start records
    no class archive (the lock is let go)."""
    if sharing is None:
        return launch_gateway(launch_conf, kwargs)
    try:
        with sharing.submit_options():
            return launch_gateway(launch_conf, kwargs)
    except BaseException:
        sharing.finish(exit_code=None, ran_a_driver=False)
        raise


def _with_sharing(gateway: Any, sharing: ClassSharing | None) -> Any:
    setattr(gateway, SHARING_ATTRIBUTE, sharing)
    return gateway


def shut_down(gateway: Any, wait: float = JVM_EXIT_WAIT) -> bool:
    """End the driver JVM behind ``gateway`` as it ends when this process exits (its stdin reaches its
    end), and wait at most ``wait`` seconds for it to exit, then as long for its last output to be
    written to this process's stderr. Returns whether both happened in time.

    A JVM that is left to end with this process prints what its shutdown hooks log (e.g. Spark's
    "Shutdown hook called") to a pipe no one reads any more: it is lost. Registered with ``atexit`` by
    :func:`launch`; harmless when the JVM has exited already.
    """
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return True
    sharing: ClassSharing | None = getattr(gateway, SHARING_ATTRIBUTE, None)
    recording = sharing is not None and sharing.records and proc.poll() is None
    if recording:
        log.info("The driver JVM records its class archive as it exits (once; later drivers start faster)")
    exit_wait = max(wait, RECORDING_EXIT_WAIT) if recording else wait
    if proc.stdin is not None and not proc.stdin.closed:
        with contextlib.suppress(OSError):  # (a broken pipe: the JVM is gone already)
            proc.stdin.close()  # the JVM's PythonGatewayServer exits on the end of its stdin
    try:
        proc.wait(exit_wait)
    except subprocess.TimeoutExpired:
        log.warning(
            "The driver JVM (pid %s) did not exit within %.0fs of being asked to", proc.pid, exit_wait
        )
        return False
    finally:
        if sharing is not None:
            # Only a JVM that we saw end cleanly (PythonGatewayServer exits 0) wrote a whole archive.
            factory = getattr(gateway, FACTORY_ATTRIBUTE, None)
            ran_a_driver = bool(getattr(factory, "made_a_backend", False))
            sharing.finish(exit_code=proc.poll(), ran_a_driver=ran_a_driver)
            setattr(gateway, SHARING_ATTRIBUTE, None)
    held = jvm_stderr(gateway)
    return held is None or held.wait_for_end(wait)


def end_driver_jvm(wait: float = JVM_EXIT_WAIT) -> bool:
    """End this process's driver JVM, if :func:`launch` started it and no SparkContext runs in it, and
    write its last output now rather than at interpreter exit (:func:`shut_down`): what follows on stderr
    then comes after it. A later session starts a new JVM. Returns whether the JVM was ended in time."""
    from pyspark.core.context import SparkContext

    with SparkContext._lock:
        gateway = SparkContext._gateway
        if gateway is None or jvm_stderr(gateway) is None or SparkContext._active_spark_context is not None:
            return False
        ended = shut_down(gateway, wait)
        try:
            gateway.shutdown()  # Py4J's callback server and connections to the JVM that is gone
        except Exception:
            log.debug("Could not close the Py4J gateway of the driver JVM", exc_info=True)
        SparkContext._gateway = None
        SparkContext._jvm = None
        return ended


def jvm_stderr(gateway: Any) -> HeldStderr | None:
    """The reader of the stderr of the JVM behind ``gateway``, if :func:`launch` started it with one."""
    held = getattr(gateway, STDERR_ATTRIBUTE, None)
    return held if isinstance(held, HeldStderr) else None


def has_bridge(gateway: Any) -> bool:
    """Whether the JVM behind ``gateway`` can load the bridge's cluster manager."""
    from py4j.protocol import Py4JError

    try:
        gateway.jvm.java.lang.Class.forName(MANAGER_CLASS)
    except Py4JError:
        return False
    return True


def install_factory(gateway: Any, factory: Any) -> None:
    """Start the callback server and hand ``factory`` to the JVM's cluster manager.

    Raises :class:`BridgeJarError` if the JVM was started without the jar, or with a jar of another
    protocol version.
    """
    import pyspark.java_gateway as java_gateway

    ensure_callback_server_started: Any = java_gateway.ensure_callback_server_started

    if not has_bridge(gateway):
        raise BridgeJarError(
            "The driver JVM of this Python process was started without k8s_backend's bridge jar, so it "
            "cannot run a pyk8s:// master. Create the pyk8s session before any other SparkContext in this "
            "process (k8s_backend.spark.session(...)), or stop this one and start a new Python process."
        )
    manager = gateway.jvm.io.k8sbackend.bridge.PyK8sClusterManager
    version = int(manager.protocolVersion())
    if version != PROTOCOL_VERSION:
        raise BridgeJarError(
            f"The bridge jar in the driver JVM speaks protocol {version}, this k8s_backend speaks "
            f"{PROTOCOL_VERSION}: remove the stale jar (see k8s_backend.spark.jar) and start a new process."
        )
    # Without the callback server, Spark's calls into Python fail with "Connection refused".
    ensure_callback_server_started(gateway)
    manager.install(factory)
    setattr(gateway, FACTORY_ATTRIBUTE, factory)  # k8s_backend.spark.status() finds it from a session


def set_default_master(gateway: Any, master: str, conf: Mapping[str, str] | None = None) -> None:
    """Make ``master`` (and ``conf``) what a plain ``SparkConf()`` reads in this JVM, as spark-submit's
    system properties would; an unmodified ``SparkSession.builder.getOrCreate()`` then uses them."""
    system = gateway.jvm.java.lang.System
    for key, value in (conf or {}).items():
        system.setProperty(key, str(value))
    system.setProperty("spark.master", master)
