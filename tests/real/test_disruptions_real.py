"""Decommission on notice on a real control plane (kube-apiserver, kube-scheduler, the eviction API) with
the process kubelet's two nodes: ``kubectl drain`` semantics (cordon, then evict every executor on the
node), with the behaviour on and off, and an eviction without a cordon (the pod's DisruptionTarget
condition, which the real API server sets); and an OOM kill by the process kubelet's memory watchdog,
whose replacement gets the raised overhead and survives the same use.

Measured per run (printed, see docs/disruptions.md): how many drained executors the driver was asked to
decommission, and how many replacements were Running before the first eviction was sent."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import yaml
from backend_real_support import DRIVER_URL, all_pods, backend_conf, executors, running, until

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.kube.port import NODES, KubernetesApi, Resource
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(900)]

# An executor that outlives SIGTERM for its grace period, as a decommissioning JVM does while its
# blocks migrate: the evicted pod is seen terminating, with its DisruptionTarget condition.
STUBBORN = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    time.sleep(1)\n"
)


class Driver:
    """Spark's side as the backend sees it: executors register when their pods run."""

    def __init__(self, api: KubernetesApi, app: str) -> None:
        self._api, self._app = api, app
        self.decommissioned: list[tuple[str, str]] = []
        self.removed: list[tuple[str, ExecutorLoss]] = []

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        self.decommissioned.append((executor_id, reason))

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        self.removed.append((executor_id, loss))

    def registered_executors(self) -> Mapping[str, float]:
        gone = {i for i, _ in self.removed}
        return {
            i: 0.0
            for i, p in executors(self._api, self._app).items()
            if p["status"].get("phase") == "Running" and i not in gone
        }

    def application_failed(self, reason: str) -> None:
        raise AssertionError(reason)


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    nodes = [Node.of("node-1", cpu="16", memory="32Gi"), Node.of("node-2", cpu="16", memory="32Gi")]
    with LocalCluster(control_plane="kubernetes", run_processes=True, nodes=nodes, stop_grace=2.0) as local:
        yield local


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("templates") / "executor-template.yaml"
    spec = {
        "terminationGracePeriodSeconds": 5,
        "containers": [{"name": "spark-kubernetes-executor", "command": [sys.executable, "-c", STUBBORN]}],
    }
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "spec": spec}), encoding="utf-8")
    return path


def evict(api: KubernetesApi, name: str) -> None:
    """POST pods/<name>/eviction (policy/v1), as kubectl drain does."""
    eviction = Resource("Eviction", f"pods/{name}/eviction")
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    api.create(eviction, "default", body)


def node_of(pod: dict[str, object]) -> str:
    return str(pod["spec"]["nodeName"])  # type: ignore[index]


def drain(cluster: LocalCluster, app: str, template: Path, *, on: bool) -> dict[str, int]:
    api = cluster.api()
    driver = Driver(api, app)
    conf = backend_conf(
        app,
        4,
        template,
        **{
            "spark.kubernetes.executor.disruption.decommissionOnNotice": str(on).lower(),
            "spark.kubernetes.executor.disruption.nodeCheckInterval": "500ms",
        },
    )
    backend = KubernetesClusterSchedulerBackend.create(
        conf, app_id=app, driver_url=DRIVER_URL, api=cluster.api(), driver=driver
    )
    backend.start()
    drained_node: str | None = None
    try:
        until(lambda: running(api, app, 4), "4 executors Running")
        pods = executors(api, app)
        drained_node = node_of(pods["1"])
        drained = sorted(i for i, p in pods.items() if node_of(p) == drained_node)
        api.patch(NODES, None, drained_node, {"spec": {"unschedulable": True}})  # kubectl cordon
        if on:
            until(
                lambda: {i for i, _ in driver.decommissioned} >= set(drained),
                "drained executors decommissioned",
            )
            until(lambda: running(api, app, 4 + len(drained)), "replacements Running before any eviction")
        replaced_before_eviction = len(executors(api, app)) - 4
        for executor_id in drained:
            evict(api, pods[executor_id]["metadata"]["name"])
        until(
            lambda: running(api, app, 4) and not set(drained) & set(executors(api, app)),
            "the drained executors gone and 4 executors Running",
        )
        assert all(node_of(p) != drained_node for p in executors(api, app).values())
        figures = {
            "drained": len(drained),
            "decommissioned": len(driver.decommissioned),
            "replaced_before_eviction": replaced_before_eviction,
            "failures_counted": backend.status()["allocator"]["failures"],
        }
        print(f"drain with decommissionOnNotice={on}: {figures}")
        return figures
    finally:
        backend.stop()
        if drained_node is not None:  # uncordon: the next test has both nodes
            api.patch(NODES, None, drained_node, {"spec": {"unschedulable": False}})
        until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")


def test_a_drained_nodes_executors_are_decommissioned_and_replaced_before_eviction(
    cluster: LocalCluster, template: Path
) -> None:
    on = drain(cluster, "spark-real-drain-on", template, on=True)
    assert on["decommissioned"] == on["drained"] >= 1
    assert on["replaced_before_eviction"] == on["drained"]
    assert on["failures_counted"] == 0


def test_with_the_behaviour_off_a_drain_decommissions_nothing(cluster: LocalCluster, template: Path) -> None:
    off = drain(cluster, "spark-real-drain-off", template, on=False)
    assert off["decommissioned"] == 0 and off["replaced_before_eviction"] == 0


def test_an_eviction_alone_is_noticed_by_its_disruption_target_condition(
    cluster: LocalCluster, template: Path
) -> None:
    app, api = "spark-real-evict", cluster.api()
    driver = Driver(api, app)
    conf = backend_conf(app, 2, template, **{"spark.kubernetes.executor.disruption.nodeTaints": ""})
    backend = KubernetesClusterSchedulerBackend.create(
        conf, app_id=app, driver_url=DRIVER_URL, api=cluster.api(), driver=driver
    )
    backend.start()
    try:
        until(lambda: running(api, app, 2), "2 executors Running")
        evict(api, executors(api, app)["1"]["metadata"]["name"])
        until(lambda: driver.decommissioned, "the evicted executor decommissioned")
        assert driver.decommissioned[0][0] == "1"
        assert "DisruptionTarget (EvictionByEvictionAPI" in driver.decommissioned[0][1]
        until(lambda: running(api, app, 2) and "3" in executors(api, app), "the evicted executor replaced")
        assert backend.status()["allocator"]["failures"] == 0
    finally:
        backend.stop()
        until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")


# Uses ~1000 MiB, over the 896 MiB limit of a 512 MiB heap + 384 MiB overhead, under the 1088 MiB of the
# overhead raised x1.5 after one OOM kill.
GREEDY = (
    "import sys, time\nblock = b'x' * (1000 << 20)\nprint('allocated', flush=True)\n"
    "while True:\n    time.sleep(1)\n"
)


def test_an_oom_killed_executor_is_replaced_with_more_overhead_by_the_process_kubelet(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    app, api = "spark-real-oom", cluster.api()
    template = tmp_path / "greedy.yaml"
    container = {"name": "spark-kubernetes-executor", "command": [sys.executable, "-c", GREEDY]}
    template.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [container]}})
    )
    conf = backend_conf(
        app,
        1,
        template,
        **{
            "spark.kubernetes.executor.oom.overheadFactor": "1.5",
            "spark.kubernetes.executor.oom.maxOverheadFactor": "2",
        },
    )
    driver = Driver(api, app)
    backend = KubernetesClusterSchedulerBackend.create(
        conf, app_id=app, driver_url=DRIVER_URL, api=cluster.api(), driver=driver
    )
    backend.start()
    try:
        until(lambda: "1" in {i for i, _ in driver.removed}, "executor 1 OOM-killed and reported")
        loss = next(loss for i, loss in driver.removed if i == "1")
        assert loss.exit_code == 137 and loss.message.startswith("OOMKilled"), loss.message
        assert "raised from 384 MiB to 576 MiB" in loss.message
        until(lambda: running(api, app, 1) and "2" in executors(api, app), "executor 2 Running")
        pod = executors(api, app)["2"]
        assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == "1088Mi"
        log_path = cluster.kubelet.log_path("default", pod["metadata"]["name"], "spark-kubernetes-executor")
        assert log_path is not None
        until(
            lambda: "allocated" in Path(log_path).read_text(encoding="utf-8"), "executor 2 holds its 1000 MiB"
        )
        assert running(api, app, 1) and set(executors(api, app)) == {"2"}
        assert backend.status()["oom"]["profiles"] == {"0": {"ooms": 1, "factor": 1.5}}
    finally:
        backend.stop()
        until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")
