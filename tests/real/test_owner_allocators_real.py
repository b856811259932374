"""The statefulset and deployment allocators on a real control plane: kube-controller-manager's
StatefulSet and ReplicaSet controllers create the executor pods, the process kubelet runs them as real
processes, the allocator gives them ids, scales the owner up and down (a Deployment removes the pods
marked with the lower deletion cost), and stop deletes the owner, after which no pod is left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
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

from k8s_backend.allocation.owner_allocator import OwnerPodsAllocator
from k8s_backend.allocation.owner_objects import OwnerKind
from k8s_backend.allocation.settings import AllocatorIdentity
from k8s_backend.common import ThreadScheduler
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import KubernetesApi, NotFoundError
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts
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


def allocator_for(
    kind: OwnerKind, api: KubernetesApi, app: str, template: Path, threads: ThreadScheduler
) -> OwnerPodsAllocator:
    conf = KubernetesConf.from_spark_conf(backend_conf(app, 0, template))
    conf = attrs.evolve(conf, allocation=attrs.evolve(conf.allocation, allocator=kind.value))
    return OwnerPodsAllocator(
        kind,
        AllocatorIdentity(app_id=app, driver_url=DRIVER_URL, pod_name_prefix=app),
        api,
        ExecutorPodBuilder(conf, None, facts=DriverFacts(spark_user="tester", spark_version="4.3.0")),
        threads,
        namespace="default",
        default_profile=conf.executor.default_profile,
        interval=0.2,
        deletion_cost=-100 if kind is OwnerKind.DEPLOYMENT else None,
    )


def ids(api: KubernetesApi, app: str) -> list[int]:
    return sorted(int(i) for i in executors(api, app) if i.isdigit())


@pytest.mark.parametrize("kind", list(OwnerKind), ids=[k.value for k in OwnerKind])
def test_the_controller_makes_the_executors_and_stop_leaves_nothing(
    cluster: LocalCluster, template: Path, kind: OwnerKind
) -> None:
    app, api = f"spark-real-{kind.value}", cluster.api()
    threads = ThreadScheduler(f"owner-{kind.value}", threads=1)
    allocator = allocator_for(kind, api, app, template, threads)
    allocator.start()
    try:
        allocator.set_total_expected_executors({0: 3})
        until(lambda: running(api, app, 3) and ids(api, app) == [1, 2, 3], "3 executors Running with ids 1-3")
        assert len(cluster.kubelet.processes()) == 3
        allocator.set_total_expected_executors({0: 4})
        until(lambda: running(api, app, 4) and ids(api, app) == [1, 2, 3, 4], "scaled up to 4")
        if kind is OwnerKind.DEPLOYMENT:
            # Spark's scale-down: the chosen executors get the lower cost, then the target drops.
            allocator.mark_for_removal([2])
            until(lambda: _cost(api, app, "2") == "-100", "executor 2 marked for removal")
            allocator.set_total_expected_executors({0: 3})
            until(lambda: ids(api, app) == [1, 3, 4] and len(all_pods(api, app)) == 3, "executor 2 removed")
        else:  # a StatefulSet removes its highest ordinal
            allocator.set_total_expected_executors({0: 3})
            until(lambda: len(ids(api, app)) == 3 and len(all_pods(api, app)) == 3, "scaled down to 3")
    finally:
        allocator.stop()
        threads.shutdown(5.0)
    with pytest.raises(NotFoundError):
        api.get(kind.resource, "default", kind.object_name(app, 0))
    # The garbage collector deletes the pods of the deleted owner in the background.
    until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")
    until(lambda: cluster.kubelet.processes() == [], "no executor process after stop()")


def _cost(api: KubernetesApi, app: str, executor_id: str) -> str | None:
    pod = executors(api, app).get(executor_id)
    annotations = {} if pod is None else pod["metadata"].get("annotations") or {}
    return annotations.get("controller.kubernetes.io/pod-deletion-cost")
