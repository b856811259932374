"""The client-side token bucket: bursts up to ``burst``, then ``qps`` a second; callers wait for their
token in order; one bucket per process and settings; the official adapter takes a token per request."""

from __future__ import annotations

import pytest

from k8s_backend.common import ManualClock
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import PODS
from k8s_backend.kube.rate_limit import TokenBucket, shared_bucket
from k8s_backend.kube.settings import ApiClientConf
from k8s_backend.local.apiserver.server import ApiServer
from k8s_backend.testing import FakeKubernetes


def bucket(qps: float, burst: int) -> tuple[TokenBucket, ManualClock, list[float]]:
    clock = ManualClock(0.0)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    return TokenBucket(qps, burst, clock=clock.now, sleep=sleep), clock, slept


def test_a_burst_goes_at_once_then_the_rate_applies() -> None:
    limiter, clock, slept = bucket(qps=10, burst=5)
    for _ in range(5):
        limiter.acquire()
    assert slept == []
    for _ in range(3):
        limiter.acquire()
    assert slept == pytest.approx([0.1, 0.1, 0.1])
    assert clock.now() == pytest.approx(0.3)


def test_callers_queue_behind_each_other_and_an_idle_bucket_refills_to_its_burst() -> None:
    limiter, clock, _ = bucket(qps=2, burst=1)
    assert limiter.reserve() == 0
    assert [limiter.reserve() for _ in range(3)] == pytest.approx([0.5, 1.0, 1.5])  # in order
    clock.advance(100)
    assert limiter.reserve() == 0  # refilled, but only to the burst
    assert limiter.reserve() == pytest.approx(0.5)


def test_bad_settings_are_refused_and_qps_zero_means_no_bucket() -> None:
    with pytest.raises(ValueError, match="qps"):
        TokenBucket(0, 1)
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(1, 0)
    assert shared_bucket(0, 10) is None


def test_one_bucket_per_process_and_settings() -> None:
    assert shared_bucket(123.0, 7) is shared_bucket(123.0, 7)
    assert shared_bucket(123.0, 7) is not shared_bucket(123.0, 8)


def test_the_adapter_takes_a_token_for_every_request() -> None:
    limiter, _, slept = bucket(qps=100, burst=2)
    with ApiServer(FakeKubernetes()) as server:
        base = OfficialKubernetesApi.from_conf(
            ApiClientConf(master=server.url, qps=0), namespace_default="default", environ={"HOME": "/none"}
        )
        api = OfficialKubernetesApi(base._api_client, namespace_default="default", limiter=limiter)
        for _ in range(4):
            api.list(PODS, "default")
        base.close()
    assert slept == pytest.approx([0.01, 0.01])  # 2 at once, then 100 a second


def test_from_conf_shares_the_process_bucket() -> None:
    with ApiServer(FakeKubernetes()) as server:
        conf = ApiClientConf(master=server.url, qps=321.0, burst=9)
        api = OfficialKubernetesApi.from_conf(conf, namespace_default="default", environ={"HOME": "/none"})
        try:
            assert api._limiter is shared_bucket(321.0, 9)
        finally:
            api.close()
