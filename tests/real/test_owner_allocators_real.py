"""The statefulset and deployment allocators on a real control plane: kube-controller-manager's
StatefulSet and ReplicaSet controllers create the executor pods, the process kubelet runs them as real
processes. The backend, used alone (no driver asks for ids), gives the pods their ids, scales the owner
up and down (a Deployment removes the executors Spark kills, marked with the lower deletion cost), and
stop deletes the owner, after which no pod and no process is left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from backend_real_support import (
    DRIVER_URL,
    all_pods,
    backend_conf,
    executors,
    running,
    sleeper_template,
    until,
)

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.allocation.owner_objects import DELETION_COST_ANNOTATION, OwnerKind
from k8s_backend.kube.port import KubernetesApi, NotFoundError
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    # binaries (tests/real/conftest.py) skips when nothing is cached and Go is missing.
    nodes = [Node.of("node-1", cpu="16", memory="32Gi")]
    with LocalCluster(control_plane="kubernetes", run_processes=True, nodes=nodes, stop_grace=2.0) as local:
        yield local


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sleeper_template(tmp_path_factory.mktemp("templates"))


def ids(api: KubernetesApi, app: str) -> list[int]:
    return sorted(int(i) for i in executors(api, app) if i.isdigit())


def cost(api: KubernetesApi, app: str, executor_id: str) -> str | None:
    pod = executors(api, app).get(executor_id)
    return None if pod is None else (pod["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION)


@pytest.mark.parametrize("kind", list(OwnerKind), ids=[k.value for k in OwnerKind])
def test_the_controller_makes_the_executors_the_backend_scales_them_and_stop_leaves_nothing(
    cluster: LocalCluster, template: Path, kind: OwnerKind
) -> None:
    app, api = f"spark-real-{kind.value}", cluster.api()
    extra = {"spark.kubernetes.allocation.pods.allocator": kind.value}
    if kind is OwnerKind.DEPLOYMENT:
        extra["spark.kubernetes.executor.podDeletionCost"] = "-100"
    backend = KubernetesClusterSchedulerBackend.create(
        backend_conf(app, 3, template, **extra), app_id=app, driver_url=DRIVER_URL, api=cluster.api()
    )
    backend.start()
    try:
        until(lambda: running(api, app, 3) and ids(api, app) == [1, 2, 3], "3 executors Running with ids 1-3")
        owner = api.get(kind.resource, "default", kind.object_name(app, 0))
        assert owner["spec"]["replicas"] == 3 and owner["status"].get("observedGeneration")
        assert len(cluster.kubelet.processes()) == 3
        backend.request_total_executors({0: 4})
        until(lambda: running(api, app, 4) and ids(api, app) == [1, 2, 3, 4], "scaled up to 4")
        # Spark's scale-down: a lower target, then the kill of the executors it chose.
        backend.request_total_executors({0: 3})
        backend.kill_executors(["2"])
        if kind is OwnerKind.DEPLOYMENT:
            until(lambda: ids(api, app) == [1, 3, 4] and len(all_pods(api, app)) == 3, "executor 2 removed")
        else:  # a StatefulSet removes its highest ordinal; the killed pod is replaced under a new id
            until(lambda: running(api, app, 3) and len(all_pods(api, app)) == 3, "scaled down to 3")
        assert backend.status()["allocator"]["replicas"] == {0: 3}
    finally:
        backend.stop()
    with pytest.raises(NotFoundError):
        api.get(kind.resource, "default", kind.object_name(app, 0))
    until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")
    until(lambda: cluster.kubelet.processes() == [], "no executor process after stop()")
