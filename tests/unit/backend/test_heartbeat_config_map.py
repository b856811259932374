"""The executor ConfigMap a client-mode driver's heartbeat Lease owns survives a Lease deleted while the
application runs: the fake collects the ConfigMap with the Lease (as the garbage collector would), and the
renewal that creates the Lease again creates the ConfigMap again, owned by the new Lease."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from backend_harness import HEARTBEAT_LEASE, make_harness, make_heartbeat

from k8s_backend.backend.heartbeat import CONFIG_MAP_CHECKS, DriverHeartbeat
from k8s_backend.common import DeterministicScheduler
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, NotFoundError
from k8s_backend.testing import FakeKubernetes

LEASE = HEARTBEAT_LEASE
NAME = "spark-exec-conf"
BODY: dict[str, Any] = {"metadata": {"name": NAME}, "data": {"spark.properties": "a=b"}}


def started(duration: float = 30.0) -> tuple[DriverHeartbeat, FakeKubernetes, DeterministicScheduler]:
    """A started heartbeat whose Lease owns the ConfigMap, created as the start plan creates it."""
    beat, fake, scheduler = make_heartbeat(duration)
    beat.start()
    fake.create(CONFIG_MAPS, "default", beat.own_config_map(BODY))
    fake.reset_calls()
    return beat, fake, scheduler


def owner_uids(fake: FakeKubernetes) -> list[str]:
    config_map = fake.get(CONFIG_MAPS, "default", NAME)
    return [ref["uid"] for ref in config_map["metadata"].get("ownerReferences") or []]


def lease_uid(fake: FakeKubernetes) -> str:
    return str(fake.get(LEASES, "default", LEASE)["metadata"]["uid"])


def test_the_config_map_is_owned_by_the_lease_and_renewals_cost_no_request_for_it() -> None:
    beat, fake, scheduler = started()
    first = lease_uid(fake)
    assert owner_uids(fake) == [first]
    owner = fake.get(CONFIG_MAPS, "default", NAME)["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["apiVersion"], owner["name"]) == ("Lease", "coordination.k8s.io/v1", LEASE)
    assert beat.owns_config_map
    fake.reset_calls()
    scheduler.advance(60)
    assert beat.renewals == 6
    assert [(c.verb, c.resource_plural) for c in fake.calls] == [("patch", "leases")] * 6


def test_a_config_map_collected_with_a_deleted_lease_is_created_again_at_the_next_renewal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, fake, scheduler = started()
    old = lease_uid(fake)
    fake.delete(LEASES, "default", LEASE)  # a bad cleanup while the application runs
    with pytest.raises(NotFoundError):
        fake.get(CONFIG_MAPS, "default", NAME)  # the fake's garbage collector took it with its owner
    with caplog.at_level(logging.WARNING, logger="k8s_backend.backend.heartbeat"):
        scheduler.advance(10)
    new = lease_uid(fake)
    assert new != old
    assert owner_uids(fake) == [new]
    assert fake.get(CONFIG_MAPS, "default", NAME)["data"] == BODY["data"]
    assert f"Executor ConfigMap default/{NAME} was collected with the deleted heartbeat lease" in caplog.text
    fake.reset_calls()
    scheduler.advance(20)  # back on the normal path: renewals only
    assert [(c.verb, c.resource_plural) for c in fake.calls] == [("patch", "leases")] * 2
    fake.delete(LEASES, "default", LEASE)  # the new Lease still collects it (at stop too)
    assert fake.objects(CONFIG_MAPS) == []


def test_a_lease_replaced_between_two_renewals_gets_the_config_map_back_too() -> None:
    _, fake, scheduler = started()
    fake.delete(LEASES, "default", LEASE)
    fake.create(LEASES, "default", {"metadata": {"name": LEASE}, "spec": {}})  # e.g. by another tool
    scheduler.advance(10)  # the renewal's patch succeeds: only the Lease's uid tells
    assert owner_uids(fake) == [lease_uid(fake)]


def test_a_config_map_not_collected_yet_is_created_again_once_the_collector_took_it() -> None:
    _, fake, scheduler = started()
    stale = dict(fake.get(CONFIG_MAPS, "default", NAME))
    fake.delete(LEASES, "default", LEASE)
    # The garbage collector works in the background: the ConfigMap may outlive its owner for a while.
    # The fake keeps a dependent whose owner is already gone.
    fake.create(CONFIG_MAPS, "default", {"metadata": stale["metadata"] | {"resourceVersion": None}})
    old = owner_uids(fake)
    scheduler.advance(10)
    new = lease_uid(fake)
    assert old != [new] and owner_uids(fake) == old  # still the old one: a create conflicted
    assert not fake.calls_of("patch", CONFIG_MAPS)  # create only: what the driver's Role grants
    fake.delete(CONFIG_MAPS, "default", NAME)  # the collector took it
    scheduler.advance(10)
    assert owner_uids(fake) == [new]  # the next renewal's look created it again
    fake.reset_calls()
    scheduler.advance(20)
    assert [(c.verb, c.resource_plural) for c in fake.calls] == [("patch", "leases")] * 2


def test_the_looks_for_a_lingering_config_map_are_bounded() -> None:
    _, fake, scheduler = started()
    stale = dict(fake.get(CONFIG_MAPS, "default", NAME))
    fake.delete(LEASES, "default", LEASE)
    fake.create(CONFIG_MAPS, "default", {"metadata": stale["metadata"] | {"resourceVersion": None}})
    fake.reset_calls()
    scheduler.advance(10 * (CONFIG_MAP_CHECKS + 3))  # an orphan nobody collects
    assert len(fake.calls_of("create", CONFIG_MAPS)) == CONFIG_MAP_CHECKS


def test_a_failed_config_map_creation_is_logged_and_retried_at_the_next_renewal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    beat, fake, scheduler = started()
    fake.delete(LEASES, "default", LEASE)
    fake.fail_next("create", CONFIG_MAPS, status=500)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.backend.heartbeat"):
        scheduler.advance(10)  # must not raise
    assert fake.objects(CONFIG_MAPS) == []
    assert f"Could not create executor ConfigMap default/{NAME} again" in caplog.text
    assert beat.renewals == 1  # the Lease itself was renewed (created again)
    scheduler.advance(10)
    assert owner_uids(fake) == [lease_uid(fake)]


def test_through_the_backend_executors_created_after_a_lease_deletion_find_their_config_map() -> None:
    h = make_harness()
    h.backend.start()
    h.run()
    (config_map,) = h.fake.objects(CONFIG_MAPS, "default")
    name = config_map["metadata"]["name"]
    h.fake.delete(LEASES, "default", LEASE)
    assert h.fake.objects(CONFIG_MAPS, "default") == []
    h.run(20)  # the next renewal (every 20s for the default 60s Lease)
    restored = h.fake.get(CONFIG_MAPS, "default", name)
    assert restored["data"] == config_map["data"]
    assert [r["uid"] for r in restored["metadata"]["ownerReferences"]] == [
        h.fake.get(LEASES, "default", LEASE)["metadata"]["uid"]
    ]
    h.backend.stop()
    assert h.fake.objects(LEASES) == []
    assert h.fake.objects(CONFIG_MAPS) == []  # collected with the new Lease: no delete of its own
    assert not h.fake.calls_of("delete", CONFIG_MAPS)
