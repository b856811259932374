"""FakeKubernetes deletion: grace periods, finalizers, owner-reference GC, namespaces."""

from __future__ import annotations

import pytest
from fake_support import TEST_NAMESPACES

from k8s_backend.common import ManualClock, SystemClock
from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS, BadRequestError, NotFoundError, Obj
from k8s_backend.testing import FakeKubernetes

START = 1_700_000_000.0


def pod(name: str, grace: int | None = None, owners: list[Obj] | None = None, **meta: object) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "i"}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    body: Obj = {"metadata": {"name": name, **meta}, "spec": spec}
    if owners:
        body["metadata"]["ownerReferences"] = [ref(o) for o in owners]
    return body


def ref(owner: Obj) -> Obj:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }


def cm(name: str, owners: list[Obj] | None = None, **meta: object) -> Obj:
    body: Obj = {"metadata": {"name": name, **meta}}
    if owners:
        body["metadata"]["ownerReferences"] = [ref(o) for o in owners]
    return body


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def fake(clock: ManualClock) -> FakeKubernetes:
    return FakeKubernetes(
        namespaces=TEST_NAMESPACES, clock=clock, watch_blocking=False, graceful_pod_deletion=True
    )


def history(fake: FakeKubernetes, since: str, resource: object = PODS) -> list[tuple[str, str]]:
    stream = fake.watch(resource, None, resource_version=since)  # type: ignore[arg-type]
    return [(e.type, e.object["metadata"]["name"]) for e in stream]


def test_graceful_deletion_keeps_the_pod_until_finalized(fake: FakeKubernetes) -> None:
    created = fake.create(PODS, "ns", pod("p", grace=30))
    fake.delete(PODS, "ns", "p")
    terminating = fake.get(PODS, "ns", "p")
    assert terminating["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:50Z"  # now + grace
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
    fake.finalize(PODS, "ns", "p")
    with pytest.raises(NotFoundError):
        fake.get(PODS, "ns", "p")
    assert history(fake, created["metadata"]["resourceVersion"]) == [("MODIFIED", "p"), ("DELETED", "p")]


def test_graceful_deletion_ends_when_the_clock_passes_the_deadline(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("p"))  # default grace: 30 s
    fake.delete(PODS, "ns", "p")
    fake.advance(29)
    assert fake.get(PODS, "ns", "p")["metadata"]["deletionTimestamp"]
    fake.advance(1)
    with pytest.raises(NotFoundError):
        fake.get(PODS, "ns", "p")


def test_tick_uses_any_clock(clock: ManualClock) -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, clock=clock, graceful_pod_deletion=True)
    fake.create(PODS, "ns", pod("p", grace=5))
    fake.delete(PODS, "ns", "p")
    fake.tick()
    assert fake.objects(PODS)
    clock.advance(5)
    fake.tick()
    assert fake.objects(PODS) == []


def test_advance_needs_a_manual_clock() -> None:
    with pytest.raises(TypeError, match="ManualClock"):
        FakeKubernetes(namespaces=TEST_NAMESPACES, clock=SystemClock()).advance(1)


def test_explicit_grace_period_overrides_the_pod_and_zero_is_immediate(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("a", grace=30))
    fake.delete(PODS, "ns", "a", grace_period_seconds=5)
    assert fake.get(PODS, "ns", "a")["metadata"]["deletionGracePeriodSeconds"] == 5
    fake.create(PODS, "ns", pod("b", grace=30))
    fake.delete(PODS, "ns", "b", grace_period_seconds=0)
    assert [p["metadata"]["name"] for p in fake.objects(PODS)] == ["a"]


def test_deleting_again_can_only_shorten_the_grace_period(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("p", grace=30))
    fake.delete(PODS, "ns", "p")
    version = fake.resource_version
    fake.delete(PODS, "ns", "p", grace_period_seconds=60)  # longer: ignored
    fake.delete(PODS, "ns", "p")  # same: ignored
    assert fake.resource_version == version
    fake.delete(PODS, "ns", "p", grace_period_seconds=10)
    assert fake.get(PODS, "ns", "p")["metadata"]["deletionGracePeriodSeconds"] == 10
    fake.advance(10)
    assert fake.objects(PODS) == []
    fake.create(PODS, "ns", pod("q", grace=30))
    fake.delete(PODS, "ns", "q")
    fake.delete(PODS, "ns", "q", grace_period_seconds=0)  # force
    assert fake.objects(PODS) == []


def test_terminated_pods_are_removed_at_once(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("p", grace=30))
    fake.patch_status(PODS, "ns", "p", {"phase": "Failed"})
    fake.delete(PODS, "ns", "p")
    assert fake.objects(PODS) == []


def test_without_graceful_deletion_pods_go_at_once_with_a_deletion_timestamp(clock: ManualClock) -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, clock=clock, watch_blocking=False)
    created = fake.create(PODS, "ns", pod("p", grace=30))
    fake.delete(PODS, "ns", "p")
    assert fake.objects(PODS) == []
    # As a real API server: MODIFIED with deletionTimestamp and a grace period of 0, then DELETED.
    terminating, event = fake.watch(PODS, "ns", resource_version=created["metadata"]["resourceVersion"])
    assert terminating.type == "MODIFIED"
    assert terminating.object["metadata"]["deletionGracePeriodSeconds"] == 0
    assert event.type == "DELETED"
    assert event.object["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:20Z"


def test_finalize_needs_a_terminating_object(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("p"))
    with pytest.raises(BadRequestError, match="not being deleted"):
        fake.finalize(PODS, "ns", "p")
    with pytest.raises(NotFoundError):
        fake.finalize(PODS, "ns", "nope")


def test_finalizers_keep_a_finalized_pod_until_removed(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("p", finalizers=["x.io/hold"]))
    fake.delete(PODS, "ns", "p")
    fake.finalize(PODS, "ns", "p")
    assert fake.get(PODS, "ns", "p")["metadata"]["finalizers"] == ["x.io/hold"]
    fake.patch(PODS, "ns", "p", {"metadata": {"finalizers": []}})
    assert fake.objects(PODS) == []


def test_removing_finalizers_before_the_grace_period_ends_keeps_the_pod(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod("p", finalizers=["x.io/hold"]))
    fake.delete(PODS, "ns", "p")
    fake.patch(PODS, "ns", "p", {"metadata": {"finalizers": None}})
    assert fake.get(PODS, "ns", "p")["metadata"]["deletionTimestamp"]
    fake.finalize(PODS, "ns", "p")
    assert fake.objects(PODS) == []


def test_removing_the_last_finalizer_emits_only_deleted(fake: FakeKubernetes) -> None:
    fake.create(CONFIG_MAPS, "ns", cm("c", finalizers=["a.io/x", "b.io/y"]))
    fake.delete(CONFIG_MAPS, "ns", "c")
    version = fake.resource_version
    fake.patch(CONFIG_MAPS, "ns", "c", {"metadata": {"finalizers": ["b.io/y"]}})
    removed = fake.patch(CONFIG_MAPS, "ns", "c", {"metadata": {"finalizers": None}})
    assert removed["metadata"]["deletionTimestamp"]
    assert history(fake, version, CONFIG_MAPS) == [("MODIFIED", "c"), ("DELETED", "c")]


def test_garbage_collection_cascades_through_generations(fake: FakeKubernetes) -> None:
    root = fake.create(CONFIG_MAPS, "ns", cm("root"))
    child = fake.create(CONFIG_MAPS, "ns", cm("child", owners=[root]))
    fake.create(CONFIG_MAPS, "ns", cm("grandchild", owners=[child]))
    fake.create(CONFIG_MAPS, "other", cm("cross-namespace", owners=[child]))
    fake.create(CONFIG_MAPS, "ns", cm("bystander"))
    version = fake.resource_version
    fake.delete(CONFIG_MAPS, "ns", "root")
    assert [c["metadata"]["name"] for c in fake.objects(CONFIG_MAPS)] == ["bystander"]
    deleted = history(fake, version, CONFIG_MAPS)
    assert deleted[0] == ("DELETED", "root")  # the owner goes first
    assert sorted(deleted[1:]) == [
        ("DELETED", "child"),
        ("DELETED", "cross-namespace"),
        ("DELETED", "grandchild"),
    ]


def test_dependents_with_another_live_owner_only_lose_the_reference(fake: FakeKubernetes) -> None:
    first = fake.create(CONFIG_MAPS, "ns", cm("first"))
    second = fake.create(CONFIG_MAPS, "ns", cm("second"))
    fake.create(CONFIG_MAPS, "ns", cm("shared", owners=[first, second]))
    fake.delete(CONFIG_MAPS, "ns", "first")
    shared = fake.get(CONFIG_MAPS, "ns", "shared")
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["second"]
    fake.delete(CONFIG_MAPS, "ns", "second")
    assert fake.objects(CONFIG_MAPS) == []


def test_garbage_collected_pods_are_deleted_gracefully(fake: FakeKubernetes) -> None:
    owner = fake.create(CONFIG_MAPS, "ns", cm("owner"))
    fake.create(PODS, "ns", pod("p", owners=[owner]))
    fake.delete(CONFIG_MAPS, "ns", "owner")
    assert fake.get(PODS, "ns", "p")["metadata"]["deletionTimestamp"]
    fake.finalize(PODS, "ns", "p")
    assert fake.objects(PODS) == []


def test_a_patch_that_drops_the_owner_reference_stops_collection(fake: FakeKubernetes) -> None:
    owner = fake.create(CONFIG_MAPS, "ns", cm("owner"))
    fake.create(CONFIG_MAPS, "ns", cm("dep", owners=[owner]))
    fake.patch(CONFIG_MAPS, "ns", "dep", {"metadata": {"ownerReferences": None}})
    fake.delete(CONFIG_MAPS, "ns", "owner")
    assert [c["metadata"]["name"] for c in fake.objects(CONFIG_MAPS)] == ["dep"]


def test_long_ownership_chains_do_not_recurse(clock: ManualClock) -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES, clock=clock)
    previous = fake.create(CONFIG_MAPS, "ns", cm("c0"))
    for i in range(1, 1500):
        previous = fake.create(CONFIG_MAPS, "ns", cm(f"c{i}", owners=[previous]))
    fake.delete(CONFIG_MAPS, "ns", "c0")
    assert fake.objects(CONFIG_MAPS) == []


def test_deleting_a_namespace_deletes_everything_in_it(fake: FakeKubernetes) -> None:
    fake.create(NAMESPACES, None, {"metadata": {"name": "gone"}})
    fake.create(PODS, "gone", pod("p", grace=0))
    fake.create(CONFIG_MAPS, "gone", cm("c"))
    fake.create(CONFIG_MAPS, "kept", cm("c"))
    fake.delete(NAMESPACES, None, "gone")
    assert fake.objects(PODS, "gone") == []
    assert [c["metadata"]["namespace"] for c in fake.objects(CONFIG_MAPS)] == ["kept"]


def test_delete_collection_spans_namespaces_when_none_is_given(fake: FakeKubernetes) -> None:
    fake.create(CONFIG_MAPS, "a", cm("c", labels={"app": "x"}))
    fake.create(CONFIG_MAPS, "b", cm("c", labels={"app": "x"}))
    fake.create(CONFIG_MAPS, "b", cm("d", labels={"app": "y"}))
    fake.delete_collection(CONFIG_MAPS, None, label_selector="app=x")
    assert [c["metadata"]["name"] for c in fake.objects(CONFIG_MAPS)] == ["d"]


def test_negative_grace_periods_are_read_as_one_second(fake: FakeKubernetes) -> None:
    # As a real API server (v1.37.2): no error, the pod gets deletionGracePeriodSeconds 1.
    fake.create(PODS, "ns", pod("p"))
    fake.delete(PODS, "ns", "p", grace_period_seconds=-1)
    assert fake.get(PODS, "ns", "p")["metadata"]["deletionGracePeriodSeconds"] == 1
