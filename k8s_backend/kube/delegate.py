"""A :class:`~k8s_backend.kube.port.KubernetesApi` that hands every call to another one.

The base of the port's decorators (metrics, the kubelet's view of a real API server): each port method
goes through :meth:`DelegatingKubernetesApi.around`, which a decorator overrides to observe or change
the call; methods an adapter has beyond the port (InMemoryKubernetes' ``objects()``, the official client's
``pod_log``) pass through unchanged.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, TypeVar

from k8s_backend.kube.port import MERGE_PATCH, KubernetesApi, Obj, ObjectList, Resource, WatchStream

_T = TypeVar("_T")


class DelegatingKubernetesApi:
    """Every port method of ``wrapped``, through :meth:`around`."""

    def __init__(self, wrapped: KubernetesApi) -> None:
        self.wrapped = wrapped

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def around(self, verb: str, resource: Resource, call: Callable[[], _T]) -> _T:
        """Run one call of ``verb`` on ``resource``; the base just runs it."""
        return call()

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        return self.around("create", resource, lambda: self.wrapped.create(resource, namespace, body))

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        return self.around("get", resource, lambda: self.wrapped.get(resource, namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
    ) -> ObjectList:
        return self.around(
            "list",
            resource,
            lambda: self.wrapped.list(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version=resource_version,
            ),
        )

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> WatchStream:
        return self.around(
            "watch",
            resource,
            lambda: self.wrapped.watch(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_bookmarks=allow_bookmarks,
                send_initial_events=send_initial_events,
            ),
        )

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Obj | builtins.list[Obj],
        *,
        patch_type: str = MERGE_PATCH,
    ) -> Obj:
        return self.around(
            "patch",
            resource,
            lambda: self.wrapped.patch(resource, namespace, name, patch, patch_type=patch_type),
        )

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        orphan: bool = False,
    ) -> None:
        self.around(
            "delete",
            resource,
            lambda: self.wrapped.delete(
                resource, namespace, name, grace_period_seconds=grace_period_seconds, orphan=orphan
            ),
        )

    def delete_collection(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        grace_period_seconds: int | None = None,
    ) -> None:
        self.around(
            "delete_collection",
            resource,
            lambda: self.wrapped.delete_collection(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                grace_period_seconds=grace_period_seconds,
            ),
        )

    def close(self) -> None:
        self.wrapped.close()
