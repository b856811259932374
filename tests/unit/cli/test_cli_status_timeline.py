"""``k8s-backend status ID --timeline PATH`` of a running application, next to the page ``stop()`` writes
for the same run: registered spans (from what the driver publishes), the target and the driver's markers
(published with its registrations), a row for an executor the driver killed and whose pod is gone (from
its pod's Events), and notes on the page for what the cluster cannot tell."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_support import cli

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.assembly.wiring import assemble
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.activity import ACTIVITY_ANNOTATION
from k8s_backend.kube.leases import micro_time
from k8s_backend.kube.port import EVENTS, LEASES, PODS
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.report import render_html
from k8s_backend.report.timeline import COLOURS, MARKER_COLOURS
from k8s_backend.testing import FakeKubernetes

APP = "spark-" + "7" * 32
START = 1_800_000_000.0
M = ["--master", "pyk8s://https://k8s.test:6443"]
CONTAINER = "spark-kubernetes-executor"
CONF = {
    "spark.app.name": "pi",
    "spark.kubernetes.container.image": "spark:4.3.0",
    "spark.kubernetes.namespace": "default",
    "spark.kubernetes.executor.podNamePrefix": "pi",
    "spark.executor.instances": "2",
    "spark.kubernetes.executor.enableApiWatcher": "false",  # polling runs on the manual scheduler
    "spark.kubernetes.executor.apiPollingInterval": "1s",
    "spark.kubernetes.executor.stopExitWait": "0",
    "spark.kubernetes.driver.heartbeat.leaseDuration": "3s",  # registrations published every second
}


class Driver:
    def __init__(self) -> None:
        self.registered: dict[str, float] = {}

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        self.registered.pop(executor_id, None)

    def registered_executors(self) -> dict[str, float]:
        return dict(self.registered)

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        pass

    def application_failed(self, reason: str) -> None:
        raise AssertionError(reason)


def event(fake: FakeKubernetes, pod: str, reason: str, when: float, message: str, n: int) -> None:
    """An Event as kube-scheduler or the kubelet writes it (core/v1)."""
    body = {
        "metadata": {"name": f"{pod}.{n}"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod},
        "reason": reason,
        "message": message,
        "type": "Normal",
        "firstTimestamp": micro_time(when)[:19] + "Z",
        "lastTimestamp": micro_time(when)[:19] + "Z",
        "count": 1,
    }
    fake.create(EVENTS, "default", body)


def running(fake: FakeKubernetes, name: str, when: float) -> None:
    state = {"running": {"startedAt": micro_time(when)[:19] + "Z"}}
    statuses = [{"name": CONTAINER, "state": state, "restartCount": 0}]
    fake.patch_status(PODS, "default", name, {"phase": "Running", "containerStatuses": statuses})


def run_with_a_killed_executor(cluster_mode: bool) -> tuple[FakeKubernetes, ManualClock, Any]:
    """Two executors run and register; the driver kills executor 1, whose pod goes, and asks for three in
    all: executor 3 stays Unschedulable."""
    clock = ManualClock(START)
    scheduler = DeterministicScheduler(clock)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    conf = dict(CONF)
    if cluster_mode:
        labels = {"spark-app-selector": APP, "spark-role": "driver", "spark-app-name": "pi"}
        spec = {"containers": [{"name": "spark-kubernetes-driver", "image": "spark:4.3.0"}]}
        fake.create(PODS, "default", {"metadata": {"name": "pi-driver", "labels": labels}, "spec": spec})
        ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        fake.patch_status(PODS, "default", "pi-driver", ready)
        conf["spark.kubernetes.driver.pod.name"] = "pi-driver"
    # An earlier run's executor pod of the same name prefix, deleted before this run began.
    event(fake, "pi-exec-7", "Killing", START - 600, f"Stopping container {CONTAINER}", 99)
    driver = Driver()
    assembly = assemble(
        conf,
        app_id=APP,
        driver_url="spark://d@d:7078",
        api=fake,
        driver=driver,
        clock=clock,
        scheduler=scheduler,
    )
    backend = KubernetesClusterSchedulerBackend.from_assembly(assembly)
    backend.start()
    scheduler.advance(2)
    for n, name in enumerate(("pi-exec-1", "pi-exec-2")):
        event(fake, name, "Scheduled", START + 1, f"Successfully assigned default/{name} to node-a", 2 * n)
        event(fake, name, "Started", START + 3, f"Started container {CONTAINER}", 2 * n + 1)
        running(fake, name, START + 3)
    scheduler.advance(3)
    driver.registered.update({"1": START + 6, "2": START + 6.5})
    scheduler.advance(10)
    backend.kill_executors(["1"])
    driver.registered.pop("1")
    event(fake, "pi-exec-1", "Killing", clock.now(), f"Stopping container {CONTAINER}", 9)
    backend.request_total_executors({0: 3})
    scheduler.advance(2)
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient memory.",
        "lastTransitionTime": micro_time(clock.now())[:19] + "Z",
    }
    fake.patch_status(PODS, "default", "pi-exec-3", {"phase": "Pending", "conditions": [unschedulable]})
    scheduler.advance(20)
    assert "pi-exec-1" not in {p["metadata"]["name"] for p in fake.objects(PODS, "default")}
    return fake, clock, backend


def spans(page: str, executor_id: str) -> list[str]:
    return re.findall(rf'class="span (\w+)"><title>executor {executor_id}: ', page)


@pytest.mark.parametrize("cluster_mode", [True, False], ids=["driver-pod", "heartbeat-lease"])
def test_the_page_of_a_running_application_shows_what_stop_would(tmp_path: Path, cluster_mode: bool) -> None:
    fake, clock, backend = run_with_a_killed_executor(cluster_mode)
    path = tmp_path / "status.html"
    ref = "pi-driver" if cluster_mode else APP
    result = cli(["status", *M, ref, "--timeline", str(path)], fake, wall_clock=clock.now)
    assert result.code == 0, result.err
    page = html.unescape(path.read_text())
    stopped = render_html(backend.parts.monitor.timeline("stop"))  # what stop() would write now
    backend.stop()

    # Executor 2 runs and registered with the driver: its running span splits where it registered.
    assert spans(page, "2") == ["requested", "running", "registered"]
    assert spans(stopped, "2")[-2:] == ["running", "registered"]
    # Executor 1, killed by the driver, its pod deleted: a row from its pod's Events, ended.
    assert ">exec 1<" in page and ">exec 1<" in stopped
    assert spans(page, "1") == ["pending", "running", "terminating", "deleted"]
    assert "Killing: Stopping container spark-kubernetes-executor" in page
    # Executor 3 waits, Unschedulable, the reason on hover.
    assert spans(page, "3") == ["requested", "pending"]
    reason = "pending 2027-01-15T08:00:17Z to 2027-01-15T08:00:37Z (Unschedulable: 0/3 nodes are available"
    assert reason in page
    # The target over time (2, then 3) and the kill marker, as the driver published them.
    for target in ("target 2 at", "target 3 at"):
        assert target in page and target in stopped
    assert 'class="marker kill"' in page and "the driver killed executors 1" in page
    # What the cluster cannot tell is said on the page.
    assert "Registered spans: the executors registered with the driver" in page
    assert "last 20 target changes and last 20 markers" in page
    assert "drawn from their pods' Kubernetes Events (here: 1)" in page
    assert "not from the driver's own record" in page
    # The same time axis as stop()'s (the backend's start, as the driver published it).
    summary = re.compile(r"\d+ executors, (\S+) to ")
    assert summary.findall(page) == summary.findall(stopped) == ["2027-01-15T08:00:00Z"]
    assert ">exec 7<" not in page  # the earlier run's Events are not this run's


def test_what_the_driver_does_not_publish_is_said_not_known(tmp_path: Path) -> None:
    fake, clock, backend = run_with_a_killed_executor(cluster_mode=False)
    backend.stop()  # its Lease goes with it: nothing published any more
    fake.create(
        PODS,
        "default",
        {
            "metadata": {
                "name": "pi-exec-3",
                "labels": {"spark-app-selector": APP, "spark-role": "executor", "spark-exec-id": "3"},
            },
            "spec": {"containers": [{"name": CONTAINER, "image": "i"}]},
        },
    )
    assert fake.objects(LEASES, "default") == []
    path = tmp_path / "status.html"
    result = cli(["status", *M, APP, "--timeline", str(path)], fake, wall_clock=clock.now)
    assert result.code == 0, result.err
    page = html.unescape(path.read_text())
    assert "Registration with the driver is not known, so no row has a registered span" in page
    assert (
        "The target over time and the markers for kills, decommissions and API errors are not known" in page
    )
    assert 'class="target"' not in page and 'class="marker' not in page
    # The pod name prefix comes from the pods still there: executor 1's Events still give its row, and
    # as nothing tells when this run began, the earlier run's executor 7 too, which the page warns of.
    assert "(here: 1, 2, 7)" in page and ACTIVITY_ANNOTATION not in page
    assert "so an earlier run's Events of the same pod names would show too" in page


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.timeout(300)
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_page_in_a_real_browser_shows_registered_pending_target_kill_and_the_deleted_row(
    tmp_path: Path,
) -> None:
    from PIL import Image

    fake, clock, backend = run_with_a_killed_executor(cluster_mode=True)
    path = tmp_path / "status.html"
    assert cli(["status", *M, "pi-driver", "--timeline", str(path)], fake, wall_clock=clock.now).code == 0
    backend.stop()
    shot = tmp_path / "status.png"
    assert CHROMIUM is not None
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1300,700",
        "--hide-scrollbars",
        f"--screenshot={shot}",
        path.as_uri(),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0 and shot.exists(), done.stderr[-3000:]
    image = Image.open(shot).convert("RGB")
    counts = {pixel: count for count, pixel in image.getcolors(maxcolors=image.width * image.height) or []}

    def area(colour: str) -> int:
        return counts.get((int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)), 0)

    assert area(COLOURS["registered"]) > 5000, "executor 2's registered span is not drawn"
    assert area(COLOURS["pending"]) > 2000, "executor 3's Unschedulable wait is not drawn"
    assert area(COLOURS["running"]) > 2000, "executor 1's running span (from its Events) is not drawn"
    assert area("#0969da") > 300, "no target line"
    assert area(MARKER_COLOURS["kill"]) > 50, "no kill marker"
    assert area(COLOURS["deleted"]) > 20, "the end of executor 1's row is not marked"
