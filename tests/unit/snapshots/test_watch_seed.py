"""A watch source seeded with recovery's list at start: it watches from that list's version and lists
only again after a 410 Gone."""

from __future__ import annotations

from snapshot_pods import APP_ID, executor_pod

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import PODS
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource
from k8s_backend.testing import FakeKubernetes

NS = "default"


def test_a_seeded_source_watches_from_the_given_version_without_listing() -> None:
    clock = ManualClock(1000.0)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    store = ExecutorPodsSnapshotsStore(DeterministicScheduler(clock), clock)
    fake.create(PODS, NS, executor_pod(1, "Pending"))
    listed = fake.list(PODS, NS)  # recovery's list
    store.replace_snapshot(listed.items, listed.resource_version)
    fake.create(PODS, NS, executor_pod(2, "Pending"))  # after the list: the watch brings it
    fake.reset_calls()
    source = ExecutorPodsWatchSnapshotSource(fake, store, clock, namespace=NS, rng=lambda: 0.0)
    source.prepare(APP_ID)
    source.seed(listed.resource_version)
    source.run_once()
    assert [c.verb for c in fake.calls] == ["watch"]  # no list of its own
    assert {i: s.phase for i, s in store.current().pods.items()} == {1: PodPhase.PENDING, 2: PodPhase.PENDING}
    assert source.health()["relists"] == 1  # the shared list counts as the source's first


def test_seeding_is_ignored_without_a_version_or_once_the_source_has_its_own() -> None:
    clock = ManualClock(1000.0)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    store = ExecutorPodsSnapshotsStore(DeterministicScheduler(clock), clock)
    source = ExecutorPodsWatchSnapshotSource(fake, store, clock, namespace=NS, rng=lambda: 0.0)
    source.prepare(APP_ID)
    source.seed(None)
    source.run_once()
    assert [c.verb for c in fake.calls] == ["watch"]  # its own list: a streaming list
    assert source.health()["relists"] == 1
    version = source.health()["resource_version"]
    source.seed("1")
    assert source.health()["resource_version"] == version
