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

from k8s_backend.kube.delegate import DelegatingKubernetesApi
from k8s_backend.kube.port import (
    LEASES,
    MERGE_PATCH,
    KubernetesApi,
    Obj,
    Resource,
)

NODES = Resource("Node", "nodes", namespaced=False)
NODE_LEASES = LEASES
NODE_LEASE_NAMESPACE = "kube-node-lease"


class RemoteKubeletApi(DelegatingKubernetesApi):
    """:class:`~k8s_backend.local.kubelet.kubelet.KubeletApi` over a :class:`KubernetesApi` talking to a
    real API server. Every other call is passed through unchanged."""

    @property
    def api(self) -> KubernetesApi:
        return self.wrapped

    # -- the kubelet's extras --------------------------------------------------------------------------

    def patch_status(self, resource: Resource, namespace: str | None, name: str, status: Obj) -> Obj:
        """Merge-patch the ``status`` subresource (spec and metadata are left alone)."""
        body: Obj = {"status": status}
        return self.wrapped.patch(resource, namespace, f"{name}/status", body, patch_type=MERGE_PATCH)

    def finalize(self, resource: Resource, namespace: str | None, name: str) -> None:
        """End a terminating object's grace period: delete it again with a grace period of 0."""
        self.wrapped.delete(resource, namespace, name, grace_period_seconds=0)

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
        answer = self.wrapped.create(resource, namespace, body)
        return str((answer.get("status") or {}).get("token", ""))
