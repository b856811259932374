"""``k8s-backend`` end to end on a LocalCluster: real drivers, executor pods as local JVMs, the command
run as a user runs it (a separate process)."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import APPS

from k8s_backend.kube.leases import REGISTERED_EXECUTORS_ANNOTATION
from k8s_backend.kube.port import CONFIG_MAPS, PODS, SERVICES
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

TOKEN = "cli-e2e-token"
QUIET = {
    "spark.kubernetes.container.image": "apache/spark:4.0.0",
    "spark.executor.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.kubernetes.authenticate.oauthToken": TOKEN,
}
# Client mode: executors (local processes) reach the driver on this machine.
CLIENT = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(token=TOKEN) as running:
        yield running


def command() -> list[str]:
    """How to start the command: the console script if installed, else the module."""
    script = shutil.which("k8s-backend")
    return [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]


def submit(
    cluster: LocalCluster, *args: str, conf: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    confs = [
        item for key, value in {**QUIET, **(conf or {})}.items() for item in ("--conf", f"{key}={value}")
    ]
    argv = [*command(), "submit", "--master", f"pyk8s://{cluster.url}", *confs, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def manage(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        *command(),
        *args,
        "--master",
        f"pyk8s://{cluster.url}",
        "--conf",
        f"spark.kubernetes.authenticate.oauthToken={TOKEN}",
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)


def pods(cluster: LocalCluster, role: str | None = None, app_id: str | None = None) -> list[dict[str, Any]]:
    found = cluster.fake.objects(PODS, "default")
    labels = [(p, p["metadata"].get("labels") or {}) for p in found]
    return [
        p
        for p, label in labels
        if (role is None or label.get("spark-role") == role)
        and (app_id is None or label.get("spark-app-selector") == app_id)
    ]


def pi_of(text: str) -> float:
    match = re.search(r"Pi is roughly (\d+\.\d+)", text)
    assert match is not None, text[-4000:]
    return float(match.group(1))


def test_client_mode_runs_the_pi_example(cluster: LocalCluster) -> None:
    done = submit(cluster, "--num-executors", "2", str(APPS / "pi.py"), "4", conf=CLIENT)
    assert done.returncode == 0, done.stderr[-4000:]
    assert abs(pi_of(done.stdout) - 3.14159) < 0.05
    executors = [c for c in cluster.fake.calls_of("create", PODS) if "executor" in str(c.body)]
    assert len(executors) >= 2
    assert cluster.wait_until(lambda: pods(cluster, "executor") == [], timeout=60)


def test_cluster_mode_runs_the_pi_example_with_executor_pods_owned_by_the_driver(
    cluster: LocalCluster,
) -> None:
    cluster.fake.reset_calls()
    done = submit(cluster, "--deploy-mode", "cluster", "--num-executors", "2", str(APPS / "pi.py"), "4")
    assert done.returncode == 0, done.stderr[-4000:]
    submission_id = re.search(r"submission ID (\S+)", done.stderr)
    assert submission_id is not None
    driver = submission_id.group(1).split(":")[1]
    assert f"driver default/{driver}: Running" in done.stderr
    assert "terminated: exit code 0 (Completed)" in done.stderr
    log = cluster.kubelet.log_path("default", driver, "spark-kubernetes-driver")
    assert log is not None
    assert abs(pi_of(log.read_text()) - 3.14159) < 0.05
    created = [c.body for c in cluster.fake.calls_of("create", PODS)]
    executors = [b for b in created if b["metadata"]["labels"].get("spark-role") == "executor"]
    assert len(executors) >= 2
    assert all(b["metadata"]["ownerReferences"][0]["name"] == driver for b in executors)


def test_exit_codes_propagate_in_both_modes(cluster: LocalCluster) -> None:
    client = submit(cluster, str(APPS / "fail.py"), "3", conf=CLIENT)
    assert client.returncode == 3, client.stderr[-3000:]
    in_pod = submit(cluster, "--deploy-mode", "cluster", str(APPS / "fail.py"))
    assert in_pod.returncode == 1, in_pod.stderr[-3000:]
    assert "terminated: exit code 1 (Error)" in in_pod.stderr


def _start_sleeper(cluster: LocalCluster) -> tuple[str, str]:
    """A cluster-mode application that runs until stopped; returns (submission id, app id)."""
    done = submit(
        cluster,
        "--deploy-mode",
        "cluster",
        "--num-executors",
        "1",
        "--conf",
        "spark.kubernetes.submission.waitAppCompletion=false",
        str(APPS / "sleeper.py"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    submission = re.search(r"submission ID (\S+)", done.stderr)
    app = re.search(r"application id (spark-[0-9a-f]+)", done.stderr)
    assert submission is not None and app is not None
    running = cluster.wait_until(
        lambda: any(p["status"].get("phase") == "Running" for p in pods(cluster, "executor")), timeout=300
    )
    assert running, [p["status"] for p in pods(cluster)]
    return submission.group(1), app.group(1)


def test_kill_stops_a_running_application_and_leaves_no_pods(cluster: LocalCluster, tmp_path: Path) -> None:
    submission_id, app_id = _start_sleeper(cluster)
    listed = manage(cluster, "list")
    assert submission_id in listed.stdout and app_id in listed.stdout
    status = manage(cluster, "status", submission_id)
    assert "driver:         Running" in status.stdout, status.stderr

    # The driver pod tells which executors registered with it (it keeps no heartbeat Lease).
    def written() -> object:
        [driver] = pods(cluster, "driver", app_id)
        return (driver["metadata"].get("annotations") or {}).get(REGISTERED_EXECUTORS_ANNOTATION)

    assert cluster.wait_until(lambda: len(json.loads(str(written() or "{}"))) == 1, timeout=120), written()
    status = manage(cluster, "status", submission_id)
    assert "registered:     1 with the driver" in status.stdout, status.stdout
    assert re.search(r"\n1 +\S+ +\S+ +Running +yes ", status.stdout), status.stdout
    status = manage(cluster, "status", submission_id, "-o", "json")
    [app] = json.loads(status.stdout)["applications"]
    assert app["registeredExecutors"] == 1 and app["registrationsAsOf"] is not None
    assert [(e["phase"], e["registered"]) for e in app["executors"]] == [("Running", True)]
    # Its timeline page: executor 1 registered, the target the driver published, the notes.
    page = tmp_path / "timeline.html"
    shown = manage(cluster, "status", submission_id, "--timeline", str(page))
    assert shown.returncode == 0, shown.stderr
    text = page.read_text()
    assert re.search(r'class="span registered"><title>executor 1: registered ', text), text[-3000:]
    assert "target 1 at " in text and 'class="notes"' in text
    killed = manage(cluster, "kill", submission_id)
    assert killed.returncode == 0, killed.stderr
    assert "All pods of the application are gone" in killed.stderr
    assert pods(cluster, app_id=app_id) == []
    assert cluster.wait_until(lambda: not cluster.kubelet.processes(), timeout=60)


def test_sigterm_to_a_client_mode_submit_removes_its_executors(cluster: LocalCluster) -> None:
    # What `timeout`, CI runners and workflow schedulers send: the executors must not outlive the driver.
    confs = [i for k, v in {**QUIET, **CLIENT}.items() for i in ("--conf", f"{k}={v}")]
    argv = [*command(), "submit", "--master", f"pyk8s://{cluster.url}", *confs, "--num-executors", "2"]
    driver = subprocess.Popen(
        [*argv, str(APPS / "sleeper.py")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        running = cluster.wait_until(
            lambda: driver.poll() is not None
            or sum(p["status"].get("phase") == "Running" for p in pods(cluster, "executor")) == 2,
            timeout=300,
        )
        assert running and driver.poll() is None, driver.stderr.read()[-3000:] if driver.stderr else ""
        app_id = pods(cluster, "executor")[0]["metadata"]["labels"]["spark-app-selector"]
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=180)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 143, err[-3000:]
    assert "SIGTERM received; stopping the application" in err
    assert cluster.wait_until(lambda: pods(cluster, app_id=app_id) == [], timeout=120), pods(cluster)
    creates = [
        c
        for c in cluster.fake.calls_of("create", PODS)
        if (c.body or {}).get("metadata", {}).get("labels", {}).get("spark-app-selector") == app_id
    ]
    assert len(creates) == 2, "no executor is created once the driver was told to stop"


def test_gc_removes_the_leftovers_of_a_driver_pod_deleted_by_force(cluster: LocalCluster) -> None:
    submission_id, app_id = _start_sleeper(cluster)
    driver = submission_id.split(":")[1]
    fake = cluster.fake
    # kubectl delete pod --force --grace-period=0 --cascade=orphan: dependents lose their owner and stay.
    for resource in (PODS, SERVICES, CONFIG_MAPS):
        for obj in fake.objects(resource, "default"):
            if obj["metadata"].get("ownerReferences"):
                fake.patch(
                    resource, "default", obj["metadata"]["name"], {"metadata": {"ownerReferences": None}}
                )
    fake.delete(PODS, "default", driver, grace_period_seconds=0)
    assert pods(cluster, "executor", app_id), "the executors should be left over"
    kept = manage(cluster, "gc", "--dry-run")
    assert f"application {app_id} in default: its driver pod {driver} is gone" in kept.stderr
    assert pods(cluster, "executor", app_id)
    collected = manage(cluster, "gc")
    assert collected.returncode == 0, collected.stderr
    assert cluster.wait_until(lambda: pods(cluster, app_id=app_id) == [], timeout=60)
    of_app = [
        o
        for r in (SERVICES, CONFIG_MAPS)
        for o in fake.objects(r, "default")
        if (o["metadata"].get("labels") or {}).get("spark-app-selector") == app_id
    ]
    assert of_app == []


def test_bad_input_creates_nothing_on_the_cluster(cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.server.clear_request_log()
    cases = [
        (["--deploy-mode", "cluster", str(tmp_path / "missing.py")], "no such file"),
        (["--conf", "spark.executor.memory", str(APPS / "pi.py")], "a Spark property is written key=value"),
        (["--conf", "spark.executor.instances=-2", str(APPS / "pi.py")], "spark.executor.instances=-2"),
    ]
    for args, message in cases:
        done = submit(cluster, *args, timeout=120)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
    wrong_token = submit(
        cluster,
        "--deploy-mode",
        "cluster",
        str(APPS / "pi.py"),
        conf={"spark.kubernetes.authenticate.oauthToken": "wrong"},
    )
    assert wrong_token.returncode == 2
    assert "rejected the credentials" in wrong_token.stderr
    assert [r for r in cluster.server.request_log if r.method == "POST"] == []


def test_cluster_mode_on_an_embedded_local_cluster_follows_the_driver_log(tmp_path: Path) -> None:
    argv = [
        *command(),
        "submit",
        "--master",
        "pyk8s://local",
        "--deploy-mode",
        "cluster",
        "--follow-log",
        "--num-executors",
        "1",
        *[
            item
            for key, value in QUIET.items()
            if "oauthToken" not in key
            for item in ("--conf", f"{key}={value}")
        ],
        str(APPS / "pi.py"),
        "2",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert abs(pi_of(done.stdout) - 3.14159) < 0.05  # the driver's log, followed
    assert "Running on node-1; container spark-kubernetes-driver running" in done.stderr
