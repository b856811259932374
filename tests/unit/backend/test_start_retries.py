"""start() rides out a bounded burst of transient API errors, and still fails clearly on lasting ones.

The fake answers at once and never retries; :class:`RetryingApi` puts the adapter's retry layer (the
real :class:`RetryPolicy`, with its default budget) in front of it, sleeping on the fake's manual clock,
so an outage over that clock ends while the policy waits, and no test waits in real time.
"""

from __future__ import annotations

from typing import Any

import pytest
from backend_harness import BASE_CONF, RecordingDriver, create_backend

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.allocation.driver_pod import fetch_driver_pod
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import CONFIG_MAPS, PODS, ForbiddenError, KubernetesApi, Resource, ServerError
from k8s_backend.kube.retry import RetryPolicy
from k8s_backend.testing import FakeKubernetes

VERBS = ("create", "get", "list", "watch", "patch", "delete", "delete_collection")


class RetryingApi:
    """Any KubernetesApi's calls through a RetryPolicy, as the official adapter makes them."""

    def __init__(self, api: KubernetesApi, policy: RetryPolicy) -> None:
        self._api = api
        self._policy = policy

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._api, name)
        if name not in VERBS:
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            resource, namespace = args[0], args[1] if len(args) > 1 else None
            path = resource.path(namespace) if isinstance(resource, Resource) else str(resource)
            return self._policy.call(lambda: target(*args, **kwargs), verb=name, path=path)

        return call


class World:
    def __init__(self, conf: dict[str, str] | None = None) -> None:
        self.clock = ManualClock(1_700_000_000.0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.fake = FakeKubernetes(clock=self.clock, watch_blocking=False)
        self.slept: list[float] = []
        # The default budget; only the sleep (on the fake's clock) and the jitter (0) are the test's.
        self.policy = RetryPolicy(sleep=self._sleep, jitter=0.0)
        self.api: KubernetesApi = RetryingApi(self.fake, self.policy)  # type: ignore[assignment]
        self.conf = {**BASE_CONF, **(conf or {})}

    def _sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.clock.advance(seconds)

    def backend(self) -> KubernetesClusterSchedulerBackend:
        return create_backend(
            self.conf, api=self.api, driver=RecordingDriver(), clock=self.clock, scheduler=self.scheduler
        )

    def start(self) -> KubernetesClusterSchedulerBackend:
        backend = self.backend()
        backend.start()
        self.scheduler.run_until_idle()
        return backend


def executor_pods(fake: FakeKubernetes) -> int:
    return sum(
        1 for p in fake.objects(PODS, "default") if p["metadata"]["labels"].get("spark-role") == "executor"
    )


def test_start_rides_out_a_1_7_second_burst_of_list_500s() -> None:
    # Measured before: the adapter gave up after ~1.5 s of retries (5 attempts) and start() raised.
    world = World()
    world.fake.fail_for(1.7, "list", PODS, status=500)
    backend = world.start()
    assert backend.state.value == "running"
    assert executor_pods(world.fake) == 3
    assert sum(world.slept) >= 1.7


@pytest.mark.parametrize("count", [5, 9])
def test_start_rides_out_consecutive_list_500s(count: int) -> None:
    world = World()
    world.fake.fail_next("list", PODS, status=500, count=count)
    world.start()
    assert executor_pods(world.fake) == 3


def test_start_rides_out_500s_creating_the_config_map() -> None:
    world = World()
    world.fake.fail_next("create", CONFIG_MAPS, status=503, count=6)
    world.start()
    assert len(world.fake.objects(CONFIG_MAPS, "default")) == 1


def test_the_driver_pod_fetch_rides_out_500s() -> None:
    world = World()
    driver = {"metadata": {"name": "driver"}, "spec": {"containers": [{"name": "d", "image": "spark"}]}}
    world.fake.create(PODS, "default", driver)
    world.fake.fail_next("get", PODS, status=500, count=6)
    pod = fetch_driver_pod(world.api, "default", "driver")
    assert pod is not None and pod["metadata"]["name"] == "driver"


def test_a_lasting_outage_fails_start_with_a_clear_message_in_bounded_time() -> None:
    world = World()
    world.fake.fail_for(3600.0, "list", PODS, status=500)
    backend = world.backend()
    started_at = world.clock.now()
    with pytest.raises(ServerError) as raised:
        backend.start()
    assert world.clock.now() - started_at <= world.policy.max_total_seconds
    assert len(world.slept) == world.policy.max_attempts - 1
    message = str(raised.value)
    assert "Cannot list the executor pods" in message and "spark-app-id" in message
    assert "injected outage" in message
    assert executor_pods(world.fake) == 0


def test_a_non_retryable_error_fails_start_at_once() -> None:
    world = World()
    world.fake.fail_next("list", PODS, status=403, message="pods is forbidden")
    backend = world.backend()
    with pytest.raises(ForbiddenError, match="pods is forbidden"):
        backend.start()
    assert world.slept == []

