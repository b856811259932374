"""Small helpers for editing pod and container dicts (plain JSON data, as it crosses the port).

Lists of named things (env vars, ports, volumes, mounts) are merged by name: a setting Spark makes
replaces a template entry of the same name, and every other template entry is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from k8s_backend.kube.port import Obj


def section(obj: Obj, key: str) -> Obj:
    """``obj[key]`` as a dict, created if missing or null."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


def items(obj: Obj, key: str) -> list[Any]:
    """``obj[key]`` as a list, created if missing or null."""
    value = obj.get(key)
    if not isinstance(value, list):
        value = []
        obj[key] = value
    return value


def upsert_named(obj: Obj, key: str, entries: Iterable[Obj], *, name_key: str = "name") -> None:
    """Append ``entries`` to the list ``obj[key]``, first removing existing entries with the same name."""
    current = items(obj, key)
    for entry in entries:
        name = entry.get(name_key)
        current[:] = [old for old in current if not (isinstance(old, dict) and old.get(name_key) == name)]
        current.append(entry)


def env_var(name: str, value: str) -> Obj:
    return {"name": name, "value": value}


def field_ref_env_var(name: str, field_path: str, api_version: str = "v1") -> Obj:
    """An env var filled by the kubelet from the pod's own fields (downward API)."""
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": api_version, "fieldPath": field_path}}}


def upsert_env(container: Obj, entries: Iterable[Obj]) -> None:
    """Set env vars; a later definition of a name replaces an earlier one (as the kubelet would)."""
    upsert_named(container, "env", entries)


def volume_mount(name: str, mount_path: str, *, sub_path: str = "", read_only: bool | None = None) -> Obj:
    mount: Obj = {"name": name, "mountPath": mount_path}
    if sub_path:
        mount["subPath"] = sub_path
    if read_only is not None:
        mount["readOnly"] = read_only
    return mount


def add_volume_mounts(container: Obj, mounts: Iterable[Obj]) -> None:
    """Add mounts; a template mount at the same path is replaced (two mounts at one path are invalid)."""
    current = items(container, "volumeMounts")
    for mount in mounts:
        path = mount.get("mountPath")
        current[:] = [old for old in current if not (isinstance(old, dict) and old.get("mountPath") == path)]
        current.append(mount)


def add_volumes(pod: Obj, volumes: Iterable[Obj]) -> None:
    """Add volumes to the pod spec, replacing template volumes of the same name."""
    upsert_named(section(pod, "spec"), "volumes", volumes)


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    """A controller owner reference to ``owner`` (e.g. the driver pod), as Spark builds it."""
    metadata = owner.get("metadata") or {}
    return {
        "apiVersion": owner.get("apiVersion") or "v1",
        "kind": owner.get("kind") or "Pod",
        "name": metadata.get("name"),
        "uid": metadata.get("uid"),
        "controller": True,
    }
