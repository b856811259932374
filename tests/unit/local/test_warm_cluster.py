"""WarmLocalCluster: one cluster lent to successive contexts, stopped when idle; with a manual timer and
a recording stand-in for the cluster (no server, no processes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from k8s_backend.errors import ConfigError
from k8s_backend.local import warm
from k8s_backend.local.cluster import LocalCluster
from k8s_backend.testing import FakeKubernetes


class StandIn:
    made = 0

    def __init__(self) -> None:
        StandIn.made += 1
        self.name = f"cluster-{StandIn.made}"
        self.events: list[str] = []

    def start(self) -> StandIn:
        self.events.append("start")
        return self

    def stop(self) -> None:
        self.events.append("stop")


class ManualTimer:
    def __init__(self) -> None:
        self.pending: list[tuple[float, Callable[[], None], list[bool]]] = []

    def __call__(self, delay: float, action: Callable[[], None]) -> Callable[[], None]:
        cancelled = [False]
        self.pending.append((delay, action, cancelled))
        return lambda: cancelled.__setitem__(0, True)

    def fire(self) -> None:
        due, self.pending = self.pending, []
        for _, action, cancelled in due:
            if not cancelled[0]:
                action()


def test_later_leases_reuse_the_cluster_and_it_stops_after_the_idle_time() -> None:
    timer = ManualTimer()
    pool = warm.WarmLocalCluster(StandIn, idle_timeout=120, timer=timer)
    with pool.lease() as first:
        pass
    assert [delay for delay, _, _ in timer.pending] == [120]
    with pool.lease() as second:
        assert second is first
    assert pool.started == 1
    assert first.events == ["start"]  # the first idle stop was cancelled by the second lease
    timer.fire()
    assert first.events == ["start", "stop"]
    assert pool.cluster is None
    with pool.lease() as third:
        assert third is not first and third.events == ["start"]
    assert pool.started == 2


def test_no_idle_stop_while_a_lease_is_out() -> None:
    timer = ManualTimer()
    pool = warm.WarmLocalCluster(StandIn, idle_timeout=5, timer=timer)
    with pool.lease() as outer:
        with pool.lease():
            pass
        assert timer.pending == []
    assert outer.events == ["start"] and len(timer.pending) == 1


def test_an_idle_timeout_of_zero_stops_it_with_each_lease() -> None:
    pool = warm.WarmLocalCluster(StandIn, idle_timeout=0, timer=ManualTimer())
    with pool.lease() as cluster:
        pass
    assert cluster.events == ["start", "stop"] and pool.cluster is None


def test_stop_stops_the_kept_cluster_and_a_stale_timer_does_nothing() -> None:
    timer = ManualTimer()
    pool = warm.WarmLocalCluster(StandIn, idle_timeout=10, timer=timer)
    with pool.lease() as cluster:
        pass
    pool.stop()
    assert cluster.events == ["start", "stop"]
    timer.fire()
    assert cluster.events == ["start", "stop"]


@pytest.mark.parametrize(("value", "seconds"), [("", 300.0), ("0", 0.0), ("2.5", 2.5), (" 60 ", 60.0)])
def test_the_idle_timeout_from_the_environment(value: str, seconds: float) -> None:
    assert warm.idle_timeout_from_env({warm.IDLE_TIMEOUT_ENV: value}) == seconds


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "5m"])
def test_a_bad_idle_timeout_is_named(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        warm.idle_timeout_from_env({warm.IDLE_TIMEOUT_ENV: value})
    assert warm.IDLE_TIMEOUT_ENV in str(info.value) and "e.g. 300" in str(info.value)


def test_a_bad_idle_timeout_fails_the_lease_before_a_cluster_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(warm.IDLE_TIMEOUT_ENV, "soon")
    pool = warm.WarmLocalCluster(StandIn, timer=ManualTimer())
    with pytest.raises(ConfigError), pool.lease():
        pass
    assert pool.started == 0 and pool.cluster is None


def test_forget_pods_of_waits_for_the_apps_pods_only() -> None:
    with LocalCluster(run_processes=False) as cluster:
        fake: FakeKubernetes = cluster.fake
        for name, app in (("a-exec-1", "spark-a"), ("b-exec-1", "spark-b")):
            pod: dict[str, Any] = {
                "metadata": {"name": name, "labels": {warm.APP_LABEL: app}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            }
            fake.create(warm.PODS, "default", pod)
        fake.delete(warm.PODS, "default", "a-exec-1", grace_period_seconds=0)
        pool = warm.WarmLocalCluster(lambda: cluster)
        assert pool.forget_pods_of(cluster, "spark-a", "default")
        assert [p["metadata"]["name"] for p in fake.list(warm.PODS, "default").items] == ["b-exec-1"]
