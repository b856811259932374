"""PVC reuse decisions and the window-based executor failure tracker (pure parts of the allocator)."""

from __future__ import annotations

import copy

import pytest
from alloc_pods import batch, iso, state

from k8s_backend.allocation.failures import ExecutorFailureTracker
from k8s_backend.allocation.pvcs import PvcReusePolicy, claim_names_in_use, reusable_pvcs, reuse_claims
from k8s_backend.common import ManualClock
from k8s_backend.conf.model import KubernetesConf, ScalingConf
from k8s_backend.kube.port import Obj


def pvc(name: str, storage_class: str = "gp2", size: str = "200Gi", created: float | None = 0.0) -> Obj:
    metadata: Obj = {"name": name, "labels": {"spark-app-selector": "spark-app-id"}}
    if created is not None:
        metadata["creationTimestamp"] = iso(created)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": {"storageClassName": storage_class, "resources": {"requests": {"storage": size}}},
    }


def pod_with_claim(claim: str) -> Obj:
    return {
        "metadata": {"name": "exec-1"},
        "spec": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
    }


# -- PvcReusePolicy --------------------------------------------------------------------------------


def test_the_pvc_limit_is_the_executor_count_or_the_dynamic_maximum() -> None:
    assert PvcReusePolicy.from_conf(KubernetesConf(scaling=ScalingConf(executor_instances=3))).max_pvcs == 3
    dynamic = ScalingConf(dynamic_allocation=True, max_executors=7, executor_instances=3)
    assert PvcReusePolicy.from_conf(KubernetesConf(scaling=dynamic)).max_pvcs == 7


def test_pvc_oriented_allocation_needs_own_reuse_and_wait() -> None:
    assert PvcReusePolicy(own_pvc=True, reuse_pvc=True, wait_to_reuse=True).allocate_on_pvc
    assert not PvcReusePolicy(own_pvc=False, reuse_pvc=True, wait_to_reuse=True).allocate_on_pvc
    assert not PvcReusePolicy(own_pvc=True, reuse_pvc=False, wait_to_reuse=True).allocate_on_pvc
    assert not PvcReusePolicy(own_pvc=True, reuse_pvc=True, wait_to_reuse=False).allocate_on_pvc


def test_claims_are_listed_only_when_the_driver_owns_and_reuses_them() -> None:
    assert PvcReusePolicy().lists_pvcs(driver_pod_known=True)
    assert not PvcReusePolicy().lists_pvcs(driver_pod_known=False)
    assert not PvcReusePolicy(own_pvc=False).lists_pvcs(driver_pod_known=True)
    assert not PvcReusePolicy(reuse_pvc=False).lists_pvcs(driver_pod_known=True)


def test_wait_to_reuse_only_when_no_claim_is_free_and_all_exist() -> None:
    policy = PvcReusePolicy(wait_to_reuse=True, max_pvcs=1)
    assert policy.must_wait(reusable_left=0, pvc_counter=1)
    assert not policy.must_wait(reusable_left=1, pvc_counter=1)
    assert not policy.must_wait(reusable_left=0, pvc_counter=0)
    assert not PvcReusePolicy(wait_to_reuse=False, max_pvcs=1).must_wait(reusable_left=0, pvc_counter=5)


# -- which claims are free -------------------------------------------------------------------------


def test_claims_in_use_are_those_of_every_observed_pod_in_any_state() -> None:
    observed = batch(
        [state(1, "Running", claims=["a"]), state(2, "Failed", claims=["b"])],
        updates=[state(3, "Pending", claims=["c"])],
    )
    assert claim_names_in_use(observed) == {"a", "b", "c"}


def test_a_claim_mounted_by_an_observed_pod_is_not_reusable() -> None:
    assert reusable_pvcs([pvc("a"), pvc("b")], {"a"}, now=100.0, batch_delay=1.0) == [pvc("b")]


def test_a_claim_created_within_the_last_batch_delay_is_not_reusable() -> None:
    # SPARK-41388: it may belong to a pod created in the previous round and not observed yet.
    claims = [pvc("old", created=0.0), pvc("new", created=99.0), pvc("edge", created=98.0)]
    assert reusable_pvcs(claims, set(), now=100.0, batch_delay=2.0) == [pvc("old", created=0.0)]


def test_a_claim_without_a_creation_time_is_not_reusable() -> None:
    assert reusable_pvcs([pvc("a", created=None)], set(), now=100.0, batch_delay=1.0) == []


# -- reusing a claim -------------------------------------------------------------------------------


def test_a_free_claim_of_the_same_class_and_size_replaces_the_new_one() -> None:
    pod = pod_with_claim("exec-1-pvc-0")
    original = copy.deepcopy(pod)
    reusable = [pvc("other", size="100Gi"), pvc("old-claim")]
    result = reuse_claims(pod, [pvc("exec-1-pvc-0")], reusable)
    assert result.pvcs_to_create == ()
    assert result.reused == ("old-claim",)
    assert result.pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "old-claim"
    assert pod == original  # the builder's pod is left alone
    assert [c["metadata"]["name"] for c in reusable] == ["other"]  # one claim, one pod


@pytest.mark.parametrize("free", [pvc("x", storage_class="gp3"), pvc("x", size="100Gi")])
def test_a_claim_of_another_class_or_size_is_not_reused(free: Obj) -> None:
    result = reuse_claims(pod_with_claim("exec-1-pvc-0"), [pvc("exec-1-pvc-0")], [free])
    assert result.pvcs_to_create == (pvc("exec-1-pvc-0"),)
    assert result.reused == ()


def test_a_claim_the_pod_does_not_mount_is_created_not_reused() -> None:
    reusable = [pvc("old")]
    result = reuse_claims(pod_with_claim("something-else"), [pvc("exec-1-pvc-0")], reusable)
    assert result.pvcs_to_create == (pvc("exec-1-pvc-0"),)
    assert reusable == [pvc("old")]


# -- ExecutorFailureTracker (SPARK-41210) ----------------------------------------------------------


def test_failures_count_forever_without_a_validity_interval() -> None:
    clock = ManualClock()
    tracker = ExecutorFailureTracker(clock)
    tracker.register_failure(2)
    clock.advance(10_000)
    assert tracker.num_failed == 2


def test_failures_expire_once_older_than_the_validity_interval() -> None:
    clock = ManualClock(1.0)
    tracker = ExecutorFailureTracker(clock, validity_interval=2.0)
    tracker.register_failure()
    tracker.register_failure()
    clock.set(3.0)
    assert tracker.num_failed == 2  # exactly at the window edge: still counts
    clock.set(3.5)
    assert tracker.num_failed == 0
    tracker.register_failure(3)
    assert tracker.num_failed == 3


def test_a_zero_validity_interval_forgets_each_failure_once_time_moves_on() -> None:
    # The key documents 0 as allowed: it must not fail the backend's construction.
    clock = ManualClock(1.0)
    tracker = ExecutorFailureTracker(clock, validity_interval=0)
    tracker.register_failure(2)
    assert tracker.num_failed == 2  # at the same instant they still count, as in Spark
    clock.advance(0.001)
    assert tracker.num_failed == 0


def test_a_negative_validity_interval_is_rejected_with_its_key() -> None:
    with pytest.raises(ValueError, match=r"spark\.executor\.failuresValidityInterval"):
        ExecutorFailureTracker(ManualClock(), validity_interval=-1)
