"""Executor lifecycle scenarios on the real node, each a PySpark driver (k8s_backend's backend) in a fresh
Python process: an executor OOM-killed by the kernel, graceful decommission, and pod deletion with a grace
period.

``python node_lifecycle_support.py SCENARIO OUT.json CLUSTER.json``: CLUSTER.json holds ``url``, ``token``,
``ca``, ``master``, ``conf`` (what :class:`LocalCluster` hands out) and ``pod_logs`` (the kubelet's pod log
directory); the scenario writes its observations to OUT.json after every step, the test asserts on them.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# Run as a script: the shared helpers' folder is not on its path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from real_backend_support import Report, active_tasks, removed_executors, wait_until

from k8s_backend.kube.port import PODS, ApiError, KubernetesApi

Obj = dict[str, Any]
CONTAINER = "spark-kubernetes-executor"
WAIT = 240.0  # executor JVMs start slowly on 2 loaded cores
BASE_CONF = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.kubernetes.executor.request.cores": "100m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


def terminated(pod: Mapping[str, Any]) -> Obj:
    """The executor container's terminated state ({} while it runs)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == CONTAINER:
            return dict((status.get("state") or {}).get("terminated") or {})
    return {}


def executor_id(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get("spark-exec-id", ""))


def cri_log_text(path: Path) -> str:
    """A kubelet log file's text (the CRI format: ``<time> <stream> <P|F> <text>``)."""
    text = []
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4:
            text.append(parts[3] + ("" if parts[2] == "P" else "\n"))
    return "".join(text)


class ExecutorPods:
    """Every executor pod's latest object, from a list and watch re-opened when the server ends it, and
    its container log kept past the pod's deletion: a hard link to the kubelet's log file, taken while the
    container runs (the kubelet removes the file with the pod; the link keeps what the JVM wrote)."""

    def __init__(self, api: KubernetesApi, app_id: str, pod_logs: Path, keep: Path) -> None:
        self._api, self._pod_logs, self._keep = api, pod_logs, keep
        # This application's only: the previous scenario's executors may still be terminating.
        self._selector = f"spark-role=executor,spark-app-selector={app_id}"
        self._cond = threading.Condition()
        self.latest: dict[str, Obj] = {}  # by executor id
        self.first: dict[str, Obj] = {}  # each pod as first seen: its spec as the backend made it
        self.labels_seen: dict[str, set[str]] = {}  # every label each executor's pod ever had
        self.deleted: set[str] = set()
        # The first deletion timestamp and grace period seen: the API server moves the timestamp to "now"
        # when the kubelet, done, deletes the pod again with grace 0.
        self.deletion_asked: dict[str, tuple[str, int]] = {}
        self._closed = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name="executor-pods", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        version: str | None = None
        selector = self._selector
        while not self._closed.is_set():
            try:
                if version is None:
                    listed = self._api.list(PODS, "default", label_selector=selector)
                    for pod in listed.items:
                        self._note(pod, deleted=False)
                    version = listed.resource_version
                self._stream = self._api.watch(
                    PODS, "default", label_selector=selector, resource_version=version, timeout_seconds=60
                )
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

    def _note(self, pod: Obj, deleted: bool) -> None:
        exec_id = executor_id(pod)
        if (pod.get("status") or {}).get("phase") == "Running":
            self._keep_log(pod, exec_id)
        with self._cond:
            self.latest[exec_id] = pod
            self.first.setdefault(exec_id, pod)
            self.labels_seen.setdefault(exec_id, set()).update((pod["metadata"].get("labels") or {}).keys())
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and exec_id not in self.deletion_asked:
                grace = int(meta.get("deletionGracePeriodSeconds") or 0)
                self.deletion_asked[exec_id] = (str(meta["deletionTimestamp"]), grace)
            if deleted:
                self.deleted.add(exec_id)
            self._cond.notify_all()

    def _keep_log(self, pod: Obj, exec_id: str) -> None:
        meta = pod["metadata"]
        source = self._pod_logs / f"default_{meta['name']}_{meta['uid']}" / CONTAINER / "0.log"
        kept = self._keep / f"exec-{exec_id}.log"
        if kept.exists() or not source.exists():
            return
        try:
            os.link(source, kept)
        except OSError:  # another file system: a copy, refreshed by log() while the pod lives
            kept.write_bytes(source.read_bytes())

    def log(self, exec_id: str) -> str:
        """What the executor's container wrote, also after its pod is gone."""
        kept = self._keep / f"exec-{exec_id}.log"
        pod = self.latest.get(exec_id)
        if pod is not None and kept.exists() and kept.stat().st_nlink == 1:  # a copy: refresh it
            self._refresh_copy(pod, kept)
        return cri_log_text(kept) if kept.exists() else ""

    def _refresh_copy(self, pod: Obj, kept: Path) -> None:
        meta = pod["metadata"]
        source = self._pod_logs / f"default_{meta['name']}_{meta['uid']}" / CONTAINER / "0.log"
        if source.exists():
            kept.write_bytes(source.read_bytes())

    def wait_for(self, predicate: Callable[[ExecutorPods], bool], timeout: float = WAIT) -> bool:
        with self._cond:
            return bool(self._cond.wait_for(lambda: predicate(self), timeout))

    def ended(self, exec_id: str) -> Obj:
        """The executor container's terminated state, once its pod says so ({} before)."""
        pod = self.latest.get(exec_id)
        return terminated(pod) if pod is not None else {}

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
    environ = {"HOME": "/nonexistent"}
    return OfficialKubernetesApi.from_conf(conf, namespace_default="default", environ=environ)


def pod_facts(pods: ExecutorPods, exec_id: str) -> Obj:
    """What the tests look at in one executor's pod: how it ended, its limits, its log's Spark lines."""
    pod = pods.latest.get(exec_id) or {}
    first = pods.first.get(exec_id) or {}
    containers = (first.get("spec") or {}).get("containers") or [{}]
    return {
        "name": (pod.get("metadata") or {}).get("name"),
        "phase": (pod.get("status") or {}).get("phase"),
        "terminated": pods.ended(exec_id),
        "deletion_asked": pods.deletion_asked.get(exec_id),  # [deletion timestamp, grace period]
        "deleted": exec_id in pods.deleted,
        "memory_limit": ((containers[0].get("resources") or {}).get("limits") or {}).get("memory"),
        "labels_seen": sorted(pods.labels_seen.get(exec_id, set())),
        "pre_stop": ((containers[0].get("lifecycle") or {}).get("preStop") or {}).get("exec"),
        "log": pods.log(exec_id)[-20000:],
    }


def backend_status(spark: Any) -> Obj:
    """The parts of the backend's status() the tests check."""
    from k8s_backend.spark.status import status

    report = status(spark)
    return {"recent_losses": report["recent_losses"], "oom": report["oom"]}


def start(
    out: Path, cluster: Mapping[str, Any], conf: Mapping[str, str], name: str
) -> tuple[Any, ExecutorPods]:
    """The session and the watcher of its executor pods (started once the application has its id; the
    list it starts with has every pod made by then)."""
    from k8s_backend.spark import session

    settings = {k: v for k, v in cluster["conf"].items() if k != "spark.master"}
    settings.update(BASE_CONF)
    settings.update(conf)
    keep = out.with_suffix(".logs")
    keep.mkdir(exist_ok=True)
    spark = session(cluster["master"], settings, name)
    app_id = str(spark.sparkContext.applicationId)
    return spark, ExecutorPods(cluster_api(cluster), app_id, Path(cluster["pod_logs"]), keep)


def decommission(spark: Any, exec_id: str) -> None:
    """Spark's driver-side decommission (as the roll plugin, dynamic allocation or a user calls it):
    the scheduler backend's decommissionExecutors, which k8s_backend's bridge forwards to the backend's
    ``decommission_executors`` before Spark tells the executor. The target is kept: it is replaced."""
    context = spark.sparkContext
    jvm = context._jvm
    info = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo(
        "decommissioned by the node tier", jvm.scala.Option.empty()
    )
    pairs = context._gateway.new_array(jvm.scala.Tuple2, 1)
    pairs[0] = jvm.scala.Tuple2(exec_id, info)
    context._jsc.sc().schedulerBackend().decommissionExecutors(pairs, False, False)


def job_tasks(spark: Any, group: str) -> dict[str, int]:
    """Failed task attempts and completed tasks of the jobs in ``group``, from Spark's status tracker."""
    tracker = spark.sparkContext.statusTracker()
    failed = completed = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job is not None else []:
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                failed += stage.numFailedTasks
                completed += stage.numCompletedTasks
    return {"failed_tasks": failed, "completed_tasks": completed}


def replaced(spark: Any, exec_id: str) -> bool:
    """Whether Spark removed the executor and registered another in its place (two registered)."""
    return wait_until(lambda: exec_id in removed_executors(spark) and len(active_tasks(spark)) == 2, WAIT)


def squares(spark: Any) -> int:
    return int(spark.sparkContext.parallelize(range(1000), 4).map(lambda x: x * x).sum())


# -- OOM -------------------------------------------------------------------------------------------------

HOG_MIB = 400
OOM_CONF = {
    # One executor: the failed task's retry waits for the replacement, with its raised overhead.
    "spark.executor.instances": "1",
    "spark.executor.memoryOverhead": "384m",
    # The heap resident from the start (as a busy executor's is): the JVM is then the largest process in
    # the container, so the kernel's OOM killer picks it (on cgroup v1 it kills one process, the largest;
    # a Python worker killed alone would only fail its task).
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:+AlwaysPreTouch",
    "spark.kubernetes.executor.oom.overheadFactor": "3.0",
    "spark.kubernetes.executor.oom.maxOverheadFactor": "3.0",
    # A task may fail once: on, its retry fits the raised limit; off, it is OOM-killed again, and that ends
    # the job (Spark's default, 4, would only repeat the same kill twice more).
    "spark.task.maxFailures": "2",
}
# The same without OOM-aware replacements (the keys' default): the comparison's "off".
OOM_OFF_CONF = {**OOM_CONF, "spark.kubernetes.executor.oom.overheadFactor": "1.0"}


def hog(index: int, rows: Any) -> Any:
    """Runs in the executor's Python worker: partition 0 needs HOG_MIB MiB more than the first pod's
    limit leaves (512 MiB heap + 384 MiB overhead), and fits in the raised one."""
    if index == 0:
        block = b"x" * (HOG_MIB << 20)  # written, so resident
        yield len(block) >> 20
    else:
        yield from rows


def oom_scenario(out: Path, cluster: Mapping[str, Any]) -> None:
    report = Report(out)
    spark, pods = start(out, cluster, OOM_CONF, "node-oom")
    try:
        sc = spark.sparkContext
        report.step("started", registered=wait_until(lambda: len(active_tasks(spark)) == 1, WAIT))
        sc.setJobGroup("hog", "one partition over the first executor's memory limit")
        try:
            report.step("job", answer=sc.parallelize(range(4), 4).mapPartitionsWithIndex(hog).collect())
        except Exception as error:
            report.step("job", error=repr(error)[-4000:])
        report.step("tasks", **job_tasks(spark, "hog"))
        swapped = wait_until(lambda: set(active_tasks(spark)) == {"2"}, WAIT)
        report.step(
            "replaced", replaced=swapped, removed=removed_executors(spark), status=backend_status(spark),
            first=pod_facts(pods, "1"), replacement=pod_facts(pods, "2"),
        )  # fmt: skip
        report.step("second_job", second_answer=squares(spark))
    finally:
        spark.stop()
        pods.close()


def oom_off_scenario(out: Path, cluster: Mapping[str, Any]) -> None:
    """The OOM scenario without OOM-aware replacements: the replacement gets the same limit and the task's
    retry is OOM-killed there too."""
    report = Report(out)
    spark, pods = start(out, cluster, OOM_OFF_CONF, "node-oom-off")
    try:
        sc = spark.sparkContext
        report.step("started", registered=wait_until(lambda: len(active_tasks(spark)) == 1, WAIT))
        sc.setJobGroup("hog", "one partition over every executor's memory limit")
        try:
            report.step("job", answer=sc.parallelize(range(4), 4).mapPartitionsWithIndex(hog).collect())
        except Exception as error:
            report.step("job", error=str(error)[:4000])  # the Java message leads
        report.step("tasks", **job_tasks(spark, "hog"))
        second_ended = pods.wait_for(lambda p: bool(p.ended("2")))
        report.step(
            "ended", second_ended=second_ended, removed=removed_executors(spark),
            status=backend_status(spark), first=pod_facts(pods, "1"), replacement=pod_facts(pods, "2"),
        )  # fmt: skip
    finally:
        spark.stop()
        pods.close()


# -- decommission ----------------------------------------------------------------------------------------

DECOMMISSION_CONF = {
    "spark.executor.instances": "2",
    "spark.decommission.enabled": "true",
    "spark.kubernetes.executor.decommissionLabel": "spark-decommissioning",
}


def decommission_scenario(out: Path, cluster: Mapping[str, Any]) -> None:
    """Executor 1 decommissioned by the driver (the backend's ``decommission_executors``); executor 2's pod
    deleted with a grace period (as a drain's eviction does), which runs the preStop /opt/decom.sh."""
    report = Report(out)
    spark, pods = start(out, cluster, DECOMMISSION_CONF, "node-decommission")
    api = cluster_api(cluster)
    try:
        report.step("started", registered=wait_until(lambda: set(active_tasks(spark)) == {"1", "2"}, WAIT))
        report.step("first_job", answer=squares(spark))
        report.step("logs_kept", logs_kept=wait_until(lambda: all(pods.log(i) for i in ("1", "2")), 60))
        decommission(spark, "1")
        gone = pods.wait_for(lambda p: "1" in p.deleted)
        report.step(
            "decommissioned", gone=gone, replaced=replaced(spark, "1"), removed=removed_executors(spark),
            by_driver=pod_facts(pods, "1"),
        )  # fmt: skip
        api.delete(PODS, "default", pods.latest["2"]["metadata"]["name"], grace_period_seconds=60)
        gone = pods.wait_for(lambda p: "2" in p.deleted)
        report.step(
            "deleted", gone=gone, replaced=replaced(spark, "2"), removed=removed_executors(spark),
            by_deletion=pod_facts(pods, "2"), status=backend_status(spark),
        )  # fmt: skip
        report.step("second_job", second_answer=squares(spark))
    finally:
        spark.stop()
        pods.close()


# -- SIGTERM ---------------------------------------------------------------------------------------------

GRACE_SECONDS = 30


def sigterm_scenario(out: Path, cluster: Mapping[str, Any]) -> None:
    """Executor 1's pod deleted with a grace period, without decommissioning (no preStop hook): the kubelet's
    SIGTERM goes through tini to the executor JVM."""
    report = Report(out)
    spark, pods = start(out, cluster, {"spark.executor.instances": "2"}, "node-sigterm")
    api = cluster_api(cluster)
    try:
        report.step("started", registered=wait_until(lambda: set(active_tasks(spark)) == {"1", "2"}, WAIT))
        report.step("first_job", answer=squares(spark))
        report.step("log_kept", log_kept=wait_until(lambda: bool(pods.log("1")), 60))
        api.delete(PODS, "default", pods.latest["1"]["metadata"]["name"], grace_period_seconds=GRACE_SECONDS)
        gone = pods.wait_for(lambda p: "1" in p.deleted)
        report.step(
            "deleted", gone=gone, replaced=replaced(spark, "1"), removed=removed_executors(spark),
            by_deletion=pod_facts(pods, "1"), status=backend_status(spark),
        )  # fmt: skip
        report.step("second_job", second_answer=squares(spark))
    finally:
        spark.stop()
        pods.close()


SCENARIOS: dict[str, Callable[[Path, Mapping[str, Any]], None]] = {
    "oom": oom_scenario,
    "oom-off": oom_off_scenario,
    "decommission": decommission_scenario,
    "sigterm": sigterm_scenario,
}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in SCENARIOS:
        names = ",".join(SCENARIOS)
        print(f"usage: node_lifecycle_support.py {{{names}}} OUT.json CLUSTER.json", file=sys.stderr)
        return 2
    SCENARIOS[argv[0]](Path(argv[1]), json.loads(Path(argv[2]).read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
