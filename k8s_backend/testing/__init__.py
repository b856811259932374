"""Test doubles shipped with the library.

- :class:`FakeKubernetes`: an in-memory Kubernetes API with real semantics (resourceVersion, selectors,
  watch, 409/410/422, deletionTimestamp, owner-reference GC, fault injection).
- :class:`LocalCluster`: an HTTP Kubernetes API server on 127.0.0.1 plus a process kubelet, so real Spark
  runs on "pods" without a cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from k8s_backend.testing.fake import FakeKubernetes
    from k8s_backend.testing.local_cluster import LocalCluster

__all__ = ["FakeKubernetes", "LocalCluster"]


def __getattr__(name: str) -> Any:
    # Imported lazily: LocalCluster brings an HTTP server and process management that most users of
    # FakeKubernetes do not need.
    if name == "FakeKubernetes":
        from k8s_backend.testing.fake import FakeKubernetes

        return FakeKubernetes
    if name == "LocalCluster":
        from k8s_backend.testing.local_cluster import LocalCluster

        return LocalCluster
    raise AttributeError(f"module 'k8s_backend.testing' has no attribute {name!r}")
