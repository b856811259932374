"""A client-mode driver's executor pods are owned by its heartbeat Lease: the Lease's delete at stop has
the garbage collector delete whatever pods the backend's own delete left (the fake collects dependents
as the collector does)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from backend_harness import (
    BASE_CONF,
    HEARTBEAT_LEASE,
    Harness,
    RecordingDriver,
    create_backend,
    make_harness,
    make_heartbeat,
)

from k8s_backend.backend.heartbeat import HeartbeatAnnotationStep
from k8s_backend.common import DeterministicScheduler
from k8s_backend.common.stop_sequence import StopSequence
from k8s_backend.kube.port import LEASES, PODS
from k8s_backend.pods.step import SparkPod
from k8s_backend.testing import FakeKubernetes

LEASE = HEARTBEAT_LEASE
TEMPLATE_OWNER = {"apiVersion": "v1", "kind": "Pod", "name": "other", "uid": "u-1", "controller": True}


def configured(step: HeartbeatAnnotationStep, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "exec-1"}
    if owners is not None:
        metadata["ownerReferences"] = owners
    pod = SparkPod(pod={"metadata": metadata}, container={"name": "c"})
    configured_metadata: dict[str, Any] = step.configure_pod(pod, None).pod["metadata"]  # type: ignore[arg-type]
    return configured_metadata


def lease_uid(fake: FakeKubernetes) -> str:
    return str(fake.get(LEASES, "default", LEASE)["metadata"]["uid"])


def test_without_an_owner_the_step_only_annotates() -> None:
    metadata = configured(HeartbeatAnnotationStep(LEASE))
    assert "ownerReferences" not in metadata
    assert metadata["annotations"] == {"k8s-backend.io/heartbeat-lease": LEASE}


def test_pods_name_the_lease_as_a_non_controller_owner_beside_a_template_controller() -> None:
    beat, fake, _ = make_heartbeat(30.0)
    step = HeartbeatAnnotationStep(LEASE)
    step.owner = beat
    assert "ownerReferences" not in configured(step)  # not started: no uid to own by yet
    beat.start()
    owners = configured(step, [dict(TEMPLATE_OWNER)])["ownerReferences"]
    assert owners == [
        TEMPLATE_OWNER,
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": LEASE, "uid": lease_uid(fake)},
    ]


def test_pods_made_after_the_lease_was_created_again_name_the_new_one() -> None:
    beat, fake, scheduler = make_heartbeat(30.0)
    step = HeartbeatAnnotationStep(LEASE)
    step.owner = beat
    beat.start()
    old = lease_uid(fake)
    fake.delete(LEASES, "default", LEASE)  # a bad cleanup while the application runs
    scheduler.advance(beat.interval)
    assert lease_uid(fake) != old
    assert [ref["uid"] for ref in configured(step)["ownerReferences"]] == [lease_uid(fake)]


def lease_owned(pod: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in pod["metadata"].get("ownerReferences") or [] if ref["kind"] == "Lease"]


def test_the_backend_s_pods_are_owned_by_its_lease() -> None:
    h = make_harness()
    h.backend.start()
    h.run()
    pods = h.executor_pods()
    assert len(pods) == 3
    assert {tuple(lease_owned(pod)) for pod in pods} == {(lease_uid(h.fake),)}
    h.backend.stop()


def test_pods_the_stop_could_not_delete_are_collected_with_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "k8s_backend.assembly.stop_steps.StopSequence", functools.partial(StopSequence, sleep=lambda _: None)
    )
    h = make_harness()
    h.backend.start()
    h.run()
    assert len(h.executor_pods()) == 3
    # A Role without deletecollection on pods (or a collection delete cut short at 10,000 pods).
    h.fake.fail_next("delete_collection", PODS, status=403, count=10)
    h.backend.stop()
    assert h.fake.calls_of("delete_collection", PODS)
    assert h.fake.objects(LEASES) == []
    assert h.executor_pods() == []


def test_pods_are_not_owned_by_the_lease_when_executors_are_kept_at_stop() -> None:
    h = make_harness({"spark.kubernetes.executor.deleteOnTermination": "false"})
    h.backend.start()
    h.run()
    pods = h.executor_pods()
    assert len(pods) == 3
    assert not any(lease_owned(pod) for pod in pods)
    h.backend.stop()
    assert len(h.executor_pods()) == 3


def test_a_restarted_driver_that_keeps_executors_keeps_the_pods_its_predecessor_let_the_lease_own() -> None:
    first = make_harness()
    first.backend.start()
    first.run()
    owner = lease_uid(first.fake)
    assert {tuple(lease_owned(pod)) for pod in first.executor_pods()} == {(owner,)}
    # The first driver dies without stopping; the next, of the same application id, keeps its executors.
    clock = first.scheduler.clock  # the fake's too
    scheduler = DeterministicScheduler(clock)
    keep = {**BASE_CONF, "spark.kubernetes.executor.deleteOnTermination": "false"}
    backend = create_backend(keep, api=first.fake, driver=RecordingDriver(), clock=clock, scheduler=scheduler)
    second = Harness(first.fake, scheduler, RecordingDriver(), backend)
    second.backend.start()
    second.run()
    assert lease_uid(second.fake) == owner  # taken over, not created again: the pods still name it
    second.backend.stop()
    assert second.fake.objects(LEASES) == []
    pods = second.executor_pods()
    assert len(pods) == 3  # a plain delete of the Lease would have had them collected
    assert not any(lease_owned(pod) for pod in pods)
