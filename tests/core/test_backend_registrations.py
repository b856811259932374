"""A cluster-mode backend (``spark.kubernetes.driver.pod.name``) with a driver attached writes the driver's
registered executors on the driver pod for ``k8s-backend status``: once at start, then when they change, at
most once per heartbeat renewal interval; a client-mode one tells them in its Lease and never patches a pod
for them; a backend without a driver writes nothing."""

from __future__ import annotations

import json

from backend_harness import START, Harness, make_harness

from k8s_backend.kube.leases import REGISTERED_EXECUTORS_ANNOTATION, REGISTERED_EXECUTORS_AS_OF_ANNOTATION
from k8s_backend.kube.port import PODS

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
