"""The fake's patch algorithms: JSON merge patch, strategic merge patch, JSON patch."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_backend.kube.port import JSON_PATCH, MERGE_PATCH, PODS, ApiError, BadRequestError, InvalidError, Obj
from k8s_backend.memkube.patch import apply_patch, json_patch, merge_patch, strategic_merge_patch


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
        ({"a": 1, "b": 2}, {"a": None}, {"b": 2}),
        ({"a": {"x": 1, "y": 2}}, {"a": {"y": None, "z": 3}}, {"a": {"x": 1, "z": 3}}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
        ({"a": 1}, {"a": {"b": None}}, {"a": {}}),
        ({"a": {"b": 1}}, {"a": 5}, {"a": 5}),
    ],
)
def test_merge_patch(target: Obj, patch: Obj, expected: Obj) -> None:
    before = repr(target)
    assert merge_patch(target, patch) == expected
    assert repr(target) == before  # the target is not modified


def test_merge_patch_result_shares_nothing_with_the_patch() -> None:
    patch = {"a": {"b": [1]}}
    result = merge_patch({}, patch)
    result["a"]["b"].append(2)
    assert patch == {"a": {"b": [1]}}


def spec(*containers: Obj, **extra: Any) -> Obj:
    return {"spec": {"containers": list(containers), **extra}}


def test_strategic_merge_merges_containers_and_env_by_name() -> None:
    target = spec(
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "b", "image": "b:1"},
    )
    patch = spec({"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]})
    merged = strategic_merge_patch(target, patch)
    assert merged["spec"]["containers"] == [
        {
            "name": "a",
            "image": "a:1",
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}],
        },
        {"name": "b", "image": "b:1"},
    ]


def test_strategic_merge_directives() -> None:
    target = spec({"name": "a", "image": "a"}, {"name": "b", "image": "b"}, volumes=[{"name": "v"}])
    deleted = strategic_merge_patch(target, spec({"name": "a", "$patch": "delete"}))
    assert [c["name"] for c in deleted["spec"]["containers"]] == ["b"]
    replaced = strategic_merge_patch(target, spec({"name": "c", "image": "c"}, {"$patch": "replace"}))
    assert replaced["spec"]["containers"] == [{"name": "c", "image": "c"}]
    whole_map = strategic_merge_patch(
        {"metadata": {"labels": {"a": "1"}}}, {"metadata": {"labels": {"$patch": "replace", "b": "2"}}}
    )
    assert whole_map["metadata"]["labels"] == {"b": "2"}
    ordered = strategic_merge_patch(target, {"spec": {"$setElementOrder/containers": [{"name": "b"}]}})
    assert ordered == target
    retained = strategic_merge_patch({"spec": {"a": 1, "b": 2}}, {"spec": {"$retainKeys": ["b"], "b": 3}})
    assert retained == {"spec": {"b": 3}}
    with pytest.raises(BadRequestError, match="unknown strategic merge patch directive"):
        strategic_merge_patch(target, {"spec": {"$patch": "explode"}})
    with pytest.raises(BadRequestError, match="whole object"):
        strategic_merge_patch(target, {"$patch": "delete"})


def test_strategic_merge_treats_finalizers_as_a_set() -> None:
    target = {"metadata": {"finalizers": ["a", "b"]}}
    assert strategic_merge_patch(target, {"metadata": {"finalizers": ["b", "c"]}})["metadata"][
        "finalizers"
    ] == [
        "a",
        "b",
        "c",
    ]
    removed = strategic_merge_patch(target, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert removed["metadata"]["finalizers"] == ["b"]


def test_strategic_merge_replaces_lists_without_a_merge_key_and_removes_nulls() -> None:
    target = {"spec": {"tolerations": [{"key": "a"}], "nodeSelector": {"x": "1", "y": "2"}}}
    patch = {"spec": {"tolerations": [{"key": "b"}], "nodeSelector": {"x": None}}}
    assert strategic_merge_patch(target, patch) == {
        "spec": {"tolerations": [{"key": "b"}], "nodeSelector": {"y": "2"}}
    }


def test_strategic_merge_needs_objects_in_keyed_lists() -> None:
    with pytest.raises(BadRequestError, match="keyed by 'name'"):
        strategic_merge_patch(spec(), {"spec": {"containers": ["not-an-object"]}})


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/l/-", "value": 9}], {"a": {"b": 1}, "l": [1, 2, 9]}),
        ([{"op": "add", "path": "/l/0", "value": 0}], {"a": {"b": 1}, "l": [0, 1, 2]}),
        ([{"op": "remove", "path": "/l/0"}], {"a": {"b": 1}, "l": [2]}),
        ([{"op": "replace", "path": "/l/1", "value": 5}], {"a": {"b": 1}, "l": [1, 5]}),
        ([{"op": "move", "from": "/a/b", "path": "/c"}], {"a": {}, "l": [1, 2], "c": 1}),
        ([{"op": "copy", "from": "/a", "path": "/d"}], {"a": {"b": 1}, "l": [1, 2], "d": {"b": 1}}),
        ([{"op": "test", "path": "/a/b", "value": 1}], {"a": {"b": 1}, "l": [1, 2]}),
        ([{"op": "add", "path": "/a/x~0y~1z", "value": 1}], {"a": {"b": 1, "x~y/z": 1}, "l": [1, 2]}),
    ],
)
def test_json_patch(ops: list[Obj], expected: Obj) -> None:
    assert json_patch({"a": {"b": 1}, "l": [1, 2]}, ops) == expected


@pytest.mark.parametrize(
    ("ops", "error", "fragment"),
    [
        ([{"op": "replace", "path": "/missing", "value": 1}], InvalidError, "missing path"),
        ([{"op": "remove", "path": "/a/zz"}], InvalidError, "nonexistent"),
        ([{"op": "add", "path": "/x/y", "value": 1}], InvalidError, "missing path"),
        ([{"op": "add", "path": "/l/7", "value": 1}], InvalidError, "out of range"),
        ([{"op": "test", "path": "/a/b", "value": 2}], InvalidError, "testing value /a/b failed"),
        ([{"op": "add", "path": "", "value": [1]}], InvalidError, "not an object"),
        ([{"op": "remove", "path": ""}], InvalidError, "whole document"),
        ([{"op": "jump", "path": "/a"}], BadRequestError, "unknown JSON patch operation 'jump'"),
        ([{"path": "/a"}], BadRequestError, "needs 'op' and 'path'"),
        ([{"op": "add", "path": "/a"}], BadRequestError, "needs a 'value'"),
        ([{"op": "add", "path": "a", "value": 1}], BadRequestError, "JSON pointer"),
        ([{"op": "move", "path": "/a"}], BadRequestError, "'from'"),
    ],
)
def test_json_patch_errors(ops: list[Obj], error: type[ApiError], fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        json_patch({"a": {"b": 1}, "l": [1, 2]}, ops)


def test_apply_patch_checks_the_body_shape_and_content_type() -> None:
    with pytest.raises(BadRequestError, match="list of operations"):
        apply_patch(PODS, {}, {"op": "add"}, JSON_PATCH)
    with pytest.raises(BadRequestError, match="must be a JSON object"):
        apply_patch(PODS, {}, [{"op": "add"}], MERGE_PATCH)
    with pytest.raises(ApiError) as caught:
        apply_patch(PODS, {}, {}, "application/apply-patch+yaml")
    assert caught.value.status == 415


def test_strategic_merge_uses_each_list_merge_key() -> None:
    target = {
        "spec": {"containers": [{"name": "a", "volumeMounts": [{"mountPath": "/x", "name": "v1"}]}]},
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]
        },
    }
    patch = {
        "spec": {"containers": [{"name": "a", "volumeMounts": [{"mountPath": "/x", "readOnly": True}]}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    merged = strategic_merge_patch(target, patch)
    assert merged["spec"]["containers"][0]["volumeMounts"] == [
        {"mountPath": "/x", "name": "v1", "readOnly": True}
    ]
    assert merged["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_strategic_merge_replace_directive_in_a_list_without_merge_key() -> None:
    target = {"spec": {"tolerations": [{"key": "a"}]}}
    patch = {"spec": {"tolerations": [{"key": "b"}, {"$patch": "replace"}]}}
    assert strategic_merge_patch(target, patch) == {"spec": {"tolerations": [{"key": "b"}]}}
