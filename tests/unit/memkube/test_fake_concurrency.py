"""FakeKubernetes under concurrent use, and per-event cost independent of the number of objects."""

from __future__ import annotations

import threading

import pytest
from fake_support import TEST_NAMESPACES
from pytest_mock import MockerFixture

from k8s_backend.kube.port import CONFIG_MAPS, PODS, Obj
from k8s_backend.memkube.watch import WatchFilter
from k8s_backend.testing import FakeKubernetes


def pod(name: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


def test_concurrent_writers_get_distinct_versions_and_a_watcher_sees_them_in_order() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    writers, per_writer = 4, 50
    stream = fake.watch(PODS, "ns", resource_version=fake.resource_version)
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        for event in stream:
            seen.append(int(event.object["metadata"]["resourceVersion"]))
            if len(seen) == writers * per_writer:
                done.set()
                return

    def write(worker: int) -> None:
        for i in range(per_writer):
            fake.create(PODS, "ns", pod(f"w{worker}-{i}"))

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert done.wait(30)
    stream.close()
    assert seen == sorted(seen)
    assert len(set(seen)) == writers * per_writer
    assert len(fake.objects(PODS)) == writers * per_writer


@pytest.mark.parametrize("stored", [10, 1000])
def test_a_write_is_matched_against_watchers_not_stored_objects(stored: int, mocker: MockerFixture) -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, watch_blocking=False)
    for i in range(stored):
        fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": f"c{i}"}})
    pod_watches = [fake.watch(PODS, "ns", resource_version=fake.resource_version) for _ in range(3)]
    fake.watch(CONFIG_MAPS, "ns", resource_version=fake.resource_version)  # another kind: never consulted
    translate = mocker.spy(WatchFilter, "translate")
    matches = mocker.spy(WatchFilter, "matches")
    fake.create(PODS, "ns", pod("p"))
    fake.patch(PODS, "ns", "p", {"metadata": {"labels": {"app": "y"}}})
    assert translate.call_count == 2 * len(pod_watches)
    assert matches.call_count <= 2 * 2 * len(pod_watches)  # new and previous state per watcher
