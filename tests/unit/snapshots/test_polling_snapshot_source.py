"""ExecutorPodsPollingSnapshotSource: the periodic full resync (ExecutorPodsPollingSnapshotSourceSuite). Its
polls here are lists (what a server without streaming lists gets); test_polling_streaming_list.py has the
streaming list."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pytest_mock import MockerFixture
from snapshot_pods import APP_ID, executor_pod

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.backoff import MAX_DELAY
from k8s_backend.kube.port import PODS, ObjectList
from k8s_backend.snapshots.polling_source import ExecutorPodsPollingSnapshotSource
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes

NS = "default"
SELECTOR = f"spark-app-selector={APP_ID},spark-role=executor,spark-exec-inactive!=true"
INTERVAL = 30.0


class World:
    def __init__(
        self, *, enabled: bool = True, cached_reads: bool = False, streaming_list: bool = False
    ) -> None:
        self.clock = ManualClock(1000.0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.fake = FakeKubernetes(clock=self.clock, watch_blocking=False)
        self.store = ExecutorPodsSnapshotsStore(self.scheduler, self.clock)
        self.source = ExecutorPodsPollingSnapshotSource(
            self.fake,
            self.store,
            self.scheduler,
            namespace=NS,
            interval=INTERVAL,
            enabled=enabled,
            cached_reads=cached_reads,
            streaming_list=streaming_list,
        )

    def create(self, exec_id: int, app_id: str = APP_ID, labels: dict[str, str] | None = None) -> None:
        self.fake.create(PODS, NS, executor_pod(exec_id, "Pending", app_id=app_id, labels=labels))

    def lists(self) -> int:
        return len(self.fake.calls_of("list", PODS))

    def streams(self) -> int:
        return len(self.fake.calls_of("watch", PODS))

    def ids(self) -> set[int]:
        return set(self.store.current().pods)


def test_first_poll_happens_after_one_interval_then_every_interval() -> None:
    world = World()
    world.create(1)
    world.source.start(APP_ID)
    world.scheduler.run_until_idle()
    world.scheduler.advance(INTERVAL - 0.001)
    assert world.lists() == 0
    world.scheduler.advance(0.001)
    assert world.lists() == 1
    world.scheduler.advance(2 * INTERVAL)
    assert world.lists() == 3
    assert world.source.polls == 3


def test_a_poll_replaces_the_snapshot_with_the_apps_active_executors(mocker: MockerFixture) -> None:
    world = World()
    world.create(1)
    world.create(2)
    world.create(3, app_id="other-app")
    world.create(4, labels={"spark-exec-inactive": "true"})
    replace = mocker.spy(world.store, "replace_snapshot")
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)
    (call,) = world.fake.calls_of("list", PODS)
    assert (call.namespace, call.label_selector) == (NS, SELECTOR)
    replace.assert_called_once()
    items, version = replace.call_args.args
    assert sorted(p["metadata"]["labels"]["spark-exec-id"] for p in items) == ["1", "2"]
    assert version == world.fake.resource_version
    assert world.ids() == {1, 2}
    assert world.store.current().full_snapshot_ts == 1000.0 + INTERVAL


def test_a_poll_drops_pods_that_vanished() -> None:
    world = World()
    world.create(1)
    world.create(2)
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)
    world.fake.delete(PODS, NS, "spark-app-id-exec-1")
    world.scheduler.advance(INTERVAL)
    assert world.ids() == {2}


def test_disabled_polling_makes_no_call_and_schedules_nothing() -> None:
    world = World(enabled=False)
    world.source.start(APP_ID)
    assert world.scheduler.pending() == 0
    world.scheduler.advance(10 * INTERVAL)
    assert world.fake.calls == []


def test_start_twice_is_refused() -> None:
    world = World()
    world.source.start(APP_ID)
    with pytest.raises(RuntimeError, match="already started"):
        world.source.start(APP_ID)


def test_stop_cancels_the_polls() -> None:
    world = World()
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)
    world.source.stop()
    world.scheduler.advance(5 * INTERVAL)
    assert world.lists() == 1


@pytest.mark.parametrize(("cached_reads", "expected"), [(True, "0"), (False, None)])
def test_cached_reads_list_with_resource_version_zero(
    cached_reads: bool, expected: str | None, mocker: MockerFixture
) -> None:
    world = World(cached_reads=cached_reads)
    listing = mocker.spy(world.fake, "list")
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)
    assert listing.call_args.kwargs["resource_version"] == expected


def stale_list_after_first(world: World, mocker: MockerFixture, stale_version: str) -> Any:
    """Make every list after the first answer an old, different view at ``stale_version``."""
    real_list = world.fake.list
    calls = 0

    def listing(*args: Any, **kwargs: Any) -> ObjectList:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_list(*args, **kwargs)
        return ObjectList([executor_pod(99, "Pending")], stale_version)

    return mocker.patch.object(world.fake, "list", side_effect=listing)


def test_cached_reads_ignore_a_list_older_than_the_last_one(mocker: MockerFixture) -> None:
    world = World(cached_reads=True)
    world.create(1)
    world.create(2)
    first_rv = int(world.fake.resource_version)
    stale_list_after_first(world, mocker, str(first_rv - 1))
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)
    assert world.ids() == {1, 2}
    world.scheduler.advance(INTERVAL)
    # A lagging API server replica answered from an older cache: the view must not move backwards.
    assert world.ids() == {1, 2}
    assert world.store.current().full_snapshot_ts == 1000.0 + INTERVAL


def test_cached_reads_accept_a_list_at_the_same_version(mocker: MockerFixture) -> None:
    world = World(cached_reads=True)
    world.create(1)
    stale_list_after_first(world, mocker, world.fake.resource_version)
    world.source.start(APP_ID)
    world.scheduler.advance(2 * INTERVAL)
    assert world.ids() == {99}


def test_quorum_reads_apply_every_list(mocker: MockerFixture) -> None:
    world = World(cached_reads=False)
    world.create(1)
    world.create(2)
    stale_list_after_first(world, mocker, "1")
    world.source.start(APP_ID)
    world.scheduler.advance(2 * INTERVAL)
    assert world.source.polls == 2
    assert 99 in world.ids()
    assert world.store.current().full_snapshot_ts == 1000.0 + 2 * INTERVAL


def test_a_failed_poll_is_retried_after_the_short_backoff(caplog: pytest.LogCaptureFixture) -> None:
    world = World()
    world.create(1)
    world.fake.fail_next("list", PODS, status=500)
    world.source.start(APP_ID)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.snapshots.polling_source"):
        world.scheduler.advance(INTERVAL)
    assert any("retrying in 0.2s" in r.getMessage() for r in caplog.records)
    assert world.ids() == set()
    world.scheduler.advance(0.2)  # not a whole interval later
    assert world.ids() == {1}
    assert world.store.current().pods[1].phase is PodPhase.PENDING


def test_a_long_list_outage_is_followed_within_the_backoff_cap_of_its_end() -> None:
    world = World()
    world.create(1)
    world.source.start(APP_ID)
    world.fake.fail_for(INTERVAL + 20.0, "list", PODS, status=503)
    world.scheduler.advance(INTERVAL + 20.0)
    assert world.ids() == set()
    lists = len([c for c in world.fake.calls if c.verb == "list"])
    assert lists <= 3 + 20  # 0.2, 0.4, 0.8 s, then one a second: never a tight loop
    world.scheduler.advance(MAX_DELAY)
    assert world.ids() == {1}


def test_a_list_refused_for_good_waits_for_the_next_poll(caplog: pytest.LogCaptureFixture) -> None:
    world = World()
    world.create(1)
    world.fake.fail_next("list", PODS, status=403)
    world.source.start(APP_ID)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.snapshots.polling_source"):
        world.scheduler.advance(INTERVAL)
        world.scheduler.advance(INTERVAL / 2)
    assert any("next poll will retry" in r.getMessage() for r in caplog.records)
    assert world.ids() == set()
    world.scheduler.advance(INTERVAL / 2)
    assert world.ids() == {1}


