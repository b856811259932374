"""Contract: a driver's heartbeat Lease (coordination.k8s.io/v1) is created, read, renewed and deleted
through the port, as :mod:`k8s_backend.backend.heartbeat` does, whatever the adapter."""

from __future__ import annotations

import contextlib

import pytest
from contract_objects import NS

from k8s_backend.kube.leases import heartbeat_lease, lease_expiry, micro_time, parse_time
from k8s_backend.kube.port import LEASES, KubernetesApi, NotFoundError

NAME = "spark-contract-driver-heartbeat"
NOW = 1_800_000_000.25


def test_a_heartbeat_lease_is_created_read_renewed_and_deleted(api: KubernetesApi) -> None:
    with contextlib.suppress(NotFoundError):  # the real target's reset does not empty Leases
        api.delete(LEASES, NS, NAME)
    try:
        created = api.create(
            LEASES, NS, heartbeat_lease(NAME, NS, "spark-contract", holder="host/1", duration=60, now=NOW)
        )
        assert created["kind"] == "Lease"
        assert created["apiVersion"] == "coordination.k8s.io/v1"
        fetched = api.get(LEASES, NS, NAME)
        assert fetched["metadata"]["labels"] == {"spark-app-selector": "spark-contract"}
        assert fetched["spec"]["holderIdentity"] == "host/1"
        assert parse_time(fetched["spec"]["renewTime"]) == NOW  # MicroTime keeps the microseconds
        assert lease_expiry(fetched) == NOW + 60
        listed = api.list(LEASES, NS, label_selector="spark-app-selector=spark-contract").items
        assert [lease["metadata"]["name"] for lease in listed] == [NAME]
        renewed = api.patch(LEASES, NS, NAME, {"spec": {"renewTime": micro_time(NOW + 20)}})
        assert parse_time(renewed["spec"]["renewTime"]) == NOW + 20
        assert renewed["spec"]["acquireTime"] == fetched["spec"]["acquireTime"]
    finally:
        with contextlib.suppress(NotFoundError):
            api.delete(LEASES, NS, NAME)
    with pytest.raises(NotFoundError):
        api.get(LEASES, NS, NAME)
