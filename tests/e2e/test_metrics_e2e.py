"""A real PySpark job on a local cluster with ``spark.kubernetes.metrics.port``: /metrics is scraped while
the job runs (its tasks wait for the test), and the values match the executor pods; after spark.stop()
the port is closed."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

DRIVER = """
import os, socket, threading, time, urllib.request
from prometheus_client.parser import text_string_to_metric_families
from k8s_backend.kube.port import PODS
from k8s_backend.spark import session
from k8s_backend.testing import LocalCluster

PORT = {port}
RELEASE = {release!r}
CREATES = (("code", "201"), ("resource", "pods"), ("verb", "create"))
DEADLINE = 600.0  # generous: every wait below ends on a condition


def scrape():
    with urllib.request.urlopen(f"http://127.0.0.1:{{PORT}}/metrics", timeout=60) as response:
        text = response.read().decode()
    return {{
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }}


def executors(cluster):
    pods = cluster.fake.objects(PODS, "default")
    return [p for p in pods if p["metadata"]["labels"].get("spark-role") == "executor"]


def wait_until(what, check):
    end = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {{what}}")
        threading.Event().wait(0.1)


def wait_for_release(_):
    while not os.path.exists(RELEASE):
        threading.Event().wait(0.05)
    return 1


with LocalCluster() as cluster:
    conf = cluster.spark_conf()
    conf.update({{
        "spark.ui.enabled": "false",
        "spark.executor.memory": "512m",
        "spark.executor.instances": "2",
        "spark.kubernetes.metrics.port": str(PORT),
    }})
    spark = session(cluster.master, conf, app_name="metrics")
    sc = spark.sparkContext
    results = []
    rdd = sc.parallelize(range(4), 4).map(wait_for_release)
    job = threading.Thread(target=lambda: results.append(rdd.sum()))
    job.start()

    def matches():
        samples = scrape()
        pods = executors(cluster)
        running = sum(1 for p in pods if (p.get("status") or {{}}).get("phase") == "Running")
        pending = sum(1 for p in pods if (p.get("status") or {{}}).get("phase") == "Pending")
        seen = {{
            "running": samples.get(("k8s_backend_executors", (("state", "running"),))),
            "pending": samples.get(("k8s_backend_executors", (("state", "pending"),))),
            "registered": samples.get(("k8s_backend_executors", (("state", "registered"),))),
            "created": samples.get(("k8s_backend_pod_creations_total", (("result", "created"),))),
            "creates": samples.get(("k8s_backend_api_requests_total", CREATES)),
            "target": samples.get(("k8s_backend_executor_target", (("profile", "0"),))),
        }}
        matches.last = (seen, len(pods), running, pending)
        return (
            running == 2 and seen["running"] == running and seen["pending"] == pending
            and seen["registered"] == 2 and seen["created"] == len(pods) and seen["creates"] == len(pods)
        )

    wait_until("the metrics to match the pods while the job runs", matches)
    seen, total, running, pending = matches.last
    print("JOB_RUNNING", job.is_alive())
    print("PODS", total, "RUNNING", running, "PENDING", pending)
    for name, value in sorted(seen.items()):
        print("METRIC", name, value)
    samples = scrape()
    print("ROUNDS", samples.get(("k8s_backend_allocation_round_duration_seconds_count", ())) >= 1)
    open(RELEASE, "w").close()
    job.join()
    print("SUM", results[0])
    spark.stop()
    with socket.socket() as probe:
        print("PORT_CLOSED", probe.connect_ex(("127.0.0.1", PORT)) != 0)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_metrics_scraped_during_a_pyspark_run_match_the_pods(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER.format(port=free_port(), release=str(tmp_path / "release"))))
    result = subprocess.run(
        [sys.executable, str(driver)], cwd=tmp_path, capture_output=True, text=True, timeout=800, check=False
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr (tail):\n{result.stderr[-6000:]}"
    lines = result.stdout.splitlines()
    assert "JOB_RUNNING True" in lines  # scraped during the job
    assert "PODS 2 RUNNING 2 PENDING 0" in lines
    assert "METRIC running 2.0" in lines
    assert "METRIC registered 2.0" in lines
    assert "METRIC created 2.0" in lines
    assert "METRIC creates 2.0" in lines
    assert "METRIC target 2.0" in lines
    assert "ROUNDS True" in lines
    assert "SUM 4" in lines
    assert "PORT_CLOSED True" in lines
