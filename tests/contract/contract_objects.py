"""Small object builders shared by the contract tests."""

from __future__ import annotations

from typing import Any

from k8s_backend.kube.port import Obj

NS = "contract"
NAMESPACES_USED = (NS, "other", "elsewhere")
"""The namespaces the tests use: they exist before each test, on every target."""


def pod(name: str, labels: dict[str, str] | None = None, **extra: Any) -> Obj:
    """A minimal valid pod."""
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"containers": [{"name": "main", "image": "busybox:1"}]},
    }
    body.update(extra)
    return body


def config_map(name: str, labels: dict[str, str] | None = None, **metadata: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": dict(labels or {}), **metadata},
        "data": {"key": "value"},
    }


def pod_group(name: str, min_member: int) -> Obj:
    """A Volcano PodGroup: a custom resource, so apiVersion and kind are required (a real server answers
    400 "Object 'Kind' is missing" without them; built-in kinds may leave them out)."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member},
    }


def owner_ref(owner: Obj) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


def names(objs: list[Obj]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]
