"""The metrics parts alone: the API decorator over FakeKubernetes, the failure reasons, the server."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from metrics_helpers import free_port, port_is_closed, scrape, value

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import CONFIG_MAPS, PODS, ConflictError, ForbiddenError, NotFoundError, ServerError
from k8s_backend.lifecycle import explain
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.metrics.api import InstrumentedKubernetesApi, creation_result
from k8s_backend.metrics.observe import ExecutorFailures, failure_reason
from k8s_backend.metrics.registry import BackendMetrics
from k8s_backend.metrics.server import MetricsServer
from k8s_backend.testing import FakeKubernetes


def counter(metrics: BackendMetrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def test_every_request_is_counted_with_its_code_and_timed() -> None:
    fake, metrics = FakeKubernetes(), BackendMetrics("app-1")
    api = InstrumentedKubernetesApi(fake, metrics)
    api.create(CONFIG_MAPS, "default", {"metadata": {"name": "c"}, "data": {}})
    with pytest.raises(NotFoundError):
        api.get(CONFIG_MAPS, "default", "missing")
    api.list(PODS, "default")
    fake.fail_next("create", PODS, status=500)
    with pytest.raises(ServerError):
        api.create(PODS, "default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    requests = "k8s_backend_api_requests_total"
    assert counter(metrics, requests, verb="create", resource="configmaps", code="201") == 1
    assert counter(metrics, requests, verb="get", resource="configmaps", code="404") == 1
    assert counter(metrics, requests, verb="list", resource="pods", code="200") == 1
    assert counter(metrics, requests, verb="create", resource="pods", code="500") == 1
    assert counter(metrics, "k8s_backend_pod_creations_total", result="retryable") == 1
    latency = "k8s_backend_api_request_duration_seconds_count"
    assert counter(metrics, latency, verb="get", resource="configmaps") == 1
    assert api.objects(CONFIG_MAPS, "default")  # adapter extras pass through


def test_a_watch_is_counted_once_with_the_code_that_ended_it() -> None:
    fake, metrics = FakeKubernetes(watch_blocking=False), BackendMetrics("app-1")
    api = InstrumentedKubernetesApi(fake, metrics)
    stream = api.watch(PODS, "default")
    assert list(stream) == []
    stream.close()
    fake.fail_next("watch", PODS, status=410)
    gone = api.watch(PODS, "default", resource_version="1")
    with pytest.raises(Exception, match="410"):
        list(gone)
    gone.close()
    requests = "k8s_backend_api_requests_total"
    assert counter(metrics, requests, verb="watch", resource="pods", code="200") == 1
    assert counter(metrics, requests, verb="watch", resource="pods", code="410") == 1


@pytest.mark.parametrize(
    ("error", "result"),
    [
        (None, "created"),
        (ConflictError("exists"), "conflict"),
        (ServerError("boom"), "retryable"),
        (ForbiddenError("quota"), "refused"),
    ],
)
def test_creation_results(error: Exception | None, result: str) -> None:
    assert creation_result(error) == result


@pytest.mark.parametrize(
    ("loss", "reason"),
    [
        (ExecutorLoss(0, True, "The executor with id 3 exited with code 0"), None),
        (ExecutorLoss(1, True, "The executor with id 3 exited with code 1"), "exit_code"),
        (ExecutorLoss(137, True, "OOMKilled: the executor exceeded its memory limit"), "oom_killed"),
        (ExecutorLoss(137, True, "The executor was killed with SIGKILL (exit 137)"), "sigkill"),
        (ExecutorLoss(52, True, "The executor JVM ran out of heap (exit 52)"), "jvm_oom"),
        (ExecutorLoss(-1, True, "Evicted by the kubelet: low on disk"), "evicted"),
        (ExecutorLoss(-1, False, explain.deleted_message(3)), "deleted"),
        (ExecutorLoss(-1, False, explain.missing_message(3, 0, 60_000, 30_000)), "missing"),
        (ExecutorLoss(-1, False, "killed", killed_by_driver=True), None),
    ],
)
def test_failure_reasons(loss: ExecutorLoss, reason: str | None) -> None:
    assert failure_reason(3, loss) == reason


def test_removals_the_driver_or_the_allocator_asked_for_are_no_failures() -> None:
    metrics = BackendMetrics("app-1")
    failures = ExecutorFailures(metrics, deleted_as_excess=lambda executor_id: executor_id == 5)
    failures.expect_removal(["4"])
    failed = ExecutorLoss(1, True, "exited with code 1")
    for executor_id in (4, 5, 6):
        failures.removed(executor_id, failed)
    failures.removed(4, failed)  # a second loss of a killed id is a failure again: the kill was used up
    assert counter(metrics, "k8s_backend_executor_failures_total", reason="exit_code") == 2


def test_the_server_serves_metrics_only_at_its_path_and_closes_its_port() -> None:
    port = free_port()
    server = MetricsServer(BackendMetrics("app-1").registry, host="127.0.0.1", port=port)
    server.start()
    server.start()  # once started, a no-op
    assert server.address == ("127.0.0.1", port)
    assert value(scrape(port), "k8s_backend_info", app_id="app-1") == 1
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=30)
    assert missing.value.code == 404
    server.stop()
    assert server.address is None and port_is_closed(port)
    server.start()  # never serves again after stop
    assert port_is_closed(port)


def test_an_address_that_cannot_be_bound_is_a_config_error_naming_the_host_key() -> None:
    server = MetricsServer(BackendMetrics("app-1").registry, host="192.0.2.1", port=free_port())  # TEST-NET-1
    refused = r"spark.kubernetes.metrics.host=192.0.2.1: .*cannot listen"
    with pytest.raises(ConfigError, match=refused) as caught:
        server.start()
    assert caught.value.key == "spark.kubernetes.metrics.host"
    server.stop()
