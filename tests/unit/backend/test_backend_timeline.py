"""``spark.kubernetes.report.timeline=PATH``: stop() writes the executor timeline, with each executor's
spans, the target over time, markers for kills, and registration times from the driver."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from k8s_backend import ConfigError, KubernetesClusterSchedulerBackend
from k8s_backend.kube.port import PODS
from k8s_backend.testing import FakeKubernetes

WAIT = 60.0


class Driver:
    """A driver endpoint that has registered the executors the test says."""

    def __init__(self) -> None:
        self.registered: dict[str, float] = {}

    def registered_executors(self) -> Mapping[str, float]:
        return dict(self.registered)

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def wait_for(predicate: Any) -> bool:
    pause = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if predicate():
            return True
        pause.wait(0.01)
    return bool(predicate())


def running(fake: FakeKubernetes) -> None:
    for pod in fake.objects(PODS, "default"):
        if (pod.get("status") or {}).get("phase") != "Running":
            fake.patch_status(PODS, "default", pod["metadata"]["name"], {"phase": "Running"})


def test_stop_writes_the_timeline_of_what_happened(tmp_path: Path) -> None:
    page = tmp_path / "timeline.html"
    fake, driver = FakeKubernetes(), Driver()
    backend = KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "2",
            "spark.kubernetes.allocation.batch.delay": "200ms",
            "spark.kubernetes.executor.eventProcessingInterval": "200ms",
            "spark.kubernetes.report.timeline": str(page),
            "spark.app.name": "pi",
        },
        app_id="app-timeline",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=fake,
        driver=driver,  # type: ignore[arg-type]
    )
    backend.start()
    try:
        assert wait_for(lambda: len(fake.objects(PODS, "default")) == 2)
        running(fake)
        driver.registered = {"1": 0.0, "2": 0.0}
        monitor = backend.parts.monitor
        assert wait_for(lambda: monitor.timeline("t").executors[0].spans[-1].kind == "registered")
        backend.kill_executors(["2"])
        backend.request_total_executors({0: 1})
    finally:
        backend.stop()
    html = page.read_text()
    assert "pi (app-timeline): executor timeline" in html
    assert ">exec 1<" in html and ">exec 2<" in html
    assert "registered with the driver" in html
    assert "the driver killed executors 2" in html
    assert "target 2 at" in html and "target 1 at" in html
    assert not (tmp_path / "timeline.html.partial").exists()


def test_a_path_unwritable_by_stop_does_not_keep_stop_from_cleaning_up(tmp_path: Path) -> None:
    fake = FakeKubernetes()
    folder = tmp_path / "gone-by-stop"
    folder.mkdir()
    backend = KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "1",
            "spark.kubernetes.report.timeline": str(folder / "t.html"),
        },
        app_id="app-timeline-2",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=fake,
    )
    backend.start()
    assert wait_for(lambda: len(fake.objects(PODS, "default")) == 1)
    folder.rmdir()
    backend.stop()
    assert fake.objects(PODS, "default") == []


@pytest.mark.parametrize(
    ("where", "told"), [("missing-dir/t.html", "no directory"), (".", "is a directory")]
)
def test_a_path_that_cannot_be_written_is_refused_at_start_naming_the_key(
    tmp_path: Path, where: str, told: str
) -> None:
    fake = FakeKubernetes()
    with pytest.raises(ConfigError, match=f"spark.kubernetes.report.timeline=.*{told}"):
        KubernetesClusterSchedulerBackend.create(
            {
                "spark.kubernetes.container.image": "spark:4.3.0",
                "spark.kubernetes.report.timeline": str(tmp_path / where),
            },
            app_id="app-timeline-3",
            driver_url="spark://CoarseGrainedScheduler@d:7078",
            api=fake,
        )
    assert fake.calls == []  # nothing was created
