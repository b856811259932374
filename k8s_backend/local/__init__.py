"""A local Kubernetes for running real Spark jobs on "pods" without a cluster (an opt-in product kit).

- :class:`LocalCluster`: the embedded HTTP API server on 127.0.0.1 plus the process kubelet.
- :mod:`k8s_backend.local.apiserver`: the HTTP Kubernetes API server in front of a InMemoryKubernetes store.
- :mod:`k8s_backend.local.kubelet`: the process kubelet (pods run as local processes on simulated nodes).

The core of k8s_backend never imports this package; ``pyk8s://local``, ``k8s-backend local`` and the
main-job command do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from k8s_backend.local.cluster import LocalCluster
    from k8s_backend.local.kubelet import ImagePolicy, Node

__all__ = ["ImagePolicy", "LocalCluster", "Node"]


def __getattr__(name: str) -> Any:
    # Lazily: LocalCluster brings an HTTP server and process management.
    if name == "LocalCluster":
        from k8s_backend.local.cluster import LocalCluster

        return LocalCluster
    if name in ("ImagePolicy", "Node"):
        from k8s_backend.local import kubelet

        return getattr(kubelet, name)
    raise AttributeError(f"module 'k8s_backend.local' has no attribute {name!r}")
