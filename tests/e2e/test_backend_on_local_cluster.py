"""The backend over HTTP on a LocalCluster with simulated nodes (no executor processes, no JVM):
restart recovery, and executors that cannot fit failing a Hard gang with the scheduler's reason."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.backend.state import BackendState
from k8s_backend.common import ThreadScheduler
from k8s_backend.kube.port import PODS
from k8s_backend.local.kubelet.nodes import Node
from k8s_backend.testing import LocalCluster

pytestmark = pytest.mark.e2e

APP = "spark-recovery-e2e"
DRIVER_URL = "spark://CoarseGrainedScheduler@127.0.0.1:7078"


def conf(**extra: str) -> dict[str, str]:
    return {
        "spark.app.name": "e2e",
        "spark.kubernetes.container.image": "spark:4.3.0",
        "spark.kubernetes.executor.podNamePrefix": "e2e",
        "spark.executor.instances": "2",
        "spark.executor.memory": "512m",
        "spark.kubernetes.allocation.batch.delay": "200ms",
        "spark.kubernetes.executor.eventProcessingInterval": "200ms",
        **extra,
    }


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    nodes = [Node.of("node-1", cpu="8", memory="4Gi")]
    with LocalCluster(run_processes=False, nodes=nodes) as local:
        yield local


def executors(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["labels"]["spark-exec-id"]: p
        for p in cluster.fake.objects(PODS, "default")
        if p["metadata"]["labels"].get("spark-app-selector") == APP
    }


def running(cluster: LocalCluster, count: int) -> bool:
    pods = executors(cluster).values()
    return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods)


def gone_after_stop(cluster: LocalCluster) -> bool:
    """Whether every executor pod is gone: stop() deletes them gracefully, the kubelet then removes them."""
    return cluster.wait_until(lambda: executors(cluster) == {}, 60)


def backend(
    cluster: LocalCluster,
    props: Mapping[str, str],
    driver_url: str = DRIVER_URL,
    scheduler: ThreadScheduler | None = None,
) -> Any:
    return KubernetesClusterSchedulerBackend.create(
        props, app_id=APP, driver_url=driver_url, api=cluster.api(), scheduler=scheduler
    )


def crashable(cluster: LocalCluster) -> tuple[Any, ThreadScheduler]:
    """A backend on threads of the test's own, so that crash() can stop them."""
    threads = ThreadScheduler("k8s-backend", threads=3)
    return backend(cluster, conf(), scheduler=threads), threads


def settled(backend: Any, count: int) -> bool:
    """Every create the backend made has returned and its pod was seen: nothing is in flight. (A
    create still in flight when crash() halts the allocator would be taken back, as stop() does; a
    killed driver takes nothing back.)"""
    allocator = backend.status()["allocator"]
    return allocator["executor_id_counter"] == count and not allocator["newly_created"]


def crash(dead: Any, threads: ThreadScheduler) -> None:
    """Stop a backend's threads without any cleanup, as a killed driver would."""
    dead.watch_source.stop()
    dead.polling_source.stop()
    dead.store.stop()
    dead.allocator.halt()
    threads.shutdown(5.0)


def test_a_restarted_backend_adopts_the_live_executors_and_continues_ids(cluster: LocalCluster) -> None:
    first, threads = crashable(cluster)
    first.start()
    assert cluster.wait_until(lambda: running(cluster, 2) and settled(first, 2), 60)
    crash(first, threads)
    before = set(executors(cluster))

    second = backend(cluster, conf())
    second.start()
    try:
        second.request_total_executors({0: 3})
        assert cluster.wait_until(lambda: running(cluster, 3), 60)
        after = set(executors(cluster))
        assert before < after, "the live executors were adopted, not replaced"
        assert after - before == {str(max(int(i) for i in before) + 1)}, "ids continue above the highest"
    finally:
        second.stop()
    assert gone_after_stop(cluster)


def test_a_new_driver_deletes_executors_that_talk_to_the_old_one(cluster: LocalCluster) -> None:
    first, threads = crashable(cluster)
    first.start()
    assert cluster.wait_until(lambda: running(cluster, 2) and settled(first, 2), 60)
    crash(first, threads)
    old = set(executors(cluster))

    second = backend(cluster, conf(), driver_url="spark://CoarseGrainedScheduler@127.0.0.2:7078")
    second.start()
    try:
        assert cluster.wait_until(lambda: running(cluster, 2) and not (set(executors(cluster)) & old), 60)
    finally:
        second.stop()


def test_executors_that_cannot_fit_fail_a_hard_gang_with_the_unschedulable_reason(
    cluster: LocalCluster,
) -> None:
    failures: list[str] = []
    props = conf(
        **{
            "spark.executor.memory": "8g",  # more than the node's 4Gi
            "spark.kubernetes.gang.enabled": "true",
            "spark.kubernetes.gang.style": "Hard",
            "spark.kubernetes.gang.timeout": "3s",
        }
    )
    hard = KubernetesClusterSchedulerBackend.create(
        props, app_id=APP, driver_url=DRIVER_URL, api=cluster.api(), on_application_failed=failures.append
    )
    hard.start()
    try:
        assert not hard.sufficient_resources_registered()
        assert cluster.wait_until(lambda: bool(failures), 60)
        assert hard.state is BackendState.FAILED
        assert "Unschedulable" in failures[0] and "Insufficient memory" in failures[0], failures[0]
        histories = hard.status()["executors"]["histories"]
        assert any("Unschedulable" in line for line in histories.values()), histories
    finally:
        hard.stop()
    assert gone_after_stop(cluster)
