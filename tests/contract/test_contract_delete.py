"""Contract: delete, delete-collection, finalizers and owner-reference garbage collection."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contract_objects import NS, config_map, names, owner_ref, pod, rv
from contract_support import Control, StreamReader, create_pod_in_new_namespace, eventually

from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS, KubernetesApi, NotFoundError, WatchStream

Reader = Callable[[WatchStream], StreamReader]


def test_delete_removes_and_emits_deleted_with_the_last_state(api: KubernetesApi, reader: Reader) -> None:
    created = api.create(PODS, NS, pod("p", {"a": "1"}))
    stream = reader(api.watch(PODS, NS, resource_version=created["metadata"]["resourceVersion"]))
    api.delete(PODS, NS, "p")
    with pytest.raises(NotFoundError):
        api.get(PODS, NS, "p")
    # Pods are always deleted gracefully: first deletionTimestamp with a grace period of 0 (MODIFIED),
    # then the removal (DELETED), each at its own resourceVersion.
    terminating, deleted = stream.take(2)
    assert terminating.type == "MODIFIED"
    assert terminating.object["metadata"]["deletionTimestamp"]
    assert terminating.object["metadata"]["deletionGracePeriodSeconds"] == 0
    assert deleted.type == "DELETED"
    assert deleted.object["metadata"]["labels"] == {"a": "1"}
    assert deleted.object["metadata"]["deletionGracePeriodSeconds"] == 0
    assert rv(created) < rv(terminating.object) < rv(deleted.object)
    assert api.list(PODS, NS).items == []


def test_other_kinds_are_deleted_with_a_single_event(api: KubernetesApi, reader: Reader) -> None:
    created = api.create(CONFIG_MAPS, NS, config_map("c"))
    stream = reader(api.watch(CONFIG_MAPS, NS, resource_version=created["metadata"]["resourceVersion"]))
    api.delete(CONFIG_MAPS, NS, "c")
    (event,) = stream.take(1)
    assert event.type == "DELETED"
    assert stream.drain() == []


@pytest.mark.parametrize("grace", [0, -1])
def test_delete_with_zero_or_negative_grace_period(api: KubernetesApi, grace: int) -> None:
    # A negative grace period is not an error: the server reads it as 1 s (0 for an unscheduled pod).
    api.create(PODS, NS, pod("p"))
    api.delete(PODS, NS, "p", grace_period_seconds=grace)
    with pytest.raises(NotFoundError):
        api.get(PODS, NS, "p")


def test_delete_collection_by_label_selector(api: KubernetesApi) -> None:
    for name, role in (("e1", "executor"), ("e2", "executor"), ("d", "driver")):
        api.create(PODS, NS, pod(name, {"spark-role": role, "spark-app-selector": "app-1"}))
    api.create(PODS, "other", pod("e3", {"spark-role": "executor", "spark-app-selector": "app-1"}))
    api.delete_collection(PODS, NS, label_selector="spark-app-selector=app-1,spark-role=executor")
    assert names(api.list(PODS, NS).items) == ["d"]
    assert names(api.list(PODS, "other").items) == ["e3"]


def test_delete_collection_by_field_selector(api: KubernetesApi, control: Control) -> None:
    for name in ("a", "b", "c"):
        api.create(PODS, NS, pod(name))
    control.set_pod_status(NS, "b", {"phase": "Running"})
    api.delete_collection(PODS, NS, field_selector="status.phase=Pending")
    assert names(api.list(PODS, NS).items) == ["b"]


def test_finalizers_hold_an_object_until_removed(api: KubernetesApi, reader: Reader) -> None:
    created = api.create(CONFIG_MAPS, NS, config_map("c", finalizers=["example.com/hold"]))
    stream = reader(api.watch(CONFIG_MAPS, NS, resource_version=created["metadata"]["resourceVersion"]))
    api.delete(CONFIG_MAPS, NS, "c")
    held = api.get(CONFIG_MAPS, NS, "c")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["example.com/hold"]
    assert [e.type for e in stream.take(1)] == ["MODIFIED"]
    api.patch(CONFIG_MAPS, NS, "c", {"metadata": {"finalizers": None}})
    with pytest.raises(NotFoundError):
        api.get(CONFIG_MAPS, NS, "c")
    (deleted,) = stream.take(1)
    assert deleted.type == "DELETED"
    assert deleted.object["metadata"]["deletionTimestamp"]


def test_deleting_an_owner_deletes_its_dependents(api: KubernetesApi) -> None:
    owner = api.create(PODS, NS, pod("driver"))
    api.create(CONFIG_MAPS, NS, config_map("conf", ownerReferences=[owner_ref(owner)]))
    executor = pod("exec-1")
    executor["metadata"]["ownerReferences"] = [owner_ref(owner)]
    api.create(PODS, NS, executor)
    api.create(CONFIG_MAPS, NS, config_map("unowned"))
    api.delete(PODS, NS, "driver")
    # The real garbage collector deletes dependents in the background, shortly after their owner.
    eventually(lambda: names(api.list(PODS, NS).items), [])
    eventually(lambda: names(api.list(CONFIG_MAPS, NS).items), ["unowned"])


def test_an_orphaning_delete_keeps_the_dependents_and_drops_their_reference(api: KubernetesApi) -> None:
    owner = api.create(CONFIG_MAPS, NS, config_map("lease-like"))
    other = api.create(CONFIG_MAPS, NS, config_map("other-owner"))
    for name, refs in (("exec-1", [owner_ref(owner)]), ("exec-2", [owner_ref(owner), owner_ref(other)])):
        executor = pod(name)
        executor["metadata"]["ownerReferences"] = refs
        api.create(PODS, NS, executor)
    api.delete(CONFIG_MAPS, NS, "lease-like", orphan=True)

    def owners() -> dict[str, list[str]]:
        return {
            p["metadata"]["name"]: [r["name"] for r in p["metadata"].get("ownerReferences") or []]
            for p in api.list(PODS, NS).items
        }

    # The real garbage collector removes the references, then lifts the owner's "orphan" finalizer.
    eventually(owners, {"exec-1": [], "exec-2": ["other-owner"]})
    eventually(lambda: names(api.list(CONFIG_MAPS, NS).items), ["other-owner"])
    api.delete(CONFIG_MAPS, NS, "other-owner")  # an ordinary delete still collects what is left
    eventually(lambda: names(api.list(PODS, NS).items), ["exec-1"])


def test_deleting_a_namespace_deletes_its_objects(api: KubernetesApi) -> None:
    api.create(NAMESPACES, None, {"metadata": {"name": "doomed"}})
    create_pod_in_new_namespace(api, "doomed", pod("p"))
    api.create(PODS, NS, pod("survivor"))
    api.delete(NAMESPACES, None, "doomed")
    # The real namespace controller empties a Terminating namespace in the background.
    eventually(lambda: api.list(PODS, "doomed").items, [])
    assert names(api.list(PODS, NS).items) == ["survivor"]
