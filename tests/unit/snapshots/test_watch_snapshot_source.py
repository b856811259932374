"""ExecutorPodsWatchSnapshotSource: a reflector (list, watch from the list's RV, bookmarks, 410 re-list,
backoff) driven step by step with run_once() on the in-memory fake (ExecutorPodsWatchSnapshotSourceSuite,
plus the restart rules Spark lacks: SPARK-33349). Its list here is a plain list (what a server without
streaming lists gets); test_watch_streaming_list.py has the streaming list."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from pytest_mock import MockerFixture
from snapshot_pods import APP_ID, executor_pod, running_container

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.backoff import MAX_DELAY
from k8s_backend.kube.port import PODS
from k8s_backend.kube.watch_backoff import MAX_BACKOFF
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource
from k8s_backend.testing import FakeKubernetes

NS = "default"
SELECTOR = f"spark-app-selector={APP_ID},spark-role=executor,spark-exec-inactive!=true"
WAIT = 10.0  # only reached if the source is broken


class World:
    """A fake API server, a store with one recording subscriber, and a prepared watch source."""

    def __init__(self, *, blocking: bool = False, enabled: bool = True, streaming_list: bool = False) -> None:
        self.clock = ManualClock(1000.0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.fake = FakeKubernetes(clock=self.clock, watch_blocking=blocking)
        self.store = ExecutorPodsSnapshotsStore(self.scheduler, self.clock)
        self.batches: list[SnapshotBatch] = []
        self.source = ExecutorPodsWatchSnapshotSource(
            self.fake,
            self.store,
            self.clock,
            namespace=NS,
            enabled=enabled,
            streaming_list=streaming_list,
            server_timeout=300,
            rng=lambda: 0.0,
        )

        # A pod of another application, so the server's resourceVersion is past "0" (which means "any").
        self.create(0, app_id="other-app")

    def reads(self) -> list[str]:
        """The verbs of the source's calls (the test's own writes left out)."""
        return [c.verb for c in self.fake.calls if c.verb in ("list", "watch")]

    def subscribe(self, interval: float = 3600.0) -> None:
        self.store.add_subscriber(interval, self.batches.append)
        self.scheduler.run_until_idle()

    def create(self, exec_id: int, app_id: str = APP_ID) -> str:
        created = self.fake.create(PODS, NS, executor_pod(exec_id, "Pending", app_id=app_id))
        return str(created["metadata"]["name"])

    def set_running(self, name: str) -> None:
        status = {"phase": "Running", "containerStatuses": [running_container()]}
        self.fake.patch_status(PODS, NS, name, status)

    def phases(self) -> dict[int, PodPhase]:
        return {i: s.phase for i, s in self.store.current().pods.items()}

    def delivered(self) -> list[tuple[int, PodPhase]]:
        return [(s.executor_id, s.phase) for b in self.batches for s in b.updates]


@pytest.fixture
def world() -> World:
    world = World()
    world.source.prepare(APP_ID)
    return world


# ------------------------------------------------------------------------------------------ list + watch


def test_first_run_lists_then_watches_from_the_lists_resource_version(
    world: World, mocker: MockerFixture
) -> None:
    world.create(1)
    world.create(2)
    watch = mocker.spy(world.fake, "watch")
    list_rv = world.fake.resource_version
    assert world.source.run_once() == 0.0
    assert world.reads() == ["list", "watch"]
    reads = [c for c in world.fake.calls if c.verb in ("list", "watch")]
    assert all(c.label_selector == SELECTOR and c.namespace == NS for c in reads)
    kwargs = watch.call_args.kwargs
    assert kwargs["resource_version"] == list_rv
    assert kwargs["allow_bookmarks"] is True
    assert kwargs["timeout_seconds"] == 300
    assert world.phases() == {1: PodPhase.PENDING, 2: PodPhase.PENDING}
    assert world.store.current().full_snapshot_ts == 1000.0  # the list was a full resync


def test_the_selector_leaves_out_other_apps_and_inactive_pods(world: World) -> None:
    world.create(1)
    world.create(2, app_id="other-app")
    inactive = executor_pod(3, "Pending", labels={"spark-exec-inactive": "true"})
    world.fake.create(PODS, NS, inactive)
    world.source.run_once()
    assert world.phases() == {1: PodPhase.PENDING}


def test_added_modified_and_deleted_events_become_store_updates(world: World) -> None:
    world.subscribe()
    first = world.create(1)
    second = world.create(2)
    world.set_running(second)
    world.source.run_once()  # list: 1 pending, 2 running
    world.set_running(first)  # MODIFIED
    world.create(3)  # ADDED
    # MODIFIED (deletionTimestamp, as a real API server sends first), then DELETED, still Running.
    world.fake.delete(PODS, NS, second)
    world.source.run_once()
    world.store.notify_subscribers()
    world.scheduler.run_until_idle()
    assert world.phases() == {1: PodPhase.RUNNING, 2: PodPhase.DELETED, 3: PodPhase.PENDING}
    assert world.delivered()[-4:] == [
        (1, PodPhase.RUNNING),
        (3, PodPhase.PENDING),
        (2, PodPhase.RUNNING),
        (2, PodPhase.DELETED),
    ]
    assert world.source.events == 4
    assert world.reads() == ["list", "watch", "watch"]


def test_resumes_from_the_last_resource_version_after_the_stream_ends(
    world: World, mocker: MockerFixture
) -> None:
    world.source.run_once()
    world.create(1)
    world.source.run_once()
    rv_after_first_event = world.fake.resource_version
    world.fake.drop_watches()  # the server closes the stream; nothing is lost
    world.create(2)  # written while no watch is open
    watch = mocker.spy(world.fake, "watch")
    world.source.run_once()
    assert watch.call_args.kwargs["resource_version"] == rv_after_first_event
    assert world.phases() == {1: PodPhase.PENDING, 2: PodPhase.PENDING}
    assert len(world.fake.calls_of("list")) == 1  # resumed, not re-listed
    assert world.source.relists == 1


def test_bookmarks_advance_the_resource_version_without_updates(world: World, mocker: MockerFixture) -> None:
    world.subscribe()
    world.source.run_once()
    list_rv = world.fake.resource_version
    for i in range(3):  # writes this watch does not see still move the server's resourceVersion
        world.create(10 + i, app_id="other-app")
    real_watch = world.fake.watch

    def watch_then_bookmark(*args: Any, **kwargs: Any) -> Any:
        stream = real_watch(*args, **kwargs)
        world.fake.send_bookmark()  # reaches the stream before the source iterates it
        return stream

    mocker.patch.object(world.fake, "watch", side_effect=watch_then_bookmark)
    world.source.run_once()
    assert world.source.health()["resource_version"] == world.fake.resource_version != list_rv
    assert world.source.events == 0
    world.store.notify_subscribers()
    world.scheduler.run_until_idle()
    assert world.delivered() == []
    assert world.phases() == {}

    # Thanks to the bookmark the source is past the compacted history: the next watch needs no re-list.
    world.fake.compact(keep_last=0)
    mocker.stopall()
    assert world.source.run_once() == 0.0
    assert world.source.relists == 1
    assert world.reads()[-1] == "watch"


# --------------------------------------------------------------------------------------- 410 and errors


def test_gone_relists_at_once_and_notifies_subscribers(world: World) -> None:
    world.subscribe()
    world.source.run_once()
    world.create(1)
    world.fake.compact(keep_last=0)  # the watch's resourceVersion is no longer served
    assert world.source.run_once() == 0.0  # 410: no backoff
    assert world.source.relists == 1
    assert world.source.run_once() == 0.0  # re-list
    assert world.source.relists == 2
    assert world.reads() == ["list", "watch", "watch", "list", "watch"]
    # The re-list notified subscribers: the change arrives without waiting for the delivery interval.
    world.scheduler.run_until_idle()
    assert world.clock.now() == 1000.0
    assert world.delivered() == [(1, PodPhase.PENDING)]
    assert world.batches[-1].resynced


def test_repeated_gone_right_after_a_fresh_list_backs_off(world: World) -> None:
    world.source.run_once()
    # The server answers 410 to every watch, even one opened at the RV of a list it just served
    # (a lagging watch cache). The first 410 re-lists at once; re-listing in a tight loop after that
    # would hammer the API server with full LISTs (the infinite loop feared in SPARK-33349).
    world.fake.fail_next("watch", PODS, status=410, count=5)
    delays = [world.source.run_once() for _ in range(6)]
    assert delays[0] == 0.0
    assert max(delays) > 0.0


def test_the_first_list_does_not_notify_subscribers(world: World) -> None:
    world.subscribe()
    world.create(1)
    world.source.run_once()
    world.scheduler.run_until_idle()
    assert len(world.batches) == 1  # only the subscriber's own first delivery


def test_errors_back_off_increasingly_and_the_source_recovers(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.source.run_once()
    world.fake.fail_next("watch", PODS, status=500, count=4)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.snapshots.watch_source"):
        delays = [world.source.run_once() for _ in range(4)]
    assert delays == sorted(delays) and len(set(delays)) == 4 and delays[0] > 0
    assert "injected fault" in str(world.source.health()["last_error"])
    assert any("retrying in" in r.getMessage() for r in caplog.records)
    world.create(1)
    assert world.source.run_once() == 0.0  # recovered
    assert world.phases() == {1: PodPhase.PENDING}
    # A success resets the backoff.
    world.fake.fail_next("watch", PODS, status=500)
    assert world.source.run_once() == delays[0]


def test_backoff_after_api_errors_is_short_whatever_the_outage(world: World) -> None:
    world.source.run_once()
    world.fake.fail_next("watch", PODS, status=503, count=30)
    delays = [world.source.run_once() for _ in range(30)]
    assert max(delays) <= MAX_DELAY  # the recovery bound: the watch follows the API within 1 s
    assert delays[-1] >= MAX_DELAY / 2


def test_retry_after_is_honoured_by_the_watch(world: World) -> None:
    world.source.run_once()
    world.fake.fail_next("watch", PODS, status=429, retry_after=5.0)
    assert world.source.run_once() == 5.0


def test_a_410_right_after_a_list_gets_the_long_backoff(world: World) -> None:
    world.fake.fail_next("watch", PODS, status=410, count=12)
    delays = [world.source.run_once() for _ in range(12)]
    assert max(delays) <= MAX_BACKOFF and delays[-1] >= MAX_BACKOFF / 2


def test_a_failed_list_is_retried_with_backoff(world: World) -> None:
    world.create(1)
    world.fake.fail_next("list", PODS, status=500)
    assert world.source.run_once() > 0
    assert world.phases() == {}
    assert world.source.run_once() == 0.0
    assert world.phases() == {1: PodPhase.PENDING}


def test_an_unexpected_exception_is_logged_with_its_trace_and_survived(
    world: World, mocker: MockerFixture, caplog: pytest.LogCaptureFixture
) -> None:
    world.source.run_once()
    world.create(1)
    mocker.patch.object(world.store, "update_pod", side_effect=KeyError("store bug"))
    with caplog.at_level(logging.ERROR, logger="k8s_backend.snapshots.watch_source"):
        assert world.source.run_once() > 0
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and errors[0].exc_info and errors[0].exc_info[0] is KeyError


# ------------------------------------------------------------------------------------ enable, start, stop


def test_disabled_watcher_makes_no_api_call() -> None:
    world = World(enabled=False)
    world.fake.reset_calls()
    world.source.start(APP_ID)
    world.source.stop()
    assert world.fake.calls == []
    assert not world.source.health()["alive"]


def test_start_twice_is_refused(world: World) -> None:
    with pytest.raises(RuntimeError, match="already started"):
        world.source.start(APP_ID)  # prepare() already claimed the selector


def test_a_source_driven_step_by_step_says_when_it_was_stopped(world: World) -> None:
    world.source.run_once()
    world.create(1)
    world.source.run_once()
    assert world.phases() == {1: PodPhase.PENDING}
    assert not world.source.stopped
    world.source.stop()
    assert world.source.stopped
    assert not world.source.health()["alive"]


def test_stop_ends_a_blocking_watch_thread_promptly() -> None:
    world = World(blocking=True)
    event_seen = threading.Event()
    real_update = world.store.update_pod

    def update_and_signal(pod: dict[str, Any], *, deleted: bool = False) -> None:
        real_update(pod, deleted=deleted)
        event_seen.set()

    world.store.update_pod = update_and_signal  # type: ignore[method-assign]
    world.source.start(APP_ID)
    try:
        # Once the first event arrived, the thread is inside a blocking stream waiting for the next.
        world.create(1)
        assert event_seen.wait(WAIT)
        assert world.source.health()["alive"]
        world.source.stop(timeout=WAIT)
        assert not world.source.health()["alive"]
        assert world.fake.open_watches() == 0
    finally:
        world.source.stop(timeout=WAIT)


def test_a_blocking_watch_resumes_after_the_server_drops_it() -> None:
    world = World(blocking=True)
    seen: list[int] = []
    cond = threading.Condition()
    real_update = world.store.update_pod

    def update_and_signal(pod: dict[str, Any], *, deleted: bool = False) -> None:
        real_update(pod, deleted=deleted)
        with cond:
            seen.append(int(pod["metadata"]["labels"]["spark-exec-id"]))
            cond.notify_all()

    world.store.update_pod = update_and_signal  # type: ignore[method-assign]
    world.source.start(APP_ID)
    try:
        world.create(1)
        with cond:
            assert cond.wait_for(lambda: 1 in seen, WAIT)
        world.fake.drop_watches()
        world.create(2)  # whether or not the new watch is open yet, it resumes from the last RV
        with cond:
            assert cond.wait_for(lambda: 2 in seen, WAIT)
        assert len(world.fake.calls_of("list")) == 1
    finally:
        world.source.stop(timeout=WAIT)
