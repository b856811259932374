"""Real PySpark jobs on ``LocalCluster(control_plane="kubernetes")``: kube-apiserver, etcd, kube-scheduler
and kube-controller-manager, with the process kubelet running the pods kube-scheduler binds.

- k8s_backend's backend (``pyk8s://https://...`` through :func:`k8s_backend.spark.session`): executors
  run as processes on nodes the real scheduler chose, dynamic allocation scales up and back down, a
  SIGKILLed executor is replaced and the answer is right;
- Spark 4.3's own JVM backend (``k8s://https://...``, fabric8 with the cluster's CA and token) runs a job
  on executor processes started from its own pod specs, as it does on the embedded server.

One cluster serves the module; each driver runs in a fresh Python process (its own JVM).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_real_support import SPARK_JVM_BACKEND_CONF, SPARK_JVM_BACKEND_JOB, PodWatcher, cluster_api

from k8s_backend.kube.port import EVENTS
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.local.kubelet.processes import session_members
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(900)]

SUPPORT = Path(__file__).with_name("spark_real_support.py")
NODES = ("node-a", "node-b")


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    # Two nodes of 2 CPUs: three 1-CPU executors cannot all fit on one, so the scheduler spreads them.
    nodes = [Node.of(name, cpu="2", memory="8Gi") for name in NODES]
    with LocalCluster(control_plane="kubernetes", nodes=nodes, stop_grace=2.0) as local:
        yield local


def cluster_file(cluster: LocalCluster, tmp_path: Path) -> Path:
    path = tmp_path / "cluster.json"
    ca = str(cluster.ca_cert)
    info = {"url": cluster.url, "token": cluster.token, "ca": ca, "master": cluster.master}
    path.write_text(json.dumps({**info, "conf": cluster.spark_conf()}))
    return path


def driver_env() -> dict[str, str]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env.pop("KUBECONFIG", None)  # the cluster's own credentials only
    return env


def run_scenario(name: str, cluster: LocalCluster, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    command = [sys.executable, str(SUPPORT), name, str(out), str(cluster_file(cluster, tmp_path))]
    try:
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=700, env=driver_env()
        )
        exit_code, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired as timeout:
        partial = timeout.stderr or b""
        exit_code, stderr = None, partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    observed: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    if exit_code != 0:
        pytest.fail(
            f"scenario {name} exited {exit_code}\nobserved: {json.dumps(observed, indent=1)[-4000:]}\n"
            f"stderr (tail):\n{stderr[-6000:]}"
        )
    return observed


def scheduled_by(cluster: LocalCluster, pods: set[str]) -> dict[str, str]:
    """Pod name -> the component that reported its ``Scheduled`` event."""
    events = cluster.api().list(EVENTS, "default", field_selector="reason=Scheduled").items
    found = {}
    for event in events:
        name = (event.get("involvedObject") or {}).get("name")
        if name in pods:
            found[name] = event.get("reportingComponent") or (event.get("source") or {}).get("component", "")
    return found


def test_a_pyspark_job_scales_loses_an_executor_and_scales_down(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    seen = run_scenario("dynamic", cluster, tmp_path)
    assert seen["master"] == cluster.master

    # Held tasks: executor pods scale up to maxExecutors (3), each bound by kube-scheduler to a node.
    assert seen["scaled_up"], seen["pods_after_scale_up"]
    assert seen["all_busy"]
    assert seen["max_live_pods"] == 3
    up = seen["pods_after_scale_up"]
    assert {pod["executor_id"] for pod in up} == {"1", "2", "3"} == set(seen["processes_after_scale_up"])
    assert {pod["node"] for pod in up} == set(NODES)  # 2 CPUs a node: the scheduler had to spread them
    everyone = {pod["name"] for pod in seen["final_pods"]}
    assert scheduled_by(cluster, everyone) == dict.fromkeys(everyone, "default-scheduler")

    # SIGKILL mid-job: the pod failed with 137 (the kubelet's status write), Spark saw the loss, a new
    # executor pod was created, scheduled and started, and the retried task gave the right answer.
    victim = seen["victim"]
    killed = next(pod for pod in seen["pods_after_kill"] if pod["executor_id"] == victim)
    assert (killed["phase"], killed["exit_code"]) == ("Failed", 137)
    assert seen["lost_seen"]
    assert "exit code 137" in seen["removed_after_kill"][victim]
    assert seen["replacement_created"] and seen["replacement_running"]
    assert any(pod["executor_id"] == "4" for pod in seen["pods_after_kill"])
    assert seen["job_result"] == {"sum": seen["expected_sum"]}
    assert seen["failed_task_attempts"] >= 1
    assert seen["completed_tasks"] == 12

    # Idle: released down to minExecutors (1) in pods and in Spark.
    assert seen["scaled_down"], seen["pods_after_idle"]
    assert seen["spark_saw_one"], seen["spark_executors_after_idle"]
    kept = [p for p in seen["pods_after_idle"] if p["live"]]
    assert [pod["executor_id"] for pod in kept] == list(seen["spark_executors_after_idle"])

    # spark.stop(): every executor pod deleted (graceful deletion ended by the kubelet), no process left.
    assert seen["all_deleted"], seen["final_pods"]
    assert seen["pods_left"] == []
    assert seen["executor_processes_after_stop"] == {}
    assert seen["session_processes_after_stop"] == []
    assert cluster.kubelet.processes() == []


def about(executor_id: str, kind: str, text: str) -> bool:
    """Whether a timeline marker is about this executor ("decommissioning 1, 2" names several)."""
    if kind == "decommission":
        return executor_id in text.removeprefix("decommissioning ").split(", ")
    return text.startswith((f"executor {executor_id} ", f"executor {executor_id},"))


def test_a_drain_with_decommission_on_notice_keeps_every_shuffle_block(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Issue 25, item 1: the same drain with the behaviour on and off, counted by Spark itself."""
    figures = {}
    for mode in ("on", "off"):
        seen = run_scenario(f"drain-{mode}", cluster, tmp_path)
        assert seen["first_count"] == 4000 and sum(seen["second_sizes"]) == 4000  # the right answer
        assert seen["drained"] and seen["gone_in_spark"]
        figures[mode] = {k: seen[k] for k in ("drained", "recomputed_tasks", "failed_tasks", "stage_retries")}
        if mode == "on":
            assert seen["timeline_ended"], seen["markers"]
            for executor_id in seen["drained"]:
                # Item 6: noticed, decommission started, blocks migrated, pod gone, in that order.
                kinds = [kind for kind, text in seen["markers"] if about(executor_id, kind, text)]
                assert kinds == ["notice", "decommission", "migrated", "gone"], seen["markers"]
    print(f"drain figures: {figures}")
    on, off = figures["on"], figures["off"]
    # On: the drained executors' shuffle blocks migrated; nothing was recomputed or retried.
    assert on["recomputed_tasks"] == on["failed_tasks"] == on["stage_retries"] == 0, figures
    # Off: the eviction lost them, and Spark recomputed the lost map outputs.
    assert off["recomputed_tasks"] > 0, figures


def test_sparks_own_jvm_backend_runs_a_job_on_it(cluster: LocalCluster, tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(SPARK_JVM_BACKEND_JOB))
    conf = {k: v for k, v in cluster.spark_conf(image="apache/spark:4.3.0").items() if k != "spark.master"}
    conf.update(SPARK_JVM_BACKEND_CONF)
    settings = json.dumps({"master": cluster.spark_k8s_master, "conf": conf})
    watcher = PodWatcher(
        cluster_api({"url": cluster.url, "token": cluster.token, "ca": str(cluster.ca_cert)})
    )
    try:
        driver = subprocess.run(
            [sys.executable, str(script), settings],
            capture_output=True,
            text=True,
            env=driver_env(),
            timeout=400,
            check=False,
        )
        assert driver.returncode == 0, f"driver failed:\n{driver.stderr[-6000:]}"
        outcome = json.loads(driver.stdout.strip().splitlines()[-1])
        assert outcome["sum"] == 499500
        assert outcome["executors"] == 2

        # Spark created the executor pods itself (fabric8 over https with the CA and token), the real
        # scheduler bound them, and the tasks ran in those pods' processes.
        pods = {view["name"]: view for view in watcher.views()}
        assert len(pods) == 2
        for spec in watcher.specs.values():
            assert spec["metadata"]["labels"]["spark-app-selector"] == outcome["app"]
            (container,) = spec["spec"]["containers"]
            assert (container["image"], container["args"]) == ("apache/spark:4.3.0", ["executor"])
        assert {name for name, _ in outcome["where"]} <= set(pods)
        assert watcher.ever_running == set(pods)
        assert all(view["node"] in NODES for view in pods.values())
        assert scheduled_by(cluster, set(pods)) == dict.fromkeys(pods, "default-scheduler")
        # spark.stop() deleted them; the kubelet stopped the executors and ended the deletions.
        assert watcher.wait_for(lambda w: all(v["deleted"] for v in w.views()), timeout=120), watcher.views()
        assert cluster.wait_until(lambda: cluster.kubelet.processes() == [], 60)
    finally:
        watcher.close()
    assert all(session_members(session) == [] for _, session in outcome["where"])
