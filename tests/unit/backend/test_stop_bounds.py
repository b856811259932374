"""stop() is bounded in time, waits for a start() in flight, and a second stop() waits for the first."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.backend.state import BackendState
from k8s_backend.kube.port import CONFIG_MAPS, PODS, Resource
from k8s_backend.testing import FakeKubernetes

WAIT = 60.0  # generous: these waits end on events, never on the clock


class Gate(FakeKubernetes):
    """A fake whose chosen calls block until released: a hung or very slow API server."""

    def __init__(self, verb: str, resource: Resource) -> None:
        super().__init__()
        self.verb, self.resource = verb, resource
        self.entered = threading.Event()
        self.release = threading.Event()

    def _hold(self, verb: str, resource: Resource) -> None:
        if (verb, resource) == (self.verb, self.resource):
            self.entered.set()
            assert self.release.wait(WAIT), "the test never released the API"

    def create(self, resource: Resource, namespace: Any, body: Any) -> Any:
        self._hold("create", resource)
        return super().create(resource, namespace, body)

    def delete_collection(self, resource: Resource, namespace: Any, **kwargs: Any) -> Any:
        self._hold("delete_collection", resource)
        return super().delete_collection(resource, namespace, **kwargs)


def backend(api: FakeKubernetes, **extra: str) -> Any:
    return KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "2",
            "spark.kubernetes.allocation.batch.delay": "200ms",
            **extra,
        },
        app_id="app-1",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=api,
    )


def in_thread(fn: Any) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def wait_for(predicate: Any) -> bool:
    done = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if predicate():
            return True
        done.wait(0.01)
    return bool(predicate())


def executor_pods(api: FakeKubernetes) -> list[Any]:
    return api.objects(PODS, "default")


@pytest.mark.parametrize("heartbeat", [True, False], ids=["pods-owned-by-the-lease", "no-heartbeat"])
def test_stop_returns_within_its_bound_while_the_api_hangs_and_the_cleanup_goes_on(
    heartbeat: bool, caplog: pytest.LogCaptureFixture
) -> None:
    api = Gate("delete_collection", PODS)
    conf = {"spark.kubernetes.stopTimeout": "1s", "spark.kubernetes.driver.heartbeat.enabled": str(heartbeat)}
    b = backend(api, **conf)
    b.start()
    assert wait_for(lambda: len(executor_pods(api)) == 2)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.common.stop_sequence"):
        stopper = in_thread(b.stop)
        stopper.join(WAIT)
        assert not stopper.is_alive(), "stop() waited for the hung API past its bound"
    assert api.entered.is_set(), "returned before the pods' delete"
    # The pods' delete hangs (at 10,000 pods it outlasts the request timeout): with a heartbeat Lease,
    # deleted just before it, the garbage collector takes them; without one, they wait for the delete.
    assert len(executor_pods(api)) == (0 if heartbeat else 2)
    assert b.state is BackendState.STOPPED
    assert any("goes on in the background" in r.getMessage() for r in caplog.records)
    api.release.set()
    assert wait_for(lambda: executor_pods(api) == []), "the cleanup did not go on after stop() returned"
    assert wait_for(lambda: api.objects(CONFIG_MAPS, "default") == [])


def test_a_second_stop_waits_for_the_first_ones_cleanup() -> None:
    api = Gate("delete_collection", PODS)
    b = backend(api)
    b.start()
    assert wait_for(lambda: len(executor_pods(api)) == 2)
    first = in_thread(b.stop)
    assert api.entered.wait(WAIT)
    second = in_thread(b.stop)
    second.join(0.3)
    assert second.is_alive(), "the second stop() returned while the pods still existed"
    api.release.set()
    second.join(WAIT)
    assert not second.is_alive()
    assert executor_pods(api) == [], "the second stop() returned before the cleanup ended"
    first.join(WAIT)


def test_a_stop_during_a_slow_start_leaves_no_config_map_and_no_pod() -> None:
    api = Gate("create", CONFIG_MAPS)
    b = backend(api)
    starter = in_thread(b.start)
    assert api.entered.wait(WAIT)  # start() is creating the executor ConfigMap, slowly
    stopper = in_thread(b.stop)
    stopper.join(0.3)
    assert stopper.is_alive(), "stop() did not wait for the start() in flight"
    api.release.set()
    starter.join(WAIT)
    stopper.join(WAIT)
    assert not starter.is_alive() and not stopper.is_alive()
    assert b.state is BackendState.STOPPED
    assert api.objects(CONFIG_MAPS, "default") == [], "the ConfigMap created during stop() was orphaned"
    assert executor_pods(api) == [], "no executor is requested once stop() began"
    assert api.calls_of("create", PODS) == []
