"""Quota-aware allocation's watch-backed view (in-memory API, manual clock): the view's update rules, and
the gate reading it: two lists at the first round, none after; a quota status change seen through the
watch resumes allocation; the gate's own creates count until the view shows them; a create refused over
quota has the quotas listed again; the watches end with the gate."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from k8s_backend.allocation.creator import Creation
from k8s_backend.allocation.policy import RequestExecutors
from k8s_backend.allocation.quota import (
    QuotaGate,
    QuotaView,
    UnseenCreate,
    demand_from,
    refused_over_quota,
    still_unseen,
    with_unseen,
)
from k8s_backend.allocation.quota_watch import LIMIT_RANGES, RESOURCE_QUOTAS, ObjectsReflector, QuotaWatch
from k8s_backend.common import ManualClock
from k8s_backend.conf.model import ResourceProfile
from k8s_backend.kube.port import PODS, WatchEvent
from k8s_backend.testing import FakeKubernetes

NS = "ns"
EXECUTOR = demand_from(1408, "1", None)
PROFILES = {0: ResourceProfile()}


def fake_with_quota(hard_pods: int, used_pods: int) -> FakeKubernetes:
    fake = FakeKubernetes(clock=ManualClock(0.0), watch_blocking=False, namespaces=[NS])
    fake.create(
        RESOURCE_QUOTAS, NS, {"metadata": {"name": "team"}, "spec": {"hard": {"pods": str(hard_pods)}}}
    )
    set_used(fake, used_pods, hard_pods)
    return fake


def set_used(fake: FakeKubernetes, used_pods: int, hard_pods: int) -> None:
    """What the API server's quota admission and controller write."""
    fake.patch_status(
        RESOURCE_QUOTAS, NS, "team", {"hard": {"pods": str(hard_pods)}, "used": {"pods": str(used_pods)}}
    )


def driven_gate(fake: FakeKubernetes) -> tuple[QuotaGate, QuotaWatch]:
    """A gate whose view's watches run only when the test calls run_once (no thread)."""
    view = QuotaWatch(fake, NS, ManualClock(0.0), starter=lambda reflector: None)
    return QuotaGate(view, lambda profile: EXECUTOR), view


def counts(gate: QuotaGate, want: int) -> list[int]:
    return [r.count for r in gate.cap([RequestExecutors(0, want)], PROFILES)]


def quota_lists(fake: FakeKubernetes) -> int:
    return len(fake.calls_of("list", RESOURCE_QUOTAS)) + len(fake.calls_of("list", LIMIT_RANGES))


def quota_object(name: str, version: str, used: str = "0") -> dict[str, object]:
    return {
        "metadata": {"name": name, "resourceVersion": version},
        "spec": {"hard": {"pods": "10"}},
        "status": {"hard": {"pods": "10"}, "used": {"pods": used}},
    }


# -- the view's update rules ----------------------------------------------------------------------------


def test_events_apply_in_order_and_an_event_older_than_a_relist_is_skipped() -> None:
    fake = fake_with_quota(10, 0)
    reflector = ObjectsReflector(fake, RESOURCE_QUOTAS, NS, ManualClock(0.0))
    reflector.relist()
    listed = reflector.version
    assert listed is not None and [o["metadata"]["name"] for o in reflector.objects()] == ["team"]
    reflector.apply(WatchEvent("MODIFIED", quota_object("team", str(listed - 1), used="9")))
    assert reflector.objects()[0]["status"]["used"] == {"pods": "0"}, "older than the list: skipped"
    reflector.apply(WatchEvent("MODIFIED", quota_object("team", str(listed + 1), used="4")))
    assert reflector.objects()[0]["status"]["used"] == {"pods": "4"} and reflector.version == listed + 1
    reflector.apply(WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": str(listed + 5)}}))
    assert reflector.version == listed + 5 and reflector.events == 1, "a bookmark moves only the version"
    reflector.apply(WatchEvent("DELETED", quota_object("team", str(listed + 6))))
    assert reflector.objects() == []
    reflector.apply(WatchEvent("ADDED", quota_object("other", "not-a-number")))
    assert len(reflector.objects()) == 1, "a version that cannot be compared is applied, not dropped"


def test_the_watch_follows_status_updates_and_relists_after_410_gone() -> None:
    fake = fake_with_quota(10, 0)
    reflector = ObjectsReflector(fake, RESOURCE_QUOTAS, NS, ManualClock(0.0), rng=lambda: 0.0)
    assert reflector.run_once() == 0.0 and reflector.lists == 1  # lists, then watches from there
    set_used(fake, 3, 10)
    assert reflector.run_once() == 0.0
    assert reflector.objects()[0]["status"]["used"] == {"pods": "3"} and reflector.lists == 1
    set_used(fake, 5, 10)
    fake.compact()  # the version the reflector holds is gone: 410
    assert reflector.run_once() == 0.0, "re-list at once"
    assert reflector.run_once() == 0.0 and reflector.lists == 2
    assert reflector.objects()[0]["status"]["used"] == {"pods": "5"}


def test_a_failed_watch_backs_off_and_a_refused_watch_is_said_once() -> None:
    fake = fake_with_quota(10, 0)
    reflector = ObjectsReflector(fake, RESOURCE_QUOTAS, NS, ManualClock(0.0), rng=lambda: 1.0)
    reflector.relist()
    fake.fail_next("watch", RESOURCE_QUOTAS, status=503)
    assert reflector.run_once() > 0 and reflector.last_error is not None
    fake.fail_next("watch", RESOURCE_QUOTAS, status=403, message="cannot watch resourcequotas")
    reflector.run_once()
    assert reflector.forbidden is not None and "cannot watch" in reflector.forbidden


def test_unseen_creates_count_until_the_view_reaches_their_version() -> None:
    creates = [UnseenCreate(100, 90, 1, EXECUTOR), UnseenCreate(None, 90, 1, EXECUTOR)]
    assert still_unseen(creates, None) == creates
    assert still_unseen(creates, 90) == creates
    assert still_unseen(creates, 99) == creates[:1], "the view moved: it counts the pod of unknown version"
    assert still_unseen(creates, 100) == []
    assert still_unseen([UnseenCreate(None, None, 1, EXECUTOR)], 5) == []
    view = QuotaView("team", {"pods": 10, "requests.memory": 1}, {"pods": 4})  # type: ignore[dict-item]
    (counted,) = with_unseen([view], creates)
    assert counted.used["pods"] == 6 and counted.used["requests.memory"] == 2 * EXECUTOR.memory_request


def test_only_a_403_exceeded_quota_is_a_refusal_over_quota() -> None:
    assert refused_over_quota(
        Creation(False, '403 Forbidden: pods "x" is forbidden: exceeded quota: q', status=403)
    )
    assert not refused_over_quota(Creation(False, "403 Forbidden: cannot create pods", status=403))
    assert not refused_over_quota(Creation(False, "exceeded quota", status=500))


# -- the gate on the view ---------------------------------------------------------------------------------


def test_the_first_round_lists_and_later_rounds_send_nothing() -> None:
    fake = fake_with_quota(10, 0)
    gate, view = driven_gate(fake)
    for _ in range(5):
        assert counts(gate, 1) == [1]
        view.quotas.run_once()
        view.limit_ranges.run_once()
    assert quota_lists(fake) == 2, "one list of each kind, then the watches"
    assert gate.status()["lists"] == 2 and gate.status()["watches"] == 10


def test_without_a_quota_the_limit_ranges_are_not_read_until_one_appears() -> None:
    fake = FakeKubernetes(clock=ManualClock(0.0), watch_blocking=False, namespaces=[NS])
    gate, view = driven_gate(fake)
    assert counts(gate, 3) == [3]
    view.quotas.run_once()
    assert counts(gate, 3) == [3]
    assert not fake.calls_of("list", LIMIT_RANGES) and len(fake.calls_of("list", RESOURCE_QUOTAS)) == 1
    fake.create(RESOURCE_QUOTAS, NS, {"metadata": {"name": "team"}, "spec": {"hard": {"pods": "2"}}})
    set_used(fake, 0, 2)
    view.quotas.run_once()
    assert counts(gate, 3) == [2], "the quota came through the watch"
    assert len(fake.calls_of("list", LIMIT_RANGES)) == 1 and len(fake.calls_of("list", RESOURCE_QUOTAS)) == 1


def test_a_quota_status_change_seen_through_the_watch_resumes_allocation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = fake_with_quota(10, 10)
    gate, view = driven_gate(fake)
    with caplog.at_level(logging.INFO, logger="k8s_backend.allocation.quota"):
        assert counts(gate, 5) == []
        assert gate.status()["waiting_for"] == (
            "ResourceQuota team: pods hard 10, used 10, an executor pod needs 1"
        )
        set_used(fake, 7, 10)  # another application's pods ended
        assert counts(gate, 5) == [], "the watch has not brought it yet"
        view.quotas.run_once()
        assert counts(gate, 5) == [3]
    assert gate.status()["waiting_for"] is not None, "3 of the 5 still wait"
    assert sum("Allocation waits for quota" in r.getMessage() for r in caplog.records) == 1
    set_used(fake, 0, 10)
    view.quotas.run_once()
    with caplog.at_level(logging.INFO, logger="k8s_backend.allocation.quota"):
        assert counts(gate, 5) == [5]
    assert any("allocation resumes" in r.getMessage() for r in caplog.records)
    assert quota_lists(fake) == 2


def created(fake: FakeKubernetes, n: int, first: int = 1) -> list[Creation]:
    """Create n pods as the allocator would, with what it learns of each create."""
    creations = []
    for i in range(first, first + n):
        pod = fake.create(
            PODS,
            NS,
            {"metadata": {"name": f"exec-{i}"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        )
        creations.append(Creation(True, resource_version=int(pod["metadata"]["resourceVersion"])))
    return creations


def test_the_gates_own_creates_count_until_the_view_shows_them() -> None:
    fake = fake_with_quota(10, 0)
    gate, view = driven_gate(fake)
    assert counts(gate, 6) == [6]
    gate.created(0, created(fake, 6))
    assert counts(gate, 6) == [4], "the quota's used has not come through the watch: count them"
    assert gate.status()["unseen_creates"] == 6
    assert gate.status()["waiting_for"] == (
        "ResourceQuota team: pods hard 10, used 0 (+6 by pods created since its status), "
        "an executor pod needs 1"
    )
    set_used(fake, 6, 10)  # the admission raised used before storing each pod; the view now has it
    view.quotas.run_once()
    assert counts(gate, 6) == [4] and gate.status()["unseen_creates"] == 0, "counted once, not twice"


def test_a_create_refused_over_quota_has_the_quotas_listed_again(caplog: pytest.LogCaptureFixture) -> None:
    fake = fake_with_quota(10, 0)
    gate, _ = driven_gate(fake)
    assert counts(gate, 4) == [4]
    set_used(fake, 10, 10)  # another client took the room; the watch is behind
    refusal = Creation(
        False, "403 Forbidden: exceeded quota: team, used: pods=10, limited: pods=10", status=403
    )
    with caplog.at_level(logging.INFO, logger="k8s_backend.allocation.quota"):
        gate.created(0, [refusal, refusal])
    assert sum("refused over quota" in r.getMessage() for r in caplog.records) == 1
    assert counts(gate, 4) == [], "the admission is the judge: the relisted view is full"
    assert len(fake.calls_of("list", RESOURCE_QUOTAS)) == 2 and gate.status()["refreshes"] == 1
    assert counts(gate, 4) == [] and len(fake.calls_of("list", RESOURCE_QUOTAS)) == 2, "once per refusal"


def test_a_refused_list_is_one_warning_and_no_cap_and_a_refused_watch_lists_every_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = fake_with_quota(1, 1)
    fake.fail_next("list", RESOURCE_QUOTAS, status=403, message="cannot list resourcequotas")
    gate, view = driven_gate(fake)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.allocation.quota"):
        assert counts(gate, 3) == [3]
        assert counts(gate, 3) == [3]
    assert len(caplog.records) == 1 and "list and watch on resourcequotas" in caplog.records[0].getMessage()
    assert gate.forbidden is not None and len(fake.calls_of("list", RESOURCE_QUOTAS)) == 1
    fake = fake_with_quota(10, 0)
    fake.fail_next("watch", RESOURCE_QUOTAS, status=403, message="cannot watch resourcequotas")
    gate, view = driven_gate(fake)
    assert counts(gate, 3) == [3]
    view.quotas.run_once()
    set_used(fake, 9, 10)
    assert counts(gate, 3) == [1], "no watch: the quotas are listed at the round instead"
    assert len(fake.calls_of("list", RESOURCE_QUOTAS)) == 2


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Wait for the watches' threads (a condition polled, with a bound for a loaded machine)."""
    deadline = time.monotonic() + timeout
    idle = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        idle.wait(0.01)


def test_the_watches_run_on_threads_until_the_gate_stops() -> None:
    fake = FakeKubernetes(clock=ManualClock(0.0), namespaces=[NS])  # blocking watches, as a real server's
    fake.create(RESOURCE_QUOTAS, NS, {"metadata": {"name": "team"}, "spec": {"hard": {"pods": "10"}}})
    set_used(fake, 10, 10)
    gate = QuotaGate(QuotaWatch(fake, NS, ManualClock(0.0)), lambda profile: EXECUTOR)
    assert counts(gate, 2) == []
    wait_until(lambda: fake.open_watches() == 2 and gate.status()["watching"] is True, "two open watches")
    set_used(fake, 8, 10)
    wait_until(lambda: counts(gate, 2) == [2], "the freed room, through the watch")
    threads = {t.name for t in threading.enumerate()}
    assert {"k8s-resourcequotas-watch", "k8s-limitranges-watch"} <= threads
    gate.stop()
    assert gate.status()["watching"] is False and fake.open_watches() == 0
    assert not {"k8s-resourcequotas-watch", "k8s-limitranges-watch"} & {t.name for t in threading.enumerate()}
    assert quota_lists(fake) == 2
