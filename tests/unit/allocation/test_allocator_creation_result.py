"""The creator says what happened to each create (a Creation), and the allocator passes its reason on."""

from __future__ import annotations

from alloc_harness import APP, NS, Harness

from k8s_backend.allocation.creator import ExecutorPodCreator
from k8s_backend.allocation.settings import AllocatorIdentity, AllocatorSettings
from k8s_backend.kube.port import PODS


def creator(h: Harness) -> ExecutorPodCreator:
    settings = AllocatorSettings.from_conf(h.conf)
    return ExecutorPodCreator(
        h.fake,
        h.builder,
        h.clock,
        namespace=NS,
        pvc_policy=settings.pvc_policy,
        identity=AllocatorIdentity(app_id=APP, driver_url="spark://d:1", pod_name_prefix="p"),
    )


def test_a_created_pod_is_a_successful_creation() -> None:
    h = Harness(start=False)
    result = creator(h).create(1, h.conf.executor.default_profile, [])
    assert result.created and result.error == ""
    assert len(h.fake.objects(PODS, NS)) == 2  # the driver pod and the executor's


def test_a_refused_pod_carries_the_api_error() -> None:
    h = Harness(start=False)
    h.fake.fail_next("create", PODS, status=403, message="quota exceeded")
    result = creator(h).create(1, h.conf.executor.default_profile, [])
    assert not result.created
    assert "quota exceeded" in result.error


def test_a_failed_create_does_not_stick_to_the_next_one() -> None:
    h = Harness(start=False)
    pods = creator(h)
    h.fake.fail_next("create", PODS, status=403, message="quota exceeded")
    assert not pods.create(1, h.conf.executor.default_profile, []).created
    assert pods.create(2, h.conf.executor.default_profile, []).created
