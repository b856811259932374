"""FakeKubernetes fault injection, latency and call recording."""

from __future__ import annotations

from typing import Any

import pytest
from fake_support import TEST_NAMESPACES

from k8s_backend.common import ManualClock
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    PODS,
    ApiError,
    ConflictError,
    NotFoundError,
    Obj,
    ServerError,
    TooManyRequestsError,
    is_retryable,
)
from k8s_backend.memkube.api import Call
from k8s_backend.testing import FakeKubernetes

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(100.0)


@pytest.fixture
def fake(clock: ManualClock) -> FakeKubernetes:
    return FakeKubernetes(namespaces=TEST_NAMESPACES, clock=clock, watch_blocking=False)


def test_fail_next_defaults_to_one_server_error_without_side_effects(fake: FakeKubernetes) -> None:
    fake.fail_next("create")
    with pytest.raises(ServerError) as caught:
        fake.create(PODS, "ns", POD)
    assert caught.value.status == 500
    assert is_retryable(caught.value)
    assert fake.objects(PODS) == []
    fake.create(PODS, "ns", POD)  # only the next call failed


def test_an_outage_answers_every_matching_call_until_it_ends(
    fake: FakeKubernetes, clock: ManualClock
) -> None:
    fake.fail_for(10, "create", PODS, status=503, retry_after=1)
    for _ in range(3):
        with pytest.raises(ServerError) as caught:
            fake.create(PODS, "ns", POD)
        assert (caught.value.status, caught.value.retry_after) == (503, 1)
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}})  # other kinds are served
    clock.advance(9.9)
    with pytest.raises(ServerError):
        fake.create(PODS, "ns", POD)
    clock.advance(0.1)
    fake.create(PODS, "ns", POD)  # the outage is over
    with pytest.raises(ValueError, match="positive number of seconds"):
        fake.fail_for(0, "create")


def test_faults_carry_status_message_and_retry_after(fake: FakeKubernetes) -> None:
    fake.fail_next("list", PODS, status=429, retry_after=3, message="slow down")
    with pytest.raises(TooManyRequestsError) as caught:
        fake.list(PODS, "ns")
    error = caught.value
    assert (error.status, error.reason, error.message, error.retry_after) == (
        429,
        "TooManyRequests",
        "slow down",
        3,
    )
    assert error.body is not None
    assert error.body["code"] == 429
    assert error.body["details"]["retryAfterSeconds"] == 3


def test_faults_match_verb_and_kind_and_count_down(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", POD)
    fake.fail_next("get", CONFIG_MAPS, status=409, count=2)
    fake.get(PODS, "ns", "p")  # another kind
    for _ in range(2):
        with pytest.raises(ConflictError):
            fake.get(CONFIG_MAPS, "ns", "c")
    with pytest.raises(NotFoundError):  # the real answer again
        fake.get(CONFIG_MAPS, "ns", "c")


def test_star_matches_every_verb_and_faults_apply_in_order(fake: FakeKubernetes) -> None:
    fake.fail_next("*", status=503)
    fake.fail_next("delete", status=404)
    with pytest.raises(ServerError):
        fake.list(CONFIG_MAPS, None)
    fake.create(PODS, "ns", POD)
    with pytest.raises(NotFoundError):
        fake.delete(PODS, "ns", "p")
    assert len(fake.objects(PODS)) == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.patch(PODS, "ns", "p", {}),
        lambda f: f.delete_collection(PODS, "ns"),
        lambda f: f.update(PODS, "ns", POD),
    ],
)
def test_every_protocol_verb_can_fail(fake: FakeKubernetes, call: object) -> None:
    fake.fail_next("*", status=500)
    with pytest.raises(ServerError):
        call(fake)  # type: ignore[operator]


def test_clear_faults_disarms_everything(fake: FakeKubernetes, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("k8s_backend.memkube.api.time.sleep", slept.append)
    fake.fail_next("*", count=5)
    fake.add_latency(2.0)
    fake.clear_faults()
    fake.list(PODS, None)
    assert slept == []


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"verb": "explode"}, "unknown verb 'explode'"),
        ({"verb": "get", "count": 0}, "count must be at least 1"),
        ({"verb": "get", "status": 200}, "status must be an HTTP error status"),
    ],
)
def test_bad_fault_arguments(fake: FakeKubernetes, kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        fake.fail_next(**kwargs)


def test_latency_sleeps_for_matching_verbs(fake: FakeKubernetes, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("k8s_backend.memkube.api.time.sleep", slept.append)
    fake.add_latency(0.5, verb="list")
    fake.list(PODS, None)
    fake.create(PODS, "ns", POD)
    assert slept == [0.5]
    fake.add_latency(0.25)  # every other verb
    fake.get(PODS, "ns", "p")
    fake.list(PODS, None)
    assert slept == [0.5, 0.25, 0.5]
    fake.add_latency(0, verb="list")
    fake.add_latency(0)
    fake.list(PODS, None)
    assert slept == [0.5, 0.25, 0.5]
    with pytest.raises(ValueError, match="latency"):
        fake.add_latency(-1)


def test_calls_are_recorded_with_their_arguments(fake: FakeKubernetes, clock: ManualClock) -> None:
    body: Obj = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    fake.create(PODS, "ns", body)
    body["metadata"]["name"] = "changed"  # the recorded body is a copy
    clock.advance(5)
    fake.list(PODS, "ns", label_selector="a=b", field_selector="metadata.name=p")
    fake.patch(PODS, "ns", "p", {"metadata": {"labels": {"x": "1"}}})
    fake.delete(PODS, "ns", "p", grace_period_seconds=0)
    assert fake.calls == [
        Call("create", "pods", "ns", "p", body={**body, "metadata": {"name": "p"}}, time=100.0),
        Call("list", "pods", "ns", None, "a=b", "metadata.name=p", time=105.0),
        Call("patch", "pods", "ns", "p", body={"metadata": {"labels": {"x": "1"}}}, time=105.0),
        Call("delete", "pods", "ns", "p", time=105.0),
    ]


def test_failed_calls_are_recorded_too(fake: FakeKubernetes) -> None:
    with pytest.raises(NotFoundError):
        fake.get(PODS, "ns", "nope")
    fake.fail_next("list")
    with pytest.raises(ApiError):
        fake.list(PODS, "ns")
    assert [c.verb for c in fake.calls] == ["get", "list"]


def test_calls_of_filters_by_verb_and_kind(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", POD)
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}})
    fake.delete_collection(PODS, "ns", label_selector="x=y")
    assert [c.resource_plural for c in fake.calls_of("create")] == ["pods", "configmaps"]
    assert [c.name for c in fake.calls_of("create", CONFIG_MAPS)] == ["c"]
    assert [c.label_selector for c in fake.calls_of("delete_collection", PODS)] == ["x=y"]
    assert len(fake.calls_of("*")) == 3
    with pytest.raises(ValueError, match="unknown verb"):
        fake.calls_of("put")
    fake.reset_calls()
    assert fake.calls == []


def test_control_plane_writes_are_not_recorded(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", POD)
    fake.reset_calls()
    fake.fail_next("*", count=10)  # and never faulted
    fake.patch_status(PODS, "ns", "p", {"phase": "Running"})
    fake.bind("ns", "p", "node")
    fake.objects(PODS)
    fake.send_bookmark()
    fake.compact()
    fake.tick()
    assert fake.calls == []


def test_a_bounded_call_log_keeps_the_latest_calls() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, call_log_size=2)
    for name in ("a", "b", "c"):
        fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": name}})
    assert [call.name for call in fake.calls] == ["b", "c"]
