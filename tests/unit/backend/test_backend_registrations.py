"""A cluster-mode backend (``spark.kubernetes.driver.pod.name``) with a driver attached writes the driver's
registered executors on the driver pod for ``k8s-backend status``: once at start, then when they change, at
most once per heartbeat renewal interval; a client-mode one tells them in its Lease and never patches a pod
for them; a backend without a driver writes nothing. Its recent targets and markers (for ``status
--timeline``) go in the same patch, bounded."""

from __future__ import annotations

import json
from typing import Any

from backend_harness import HEARTBEAT_LEASE, START, Harness, make_harness

from k8s_backend.kube.activity import (
    ACTIVITY_ANNOTATION,
    KEPT,
    TEXT_LIMIT,
    Activity,
    activity_annotation,
    executor_activity,
)
from k8s_backend.kube.leases import REGISTERED_EXECUTORS_ANNOTATION, REGISTERED_EXECUTORS_AS_OF_ANNOTATION
from k8s_backend.kube.port import LEASES, PODS

CLUSTER_MODE = {
    "spark.kubernetes.driver.pod.name": "driver",
    "spark.kubernetes.driver.heartbeat.leaseDuration": "30s",  # at most one write per 10 s
}


def driver_patches(h: Harness) -> list[object]:
    return [c.body for c in h.fake.calls_of("patch", PODS) if c.name == "driver"]


def written(h: Harness) -> dict[str, str] | None:
    annotations = h.fake.get(PODS, "default", "driver")["metadata"].get("annotations") or {}
    text = annotations.get(REGISTERED_EXECUTORS_ANNOTATION)
    return None if text is None else dict(json.loads(text))


def test_a_cluster_mode_driver_writes_its_registered_executors_on_its_pod_only_when_they_change() -> None:
    h = make_harness(CLUSTER_MODE, driver_pod=True)
    h.backend.start()
    h.run(1.0)
    assert written(h) == {}  # at start: "none registered", not "not known"
    assert len(driver_patches(h)) == 1
    for pod in h.executor_pods():
        h.set_phase(pod["metadata"]["name"], "Running")
    h.run(30.0)
    assert len(driver_patches(h)) == 1  # pods run, nothing registered: no request
    h.driver.registered.update({"1": START + 31, "2": START + 31.5})
    h.run(1.0)
    assert list(written(h) or {}) == ["1", "2"]
    h.driver.registered["3"] = START + 33
    h.run(5.0)
    assert list(written(h) or {}) == ["1", "2"]  # held: within 10 s of the last write
    h.run(5.0)
    assert list(written(h) or {}) == ["1", "2", "3"]
    h.run(60.0)
    assert len(driver_patches(h)) == 3
    annotations = h.fake.get(PODS, "default", "driver")["metadata"]["annotations"]
    assert REGISTERED_EXECUTORS_AS_OF_ANNOTATION in annotations
    h.backend.stop()


def test_client_mode_and_driverless_backends_never_patch_a_pod_for_registrations() -> None:
    client = make_harness()
    client.driver.registered["1"] = START
    driverless = make_harness(CLUSTER_MODE, driver=False, driver_pod=True)
    for h in (client, driverless):
        h.backend.start()
        h.run(30.0)
        assert h.fake.calls_of("patch", PODS) == []
        h.backend.stop()
    assert written(driverless) is None


def activity_on(obj: dict[str, Any]) -> Activity | None:
    return executor_activity(obj)


def test_a_cluster_mode_driver_publishes_its_targets_and_markers_with_its_registrations() -> None:
    h = make_harness(CLUSTER_MODE, driver_pod=True)
    h.backend.start()
    h.run(1.0)
    assert len(driver_patches(h)) == 1  # the start's write holds the first target already
    first = activity_on(h.fake.get(PODS, "default", "driver"))
    assert first is not None and (first.pod_name_prefix, first.started_at) == ("test-app", START)
    assert [n for _, n in first.target] == [3] and first.markers == ()
    h.run(30.0)
    h.backend.kill_executors(["2"])  # no registration changed: the marker alone is news
    h.backend.request_total_executors({0: 2})
    h.run(1.0)
    assert len(driver_patches(h)) == 2  # one patch for both, no request of its own
    activity = activity_on(h.fake.get(PODS, "default", "driver"))
    assert activity is not None
    assert [n for _, n in activity.target] == [3, 2]
    assert [(kind, text) for _, kind, text in activity.markers] == [("kill", "the driver killed executors 2")]
    h.run(60.0)
    assert len(driver_patches(h)) == 2  # nothing new: nothing written
    h.backend.stop()


def test_a_client_mode_driver_publishes_them_in_each_lease_renewal_and_no_more_requests() -> None:
    h = make_harness({"spark.kubernetes.driver.heartbeat.leaseDuration": "30s"})
    h.backend.start()
    h.run(1.0)
    h.backend.decommission_executors(["1"])
    h.run(10.0)  # one renewal
    lease = h.fake.get(LEASES, "default", HEARTBEAT_LEASE)
    activity = activity_on(lease)
    assert activity is not None and activity.pod_name_prefix == "test-app"
    assert [kind for _, kind, _ in activity.markers] == ["decommission"]
    assert [n for _, n in activity.target] == [3]
    assert len(h.fake.calls_of("patch", LEASES)) == 1  # the renewal's own patch carries it
    h.backend.stop()


def test_the_published_activity_is_bounded_and_says_what_it_left_out() -> None:
    markers = [(START + i, "api-error", "x" * 5000) for i in range(100)]
    target = [(START + i, i) for i in range(100)]
    text = activity_annotation("pi", START, target, markers)
    assert len(text) < 6000  # a few KiB whatever the run's length
    activity = executor_activity({"metadata": {"annotations": {ACTIVITY_ANNOTATION: text}}})
    assert activity is not None
    assert [n for _, n in activity.target] == list(range(100 - KEPT, 100))
    assert len(activity.markers) == KEPT and all(len(m[2]) == TEXT_LIMIT for m in activity.markers)
    assert activity.dropped_target and activity.dropped_markers
    short = executor_activity(
        {"metadata": {"annotations": {ACTIVITY_ANNOTATION: activity_annotation("pi", START, [], [])}}}
    )
    assert short == Activity("pi", START)
    assert executor_activity({"metadata": {"annotations": {ACTIVITY_ANNOTATION: "{not json"}}}) is None
