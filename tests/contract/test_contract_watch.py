"""Contract: watches resume from resourceVersions, filter by selectors, bookmark, expire and end."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from contract_objects import NS, names, pod, rv
from contract_support import Control, StreamReader

from k8s_backend.kube.port import (
    CONFIG_MAPS,
    INITIAL_EVENTS_END,
    PODS,
    ForbiddenError,
    GoneError,
    KubernetesApi,
    WatchStream,
)

Reader = Callable[[WatchStream], StreamReader]


def test_watch_from_a_list_version_sees_only_later_events(api: KubernetesApi, reader: Reader) -> None:
    api.create(PODS, NS, pod("before"))
    listed = api.list(PODS, NS)
    stream = reader(api.watch(PODS, NS, resource_version=listed.resource_version))
    api.create(PODS, NS, pod("p1"))
    api.patch(PODS, NS, "p1", {"metadata": {"labels": {"step": "2"}}})
    api.delete(PODS, NS, "p1")
    events = stream.take(4)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "p1"),
        ("MODIFIED", "p1"),
        ("MODIFIED", "p1"),  # the deletion sets deletionTimestamp first
        ("DELETED", "p1"),
    ]
    versions = [rv(e.object) for e in events]
    assert versions == sorted(versions)
    assert versions[0] > int(listed.resource_version)
    assert events[1].object["metadata"]["labels"] == {"step": "2"}
    assert stream.drain() == []


def test_watch_replays_events_made_before_it_was_opened(api: KubernetesApi, reader: Reader) -> None:
    version = api.list(PODS, NS).resource_version
    api.create(PODS, NS, pod("p1"))
    api.create(PODS, NS, pod("p2"))
    stream = reader(api.watch(PODS, NS, resource_version=version))
    assert [(e.type, e.object["metadata"]["name"]) for e in stream.take(2)] == [
        ("ADDED", "p1"),
        ("ADDED", "p2"),
    ]


def test_watch_without_version_starts_with_the_current_objects(api: KubernetesApi, reader: Reader) -> None:
    api.create(PODS, NS, pod("a", {"app": "x"}))
    api.create(PODS, NS, pod("b", {"app": "y"}))
    api.create(PODS, NS, pod("c", {"app": "x"}))
    stream = reader(api.watch(PODS, NS, label_selector="app=x"))
    initial = stream.take(2)
    assert {e.type for e in initial} == {"ADDED"}
    assert sorted(names([e.object for e in initial])) == ["a", "c"]
    api.create(PODS, NS, pod("d", {"app": "x"}))
    assert [(e.type, e.object["metadata"]["name"]) for e in stream.take(1)] == [("ADDED", "d")]


def test_a_streaming_list_sends_the_objects_then_the_bookmark_that_ends_them_then_changes(
    api: KubernetesApi, reader: Reader
) -> None:
    api.create(PODS, NS, pod("a", {"app": "x"}))
    api.create(PODS, NS, pod("b", {"app": "y"}))
    last = api.create(PODS, NS, pod("c", {"app": "x"}))
    stream = reader(api.watch(PODS, NS, label_selector="app=x", send_initial_events=True))
    *initial, end = stream.take(3, bookmarks=True)
    assert {e.type for e in initial} == {"ADDED"}
    assert sorted(names([e.object for e in initial])) == ["a", "c"]
    assert end.type == "BOOKMARK"
    assert end.object["metadata"]["annotations"] == {INITIAL_EVENTS_END: "true"}
    assert int(end.object["metadata"]["resourceVersion"]) >= rv(last)  # the version the list was read at
    created = api.create(PODS, NS, pod("d", {"app": "x"}))
    (added,) = stream.take(1)
    assert (added.type, added.object["metadata"]["name"]) == ("ADDED", "d")
    assert rv(created) > int(end.object["metadata"]["resourceVersion"])


def test_a_streaming_list_of_nothing_is_its_end_bookmark(api: KubernetesApi, reader: Reader) -> None:
    stream = reader(api.watch(PODS, NS, label_selector="app=none", send_initial_events=True))
    (end,) = stream.take(1, bookmarks=True)
    assert end.type == "BOOKMARK"
    assert end.object["metadata"]["annotations"] == {INITIAL_EVENTS_END: "true"}


def test_a_streaming_list_without_bookmarks_has_no_end_bookmark(api: KubernetesApi, reader: Reader) -> None:
    """kube-apiserver v1.37.2 accepts the pair and sends the objects, but never the bookmark that ends them
    (so a reader cannot tell where the list ends: the watch source always allows bookmarks)."""
    api.create(PODS, NS, pod("a"))
    stream = reader(api.watch(PODS, NS, send_initial_events=True, allow_bookmarks=False))
    (initial,) = stream.take(1, bookmarks=True)
    assert (initial.type, initial.object["metadata"]["name"]) == ("ADDED", "a")
    api.create(PODS, NS, pod("b"))
    (event,) = stream.take(1, bookmarks=True)
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "b")


def test_watch_is_limited_to_its_namespace_and_kind(api: KubernetesApi, reader: Reader) -> None:
    version = api.list(PODS, NS).resource_version
    stream = reader(api.watch(PODS, NS, resource_version=version))
    api.create(PODS, "elsewhere", pod("other-ns"))
    api.create(CONFIG_MAPS, NS, {"metadata": {"name": "cm"}, "data": {}})
    api.create(PODS, NS, pod("mine"))
    assert names([e.object for e in stream.take(1)]) == ["mine"]
    assert stream.drain() == []


def test_watch_filters_by_selectors_and_reports_objects_entering_and_leaving(
    api: KubernetesApi, reader: Reader
) -> None:
    version = api.list(PODS, NS).resource_version
    stream = reader(
        api.watch(PODS, NS, label_selector="role=executor,inactive!=true", resource_version=version)
    )
    api.create(PODS, NS, pod("driver", {"role": "driver"}))
    api.create(PODS, NS, pod("e1", {"role": "executor"}))
    api.patch(PODS, NS, "e1", {"metadata": {"labels": {"inactive": "true"}}})  # leaves the selection
    api.patch(PODS, NS, "driver", {"metadata": {"labels": {"role": "executor"}}})  # enters it
    events = stream.take(3)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "e1"),
        ("DELETED", "e1"),
        ("ADDED", "driver"),
    ]
    assert stream.drain() == []


def test_watch_filters_by_field_selector(api: KubernetesApi, control: Control, reader: Reader) -> None:
    api.create(PODS, NS, pod("a"))
    api.create(PODS, NS, pod("b"))
    version = api.list(PODS, NS).resource_version
    stream = reader(api.watch(PODS, NS, field_selector="metadata.name=b", resource_version=version))
    control.set_pod_status(NS, "a", {"phase": "Running"})
    control.set_pod_status(NS, "b", {"phase": "Running"})
    (event,) = stream.take(1)
    assert (event.type, event.object["metadata"]["name"]) == ("MODIFIED", "b")
    assert event.object["status"]["phase"] == "Running"


def test_watch_from_a_compacted_version_is_gone(api: KubernetesApi, control: Control) -> None:
    version = api.list(PODS, NS).resource_version
    api.create(PODS, NS, pod("a"))
    api.create(PODS, NS, pod("b"))
    control.compact()
    with pytest.raises(GoneError) as caught:
        stream = api.watch(PODS, NS, resource_version=version)
        next(iter(stream))
    assert caught.value.status == 410


def test_relisting_after_gone_gives_a_version_to_watch_from(
    api: KubernetesApi, control: Control, reader: Reader
) -> None:
    api.create(PODS, NS, pod("a"))
    control.compact()
    listed = api.list(PODS, NS)
    stream = reader(api.watch(PODS, NS, resource_version=listed.resource_version))
    api.create(PODS, NS, pod("b"))
    assert names([e.object for e in stream.take(1)]) == ["b"]


def test_bookmarks_carry_the_current_version(api: KubernetesApi, control: Control, reader: Reader) -> None:
    version = api.list(PODS, NS).resource_version
    stream = reader(api.watch(PODS, NS, resource_version=version, allow_bookmarks=True))
    created = api.create(PODS, NS, pod("a"))
    stream.take(1)
    control.wait_for_watches(1)
    control.send_bookmark()
    (bookmark,) = stream.take(1, bookmarks=True)
    assert bookmark.type == "BOOKMARK"
    assert int(bookmark.object["metadata"]["resourceVersion"]) >= rv(created)


def test_no_bookmarks_unless_allowed(api: KubernetesApi, control: Control, reader: Reader) -> None:
    version = api.list(PODS, NS).resource_version
    stream = reader(api.watch(PODS, NS, resource_version=version, allow_bookmarks=False))
    api.create(PODS, NS, pod("a"))
    stream.take(1, bookmarks=True)
    control.send_bookmark()
    api.create(PODS, NS, pod("b"))
    (event,) = stream.take(1, bookmarks=True)
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "b")


def test_streams_dropped_by_the_server_end_without_error(
    api: KubernetesApi, control: Control, reader: Reader
) -> None:
    stream = reader(api.watch(PODS, NS, resource_version=api.list(PODS, NS).resource_version))
    control.wait_for_watches(1)
    control.drop_watches()
    stream.wait_end()
    assert stream.error is None


def test_close_ends_a_blocked_iteration(api: KubernetesApi, control: Control, reader: Reader) -> None:
    stream = reader(api.watch(PODS, NS, resource_version=api.list(PODS, NS).resource_version))
    control.wait_for_watches(1)
    stream.stream.close()
    stream.wait_end()


def test_the_server_ends_a_watch_after_its_timeout(api: KubernetesApi, reader: Reader) -> None:
    started = time.monotonic()
    stream = reader(
        api.watch(PODS, NS, resource_version=api.list(PODS, NS).resource_version, timeout_seconds=1)
    )
    events = stream.wait_end(timeout=10)
    assert {e.type for e in events} <= {"BOOKMARK"}
    assert stream.error is None
    assert time.monotonic() - started >= 0.9


def test_injected_watch_errors_surface(api: KubernetesApi, control: Control) -> None:
    control.fail_next("watch", PODS, status=403)
    with pytest.raises(ForbiddenError):
        stream = api.watch(PODS, NS)
        next(iter(stream))
