"""However a PySpark driver ends, its backend's cleanup runs once and leaves nothing on the cluster.

A real driver in its own process, against a LocalCluster in the test's process (which outlives it, so
that what the driver left behind can be seen): the driver script raises; it gets SIGTERM while a job
runs; it gets SIGINT while its SparkContext is still starting (the executor image cannot be pulled, so
the context waits for executors that never come). Each time the Python backend stops exactly once and
deletes its executor pods and ConfigMaps, and the driver JVM, whose own stop comes after the Python side
already cleaned up (or is gone), logs no failure to pass ``stop`` to Python.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_backend_support import FAST_JVM, wait_until

from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS
from k8s_backend.local.images import default_spark_image
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

WAIT = 240.0
STOPPED_LINE = "k8s_backend.spark.bridge INFO The Kubernetes backend of "

DRIVER = textwrap.dedent(
    """
    import json, logging, pathlib, sys, threading, time
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from k8s_backend.spark import session

    url, token, namespace, image, how, ready = sys.argv[1:7]
    conf = {
        "spark.kubernetes.authenticate.oauthToken": token,
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.executor.imagePullFailTimeout": "600s",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "600s",
        "spark.executor.instances": "1",
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": sys.argv[7],
        "spark.executor.extraJavaOptions": sys.argv[7],
    }
    spark = session(f"pyk8s://{url}", conf, f"exit-{how}")
    sc = spark.sparkContext
    answer = sc.parallelize(range(10), 2).sum()
    if how == "raises":
        raise RuntimeError(f"the driver script fails after a job that returned {answer}")
    pathlib.Path(ready).write_text(json.dumps({"app_id": sc.applicationId, "answer": answer}))

    def hold(x):  # a task that runs until the driver ends
        threading.Event().wait(600)
        return x

    sc.parallelize(range(1), 1).map(hold).collect()
    """
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(known_images=[default_spark_image()]) as local:
        yield local


def left_on(cluster: LocalCluster, namespace: str) -> dict[str, list[str]]:
    found = {
        "pods": [p["metadata"]["name"] for p in cluster.fake.objects(PODS, namespace)],
        "config_maps": [m["metadata"]["name"] for m in cluster.fake.objects(CONFIG_MAPS, namespace)],
    }
    return {kind: names for kind, names in found.items() if names}


UNPULLABLE = "nosuch/image:1"
# How the driver ends: its executor image (an unpullable one keeps the context starting), the signal the
# test sends it (None: the script raises), and what its log says about how it ended.
CASES = {
    "raises": (default_spark_image(), None, "RuntimeError: the driver script fails"),
    "sigterm-in-a-job": (default_spark_image(), signal.SIGTERM, "SIGTERM received"),
    "sigint-while-starting": (UNPULLABLE, signal.SIGINT, "KeyboardInterrupt"),
}


@pytest.mark.parametrize("how", list(CASES))
def test_the_cleanup_runs_once_and_removes_everything_however_the_driver_ends(
    cluster: LocalCluster, tmp_path: Path, how: str
) -> None:
    image, sig, ending = CASES[how]
    ended = run_driver(cluster, tmp_path, how, image, sig)
    output, problems = ended.output, list(ended.problems)
    if ending not in output:
        problems.append(f"the driver did not end as planned: no {ending!r} in its log")
    if output.count(STOPPED_LINE) != 1:
        problems.append(f"the Python backend stopped {output.count(STOPPED_LINE)} times, not once")
    for bad in ("Could not pass", "did not answer", "Connection reset", "ERROR PyK8sSchedulerBackend"):
        if bad in output:
            problems.append(f"the driver's log says {bad!r}")
    report = {"exit": ended.exit_code, "problems": problems, "log": output[-6000:]}
    assert not problems, json.dumps(report, indent=1)


@dataclasses.dataclass(frozen=True)
class Ended:
    exit_code: int | None  # None: it did not end in time
    problems: list[str]  # what it left on the cluster, or failed to do
    output: str  # its stdout and stderr: the Python log, then the JVM's


def run_driver(
    cluster: LocalCluster, tmp_path: Path, how: str, image: str, sig: signal.Signals | None
) -> Ended:
    """Run the driver to its end (signalled while a job runs, or while its context waits for an executor
    that cannot start); what it left on the cluster, its exit code and its output (stdout and stderr)."""
    namespace, ready, log_path = how, tmp_path / f"{how}.ready", tmp_path / f"{how}.log"
    if not any(n["metadata"]["name"] == namespace for n in cluster.fake.objects(NAMESPACES)):
        cluster.fake.create(NAMESPACES, None, {"metadata": {"name": namespace}})  # as on a real cluster
    command = [
        sys.executable, "-c", DRIVER,
        cluster.url, cluster.token, namespace, image, how, str(ready), FAST_JVM,
    ]  # fmt: skip
    problems: list[str] = []

    def started() -> bool:
        if image == UNPULLABLE:
            return bool(cluster.fake.objects(PODS, namespace))  # Pending: the context still starts
        return ready.exists()  # after a job, with the next one running

    with log_path.open("w") as log:
        driver = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
        try:
            if sig is not None:
                if wait_until(lambda: started() or driver.poll() is not None, WAIT) and driver.poll() is None:
                    os.kill(driver.pid, sig)
                else:
                    problems.append("the driver ended, or never got there, before it could be signalled")
            exit_code: int | None = driver.wait(WAIT)
        except subprocess.TimeoutExpired:
            exit_code = None
            problems.append(f"the driver did not end within {WAIT:.0f} s")
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
    gone = wait_until(lambda: not left_on(cluster, namespace), 60.0)
    if exit_code == 0:
        problems.append("the driver exited 0")
    if not any(call.namespace == namespace for call in cluster.fake.calls_of("create", PODS)):
        problems.append("no executor pod was created")
    if not gone:
        problems.append(f"left on the cluster: {left_on(cluster, namespace)}")
    output = log_path.read_text(errors="replace")
    return Ended(exit_code, problems, output)
