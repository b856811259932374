"""FakeKubernetes updates: update() with optimistic concurrency, status, no-op writes, immutable fields."""

from __future__ import annotations

import pytest
from fake_support import TEST_NAMESPACES

from k8s_backend.kube.port import (
    CONFIG_MAPS,
    PODS,
    BadRequestError,
    ConflictError,
    InvalidError,
    NotFoundError,
    Obj,
)
from k8s_backend.testing import FakeKubernetes


def pod(name: str = "p") -> Obj:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


@pytest.fixture
def fake() -> FakeKubernetes:
    return FakeKubernetes(namespaces=TEST_NAMESPACES, watch_blocking=False)


def events(fake: FakeKubernetes, since: str) -> list[tuple[str, str]]:
    return [
        (e.type, e.object["metadata"]["resourceVersion"])
        for e in fake.watch(PODS, "ns", resource_version=since)
    ]


def test_update_replaces_the_object(fake: FakeKubernetes) -> None:
    created = fake.create(
        CONFIG_MAPS, "ns", {"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"k": "v"}}
    )
    replacement = {**created, "data": {"other": "x"}, "metadata": {**created["metadata"], "labels": {}}}
    updated = fake.update(CONFIG_MAPS, "ns", replacement)
    assert updated["data"] == {"other": "x"}
    assert "labels" not in updated["metadata"]  # emptied: omitted, as the real server does
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_update_with_a_stale_version_conflicts(fake: FakeKubernetes) -> None:
    created = fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}, "data": {"k": "v1"}})
    fake.update(CONFIG_MAPS, "ns", {**created, "data": {"k": "v2"}})
    with pytest.raises(ConflictError) as caught:
        fake.update(CONFIG_MAPS, "ns", {**created, "data": {"k": "v3"}})
    assert caught.value.reason == "Conflict"
    assert "the object has been modified" in caught.value.message
    assert fake.get(CONFIG_MAPS, "ns", "c")["data"] == {"k": "v2"}


def test_update_without_a_version_is_unconditional(fake: FakeKubernetes) -> None:
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}, "data": {"k": "v1"}})
    updated = fake.update(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}, "data": {"k": "v2"}})
    assert updated["data"] == {"k": "v2"}
    assert updated["metadata"]["uid"]  # server fields kept


def test_update_needs_a_name_and_an_existing_object(fake: FakeKubernetes) -> None:
    with pytest.raises(BadRequestError, match=r"metadata\.name"):
        fake.update(CONFIG_MAPS, "ns", {"metadata": {}})
    with pytest.raises(NotFoundError):
        fake.update(CONFIG_MAPS, "ns", {"metadata": {"name": "nope"}})
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c"}})
    with pytest.raises(BadRequestError, match="kind"):
        fake.update(CONFIG_MAPS, "ns", {"kind": "Pod", "metadata": {"name": "c"}})


def test_patch_status_replaces_status_and_emits_modified(fake: FakeKubernetes) -> None:
    created = fake.create(PODS, "ns", pod())
    status = {"phase": "Running", "podIP": "10.0.0.1"}
    updated = fake.patch_status(PODS, "ns", "p", status)
    status["phase"] = "changed by the caller"
    assert updated["status"] == {"phase": "Running", "podIP": "10.0.0.1"}
    assert fake.get(PODS, "ns", "p")["status"]["phase"] == "Running"
    assert events(fake, created["metadata"]["resourceVersion"]) == [
        ("MODIFIED", updated["metadata"]["resourceVersion"])
    ]


def test_update_and_patch_keep_the_status(fake: FakeKubernetes) -> None:
    created = fake.create(PODS, "ns", pod())
    fake.patch_status(PODS, "ns", "p", {"phase": "Running"})
    updated = fake.update(PODS, "ns", {**created, "status": {"phase": "Failed"}, "metadata": {"name": "p"}})
    assert updated["status"] == {"phase": "Running"}


def test_writes_that_change_nothing_write_nothing(fake: FakeKubernetes) -> None:
    created = fake.create(PODS, "ns", {**pod(), "metadata": {"name": "p", "labels": {"a": "1"}}})
    version = fake.resource_version
    assert fake.patch(PODS, "ns", "p", {"metadata": {"labels": {"a": "1"}}}) == created
    fake.patch_status(PODS, "ns", "p", created["status"])
    fake.update(PODS, "ns", created)
    assert fake.resource_version == version
    assert events(fake, version) == []


def test_server_fields_cannot_be_changed_by_a_patch(fake: FakeKubernetes) -> None:
    created = fake.create(PODS, "ns", pod())
    patched = fake.patch(
        PODS,
        "ns",
        "p",
        {
            "metadata": {
                "creationTimestamp": "2000-01-01T00:00:00Z",
                "deletionTimestamp": "2000-01-01T00:00:00Z",
            }
        },
    )
    assert patched["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert "deletionTimestamp" not in patched["metadata"]
    with pytest.raises(InvalidError, match=r"metadata\.uid: Invalid value"):
        fake.patch(PODS, "ns", "p", {"metadata": {"uid": "other"}})
    with pytest.raises(BadRequestError, match="does not match the name"):
        fake.patch(PODS, "ns", "p", {"metadata": {"name": "q"}})
    with pytest.raises(BadRequestError, match="does not match the namespace"):
        fake.patch(PODS, "ns", "p", {"metadata": {"namespace": "elsewhere"}})


def test_pod_spec_changes_other_than_images_are_forbidden(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod())
    with pytest.raises(InvalidError, match="spec: Forbidden: pod updates may not change fields"):
        fake.patch(PODS, "ns", "p", {"spec": {"nodeName": "node-1"}})
    patched = fake.patch(
        PODS, "ns", "p", {"spec": {"activeDeadlineSeconds": 5, "tolerations": [{"key": "k"}]}}
    )
    assert patched["spec"]["activeDeadlineSeconds"] == 5


def test_bind_sets_the_node_once(fake: FakeKubernetes) -> None:
    fake.create(PODS, "ns", pod())
    assert fake.bind("ns", "p", "node-1")["spec"]["nodeName"] == "node-1"
    with pytest.raises(ConflictError, match='already assigned to node "node-1"'):
        fake.bind("ns", "p", "node-2")


def test_finalizers_cannot_be_added_while_deleting(fake: FakeKubernetes) -> None:
    fake.create(CONFIG_MAPS, "ns", {"metadata": {"name": "c", "finalizers": ["a.io/x"]}})
    fake.delete(CONFIG_MAPS, "ns", "c")
    with pytest.raises(InvalidError, match="no new finalizers can be added"):
        fake.patch(CONFIG_MAPS, "ns", "c", {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}})
