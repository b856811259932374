"""Spark's ExecutorPodsAllocatorSuite, scenario by scenario, against FakeKubernetes and a real store.

The splitSlots table (scenario 2) is in test_allocator_policy.py. Where Spark let an exception escape
the round (scenario 20), the port logs it and the round goes on; the test checks that instead.
"""

from __future__ import annotations

import logging

import attrs
import pytest
from alloc_harness import (
    BATCH,
    IDLE_TIMEOUT,
    NS,
    RP,
    Harness,
    pod_name,
    selector,
    suite_conf,
)

from k8s_backend.allocation.allocator import fetch_driver_pod
from k8s_backend.conf.model import AllocationConf, KubernetesConf, LifecycleConf, VolumeSpec
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import PODS, PVCS, Obj
from k8s_backend.testing import FakeKubernetes

POD_CREATION_TIMEOUT = 600.0
PENDING = "status.phase=Pending"


def pvc_conf(storage_class: str = "gp2", *, wait: bool = False, instances: int = 2) -> KubernetesConf:
    volume = VolumeSpec(
        name="spark-local-dir-1",
        type="persistentVolumeClaim",
        mount_path="/spark-local-dir",
        claim_name="OnDemand",
        storage_class=storage_class,
        size_limit="200Gi",
    )
    base = suite_conf()
    return attrs.evolve(
        base,
        executor=attrs.evolve(base.executor, volumes=(volume,)),
        driver=attrs.evolve(base.driver, own_pvc=True, reuse_pvc=True, wait_to_reuse_pvc=wait),
        scaling=attrs.evolve(base.scaling, executor_instances=instances),
    )


def old_claim(h: Harness, name: str, storage_class: str = "gp2", size: str = "200Gi") -> Obj:
    return h.fake.create(
        PVCS,
        NS,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": {"spark-app-selector": "spark-app-id"}},
            "spec": {
                "storageClassName": storage_class,
                "accessModes": ["ReadWriteOncePod"],
                "resources": {"requests": {"storage": size}},
            },
        },
    )


def created_claims(h: Harness) -> list[str]:
    """Claims the allocator created (the test's own old claims excluded)."""
    return [str(c.name) for c in h.fake.calls_of("create", PVCS) if not str(c.name).startswith("pvc-")]


def claim_of(h: Harness, executor_id: int) -> str:
    pod = h.fake.get(PODS, NS, pod_name(executor_id))
    claims = [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ]
    assert len(claims) == 1
    return str(claims[0])


# 1 ------------------------------------------------------------------------------------------------


def test_failures_are_counted_within_a_window_and_fail_the_application_when_exceeded() -> None:
    # SPARK-41210: maxNumFailures=2, failuresValidityInterval=2s.
    h = Harness(suite_conf(lifecycle=LifecycleConf(max_executor_failures=2, failures_validity_interval=2.0)))
    h.set_targets({0: 3})
    for i in (1, 2, 3):
        h.mark(i, "Running")
    h.round()
    assert h.allocator.failed_executors == 0

    h.advance(1)
    h.fail(1)
    h.fail(2)
    h.round()
    assert h.allocator.failed_executors == 2
    assert h.failures == []

    h.advance(1)
    h.round()
    assert h.allocator.failed_executors == 2
    assert h.failures == []

    h.advance(2)
    assert h.allocator.failed_executors == 0  # expired, without any round
    assert h.failures == []

    h.advance(1)
    assert h.created_ids() == [1, 2, 3, 4, 5]  # 4 and 5 replaced 1 and 2
    h.fail(3)
    h.fail(4)
    h.fail(5)
    h.round()
    assert h.allocator.failed_executors == 3
    assert len(h.failures) == 1
    assert "spark.executor.maxNumFailures" in h.failures[0]


# 3 ------------------------------------------------------------------------------------------------


def test_the_pending_pod_limit_is_shared_between_resource_profiles() -> None:
    # SPARK-36052
    h = Harness(suite_conf(allocation=AllocationConf(batch_size=BATCH, max_pending_pods=3)))
    h.set_targets({0: 2, 1: 3}, {1: RP})
    assert h.outstanding == 3
    assert h.created_profiles() == {1: 0, 2: 0, 3: 1}

    # 2 and 3 pending, 1 still a request: no pending slot is freed.
    h.mark(2, "Pending")
    h.mark(3, "Pending")
    h.round()
    assert h.outstanding == 3
    assert h.created_ids() == [1, 2, 3]
    assert h.pod_deletes() == []

    # Scaling the default profile down to 1 deletes its idle request and frees a slot for profile 1.
    h.advance(IDLE_TIMEOUT * 2)
    h.set_targets({0: 1, 1: 3})
    h.round()
    assert h.outstanding == 3
    assert [(c.label_selector, c.field_selector) for c in h.pod_deletes()] == [(selector(1), PENDING)]
    assert h.created_profiles()[4] == 1

    # A running pod frees one more slot.
    h.mark(3, "Running")
    h.mark(4, "Pending")
    h.round()
    assert h.outstanding == 3
    assert h.created_profiles()[5] == 1
    assert len(h.pod_deletes()) == 1


# 4 ------------------------------------------------------------------------------------------------


def test_the_first_request_is_capped_at_the_batch_size() -> None:
    h = Harness()
    h.set_targets({0: BATCH + 1})
    assert h.outstanding == BATCH
    assert h.created_ids() == list(range(1, BATCH + 1))


# 5 ------------------------------------------------------------------------------------------------


def test_another_batch_is_requested_only_once_the_whole_first_batch_is_observed() -> None:
    h = Harness()
    assert h.allocator.executor_id_counter == 0
    h.set_targets({0: BATCH + 1})
    assert h.outstanding == BATCH
    for i in range(1, BATCH):
        h.mark(i, "Running")
    assert h.allocator.executor_id_counter == BATCH
    h.round()
    assert h.outstanding == 1
    assert h.created_ids() == list(range(1, BATCH + 1))

    h.mark(BATCH, "Running")
    h.round()
    assert h.outstanding == 1
    assert h.created_ids() == list(range(1, BATCH + 2))

    h.mark(BATCH, "Running")
    h.round()
    assert h.outstanding == 1
    assert len(h.created_ids()) == BATCH + 1


# 6 ------------------------------------------------------------------------------------------------


def test_a_batch_member_that_fails_at_once_is_replaced_in_the_next_batch() -> None:
    h = Harness()
    h.set_targets({0: BATCH})
    assert h.outstanding == BATCH
    for i in range(1, BATCH):
        h.mark(i, "Running")
    h.fail(BATCH)
    h.round()
    assert h.outstanding == 1
    assert h.created_ids()[-1] == BATCH + 1


# 7 ------------------------------------------------------------------------------------------------


def test_stop_deletes_every_executor_pod_of_the_application() -> None:
    h = Harness()
    h.set_targets({0: 2})
    h.allocator.stop()
    assert [(c.label_selector, c.field_selector) for c in h.pod_deletes()] == [
        ("spark-app-selector=spark-app-id,spark-role=executor", "")
    ]
    assert h.existing_ids() == set()


# 8 ------------------------------------------------------------------------------------------------


def test_a_request_never_observed_is_deleted_and_requested_again_after_the_creation_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness()
    h.set_targets({0: 1})
    assert h.outstanding == 1
    assert h.created_ids() == [1]

    h.advance(POD_CREATION_TIMEOUT)
    h.round()
    assert h.pod_deletes() == []  # not yet: the timeout is exclusive

    h.advance(1)
    with caplog.at_level(logging.WARNING):
        h.round()
    assert h.outstanding == 1
    assert [(c.label_selector, c.field_selector) for c in h.pod_deletes()] == [(selector(1), "")]
    assert h.created_ids() == [1, 2]
    assert h.existing_ids() == {2}
    assert (
        "Executors with ids 1 were not detected in the Kubernetes cluster after 600000 ms despite the fact "
        "that a previous allocation attempt tried to create them. The executors may have been deleted but "
        "the application missed the deletion event."
    ) in caplog.text


# 9 ------------------------------------------------------------------------------------------------


def test_scale_up_and_down_on_target_changes() -> None:
    # SPARK-28487
    h = Harness()
    h.set_targets({0: 1})  # requested at once, even with an empty snapshot
    assert h.outstanding == 1
    assert h.created_ids() == [1]

    h.mark(1, "Running")
    h.round()
    assert h.outstanding == 0
    assert h.created_ids() == [1]
    assert h.pod_deletes() == []

    h.set_targets({0: 4})
    h.round()
    assert h.outstanding == 3
    assert h.created_ids() == [1, 2, 3, 4]

    h.mark(2, "Running")
    h.mark(3, "Pending")
    h.round()
    assert h.outstanding == 2
    assert len(h.created_ids()) == 4
    assert h.pod_deletes() == []

    # Scale down to 1: the pending pod and the request, both idle, are deleted.
    h.advance(IDLE_TIMEOUT * 2)
    h.set_targets({0: 1})
    h.round()
    assert h.outstanding == 0
    assert len(h.created_ids()) == 4
    assert [(c.label_selector, c.field_selector) for c in h.pod_deletes()] == [(selector(3, 4), PENDING)]
    assert h.allocator.is_deleted(3)
    assert h.allocator.is_deleted(4)

    # Once the snapshot no longer has them, the allocator forgets them.
    h.resync()
    h.round()
    assert h.outstanding == 0
    assert not h.allocator.is_deleted(3)
    assert not h.allocator.is_deleted(4)


# 10 -----------------------------------------------------------------------------------------------


def test_timed_out_pending_pods_are_chosen_as_excess_before_newer_requests() -> None:
    # SPARK-34334
    h = Harness()
    h.set_targets({0: 1})
    assert h.created_ids() == [1]
    h.mark(1, "Pending")
    h.round()

    h.advance(IDLE_TIMEOUT)
    h.set_targets({0: 2})
    h.round()
    assert h.created_ids() == [1, 2]

    h.set_targets({0: 1})
    h.round()
    assert h.pod_deletes() == []

    h.advance(IDLE_TIMEOUT)
    h.round()
    assert [c.label_selector for c in h.pod_deletes()] == [selector(1)]


# 11 -----------------------------------------------------------------------------------------------


def test_new_requests_and_pending_pods_are_protected_for_the_idle_timeout() -> None:
    # SPARK-33099
    h = Harness()
    h.set_targets({0: 5})
    assert h.outstanding == 5
    assert h.created_ids() == [1, 2, 3, 4, 5]
    h.mark(1, "Pending")
    h.mark(2, "Pending")

    h.set_targets({0: 0})
    h.round()
    assert h.outstanding == 5
    assert h.pod_deletes() == []

    # After the timeout: what the driver knows (1, 3, 4) is kept and not outstanding (SPARK-34361).
    h.advance(IDLE_TIMEOUT * 2)
    h.known.update({1, 3, 4})
    h.round()
    assert h.outstanding == 0
    assert [(c.label_selector, c.field_selector) for c in h.pod_deletes()] == [(selector(2, 5), PENDING)]


# 12 -----------------------------------------------------------------------------------------------


def test_pods_the_driver_knows_survive_downscaling_with_several_profiles() -> None:
    # SPARK-34361; the table in Spark's test: N-/N+ request unknown/known to the driver, P-/P+ pending.
    h = Harness()
    # 0) default -> 3, rp -> 4: 7 requests (N-).
    h.set_targets({0: 3, 1: 4}, {1: RP})
    assert h.outstanding == 7
    assert h.created_profiles() == {1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}

    # 1) one of each profile known by the driver: not outstanding.
    h.known.update({1, 4})
    h.round()
    assert h.outstanding == 5
    assert len(h.created_ids()) == 7

    # 2) more known, some pending: | N+ P+ P- || N+ P+ P- N- |
    h.known.update({2, 5})
    h.mark(2, "Pending")
    h.mark(3, "Pending")
    h.mark(5, "Pending")
    h.mark(6, "Pending")
    h.round()
    assert h.outstanding == 3
    assert len(h.created_ids()) == 7

    # 3) after the idle timeout, default -> 1 and rp -> 1: only the unknown ones go (3 | 6, 7).
    h.advance(IDLE_TIMEOUT * 2)
    h.set_targets({0: 1, 1: 1})
    h.round()
    assert h.outstanding == 0
    assert len(h.created_ids()) == 7
    assert [c.label_selector for c in h.pod_deletes()] == [selector(3), selector(6, 7)]
    assert all(h.allocator.is_deleted(i) for i in (3, 6, 7))

    # 4) default -> 2, rp -> 2: the two known executors of each profile already cover it.
    h.set_targets({0: 2, 1: 2})
    h.round()
    assert len(h.created_ids()) == 7
    assert h.outstanding == 0

    # 5) one more each: 8 (default) and 9 (rp).
    h.set_targets({0: 3, 1: 3})
    h.round()
    assert h.outstanding == 2
    assert h.created_profiles() == {1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1, 8: 0, 9: 1}


# 13 -----------------------------------------------------------------------------------------------


def test_resource_profiles_get_independent_batches() -> None:
    # SPARK-33288
    h = Harness()
    h.set_targets({0: 1, 1: 2}, {1: RP})
    assert h.outstanding == 3
    assert h.created_profiles() == {1: 0, 2: 1, 3: 1}

    for i in (1, 2, 3):
        h.mark(i, "Running")
    h.round()
    assert h.outstanding == 0
    assert len(h.created_ids()) == 3
    assert h.pod_deletes() == []

    h.set_targets({0: 4, 1: 3})
    h.round()
    assert h.outstanding == 4
    assert h.created_profiles() == {1: 0, 2: 1, 3: 1, 4: 0, 5: 0, 6: 0, 7: 1}

    h.mark(4, "Running")
    h.mark(5, "Pending")
    h.mark(7, "Pending")
    h.round()
    assert h.outstanding == 3
    assert len(h.created_ids()) == 7
    assert h.pod_deletes() == []

    h.advance(IDLE_TIMEOUT * 2)
    h.set_targets({0: 1, 1: 1})
    h.round()
    assert h.outstanding == 0
    assert len(h.created_ids()) == 7
    assert [(c.label_selector, c.field_selector) for c in h.pod_deletes()] == [
        (selector(5, 6), PENDING),
        (selector(7), PENDING),
    ]
    assert all(h.allocator.is_deleted(i) for i in (5, 6, 7))

    h.resync()
    h.round()
    assert h.outstanding == 0
    assert not any(h.allocator.is_deleted(i) for i in (5, 6, 7))


# 14 -----------------------------------------------------------------------------------------------


def test_the_allocator_does_not_stall_on_one_pending_pod() -> None:
    # SPARK-33262
    h = Harness()
    h.set_targets({0: 6})
    assert h.outstanding == 5
    assert h.created_ids() == [1, 2, 3, 4, 5]
    h.mark(1, "Pending")
    for i in (2, 3, 4, 5):
        h.mark(i, "Running")
    h.advance(h.conf.allocation.batch_delay + 1)
    h.round()
    assert h.outstanding == 2
    assert h.created_ids() == [1, 2, 3, 4, 5, 6]


# 15 -----------------------------------------------------------------------------------------------


def test_a_free_claim_older_than_the_batch_delay_is_reused_instead_of_creating_one() -> None:
    # SPARK-35416
    h = Harness(pvc_conf("gp2"))
    old_claim(h, "pvc-a")
    old_claim(h, "pvc-b")
    h.advance(h.conf.allocation.batch_delay + 1)

    h.set_targets({0: 1})
    assert h.outstanding == 1
    assert claim_of(h, 1) == "pvc-a"

    h.mark(1, "Running")
    h.round()
    assert h.outstanding == 0
    assert len(h.created_ids()) == 1
    assert h.fake.calls_of("delete", PODS) == []

    h.set_targets({0: 2})
    h.round()
    assert h.outstanding == 1
    assert claim_of(h, 2) == "pvc-b"  # pvc-a is mounted by executor 1
    assert created_claims(h) == []
    assert h.allocator.pvc_counter == 0


# 16 -----------------------------------------------------------------------------------------------


def test_a_missing_driver_pod_is_reported_by_its_plain_name() -> None:
    with pytest.raises(ConfigError) as raised:
        fetch_driver_pod(FakeKubernetes(), "default", "i-do-not-exist")
    assert "No pod was found named i-do-not-exist in the cluster in the namespace default" in str(
        raised.value
    )
    assert raised.value.key == "spark.kubernetes.driver.pod.name"
    assert fetch_driver_pod(FakeKubernetes(), "default", None) is None


# 17 -----------------------------------------------------------------------------------------------


def test_no_permission_to_list_claims_reuses_nothing_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    # SPARK-39688
    h = Harness(pvc_conf("gp2"))
    old_claim(h, "pvc-a")
    h.advance(h.conf.allocation.batch_delay + 1)
    h.fake.fail_next("list", PVCS, status=403)
    with caplog.at_level(logging.INFO):
        h.set_targets({0: 1})
    assert "Cannot list PVC resources. Please check account permissions." in caplog.text
    assert claim_of(h, 1) == "spark-exec-1-pvc-0"
    assert created_claims(h) == ["spark-exec-1-pvc-0"]


# 18 -----------------------------------------------------------------------------------------------


def test_claims_created_within_the_last_batch_delay_are_not_reused() -> None:
    # SPARK-41388
    h = Harness(pvc_conf("gp2"))
    old_claim(h, "pvc-old")
    h.advance(2 * h.conf.allocation.batch_delay)
    old_claim(h, "pvc-new")
    h.set_targets({0: 2})
    assert claim_of(h, 1) == "pvc-old"
    assert claim_of(h, 2) == "spark-exec-2-pvc-0"  # pvc-new may belong to a pod not observed yet


# 19 -----------------------------------------------------------------------------------------------


def test_pvc_oriented_allocation_waits_for_a_claim_to_be_released(caplog: pytest.LogCaptureFixture) -> None:
    # SPARK-41410: instances=1 and one claim created: raising the target creates no pod.
    h = Harness(pvc_conf("gp3", wait=True, instances=1))
    assert h.allocator.pvc_counter == 0
    h.set_targets({0: 1})
    assert h.outstanding == 1
    assert claim_of(h, 1) == "spark-exec-1-pvc-0"
    assert h.allocator.pvc_counter == 1

    h.mark(1, "Running")
    h.round()
    assert h.outstanding == 0
    assert len(h.created_ids()) == 1
    assert len(h.fake.calls_of("create", PVCS)) == 1
    assert h.allocator.pvc_counter == 1

    h.set_targets({0: 2})
    h.round()
    assert h.outstanding == 0
    assert len(h.created_ids()) == 1
    assert h.allocator.pvc_counter == 1

    # A new observation lets it try again; the claim is still mounted, so it waits.
    with caplog.at_level(logging.INFO):
        h.mark(1, "Running", podIP="10.0.0.1")
        h.round()
    assert "Wait to reuse one of the existing 1 PVCs." in caplog.text
    assert len(h.created_ids()) == 1


def test_pvc_oriented_allocation_only_retries_when_something_was_observed() -> None:
    h = Harness(pvc_conf("gp3", wait=True, instances=1))
    h.set_targets({0: 1})
    h.mark(1, "Running")
    h.round()
    h.set_targets({0: 2})
    h.round()
    lists = len(h.fake.calls_of("list", PVCS))
    h.round()  # nothing new observed: no claim can have been released, so no attempt at all
    assert len(h.fake.calls_of("list", PVCS)) == lists
    h.mark(1, "Running", podIP="10.0.0.1")
    h.round()
    assert len(h.fake.calls_of("list", PVCS)) == lists + 1


# 20 -----------------------------------------------------------------------------------------------


def test_a_failed_claim_creation_deletes_its_pod_and_is_not_counted_as_a_claim() -> None:
    # SPARK-41410: the PVC counter stays 0 and nothing is outstanding; the port logs instead of raising.
    h = Harness(pvc_conf("gp3", wait=True, instances=1))
    # Not a transient status: those are retried later without counting (test_allocator_api_outage.py).
    h.fake.fail_next("create", PVCS, status=422, message="PVC fails to create")
    h.set_targets({0: 1})
    assert h.allocator.pvc_counter == 0
    assert h.outstanding == 0
    assert [c.name for c in h.fake.calls_of("delete", PODS)] == [pod_name(1)]
    assert h.existing_ids() == set()
    assert h.allocator.failed_executors == 1  # SPARK-55075


# 21 (newer) ---------------------------------------------------------------------------------------


def test_the_per_profile_pending_limit_caps_each_profile() -> None:
    # SPARK-53324
    conf = suite_conf(allocation=AllocationConf(batch_size=BATCH, max_pending_pods_per_rp=2))
    h = Harness(conf)
    h.set_targets({0: 5, 1: 5}, {1: RP})
    assert h.created_profiles() == {1: 0, 2: 0, 3: 1, 4: 1}
    h.mark(1, "Running")
    h.mark(2, "Pending")
    h.mark(3, "Pending")
    h.mark(4, "Pending")
    h.round()
    # Default: 1 pending of 2 allowed -> 1 more; rp: 2 pending -> none.
    assert h.created_profiles() == {1: 0, 2: 0, 3: 1, 4: 1, 5: 0}


def test_pod_creation_errors_count_as_executor_failures() -> None:
    # SPARK-55075: e.g. a quota refusal, after the adapter's own retries.
    h = Harness(suite_conf(lifecycle=LifecycleConf(max_executor_failures=10)))
    h.fake.fail_next("create", PODS, status=403, message="exceeded quota")
    h.set_targets({0: 3})
    assert h.allocator.failed_executors == 1
    assert h.created_ids() == [1]  # the rest of the batch waits for the next round
    assert h.outstanding == 0
    h.round()
    assert h.created_ids() == [1, 2, 3, 4]
    assert h.existing_ids() == {2, 3, 4}


def test_an_executor_removed_from_the_driver_before_its_pod_was_seen_is_not_tracked() -> None:
    # SPARK-44609
    h = Harness()
    h.set_targets({0: 1})
    h.known.add(1)
    h.round()
    assert h.allocator.status()["scheduler_known_newly_created"] == [1]
    h.known.discard(1)
    h.round()
    assert h.allocator.status()["scheduler_known_newly_created"] == []
    # Improvement: its pod may live on (a killed executor's does), so it counts as a request until a list
    # shows it gone; Spark replaced it at once.
    assert h.allocator.status()["newly_created"] == [1]
    assert h.created_ids() == [1]
    h.fake.delete(PODS, NS, pod_name(1))
    h.resync()
    h.round()
    assert h.created_ids() == [1, 2]


def test_the_harness_uses_the_timeouts_of_sparks_suite() -> None:
    conf = suite_conf()
    assert conf.allocation.pod_creation_timeout == POD_CREATION_TIMEOUT
    assert conf.scaling.executor_idle_timeout == IDLE_TIMEOUT
