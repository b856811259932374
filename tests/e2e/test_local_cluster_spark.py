"""Fidelity proof: Spark's own JVM Kubernetes backend runs a real job on LocalCluster.

The driver is a separate Python process (as a user's would be) running pyspark with master
``k8s://<LocalCluster url>`` in client mode. Spark's KubernetesClusterSchedulerBackend creates the
executor pods over HTTP (fabric8), the process kubelet runs them from Spark's own pod specs, and the job's
tasks report which pod and process session they ran in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.port import PODS
from k8s_backend.local.kubelet.processes import session_members
from k8s_backend.testing import LocalCluster

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
IMAGE = "apache/spark:4.0.0"
TOKEN = "local-e2e-token"

DRIVER = """
import json, os, sys
from pyspark.sql import SparkSession

master, image, token = sys.argv[1:4]
builder = SparkSession.builder.master(master).appName("local-cluster-e2e")
for key, value in {
    "spark.executor.instances": "2",
    "spark.executor.memory": "512m",
    "spark.kubernetes.container.image": image,
    "spark.kubernetes.namespace": "default",
    "spark.kubernetes.authenticate.oauthToken": token,
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    # Startup speed on small CI machines; the executor command itself is Spark's own.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
sc = spark.sparkContext
try:
    total = sc.parallelize(range(1000), 4).sum()
    # Where did tasks run? The executor's pod name (from the pod's env) and the container's session.
    where = sorted(set(sc.parallelize(range(8), 8).map(
        lambda _: (os.environ.get("SPARK_EXECUTOR_POD_NAME"), os.getsid(0))
    ).collect()))
    executors = len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1  # minus the driver
    print(json.dumps({"sum": total, "where": where, "executors": executors, "app": sc.applicationId}))
finally:
    spark.stop()
"""


def pod_events(cluster: LocalCluster, since: str) -> list[tuple[str, Obj]]:
    """Every pod event from resourceVersion ``since`` up to now (the fake keeps the history)."""
    end = int(cluster.fake.resource_version)
    events: list[tuple[str, Obj]] = []
    stream = cluster.fake.watch(PODS, "default", resource_version=since, timeout_seconds=5)
    try:
        for event in stream:
            events.append((event.type, event.object))
            if int(event.object["metadata"]["resourceVersion"]) >= end:
                break
    finally:
        stream.close()
    return events


def test_spark_backend_runs_a_job_on_executor_processes_started_from_its_pod_specs(tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env.pop("KUBECONFIG", None)
    with LocalCluster(token=TOKEN, known_images=["apache/spark"], stop_grace=2.0) as cluster:
        since = cluster.fake.resource_version
        driver = subprocess.run(
            [sys.executable, str(script), cluster.spark_k8s_master, IMAGE, TOKEN],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
            check=False,
        )
        requests = [(r.method, r.path.split("?")[0], r.status) for r in cluster.server.request_log]
        assert driver.returncode == 0, f"driver failed:\n{driver.stderr[-6000:]}\nrequests: {requests}"
        outcome = json.loads(driver.stdout.strip().splitlines()[-1])

        # The job's answer, computed on two executors.
        assert outcome["sum"] == 499500
        assert outcome["executors"] == 2

        # Spark created the executor pods itself, over HTTP, from its own pod specs.
        events = pod_events(cluster, since)
        created = {obj["metadata"]["name"]: obj for kind, obj in events if kind == "ADDED"}
        assert len(created) == 2
        for pod in created.values():
            assert pod["metadata"]["labels"]["spark-role"] == "executor"
            assert pod["metadata"]["labels"]["spark-app-selector"] == outcome["app"]
            (container,) = pod["spec"]["containers"]
            assert (container["image"], container["args"]) == (IMAGE, ["executor"])
        assert sum(1 for method, path, _ in requests if method == "POST" and path.endswith("/pods")) == 2
        assert all(status < 500 for _, _, status in requests), requests

        # Tasks ran in those pods' processes, and the pods went through Running.
        ran_in = {name for name, _ in outcome["where"]}
        assert ran_in <= set(created), (ran_in, set(created))
        running = {
            obj["metadata"]["name"] for _, obj in events if obj.get("status", {}).get("phase") == "Running"
        }
        assert running == set(created)

        # spark.stop() deleted the pods: the kubelet stopped the executors and removed them.
        assert cluster.wait_until(lambda: cluster.fake.objects(PODS) == [], 60)
        assert cluster.wait_until(lambda: cluster.kubelet.processes() == [], 30)
        sessions = {session for _, session in outcome["where"]}
    # Every process started for the pods is gone.
    assert all(session_members(session) == [] for session in sessions)
