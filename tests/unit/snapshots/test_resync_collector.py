"""A full resync runs with the cyclic garbage collector paused (snapshots/collector.py): the decoded
list's millions of objects are never scanned, and the collector is back on afterwards."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_mock import MockerFixture
from snapshot_pods import APP_ID
from test_polling_snapshot_source import INTERVAL, World
from test_watch_snapshot_source import World as WatchWorld

from k8s_backend.kube.port import PODS
from k8s_backend.snapshots.collector import collector_paused
from k8s_backend.testing import FakeKubernetes


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_back_on_after_even_when_the_block_raises() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_pauses_switch_it_back_on_once_at_the_outermost() -> None:
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def record_collector_state(api: FakeKubernetes, mocker: MockerFixture) -> list[bool]:
    seen: list[bool] = []
    real_list = api.list

    def listing(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real_list(*args, **kwargs)

    mocker.patch.object(api, "list", side_effect=listing)
    return seen


def test_a_poll_lists_and_replaces_with_the_collector_paused(mocker: MockerFixture) -> None:
    world = World()
    world.create(1)
    seen = record_collector_state(world.fake, mocker)
    real_replace = world.store.replace_snapshot

    def replacing(*args: Any, **kwargs: Any) -> None:
        seen.append(gc.isenabled())
        real_replace(*args, **kwargs)

    mocker.patch.object(world.store, "replace_snapshot", side_effect=replacing)
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)
    assert seen == [False, False]  # the list and the replace
    assert gc.isenabled()
    assert world.ids() == {1}


def test_the_watch_sources_list_runs_with_the_collector_paused(mocker: MockerFixture) -> None:
    world = WatchWorld(streaming_list=False)  # a server without streaming lists
    world.source.prepare(APP_ID)
    world.create(1)
    seen = record_collector_state(world.fake, mocker)
    world.source.run_once()  # the list, then the watch
    assert seen[:1] == [False]
    assert gc.isenabled()
    assert 1 in world.phases()


def test_a_failed_poll_leaves_the_collector_on(mocker: MockerFixture) -> None:
    world = World()
    world.fake.fail_next("list", PODS, status=500)
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)
    assert world.lists() == 1
    assert gc.isenabled()
