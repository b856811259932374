"""Where the port does better than Spark's allocator (one section per improvement)."""

from __future__ import annotations

import logging

import pytest
from alloc_harness import EXECUTORS, NS, Harness, pod_name, suite_conf

from k8s_backend.conf.model import LifecycleConf
from k8s_backend.kube.port import PODS
from k8s_backend.pods.request import ExecutorPodRequest

# (1) lost executors are replaced without the driver asking again ----------------------------------


def test_an_executor_that_fails_later_is_replaced_without_a_new_target() -> None:
    h = Harness()
    h.set_targets({0: 2})
    h.mark(1, "Running")
    h.mark(2, "Running")
    h.round()
    assert h.created_ids() == [1, 2]
    h.fail(2)
    h.round()
    assert h.created_ids() == [1, 2, 3]


def test_an_executor_whose_pod_was_deleted_is_replaced() -> None:
    h = Harness()
    h.set_targets({0: 2})
    h.mark(1, "Running")
    h.mark(2, "Running")
    h.round()
    h.vanish(2)
    h.round()
    assert h.created_ids() == [1, 2, 3]


def test_an_executor_whose_pod_disappeared_from_a_resync_is_replaced() -> None:
    h = Harness()
    h.set_targets({0: 2})
    h.mark(1, "Running")
    h.mark(2, "Running")
    h.round()
    h.fake.delete(PODS, NS, pod_name(2))  # the deletion event was missed
    h.resync()
    h.round()
    assert h.created_ids() == [1, 2, 3]


def test_a_pod_in_unknown_phase_is_not_replaced_while_it_may_come_back() -> None:
    h = Harness()
    h.set_targets({0: 2})
    h.mark(1, "Running")
    h.mark(2, "Unknown")
    h.round()
    assert h.created_ids() == [1, 2]


# (2) pod-creation errors are failures, not phantom requests ---------------------------------------


def test_a_failed_pod_creation_is_a_failure_and_leaves_no_phantom_request() -> None:
    h = Harness()
    h.fake.fail_next("create", PODS, status=403, message="exceeded quota")  # not transient: a failure
    h.set_targets({0: 1})
    assert h.allocator.failed_executors == 1
    assert h.allocator.status()["newly_created"] == []
    assert h.outstanding == 0
    h.round()  # retried with a new id
    assert h.created_ids() == [1, 2]
    assert h.allocator.status()["newly_created"] == [2]
    # The failed id is never waited for, so it never times out into a delete.
    h.mark(2, "Running")
    h.advance(601)
    h.round()
    assert h.pod_deletes() == []
    assert h.created_ids() == [1, 2]


def test_a_pod_the_server_created_despite_an_error_is_counted_once_observed() -> None:
    # The create timed out but reached the server: the pod shows up later and fills the slot.
    h = Harness()
    h.fake.fail_next("create", PODS, status=500)
    h.set_targets({0: 1})
    h.fake.create(PODS, NS, h.fake.calls_of("create", PODS)[0].body)
    h.fake.reset_calls()
    h.mark(1, "Running")
    h.round()
    assert h.created_ids() == []


def test_a_builder_error_counts_as_a_creation_failure() -> None:
    class BrokenBuilder:
        def build(self, request: object) -> object:
            raise ValueError("bad template")

    h = Harness(builder=BrokenBuilder())  # type: ignore[arg-type]
    h.set_targets({0: 3})
    assert h.allocator.failed_executors == 1
    assert h.fake.calls_of("create", PODS) == []
    assert h.outstanding == 0


def test_a_conflict_from_our_own_earlier_attempt_adopts_the_pod() -> None:
    # The adapter retried a create whose first attempt had reached the server: 409 AlreadyExists.
    h = Harness()
    body = h.builder.build(_request(h, 1))
    h.fake.create(PODS, NS, body.pod)
    h.set_targets({0: 1})
    assert h.allocator.failed_executors == 0
    assert h.allocator.status()["newly_created"] == [1]
    assert h.outstanding == 1


def test_a_conflict_with_a_pod_of_another_application_is_a_failure() -> None:
    h = Harness()
    h.fake.create(
        PODS,
        NS,
        {
            "metadata": {"name": pod_name(1), "labels": {"spark-app-selector": "other-app"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    h.set_targets({0: 1})
    assert h.allocator.failed_executors == 1
    assert h.allocator.status()["newly_created"] == []


# (3) too many failures: tell the application once and stop requesting -----------------------------


def test_too_many_failures_fail_the_application_once_and_stop_requesting_pods() -> None:
    h = Harness(suite_conf(lifecycle=LifecycleConf(max_executor_failures=1)))
    h.set_targets({0: 2})
    h.fail(1)
    h.fail(2)
    h.round()
    assert len(h.failures) == 1
    reason = h.failures[0]
    assert "spark.executor.maxNumFailures" in reason
    assert "(1)" in reason and "2 executors failed" in reason
    assert h.created_ids() == [1, 2]
    assert h.allocator.status()["application_failed"] is True

    h.mark(1, "Failed", reason="again")
    h.round()
    h.round()
    assert len(h.failures) == 1
    assert h.created_ids() == [1, 2]


def test_creation_failures_alone_can_fail_the_application(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(suite_conf(lifecycle=LifecycleConf(max_executor_failures=2)))
    h.fake.fail_next("create", PODS, status=403, count=100, message="forbidden")
    h.set_targets({0: 1})
    h.round()
    assert h.failures == []
    h.round()
    assert len(h.failures) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO):
        h.round()
    assert len(h.fake.calls_of("create", PODS)) == 3  # no attempt once the application has failed
    assert "Going to request" not in caplog.text


def test_the_default_failure_callback_only_logs() -> None:
    from k8s_backend.allocation.allocator import AllocatorIdentity, AllocatorSettings, ExecutorPodsAllocator

    h = Harness(suite_conf(lifecycle=LifecycleConf(max_executor_failures=0)), start=False)
    allocator = ExecutorPodsAllocator(
        AllocatorSettings.from_conf(h.conf),
        AllocatorIdentity(app_id="a", driver_url="spark://d:1", pod_name_prefix="p"),
        h.fake,
        h.builder,
        h.store,
        h.clock,
    )
    allocator.start()
    h.fake.fail_next("create", PODS, status=422)
    allocator.set_total_expected_executors({0: 1})
    h.scheduler.run_until_idle()
    assert allocator.status()["application_failed"] is True


# (4) a stale full list cannot cause over-allocation -----------------------------------------------


def test_a_resync_older_than_the_watch_does_not_make_the_allocator_request_pods_again() -> None:
    # Spark applied a resync list taken before its newest pods existed and requested them again
    # (1008 pods for 1000). The store keeps what is newer than the list; the allocator trusts it.
    h = Harness()
    stale = h.fake.list(PODS, NS, label_selector=EXECUTORS)  # taken before any executor exists
    h.set_targets({0: 5})
    for i in range(1, 6):
        h.mark(i, "Running")  # watch events
    h.round()
    assert h.created_ids() == [1, 2, 3, 4, 5]

    h.store.replace_snapshot(stale.items, stale.resource_version)  # the slow list lands now
    h.round()
    h.round()
    assert h.created_ids() == [1, 2, 3, 4, 5]
    assert h.outstanding == 0


def test_a_resync_taken_between_creation_and_the_watch_event_does_not_duplicate_a_request() -> None:
    h = Harness()
    h.set_targets({0: 2})
    listed = h.fake.list(PODS, NS, label_selector=EXECUTORS)  # sees 1 and 2 as Pending
    h.mark(1, "Running")
    h.mark(2, "Running")
    h.store.replace_snapshot(listed.items, listed.resource_version)  # older than the events
    h.round()
    assert h.created_ids() == [1, 2]
    assert h.store.current().pods[1].phase.value == "running"


# (5) an executor the driver knows but whose pod was never seen ------------------------------------


def test_an_executor_the_driver_knows_without_a_pod_is_never_requested_again_while_known() -> None:
    h = Harness()
    h.set_targets({0: 1})
    h.known.add(1)
    for _ in range(3):
        h.advance(601)  # well past the pod creation timeout
        h.round()
    assert h.created_ids() == [1]
    assert h.pod_deletes() == []


def test_once_the_driver_forgets_it_the_executor_is_replaced_exactly_once_its_pod_is_gone() -> None:
    h = Harness()
    h.set_targets({0: 1})
    h.known.add(1)
    h.round()
    h.known.discard(1)  # e.g. killed: its pod lives on, unseen
    for _ in range(3):
        h.round()
    assert h.created_ids() == [1]  # replacing it now made one pod too many (7 for 5 in an audit)
    h.fake.delete(PODS, NS, pod_name(1))
    h.resync()  # a full list after its create, without it: gone
    for _ in range(3):
        h.round()
    assert h.created_ids() == [1, 2]


def test_new_ids_never_collide_with_ids_the_driver_or_the_cluster_already_has() -> None:
    h = Harness()
    h.known.add(9)  # e.g. an executor of a previous incarnation of the driver
    h.set_targets({0: 1})
    assert h.created_ids() == [10]

    h.mark(10, "Running")
    foreign = h.builder.build(_request(h, 20)).pod  # e.g. left by a previous driver
    h.store.update_pod(h.fake.create(PODS, NS, foreign))
    h.fake.reset_calls()
    h.set_targets({0: 3})
    h.round()
    assert h.created_ids() == [21]


def test_advance_executor_id_counter_never_moves_backwards() -> None:
    h = Harness()
    h.allocator.advance_executor_id_counter(100)
    assert h.allocator.executor_id_counter == 99
    h.allocator.advance_executor_id_counter(5)
    assert h.allocator.executor_id_counter == 99
    h.set_targets({0: 1})
    assert h.created_ids() == [100]


def _request(h: Harness, executor_id: int) -> ExecutorPodRequest:
    return ExecutorPodRequest(
        executor_id=executor_id,
        app_id="spark-app-id",
        driver_url="spark://CoarseGrainedScheduler@driver-svc:7078",
        pod_name_prefix="spark",
        resource_profile=h.conf.executor.default_profile,
        driver_pod=h.driver_pod,
    )
