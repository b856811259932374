"""The fake's create-rate limit (an API server's priority and fairness under load): at most R creates in
any second of its clock, then 429 with Retry-After; and the backend converges under it, exactly."""

from __future__ import annotations

import threading

import pytest
from fake_support import TEST_NAMESPACES

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.backend.state import BackendState
from k8s_backend.common import ManualClock
from k8s_backend.kube.port import PODS, TooManyRequestsError
from k8s_backend.testing import FakeKubernetes


def pod(name: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_at_most_r_creates_a_second_then_429_with_the_wait_until_a_slot_frees() -> None:
    clock = ManualClock(100.0)
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, clock=clock)
    fake.limit_rate(3, "create", PODS)
    for i in range(3):
        fake.create(PODS, "default", pod(f"p{i}"))
    clock.advance(0.4)
    with pytest.raises(TooManyRequestsError) as refused:
        fake.create(PODS, "default", pod("p3"))
    assert refused.value.retry_after == 1  # the first slot frees at 101.0: 0.6 s, rounded up
    assert fake.rate_limited == 1
    fake.get(PODS, "default", "p0")  # other verbs are not limited
    clock.advance(0.6)
    fake.create(PODS, "default", pod("p3"))  # a second after the first create
    fake.limit_rate(0, "create", PODS)
    for i in range(4, 10):
        fake.create(PODS, "default", pod(f"p{i}"))
    assert len(fake.objects(PODS)) == 10


def test_a_bad_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="rate limit"):
        FakeKubernetes(namespaces=TEST_NAMESPACES).limit_rate(-1)


def test_the_backend_converges_to_exactly_the_target_under_the_limit() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    fake.limit_rate(10, "create", PODS)
    backend = KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "40",
            "spark.kubernetes.allocation.batch.size": "40",
            "spark.kubernetes.allocation.batch.delay": "200ms",
        },
        app_id="app-rate",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=fake,
    )
    backend.start()
    try:
        pause = threading.Event()
        for _ in range(12000):  # generous: each refusal asks to wait about a second
            if len(fake.objects(PODS, "default")) >= 40:
                break
            pause.wait(0.01)
        assert len(fake.objects(PODS, "default")) == 40
        assert fake.rate_limited > 0, "the limit never bit: the test proves nothing"
        assert backend.state is BackendState.RUNNING  # 429s are no executor failures
    finally:
        backend.stop()
    # No executor was asked for twice under another name (a retried create keeps its name).
    assert len({c.name for c in fake.calls_of("create", PODS)}) == 40
