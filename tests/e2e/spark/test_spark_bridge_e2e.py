"""A real PySpark driver through the Java bridge, with a stand-in Python backend (executors as local
processes). The tests share this process's driver JVM, one SparkContext at a time."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_standin import StandInBackend

from k8s_backend.errors import ConfigError
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.spark import javac, prepare, session

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
log = logging.getLogger(__name__)

BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.executor.memory": "512m",
}
WAIT = 240.0


def wait_until(predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Re-check a condition owned by other processes (the JVM, executors) until it holds."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        pause.wait(0.2)
    return predicate()


class Creator:
    """Creates stand-in backends and keeps them for the test to inspect."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.made: list[StandInBackend] = []

    def __call__(self, conf: Any, **kwargs: Any) -> StandInBackend:
        backend = StandInBackend(conf, log_dir=self.log_dir, **kwargs)
        self.made.append(backend)
        return backend

    @property
    def backend(self) -> StandInBackend:
        assert len(self.made) == 1, self.made
        return self.made[0]


def removed_executors(spark: Any) -> dict[str, str]:
    """Executor id -> remove reason, from Spark's status store."""
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(False)
    out: dict[str, str] = {}
    for i in range(summaries.size()):
        summary = summaries.apply(i)
        reason = summary.removeReason()
        if not summary.isActive() and reason.isDefined():
            out[str(summary.id())] = str(reason.get())
    return out


@pytest.fixture
def creator(tmp_path: Path) -> Iterator[Creator]:
    made = Creator(tmp_path)
    yield made
    from pyspark.core.context import SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()


def test_static_executors_run_a_job_and_losses_carry_our_reason(creator: Creator) -> None:
    weird = 'quote " backslash \\ newline \n tab \t unicode é'
    conf = dict(BASE_CONF, **{"spark.executor.instances": "2", "spark.k8s_backend.test.weird": weird})
    started = time.monotonic()
    spark = session("pyk8s://", conf, "bridge-static", create_backend=creator)
    ready = time.monotonic() - started
    backend = creator.backend
    registered = backend.driver.registered_executors()
    log.info("session with 2 registered executors after %.1f s", ready)
    print(f"\nsession start to 2 executors registered: {ready:.1f} s")
    assert sorted(registered) == ["1", "2"]
    assert backend.conf["spark.k8s_backend.test.weird"] == weird  # conf crossed as JSON, intact
    assert backend.driver_url.startswith("spark://CoarseGrainedScheduler@127.0.0.1:")
    assert spark.sparkContext.applicationId == backend.app_id
    assert spark.sparkContext.parallelize(range(100)).sum() == 4950

    exit_code = backend.kill_process("1")
    assert exit_code == -9  # SIGKILL, which a kubelet reports as 137
    backend.driver.remove_executor("1", ExecutorLoss(137, True, "exit code 137: OOMKilled by the test"))
    assert wait_until(lambda: "1" in removed_executors(spark))
    assert removed_executors(spark)["1"] == "exit code 137: OOMKilled by the test"
    assert spark.sparkContext.parallelize(range(10), 4).map(lambda x: x * 2).sum() == 90

    spark.stop()
    assert backend.hooks_called() == ["start", "stop"]
    assert all(process.poll() is not None for _, process in backend.processes.values())


def gpu_discovery_script(folder: Path) -> Path:
    script = folder / "gpus.sh"
    script.write_text('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["0"]}\'\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_dynamic_allocation_and_a_custom_resource_profile_on_a_plain_get_or_create(
    creator: Creator, tmp_path: Path
) -> None:
    from pyspark.resource import ExecutorResourceRequests, ResourceProfileBuilder, TaskResourceRequests
    from pyspark.sql import SparkSession

    conf = dict(
        BASE_CONF,
        **{
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.minExecutors": "0",
            "spark.dynamicAllocation.initialExecutors": "1",
            "spark.dynamicAllocation.maxExecutors": "2",
            "spark.dynamicAllocation.executorIdleTimeout": "2s",
            "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
            "spark.app.name": "bridge-dynamic",
        },
    )
    # An earlier test's JVM launch may have left spark.executor.instances as a system property.
    with jvm_properties_restored("spark.executor.instances", *conf, "spark.master"):
        forget_jvm_properties("spark.executor.instances")
        factory = prepare("pyk8s://", conf, create_backend=creator)  # as the submit command does
        spark = SparkSession.builder.getOrCreate()  # what an unmodified script calls
    assert spark.sparkContext.master == "pyk8s://"
    backend = creator.backend
    assert backend.wait_for(lambda: ("request_total_executors", {0: 1}) in backend.calls, WAIT)

    script = gpu_discovery_script(tmp_path)
    executors = ExecutorResourceRequests().cores(2).memory("600m").resource("gpu", 1, str(script), "acme.com")
    tasks = TaskResourceRequests().cpus(1).resource("gpu", 1)
    profile = ResourceProfileBuilder().require(executors).require(tasks).build
    rdd = spark.sparkContext.parallelize(range(4), 2).withResources(profile)

    def gpus(_: Any) -> list[str]:
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None
        return list(context.resources()["gpu"].addresses)

    assert rdd.map(gpus).collect() == [["0"]] * 4
    registered = [arg for name, arg in backend.calls if name == "register_resource_profile"]
    assert len(registered) == 1
    (custom,) = registered
    assert (custom.id, custom.cores, custom.memory_mib, custom.task_cpus) == (profile.id, 2, 600, 1)
    assert [(r.name, r.amount, r.vendor, r.discovery_script) for r in custom.custom_resources] == [
        ("gpu", 1, "acme.com", str(script))
    ]
    requests = [arg for name, arg in backend.calls if name == "request_total_executors"]
    first_with_profile = next(i for i, r in enumerate(requests) if profile.id in r)
    assert backend.calls.index(("register_resource_profile", custom)) < backend.calls.index(
        ("request_total_executors", requests[first_with_profile])
    )
    launched = [cmd for cmd in backend.commands.values() if "--resourceProfileId" in cmd]
    assert any(cmd[cmd.index("--resourceProfileId") + 1] == str(profile.id) for cmd in launched)

    # Idle executors are released through doKillExecutors.
    assert backend.wait_for(lambda: "kill_executors" in backend.hooks_called(), WAIT)
    spark.stop()
    assert backend.hooks_called()[-1] == "stop"
    assert factory.current is not None


@contextlib.contextmanager
def jvm_properties_restored(*keys: str) -> Iterator[None]:
    """Put system properties of this process's driver JVM back as they were (prepare() sets some)."""
    from pyspark.core.context import SparkContext

    def system() -> Any:
        return SparkContext._jvm.java.lang.System if SparkContext._jvm is not None else None

    before = {key: system().getProperty(key) for key in keys} if system() is not None else {}
    try:
        yield
    finally:
        for key in keys:
            old = before.get(key)
            if old is None:
                system().clearProperty(key)
            else:
                system().setProperty(key, old)


def forget_jvm_properties(*keys: str) -> None:
    """Drop system properties of this process's driver JVM, where launches and prepare() leave them."""
    from pyspark.core.context import SparkContext

    if SparkContext._jvm is not None:
        for key in keys:
            SparkContext._jvm.java.lang.System.clearProperty(key)


def test_a_backend_error_surfaces_as_the_python_error_and_leaves_no_context(creator: Creator) -> None:
    from pyspark.core.context import SparkContext

    def broken(conf: Any, **kwargs: Any) -> Any:
        raise ConfigError("spark.kubernetes.namespace='Bad_NS' is not a valid namespace", key="x")

    with pytest.raises(ConfigError, match="Bad_NS"):
        session("pyk8s://", BASE_CONF, "bridge-error", create_backend=broken)
    assert SparkContext._active_spark_context is None
    conf = dict(BASE_CONF, **{"spark.executor.instances": "1"})
    spark = session("pyk8s://", conf, "bridge-after-error", create_backend=creator)
    assert spark.sparkContext.parallelize([1, 2, 3]).count() == 3
    spark.stop()


def test_the_jar_compiles_against_the_installed_pyspark(tmp_path: Path) -> None:
    from k8s_backend.spark.jar import installed_pyspark, is_usable

    pyspark = installed_pyspark()
    built = javac.build_jar(tmp_path / javac.JAR_NAME, pyspark.jars_dir)
    assert is_usable(built, pyspark, javac.source_digest())
    import zipfile

    with zipfile.ZipFile(built) as jar:
        names = set(jar.namelist())
        service = jar.read(javac.SERVICE_FILE).decode().strip()
    assert service == "io.k8sbackend.bridge.PyK8sClusterManager"
    assert "io/k8sbackend/bridge/PyK8sSchedulerBackend.class" in names
    assert os.path.getsize(built) < 100_000
    info = javac.read_build_info(built)
    assert info["scalaVersion"] == pyspark.scala_version
    assert json.dumps(info)  # plain strings
