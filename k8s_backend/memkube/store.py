"""The object storage of InMemoryKubernetes: objects by kind, namespace and name, plus uid and owner indexes.

Stored dicts are never modified after they are stored (a write stores a new dict), so readers may share
them until they copy them for a caller. The store does not lock: InMemoryKubernetes holds its lock.
"""

from __future__ import annotations

import copy
import marshal
from collections.abc import Iterator
from typing import Any, TypeVar

from k8s_backend.kube.port import Obj, Resource

T = TypeVar("T")
_IMMUTABLE = (str, int, float, bool, type(None))

ResKey = tuple[str, str]
"""A kind of object: (API group, plural)."""

ObjKey = tuple[ResKey, str, str]
"""One object: (kind, namespace or "" for cluster-scoped kinds, name)."""


def json_copy(value: T) -> T:
    """A deep copy of JSON-like data, several times faster than :func:`copy.deepcopy`.

    marshal round-trips dicts, lists and scalars in C; anything else falls back to a Python copy.
    """
    data: Any = value
    try:
        # bandit B302 accepted: marshal loads only what dumps() made from our own data, never input.
        copied: Any = marshal.loads(marshal.dumps(data))  # nosec B302
    except ValueError:
        copied = _copy(data)
    return copied  # type: ignore[no-any-return]


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    if isinstance(value, _IMMUTABLE):
        return value
    return copy.deepcopy(value)


def res_key(resource: Resource) -> ResKey:
    return (resource.group, resource.plural)


def _owner_uids(obj: Obj) -> set[str]:
    refs = obj.get("metadata", {}).get("ownerReferences") or []
    return {ref["uid"] for ref in refs if isinstance(ref, dict) and ref.get("uid")}


class ObjectStore:
    """Objects by (kind, namespace, name); O(1) get/put/remove whatever the number of objects."""

    def __init__(self) -> None:
        self._objects: dict[ResKey, dict[str, dict[str, Obj]]] = {}
        self._resources: dict[ResKey, Resource] = {}
        self._by_uid: dict[str, ObjKey] = {}
        self._dependents: dict[str, set[ObjKey]] = {}

    def register(self, resource: Resource) -> ResKey:
        key = res_key(resource)
        self._resources.setdefault(key, resource)
        return key

    def resource(self, key: ResKey) -> Resource:
        return self._resources[key]

    def get(self, key: ObjKey) -> Obj | None:
        kind, namespace, name = key
        return self._objects.get(kind, {}).get(namespace, {}).get(name)

    def put(self, key: ObjKey, obj: Obj) -> None:
        kind, namespace, name = key
        previous = self.get(key)
        if previous is not None:
            self._unindex(key, previous)
        self._objects.setdefault(kind, {}).setdefault(namespace, {})[name] = obj
        uid = obj.get("metadata", {}).get("uid")
        if uid:
            self._by_uid[uid] = key
        for owner in _owner_uids(obj):
            self._dependents.setdefault(owner, set()).add(key)

    def remove(self, key: ObjKey) -> Obj | None:
        kind, namespace, name = key
        by_name = self._objects.get(kind, {}).get(namespace)
        if by_name is None or name not in by_name:
            return None
        obj = by_name.pop(name)
        if not by_name:
            del self._objects[kind][namespace]
        self._unindex(key, obj)
        return obj

    def _unindex(self, key: ObjKey, obj: Obj) -> None:
        uid = obj.get("metadata", {}).get("uid")
        if uid and self._by_uid.get(uid) == key:
            del self._by_uid[uid]
        for owner in _owner_uids(obj):
            dependents = self._dependents.get(owner)
            if dependents is not None:
                dependents.discard(key)
                if not dependents:
                    del self._dependents[owner]

    def exists_uid(self, uid: str) -> bool:
        return uid in self._by_uid

    def dependents(self, uid: str) -> list[ObjKey]:
        """The objects whose ownerReferences name ``uid`` (sorted, for a stable event order)."""
        return sorted(self._dependents.get(uid, ()))

    def items(self, kind: ResKey, namespace: str | None) -> Iterator[tuple[ObjKey, Obj]]:
        """Objects of a kind in one namespace (or all when None), ordered by namespace then name."""
        by_namespace = self._objects.get(kind, {})
        namespaces = sorted(by_namespace) if namespace is None else [namespace]
        for ns in namespaces:
            by_name = by_namespace.get(ns, {})
            for name in sorted(by_name):
                yield (kind, ns, name), by_name[name]

    def keys_in_namespace(self, namespace: str) -> list[ObjKey]:
        """Every object in a namespace, of every kind."""
        return [
            (kind, namespace, name)
            for kind, by_namespace in sorted(self._objects.items())
            for name in sorted(by_namespace.get(namespace, {}))
        ]
