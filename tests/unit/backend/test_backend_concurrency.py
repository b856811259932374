"""Hooks called from several threads at once: stop() is idempotent under races, status() is safe."""

from __future__ import annotations

import threading
from typing import Any

from backend_harness import make_harness

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.backend.state import BackendState
from k8s_backend.kube.port import PODS
from k8s_backend.lifecycle.manager import RecordedLoss
from k8s_backend.testing import FakeKubernetes


def test_two_racing_stops_are_both_fine() -> None:
    h = make_harness()
    h.backend.start()
    h.run()
    machine = h.backend._machine
    real = machine.transition_if_allowed
    raced: list[int] = []

    def interleaved(target: BackendState, reason: str = "") -> bool:
        if target is BackendState.STOPPING and not raced:
            raced.append(1)
            h.backend.stop()  # the other thread's stop() gets in first
        return real(target, reason)

    machine.transition_if_allowed = interleaved  # type: ignore[method-assign]
    h.backend.stop()
    assert h.backend.state is BackendState.STOPPED


def test_status_is_safe_while_the_lifecycle_thread_records_losses() -> None:
    h = make_harness()
    h.backend.start()
    h.run()
    stop = threading.Event()

    def lose() -> None:
        i = 0
        while not stop.is_set():
            h.backend.lifecycle.recent_losses.append(RecordedLoss(i, 0.0, 1, True, "x"))
            i += 1

    writer = threading.Thread(target=lose)
    writer.start()
    try:
        for _ in range(3000):
            h.backend.status()
    finally:
        stop.set()
        writer.join()
    h.backend.stop()


class _SlowCreate(FakeKubernetes):
    """Pod creates block until released: a slow API server, or the adapter's retries."""

    def __init__(self) -> None:
        super().__init__(watch_blocking=False)
        self.entered = threading.Event()
        self.release = threading.Event()

    def create(self, resource: Any, namespace: Any, body: Any) -> Any:
        if resource is PODS:
            self.entered.set()
            self.release.wait(10)
        return super().create(resource, namespace, body)


def test_a_pod_created_while_stopping_is_taken_back() -> None:
    api = _SlowCreate()
    backend = KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "1",
            "spark.kubernetes.executorSnapshotsSubscribersShutdownGracePeriod": "1s",
            "spark.kubernetes.executor.enableApiWatcher": "false",
        },
        app_id="app-1",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=api,
    )
    backend.start()
    assert api.entered.wait(5)
    stopper = threading.Thread(target=backend.stop)
    stopper.start()
    stopper.join(3)  # the threads' grace period (1 s) passes with the create still in flight
    api.release.set()
    stopper.join(10)
    for thread in threading.enumerate():
        if thread.name.startswith("k8s-backend"):
            thread.join(5)
    assert api.objects(PODS, "default") == []
