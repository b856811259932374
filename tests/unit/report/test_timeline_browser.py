"""The executor timeline in a real browser: headless Chromium (Debian's) renders the page offline, and
the screenshot shows a killed executor's spans and marker and an Unschedulable executor's wait."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from k8s_backend.report import Marker, Move, from_histories, render_html
from k8s_backend.report.timeline import COLOURS, MARKER_COLOURS

pytestmark = pytest.mark.timeout(300)

T0 = 1_800_000_000.0
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def screenshot(page: Path, out: Path, tmp_path: Path) -> Path:
    assert CHROMIUM is not None
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1300,700",
        "--hide-scrollbars",
        f"--screenshot={out}",
        page.as_uri(),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0 and out.exists(), done.stderr[-3000:]
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_killed_and_an_unschedulable_executor_show_in_a_real_browser(tmp_path: Path) -> None:
    from PIL import Image

    killed = [
        Move(T0, "requested"),
        Move(T0 + 1, "pending"),
        Move(T0 + 3, "running"),
        Move(T0 + 30, "terminating", "killed by the driver"),
        Move(T0 + 32, "failed", "exit 143 (SIGTERM: the executor was asked to stop)"),
    ]
    waiting = [Move(T0 + 2, "requested"), Move(T0 + 3, "pending", "Unschedulable: 0/3 nodes are available")]
    timeline = from_histories(
        "pi: a killed executor and an Unschedulable one",
        {1: killed, 2: waiting},
        now=T0 + 60,
        registered_at={1: T0 + 6},
        target=[(T0, 2), (T0 + 30, 1)],
        markers=[Marker(T0 + 30, "kill", "executor 1 killed by the driver")],
    )
    page = tmp_path / "timeline.html"
    page.write_text(render_html(timeline))
    image = Image.open(screenshot(page, tmp_path / "shot.png", tmp_path)).convert("RGB")
    counts: dict[object, int] = {}
    for count, pixel in image.getcolors(maxcolors=image.width * image.height) or []:
        counts[pixel] = count

    def area(colour: str) -> int:
        return counts.get(rgb(colour), 0)

    # Pending for most of the minute (executor 2), registered for most of it (executor 1): big areas.
    assert area(COLOURS["pending"]) > 5000, "the Unschedulable executor's wait is not drawn"
    assert area(COLOURS["registered"]) > 5000, "the registered span is not drawn"
    assert area(COLOURS["running"]) > 200
    assert area(COLOURS["terminating"]) > 100, "the killed executor's termination is not drawn"
    assert area(MARKER_COLOURS["kill"]) > area(COLOURS["terminating"]) / 2, "no kill marker"
    assert area(COLOURS["failed"]) > 20, "the end of the killed executor is not marked"
    assert len(counts) > 20, "a blank page"


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_backend_runs_timeline_with_a_killed_and_an_unschedulable_executor(tmp_path: Path) -> None:
    """The page stop() writes for a real backend run on the fake API, seen in the browser."""
    import threading
    from collections.abc import Mapping
    from typing import Any

    from PIL import Image

    from k8s_backend import KubernetesClusterSchedulerBackend
    from k8s_backend.kube.port import PODS
    from k8s_backend.testing import FakeKubernetes

    class Driver:
        registered: dict[str, float] = {}

        def registered_executors(self) -> Mapping[str, float]:
            return dict(self.registered)

        def __getattr__(self, name: str) -> Any:
            return lambda *args, **kwargs: None

    def until(predicate: Any) -> None:
        pause = threading.Event()
        for _ in range(6000):
            if predicate():
                return
            pause.wait(0.01)
        raise AssertionError("condition not reached")

    page = tmp_path / "run.html"
    fake, driver = FakeKubernetes(), Driver()
    backend = KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "2",
            "spark.kubernetes.allocation.batch.delay": "200ms",
            "spark.kubernetes.executor.eventProcessingInterval": "200ms",
            "spark.kubernetes.report.timeline": str(page),
        },
        app_id="app-browser",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=fake,
        driver=driver,  # type: ignore[arg-type]
    )
    backend.start()
    monitor = backend.parts.monitor
    try:
        until(lambda: len(fake.objects(PODS, "default")) == 2)
        names = sorted(p["metadata"]["name"] for p in fake.objects(PODS, "default"))
        fake.patch_status(PODS, "default", names[0], {"phase": "Running"})
        unschedulable = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient memory.",
        }
        fake.patch_status(PODS, "default", names[1], {"phase": "Pending", "conditions": [unschedulable]})
        driver.registered = {"1": 0.0}
        until(lambda: monitor.timeline("t").executors[0].spans[-1].kind == "registered")
        until(lambda: "Unschedulable" in monitor.timeline("t").executors[1].spans[-1].detail)
        threading.Event().wait(0.5)  # not a sync point: gives the spans some width to look at
        backend.kill_executors(["1"])
        until(lambda: monitor.timeline("t").executors[0].spans[-1].kind == "terminating")
        threading.Event().wait(0.3)
    finally:
        backend.stop()
    html = page.read_text()
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient memory." in html
    assert "the driver killed executors 1" in html
    image = Image.open(screenshot(page, tmp_path / "run.png", tmp_path)).convert("RGB")
    counts: dict[object, int] = {}
    for count, pixel in image.getcolors(maxcolors=image.width * image.height) or []:
        counts[pixel] = count
    for kind in ("pending", "registered", "terminating"):
        assert counts.get(rgb(COLOURS[kind]), 0) > 50, f"no {kind} span in the screenshot"
    assert counts.get(rgb(MARKER_COLOURS["kill"]), 0) > 0, "no kill marker in the screenshot"
