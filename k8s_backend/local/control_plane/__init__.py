"""A real Kubernetes control plane on 127.0.0.1, built from the official Go modules (an opt-in test kit).

- :mod:`k8s_backend.local.control_plane.build`: builds and caches kube-apiserver, kube-scheduler,
  kube-controller-manager (``k8s.io/kubernetes`` v1.37.2) and etcd (v3.7.3); needs Go >= 1.26.
- :class:`ControlPlane` (:mod:`k8s_backend.local.control_plane.runner`): starts them with TLS, token
  authentication, RBAC and service-account tokens, as a context manager.

``python -m k8s_backend.local.control_plane build`` prebuilds the cache (for CI).
"""

from __future__ import annotations

from k8s_backend.local.control_plane.build import (
    BuildError,
    ControlPlaneBinaries,
    ControlPlaneBuilder,
)
from k8s_backend.local.control_plane.runner import ControlPlane, ControlPlaneError

__all__ = ["BuildError", "ControlPlane", "ControlPlaneBinaries", "ControlPlaneBuilder", "ControlPlaneError"]
