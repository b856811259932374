"""A backend wired on the in-memory fake, a manual clock and a deterministic scheduler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.allocation.quota import QuotaGate
from k8s_backend.allocation.quota_watch import ObjectsReflector
from k8s_backend.assembly.wiring import assemble
from k8s_backend.backend.heartbeat import DriverHeartbeat
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import PODS, KubernetesApi
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.lifecycle.roll_policy import ExecutorSummary
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource
from k8s_backend.testing import FakeKubernetes

APP_ID = "spark-app-id"
DRIVER_URL = "spark://CoarseGrainedScheduler@driver:7078"
HEARTBEAT_LEASE = f"{APP_ID}-driver-heartbeat"
START = 1_700_000_000.0  # the manual clocks' start
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
        self.registered: dict[str, float] = {}
        self.failures: list[str] = []
        self.decommissioned: list[tuple[str, str]] = []
        self.summaries: list[ExecutorSummary] = []  # what executor_summaries() answers

    def executor_summaries(self) -> list[ExecutorSummary]:
        return list(self.summaries)

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        self.decommissioned.append((executor_id, reason))

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        self.removed.append((executor_id, loss))
        self.registered.pop(executor_id, None)

    def registered_executors(self) -> Mapping[str, float]:
        return dict(self.registered)

    def application_failed(self, reason: str) -> None:
        self.failures.append(reason)


class ScheduledWatch:
    """Runs a watch source's steps as scheduler tasks instead of on its thread, so backend tests stay
    deterministic: ``prepare()``, then ``run_once()`` every ``RECHECK`` seconds until the source stops."""

    RECHECK = 0.1  # how soon to look again after a stream ended with nothing left

    def __init__(self, source: ExecutorPodsWatchSnapshotSource, scheduler: DeterministicScheduler) -> None:
        self._source = source
        self._scheduler = scheduler
        self._started = False

    def start(self, app_id: str) -> None:
        if not self._source.enabled:
            return
        self._source.prepare(app_id)
        self._started = True
        self._scheduler.submit(self._tick)

    def _tick(self) -> None:
        if self._source.stopped:
            return
        delay = self._source.run_once()
        if not self._source.stopped:
            self._scheduler.schedule(max(delay, self.RECHECK), self._tick)

    def stop(self, timeout: float = 5.0) -> None:
        self._source.stop(timeout)

    def health(self) -> dict[str, object]:
        return {**self._source.health(), "alive": self._started and not self._source.stopped}


class ScheduledReflectors:
    """Runs the quota view's watches (list once, then watch) as scheduler steps instead of on threads,
    as :class:`ScheduledWatch` does for the pods' watch."""

    def __init__(self, scheduler: DeterministicScheduler) -> None:
        self._scheduler = scheduler

    def __call__(self, reflector: ObjectsReflector) -> None:
        def tick() -> None:
            if reflector.stopped or reflector.forbidden is not None:
                return
            delay = reflector.run_once()
            if not reflector.stopped:
                self._scheduler.schedule(max(delay, ScheduledWatch.RECHECK), tick)

        self._scheduler.submit(tick)


def create_backend(
    conf: Mapping[str, str],
    *,
    api: KubernetesApi,
    driver: RecordingDriver | None,
    clock: ManualClock,
    scheduler: DeterministicScheduler,
) -> KubernetesClusterSchedulerBackend:
    """What create() builds, with the watch driven by the scheduler (see ScheduledWatch)."""
    assembly = assemble(
        conf, app_id=APP_ID, driver_url=DRIVER_URL, api=api, driver=driver, clock=clock, scheduler=scheduler
    )
    source = assembly.parts.watch_source
    assert isinstance(source, ExecutorPodsWatchSnapshotSource)
    parts = attrs.evolve(assembly.parts, watch_source=ScheduledWatch(source, scheduler))
    quota = getattr(parts.allocator, "quota", None)
    if isinstance(quota, QuotaGate):
        quota.view.starter = ScheduledReflectors(scheduler)
    return KubernetesClusterSchedulerBackend.from_assembly(attrs.evolve(assembly, parts=parts))


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


def make_harness(
    conf: Mapping[str, str] | None = None, *, driver: bool = True, driver_pod: bool = False
) -> Harness:
    """``driver_pod``: the driver pod ``driver`` exists, Ready (for spark.kubernetes.driver.pod.name)."""
    clock = ManualClock(START)
    scheduler = DeterministicScheduler(clock)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    if driver_pod:
        fake.create(
            PODS,
            "default",
            {
                "metadata": {"name": "driver"},
                "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark:4.3.0"}]},
            },
        )
        ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        fake.patch_status(PODS, "default", "driver", ready)
    recording = RecordingDriver()
    backend = create_backend(
        {**BASE_CONF, **(conf or {})},
        api=fake,
        driver=recording if driver else None,
        clock=clock,
        scheduler=scheduler,
    )
    return Harness(fake, scheduler, recording, backend)


def make_heartbeat(duration: float) -> tuple[DriverHeartbeat, FakeKubernetes, DeterministicScheduler]:
    """A heartbeat of :data:`APP_ID` (not started) on a fresh fake, a manual clock at :data:`START` and a
    deterministic scheduler."""
    clock = ManualClock(START)
    scheduler = DeterministicScheduler(clock)
    fake = FakeKubernetes(clock=clock)
    beat = DriverHeartbeat(
        fake, scheduler, clock, namespace="default", app_id=APP_ID, lease_name=HEARTBEAT_LEASE,
        duration=duration, holder="host/123",
    )  # fmt: skip
    return beat, fake, scheduler
