"""The three PATCH flavours of the API server: JSON merge patch, strategic merge patch and JSON patch.

All functions return a new object and never modify their arguments.
"""

from __future__ import annotations

from typing import Any

from k8s_backend.kube.port import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, Obj, Resource
from k8s_backend.memkube.errors import api_error, bad_request, unsupported_media_type
from k8s_backend.memkube.store import json_copy

# Lists that strategic merge patch merges item by item, by the key named here (from the Kubernetes
# types' patchMergeKey tags). Lists not named here are replaced whole, as for types without a merge key.
_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "conditions": "type",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
}
# Lists of scalars that strategic merge patch treats as sets (patchStrategy "merge").
_SET_LISTS = frozenset({"finalizers"})

_DIRECTIVE = "$patch"
_DELETE_FROM = "$deleteFromPrimitiveList/"
_ORDER = "$setElementOrder/"
_RETAIN_KEYS = "$retainKeys"


def apply_patch(resource: Resource, obj: Obj, patch: Obj | list[Obj], patch_type: str) -> Obj:
    """Apply a patch of the given content type; 400/415/422 ApiErrors as the server answers them."""
    if patch_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request(f"a JSON patch must be a list of operations, got {type(patch).__name__}")
        return json_patch(obj, patch)
    if patch_type not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        raise unsupported_media_type(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH} (got {patch_type!r})"
        )
    if not isinstance(patch, dict):
        raise bad_request(f"a {patch_type} patch must be a JSON object, got {type(patch).__name__}")
    if patch_type == MERGE_PATCH:
        merged = merge_patch(obj, patch)
        assert isinstance(merged, dict)
        return merged
    if resource.group:
        # The server has no Go types (and so no merge keys) for custom resources.
        raise unsupported_media_type(
            "strategic merge patch is not supported for custom resources "
            f"({resource.plural}.{resource.group}); use {MERGE_PATCH} or {JSON_PATCH}"
        )
    return strategic_merge_patch(obj, patch)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` removes a key, anything else replaces."""
    return _merge(json_copy(target), patch)


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def strategic_merge_patch(target: Obj, patch: Obj) -> Obj:
    """Kubernetes strategic merge patch: merge patch, plus keyed list merges and ``$patch`` directives."""
    merged = _strategic_map(json_copy(target), json_copy(patch))
    if not isinstance(merged, dict):
        raise bad_request("a strategic merge patch cannot delete the whole object (top-level $patch: delete)")
    return merged


def _strategic_map(target: Any, patch: dict[str, Any]) -> Any:
    directive = patch.pop(_DIRECTIVE, None)
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: v for k, v in patch.items() if v is not None}
    if directive is not None:
        raise bad_request(f"unknown strategic merge patch directive $patch={directive!r}")
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.pop(_RETAIN_KEYS, None)
    for key, value in patch.items():
        if key.startswith(_ORDER):
            continue  # ordering hints only
        if key.startswith(_DELETE_FROM):
            field = key[len(_DELETE_FROM) :]
            doomed = set(value or [])
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in doomed]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _strategic_map(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _strategic_list(key, result.get(key), value)
        else:
            result[key] = value
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _strategic_list(field: str, target: Any, patch: list[Any]) -> list[Any]:
    current = target if isinstance(target, list) else []
    if field in _SET_LISTS:
        return current + [v for v in patch if v not in current]
    merge_key = _MERGE_KEYS.get(field)
    if merge_key is None:
        if any(isinstance(item, dict) and item.get(_DIRECTIVE) == "replace" for item in patch):
            return [item for item in patch if not (isinstance(item, dict) and _DIRECTIVE in item)]
        return patch
    result = list(current)
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(
                f"strategic merge patch: items of {field!r} must be objects keyed by {merge_key!r}"
            )
        if item.get(_DIRECTIVE) == "replace":
            return [i for i in patch if not (isinstance(i, dict) and _DIRECTIVE in i)]
        key = item.get(merge_key)
        position = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(merge_key) == key
            ),
            None,
        )
        if item.get(_DIRECTIVE) == "delete":
            if position is not None:
                del result[position]
            continue
        if position is None:
            result.append(_strategic_map({}, item))
        else:
            result[position] = _strategic_map(result[position], item)
    return result


# --- RFC 6902 JSON patch --------------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise bad_request(f"JSON patch path {path!r} must be a JSON pointer starting with '/'")
    if path == "":
        return []
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _patch_failed(message: str) -> Exception:
    # The server answers a patch that does not apply with 422 (it validated the request's content).
    return api_error(
        422, "Invalid", f"the server rejected our request due to an error in our request: {message}"
    )


def _parent(doc: Any, parts: list[str], path: str) -> tuple[Any, str]:
    current = doc
    for part in parts[:-1]:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise _patch_failed(f"doc is missing path: {path!r}")
    return current, parts[-1]


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _patch_failed(f"doc is missing path: {path!r}")


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _patch_failed(f"index out of range in path {path!r}")
    else:
        raise _patch_failed(f"doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise _patch_failed("cannot remove the whole document")
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise _patch_failed(f"unable to remove nonexistent key: {path!r}")
    return doc


def json_patch(obj: Obj, operations: list[Obj]) -> Obj:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    doc: Any = json_copy(obj)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise bad_request(f"invalid JSON patch operation {operation!r}: needs 'op' and 'path'")
        op, path = operation["op"], operation["path"]
        value = json_copy(operation.get("value"))
        if op in ("add", "replace", "test") and "value" not in operation:
            raise bad_request(f"JSON patch operation {op!r} on {path!r} needs a 'value'")
        if op == "add":
            doc = _add(doc, path, value)
        elif op == "remove":
            doc = _remove(doc, path)
        elif op == "replace":
            _get(doc, path)  # the target must exist
            doc = _add(_remove(doc, path), path, value) if _pointer(path) else value
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise bad_request(f"JSON patch operation {op!r} needs a 'from' path")
            moved = json_copy(_get(doc, source))
            if op == "move":
                doc = _remove(doc, source)
            doc = _add(doc, path, moved)
        elif op == "test":
            if _get(doc, path) != value:
                raise _patch_failed(f"testing value {path} failed")
        else:
            raise bad_request(
                f"unknown JSON patch operation {op!r}; use add, remove, replace, move, copy or test"
            )
    if not isinstance(doc, dict):
        raise _patch_failed("the patched document is not an object")
    return doc
