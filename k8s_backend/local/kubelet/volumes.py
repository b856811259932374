"""Pod volumes as local directories, and the container's mount paths mapped onto them.

A Spark executor pod mounts its ConfigMap at ``/opt/spark/conf`` and emptyDirs at ``/var/data/spark-*``;
locally those become directories under the pod's work directory, and paths in the container's
environment and arguments are rewritten to point there.
"""

from __future__ import annotations

import base64
import os
import posixpath
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from k8s_backend.local.kubelet.env import ContainerConfigError, Lookup, PodRuntime, field_value

Obj = dict[str, Any]
TokenSource = Callable[[Obj, Obj], "str | None"]
"""``(pod, serviceAccountToken source) -> token``, or None where the API server issues no tokens."""


def _files_of(kind: str, obj: Obj) -> dict[str, bytes]:
    if kind == "Secret":
        files = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        files.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
        return files
    files = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    files.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return files


def _write(root: Path, relative: str, content: bytes, mode: int | None) -> None:
    target = (root / relative).resolve()
    if root.resolve() not in target.parents:
        raise ContainerConfigError(f"volume item path {relative!r} escapes the volume")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    if mode is not None:
        target.chmod(mode & 0o777)


def _project(
    root: Path, kind: str, source: Obj, namespace: str, lookup: Lookup, default_mode: int | None
) -> None:
    name = str(source.get("name") or source.get("secretName") or "")
    obj = lookup(kind, namespace, name)
    if obj is None:
        if source.get("optional"):
            return
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    files = _files_of(kind, obj)
    if kind == "Secret" and default_mode is None:
        default_mode = 0o600  # every "container" runs as this user: other local users get nothing
    items = source.get("items")
    if not items:
        for key, content in files.items():
            _write(root, key, content, default_mode)
        return
    for item in items:
        key = str(item.get("key"))
        if key not in files:
            if source.get("optional"):
                continue
            raise ContainerConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
        _write(root, str(item.get("path", key)), files[key], item.get("mode", default_mode))


def _downward(root: Path, items: list[Obj], pod: Obj, runtime: PodRuntime) -> None:
    for item in items:
        if "fieldRef" in item:
            value = field_value(pod, str(item["fieldRef"].get("fieldPath", "")), runtime)
            _write(root, str(item.get("path")), value.encode(), item.get("mode"))


def _token(root: Path, source: Obj, pod: Obj, token: TokenSource | None, default_mode: int | None) -> None:
    value = token(pod, source) if token is not None else None
    if value is not None:  # the embedded server issues none: the file is left out, as before
        _write(root, str(source.get("path") or "token"), value.encode(), default_mode or 0o600)


def materialize_volumes(
    pod: Obj,
    pod_dir: Path,
    *,
    shared_dir: Path,
    lookup: Lookup,
    runtime: PodRuntime,
    token: TokenSource | None = None,
) -> dict[str, str]:
    """Create a local directory for each pod volume and fill it; returns volume name → local path.

    emptyDir, configMap, secret, downwardAPI and projected volumes live under ``pod_dir``; a
    persistentVolumeClaim lives under ``shared_dir`` so a later pod mounting the same claim sees its files;
    a hostPath is the host path itself. Other volume types become empty directories. A projected
    ``serviceAccountToken`` source is written from ``token`` (a TokenRequest bound to the pod).
    """
    namespace = str((pod.get("metadata") or {}).get("namespace", "default"))
    result: dict[str, str] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = str(volume.get("name", ""))
        if "hostPath" in volume:
            result[name] = str(volume["hostPath"].get("path", "/"))
            continue
        if "persistentVolumeClaim" in volume:
            claim = str(volume["persistentVolumeClaim"].get("claimName", name))
            root = shared_dir / "pvcs" / namespace / claim
        else:
            root = pod_dir / "volumes" / name
        root.mkdir(parents=True, exist_ok=True)
        if "configMap" in volume:
            source = volume["configMap"]
            _project(root, "ConfigMap", source, namespace, lookup, source.get("defaultMode"))
        elif "secret" in volume:
            source = volume["secret"]
            _project(root, "Secret", source, namespace, lookup, source.get("defaultMode"))
        elif "downwardAPI" in volume:
            _downward(root, volume["downwardAPI"].get("items") or [], pod, runtime)
        elif "projected" in volume:
            projected = volume["projected"]
            for source in projected.get("sources") or []:
                mode = projected.get("defaultMode")
                if "configMap" in source:
                    _project(root, "ConfigMap", source["configMap"], namespace, lookup, mode)
                elif "secret" in source:
                    _project(root, "Secret", source["secret"], namespace, lookup, mode)
                elif "downwardAPI" in source:
                    _downward(root, source["downwardAPI"].get("items") or [], pod, runtime)
                elif "serviceAccountToken" in source:
                    _token(root, source["serviceAccountToken"], pod, token, mode)
        result[name] = str(root)
    return result


def container_mounts(container: Obj, volumes: Mapping[str, str]) -> dict[str, str]:
    """mountPath → local path for one container (``subPath`` applied)."""
    mounts: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        local = volumes.get(str(mount.get("name", "")))
        if local is None:
            raise ContainerConfigError(
                f"container {container.get('name')!r} mounts volume {mount.get('name')!r}, "
                "which the pod does not define"
            )
        sub_path = str(mount.get("subPath") or "")
        if sub_path:
            local = os.path.join(local, sub_path)
        mounts[posixpath.normpath(str(mount.get("mountPath", "/")))] = local
    return mounts


class PathMapper:
    """Maps absolute paths inside the container onto local paths (longest mount path wins)."""

    def __init__(self, mounts: Mapping[str, str]) -> None:
        self._mounts = sorted(mounts.items(), key=lambda item: len(item[0]), reverse=True)

    def map(self, path: str) -> str | None:
        """The local path for a container path, or None if no mount covers it."""
        if not path.startswith("/"):
            return None
        normalized = posixpath.normpath(path)
        for mount_path, local in self._mounts:
            if normalized == mount_path:
                return local
            if normalized.startswith(mount_path.rstrip("/") + "/"):
                return os.path.join(local, normalized[len(mount_path.rstrip("/")) + 1 :])
        return None

    def map_value(self, value: str) -> str:
        """Rewrite a value that is a path, a comma-separated list of paths or a ``local://`` URI;
        other values are returned unchanged."""
        if value.startswith("local://"):
            mapped = self.map(value[len("local://") :])
            return mapped if mapped is not None else value[len("local://") :]
        parts = value.split(",")
        mapped_parts = [self.map(part) for part in parts]
        if all(m is not None for m in mapped_parts):
            return ",".join(m for m in mapped_parts if m is not None)
        return value
