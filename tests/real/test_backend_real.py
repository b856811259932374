"""The backend on a real control plane (kube-apiserver, kube-scheduler, kube-controller-manager) with the
process kubelet as its node agent, with executor pods as real processes and without: allocation to
exactly N, replacement of deleted and failed executors, recovery after a restart, stop() leaving nothing,
and the real garbage collector removing the executors of a deleted driver pod.

One cluster per mode serves the whole module; every test uses its own application id and cleans up.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from backend_real_support import (
    DEADLINE,
    DRIVER_URL,
    all_pods,
    backend_conf,
    crash,
    crashable,
    executors,
    fail_executor,
    running,
    settled,
    sleeper_template,
    until,
)

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, KubernetesApi, NotFoundError
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module", params=[False, True], ids=["no-processes", "processes"])
def cluster(request: pytest.FixtureRequest, binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    # binaries (tests/real/conftest.py) skips when nothing is cached and Go is missing.
    nodes = [Node.of("node-1", cpu="16", memory="32Gi"), Node.of("node-2", cpu="16", memory="32Gi")]
    with LocalCluster(
        control_plane="kubernetes", run_processes=request.param, nodes=nodes, stop_grace=2.0
    ) as local:
        yield local


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sleeper_template(tmp_path_factory.mktemp("templates"))


@contextmanager
def started_backend(
    cluster: LocalCluster, api: KubernetesApi, app: str, instances: int, template: Path
) -> Iterator[KubernetesClusterSchedulerBackend]:
    """A started backend of ``app`` (on a client of its own); stopped on leaving, after which no pod of
    ``app`` is left (seen through ``api``)."""
    backend = KubernetesClusterSchedulerBackend.create(
        backend_conf(app, instances, template), app_id=app, driver_url=DRIVER_URL, api=cluster.api()
    )
    backend.start()
    try:
        yield backend
    finally:
        backend.stop()
    until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")


def test_allocation_to_exactly_n_and_stop_leaves_nothing(cluster: LocalCluster, template: Path) -> None:
    app, api = "spark-real-alloc", cluster.api()
    with started_backend(cluster, api, app, 7, template) as backend:
        until(lambda: running(api, app, 7) and settled(backend, 7), "7 executors Running")
        pods = executors(api, app)
        assert sorted(pods, key=int) == [str(i) for i in range(1, 8)]
        assert {p["spec"]["nodeName"] for p in pods.values()} <= {"node-1", "node-2"}
        if cluster.kubelet.run_processes:
            assert len(cluster.kubelet.processes()) == 7
        # Scaling down is what Spark's allocation manager does: a lower target, then the kill.
        backend.request_total_executors({0: 3})
        backend.kill_executors(["4", "5", "6", "7"])
        until(lambda: running(api, app, 3) and len(all_pods(api, app)) == 3, "scaled down to 3")
        backend.request_total_executors({0: 5})
        until(lambda: running(api, app, 5) and settled(backend, 9), "scaled back up to 5")
    # A client-mode executor ConfigMap is owned by the heartbeat Lease: the real garbage collector takes
    # it in the background once stop() deleted the Lease.
    selector = f"spark-app-selector={app}"
    until(lambda: api.list(CONFIG_MAPS, "default", label_selector=selector).items == [], "ConfigMap gone")
    if cluster.kubelet.run_processes:
        until(lambda: cluster.kubelet.processes() == [], "no executor process after stop()")


def test_a_deleted_and_a_failed_executor_are_replaced(cluster: LocalCluster, template: Path) -> None:
    app, api = "spark-real-replace", cluster.api()
    with started_backend(cluster, api, app, 3, template) as backend:
        until(lambda: running(api, app, 3) and settled(backend, 3), "3 executors Running")
        api.delete(PODS, "default", executors(api, app)["2"]["metadata"]["name"])
        until(lambda: running(api, app, 3) and "4" in executors(api, app), "the deleted executor replaced")
        assert "2" not in executors(api, app)

        fail_executor(cluster, executors(api, app)["3"])
        until(lambda: running(api, app, 3) and "5" in executors(api, app), "the failed executor replaced")
        assert set(executors(api, app)) == {"1", "4", "5"}
        exit_code = 137 if cluster.kubelet.run_processes else 1  # SIGKILLed, or reported failed
        assert f"exit {exit_code}" in backend.monitor.describe(3), backend.monitor.describe(3)


def test_a_restarted_backend_adopts_the_live_executors_and_continues_ids(
    cluster: LocalCluster, template: Path
) -> None:
    app, api = "spark-real-recovery", cluster.api()
    first, threads = crashable(cluster.api(), app, backend_conf(app, 2, template))
    first.start()
    until(lambda: running(api, app, 2) and settled(first, 2), "2 executors Running")
    crash(first, threads)
    before = {i: p["metadata"]["uid"] for i, p in executors(api, app).items()}

    with started_backend(cluster, api, app, 2, template) as second:
        second.request_total_executors({0: 3})
        until(lambda: running(api, app, 3), "3 executors Running after the restart")
        after = {i: p["metadata"]["uid"] for i, p in executors(api, app).items()}
        assert {i: after[i] for i in before} == before, "the live executors were adopted, not replaced"
        assert set(after) - set(before) == {"3"}, "ids continue above the highest"


def test_the_garbage_collector_removes_the_executors_of_a_deleted_driver_pod(
    cluster: LocalCluster, template: Path
) -> None:
    app, api = "spark-real-owned", cluster.api()
    driver = f"{app}-driver"
    api.create(PODS, "default", {
        "metadata": {"name": driver, "labels": {"spark-app-selector": app, "spark-role": "driver"}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "driver", "image": "spark:4.3.0",
                            "command": [sys.executable, "-c", "import time; time.sleep(3600)"]}],
        },
    })  # fmt: skip
    until(lambda: cluster.pod_phase(driver) == "Running", "the driver pod Running")
    driver_uid = api.get(PODS, "default", driver)["metadata"]["uid"]
    props = backend_conf(app, 3, template, **{"spark.kubernetes.driver.pod.name": driver})
    backend, threads = crashable(cluster.api(), app, props)
    backend.start()
    until(lambda: running(api, app, 3) and settled(backend, 3), "3 executors Running")
    for pod in executors(api, app).values():
        owners = pod["metadata"].get("ownerReferences") or []
        assert [(o["kind"], o["name"], o["uid"]) for o in owners] == [("Pod", driver, driver_uid)]
    # The driver dies with its pod: nothing of the backend's own cleanup runs.
    crash(backend, threads)
    api.delete(PODS, "default", driver)

    def collected() -> bool:
        try:
            api.get(PODS, "default", driver)
            return False
        except NotFoundError:
            return all_pods(api, app) == []

    until(collected, "the executors removed by the garbage collector", timeout=DEADLINE)
    owned_maps = api.list(CONFIG_MAPS, "default", label_selector=f"spark-app-selector={app}").items
    until(
        lambda: api.list(CONFIG_MAPS, "default", label_selector=f"spark-app-selector={app}").items == [],
        f"the executors' ConfigMaps removed too (were {[m['metadata']['name'] for m in owned_maps]})",
    )
    if cluster.kubelet.run_processes:
        until(lambda: cluster.kubelet.processes() == [], "no executor process left")


def test_the_garbage_collector_removes_the_executors_of_a_deleted_heartbeat_lease(
    cluster: LocalCluster, template: Path
) -> None:
    """The Lease's delete, just before the pods' own at stop, takes the executors that collection delete
    leaves (cut short at 10,000 pods, and the driver gone right after stop())."""
    app, api = "spark-real-lease-owned", cluster.api()
    backend, threads = crashable(cluster.api(), app, backend_conf(app, 3, template))
    backend.start()
    until(lambda: running(api, app, 3) and settled(backend, 3), "3 executors Running")
    lease = api.get(LEASES, "default", f"{app}-driver-heartbeat")
    for pod in executors(api, app).values():
        owners = pod["metadata"].get("ownerReferences") or []
        assert [(o["kind"], o["uid"], o.get("controller")) for o in owners] == [
            ("Lease", lease["metadata"]["uid"], None)
        ]
    crash(backend, threads)  # nothing of the backend's own cleanup runs
    api.delete(LEASES, "default", lease["metadata"]["name"])
    until(
        lambda: all_pods(api, app) == [], "the executors removed by the garbage collector", timeout=DEADLINE
    )
    if cluster.kubelet.run_processes:
        until(lambda: cluster.kubelet.processes() == [], "no executor process left")


def test_a_restarted_driver_that_keeps_executors_keeps_the_pods_its_predecessor_let_the_lease_own(
    cluster: LocalCluster, template: Path
) -> None:
    """The Lease is taken over by the next driver of the same application id, so the pods it adopts still
    name it: with deleteOnTermination=false its delete orphans them instead of having them collected."""
    app, api = "spark-real-lease-kept", cluster.api()
    first, threads = crashable(cluster.api(), app, backend_conf(app, 2, template))
    first.start()
    until(lambda: running(api, app, 2) and settled(first, 2), "2 executors Running")
    lease = api.get(LEASES, "default", f"{app}-driver-heartbeat")
    crash(first, threads)
    keep = backend_conf(app, 2, template, **{"spark.kubernetes.executor.deleteOnTermination": "false"})
    second = KubernetesClusterSchedulerBackend.create(
        keep, app_id=app, driver_url=DRIVER_URL, api=cluster.api()
    )
    second.start()
    try:
        until(lambda: settled(second, 2), "the 2 executors adopted")
        taken_over = api.get(LEASES, "default", lease["metadata"]["name"])
        assert taken_over["metadata"]["uid"] == lease["metadata"]["uid"]
    finally:
        second.stop()

    def lease_gone() -> bool:
        try:
            api.get(LEASES, "default", lease["metadata"]["name"])
            return False
        except NotFoundError:
            return True

    # The collector orphans the dependents before it lets the Lease go: once it is gone, they are free.
    until(lease_gone, "the Lease deleted", timeout=DEADLINE)
    kept = executors(api, app)
    assert sorted(kept) == ["1", "2"]
    assert [p["metadata"].get("ownerReferences") for p in kept.values()] == [None, None]
    assert all(p["status"].get("phase") == "Running" for p in kept.values())
    api.delete_collection(PODS, "default", label_selector=f"spark-app-selector={app}")
    api.delete_collection(CONFIG_MAPS, "default", label_selector=f"spark-app-selector={app}")
    until(lambda: all_pods(api, app) == [], "the kept executors deleted by the test")


def test_executors_bigger_than_any_node_stay_pending_with_the_schedulers_message(
    cluster: LocalCluster, template: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app, api = "spark-real-huge", cluster.api()
    props = backend_conf(
        app, 2, template, **{"spark.executor.memory": "100g", "spark.kubernetes.executor.stuckTimeout": "1s"}
    )
    backend = KubernetesClusterSchedulerBackend.create(props, app_id=app, driver_url=DRIVER_URL, api=api)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.tracking.tracker"):
        backend.start()
        try:

            def logged() -> list[str]:
                return [r.getMessage() for r in caplog.records if "has been pending" in r.getMessage()]

            # status() computes the stuck list when asked; the log line comes with the next batch.
            until(
                lambda: len(backend.status()["executors"]["stuck"]) == 2 and len(logged()) >= 2,
                "2 executors reported stuck and logged",
            )
            stuck = backend.status()["executors"]["stuck"]
            pods = executors(api, app)
            assert {p["status"].get("phase") for p in pods.values()} == {"Pending"}
            assert not any(p["spec"].get("nodeName") for p in pods.values())
            for entry in stuck:
                pod = pods[str(entry["executor_id"])]
                scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
                # kube-scheduler's own words, e.g. "0/2 nodes are available: 2 Insufficient memory. ..."
                assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
                assert "0/2 nodes are available: 2 Insufficient memory" in scheduled["message"]
                assert entry["reason"] == f"Unschedulable: {scheduled['message']}"
            lines = logged()
            assert all("Unschedulable: 0/2 nodes are available: 2 Insufficient memory" in m for m in lines), (
                lines
            )
        finally:
            backend.stop()
    until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")
