"""The watch source's list as a streaming list (a watch with sendInitialEvents): one request, the pods
given to the store one at a time until the bookmark that ends them, then the same stream as the watch;
a server that refuses it or ignores it gets list + watch from then on. On the in-memory fake, which
serves streaming lists as kube-apiserver does (tests/contract/test_contract_watch.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_mock import MockerFixture
from snapshot_pods import APP_ID
from test_watch_snapshot_source import World

from k8s_backend.kube.port import PODS, WatchEvent
from k8s_backend.snapshots.states import PodPhase


@pytest.fixture
def world() -> World:
    world = World(streaming_list=True)
    world.source.prepare(APP_ID)
    return world


def test_the_first_run_is_one_streaming_list_then_a_watch_from_its_end(
    world: World, mocker: MockerFixture
) -> None:
    world.create(1)
    world.set_running(world.create(2))
    watch = mocker.spy(world.fake, "watch")
    listed_at = world.fake.resource_version
    assert world.source.run_once() == 0.0
    assert world.reads() == ["watch"]  # no list request
    first = watch.call_args.kwargs
    assert (first["send_initial_events"], first["resource_version"], first["allow_bookmarks"]) == (
        True, None, True,
    )  # fmt: skip
    assert world.phases() == {1: PodPhase.PENDING, 2: PodPhase.RUNNING}
    assert world.store.current().full_snapshot_ts == 1000.0  # a full resync, as a list is
    assert (world.source.relists, world.source.events) == (1, 0)  # the initial events are the list
    assert world.source.health()["resource_version"] == str(listed_at)  # the end bookmark's version
    world.set_running(world.create(3))
    world.source.run_once()
    resumed = watch.call_args.kwargs
    assert (resumed["send_initial_events"], resumed["resource_version"]) == (False, str(listed_at))
    assert world.phases() == {1: PodPhase.PENDING, 2: PodPhase.RUNNING, 3: PodPhase.RUNNING}
    assert world.reads() == ["watch", "watch"]


def test_after_a_410_the_streaming_relist_drops_the_pods_it_lacks_and_tells_subscribers(world: World) -> None:
    world.subscribe()
    world.create(1)
    gone = world.create(2)
    world.source.run_once()
    world.fake.delete(PODS, "default", gone, grace_period_seconds=0)
    world.create(3)
    world.fake.compact(keep_last=0)  # the watch's version is no longer served: the events are missed
    assert world.source.run_once() == 0.0  # 410
    assert world.source.run_once() == 0.0  # the streaming relist
    assert world.reads() == ["watch", "watch", "watch"]
    assert world.source.relists == 2
    world.scheduler.run_until_idle()  # the relist notified the subscribers at once
    assert world.clock.now() == 1000.0
    assert world.phases() == {1: PodPhase.PENDING, 3: PodPhase.PENDING}
    assert (2, PodPhase.DELETED) in world.delivered() and (3, PodPhase.PENDING) in world.delivered()
    assert world.batches[-1].resynced


def test_a_server_that_refuses_streaming_lists_gets_a_list_and_a_watch_from_then_on(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.create(1)
    world.fake.fail_next("watch", PODS, status=422)  # the WatchList feature off (1.27-1.31, 1.33)
    with caplog.at_level(logging.INFO, logger="k8s_backend.snapshots.watch_source"):
        assert world.source.run_once() == 0.0
    assert world.reads() == ["watch", "list", "watch"]  # the list in the same cycle
    assert world.phases() == {1: PodPhase.PENDING}
    assert world.source.last_error is None  # not a failure of the watch
    [said] = [r.getMessage() for r in caplog.records if "streaming lists" in r.getMessage()]
    assert "422" in said and "spark.kubernetes.executor.watch.streamingList=false" in said
    world.create(2)
    world.fake.compact(keep_last=0)
    world.source.run_once()  # 410
    world.source.run_once()
    assert world.reads()[-2:] == ["list", "watch"]  # never streams again
    assert world.phases() == {1: PodPhase.PENDING, 2: PodPhase.PENDING}


class IgnoringServer:
    """An API server older than 1.27: it ignores sendInitialEvents and sends a watch from "now": the pods
    as ADDED, then changes, and no end bookmark."""

    def __init__(self, world: World, events: list[WatchEvent]) -> None:
        self._world = world
        self._events = events
        self.watches: list[dict[str, Any]] = []

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return self._world.fake.list(*args, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> Stream:
        self.watches.append(kwargs)
        return Stream(self._events if kwargs["send_initial_events"] else [])


class Stream:
    """A watch stream of the given events, then its end."""

    def __init__(self, events: list[WatchEvent]) -> None:
        self._events = events

    def __iter__(self) -> Iterator[WatchEvent]:
        return iter(self._events)

    def close(self) -> None:
        pass


def test_a_server_that_ignores_streaming_lists_is_noticed_at_its_first_change(
    world: World, mocker: MockerFixture, caplog: pytest.LogCaptureFixture
) -> None:
    name = world.create(1)
    world.create(2)
    pods = {p["metadata"]["name"]: p for p in world.fake.list(PODS, "default").items}
    changed = {**pods[name], "status": {"phase": "Running"}}
    events = [WatchEvent("ADDED", p) for p in pods.values()] + [WatchEvent("MODIFIED", changed)]
    server = IgnoringServer(world, events)
    mocker.patch.object(world.source, "_api", server)
    with caplog.at_level(logging.INFO, logger="k8s_backend.snapshots.watch_source"):
        world.source.run_once()
    assert [w["send_initial_events"] for w in server.watches] == [True, False]
    assert world.phases() == {1: PodPhase.PENDING, 2: PodPhase.PENDING}  # from the list that followed
    assert any("a MODIFIED event came before the end" in r.getMessage() for r in caplog.records)
    world.source.run_once()
    assert [w["send_initial_events"] for w in server.watches] == [True, False, False]


def test_a_streaming_list_cut_short_applies_nothing_and_is_asked_again(
    world: World, mocker: MockerFixture
) -> None:
    world.create(1)
    pod = world.fake.list(PODS, "default", label_selector=f"spark-app-selector={APP_ID}").items[0]
    server = IgnoringServer(world, [WatchEvent("ADDED", pod)])  # the connection ends before the bookmark
    mocker.patch.object(world.source, "_api", server)
    world.source.run_once()
    assert world.phases() == {}
    assert world.source.relists == 0 and world.source.health()["resource_version"] is None
    world.source.run_once()
    assert [w["send_initial_events"] for w in server.watches] == [True, True]  # streamed again
