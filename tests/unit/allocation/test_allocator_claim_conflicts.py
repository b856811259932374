"""A 409 on an executor's claim: accepted only for a claim an earlier attempt made for that executor.

Otherwise (a fixed claimName shared by several executors, SPARK-39006, or another application's claim)
the pod is deleted again, as Spark does when a claim cannot be created, and the creation fails.
"""

from __future__ import annotations

import logging

import attrs
import pytest
from alloc_harness import APP, NS, Harness, pod_name, suite_conf

from k8s_backend.allocation.creator import CLAIM_EXECUTOR_ANNOTATION
from k8s_backend.conf.model import VolumeSpec
from k8s_backend.kube.port import PODS, PVCS, Obj


def claims_harness(claim_name: str, *, own_pvc: bool = True) -> Harness:
    volume = VolumeSpec(
        name="data",
        type="persistentVolumeClaim",
        mount_path="/data",
        claim_name=claim_name,
        storage_class="standard",
        size_limit="1Gi",
    )
    base = suite_conf()
    conf = attrs.evolve(
        base,
        executor=attrs.evolve(base.executor, volumes=(volume,)),
        driver=attrs.evolve(base.driver, own_pvc=own_pvc),
    )
    return Harness(conf)


def existing_claim(name: str, labels: dict[str, str], annotations: dict[str, str] | None = None) -> Obj:
    return {
        "metadata": {"name": name, "labels": labels, "annotations": annotations or {}},
        "spec": {"storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}},
    }


def mounted_claims(h: Harness) -> list[str]:
    return [
        v["persistentVolumeClaim"]["claimName"]
        for p in h.fake.objects(PODS, NS)
        for v in p["spec"].get("volumes", [])
        if "persistentVolumeClaim" in v
    ]


@pytest.mark.parametrize("own_pvc", [True, False])
def test_a_fixed_claim_name_is_not_shared_by_two_executors(
    own_pvc: bool, caplog: pytest.LogCaptureFixture
) -> None:
    h = claims_harness("shared-data", own_pvc=own_pvc)
    with caplog.at_level(logging.ERROR, logger="k8s_backend.allocation.creator"):
        h.set_targets({0: 2})
    assert h.created_ids() == [1, 2]
    assert h.existing_ids() == {1}  # executor 2's pod was deleted again
    assert mounted_claims(h) == ["shared-data"]
    assert [c["metadata"]["name"] for c in h.fake.objects(PVCS, NS)] == ["shared-data"]
    assert h.allocator.failed_executors == 1
    assert h.allocator.pvc_counter == 1
    assert h.outstanding == 1
    assert "PersistentVolumeClaim shared-data of executor 2" in caplog.text
    assert "belongs to executor 1 of this application" in caplog.text
    assert "SPARK-39006" in caplog.text
    assert "claimName=OnDemand" in caplog.text


def test_every_created_claim_records_its_executor() -> None:
    h = claims_harness("OnDemand")
    h.set_targets({0: 2})
    annotations = {
        c["metadata"]["name"]: c["metadata"]["annotations"][CLAIM_EXECUTOR_ANNOTATION]
        for c in h.fake.objects(PVCS, NS)
    }
    assert annotations == {"spark-exec-1-pvc-0": "1", "spark-exec-2-pvc-0": "2"}


def test_a_claim_our_earlier_attempt_made_is_accepted() -> None:
    h = claims_harness("data-SPARK_EXECUTOR_ID")
    h.fake.create(
        PVCS,
        NS,
        existing_claim("data-1", {"spark-app-selector": APP}, {CLAIM_EXECUTOR_ANNOTATION: "1"}),
    )
    h.set_targets({0: 1})
    assert h.allocator.failed_executors == 0
    assert h.existing_ids() == {1}
    assert h.allocator.pvc_counter == 1


@pytest.mark.parametrize(
    ("labels", "annotations", "owner"),
    [
        ({"spark-app-selector": "other-app"}, {CLAIM_EXECUTOR_ANNOTATION: "1"}, "application other-app"),
        ({"spark-app-selector": APP}, {}, "this application, but no executor is recorded on it"),
        ({}, {}, "no Spark application"),
    ],
)
def test_a_claim_not_made_for_this_executor_fails_the_creation(
    labels: dict[str, str], annotations: dict[str, str], owner: str, caplog: pytest.LogCaptureFixture
) -> None:
    h = claims_harness("data-SPARK_EXECUTOR_ID")
    h.fake.create(PVCS, NS, existing_claim("data-1", labels, annotations))
    with caplog.at_level(logging.ERROR, logger="k8s_backend.allocation.creator"):
        h.set_targets({0: 1})
    assert h.allocator.failed_executors == 1
    assert h.existing_ids() == set()
    assert [c.name for c in h.fake.calls_of("delete", PODS)] == [pod_name(1)]
    assert h.allocator.pvc_counter == 0
    assert f"belongs to {owner}" in caplog.text


def test_a_claim_that_cannot_be_read_after_a_conflict_fails_the_creation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = claims_harness("data-SPARK_EXECUTOR_ID")
    h.fake.create(PVCS, NS, existing_claim("data-1", {"spark-app-selector": APP}))
    h.fake.fail_next("get", PVCS, status=403)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.allocation.creator"):
        h.set_targets({0: 1})
    assert h.allocator.failed_executors == 1
    assert h.existing_ids() == set()
    assert "Cannot create PersistentVolumeClaim data-1 of executor 1" in caplog.text


def test_the_failed_creation_is_retried_with_a_new_executor_and_fails_again() -> None:
    # SPARK-39006: with a fixed name only one executor ever gets the claim; the others fail (and are
    # counted, so too many of them fail the application instead of retrying forever).
    h = claims_harness("shared-data")
    h.set_targets({0: 2})
    h.mark(1, "Running")  # the store sees executor 1, so the next round asks for the missing one
    h.round()
    assert h.created_ids() == [1, 2, 3]
    assert h.existing_ids() == {1}
    assert h.allocator.failed_executors == 2
