"""A poll as a streaming list: one watch with sendInitialEvents, closed at the bookmark that ends its pods,
the pods given to the store one at a time; lists when the server refuses or ignores it, when a stream is
cut short, and for cached reads (resourceVersion=0)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pytest_mock import MockerFixture
from snapshot_pods import APP_ID
from test_polling_snapshot_source import INTERVAL, World
from test_watch_streaming_list import Stream

from k8s_backend.kube.port import PODS, WatchEvent
from k8s_backend.snapshots.polling_source import POLL_STREAM_TIMEOUT


def polled(world: World) -> None:
    world.source.start(APP_ID)
    world.scheduler.advance(INTERVAL)


def test_a_poll_is_one_streaming_list_closed_at_its_end(mocker: MockerFixture) -> None:
    world = World(streaming_list=True)
    world.create(1)
    world.create(2)
    world.create(3, app_id="other-app")
    listed = world.fake.list(PODS, "default").items
    first = next(p["metadata"]["name"] for p in listed if p["metadata"]["labels"]["spark-exec-id"] == "1")
    world.fake.reset_calls()
    watch = mocker.spy(world.fake, "watch")
    polled(world)
    assert (world.streams(), world.lists(), world.source.polls) == (1, 0, 1)
    kwargs = watch.call_args.kwargs
    assert kwargs["send_initial_events"] is True and kwargs["allow_bookmarks"] is True
    assert kwargs["timeout_seconds"] == POLL_STREAM_TIMEOUT
    assert world.ids() == {1, 2}
    assert world.fake.open_watches() == 0  # closed at the end bookmark, not left open
    world.fake.delete(PODS, "default", first, grace_period_seconds=0)
    world.scheduler.advance(INTERVAL)
    assert (world.streams(), world.lists(), world.source.polls) == (2, 0, 2)
    assert world.ids() == {2}  # the pod the list lacks left the view


def test_a_refusing_server_gets_lists_from_the_same_poll_on(caplog: pytest.LogCaptureFixture) -> None:
    world = World(streaming_list=True)
    world.create(1)
    world.fake.fail_next("watch", PODS, status=400)
    with caplog.at_level(logging.INFO, logger="k8s_backend.snapshots.polling_source"):
        polled(world)
    assert (world.streams(), world.lists(), world.source.polls) == (1, 1, 1)
    assert world.ids() == {1}
    assert any("does not offer streaming lists" in r.getMessage() for r in caplog.records)
    world.scheduler.advance(INTERVAL)
    assert (world.streams(), world.lists()) == (1, 2)


def test_cached_reads_stay_lists() -> None:
    world = World(streaming_list=True, cached_reads=True)
    world.create(1)
    polled(world)
    assert (world.streams(), world.lists()) == (0, 1)


def test_a_failing_stream_is_a_failed_poll_retried_after_the_short_backoff() -> None:
    world = World(streaming_list=True)
    world.create(1)
    world.fake.fail_next("watch", PODS, status=500)
    polled(world)
    assert (world.source.polls, world.ids()) == (0, set())
    world.scheduler.advance(1.0)  # the short back-off, well before the next poll
    assert (world.source.polls, world.ids()) == (1, {1})
    assert world.lists() == 0  # still streaming lists


@pytest.mark.parametrize("cut_short", [True, False])
def test_a_stream_without_its_end_is_a_list_this_time(mocker: MockerFixture, cut_short: bool) -> None:
    """Cut short, the next poll streams again; a change before the end (a server that ignores the request),
    it lists from then on."""
    world = World(streaming_list=True)
    world.create(1)
    pod = world.fake.list(PODS, "default").items[0]
    world.fake.reset_calls()
    events = [WatchEvent("ADDED", pod)] + ([] if cut_short else [WatchEvent("MODIFIED", pod)])

    def watch(*args: Any, **kwargs: Any) -> Stream:
        return Stream(events)

    mocker.patch.object(world.fake, "watch", side_effect=watch)
    polled(world)
    assert (world.lists(), world.source.polls, world.ids()) == (1, 1, {1})
    world.scheduler.advance(INTERVAL)
    assert world.fake.watch.call_count == (2 if cut_short else 1)  # type: ignore[attr-defined]
