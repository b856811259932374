"""The two directions of the bridge between Spark's JVM and the Python backend.

:class:`PythonBackendCallbacks` is what the JVM calls (it implements the Java interface
``io.k8sbackend.bridge.PythonBackend`` through Py4J). Spark calls several hooks while it holds its
scheduler and backend locks, and a callback that waited on the JVM could deadlock; so every hook that
asks for work queues it on the bridge's own thread and returns at once, in order. Questions
(``isExecutorExcluded``, ``sufficientResourcesRegistered``, ``applicationId``, ``generateExecId``) are
answered directly and
never with ``None``: a Python error becomes a logged, safe answer.

:class:`JvmDriverEndpoint` is what the backend calls: the
:class:`k8s_backend.lifecycle.driver_port.DriverEndpoint` over the JVM backend object.
"""

from __future__ import annotations

import datetime
import json
import logging
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from k8s_backend.conf.model import ResourceProfile
from k8s_backend.lifecycle.autoscaler_hints import ExecutorActivity
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.lifecycle.roll_policy import ExecutorSummary
from k8s_backend.spark.profiles import parse_request

log = logging.getLogger(__name__)

DEFAULT_STOP_TIMEOUT = 120.0


class BackendHooks(Protocol):
    """The hooks of a scheduler backend the bridge drives (:class:`KubernetesClusterSchedulerBackend`)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def application_id(self) -> str: ...

    def register_resource_profile(self, profile: ResourceProfile) -> None: ...

    def request_total_executors(self, targets: Mapping[int, int]) -> object: ...

    def kill_executors(self, executor_ids: Sequence[str]) -> object: ...

    def decommission_executors(self, executor_ids: Sequence[str]) -> object: ...

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None: ...

    def is_executor_excluded(self, executor_id: str) -> bool: ...

    def sufficient_resources_registered(self) -> bool: ...

    def generate_executor_id(self, pod_name: str) -> int: ...


class JvmDriverEndpoint:
    """The driver as the backend sees it: calls on the JVM ``PyK8sSchedulerBackend``.

    Called from the backend's threads, never from inside a JVM callback. A failing call is logged: the
    JVM may be shutting down, and the backend must go on cleaning up regardless.
    """

    def __init__(self, java_backend: Any) -> None:
        self._java = java_backend

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        try:
            if loss.killed_by_driver:
                self._java.removeExecutorKilled(executor_id)
            else:
                self._java.removeExecutorExited(
                    executor_id, int(loss.exit_code), bool(loss.exit_caused_by_app), loss.message
                )
        except Exception:
            log.warning("Could not report the loss of executor %s to Spark", executor_id, exc_info=True)

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        try:
            self._java.decommissionExecutorByBackend(executor_id, reason)
        except Exception:
            log.warning("Could not ask Spark to decommission executor %s", executor_id, exc_info=True)

    def disable_executor(self, executor_id: str) -> None:
        try:
            self._java.disableExecutorById(executor_id)
        except Exception:
            log.warning("Could not disable executor %s in Spark", executor_id, exc_info=True)

    def registered_executors(self) -> Mapping[str, float]:
        try:
            millis: dict[str, Any] = json.loads(self._java.registeredExecutorsJson())
        except Exception:
            log.warning("Could not list Spark's registered executors", exc_info=True)
            return {}
        return {str(k): float(v) / 1000.0 for k, v in millis.items()}

    def executor_activity(self) -> Mapping[str, ExecutorActivity] | None:
        """Per executor: running tasks, cached RDD blocks and live shuffle outputs (Spark's status store
        and map-output tracker); None when the JVM cannot tell now."""
        try:
            facts: dict[str, Any] = json.loads(self._java.executorActivityJson())
        except Exception:
            log.debug("Could not read Spark's executor activity", exc_info=True)
            return None
        return {
            str(executor_id): ExecutorActivity(
                tasks=int(f.get("tasks", 0)),
                rdd_blocks=int(f.get("rddBlocks", 0)),
                shuffle=bool(f.get("shuffle")),
            )
            for executor_id, f in facts.items()
        }
    def executor_summaries(self) -> Sequence[ExecutorSummary]:
        """Spark's ``statusStore.executorList(true)``, read in the JVM in one call (as JSON)."""
        try:
            return summaries_from_json(self._java.executorSummariesJson())
        except Exception:
            log.warning("Could not read Spark's executor summaries", exc_info=True)
            return []

    def backend_stopped(self) -> None:
        """Tell the JVM backend that this backend has stopped and removed what it created: the JVM then
        forwards nothing more, and its own stop (e.g. from its shutdown hook after this process is gone)
        has nothing to pass. Silent when the JVM is gone already (it may have died first)."""
        try:
            self._java.pythonStopped()
        except Exception:
            log.debug("Could not tell the JVM that the Kubernetes backend stopped", exc_info=True)

    def application_failed(self, reason: str) -> None:
        """The backend gave up on the application: Spark stops the SparkContext."""
        try:
            self._java.failApplication(reason)
        except Exception:
            log.warning("Could not stop the SparkContext after: %s", reason, exc_info=True)


class PythonBackendCallbacks:
    """The Py4J callback object behind the JVM's ``PythonBackend`` interface.

    Method names are the Java interface's. ``on_stopped`` runs on the bridge thread after the backend
    stopped (e.g. to stop a local cluster); ``tell_stopped`` after that, before :attr:`stopped` is set, so
    that the JVM knows before this process may exit (:meth:`JvmDriverEndpoint.backend_stopped`).

    The stop runs once, whoever asks first: the JVM's ``stop`` (Spark's, or the JVM's shutdown hook), or
    Python's own at interpreter exit (:meth:`k8s_backend.spark.factory.BackendFactory.stop_at_exit`).
    """

    class Java:
        implements = ["io.k8sbackend.bridge.PythonBackend"]

    def __init__(
        self,
        backend: BackendHooks,
        *,
        conf: Mapping[str, str] | None = None,
        on_stopped: Callable[[], None] | None = None,
        tell_stopped: Callable[[], None] | None = None,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
    ) -> None:
        self.backend = backend
        self._conf = dict(conf or {})
        self._on_stopped = on_stopped
        self._tell_stopped = tell_stopped
        self._stop_timeout = stop_timeout
        self._app_id = backend.application_id()
        self._registered_profiles: set[int] = set()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._stop_requested = False
        self._worker = SerialWorker("k8s-backend-bridge")

    # -- work, queued ----------------------------------------------------------------------------

    def start(self) -> None:
        self._queue("start", self.backend.start)

    def requestTotalExecutors(self, request_json: str) -> None:
        self._queue("requestTotalExecutors", lambda: self._request(request_json))

    def killExecutors(self, executor_ids_json: str) -> None:
        self._queue("killExecutors", lambda: self.backend.kill_executors(_ids(executor_ids_json)))

    def decommissionExecutors(self, executor_ids_json: str, triggered_by_executor: bool) -> None:
        # As Spark's Kubernetes backend: an executor that decommissions itself is already on its way out,
        # only a driver-initiated decommission needs the pods labelled.
        if triggered_by_executor:
            return
        self._queue(
            "decommissionExecutors", lambda: self.backend.decommission_executors(_ids(executor_ids_json))
        )

    def decommissionEnded(self, executor_id: str, reason: str) -> None:
        # Called on Spark's RPC thread as it handles the executor's RemoveExecutor: queued, never waited on.
        self._queue(
            "decommissionEnded", lambda: self.backend.decommission_ended(str(executor_id), str(reason))
        )

    @property
    def stopped(self) -> bool:
        """Whether the backend's stop has finished."""
        return self._stopped.is_set()

    def stop(self) -> None:
        """Stop the backend and wait for it, at most ``stop_timeout`` seconds (Spark waits for cleanup)."""
        with self._stop_lock:
            first = not self._stop_requested
            self._stop_requested = True
        if first:
            self._worker.submit(self._stop)
        if not self._stopped.wait(self._stop_timeout):
            log.error("The Kubernetes backend did not stop within %.0f s", self._stop_timeout)
        self._worker.close()

    # -- questions, answered at once ---------------------------------------------------------------

    def isExecutorExcluded(self, executor_id: str, hostname: str) -> bool:
        try:
            return bool(self.backend.is_executor_excluded(executor_id))
        except Exception:
            log.exception("is_executor_excluded(%s) failed; accepting the executor", executor_id)
            return False

    def sufficientResourcesRegistered(self) -> bool:
        try:
            return bool(self.backend.sufficient_resources_registered())
        except Exception:
            log.exception("sufficient_resources_registered() failed; answering no")
            return False

    def applicationId(self) -> str:
        return self._app_id

    def generateExecId(self, pod_name: str) -> int:
        """Spark's GenerateExecID for a statefulset/deployment executor; 0 (refused) on any error."""
        try:
            return int(self.backend.generate_executor_id(pod_name))
        except Exception:
            log.exception("generate_executor_id(%s) failed; the executor gets no id", pod_name)
            return 0

    # -- internals ---------------------------------------------------------------------------------

    def _queue(self, hook: str, work: Callable[[], object]) -> None:
        if self._stop_requested:
            log.debug("Ignoring %s: the backend is stopping", hook)
            return

        def run() -> None:
            try:
                work()
            except Exception:
                log.exception("The Kubernetes backend's %s failed", hook)

        try:
            self._worker.submit(run)
        except Exception:  # never let an error travel back into the JVM thread
            log.exception("Could not queue %s", hook)

    def _request(self, request_json: str) -> None:
        request = parse_request(request_json, self._conf)
        for profile in request.custom_profiles():
            if profile.id not in self._registered_profiles:
                # Profiles first: a target may name a profile the backend has not seen yet.
                self.backend.register_resource_profile(profile)
                self._registered_profiles.add(profile.id)
                log.info("Registered resource profile %s: %s", profile.id, profile)
        self.backend.request_total_executors(request.targets)

    def _stop(self) -> None:
        try:
            self.backend.stop()
        except Exception:
            log.exception("The Kubernetes backend failed to stop cleanly")
        finally:
            try:
                if self._on_stopped is not None:
                    self._on_stopped()
                log.info("The Kubernetes backend of %s has stopped", self._app_id)
            except Exception:
                log.exception("Cleanup after the backend stopped failed")
            finally:
                try:
                    if self._tell_stopped is not None:
                        self._tell_stopped()
                except Exception:
                    log.exception("Could not report that the backend stopped")
                finally:
                    self._stopped.set()


class SerialWorker:
    """One daemon thread running submitted work strictly in submission order."""

    def __init__(self, name: str) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, task: Callable[[], None]) -> None:
        self._tasks.put(task)

    def close(self) -> None:
        """Let the thread finish what is queued, then end."""
        self._tasks.put(None)

    def _run(self) -> None:
        while (task := self._tasks.get()) is not None:
            try:
                task()
            except Exception:  # one failing task must not stop the ones behind it
                log.exception("Bridge task failed")


def summaries_from_json(text: str) -> list[ExecutorSummary]:
    """The JVM's ``executorSummariesJson()``: a list of Spark's ``v1.ExecutorSummary`` fields, with
    ``addTime`` in epoch milliseconds and the peak JVM memory metrics flattened (0 when unknown)."""
    return [
        ExecutorSummary(
            id=str(item["id"]),
            add_time=datetime.datetime.fromtimestamp(item["addTime"] / 1000.0, datetime.timezone.utc),
            total_tasks=int(item["totalTasks"]),
            failed_tasks=int(item["failedTasks"]),
            total_duration=int(item["totalDuration"]),
            total_gc_time=int(item["totalGCTime"]),
            total_shuffle_write=int(item["totalShuffleWrite"]),
            disk_used=int(item["diskUsed"]),
            peak_jvm_heap_memory=int(item["peakJVMHeapMemory"]),
            peak_jvm_off_heap_memory=int(item["peakJVMOffHeapMemory"]),
        )
        for item in json.loads(text)
    ]


def _ids(text: str) -> list[str]:
    return [str(i) for i in json.loads(text)]
