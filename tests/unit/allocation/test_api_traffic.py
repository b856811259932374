"""Lean API traffic: a plain N-executor run (client mode, defaults) sends at most N + 6 requests, as
Spark's backend does: recovery's list at start serves the watch too, and stop() skips the service and
claim deletes a client-mode driver never needs. Reading nodes for disruption notices adds one list per
spark.kubernetes.executor.disruption.nodeCheckInterval (none with an empty nodeTaints); quota-aware
allocation one list of ResourceQuotas per round that creates pods."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.kube.delegate import DelegatingKubernetesApi
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, NODES, PODS, PVCS, SERVICES, NotFoundError, Resource
from k8s_backend.lifecycle.autoscaler_hints import ExecutorActivity
from k8s_backend.testing import FakeKubernetes

_T = TypeVar("_T")
APP = "spark-traffic"
CONF = {
    "spark.app.name": "traffic",
    "spark.kubernetes.container.image": "spark:4.3.0",
    "spark.kubernetes.namespace": "default",
    "spark.kubernetes.executor.stopExitWait": "0",
    "spark.kubernetes.progress.interval": "0",
}


class Counting(DelegatingKubernetesApi):
    """The backend's requests, as (verb, kind)."""

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []

    def around(self, verb: str, resource: Resource, call: Callable[[], _T]) -> _T:
        with self.lock:
            self.requests.append((verb, resource.plural))
        return call()


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def run_plain(fake: FakeKubernetes, executors: int, **conf: str) -> Counting:
    """Start a backend for ``executors`` executors, let every pod run, stop it; its requests."""
    api = Counting(fake)
    backend = KubernetesClusterSchedulerBackend.create(
        {**CONF, "spark.executor.instances": str(executors), **conf},
        app_id=APP,
        driver_url="spark://CoarseGrainedScheduler@127.0.0.1:7078",
        api=api,
    )
    backend.start()
    try:
        wait_for(lambda: len(fake.objects(PODS, "default")) == executors)
        for pod in fake.objects(PODS, "default"):  # what a kubelet would do (not the backend's traffic)
            fake.patch_status(PODS, "default", pod["metadata"]["name"], {"phase": "Running"})
        wait_for(lambda: backend.parts.registered_executors() == executors)
    finally:
        backend.stop()
    return api


def quota_reads(requests: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The requests of quota-aware allocation, in order."""
    return [r for r in requests if r[1] in ("resourcequotas", "limitranges")]


@pytest.mark.parametrize("executors", [2, 4, 20])
def test_a_plain_run_sends_at_most_n_plus_6_requests(executors: int) -> None:
    fake = FakeKubernetes()
    api = run_plain(fake, executors)
    creates = [r for r in api.requests if r == ("create", "pods")]
    assert len(creates) == executors
    # Decommission on notice lists nodes once per nodeCheckInterval (5 s): one list in a short run.
    node_lists = api.requests.count(("list", NODES.plural))
    assert 1 <= node_lists <= 2, api.requests
    # Quota-aware allocation lists the ResourceQuotas at the first round that creates pods and then watches
    # them, whatever the rounds (the LimitRanges only once a quota exists, none here).
    quota_requests = quota_reads(api.requests)
    # (The watch's thread may not have opened it yet when stop() ends it, on a loaded machine.)
    assert quota_requests[0] == ("list", "resourcequotas"), api.requests
    assert quota_requests[1:] in ([], [("watch", "resourcequotas")]), api.requests
    assert len(api.requests) - node_lists - len(quota_requests) <= executors + 6, api.requests
    assert api.requests.count(("list", "pods")) == 1  # recovery's list, shared with the watch
    # And stop() still leaves nothing: the Lease's delete collected the ConfigMap it owns.
    assert fake.objects(PODS, "default") == []
    assert fake.objects(CONFIG_MAPS, "default") == []
    assert fake.objects(LEASES, "default") == []


def test_without_node_signals_and_quota_reads_the_run_stays_within_n_plus_6() -> None:
    api = run_plain(
        FakeKubernetes(),
        4,
        **{
            "spark.kubernetes.executor.disruption.nodeTaints": "",
            "spark.kubernetes.allocation.quotaAware": "false",
        },
    )
    assert ("list", NODES.plural) not in api.requests and ("list", "resourcequotas") not in api.requests
    assert len(api.requests) <= 4 + 6, api.requests


def test_client_mode_skips_the_service_and_claim_deletes_it_never_needs() -> None:
    api = run_plain(FakeKubernetes(), 2)
    assert ("delete_collection", SERVICES.plural) not in api.requests
    assert ("delete_collection", PVCS.plural) not in api.requests


def test_with_executors_kept_at_stop_the_config_map_is_kept_and_the_lease_deleted() -> None:
    fake = FakeKubernetes()
    api = run_plain(fake, 2, **{"spark.kubernetes.executor.deleteOnTermination": "false"})
    assert len(fake.objects(CONFIG_MAPS, "default")) == 1
    assert fake.objects(LEASES, "default") == []
    assert ("delete", LEASES.plural) in api.requests


def test_claims_made_by_executors_are_still_deleted_at_stop() -> None:
    on_demand = "spark.kubernetes.executor.volumes.persistentVolumeClaim.data"
    api = run_plain(
        FakeKubernetes(),
        2,
        **{
            f"{on_demand}.options.claimName": "OnDemand",
            f"{on_demand}.options.storageClass": "standard",
            f"{on_demand}.options.sizeLimit": "1Gi",
            f"{on_demand}.mount.path": "/data",
        },
    )
    assert ("create", PVCS.plural) in api.requests
    assert ("delete_collection", PVCS.plural) in api.requests


class StoppingDriver:
    """A driver whose executors register once their pods run; Spark's driver stops them before it stops
    the backend, and they then exit by themselves."""

    def __init__(self) -> None:
        self.registered: dict[str, float] = {}

    def remove_executor(self, executor_id: str, loss: Any) -> None:
        self.registered.pop(executor_id, None)

    def registered_executors(self) -> dict[str, float]:
        return dict(self.registered)

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        pass

    def application_failed(self, reason: str) -> None:
        pass


def test_with_a_driver_the_executors_exits_at_stop_are_seen_on_the_watch_without_a_list(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake, driver, executors = FakeKubernetes(), StoppingDriver(), 3
    api = Counting(fake)
    backend = KubernetesClusterSchedulerBackend.create(
        {**CONF, "spark.executor.instances": str(executors), "spark.kubernetes.executor.stopExitWait": "60s"},
        app_id=APP,
        driver_url="spark://CoarseGrainedScheduler@127.0.0.1:7078",
        api=api,
        driver=driver,
    )
    backend.start()
    stopped = threading.Event()
    try:
        wait_for(lambda: len(fake.objects(PODS, "default")) == executors)
        names = [pod["metadata"]["name"] for pod in fake.objects(PODS, "default")]
        for name in names:
            fake.patch_status(PODS, "default", name, {"phase": "Running"})
        driver.registered = {str(i): 0.0 for i in range(1, executors + 1)}
        wait_for(lambda: backend.parts.registered_executors() == executors)

        def exit_once_waited_for() -> None:
            # The executors exit only after stop() began waiting for them: the wait must see it happen.
            sequence = backend.parts.stop_sequence
            while "stop the allocator" not in sequence.completed and not stopped.is_set():
                time.sleep(0.01)
            for name in names:
                # On a loaded machine stop() may give up waiting and delete a pod before its exit is written.
                with contextlib.suppress(NotFoundError):
                    fake.patch_status(PODS, "default", name, {"phase": "Succeeded"})

        exits = threading.Thread(target=exit_once_waited_for)
        exits.start()
        with caplog.at_level("INFO", logger="k8s_backend"):
            backend.stop()
    finally:
        stopped.set()
    exits.join(10)
    assert "let the executors exit" in backend.parts.stop_sequence.completed
    assert not [r for r in caplog.records if "still running after" in r.getMessage()]
    assert api.requests.count(("list", "pods")) == 1, api.requests  # the start's list only
    node_lists = api.requests.count(("list", NODES.plural))  # one per nodeCheckInterval (5 s)
    quota_requests = quota_reads(api.requests)  # a list, then a watch (see the test above)
    assert len(api.requests) - node_lists - len(quota_requests) <= executors + 6, api.requests
    assert fake.objects(PODS, "default") == []


class HoldingDriver(StoppingDriver):
    """A driver whose executors, once registered, hold cached blocks the whole run."""

    def executor_activity(self) -> dict[str, ExecutorActivity]:
        return {i: ExecutorActivity(rdd_blocks=1) for i in self.registered}


@pytest.mark.parametrize("hints", [False, True])
def test_autoscaler_hints_add_one_patch_per_executor_whose_state_changes(hints: bool) -> None:
    fake, driver, executors = FakeKubernetes(), HoldingDriver(), 4
    api = Counting(fake)
    backend = KubernetesClusterSchedulerBackend.create(
        {
            **CONF,
            "spark.executor.instances": str(executors),
            "spark.kubernetes.executor.autoscalerHints.enabled": str(hints).lower(),
            "spark.kubernetes.executor.autoscalerHints.interval": "50ms",
        },
        app_id=APP,
        driver_url="spark://CoarseGrainedScheduler@127.0.0.1:7078",
        api=api,
        driver=driver,
    )
    backend.start()
    try:
        wait_for(lambda: len(fake.objects(PODS, "default")) == executors)
        for pod in fake.objects(PODS, "default"):
            fake.patch_status(PODS, "default", pod["metadata"]["name"], {"phase": "Running"})
        driver.registered = {str(i): 0.0 for i in range(1, executors + 1)}
        if hints:
            status = lambda: backend.status()["autoscaler_hints"]  # noqa: E731
            wait_for(lambda: status()["patches"] == executors)
            # Ten more reads of the driver's facts with nothing changed: no more requests.
            reads = status()["reads"]
            wait_for(lambda: status()["reads"] >= reads + 10)
        else:
            assert backend.status()["autoscaler_hints"] is None
    finally:
        backend.stop()
    assert api.requests.count(("patch", "pods")) == (executors if hints else 0), api.requests
