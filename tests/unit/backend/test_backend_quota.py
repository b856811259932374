"""Quota-aware allocation through the whole backend (in-memory API, manual clock): a round is capped at
what the namespace's ResourceQuota fits, one warning names the quota and resource, and allocation
resumes when the quota frees."""

from __future__ import annotations

import logging

import pytest
from backend_harness import Harness, make_harness

from k8s_backend.allocation.quota_watch import RESOURCE_QUOTAS


def set_quota(h: Harness, pods_used: int, *, create: bool = False, hard_pods: int | None = None) -> None:
    current = h.fake.objects(RESOURCE_QUOTAS, "default")  # not a call: the calls are the backend's
    pods = hard_pods or (int(current[0]["status"]["hard"]["pods"]) if current and not create else 3)
    hard = {"pods": str(pods), "requests.memory": "100Gi"}
    if hard_pods is not None:
        h.fake.patch(RESOURCE_QUOTAS, "default", "team", {"spec": {"hard": hard}})
    if create:
        h.fake.create(RESOURCE_QUOTAS, "default", {"metadata": {"name": "team"}, "spec": {"hard": hard}})
    h.fake.patch_status(RESOURCE_QUOTAS, "default", "team", {"hard": hard, "used": {"pods": str(pods_used)}})


def admitted(h: Harness, others: int, seconds: float) -> None:
    """Run, keeping the quota's usage as the API server's quota admission does: others' pods plus ours."""
    for _ in range(int(seconds / 0.5)):
        set_quota(h, others + len(h.executor_pods()))
        h.run(0.5)


def test_allocation_waits_for_quota_once_and_resumes_when_it_frees(caplog: pytest.LogCaptureFixture) -> None:
    h = make_harness({"spark.executor.instances": "5"})
    set_quota(h, 1, create=True)  # another application's pod uses one of 3
    with caplog.at_level(logging.INFO):
        h.backend.start()
        admitted(h, 1, 10.0)
        assert len(h.executor_pods()) == 2
        waits = [r for r in caplog.records if "Allocation waits for quota" in r.getMessage()]
        assert len(waits) == 1, "said once, not every round"
        assert "ResourceQuota team: pods hard 3, used 1" in waits[0].getMessage()
        assert "waiting_for" in h.backend.status()["allocator"]["quota"]
        admitted(h, 0, 5.0)  # the other application's pod is gone: room for one more
        assert len(h.executor_pods()) == 3
        set_quota(h, 0, hard_pods=10)  # the operator raised the quota
        admitted(h, 0, 5.0)
    assert len(h.executor_pods()) == 5
    assert any("allocation resumes" in r.getMessage() for r in caplog.records)
    quota = h.backend.status()["allocator"]["quota"]
    assert quota["waiting_for"] is None
    # Every round read the watched view: one list of each kind in 20 s of rounds, the rest came by watch.
    assert len(h.fake.calls_of("list", RESOURCE_QUOTAS)) == 1 and quota["lists"] == 2
    assert quota["events"] > 0
    h.backend.stop()
    assert h.backend.status()["allocator"]["quota"]["watching"] is False


def test_off_no_quota_is_read() -> None:
    h = make_harness({"spark.executor.instances": "5", "spark.kubernetes.allocation.quotaAware": "false"})
    set_quota(h, 3, create=True)
    h.fake.reset_calls()
    h.backend.start()
    h.run(3.0)
    assert len(h.executor_pods()) == 5
    assert not [c for c in h.fake.calls if c.resource_plural == "resourcequotas" and c.verb == "list"]
