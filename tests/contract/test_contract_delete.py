"""Contract: delete, delete-collection, finalizers and owner-reference garbage collection."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contract_objects import NS, config_map, names, owner_ref, pod, rv
from contract_support import Control, StreamReader

from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS, KubernetesApi, NotFoundError, WatchStream

Reader = Callable[[WatchStream], StreamReader]


def test_delete_removes_and_emits_deleted_with_the_last_state(api: KubernetesApi, reader: Reader) -> None:
    created = api.create(PODS, NS, pod("p", {"a": "1"}))
    stream = reader(api.watch(PODS, NS, resource_version=created["metadata"]["resourceVersion"]))
    api.delete(PODS, NS, "p")
    with pytest.raises(NotFoundError):
        api.get(PODS, NS, "p")
    (event,) = stream.take(1)
    assert event.type == "DELETED"
    assert event.object["metadata"]["labels"] == {"a": "1"}
    assert rv(event.object) > rv(created)
    assert api.list(PODS, NS).items == []


def test_delete_with_zero_grace_period(api: KubernetesApi) -> None:
    api.create(PODS, NS, pod("p"))
    api.delete(PODS, NS, "p", grace_period_seconds=0)
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
    assert names(api.list(PODS, NS).items) == []
    assert names(api.list(CONFIG_MAPS, NS).items) == ["unowned"]


def test_deleting_a_namespace_deletes_its_objects(api: KubernetesApi) -> None:
    api.create(NAMESPACES, None, {"metadata": {"name": "doomed"}})
    api.create(PODS, "doomed", pod("p"))
    api.create(PODS, NS, pod("survivor"))
    api.delete(NAMESPACES, None, "doomed")
    assert api.list(PODS, "doomed").items == []
    assert names(api.list(PODS, NS).items) == ["survivor"]
