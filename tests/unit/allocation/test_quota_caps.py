"""Quota-aware allocation, the pure part: a round's requests capped at what the ResourceQuotas allow."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from k8s_backend.allocation.policy import RequestExecutors
from k8s_backend.allocation.quota import QuotaGate, QuotaView, cap_requests, container_defaults, demand_from
from k8s_backend.allocation.quota_watch import QuotaWatch
from k8s_backend.common import ManualClock
from k8s_backend.kube.port import NotFoundError

MIB = 1024 * 1024
EXECUTOR = demand_from(1408, "1", None)  # 1 GiB heap + 384 MiB overhead, 1 core, no cpu limit


def quota(name: str, hard: dict[str, str], used: dict[str, str] | None = None, **spec: object) -> QuotaView:
    view = QuotaView.of(
        {
            "metadata": {"name": name},
            "spec": {"hard": hard, **spec},
            "status": {"hard": hard, "used": used or {}},
        }
    )
    assert view is not None
    return view


def test_a_round_is_capped_at_what_the_tightest_quota_fits_and_the_block_names_it() -> None:
    quotas = [
        quota("compute", {"requests.memory": "14080Mi", "requests.cpu": "100"}, {"requests.memory": "0"})
    ]
    decision = cap_requests([RequestExecutors(0, 20)], {0: EXECUTOR}, quotas)
    assert [r.count for r in decision.requests] == [10]
    block = decision.block
    assert block is not None and (block.quota, block.resource, block.waiting) == (
        "compute",
        "requests.memory",
        10,
    )
    assert "ResourceQuota compute: requests.memory" in block.describe()


def test_used_room_counts_and_a_full_quota_requests_nothing() -> None:
    full = [quota("pods", {"pods": "10"}, {"pods": "10"})]
    decision = cap_requests([RequestExecutors(0, 5)], {0: EXECUTOR}, full)
    assert decision.requests == () and decision.block is not None and decision.block.waiting == 5
    room = [quota("pods", {"pods": "10"}, {"pods": "7"})]
    assert [r.count for r in cap_requests([RequestExecutors(0, 5)], {0: EXECUTOR}, room).requests] == [3]


def test_requests_that_fit_are_untouched_and_unrelated_resources_cap_nothing() -> None:
    quotas = [quota("storage", {"requests.storage": "1Gi", "services": "1"}), quota("big", {"memory": "1Ti"})]
    decision = cap_requests([RequestExecutors(0, 5, target=5)], {0: EXECUTOR}, quotas)
    assert decision.requests == (RequestExecutors(0, 5, target=5),) and decision.block is None


def test_earlier_profiles_use_the_room_first() -> None:
    quotas = [quota("pods", {"count/pods": "4"})]
    decision = cap_requests(
        [RequestExecutors(0, 3), RequestExecutors(1, 3)], {0: EXECUTOR, 1: EXECUTOR}, quotas
    )
    assert [(r.rp_id, r.count) for r in decision.requests] == [(0, 3), (1, 1)]


def test_limits_count_only_when_the_pod_or_a_limit_range_sets_them() -> None:
    quotas = [quota("limits", {"limits.cpu": "2"})]
    assert cap_requests([RequestExecutors(0, 5)], {0: EXECUTOR}, quotas).block is None
    with_limit = demand_from(1408, "1", "1")
    assert [r.count for r in cap_requests([RequestExecutors(0, 5)], {0: with_limit}, quotas).requests] == [2]
    ranges = [{"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "1Gi"}}]}}]
    assert container_defaults(ranges) == {"cpu": Decimal("0.5"), "memory": Decimal(1024 * MIB)}


def test_scoped_quotas_are_not_modelled() -> None:
    obj = {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}}
    assert QuotaView.of(obj) is None


class _NoQuotaKind:
    """An API server that serves no ResourceQuota kind (as k8s_backend's embedded one): every list is 404."""

    def __init__(self) -> None:
        self.lists = 0

    def list(self, resource: object, namespace: str) -> object:  # the one call QuotaWatch makes first
        self.lists += 1
        raise NotFoundError("the server could not find the requested resource")


def test_a_server_without_resourcequotas_caps_nothing_and_is_asked_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = _NoQuotaKind()
    view = QuotaWatch(api, "ns", ManualClock(0.0))  # type: ignore[arg-type]
    gate = QuotaGate(view, lambda profile: pytest.fail("no demand without quotas"))
    requests = (RequestExecutors(0, 3),)
    with caplog.at_level(logging.INFO, logger="k8s_backend.allocation.quota"):
        assert gate.cap(requests, {}) == requests
        assert gate.cap(requests, {}) == requests
    assert api.lists == 1, "one failed list, then nothing"
    assert gate.unserved
    assert not view.quotas.alive and not view.limit_ranges.alive and view.watches == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
