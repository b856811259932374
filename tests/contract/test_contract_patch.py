"""Contract: JSON merge, strategic merge and JSON patches, with the server's update rules."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contract_objects import NS, config_map, pod, pod_group, rv
from contract_support import StreamReader

from k8s_backend.kube.port import (
    CONFIG_MAPS,
    JSON_PATCH,
    MERGE_PATCH,
    POD_GROUPS,
    PODS,
    STRATEGIC_MERGE_PATCH,
    ApiError,
    ConflictError,
    InvalidError,
    KubernetesApi,
    WatchStream,
)

Reader = Callable[[WatchStream], StreamReader]


def test_merge_patch_adds_and_removes_labels(api: KubernetesApi, reader: Reader) -> None:
    created = api.create(PODS, NS, pod("p", {"keep": "1", "drop": "1"}))
    stream = reader(api.watch(PODS, NS, resource_version=created["metadata"]["resourceVersion"]))
    patched = api.patch(
        PODS, NS, "p", {"metadata": {"labels": {"new": "1", "drop": None}}}, patch_type=MERGE_PATCH
    )
    assert patched["metadata"]["labels"] == {"keep": "1", "new": "1"}
    assert rv(patched) > rv(created)
    assert patched["metadata"]["uid"] == created["metadata"]["uid"]
    (event,) = stream.take(1)
    assert event.type == "MODIFIED"
    assert event.object["metadata"]["labels"] == {"keep": "1", "new": "1"}


def test_strategic_merge_patch_merges_labels_and_containers_by_name(api: KubernetesApi) -> None:
    body = pod("p", {"a": "1"})
    body["spec"]["containers"].append({"name": "side", "image": "side:1"})
    api.create(PODS, NS, body)
    patch = {
        "metadata": {"labels": {"spark-exec-inactive": "true"}},
        "spec": {"containers": [{"name": "side", "image": "side:2"}]},
    }
    patched = api.patch(PODS, NS, "p", patch, patch_type=STRATEGIC_MERGE_PATCH)
    assert patched["metadata"]["labels"] == {"a": "1", "spark-exec-inactive": "true"}
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [
        ("main", "busybox:1"),
        ("side", "side:2"),
    ]


def test_json_patch_operations(api: KubernetesApi) -> None:
    api.create(CONFIG_MAPS, NS, config_map("c", {"a": "1"}))
    patched = api.patch(
        CONFIG_MAPS,
        NS,
        "c",
        [
            {"op": "test", "path": "/metadata/labels/a", "value": "1"},
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "replace", "path": "/data/key", "value": "new"},
            {"op": "remove", "path": "/metadata/labels/a"},
            {"op": "add", "path": "/metadata/labels/x~1y", "value": "slash"},
        ],
        patch_type=JSON_PATCH,
    )
    assert patched["metadata"]["labels"] == {"b": "2", "x/y": "slash"}
    assert patched["data"] == {"key": "new"}


def test_failed_json_patch_test_changes_nothing(api: KubernetesApi) -> None:
    created = api.create(CONFIG_MAPS, NS, config_map("c", {"a": "1"}))
    with pytest.raises(InvalidError):
        api.patch(
            CONFIG_MAPS,
            NS,
            "c",
            [
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "test", "path": "/metadata/labels/a", "value": "other"},
            ],
            patch_type=JSON_PATCH,
        )
    assert api.get(CONFIG_MAPS, NS, "c") == created


def test_patch_with_a_stale_resource_version_conflicts(api: KubernetesApi) -> None:
    created = api.create(CONFIG_MAPS, NS, config_map("c"))
    api.patch(CONFIG_MAPS, NS, "c", {"data": {"key": "v2"}})
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"key": "v3"}}
    with pytest.raises(ConflictError):
        api.patch(CONFIG_MAPS, NS, "c", stale)
    current = api.get(CONFIG_MAPS, NS, "c")
    fresh = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]}, "data": {"key": "v3"}}
    assert api.patch(CONFIG_MAPS, NS, "c", fresh)["data"] == {"key": "v3"}


def test_patch_cannot_make_an_object_invalid(api: KubernetesApi) -> None:
    api.create(PODS, NS, pod("p"))
    with pytest.raises(InvalidError, match=r"metadata\.labels"):
        api.patch(PODS, NS, "p", {"metadata": {"labels": {"bad key": "1"}}})


def test_pod_status_is_not_written_through_the_pod(api: KubernetesApi) -> None:
    api.create(PODS, NS, pod("p"))
    patched = api.patch(PODS, NS, "p", {"status": {"phase": "Running"}, "metadata": {"labels": {"x": "1"}}})
    assert patched["status"]["phase"] == "Pending"
    assert patched["metadata"]["labels"] == {"x": "1"}


def test_pod_spec_is_immutable_apart_from_images(api: KubernetesApi) -> None:
    api.create(PODS, NS, pod("p"))
    with pytest.raises(InvalidError, match="Forbidden"):
        api.patch(PODS, NS, "p", {"spec": {"restartPolicy": "Never"}})
    patched = api.patch(
        PODS,
        NS,
        "p",
        {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}},
        patch_type=STRATEGIC_MERGE_PATCH,
    )
    assert patched["spec"]["containers"][0]["image"] == "busybox:2"


def test_custom_resources_take_merge_but_not_strategic_patches(api: KubernetesApi) -> None:
    api.create(POD_GROUPS, NS, pod_group("g", 1))
    assert api.patch(POD_GROUPS, NS, "g", {"metadata": {"labels": {"a": "1"}}})["metadata"]["labels"] == {
        "a": "1"
    }
    with pytest.raises(ApiError) as caught:
        api.patch(POD_GROUPS, NS, "g", {"spec": {"minMember": 2}}, patch_type=STRATEGIC_MERGE_PATCH)
    assert caught.value.status == 415
