"""Test doubles shipped with the library, for its tests and its users'; no product module imports them.

- :class:`FakeKubernetes`: the in-memory Kubernetes API (:class:`k8s_backend.memkube.InMemoryKubernetes`),
  with real semantics (resourceVersion, selectors, watch, 409/410/422, deletionTimestamp, owner-reference
  GC) and fault injection.
- :class:`ManualClock` and :class:`DeterministicScheduler`: time and threads under the test's control.
- ``LocalCluster`` is kept here as an alias of :class:`k8s_backend.local.LocalCluster`, the product kit
  that runs real Spark on local "pods".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_backend.common import DeterministicScheduler, ManualClock

if TYPE_CHECKING:
    from k8s_backend.local.cluster import LocalCluster
    from k8s_backend.memkube.api import FakeKubernetes

__all__ = ["DeterministicScheduler", "FakeKubernetes", "LocalCluster", "ManualClock"]


def __getattr__(name: str) -> Any:
    # Imported lazily: the fake's semantics and the local cluster are more than most tests need.
    if name == "FakeKubernetes":
        from k8s_backend.memkube.api import FakeKubernetes

        return FakeKubernetes
    if name == "LocalCluster":
        from k8s_backend.local.cluster import LocalCluster

        return LocalCluster
    raise AttributeError(f"module 'k8s_backend.testing' has no attribute {name!r}")
