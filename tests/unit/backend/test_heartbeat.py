"""The client-mode driver's heartbeat Lease: created at start, renewed on time, deleted at stop."""

from __future__ import annotations

import logging

import pytest
from backend_harness import (
    APP_ID,
    BASE_CONF,
    HEARTBEAT_LEASE,
    START,
    Harness,
    RecordingDriver,
    create_backend,
    make_harness,
    make_heartbeat,
)

from k8s_backend.backend.heartbeat import DriverHeartbeat
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.labels import HEARTBEAT_LEASE_ANNOTATION
from k8s_backend.kube.leases import heartbeat_lease_name, lease_expiry, micro_time, parse_time
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS
from k8s_backend.testing import FakeKubernetes

LEASE = HEARTBEAT_LEASE


def heartbeat(duration: float = 60.0) -> tuple[DriverHeartbeat, FakeKubernetes, DeterministicScheduler]:
    return make_heartbeat(duration)


def renew_time(fake: FakeKubernetes) -> float | None:
    return parse_time(fake.get(LEASES, "default", LEASE)["spec"]["renewTime"])


def test_start_creates_the_lease_with_holder_duration_and_micro_times() -> None:
    beat, fake, _ = heartbeat()
    beat.start()
    lease = fake.get(LEASES, "default", LEASE)
    assert lease["metadata"]["labels"] == {"spark-app-selector": APP_ID}
    spec = lease["spec"]
    assert spec["holderIdentity"] == "host/123"
    assert spec["leaseDurationSeconds"] == 60
    assert spec["acquireTime"] == spec["renewTime"] == micro_time(START) == "2023-11-14T22:13:20.000000Z"
    assert lease_expiry(lease) == START + 60


def test_the_lease_is_renewed_every_third_of_its_duration() -> None:
    beat, fake, scheduler = heartbeat(duration=30)
    beat.start()
    scheduler.advance(9.9)
    assert renew_time(fake) == START
    scheduler.advance(0.1)
    assert renew_time(fake) == START + 10
    scheduler.advance(20)
    assert renew_time(fake) == START + 30
    assert beat.renewals == 3


def test_a_failed_renewal_is_logged_and_retried_at_the_next_tick(caplog: pytest.LogCaptureFixture) -> None:
    beat, fake, scheduler = heartbeat(duration=30)
    beat.start()
    fake.fail_next("patch", LEASES, status=500)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.backend.heartbeat"):
        scheduler.advance(10)  # must not raise
    assert renew_time(fake) == START
    assert beat.failed_renewals == 1
    assert f"Could not renew heartbeat lease default/{LEASE} (retried in 10s)" in caplog.text
    scheduler.advance(10)
    assert renew_time(fake) == START + 20


def test_a_deleted_lease_is_created_again_at_the_next_renewal() -> None:
    beat, fake, scheduler = heartbeat(duration=30)
    beat.start()
    fake.delete(LEASES, "default", LEASE)
    scheduler.advance(10)
    assert renew_time(fake) == START + 10


def test_a_lease_left_by_an_earlier_driver_is_taken_over() -> None:
    beat, fake, _ = heartbeat()
    old = {"metadata": {"name": LEASE}, "spec": {"holderIdentity": "old/1", "renewTime": None}}
    fake.create(LEASES, "default", old)
    beat.start()
    assert fake.get(LEASES, "default", LEASE)["spec"]["holderIdentity"] == "host/123"
    assert renew_time(fake) == START


def test_a_failed_creation_fails_the_start() -> None:
    beat, fake, scheduler = heartbeat()
    fake.fail_next("create", LEASES, status=403, message="forbidden")
    with pytest.raises(Exception, match="forbidden"):
        beat.start()
    assert scheduler.pending() == 0


def test_delete_stops_renewing_and_tolerates_a_lease_already_gone() -> None:
    beat, fake, scheduler = heartbeat()
    beat.start()
    beat.delete()
    assert fake.objects(LEASES) == []
    scheduler.advance(60)
    assert fake.objects(LEASES) == []  # a renewal after stop must not create it again
    beat.delete()


def test_the_lease_name_is_a_dns_subdomain_for_any_app_id() -> None:
    assert heartbeat_lease_name("spark-0a1b") == "spark-0a1b-driver-heartbeat"
    odd = heartbeat_lease_name("App_ID.1 ")
    assert odd.startswith("app-id-1-") and odd.endswith("-driver-heartbeat")
    assert odd != heartbeat_lease_name("app-id-1")
    assert len(heartbeat_lease_name("a" * 300)) == 253


# --- through the backend --------------------------------------------------------------------------


def test_the_backend_creates_the_lease_before_executors_names_it_on_pods_and_deletes_it_at_stop() -> None:
    h = make_harness()
    h.backend.start()
    h.run()
    creates = [c.resource_plural for c in h.fake.calls if c.verb == "create"]
    assert creates.index("leases") < creates.index("pods")
    pods = h.executor_pods()
    assert len(pods) == 3
    assert {p["metadata"]["annotations"][HEARTBEAT_LEASE_ANNOTATION] for p in pods} == {LEASE}
    config_map = h.fake.objects(CONFIG_MAPS, "default")[0]
    assert config_map["metadata"]["annotations"][HEARTBEAT_LEASE_ANNOTATION] == LEASE
    h.run(20)
    assert renew_time(h.fake) == START + 20
    h.backend.stop()
    assert h.fake.objects(LEASES) == []
    deletes = deletes_at_stop(h)
    # The Lease owns the pods: deleted just before them, the collector takes what their delete leaves.
    assert deletes.index(("delete", "leases")) + 1 == deletes.index(("delete_collection", "pods"))


def deletes_at_stop(h: Harness) -> list[tuple[str, str]]:
    """The deletes the fake was sent (by a backend stopped by now), in order."""
    return [(c.verb, c.resource_plural) for c in h.fake.calls if c.verb.startswith("delete")]


def started_and_stopped(conf: dict[str, str]) -> Harness:
    h = make_harness(conf)
    h.backend.start()
    h.run()
    h.backend.stop()
    return h


def test_with_executors_kept_at_stop_the_lease_is_deleted_last() -> None:
    h = started_and_stopped({"spark.kubernetes.executor.deleteOnTermination": "false"})
    assert deletes_at_stop(h)[-1] == ("delete", "leases")
    assert len(h.executor_pods()) == 3


def test_with_a_statefulset_allocator_the_lease_goes_after_the_controllers() -> None:
    # Its pods are the StatefulSet's: deleting the Lease first would only take the ConfigMap that a pod
    # the controller makes meanwhile still needs.
    h = started_and_stopped({"spark.kubernetes.allocation.pods.allocator": "statefulset"})
    deletes = deletes_at_stop(h)
    assert deletes.index(("delete", "leases")) > deletes.index(("delete_collection", "pods"))
    assert deletes[-1] == ("delete", "leases")


def test_the_lease_delete_is_retried_in_the_background_when_it_fails_at_stop() -> None:
    h = make_harness()
    h.backend.start()
    h.run()
    h.fake.fail_next("delete", LEASES, status=503, count=1)
    h.backend.stop()
    h.run(60)
    assert h.fake.objects(LEASES) == []


@pytest.mark.parametrize("mode", ["disabled", "cluster"])
def test_no_lease_in_cluster_mode_or_when_disabled(mode: str) -> None:
    clock = ManualClock(START)
    scheduler = DeterministicScheduler(clock)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    conf = dict(BASE_CONF)
    if mode == "cluster":
        conf["spark.kubernetes.driver.pod.name"] = "driver"
        conf["spark.kubernetes.allocation.driver.readinessTimeout"] = "1s"
        pod = {"metadata": {"name": "driver"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        fake.create(PODS, "default", pod)
    else:
        conf["spark.kubernetes.driver.heartbeat.enabled"] = "false"
    backend = create_backend(conf, api=fake, driver=RecordingDriver(), clock=clock, scheduler=scheduler)
    backend.start()
    scheduler.run_until_idle()
    pods = fake.objects(PODS)
    executors = [p for p in pods if (p["metadata"].get("labels") or {}).get("spark-role") == "executor"]
    assert len(executors) == 3
    annotations = [p["metadata"].get("annotations") or {} for p in executors]
    assert not any(HEARTBEAT_LEASE_ANNOTATION in a for a in annotations)
    assert fake.objects(LEASES) == []
    backend.stop()
    assert not fake.calls_of("create", LEASES)
    assert not fake.calls_of("delete", LEASES)
