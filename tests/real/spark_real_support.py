"""Scenarios of a real PySpark driver on a real control plane, run in fresh Python processes.

``python spark_real_support.py SCENARIO OUT.json CLUSTER.json``: CLUSTER.json holds how to reach the
cluster (``url``, ``token``, ``ca``, ``master``, ``conf``: what :class:`LocalCluster` hands out); the
scenario writes its observations to OUT.json after every step, and the test asserts on them. Each
scenario needs its own driver JVM (pyspark launches one per Python process).

The helpers of the embedded-cluster scenarios (tests/support/real_backend_support.py) are reused: the gated
job, /proc probes and Spark's status store; the pods are watched over the real API server here.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# Run as a script: the shared helpers' folder is not on its path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from real_backend_support import (
    BASE_CONF,
    DYNAMIC_CONF,
    FAST_JVM,
    WAIT,
    GatedJob,
    Report,
    active_tasks,
    executor_processes,
    removed_executors,
    session_processes,
    wait_until,
)

from k8s_backend.allocation.owner_objects import DEPLOYMENTS, STATEFUL_SETS
from k8s_backend.kube.port import PODS, ApiError, KubernetesApi, NotFoundError

Obj = dict[str, Any]


def pod_view(pod: Mapping[str, Any], deleted: bool = False) -> Obj:
    """What the tests look at in an executor pod."""
    meta, status, spec = pod.get("metadata") or {}, pod.get("status") or {}, pod.get("spec") or {}
    ended = [
        terminated
        for container in status.get("containerStatuses") or []
        if (terminated := (container.get("state") or {}).get("terminated"))
    ]
    view = {
        "name": str(meta.get("name")),
        "executor_id": str((meta.get("labels") or {}).get("spark-exec-id", "")),
        "node": str(spec.get("nodeName") or ""),
        "phase": str(status.get("phase") or ""),
        "exit_code": int(ended[0].get("exitCode", 0)) if ended else None,
        "reason": str(ended[0].get("reason") or "") if ended else "",
        "deleting": bool(meta.get("deletionTimestamp")),
        "deleted": deleted,
    }
    view["live"] = not (view["deleting"] or deleted) and view["phase"] in ("Pending", "Running", "")
    return view


class PodWatcher:
    """Keeps every executor pod's latest view from a watch on a real API server, re-opened when the
    server ends it (it does, after its timeout); :meth:`wait_for` re-checks a condition on each event."""

    def __init__(self, api: KubernetesApi, namespace: str = "default", selector: str = "spark-role=executor"):
        self._api, self._namespace, self._selector = api, namespace, selector
        self._cond = threading.Condition()
        self._views: dict[str, Obj] = {}
        self.specs: dict[str, Obj] = {}  # each pod as first seen
        self.ever_running: set[str] = set()
        self.max_live = 0
        self._closed = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name="pod-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        version: str | None = None
        while not self._closed.is_set():
            try:
                if version is None:
                    listed = self._api.list(PODS, self._namespace, label_selector=self._selector)
                    for pod in listed.items:
                        self._note(pod)
                    version = listed.resource_version
                self._stream = self._api.watch(
                    PODS, self._namespace, label_selector=self._selector, resource_version=version,
                    timeout_seconds=60,
                )  # fmt: skip
                for event in self._stream:
                    version = event.object.get("metadata", {}).get("resourceVersion") or version
                    if event.type != "BOOKMARK":
                        self._note(event.object, deleted=event.type == "DELETED")
            except ApiError:
                version = None  # 410 Gone and the like: list again
            except Exception:
                if self._closed.is_set():
                    return
                self._closed.wait(0.2)

    def _note(self, pod: Obj, deleted: bool = False) -> None:
        view = pod_view(pod, deleted)
        with self._cond:
            self._views[view["name"]] = view
            self.specs.setdefault(view["name"], pod)
            if view["phase"] == "Running":
                self.ever_running.add(view["name"])
            self.max_live = max(self.max_live, sum(1 for v in self._views.values() if v["live"]))
            self._cond.notify_all()

    def views(self) -> list[Obj]:
        with self._cond:
            return sorted(self._views.values(), key=lambda v: (len(v["executor_id"]), v["executor_id"]))

    def live(self) -> list[Obj]:
        return [view for view in self.views() if view["live"]]

    def wait_for(self, predicate: Callable[[PodWatcher], bool], timeout: float = WAIT) -> bool:
        with self._cond:
            return bool(self._cond.wait_for(lambda: predicate(self), timeout))

    def close(self) -> None:
        self._closed.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        self._thread.join(10.0)


def cluster_api(cluster: Mapping[str, Any]) -> KubernetesApi:
    """The official-client adapter for the cluster, with its own credentials only."""
    from k8s_backend.kube.client import OfficialKubernetesApi
    from k8s_backend.kube.settings import ApiClientConf

    conf = ApiClientConf(master=cluster["url"], oauth_token=cluster["token"], ca_cert_file=cluster["ca"])
    return OfficialKubernetesApi.from_conf(
        conf, namespace_default="default", environ={"HOME": "/nonexistent"}
    )


def dynamic_allocation_scenario(out: Path, cluster: Mapping[str, Any]) -> None:
    """k8s_backend's backend behind PySpark: scale up under held tasks, SIGKILL an executor mid-job,
    scale down when idle, stop."""
    from k8s_backend.spark import session

    report = Report(out)
    conf = {k: v for k, v in cluster["conf"].items() if k != "spark.master"}
    conf.update(BASE_CONF)
    conf.update(DYNAMIC_CONF)
    api = cluster_api(cluster)
    watcher = PodWatcher(api)
    spark = session(cluster["master"], conf, "real-cp-dynamic")
    app_id = spark.sparkContext.applicationId
    report.step("started", app_id=app_id, master=spark.sparkContext.master)
    sessions: set[int] = set()

    def note_processes() -> dict[str, int]:
        found = executor_processes(app_id)
        sessions.update(found.values())  # an executor JVM leads its container's session
        return found

    job = GatedJob(spark, out.with_suffix(".gate")).start()
    try:
        scaled = watcher.wait_for(lambda w: sum(1 for v in w.live() if v["phase"] == "Running") >= 3)
        busy = wait_until(lambda: sum(1 for n in active_tasks(spark).values() if n > 0) >= 3)
        processes = note_processes()
        report.step(
            "scaled_up", scaled_up=scaled, all_busy=busy, pods_after_scale_up=watcher.views(),
            processes_after_scale_up=processes,
        )  # fmt: skip

        victim = sorted(processes)[0]
        before = {view["name"] for view in watcher.views()}
        os.kill(processes[victim], signal.SIGKILL)
        lost = wait_until(lambda: victim in removed_executors(spark))
        replaced = watcher.wait_for(lambda w: any(v["name"] not in before and v["live"] for v in w.views()))
        replacement_running = wait_until(lambda: len(set(note_processes()) - {victim}) >= 3)
        report.step(
            "killed", victim=victim, lost_seen=lost, removed_after_kill=removed_executors(spark),
            replacement_created=replaced, replacement_running=replacement_running,
            pods_after_kill=watcher.views(),
        )  # fmt: skip
        result = job.release()
        failed, completed = job.task_counts()
        report.step(
            "job_done", job_result=result, expected_sum=job.expected,
            failed_task_attempts=failed, completed_tasks=completed,
        )  # fmt: skip

        idle = watcher.wait_for(lambda w: len(w.live()) == 1)
        spark_side = wait_until(lambda: len(active_tasks(spark)) == 1)
        report.step(
            "scaled_down", scaled_down=idle, pods_after_idle=watcher.views(), spark_saw_one=spark_side,
            spark_executors_after_idle=active_tasks(spark),
        )  # fmt: skip
        note_processes()
    finally:
        job.release(0)
        spark.stop()
    gone = watcher.wait_for(lambda w: all(v["deleted"] for v in w.views()), timeout=120)
    watcher.close()
    report.step(
        "stopped",
        all_deleted=gone,
        pods_left=[
            p["metadata"]["name"] for p in api.list(PODS, "default", label_selector="spark-role").items
        ],
        final_pods=watcher.views(),
        max_live_pods=watcher.max_live,
        executor_processes_after_stop=executor_processes(app_id),
        session_processes_after_stop=session_processes(sessions),
        sessions=sorted(sessions),
    )


DRAIN_CONF = {
    "spark.executor.instances": "2",
    "spark.decommission.enabled": "true",
    "spark.storage.decommission.enabled": "true",
    "spark.storage.decommission.shuffleBlocks.enabled": "true",
    "spark.storage.decommission.rddBlocks.enabled": "true",
    "spark.kubernetes.executor.disruption.nodeCheckInterval": "500ms",
}


def second_job_tasks(spark: Any, group: str) -> dict[str, int]:
    """Of the jobs in ``group``: the tasks run again for earlier stages (recomputed shuffle outputs),
    failed task attempts (FetchFailed among them) and stage retries, from Spark's status tracker."""
    tracker = spark.sparkContext.statusTracker()
    recomputed = failed = retries = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        result_stage = max(job.stageIds)
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is None:
                continue
            failed += stage.numFailedTasks
            retries += stage.currentAttemptId
            if stage_id != result_stage:
                recomputed += stage.numCompletedTasks
    return {"recomputed_tasks": recomputed, "failed_tasks": failed, "stage_retries": retries}


def timeline_markers(spark: Any) -> list[list[str]]:
    """The backend's timeline markers so far, ``[kind, text]`` in order (what its HTML page draws)."""
    from k8s_backend.spark.status import FACTORY_ATTRIBUTE

    backend = getattr(spark.sparkContext._gateway, FACTORY_ATTRIBUTE).current.backend
    return [[kind, text] for _, kind, text in backend.parts.monitor.recent_activity(50)[1]]


def drain_scenario(out: Path, cluster: Mapping[str, Any], *, on: bool) -> None:
    """A job writes shuffle outputs on two executors, one node is drained (cordon, then the eviction
    API, as kubectl drain does), then a second job reads those outputs. With decommission on notice the
    drained executor migrates its shuffle blocks when its node is cordoned, before its eviction; off, its
    eviction loses them and Spark recomputes them."""
    from k8s_backend.kube.port import NODES, NotFoundError, Resource
    from k8s_backend.spark import session

    report = Report(out)
    conf = {k: v for k, v in cluster["conf"].items() if k != "spark.master"}
    conf.update(BASE_CONF)
    conf.update(DRAIN_CONF)
    conf["spark.kubernetes.executor.disruption.decommissionOnNotice"] = str(on).lower()
    api = cluster_api(cluster)
    watcher = PodWatcher(api)
    spark = session(cluster["master"], conf, f"real-cp-drain-{'on' if on else 'off'}")
    sc = spark.sparkContext
    drained_node = None
    try:
        report.step("started", registered=wait_until(lambda: len(active_tasks(spark)) == 2))
        pairs = sc.parallelize(range(4000), 8).map(lambda x: (x % 16, x)).partitionBy(8)
        report.step("first_job", first_count=pairs.count())
        live = [v for v in watcher.views() if v["live"]]
        drained_node = next(v["node"] for v in live if v["executor_id"] == "1")
        drained = sorted(v["executor_id"] for v in live if v["node"] == drained_node)
        api.patch(NODES, None, drained_node, {"spec": {"unschedulable": True}})  # kubectl cordon
        if on:  # the notice: Spark decommissions and migrates; the executor then exits by itself
            migrated = wait_until(lambda: set(drained) <= set(removed_executors(spark)))
            report.step("decommissioned", migrated=migrated, removed=removed_executors(spark))
        for view in watcher.views():  # kubectl drain's evictions, of what is left on the node
            if view["executor_id"] in drained and view["live"]:
                name = view["name"]
                body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
                with contextlib.suppress(NotFoundError):  # it exited meanwhile
                    api.create(Resource("Eviction", f"pods/{name}/eviction"), "default", body)
        gone = wait_until(lambda: set(drained) <= set(removed_executors(spark)))
        report.step("drained", drained=drained, drained_node=drained_node, gone_in_spark=gone)
        # Each drained executor's end is on the timeline ("gone" follows its pod's end).
        ended = wait_until(lambda: sum(k == "gone" for k, _ in timeline_markers(spark)) >= len(drained))
        report.step("timeline", markers=timeline_markers(spark), timeline_ended=ended)
        sc.setJobGroup("second", "reads the first job's shuffle outputs")
        sizes = pairs.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
        report.step(
            "second_job", second_sizes=sizes, removed=removed_executors(spark),
            **second_job_tasks(spark, "second"),
        )  # fmt: skip
    finally:
        spark.stop()
        if drained_node is not None:  # uncordon: the next scenario has both nodes
            api.patch(NODES, None, drained_node, {"spec": {"unschedulable": False}})
        watcher.close()


SPARK_JVM_BACKEND_JOB = """
import json, os, sys
from pyspark.sql import SparkSession

settings = json.loads(sys.argv[1])
builder = SparkSession.builder.master(settings["master"]).appName("real-cp-spark-backend")
for key, value in settings["conf"].items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
sc = spark.sparkContext
try:
    total = sc.parallelize(range(1000), 4).sum()
    where = sorted(set(sc.parallelize(range(8), 8).map(
        lambda _: (os.environ.get("SPARK_EXECUTOR_POD_NAME"), os.getsid(0))
    ).collect()))
    executors = len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1  # minus the driver
    print(json.dumps({"sum": total, "where": where, "executors": executors, "app": sc.applicationId}))
finally:
    spark.stop()
"""
"""A driver with Spark's own JVM Kubernetes backend (``k8s://``), as a user's script would be."""
SPARK_JVM_BACKEND_CONF = {
    "spark.executor.instances": "2",
    "spark.executor.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": FAST_JVM,
    "spark.executor.extraJavaOptions": FAST_JVM,
}


def owner_allocator_scenario(kind: str, out: Path, cluster: Mapping[str, Any]) -> None:
    """k8s_backend's statefulset or deployment allocator behind PySpark: the controller makes the
    executor pods, each executor gets its id through GenerateExecID, a job gives the right answer,
    dynamic allocation scales up under held tasks and back down when idle, stop deletes the owner."""
    from k8s_backend.spark import session

    report = Report(out)
    conf = {k: v for k, v in cluster["conf"].items() if k != "spark.master"}
    conf.update(BASE_CONF)
    conf.update(DYNAMIC_CONF)
    conf.update(
        {"spark.dynamicAllocation.maxExecutors": "2", "spark.kubernetes.allocation.pods.allocator": kind}
    )
    if kind == "deployment":
        conf["spark.kubernetes.executor.podDeletionCost"] = "-100"
    api = cluster_api(cluster)
    watcher = PodWatcher(api)
    spark = session(cluster["master"], conf, f"real-cp-{kind}")
    app_id = spark.sparkContext.applicationId
    resource = STATEFUL_SETS if kind == "statefulset" else DEPLOYMENTS
    owner = f"spark-{kind[0]}-{app_id}-0"
    report.step("started", app_id=app_id, owner=api.get(resource, "default", owner)["spec"])
    job = GatedJob(spark, out.with_suffix(".gate")).start()
    try:
        scaled = watcher.wait_for(lambda w: sum(1 for v in w.live() if v["phase"] == "Running") >= 2)
        busy = wait_until(lambda: sum(1 for n in active_tasks(spark).values() if n > 0) >= 2)
        report.step("scaled_up", scaled_up=scaled, all_busy=busy, pods_after_scale_up=watcher.views(),
                    spark_executors=active_tasks(spark))  # fmt: skip
        result = job.release()
        report.step("job_done", job_result=result, expected_sum=job.expected)
        idle = watcher.wait_for(lambda w: len(w.live()) == 1)
        spark_side = wait_until(lambda: len(active_tasks(spark)) == 1)
        report.step(
            "scaled_down", scaled_down=idle, pods_after_idle=watcher.views(), spark_saw_one=spark_side,
            spark_executors_after_idle=active_tasks(spark),
            replicas_after_idle=api.get(resource, "default", owner)["spec"]["replicas"],
        )  # fmt: skip
        total = spark.sparkContext.parallelize(range(1000), 4).sum()
        report.step("second_job", second_sum=total)
    finally:
        job.release(0)
        spark.stop()
    gone = watcher.wait_for(lambda w: all(v["deleted"] for v in w.views()), timeout=120)
    watcher.close()
    try:
        api.get(resource, "default", owner)
        owner_left = True
    except NotFoundError:
        owner_left = False
    report.step("stopped", all_deleted=gone, owner_left=owner_left, final_pods=watcher.views(),
                max_live_pods=watcher.max_live)  # fmt: skip


SCENARIOS: dict[str, Callable[[Path, Mapping[str, Any]], None]] = {
    "dynamic": dynamic_allocation_scenario,
    "drain-on": lambda out, cluster: drain_scenario(out, cluster, on=True),
    "drain-off": lambda out, cluster: drain_scenario(out, cluster, on=False),
    "statefulset": functools.partial(owner_allocator_scenario, "statefulset"),
    "deployment": functools.partial(owner_allocator_scenario, "deployment"),
}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in SCENARIOS:
        print(
            f"usage: spark_real_support.py {{{','.join(SCENARIOS)}}} OUT.json CLUSTER.json", file=sys.stderr
        )
        return 2
    SCENARIOS[argv[0]](Path(argv[1]), json.loads(Path(argv[2]).read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
