"""The kubelet's writes on a real API server, through any :class:`KubernetesApi` adapter.

On the embedded server the kubelet calls the in-memory store's own ``patch_status`` and ``finalize``;
a real kube-apiserver offers the same things as REST subresources and verbs, which this adapter maps:

- ``patch_status``: a merge patch of ``pods/{name}/status`` (what a kubelet's status manager sends);
- ``finalize``: ``DELETE`` with ``gracePeriodSeconds=0`` once the containers stopped (a terminating
  pod stays, with ``deletionTimestamp``, until its kubelet does this);
- ``request_token``: a TokenRequest (``serviceaccounts/{name}/token``) bound to the pod, for projected
  service-account token volumes.

Subresource paths go through the port's ordinary ``patch`` and ``create`` (the object name, or the
resource's plural, carries the subresource), so no adapter needs a method of its own for them.
"""

from __future__ import annotations

import builtins

from k8s_backend.kube.port import (
    LEASES,
    MERGE_PATCH,
    KubernetesApi,
    Obj,
    ObjectList,
    Resource,
    WatchStream,
)

NODES = Resource("Node", "nodes", namespaced=False)
NODE_LEASES = LEASES
NODE_LEASE_NAMESPACE = "kube-node-lease"


class RemoteKubeletApi:
    """:class:`~k8s_backend.local.kubelet.kubelet.KubeletApi` over a :class:`KubernetesApi` talking to a
    real API server. Every other call is passed through unchanged."""

    def __init__(self, api: KubernetesApi) -> None:
        self._api = api

    @property
    def api(self) -> KubernetesApi:
        return self._api

    # -- the kubelet's extras --------------------------------------------------------------------------

    def patch_status(self, resource: Resource, namespace: str | None, name: str, status: Obj) -> Obj:
        """Merge-patch the ``status`` subresource (spec and metadata are left alone)."""
        body: Obj = {"status": status}
        return self._api.patch(resource, namespace, f"{name}/status", body, patch_type=MERGE_PATCH)

    def finalize(self, resource: Resource, namespace: str | None, name: str) -> None:
        """End a terminating object's grace period: delete it again with a grace period of 0."""
        self._api.delete(resource, namespace, name, grace_period_seconds=0)

    def request_token(
        self,
        namespace: str,
        service_account: str,
        *,
        pod: Obj,
        audience: str | None = None,
        expiration_seconds: int | None = None,
    ) -> str:
        """A service-account token bound to ``pod`` (a TokenRequest, as the kubelet asks for it)."""
        meta = pod.get("metadata") or {}
        spec: Obj = {
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta.get("name"),
                "uid": meta.get("uid"),
            }
        }
        if audience:
            spec["audiences"] = [audience]
        if expiration_seconds is not None:
            spec["expirationSeconds"] = int(expiration_seconds)
        # The subresource of a core object: POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token.
        resource = Resource("TokenRequest", f"serviceaccounts/{service_account}/token")
        body: Obj = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        answer = self._api.create(resource, namespace, body)
        return str((answer.get("status") or {}).get("token", ""))

    # -- KubernetesApi, passed through -----------------------------------------------------------------

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        return self._api.create(resource, namespace, body)

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        return self._api.get(resource, namespace, name)

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
    ) -> ObjectList:
        return self._api.list(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
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
    ) -> WatchStream:
        return self._api.watch(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
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
        return self._api.patch(resource, namespace, name, patch, patch_type=patch_type)

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
    ) -> None:
        self._api.delete(resource, namespace, name, grace_period_seconds=grace_period_seconds)

    def delete_collection(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        grace_period_seconds: int | None = None,
    ) -> None:
        self._api.delete_collection(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            grace_period_seconds=grace_period_seconds,
        )

    def close(self) -> None:
        self._api.close()
