"""Decommission on notice on a real control plane (kube-apiserver, kube-scheduler, the eviction API) with
the process kubelet's two nodes: ``kubectl drain`` semantics (cordon, then evict every executor on the
node), with the behaviour on and off, and an eviction without a cordon (the pod's DisruptionTarget
condition, which the real API server sets); and an OOM kill by the process kubelet's memory watchdog,
whose replacement gets the raised overhead and survives the same use.

Measured per run (printed, see docs/disruptions.md): how many drained executors the driver was asked to
decommission, and how many replacements were Running before the first eviction was sent."""

from __future__ import annotations

import collections
import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

import pytest
import yaml
from backend_real_support import (
    DRIVER_URL,
    all_pods,
    backend_conf,
    executors,
    fail_executor,
    make_namespace,
    running,
    until,
)

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.allocation.quota_watch import LIMIT_RANGES, RESOURCE_QUOTAS
from k8s_backend.kube.delegate import DelegatingKubernetesApi
from k8s_backend.kube.port import NODES, ForbiddenError, KubernetesApi, Resource
from k8s_backend.lifecycle.autoscaler_hints import (
    DELETION_COST,
    DO_NOT_DISRUPT,
    SAFE_TO_EVICT,
    ExecutorActivity,
)
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(900)]
_T = TypeVar("_T")

# An executor that outlives SIGTERM for its grace period, as a decommissioning JVM does while its
# blocks migrate: the evicted pod is seen terminating, with its DisruptionTarget condition. It says when
# it ignores SIGTERM (a file named after its pod in $READY_DIR): a loaded machine can take seconds to start
# Python, and a SIGTERM before that line would end it at once.
STUBBORN = (
    "import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "open(os.path.join(os.environ['READY_DIR'], os.environ['SPARK_EXECUTOR_POD_NAME']), 'w').close()\n"
    "while True:\n    time.sleep(1)\n"
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


def stubborn_ready(template: Path, pods: Iterable[str]) -> bool:
    """Each of these executor processes ignores SIGTERM by now (see STUBBORN)."""
    return all((template.parent / "ready" / name).exists() for name in pods)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("templates") / "executor-template.yaml"
    (path.parent / "ready").mkdir()
    container = {
        "name": "spark-kubernetes-executor",
        "command": [sys.executable, "-c", STUBBORN],
        "env": [{"name": "READY_DIR", "value": str(path.parent / "ready")}],
    }
    spec = {"terminationGracePeriodSeconds": 5, "containers": [container]}
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "spec": spec}), encoding="utf-8")
    return path


def evict(api: KubernetesApi, name: str) -> None:
    """POST pods/<name>/eviction (policy/v1), as kubectl drain does."""
    eviction = Resource("Eviction", f"pods/{name}/eviction")
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    api.create(eviction, "default", body)


def node_of(pod: dict[str, object]) -> str:
    """The pod's node; empty while the scheduler has not placed it yet (a replacement just created)."""
    return str(pod["spec"].get("nodeName") or "")  # type: ignore[attr-defined]


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
        names = [pods[executor_id]["metadata"]["name"] for executor_id in drained]
        until(lambda: stubborn_ready(template, names), "the drained executors ignoring SIGTERM")
        for name in names:
            evict(api, name)
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
        victim = executors(api, app)["1"]["metadata"]["name"]
        until(lambda: stubborn_ready(template, [victim]), "the executor ignoring SIGTERM")
        evict(api, victim)
        until(lambda: driver.decommissioned, "the evicted executor decommissioned")
        assert driver.decommissioned[0][0] == "1"
        assert "DisruptionTarget (EvictionByEvictionAPI" in driver.decommissioned[0][1]
        until(lambda: running(api, app, 2) and "3" in executors(api, app), "the evicted executor replaced")
        assert backend.status()["allocator"]["failures"] == 0
        # The timeline shows the notice, the decommission, and the noticed executor's end.
        until(
            lambda: "gone" in {kind for _, kind, _ in backend.parts.monitor.recent_activity(20)[1]},
            "the evicted executor's end on the timeline",
        )
        kinds = [kind for _, kind, _ in backend.parts.monitor.recent_activity(20)[1]]
        assert kinds.index("notice") < kinds.index("decommission") < kinds.index("gone"), kinds
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


class CountingApi(DelegatingKubernetesApi):
    """Counts the pod creates the API server refuses with 403 (exceeded quota), and the requests for
    ResourceQuotas and LimitRanges by verb."""

    def __init__(self, api: KubernetesApi) -> None:
        super().__init__(api)
        self.refused = 0
        self.quota_requests: collections.Counter[str] = collections.Counter()

    def around(self, verb: str, resource: Resource, call: Callable[[], _T]) -> _T:
        if resource.plural in (RESOURCE_QUOTAS.plural, LIMIT_RANGES.plural):
            self.quota_requests[verb] += 1
        try:
            return call()
        except ForbiddenError:
            if verb == "create" and resource.plural == "pods":
                self.refused += 1
            raise


def allocate_into_quota(cluster: LocalCluster, template: Path, *, on: bool) -> dict[str, int]:
    """50 executors into a namespace whose ResourceQuota fits 10 pods: the refused creates and log lines."""
    namespace = f"quota-{'on' if on else 'off'}"
    make_namespace(cluster, namespace)
    api = cluster.api(namespace)
    api.create(
        RESOURCE_QUOTAS, namespace, {"metadata": {"name": "ten-pods"}, "spec": {"hard": {"pods": "10"}}}
    )
    until(
        lambda: (api.get(RESOURCE_QUOTAS, namespace, "ten-pods").get("status") or {}).get("hard"),
        "quota status",
    )
    app = f"spark-real-quota-{'on' if on else 'off'}"
    conf = backend_conf(
        app,
        50,
        template,
        **{
            "spark.kubernetes.namespace": namespace,
            "spark.kubernetes.allocation.quotaAware": str(on).lower(),
            "spark.kubernetes.allocation.batch.size": "10",
            "spark.executor.maxNumFailures": "1000",  # so the refusals show, rather than end the run
        },
    )
    counting = CountingApi(cluster.api(namespace))
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("k8s_backend").addHandler(handler)
    backend = KubernetesClusterSchedulerBackend.create(conf, app_id=app, driver_url=DRIVER_URL, api=counting)
    backend.start()
    try:
        until(lambda: running(api, app, 10, namespace), "10 executors Running (the quota's pods)")
        if on:
            until(lambda: backend.status()["allocator"]["quota"]["waiting_for"], "allocation waits for quota")
        else:
            until(lambda: counting.refused > 0, "a create refused over quota")
        api.delete(RESOURCE_QUOTAS, namespace, "ten-pods")  # the quota frees
        # Allocation resumes (starting all 50 as processes would only load the machine).
        until(lambda: len(all_pods(api, app, namespace)) > 10, "more executor pods once the quota is gone")
    finally:
        backend.stop()
        logging.getLogger("k8s_backend").removeHandler(handler)
    warnings = [r for r in records if r.levelno >= logging.WARNING]
    figures = {
        "refused_creates": counting.refused,
        "warning_lines": len(warnings),
        "quota_wait_lines": sum("Allocation waits for quota" in r.getMessage() for r in records),
        "quota_lists": counting.quota_requests["list"],
        "quota_watches": counting.quota_requests["watch"],
    }
    print(f"50 executors into a 10-pod quota, quotaAware={on}: {figures}")
    return figures


def test_quota_aware_allocation_sends_no_create_the_quota_refuses(
    cluster: LocalCluster, template: Path
) -> None:
    on = allocate_into_quota(cluster, template, on=True)
    assert on["refused_creates"] == 0
    assert on["quota_wait_lines"] == 1
    # One list of ResourceQuotas and one of LimitRanges, then their two watches (renewed only after the
    # server's watch timeout, minutes): not a list per round.
    assert on["quota_lists"] == 2, on
    assert 2 <= on["quota_watches"] <= 4, on
    off = allocate_into_quota(cluster, template, on=False)
    assert off["refused_creates"] > 0 and off["quota_wait_lines"] == 0
    assert off["quota_lists"] == off["quota_watches"] == 0


def test_a_node_whose_executors_keep_being_killed_is_avoided_by_the_real_scheduler(
    cluster: LocalCluster, template: Path
) -> None:
    app, api = "spark-real-avoid", cluster.api()
    conf = backend_conf(
        app,
        4,
        template,
        **{
            "spark.kubernetes.executor.nodeFailures.threshold": "2",
            "spark.kubernetes.executor.nodeFailures.window": "10min",
            "spark.executor.maxNumFailures": "100",
        },
    )
    backend = KubernetesClusterSchedulerBackend.create(
        conf, app_id=app, driver_url=DRIVER_URL, api=cluster.api()
    )
    backend.start()
    try:
        until(lambda: running(api, app, 4), "4 executors Running")
        bad = node_of(executors(api, app)["1"])
        killed: set[str] = set()
        while not backend.status()["allocator"]["avoided_nodes"]:
            on_bad = {i: p for i, p in executors(api, app).items() if node_of(p) == bad and i not in killed}
            if on_bad and len(killed) < 2:
                executor_id = min(on_bad, key=int)
                fail_executor(cluster, on_bad[executor_id])  # SIGKILL: exit 137, not an OOM kill
                killed.add(executor_id)
            until(
                lambda: (
                    backend.status()["allocator"]["avoided_nodes"]
                    or any(node_of(p) == bad and i not in killed for i, p in executors(api, app).items())
                ),
                "the node avoided, or another executor on it to kill",
            )
        avoided = backend.status()["allocator"]["avoided_nodes"]
        assert [a["node"] for a in avoided] == [bad] and avoided[0]["failures"] == 2
        # The two killed executors' replacements may still be on their way: let them come up
        # first, so that "new" below means exactly the executors asked for after the avoidance.
        until(lambda: running(api, app, 4), "the 2 replacements Running")
        highest = max(int(i) for i in executors(api, app))
        backend.request_total_executors({0: 6})  # new executors after the avoidance
        until(lambda: running(api, app, 6), "6 executors Running")
        new = [p for i, p in executors(api, app).items() if int(i) > highest]
        assert len(new) == 2 and all(node_of(p) != bad for p in new), [node_of(p) for p in new]
        print(
            f"avoided {bad} after {len(killed)} SIGKILLed executors; "
            f"new executors on {[node_of(p) for p in new]}"
        )
    finally:
        backend.stop()
        until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")


class HoldingDriver(Driver):
    """A driver that says which executors hold cached blocks (the bridge reads it from Spark)."""

    holding: frozenset[str] = frozenset()

    def executor_activity(self) -> Mapping[str, ExecutorActivity]:
        return {i: ExecutorActivity(rdd_blocks=int(i in self.holding)) for i in self.registered_executors()}


def hints_of(api: KubernetesApi, app: str) -> dict[str, dict[str, str]]:
    """Executor id -> the autoscaler annotations its pod carries."""
    keys = (SAFE_TO_EVICT, DO_NOT_DISRUPT, DELETION_COST)
    return {
        i: {k: v for k, v in (p["metadata"].get("annotations") or {}).items() if k in keys}
        for i, p in executors(api, app).items()
    }


def test_executors_holding_blocks_carry_the_autoscaler_hints_on_the_real_api_server(
    cluster: LocalCluster, template: Path
) -> None:
    app, api = "spark-real-hints", cluster.api()
    driver = HoldingDriver(api, app)
    driver.holding = frozenset({"1"})
    conf = backend_conf(
        app,
        2,
        template,
        **{
            "spark.kubernetes.executor.autoscalerHints.enabled": "true",
            "spark.kubernetes.executor.autoscalerHints.interval": "200ms",
        },
    )
    backend = KubernetesClusterSchedulerBackend.create(
        conf, app_id=app, driver_url=DRIVER_URL, api=cluster.api(), driver=driver
    )
    backend.start()
    try:
        until(lambda: running(api, app, 2), "2 executors Running")
        protected = {SAFE_TO_EVICT: "false", DO_NOT_DISRUPT: "true", DELETION_COST: "1000000"}
        until(lambda: hints_of(api, app) == {"1": protected, "2": {}}, "executor 1 annotated, 2 not")
        driver.holding = frozenset({"2"})  # 1 dropped its blocks, 2 cached some
        until(lambda: hints_of(api, app) == {"1": {}, "2": protected}, "the hints moved from 1 to 2")
        status = backend.status()["autoscaler_hints"]
        assert status["patches"] == 3 and status["failed_patches"] == 0, status
        assert status["protected_executors"] == [2]
    finally:
        backend.stop()
        until(lambda: all_pods(api, app) == [], "no pod of the application after stop()")
