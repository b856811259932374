"""spark.kubernetes.metrics.port: a backend on FakeKubernetes serves /metrics, scraped over HTTP, and the
values match the pods; the server is gone after stop()."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from metrics_helpers import (
    free_port,
    port_is_closed,
    scrape,
    value,
    wait_for,
    wait_for_metric,
)

from k8s_backend import ConfigError, KubernetesClusterSchedulerBackend
from k8s_backend.kube.port import PODS
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.local.control_plane.processes import free_ports
from k8s_backend.testing import FakeKubernetes

CONTAINER = "spark-kubernetes-executor"


class Driver:
    """A driver that knows the executors the test registers."""

    def __init__(self) -> None:
        self.registered: dict[str, float] = {}
        self.removed: list[str] = []

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        self.removed.append(executor_id)

    def registered_executors(self) -> dict[str, float]:
        return dict(self.registered)

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        pass

    def application_failed(self, reason: str) -> None:
        pass


def make_backend(api: FakeKubernetes, port: int, *, driver: Driver | None = None, **extra: str) -> Any:
    return KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "2",
            "spark.kubernetes.allocation.batch.delay": "200ms",
            "spark.kubernetes.metrics.port": str(port),
            **extra,
        },
        app_id="app-1",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=api,
        driver=driver,
    )


def executor_pods(api: FakeKubernetes) -> list[dict[str, Any]]:
    return [
        p
        for p in api.objects(PODS, "default")
        if (p["metadata"].get("labels") or {}).get("spark-role") == "executor"
    ]


def set_phase(api: FakeKubernetes, pod: dict[str, Any], phase: str, exit_code: int | None = None) -> None:
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        running = {"startedAt": "2026-01-01T00:00:00Z"}
        status["containerStatuses"] = [{"name": CONTAINER, "state": {"running": running}}]
    if exit_code is not None:
        terminated = {"exitCode": exit_code, "reason": "Error"}
        status["containerStatuses"] = [{"name": CONTAINER, "state": {"terminated": terminated}}]
    api.patch_status(PODS, "default", pod["metadata"]["name"], status)


@pytest.fixture
def started() -> Any:
    """A started backend with metrics on, stopped after the test."""
    made: list[Any] = []

    def start(api: FakeKubernetes, port: int, **kwargs: Any) -> Any:
        backend = make_backend(api, port, **kwargs)
        made.append(backend)
        backend.start()
        return backend

    yield start
    for backend in made:
        backend.stop()


def test_two_running_executors_are_counted_as_running(started: Any) -> None:
    api, port = FakeKubernetes(), free_port()
    driver = Driver()
    started(api, port, driver=driver)
    wait_for(lambda: len(executor_pods(api)) == 2, "two executor pods")
    samples = wait_for_metric(port, "k8s_backend_executors", 2, state="pending")
    assert value(samples, "k8s_backend_executors", state="running") == 0
    for pod in executor_pods(api):
        set_phase(api, pod, "Running")
    samples = wait_for_metric(port, "k8s_backend_executors", 2, state="running")
    assert value(samples, "k8s_backend_executors", state="pending") == 0
    assert value(samples, "k8s_backend_executors", state="registered") == 0
    assert value(samples, "k8s_backend_executor_target", profile="0") == 2
    assert value(samples, "k8s_backend_pod_creations_total", result="created") == 2
    assert value(samples, "k8s_backend_api_requests_total", verb="create", resource="pods", code="201") == 2
    latency = "k8s_backend_api_request_duration_seconds_count"
    assert value(samples, latency, verb="create", resource="pods") == 2
    assert value(samples, "k8s_backend_info", app_id="app-1") == 1
    assert value(samples, "k8s_backend_allocation_round_duration_seconds_count") >= 1
    assert value(samples, "k8s_backend_watch_relists_total") >= 1  # the first list
    driver.registered = {"1": 1.0, "2": 2.0}
    wait_for_metric(port, "k8s_backend_executors", 2, state="registered")


def test_an_injected_500_on_pod_create_is_counted_and_the_create_asked_again(started: Any) -> None:
    api, port = FakeKubernetes(), free_port()
    api.fail_next("create", PODS, status=500)
    started(api, port)
    wait_for(lambda: len(executor_pods(api)) == 2, "two executor pods, the refused one asked again")
    samples = wait_for_metric(port, "k8s_backend_pod_creations_total", 2, result="created")
    assert value(samples, "k8s_backend_api_requests_total", verb="create", resource="pods", code="500") == 1
    assert value(samples, "k8s_backend_api_requests_total", verb="create", resource="pods", code="201") == 2
    assert value(samples, "k8s_backend_pod_creations_total", result="retryable") == 1
    assert value(samples, "k8s_backend_executor_failures_total", reason="creation_failed") == 0  # an outage


def test_a_refused_pod_create_counts_as_an_executor_failure(started: Any) -> None:
    api, port = FakeKubernetes(), free_port()
    api.fail_next("create", PODS, status=403, message="exceeded quota")
    started(api, port)
    samples = wait_for_metric(port, "k8s_backend_pod_creations_total", 1, result="refused")
    assert value(samples, "k8s_backend_api_requests_total", verb="create", resource="pods", code="403") == 1
    assert value(samples, "k8s_backend_executor_failures_total", reason="creation_failed") == 1


def test_executor_failures_by_reason_leave_out_killed_executors(started: Any) -> None:
    api, port = FakeKubernetes(), free_port()
    backend = started(api, port)
    wait_for(lambda: len(executor_pods(api)) == 2, "two executor pods")
    first, second = sorted(executor_pods(api), key=lambda p: int(p["metadata"]["labels"]["spark-exec-id"]))
    for pod in (first, second):
        set_phase(api, pod, "Running")
    wait_for_metric(port, "k8s_backend_executors", 2, state="running")
    backend.kill_executors([second["metadata"]["labels"]["spark-exec-id"]])
    set_phase(api, second, "Failed", exit_code=143)  # the killed one ends: no failure
    set_phase(api, first, "Failed", exit_code=1)  # this one fails by itself
    samples = wait_for_metric(port, "k8s_backend_executor_failures_total", 1, reason="exit_code")
    wait_for(lambda: len(backend.lifecycle.recent_losses) == 2, "both losses")
    samples = scrape(port)
    failures = {k: v for k, v in samples.items() if k[0] == "k8s_backend_executor_failures_total"}
    assert sum(failures.values()) == 1, failures


def test_watch_restarts_and_relists_follow_the_watch_source(started: Any) -> None:
    api, port = FakeKubernetes(), free_port()
    backend = started(api, port)
    wait_for(lambda: backend.watch_source.health()["relists"] == 1, "the first list")
    restarts = backend.watch_source.health()["restarts"]
    api.fail_next("watch", PODS, status=410)  # the watch's version is gone: it re-lists
    api.drop_watches()
    wait_for(lambda: backend.watch_source.health()["relists"] == 2, "a re-list")
    samples = scrape(port)
    assert value(samples, "k8s_backend_watch_relists_total") == 2
    assert value(samples, "k8s_backend_watch_restarts_total") >= restarts + 2  # the drop, then the 410
    assert value(samples, "k8s_backend_api_requests_total", verb="watch", resource="pods", code="410") == 1


def test_after_stop_the_port_is_closed_and_no_metrics_thread_is_left() -> None:
    api, port = FakeKubernetes(), free_port()
    backend = make_backend(api, port)
    backend.start()
    assert scrape(port)
    backend.stop()
    assert port_is_closed(port)
    assert not [t for t in threading.enumerate() if t.name == "k8s-backend-metrics"]
    backend.stop()  # idempotent


def test_a_port_in_use_is_a_config_error_naming_the_key_and_creates_nothing() -> None:
    api, port = FakeKubernetes(), free_port()
    first = make_backend(api, port)
    first.start()
    other_api = FakeKubernetes()
    second = make_backend(other_api, port)
    try:
        in_use = rf"spark.kubernetes.metrics.port={port}: .* already in use"
        with pytest.raises(ConfigError, match=in_use) as caught:
            second.start()
        assert caught.value.key == "spark.kubernetes.metrics.port"
        assert executor_pods(other_api) == []
    finally:
        second.stop()
        first.stop()
    assert port_is_closed(port)


def test_two_backends_in_one_process_have_their_own_registry_and_port(started: Any) -> None:
    api_a, api_b = FakeKubernetes(), FakeKubernetes()
    port_a, port_b = free_ports(2)  # two calls in a row may answer the same port
    started(api_a, port_a)
    started(api_b, port_b, **{"spark.executor.instances": "1"})
    wait_for_metric(port_a, "k8s_backend_executor_target", 2, profile="0")
    samples_b = wait_for_metric(port_b, "k8s_backend_executor_target", 1, profile="0")
    wait_for(lambda: len(executor_pods(api_b)) == 1, "one executor pod")
    samples_b = wait_for_metric(port_b, "k8s_backend_pod_creations_total", 1, result="created")
    samples_a = wait_for_metric(port_a, "k8s_backend_pod_creations_total", 2, result="created")
    assert value(samples_a, "k8s_backend_executor_target", profile="0") == 2
    assert value(samples_b, "k8s_backend_executor_target", profile="0") == 1


def test_metrics_are_off_by_default_and_nothing_is_wrapped() -> None:
    api = FakeKubernetes()
    backend = KubernetesClusterSchedulerBackend.create(
        {"spark.kubernetes.container.image": "spark:4.3.0"},
        app_id="app-1",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=api,
    )
    assert backend.monitoring is None
    assert backend.parts.operations._api is api
