"""Helpers for the real-backend e2e tests: a pod recorder, process and status-store probes, and the
scenarios those tests run in fresh Python processes.

Each scenario needs its own driver JVM (pyspark launches one per Python process, and its system
properties outlive a SparkContext), so the test starts ``python real_backend_support.py SCENARIO OUT``
and asserts on the JSON observations the scenario writes to ``OUT``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from k8s_backend.kube.port import PODS
from k8s_backend.local.kubelet.container import EXECUTOR_MAIN
from k8s_backend.local.kubelet.processes import process_table

FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # JVM start-up speed on small machines
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.executor.memory": "512m",
    "spark.driver.extraJavaOptions": FAST_JVM,
    "spark.executor.extraJavaOptions": FAST_JVM,
}
WAIT = 180.0


def wait_until(predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Re-check a condition owned by other processes (the JVM, executors) until it holds."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        pause.wait(0.2)
    return predicate()


# -- processes -----------------------------------------------------------------------------------------


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def executor_processes(app_id: str) -> dict[str, int]:
    """Executor id -> pid of the live executor JVMs of an application (read from /proc)."""
    found: dict[str, int] = {}
    for proc in process_table():
        argv = _cmdline(proc.pid)
        if EXECUTOR_MAIN not in argv or "--app-id" not in argv or "--executor-id" not in argv:
            continue
        if argv[argv.index("--app-id") + 1] == app_id:
            found[argv[argv.index("--executor-id") + 1]] = proc.pid
    return found


def session_processes(sessions: Iterable[int]) -> list[int]:
    """Live processes in any of these process sessions (a container's executor JVM and its Python
    workers share one: the kubelet starts each container in a new session)."""
    wanted = set(sessions)
    return [proc.pid for proc in process_table() if proc.session in wanted]


def is_alive(pid: int) -> bool:
    return any(proc.pid == pid for proc in process_table())


# -- pods ----------------------------------------------------------------------------------------------


@attrs.frozen
class PodView:
    """What a pod looked like the last time the recorder saw it."""

    name: str
    executor_id: str
    phase: str
    exit_code: int | None
    reason: str
    deleting: bool
    deleted: bool

    @property
    def live(self) -> bool:
        """Asked for and not on its way out: what counts towards the executor total."""
        return not (self.deleting or self.deleted) and self.phase in ("Pending", "Running", "")


def pod_view(pod: Mapping[str, Any], deleted: bool = False) -> PodView:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    ended = [
        terminated
        for container in status.get("containerStatuses") or []
        if (terminated := (container.get("state") or {}).get("terminated"))
    ]
    return PodView(
        name=str(meta.get("name")),
        executor_id=str((meta.get("labels") or {}).get("spark-exec-id", "")),
        phase=str(status.get("phase") or ""),
        exit_code=int(ended[0].get("exitCode", 0)) if ended else None,
        reason=str(ended[0].get("reason") or "") if ended else "",
        deleting=bool(meta.get("deletionTimestamp")),
        deleted=deleted,
    )


class PodRecorder:
    """Watches a fake API's pods on a thread and keeps every pod's latest view, until the API closes.

    :meth:`wait_for` blocks until a condition on the views holds, re-checked on every pod event.
    """

    def __init__(self, fake: Any, namespace: str = "default") -> None:
        self._cond = threading.Condition()
        self._views: dict[str, PodView] = {}
        self.max_live = 0
        # Watch from the current version: the pods that exist now come first, then every change.
        self._stream = fake.watch(PODS, namespace, resource_version="0")
        self._thread = threading.Thread(target=self._run, name="pod-recorder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for event in self._stream:
            if event.type == "BOOKMARK":
                continue
            view = pod_view(event.object, deleted=event.type == "DELETED")
            with self._cond:
                self._views[view.name] = view
                self.max_live = max(self.max_live, sum(1 for v in self._views.values() if v.live))
                self._cond.notify_all()

    def views(self) -> list[PodView]:
        with self._cond:
            return sorted(self._views.values(), key=lambda v: (len(v.executor_id), v.executor_id))

    def live(self) -> list[PodView]:
        return [view for view in self.views() if view.live]

    def wait_for(self, predicate: Callable[[PodRecorder], bool], timeout: float = WAIT) -> bool:
        with self._cond:
            return bool(self._cond.wait_for(lambda: predicate(self), timeout))

    def close(self) -> None:
        self._stream.close()
        self._thread.join(10.0)


# -- Spark's view ----------------------------------------------------------------------------------------


def _executor_summaries(spark: Any, active_only: bool) -> list[Any]:
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(active_only)
    return [summaries.apply(i) for i in range(summaries.size())]


def removed_executors(spark: Any) -> dict[str, str]:
    """Executor id -> remove reason, from Spark's status store."""
    return {
        str(s.id()): str(s.removeReason().get())
        for s in _executor_summaries(spark, False)
        if not s.isActive() and s.removeReason().isDefined()
    }


def active_tasks(spark: Any) -> dict[str, int]:
    """Active executor id -> number of tasks it runs now (the driver left out)."""
    return {
        str(s.id()): int(s.activeTasks()) for s in _executor_summaries(spark, True) if str(s.id()) != "driver"
    }


# -- scenarios (run in a fresh Python process) -----------------------------------------------------------


class GatedJob:
    """A job on a background thread whose tasks hold their executors until :meth:`release`."""

    def __init__(self, spark: Any, gate: Path, partitions: int = 12) -> None:
        self._sc = spark.sparkContext
        self._gate = gate
        self.partitions = partitions
        self.expected = sum(x * x for x in range(partitions * 2))
        self.result: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, name="gated-job", daemon=True)

    def start(self) -> GatedJob:
        self._thread.start()
        return self

    def release(self, timeout: float = WAIT) -> dict[str, Any]:
        """Let the tasks finish; the job's sum, or its error."""
        self._gate.touch()
        self._thread.join(timeout)
        return self.result

    def task_counts(self) -> tuple[int, int]:
        """(failed task attempts, completed tasks) of the job's stages, from Spark's status tracker."""
        tracker = self._sc.statusTracker()
        failed = completed = 0
        for job_id in tracker.getJobIdsForGroup("gated"):
            job = tracker.getJobInfo(job_id)
            for stage in job.stageIds if job is not None else []:
                info = tracker.getStageInfo(stage)
                if info is not None:
                    failed += info.numFailedTasks
                    completed += info.numCompletedTasks
        return failed, completed

    def _run(self) -> None:
        gate = str(self._gate)

        def square(x: int) -> int:  # runs on an executor: hold it until the gate file exists
            pause, deadline = threading.Event(), time.monotonic() + 300
            while not os.path.exists(gate) and time.monotonic() < deadline:
                pause.wait(0.05)
            return x * x

        try:
            self._sc.setJobGroup("gated", "tasks held until the scenario releases them")
            rdd = self._sc.parallelize(range(self.partitions * 2), self.partitions)
            self.result["sum"] = rdd.map(square).sum()
        except Exception as error:
            self.result["error"] = repr(error)


class Report:
    """The observations a scenario hands back to its test, rewritten as JSON after every step."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.data: dict[str, Any] = {"steps": []}
        self._started = time.monotonic()

    def step(self, name: str, **facts: Any) -> None:
        self.data["steps"].append({"step": name, "at": round(time.monotonic() - self._started, 1)})
        self.data.update(facts)
        self.out.write_text(json.dumps(self.data, indent=1, default=str))


DYNAMIC_CONF = {
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true",
    "spark.dynamicAllocation.minExecutors": "1",
    "spark.dynamicAllocation.maxExecutors": "3",
    "spark.dynamicAllocation.executorIdleTimeout": "3s",
    "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
}


def dynamic_allocation_scenario(out: Path) -> None:
    """Scale up under load, lose an executor to SIGKILL mid-job, scale down when idle, stop."""
    from pyspark.sql import SparkSession

    from k8s_backend.spark import prepare

    report = Report(out)
    factory = prepare("pyk8s://local", dict(BASE_CONF, **DYNAMIC_CONF))  # keeps the cluster at hand
    spark = SparkSession.builder.appName("real-backend-dynamic").getOrCreate()
    app_id = spark.sparkContext.applicationId
    cluster = factory.local
    backend: Any = factory.current.backend if factory.current is not None else None
    recorder = PodRecorder(cluster.fake)
    report.step("started", app_id=app_id, backend=type(backend).__name__, master=spark.sparkContext.master)
    sessions: set[int] = set()

    def note_processes() -> dict[str, int]:
        found = executor_processes(app_id)
        sessions.update(found.values())  # an executor JVM leads its container's session
        return found

    def pods() -> list[dict[str, Any]]:
        return [attrs.asdict(view) for view in recorder.views()]

    job = GatedJob(spark, out.with_suffix(".gate")).start()
    try:
        # (a) Held tasks queue up: Spark asks for executors, our backend creates pods, up to the maximum.
        scaled = recorder.wait_for(lambda r: sum(1 for v in r.live() if v.phase == "Running") >= 3)
        busy = wait_until(lambda: sum(1 for n in active_tasks(spark).values() if n > 0) >= 3)
        processes = note_processes()
        kubelet_pids = sorted(handle.pid for handle in cluster.kubelet.processes())
        report.step(
            "scaled_up", scaled_up=scaled, all_busy=busy, pods_after_scale_up=pods(),
            processes_after_scale_up=processes, kubelet_pids=kubelet_pids,
        )  # fmt: skip

        # (b) SIGKILL a busy executor's process, as the OOM killer would; the job waits meanwhile.
        victim = sorted(processes)[0]
        before = {view.name for view in recorder.views()}
        os.kill(processes[victim], signal.SIGKILL)
        lost = wait_until(lambda: victim in removed_executors(spark))
        replaced = recorder.wait_for(lambda r: any(v.name not in before and v.live for v in r.views()))
        # The replacement's JVM starts a while after its pod (long on a loaded machine): wait for its
        # process while the held job keeps every executor, so its session is among those checked at stop.
        replacement_running = wait_until(lambda: len(set(note_processes()) - {victim}) >= 3)
        report.step(
            "killed", victim=victim, lost_seen=lost, removed_after_kill=removed_executors(spark),
            replacement_created=replaced, replacement_running=replacement_running, pods_after_kill=pods(),
        )  # fmt: skip
        result = job.release()
        failed, completed = job.task_counts()
        report.step(
            "job_done", job_result=result, expected_sum=job.expected,
            failed_task_attempts=failed, completed_tasks=completed,
        )  # fmt: skip
        note_processes()

        # (c) Idle: Spark releases executors down to minExecutors; the backend deletes their pods.
        idle = recorder.wait_for(lambda r: len(r.live()) == 1)
        spark_side = wait_until(lambda: len(active_tasks(spark)) == 1)
        report.step(
            "scaled_down", scaled_down=idle, pods_after_idle=pods(), spark_saw_one=spark_side,
            spark_executors_after_idle=active_tasks(spark), status=backend.status(),
        )  # fmt: skip
        note_processes()
    finally:
        job.release(0)
        spark.stop()  # (d)
    recorder.close()
    report.step(
        "stopped",
        pods_left=[pod["metadata"]["name"] for pod in cluster.fake.objects(PODS, "default")],
        final_pods=pods(),
        max_live_pods=recorder.max_live,
        executor_processes_after_stop=executor_processes(app_id),
        session_processes_after_stop=session_processes(sessions),
        sessions=sorted(sessions),
        cluster_stopped=factory.local is None,
    )


def driver_crash_scenario(out: Path) -> None:
    """Start executors, run a job, then die by SIGKILL: no Python cleanup runs at all."""
    from pyspark.core.context import SparkContext

    from k8s_backend.spark import session

    report = Report(out)
    conf = dict(BASE_CONF, **{"spark.executor.instances": "2"})
    spark = session("pyk8s://local", conf, "real-backend-crash")
    sc = spark.sparkContext
    app_id = sc.applicationId
    answer = sc.parallelize(range(100), 4).sum()
    processes = executor_processes(app_id)
    gateway = SparkContext._gateway
    jvm = getattr(getattr(gateway, "proc", None), "pid", None)
    report.step("ran", app_id=app_id, answer=answer, executor_pids=processes, driver_jvm_pid=jvm)
    os.kill(os.getpid(), signal.SIGKILL)


def bad_configuration_scenario(out: Path) -> None:
    """ConfigErrors for properties that Spark checks first, and for one only our backend checks."""
    from pyspark.core.context import SparkContext

    from k8s_backend.errors import ConfigError
    from k8s_backend.spark import session
    from k8s_backend.spark.factory import default_creator

    report = Report(out)
    created: list[dict[str, Any]] = []

    def creator(conf: Mapping[str, str], **kwargs: Any) -> Any:
        # Creates the real backend; what the local cluster holds when it refuses is the evidence.
        api = kwargs["api"]
        try:
            return default_creator()(conf, **kwargs)
        finally:
            created.append({"pods": [p["metadata"]["name"] for p in api.list(PODS, "default").items]})

    cases = [
        ("no_jvm_yet", {"spark.executor.memory": "lots"}),
        ("backend_only", {"spark.kubernetes.allocation.batch.size": "0"}),
        ("jvm_running", {"spark.executor.memory": "lots"}),
    ]
    outcomes: dict[str, Any] = {}
    for name, bad in cases:
        created.clear()
        conf = dict(BASE_CONF, **bad)
        try:
            spark = session("pyk8s://local", conf, f"real-backend-{name}", create_backend=creator)
        except ConfigError as error:
            outcomes[name] = {"error": str(error), "key": error.key, "backend_calls": list(created)}
        except Exception as error:
            outcomes[name] = {"other_error": f"{type(error).__name__}: {error}"[:3000]}
        else:
            outcomes[name] = {"no_error": spark.sparkContext.applicationId}
            spark.stop()
        outcomes[name]["context_left"] = SparkContext._active_spark_context is not None
        outcomes[name]["jvm_running"] = SparkContext._gateway is not None
        report.step(name, outcomes=outcomes)
    report.step("done")


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "dynamic": dynamic_allocation_scenario,
    "crash": driver_crash_scenario,
    "bad-conf": bad_configuration_scenario,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in SCENARIOS:
        print(f"usage: real_backend_support.py {{{','.join(SCENARIOS)}}} OUT.json", file=sys.stderr)
        return 2
    SCENARIOS[argv[0]](Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
