"""A real PySpark job with k8s_backend's statefulset and deployment allocators on a real control plane:
kube-controller-manager's StatefulSet and ReplicaSet controllers create the executor pods, each executor
(Spark's KubernetesExecutorBackend, id EXECID) asks the driver for its id (GenerateExecID, answered by
the bridge), the job gives the right answer, dynamic allocation scales up and back down, and stop
deletes the owner object and so every executor pod."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_spark_real import NODES, run_scenario

from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    nodes = [Node.of(name, cpu="2", memory="8Gi") for name in NODES]
    with LocalCluster(control_plane="kubernetes", nodes=nodes, stop_grace=2.0) as local:
        yield local


@pytest.mark.parametrize("kind", ["statefulset", "deployment"])
def test_a_pyspark_job_on_executors_made_by_a_controller(
    cluster: LocalCluster, tmp_path: Path, kind: str
) -> None:
    seen = run_scenario(kind, cluster, tmp_path)
    owner = seen["owner"]
    assert owner["template"]["metadata"]["labels"]["spark-exec-id"] == "EXECID"
    if kind == "statefulset":
        assert owner["podManagementPolicy"] == "Parallel"

    # Held tasks: the controller's pods, each executor named by GenerateExecID, busy in Spark.
    assert seen["scaled_up"] and seen["all_busy"], seen["pods_after_scale_up"]
    up = [pod for pod in seen["pods_after_scale_up"] if pod["live"]]
    assert len(up) == 2 and all(pod["executor_id"].isdigit() for pod in up)
    assert {pod["executor_id"] for pod in up} == set(seen["spark_executors"])
    assert seen["job_result"] == {"sum": seen["expected_sum"]}

    # Idle: back to minExecutors (1), in the owner's replicas, in pods and in Spark.
    assert seen["scaled_down"] and seen["spark_saw_one"], seen["pods_after_idle"]
    assert seen["replicas_after_idle"] == 1
    kept = [pod for pod in seen["pods_after_idle"] if pod["live"]]
    assert [pod["executor_id"] for pod in kept] == list(seen["spark_executors_after_idle"])
    assert seen["second_sum"] == 499500

    # spark.stop(): the owner deleted, every executor pod gone, no process left.
    assert not seen["owner_left"]
    assert seen["all_deleted"], seen["final_pods"]
    assert seen["max_live_pods"] <= 3
    assert cluster.wait_until(lambda: cluster.kubelet.processes() == [], 60)
