"""The allocator's own rules: targets and profiles, rounds, guarded API calls, claims, stop."""

from __future__ import annotations

import logging

import attrs
import pytest
from alloc_harness import IDLE_TIMEOUT, NS, RP, Harness, pod_name, selector, suite_conf

from k8s_backend.allocation.allocator import AllocatorIdentity, AllocatorSettings, ExecutorPodsAllocator
from k8s_backend.allocation.creator import CLAIM_EXECUTOR_ANNOTATION
from k8s_backend.conf.model import KubernetesConf, LifecycleConf, ResourceProfile, VolumeSpec
from k8s_backend.kube.port import PODS, PVCS
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec

# -- targets and profiles --------------------------------------------------------------------------


def test_a_target_for_an_unknown_profile_is_rejected_with_its_id() -> None:
    h = Harness()
    with pytest.raises(ValueError, match=r"resource profile 3 is unknown.*register_resource_profile"):
        h.allocator.set_total_expected_executors({0: 1, 3: 2})
    assert h.allocator.status()["targets"] == {}  # nothing half-applied


def test_a_negative_target_is_rejected_with_its_profile_and_value() -> None:
    h = Harness()
    with pytest.raises(ValueError, match=r"resource profile 0 must be an int >= 0, got -1"):
        h.allocator.set_total_expected_executors({0: -1})


def test_a_profile_passed_under_another_id_is_rejected() -> None:
    h = Harness()
    with pytest.raises(ValueError, match=r"profiles\[2\] is the ResourceProfile with id 1"):
        h.allocator.set_total_expected_executors({2: 1}, {2: RP})


class RecordingBuilder:
    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.requests: list[ExecutorPodRequest] = []

    def build(self, request: ExecutorPodRequest) -> ExecutorPodSpec:
        self.requests.append(request)
        return self.inner.build(request)  # type: ignore[attr-defined, no-any-return]


def test_profile_0_is_the_configured_default_profile_and_others_are_registered() -> None:
    base = Harness(start=False)
    recorder = RecordingBuilder(base.builder)
    h = Harness(builder=recorder)
    h.allocator.register_resource_profile(RP)
    h.set_targets({0: 1, 1: 1})
    profiles = {r.executor_id: r.resource_profile for r in recorder.requests}
    assert profiles == {1: h.conf.executor.default_profile, 2: RP}
    request = recorder.requests[0]
    assert (request.app_id, request.pod_name_prefix, request.driver_pod) == (
        "spark-app-id",
        "spark",
        h.driver_pod,
    )


def test_targets_of_profiles_not_named_are_kept() -> None:
    # SPARK-30749: profiles are never removed.
    h = Harness()
    h.set_targets({0: 1, 1: 2}, {1: RP})
    h.set_targets({0: 3})
    assert h.allocator.status()["targets"] == {0: 3, 1: 2}


def test_a_new_target_runs_a_round_at_once_only_when_nothing_is_outstanding() -> None:
    # SPARK-28487
    h = Harness()
    h.set_targets({0: 1})
    assert h.created_ids() == [1]
    h.set_targets({0: 2})  # executor 1 is outstanding: wait for the next tick
    assert h.created_ids() == [1]
    h.mark(1, "Running")
    h.round()
    assert h.created_ids() == [1, 2]


def test_rounds_run_every_batch_delay_once_started() -> None:
    h = Harness(periodic=True)
    h.set_targets({0: 1})
    h.mark(1, "Running")
    h.allocator.set_total_expected_executors({0: 2})  # outstanding is 1 until a round sees executor 1
    h.fake.reset_calls()
    h.scheduler.advance(h.conf.allocation.batch_delay / 2)
    assert h.created_ids() == []
    h.scheduler.advance(h.conf.allocation.batch_delay / 2)
    assert h.created_ids() == [2]


def test_no_round_before_start() -> None:
    h = Harness(start=False)
    h.set_targets({0: 1})
    assert h.created_ids() == []
    h.start()
    assert h.existing_ids() == {1}
    assert h.store.intervals == [h.conf.allocation.batch_delay]  # type: ignore[attr-defined]


# -- guarded API calls -----------------------------------------------------------------------------


def test_timed_out_requests_are_not_deleted_when_executors_are_kept() -> None:
    h = Harness(suite_conf(lifecycle=LifecycleConf(delete_on_termination=False)))
    h.set_targets({0: 1})
    h.advance(601)
    h.round()
    assert h.pod_deletes() == []
    assert h.created_ids() == [1, 2]


def test_a_failed_timed_out_delete_does_not_stop_the_round() -> None:
    h = Harness()
    h.set_targets({0: 1})
    h.advance(601)
    h.fake.fail_next("delete_collection", PODS, status=500)
    h.round()
    assert h.created_ids() == [1, 2]


def test_a_failed_excess_delete_is_retried_and_holds_back_requests_for_that_round() -> None:
    h = Harness()
    h.set_targets({0: 2, 1: 0}, {1: RP})
    h.mark(1, "Pending")
    h.mark(2, "Pending")
    h.advance(IDLE_TIMEOUT * 2)
    h.allocator.set_total_expected_executors({0: 0, 1: 1})
    h.fake.fail_next("delete_collection", PODS, status=500)
    h.round()
    assert not h.allocator.is_deleted(1)
    assert h.created_ids() == [1, 2]  # the pending slots profile 1 needs were not freed
    assert h.outstanding == 2

    h.round()
    assert [c.label_selector for c in h.pod_deletes()] == [selector(1, 2), selector(1, 2)]
    assert h.allocator.is_deleted(1) and h.allocator.is_deleted(2)
    assert h.created_profiles()[3] == 1


def test_a_failed_stop_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness()
    h.fake.fail_next("delete_collection", PODS, status=500)
    with caplog.at_level(logging.WARNING):
        h.allocator.stop()
    assert "Cannot delete the executor pods" in caplog.text


def test_after_halt_rounds_create_nothing_and_stop_still_deletes() -> None:
    h = Harness()
    h.set_targets({0: 1})
    h.allocator.halt()
    h.vanish(1)
    h.round()
    assert h.created_ids() == [1]
    h.allocator.stop()
    assert len(h.pod_deletes()) == 1
    assert h.allocator.status()["stopped"] is True


def test_after_halt_rounds_make_no_api_call_at_all() -> None:
    h = Harness()
    h.set_targets({0: 1})
    h.allocator.halt()
    h.fake.reset_calls()
    h.advance(601)  # the request would time out and be deleted
    h.round()
    assert h.fake.calls == []


def test_halt_during_a_batch_stops_the_rest_of_it() -> None:
    h = Harness(start=False)
    inner = h.builder

    class HaltingBuilder:
        def build(self, request: ExecutorPodRequest) -> ExecutorPodSpec:
            if request.executor_id == 2:
                h.allocator.halt()  # e.g. the backend stops from another thread
            return inner.build(request)

    h = Harness(builder=HaltingBuilder())
    h.set_targets({0: 5})
    assert h.created_ids() == [1, 2]


# -- claims ----------------------------------------------------------------------------------------


def _with_claims(own_pvc: bool) -> Harness:
    volume = VolumeSpec(
        name="data",
        type="persistentVolumeClaim",
        mount_path="/data",
        claim_name="OnDemand",
        storage_class="gp2",
        size_limit="10Gi",
    )
    base = suite_conf()
    conf = attrs.evolve(
        base,
        executor=attrs.evolve(base.executor, volumes=(volume,)),
        driver=attrs.evolve(base.driver, own_pvc=own_pvc),
    )
    return Harness(conf)


def test_the_driver_owns_the_claims_it_may_reuse() -> None:
    h = _with_claims(own_pvc=True)
    h.set_targets({0: 2})
    assert h.driver_pod is not None
    for claim in h.fake.objects(PVCS, NS):
        assert claim["metadata"]["ownerReferences"][0]["uid"] == h.driver_pod["metadata"]["uid"]
    assert h.allocator.pvc_counter == 2


def test_without_driver_ownership_a_claim_belongs_to_its_pod_and_none_is_listed() -> None:
    h = _with_claims(own_pvc=False)
    h.set_targets({0: 1})
    pod = h.fake.get(PODS, NS, pod_name(1))
    (claim,) = h.fake.objects(PVCS, NS)
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert h.fake.calls_of("list", PVCS) == []


def test_a_failed_rollback_delete_is_logged_and_the_round_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    h = _with_claims(own_pvc=True)
    h.fake.fail_next("create", PVCS, status=403)
    h.fake.fail_next("delete", PODS, status=500)
    with caplog.at_level(logging.WARNING):
        h.set_targets({0: 1})
    assert "Cannot delete pod spark-exec-1 after its claim failed" in caplog.text
    assert h.outstanding == 0
    h.round()
    assert h.created_ids() == [1, 2]


def test_a_claim_that_already_exists_from_an_earlier_attempt_is_accepted() -> None:
    h = _with_claims(own_pvc=True)
    h.fake.create(
        PVCS,
        NS,
        {
            "metadata": {
                "name": "spark-exec-1-pvc-0",
                "labels": {"spark-app-selector": "spark-app-id"},
                # What our earlier attempt put on it: the executor it was made for.
                "annotations": {CLAIM_EXECUTOR_ANNOTATION: "1"},
            },
            "spec": {"storageClassName": "gp2", "resources": {"requests": {"storage": "10Gi"}}},
        },
    )
    h.clock.advance(0)  # the claim is brand new: not reusable, so the pod asks for its own name
    h.set_targets({0: 1})
    assert h.allocator.failed_executors == 0
    assert h.existing_ids() == {1}
    assert h.allocator.pvc_counter == 1


# -- status ----------------------------------------------------------------------------------------


def test_status_reports_targets_requests_and_failures() -> None:
    h = Harness()
    h.set_targets({0: 2})
    h.known.add(1)
    h.round()
    status = h.allocator.status()
    assert status["targets"] == {0: 2}
    assert status["newly_created"] == [2]
    assert status["scheduler_known_newly_created"] == [1]
    assert status["outstanding"] == 1
    assert status["executor_id_counter"] == 2
    assert status["failures"] == 0
    assert status["max_failures"] == h.conf.max_executor_failures
    assert status["application_failed"] is False


def test_is_deleted_is_false_for_executors_it_never_deleted() -> None:
    assert not Harness().allocator.is_deleted(1)


def test_the_constructor_keeps_its_documented_defaults() -> None:
    h = Harness(start=False)
    allocator = ExecutorPodsAllocator(
        AllocatorSettings.from_conf(h.conf),
        AllocatorIdentity(app_id="a", driver_url="spark://d:1", pod_name_prefix="p"),
        h.fake,
        h.builder,
        h.store,
        h.clock,
    )
    assert allocator.outstanding_pods == 0
    assert allocator.executor_id_counter == 0
    assert allocator.pvc_counter == 0
    assert ResourceProfile() == h.conf.executor.default_profile


def test_the_limits_are_read_from_spark_properties() -> None:
    conf = KubernetesConf.from_spark_conf(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.kubernetes.driver.pod.name": "driver",
            "spark.executor.maxNumFailures": "2",
            "spark.executor.failuresValidityInterval": "2s",
            "spark.kubernetes.allocation.batch.size": "2",
        }
    )
    h = Harness(conf)
    assert h.allocator.status()["max_failures"] == 2
    h.set_targets({0: 3})
    assert h.created_ids() == [1, 2]  # batch size 2
    h.fail(1)
    h.round()
    assert h.allocator.failed_executors == 1
    h.advance(2.5)
    assert h.allocator.failed_executors == 0  # the 2 s validity interval
