"""A pytest plugin that runs users' PySpark tests on ``pyk8s://`` (registered as the ``pytest11`` entry
point ``k8s_backend``; see docs/pytest-plugin.md).

* ``spark``: a session-scoped SparkSession on ``pyk8s://local`` (or the master ``--pyk8s-master``
  names), with ``--pyk8s-executors`` executors of ``--pyk8s-executor-memory`` each, and any
  ``--pyk8s-conf KEY=VALUE``; stopped at the end of the session.
* ``pyk8s_executors``: kills or decommissions executors of that session mid-test (as a lost node or a
  drained node would), and waits for the backend to replace them.

Nothing here imports pyspark until a test asks for a fixture: the plugin costs nothing to suites that do
not use it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

DEFAULT_MASTER = "pyk8s://local"
DEFAULT_EXECUTORS = 2
DEFAULT_MEMORY = "1g"
WAIT_TIMEOUT = 300.0  # seconds for executors to register (executor JVMs start slowly on small machines)
_MEMORY = re.compile(r"^\d+[kmgtp]?b?$", re.IGNORECASE)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyk8s", "PySpark on Kubernetes through k8s_backend (the spark fixture)")
    group.addoption(
        "--pyk8s-master",
        default=None,
        help="master of the spark fixture's session: pyk8s://local (default), pyk8s:// (kubeconfig) "
        "or pyk8s://https://HOST:PORT; ini: pyk8s_master",
    )
    group.addoption(
        "--pyk8s-executors",
        default=None,
        help=f"executors of the spark fixture's session (default {DEFAULT_EXECUTORS}); "
        "ini: pyk8s_executors",
    )
    group.addoption(
        "--pyk8s-executor-memory",
        default=None,
        help=f"spark.executor.memory of those executors (default {DEFAULT_MEMORY}); "
        "ini: pyk8s_executor_memory",
    )
    group.addoption(
        "--pyk8s-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property of the spark fixture's session (repeatable); ini: pyk8s_conf (one per line)",
    )
    parser.addini("pyk8s_master", "default for --pyk8s-master", default="")
    parser.addini("pyk8s_executors", "default for --pyk8s-executors", default="")
    parser.addini("pyk8s_executor_memory", "default for --pyk8s-executor-memory", default="")
    parser.addini("pyk8s_conf", "Spark properties KEY=VALUE, one per line", type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    session_conf(config)  # a bad option fails the run at once, not at the first test that uses spark


def session_conf(config: pytest.Config) -> tuple[str, dict[str, str]]:
    """The master and Spark properties the options and ini settings give; a UsageError naming the
    option for a bad value."""

    def option(name: str, ini: str, default: str) -> str:
        value = config.getoption(name)
        return str(value) if value not in (None, "") else (str(config.getini(ini)).strip() or default)

    master = option("--pyk8s-master", "pyk8s_master", DEFAULT_MASTER)
    if not master.startswith("pyk8s://"):
        raise pytest.UsageError(
            f"--pyk8s-master={master!r}: give a pyk8s:// master (pyk8s://local, pyk8s://, "
            "pyk8s://https://HOST:PORT)"
        )
    executors = option("--pyk8s-executors", "pyk8s_executors", str(DEFAULT_EXECUTORS))
    if not executors.isdigit() or int(executors) < 1:
        raise pytest.UsageError(
            f"--pyk8s-executors={executors!r}: give a whole number of executors, 1 or more"
        )
    memory = option("--pyk8s-executor-memory", "pyk8s_executor_memory", DEFAULT_MEMORY)
    if not _MEMORY.match(memory):
        raise pytest.UsageError(f"--pyk8s-executor-memory={memory!r}: give a size such as 512m or 2g")
    conf = {
        "spark.executor.instances": executors,
        "spark.executor.memory": memory,
        "spark.ui.showConsoleProgress": "false",
        # Decommissioning (pyk8s_executors.decommission) needs it; it changes nothing otherwise.
        "spark.decommission.enabled": "true",
    }
    for pair in [*config.getini("pyk8s_conf"), *config.getoption("--pyk8s-conf")]:
        key, sep, value = str(pair).partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(
                f"--pyk8s-conf {pair!r}: write it KEY=VALUE, e.g. spark.sql.shuffle.partitions=4"
            )
        conf[key.strip()] = value.strip()
    return master, conf


@pytest.fixture(scope="session")
def spark(pytestconfig: pytest.Config) -> Iterator[Any]:
    """A SparkSession on ``pyk8s://local`` (or ``--pyk8s-master``) whose executors have registered."""
    from k8s_backend.spark import session

    master, conf = session_conf(pytestconfig)
    started = session(master, conf, app_name="pytest")
    try:
        ExecutorControl(started).wait_for(int(conf["spark.executor.instances"]))
        yield started
    finally:
        started.stop()


@pytest.fixture
def pyk8s_executors(spark: Any) -> Iterator[ExecutorControl]:
    """Kills or decommissions executors of the ``spark`` session; after the test, waits until the
    backend has replaced them, so the next test starts with the full count."""
    control = ExecutorControl(spark)
    count = len(control.ids())
    yield control
    control.wait_for(count)


class ExecutorControl:
    """Executors of a ``pyk8s://`` SparkSession, seen from the driver, for tests of executor loss."""

    def __init__(self, spark: Any) -> None:
        self._context = getattr(spark, "sparkContext", spark)

    def ids(self) -> list[str]:
        """The registered executors' ids, in numeric order (the driver left out)."""
        jvm = self._context._jvm
        seq = self._context._jsc.sc().getExecutorIds()
        ids = [str(i) for i in jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq)]
        return sorted(ids, key=lambda i: (len(i), i))

    def kill(self, executor_id: str | None = None) -> str:
        """Delete an executor's pod at once (grace 0), as a lost node would: Spark is not told first and
        sees the executor lost; its tasks re-run and the backend starts a replacement. Default: the
        first executor. Returns its id."""
        chosen = self._choose(executor_id)
        if self._backend().parts.operations.delete_pods_now([chosen]) == 0:
            raise LookupError(f"executor {chosen} has no pod any more")
        return chosen

    def decommission(self, executor_id: str | None = None) -> str:
        """Decommission an executor through Spark (as a drained node does): it stops taking tasks,
        migrates its blocks when ``spark.storage.decommission.enabled`` is set, and exits; the backend
        starts a replacement. Returns its id."""
        chosen = self._choose(executor_id)
        context = self._context
        jvm = context._jvm
        info = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo(
            "decommissioned by a test", jvm.scala.Option.empty()
        )
        pairs = context._gateway.new_array(jvm.scala.Tuple2, 1)
        pairs[0] = jvm.scala.Tuple2(chosen, info)
        context._jsc.sc().schedulerBackend().decommissionExecutors(pairs, False, False)
        return chosen

    def wait_for(self, count: int, timeout: float = WAIT_TIMEOUT) -> list[str]:
        """Wait until ``count`` executors are registered; returns their ids."""
        return self._wait(lambda ids: len(ids) >= count, f"{count} registered executors", timeout)

    def wait_until_gone(self, executor_id: str, timeout: float = WAIT_TIMEOUT) -> list[str]:
        """Wait until the driver no longer lists ``executor_id``; returns the ids it lists then."""
        return self._wait(lambda ids: executor_id not in ids, f"executor {executor_id} removed", timeout)

    def _wait(self, done: Any, what: str, timeout: float) -> list[str]:
        pause = threading.Event()
        deadline = time.monotonic() + timeout
        while True:
            ids = self.ids()
            if done(ids):
                return ids
            if time.monotonic() >= deadline:
                raise TimeoutError(f"waited {timeout:.0f}s for {what}; registered now: {ids}")
            pause.wait(0.1)

    def _choose(self, executor_id: str | None) -> str:
        ids = self.ids()
        if executor_id is None:
            if not ids:
                raise LookupError("no executor is registered")
            return ids[0]
        if executor_id not in ids:
            raise LookupError(f"executor {executor_id!r} is not registered (registered: {ids})")
        return executor_id

    def _backend(self) -> Any:
        from k8s_backend.spark.status import FACTORY_ATTRIBUTE

        factory = getattr(self._context._gateway, FACTORY_ATTRIBUTE, None)
        current = getattr(factory, "current", None)
        if current is None or current.stopped:
            master = self._context.master
            raise RuntimeError(f"the session's master {master!r} has no running k8s_backend backend")
        return current.backend
