"""A backend wired on the in-memory fake, a manual clock and a deterministic scheduler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.driver import ExecutorLoss
from k8s_backend.kube.port import PODS
from k8s_backend.scheduling import DeterministicScheduler, ManualClock
from k8s_backend.testing.fake import FakeKubernetes

APP_ID = "spark-app-id"
DRIVER_URL = "spark://CoarseGrainedScheduler@driver:7078"
BASE_CONF = {
    "spark.app.name": "test-app",
    "spark.kubernetes.container.image": "spark:4.3.0",
    "spark.kubernetes.namespace": "default",
    "spark.kubernetes.executor.podNamePrefix": "test-app",
    "spark.executor.instances": "3",
    "spark.kubernetes.executor.stopExitWait": "0",  # the fake's pods never exit by themselves
}


class RecordingDriver:
    """A driver endpoint that records what the backend tells it."""

    def __init__(self) -> None:
        self.removed: list[tuple[str, ExecutorLoss]] = []
        self.disabled: list[str] = []
        self.registered: dict[str, float] = {}
        self.failures: list[str] = []

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        self.removed.append((executor_id, loss))
        self.registered.pop(executor_id, None)

    def disable_executor(self, executor_id: str) -> None:
        self.disabled.append(executor_id)

    def registered_executors(self) -> Mapping[str, float]:
        return dict(self.registered)

    def application_failed(self, reason: str) -> None:
        self.failures.append(reason)


@attrs.define
class Harness:
    fake: FakeKubernetes
    scheduler: DeterministicScheduler
    driver: RecordingDriver
    backend: KubernetesClusterSchedulerBackend

    def run(self, seconds: float = 0.0) -> None:
        if seconds:
            self.scheduler.advance(seconds)
        else:
            self.scheduler.run_until_idle()

    def executor_pods(self) -> list[dict[str, Any]]:
        return [
            p
            for p in self.fake.objects(PODS, "default")
            if (p["metadata"].get("labels") or {}).get("spark-role") == "executor"
        ]

    def set_phase(self, name: str, phase: str, exit_code: int | None = None) -> None:
        status: dict[str, Any] = {"phase": phase}
        if phase == "Running":
            status["containerStatuses"] = [
                {
                    "name": "spark-kubernetes-executor",
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ]
        if exit_code is not None:
            status["containerStatuses"] = [
                {
                    "name": "spark-kubernetes-executor",
                    "image": "spark:4.3.0",
                    "state": {"terminated": {"exitCode": exit_code, "reason": "Error"}},
                }
            ]
        self.fake.patch_status(PODS, "default", name, status)


def make_harness(conf: Mapping[str, str] | None = None, *, driver: bool = True) -> Harness:
    clock = ManualClock(1_700_000_000.0)
    scheduler = DeterministicScheduler(clock)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    recording = RecordingDriver()
    backend = KubernetesClusterSchedulerBackend.create(
        {**BASE_CONF, **(conf or {})},
        app_id=APP_ID,
        driver_url=DRIVER_URL,
        api=fake,
        driver=recording if driver else None,
        clock=clock,
        scheduler=scheduler,
        watch_on_scheduler=True,
    )
    return Harness(fake, scheduler, recording, backend)
