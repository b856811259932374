"""FakeKubernetes watches: non-blocking mode, history window, bookmarks, closing, timeouts."""

from __future__ import annotations

import threading

import pytest
from fake_support import TEST_NAMESPACES

from k8s_backend.kube.port import CONFIG_MAPS, PODS, GoneError, Obj, WatchEvent
from k8s_backend.memkube.api import FakeWatchStream
from k8s_backend.testing import FakeKubernetes


def pod(name: str, **labels: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


def summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"].get("name", "")) for e in events]


@pytest.fixture
def fake() -> FakeKubernetes:
    return FakeKubernetes(namespaces=TEST_NAMESPACES, watch_blocking=False)


def test_non_blocking_streams_end_when_nothing_is_buffered(fake: FakeKubernetes) -> None:
    version = fake.resource_version
    stream = fake.watch(PODS, "ns", resource_version=version)
    assert list(stream) == []
    assert stream.closed
    assert fake.open_watches() == 0
    fake.create(PODS, "ns", pod("a"))
    assert list(stream) == []  # an ended stream gets nothing more
    assert summary(list(fake.watch(PODS, "ns", resource_version=version))) == [("ADDED", "a")]


def test_a_consumer_can_be_driven_step_by_step(fake: FakeKubernetes) -> None:
    stream = fake.watch(PODS, "ns", resource_version=fake.resource_version)
    fake.create(PODS, "ns", pod("a"))
    iterator = iter(stream)
    assert summary([next(iterator)]) == [("ADDED", "a")]
    fake.create(PODS, "ns", pod("b"))  # arrives while the stream is still open
    assert summary(list(iterator)) == [("ADDED", "b")]


def test_watch_with_version_zero_starts_with_the_current_objects(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("a"))
    assert summary(list(fake.watch(PODS, "ns", resource_version="0"))) == [("ADDED", "a")]
    assert summary(list(fake.watch(PODS, "ns", resource_version=""))) == [("ADDED", "a")]


def test_history_window_answers_gone_beyond_it() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, history_size=2, watch_blocking=False)
    start = fake.resource_version
    first = fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "a"}})
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "b"}})
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}})
    with pytest.raises(GoneError, match="too old resource version") as caught:
        list(fake.watch(CONFIG_MAPS, "ns", resource_version=start))
    assert caught.value.reason == "Expired"
    since_first = fake.watch(CONFIG_MAPS, "ns", resource_version=first["metadata"]["resourceVersion"])
    assert summary(list(since_first)) == [("ADDED", "b"), ("ADDED", "c")]


def test_the_history_window_is_per_kind_so_other_kinds_do_not_push_pods_out() -> None:
    # kube-apiserver keeps a watch cache per resource: a burst of ConfigMaps (or Events) must not make a
    # pod watch resuming from before it answer 410.
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, history_size=2, watch_blocking=False)
    start = fake.resource_version
    fake.create(PODS, "ns", pod("p"))
    for name in "abcde":
        fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": name}})
    assert summary(list(fake.watch(PODS, "ns", resource_version=start))) == [("ADDED", "p")]
    with pytest.raises(GoneError):
        list(fake.watch(CONFIG_MAPS, "ns", resource_version=start))
    fake.compact()
    with pytest.raises(GoneError):  # compact() forgets every kind's history
        list(fake.watch(PODS, "ns", resource_version=start))


def test_without_history_only_the_current_version_can_be_watched() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, history_size=0, watch_blocking=False)
    start = fake.resource_version
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "a"}})
    with pytest.raises(GoneError):
        list(fake.watch(CONFIG_MAPS, "ns", resource_version=start))
    stream = fake.watch(CONFIG_MAPS, "ns", resource_version=fake.resource_version)
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "b"}})
    assert summary(list(stream)) == [("ADDED", "b")]


def test_compact_can_keep_the_last_events(fake: FakeKubernetes) -> None:
    a = fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "a"}})
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "b"}})
    fake.compact(keep_last=1)
    assert summary(
        list(fake.watch(CONFIG_MAPS, "ns", resource_version=a["metadata"]["resourceVersion"]))
    ) == [("ADDED", "b")]
    with pytest.raises(GoneError):
        list(fake.watch(CONFIG_MAPS, "ns", resource_version=str(int(a["metadata"]["resourceVersion"]) - 1)))
    with pytest.raises(ValueError, match="keep_last"):
        fake.compact(-1)


def test_history_size_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="history_size"):
        FakeKubernetes(namespaces=TEST_NAMESPACES, history_size=-1)


def test_bookmarks_go_only_to_streams_that_allow_them(fake: FakeKubernetes) -> None:
    with_bookmarks = fake.watch(PODS, "ns", resource_version=fake.resource_version)
    without = fake.watch(PODS, "ns", resource_version=fake.resource_version, allow_bookmarks=False)
    fake.create(PODS, "ns", pod("a"))
    fake.send_bookmark()
    events = list(with_bookmarks)
    assert [e.type for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1].object == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": fake.resource_version},
    }
    assert [e.type for e in without] == ["ADDED"]


def test_object_leaving_the_selection_is_deleted_at_the_event_version(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("a", role="executor"))
    stream = fake.watch(PODS, "ns", label_selector="role=executor", resource_version=fake.resource_version)
    patched = fake.patch(PODS, "ns", "a", {"metadata": {"labels": {"role": "done"}}})
    (event,) = list(stream)
    assert event.type == "DELETED"
    assert event.object["metadata"]["labels"] == {"role": "executor"}  # the state that matched
    assert event.object["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]


def test_events_are_copies(fake: FakeKubernetes) -> None:
    version = fake.resource_version
    first = fake.watch(PODS, "ns", resource_version=version)
    second = fake.watch(PODS, "ns", resource_version=version)
    fake.create(PODS, "ns", pod("a", k="v"))
    (event,) = list(first)
    event.object["metadata"]["labels"]["k"] = "changed"
    assert next(iter(second)).object["metadata"]["labels"] == {"k": "v"}
    assert fake.get(PODS, "ns", "a")["metadata"]["labels"] == {"k": "v"}


def test_watch_faults_are_raised_by_the_stream_and_recorded(fake: FakeKubernetes) -> None:
    fake.fail_next("watch", PODS, status=500, message="etcd is down")
    stream = fake.watch(PODS, "ns", label_selector="a=b")
    with pytest.raises(Exception, match="etcd is down"):
        list(stream)
    assert fake.open_watches() == 0
    (call,) = fake.calls_of("watch", PODS)
    assert call.label_selector == "a=b"


def test_streams_work_as_context_managers(fake: FakeKubernetes) -> None:
    with fake.watch(PODS, "ns", resource_version=fake.resource_version) as stream:
        assert fake.open_watches() == 1
    assert stream.closed
    assert fake.open_watches() == 0


# --- blocking streams (genuinely threaded: waits use events and timeouts, never sleeps) ----------


def read_in_thread(stream: FakeWatchStream) -> tuple[threading.Thread, list[WatchEvent], threading.Event]:
    events: list[WatchEvent] = []
    started = threading.Event()

    def run() -> None:
        started.set()
        events.extend(stream)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(5)
    return thread, events, started


def test_close_unblocks_a_waiting_reader() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    stream = fake.watch(PODS, "ns", resource_version=fake.resource_version)
    thread, events, _ = read_in_thread(stream)
    stream.close()
    thread.join(5)
    assert not thread.is_alive()
    assert events == []


def test_drop_watches_ends_every_blocked_stream_and_discards_unread_events() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    streams = [fake.watch(PODS, "ns", resource_version=fake.resource_version) for _ in range(3)]
    unread = fake.watch(CONFIG_MAPS, "ns", resource_version=fake.resource_version)
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}})
    threads = [read_in_thread(s)[0] for s in streams]
    fake.drop_watches()
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive()
    assert list(unread) == []  # as on a broken connection: resume from the last version seen
    assert fake.open_watches() == 0


def test_timeout_ends_a_blocking_stream_with_a_bookmark() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    created = fake.create(PODS, "ns", pod("a"))
    stream = fake.watch(PODS, "ns", resource_version="", timeout_seconds=0.05)  # type: ignore[arg-type]
    events = list(stream)
    assert [e.type for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1].object["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    quiet = fake.watch(PODS, "ns", resource_version="", timeout_seconds=0.05, allow_bookmarks=False)  # type: ignore[arg-type]
    assert [e.type for e in quiet] == ["ADDED"]


@pytest.mark.parametrize("timeout", [None, 0])
def test_a_blocked_reader_receives_later_events(timeout: int | None) -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    stream = fake.watch(PODS, "ns", resource_version=fake.resource_version, timeout_seconds=timeout)
    received = threading.Event()
    seen: list[str] = []

    def run() -> None:
        for event in stream:
            seen.append(event.object["metadata"]["name"])
            received.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    fake.create(PODS, "ns", pod("late"))
    assert received.wait(5)
    stream.close()
    thread.join(5)
    assert seen == ["late"]
